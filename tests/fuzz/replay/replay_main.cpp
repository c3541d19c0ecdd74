// Copyright 2026 The safe-launch Authors. SPDX-License-Identifier: Apache-2.0
//
// Replays a libFuzzer target's seed corpus through its harness in the ordinary build (no clang,
// no sanitizers): every harness keeps compiling and linking against the libraries it fuzzes, and
// every seed, and every seed cut short at a quarter, a half and three quarters of its length,
// runs through it without a crash. The fuzzing itself is tests/fuzz (clang, -DSAFE_LAUNCH_FUZZ=ON).
//
// usage: replay_<target> FILE_OR_DIR...   (a directory: its regular files, in name order)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool ReadAll(const std::filesystem::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

void Run(const std::string& bytes) {
  // A copy sized exactly, so that reading past the end is the harness's bug, not the buffer's.
  std::vector<std::uint8_t> buf(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(arg, ec)) {
        if (e.is_regular_file(ec)) files.push_back(e.path());
      }
      if (ec) {
        std::fprintf(stderr, "replay: cannot list %s: %s\n", argv[i], ec.message().c_str());
        return 2;
      }
    } else {
      files.push_back(arg);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "replay: no seed files in the arguments (an empty corpus directory?)\n");
    return 2;
  }
  for (const auto& f : files) {
    std::string bytes;
    if (!ReadAll(f, &bytes)) {
      std::fprintf(stderr, "replay: cannot read seed %s\n", f.string().c_str());
      return 2;
    }
    Run(bytes);
    for (std::size_t quarter = 1; quarter <= 3; ++quarter)
      Run(bytes.substr(0, bytes.size() * quarter / 4));
  }
  std::printf("replayed %zu seed(s), each whole and cut at 1/4, 1/2, 3/4\n", files.size());
  return 0;
}
