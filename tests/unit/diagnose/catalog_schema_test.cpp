// The catalog as data: every row says what kind of evidence it is, names a category of the
// vocabulary, and records where its message format comes from (source file and release range).
// The last test prints the provenance figures (size, rows per source, ranges covered).
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/cause.h"
#include "diagnose/signatures.h"
#include "tests/unit/test_paths.h"

using namespace sl::diagnose;

namespace {

// The causes of the vocabulary (common/cause.h, doc/causes.md: the labels the model is fitted and
// scored on), and "unknown".
std::set<std::string> CauseCategories() {
  std::set<std::string> out = {"unknown"};
  for (const sl::CauseInfo& c : sl::Causes()) out.insert(std::string(c.name));
  return out;
}
const std::set<std::string> kCauseCategories = CauseCategories();

// Symptoms (what a cause produces) and facts (what is true of the job): evidence, never a verdict
// on their own. A symptom or fact row may also carry a cause category it points at directly.
const std::set<std::string> kEvidenceCategories = {
    // symptoms
    "collective_timeout", "watchdog_stuck", "nccl_error", "store_timeout", "ib_completion_error",
    "ib_async_event", "memlock_or_gdr", "peer_exit_or_network", "cuda_error", "cuda_oom",
    "rank_process_failed", "nccl_warning", "socket_error", "protocol_mismatch", "p2p_error",
    "nccl_config", "net_plugin", "ras_report", "job_signalled", "failure_line",
    // facts
    "flight_recorder_dump", "collective_trace", "nccl_version", "nccl_init", "nccl_env",
    "net_device", "net_transport", "gid_info", "gdr_status", "bootstrap_interface",
    "socket_interface", "p2p_status", "nvls_status", "cumem_status", "progress", "job_layout"};

// "<project> <file>[, <file>...] <range>", e.g. "nccl src/transport/net_ib.cc 2.10-2.28".
const std::regex kProvenance(
    R"(^(nccl|torch|gloo|linux|nvidia|glibc|gcc|ucx|gdb|bash|pciutils|python|openmpi|prrte|mpich|mvapich2|slurm|rdma-core|kmod|cuda-samples|libfabric|megatron|transformers|accelerate|deepspeed|lightning|ray|leptonai|iproute2|mlnx-tools|perftest|mooncake|aws-ofi-nccl|net-tools|tensorflow|vllm|ultralytics|datasets|abseil|nvshmem|horovod|sglang|nvidia-resiliency-ext|deepep|paddle) \S+.*\b(\d+\.\d+(-\d+\.\d+)?|\d+\.x(-\d+\.x)?|r\d+-r\d+|\d{4}-\d{4})\b.*$)");

}  // namespace

TEST_CASE("every catalog row has a kind, a category of the vocabulary and a provenance") {
  std::set<std::string> ids;
  for (const Signature& s : Catalog()) {
    INFO(s.id);
    CHECK(ids.insert(std::string(s.id)).second);  // ids are unique
    const std::string cat(s.category);
    switch (s.kind) {
      case EvidenceKind::kCause:
        // A cause row names a cause a person can fix, from the vocabulary only.
        CHECK(kCauseCategories.count(cat) == 1);
        CHECK(s.priority > 0);
        CHECK(!s.fix.empty());
        break;
      case EvidenceKind::kSymptom:
        CHECK((kEvidenceCategories.count(cat) == 1 || kCauseCategories.count(cat) == 1));
        break;
      case EvidenceKind::kFact:
        CHECK((kEvidenceCategories.count(cat) == 1 || kCauseCategories.count(cat) == 1));
        // Facts are evidence for rules; they must not win a verdict by priority on their own.
        CHECK(s.priority < 40);
        break;
    }
    CHECK(!s.provenance.empty());
    CHECK(std::regex_match(std::string(s.provenance), kProvenance));
    // Fields name the regex groups: a pattern with groups lists names, names need a pattern.
    if (!s.fields.empty()) CHECK(!s.pattern.empty());
  }
}

TEST_CASE("every row's regex compiles and has no more groups than its fields name") {
  for (const Signature& s : Catalog()) {
    if (s.pattern.empty()) continue;
    INFO(s.id);
    std::regex re(std::string(s.pattern), std::regex::ECMAScript);
    std::size_t names = s.fields.empty() ? 0 : 1;
    for (char c : s.fields) names += c == ',';
    CHECK(re.mark_count() == names);
  }
}

// The provenance report the note quotes: catalog size, rows per kind, rows per source file and the
// release ranges each project's rows cover.
TEST_CASE("catalog provenance report") {
  std::map<std::string, int> per_source, per_kind, per_project;
  // A file, optionally after the project it belongs to when that is not the row's first project
  // ("openmpi orte/..., prrte src/...").
  const std::regex file(
      R"((?:\b(prrte|openmpi|mpich|slurm|torch|nccl) )?((?:src/|torch/|c10/|gloo/|mm/|drivers/|orte/|ompi/|NVRM|megatron/|deepspeed/|libibverbs/)\S*))");
  for (const Signature& s : Catalog()) {
    ++per_kind[std::string(EvidenceKindName(s.kind))];
    const std::string prov(s.provenance);
    const std::string project = prov.substr(0, prov.find(' '));
    ++per_project[project];
    std::set<std::string> files;
    for (std::sregex_iterator it(prov.begin(), prov.end(), file), end; it != end; ++it) {
      std::string f = (*it)[2].str();
      while (!f.empty() && (f.back() == ',' || f.back() == ')')) f.pop_back();
      files.insert(((*it)[1].matched ? (*it)[1].str() : project) + " " + f);
    }
    if (files.empty()) files.insert(project + " (no file)");
    for (const std::string& f : files) ++per_source[f];
  }
  std::printf("catalog: %zu rows", Catalog().size());
  for (const auto& [k, n] : per_kind) std::printf(", %d %s", n, k.c_str());
  std::printf("\nrows per project:");
  for (const auto& [k, n] : per_project) std::printf(" %s %d", k.c_str(), n);
  std::printf("\nrows per source file (a row counts for each file its provenance names):\n");
  for (const auto& [k, n] : per_source) std::printf("  %3d  %s\n", n, k.c_str());
  // Release coverage: for each NCCL minor 2.10-2.28 and torch 1.13, 2.0-2.11, how many rows have a
  // format read from that release (ranges "2.12-2.28" and single releases "2.28").
  const std::regex range(R"(\b(\d+)\.(\d+)(?:-(\d+)\.(\d+))?\b)");
  for (const char* project : {"nccl", "torch"}) {
    std::map<int, int> per_release;  // major * 100 + minor
    for (const Signature& s : Catalog()) {
      const std::string prov(s.provenance);
      if (prov.rfind(std::string(project) + " ", 0) != 0) continue;
      std::set<int> covered;
      for (std::sregex_iterator it(prov.begin(), prov.end(), range), end; it != end; ++it) {
        const int lo = std::stoi((*it)[1]) * 100 + std::stoi((*it)[2]);
        const int hi = (*it)[3].matched ? std::stoi((*it)[3]) * 100 + std::stoi((*it)[4]) : lo;
        for (int r = lo; r <= hi; ++r) {
          if (r % 100 <= 40) covered.insert(r);  // 1.13-2.11 spans 1.13..1.40 and 2.0..2.11
        }
      }
      for (int r : covered) ++per_release[r];
    }
    std::printf("%s rows per release:", project);
    for (const auto& [r, n] : per_release) {
      if (std::string(project) == "torch" && r / 100 == 1 && r % 100 > 13) continue;
      std::printf(" %d.%d:%d", r / 100, r % 100, n);
    }
    std::printf("\n");
    CHECK(!per_release.empty());
  }
  CHECK(per_kind["cause"] > 0);
  CHECK(per_kind["symptom"] > 0);
  CHECK(per_kind["fact"] > 0);
  CHECK(per_project["nccl"] > per_project["torch"]);
}

// The row table of doc/manual.md ("Signature catalog"), printed from the compiled catalog so the
// manual never drifts from the code: diagnose/catalog/report.sh --table. Hidden: not run by ctest.
TEST_CASE("catalog rows as a markdown table", "[.table]") {
  std::printf(
      "| id | kind | recognised by (substrings) | category | severity | priority | "
      "provenance |\n|---|---|---|---|---|---|---|\n");
  for (const Signature& s : Catalog()) {
    std::string by = "`" + std::string(s.prefilter) + "`";
    if (!s.also.empty()) by += " + `" + std::string(s.also) + "`";
    std::string esc;
    for (char c : by) esc += c == '|' ? std::string("\\|") : std::string(1, c);
    std::printf("| `%.*s` | %.*s | %s | `%.*s` | %.*s | %d | %.*s |\n",
                static_cast<int>(s.id.size()), s.id.data(),
                static_cast<int>(EvidenceKindName(s.kind).size()), EvidenceKindName(s.kind).data(),
                esc.c_str(), static_cast<int>(s.category.size()), s.category.data(),
                static_cast<int>(SeverityName(s.severity).size()), SeverityName(s.severity).data(),
                s.priority, static_cast<int>(s.provenance.size()), s.provenance.data());
  }
  SUCCEED();
}

TEST_CASE("the manual's catalog table lists every row") {
  std::ifstream in(SL_FIXTURES_DIR + "/../../doc/manual.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string manual = ss.str();
  for (const Signature& s : Catalog()) {
    INFO(s.id << " (regenerate with diagnose/catalog/report.sh --table)");
    CHECK(manual.find("| `" + std::string(s.id) + "` |") != std::string::npos);
  }
}
