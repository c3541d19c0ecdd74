#pragma once
// Python stacks as the two tools print them, parsed into threads and frames. Pure: text in,
// values out (the bundle's files are read by stacks_analysis.h).
//
// faulthandler (dump_traceback / register(all_threads=True)), most recent call first:
//   Thread 0x00007f3a1c2fd640 (most recent call first):
//     File "/usr/lib/python3.11/threading.py", line 324 in wait
//
//   Current thread 0x00007f3a1e8bb740 (most recent call first):
//     File "/home/alice/train.py", line 29 in <module>
// faulthandler does not say which thread is the main one: safe-launch's sitecustomize writes a
// header line first, "# safe-launch python stacks: pid=4242 rank=1 main_thread=0x00007f3a...".
//
// py-spy dump (--native adds C/C++ frames, "name (library.so)" without a line):
//   Thread 4242 (idle): "MainThread"
//       <module> (train.py:29)
//   Thread 0x7F3A1C2FD640 (active): "Thread-1"
//       run (threading.py:975)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sl::diagnose {

/// One frame: file, line (0 when none, e.g. a native frame) and function.
struct PyFrame {
  std::string file;
  std::uint64_t line = 0;
  std::string function;
  bool native = false;        ///< py-spy --native: a C/C++ frame ("file" is the library)
  std::string text;           ///< the frame's line as printed, trimmed (for evidence)
  std::uint64_t line_no = 0;  ///< its 1-based line number in the text
};

struct PyThread {
  std::string id;        ///< as printed: "0x00007f3a1e8bb740" (faulthandler), "4242" (py-spy)
  std::string name;      ///< py-spy's thread name ("MainThread"); "" for faulthandler
  bool current = false;  ///< faulthandler's "Current thread" (the one that took the signal)
  bool main = false;     ///< the process's main thread, as far as the text tells
  std::vector<PyFrame> frames;  ///< most recent call first
};

struct PyStacks {
  std::string format;  ///< "faulthandler", "py-spy" or "" when no stack was found
  long pid = -1;       ///< from the safe-launch header or py-spy's "Process N:" line
  int rank = -1;       ///< from the safe-launch header
  std::vector<PyThread> threads;
  /// The main thread: the one marked main (header or "MainThread"), else the thread whose
  /// outermost frame is a script's <module>, else faulthandler's current thread, else the first.
  const PyThread* Main() const;
};

/// Parses faulthandler or py-spy output. When the same thread appears twice (two dumps appended
/// to one file) only the last dump is kept. Lines that are neither (a header, native frames of
/// other tools, "<no Python frame>") are skipped.
PyStacks ParsePyStacks(std::string_view text);

/// "0x00007f3a1e8bb740" and "0x7F3A1E8BB740" name the same thread: lower case, no zero padding.
std::string NormalThreadId(std::string_view id);

}  // namespace sl::diagnose
