#pragma once
// The skip scan's vector kernel: finds the lines of a block that hold one of the catalog's
// anchors (LineMatcher, signatures.h) 64 positions a step, where the CPU has AVX-512 VBMI.
//
// A filter in the manner of Teddy (Hyperscan, Rust's aho-corasick "packed" searcher), with exact
// byte sets instead of nibble tables: the anchors are dealt into 16 buckets; for each of the
// kWidth offsets of an anchor, a 128-entry table gives each byte value the buckets whose anchors
// hold that byte (its low 7 bits) there. One vpermi2b per offset and group of 8 buckets looks up
// 64 bytes, the lookups of the kWidth offsets are ANDed, and a position whose result is not 0 for
// some bucket may start an anchor; only those windows are looked up in the anchor set. Nibble
// tables (Teddy's pshufb, AVX2) take a bucket's byte sets as products of nibble sets: with the
// catalog's ~350 anchors about 3-5 % of healthy positions pass them (16 buckets, all 6 offsets),
// which costs more than the scalar scan saves; exact sets pass about 0.5-1 %.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sl::diagnose {

class AnchorFilter {
 public:
  /// Every anchor is this many bytes (LineMatcher::kAnchor).
  static constexpr std::size_t kWidth = 6;
  /// Positions one step of the filter looks at.
  static constexpr std::size_t kStep = 64;
  /// Bucket groups of 8 (one table lookup per offset and group).
  static constexpr std::size_t kGroups = 2;

  /// Whether this CPU runs the vector kernel (AVX-512 BW and VBMI; checked once, at run time).
  static bool CpuSupported();

  /// Tables for `anchors` (each kWidth bytes without '\n'; repeats are fine). The buckets are
  /// chosen so that text like `healthy` passes the filter rarely: anchors whose bytes are common
  /// there go together, each bucket's chance of passing estimated from the byte frequencies.
  AnchorFilter(std::span<const std::string> anchors, std::string_view healthy);

  /// The lines of `block` (split at '\n', without it; the last may lack it) that hold an anchor,
  /// in block order, each once: what LineMatcher's scalar scan hands over. Runs the vector kernel
  /// where `vector` and the CPU has it, else the portable statement of the same filter.
  void FindLines(std::string_view block, bool vector, std::vector<std::string_view>* lines) const;

  /// Bit i: the filter lets the window at p + i through (every anchor's window passes; others
  /// may). Reads p[0 .. kStep + kWidth - 1). `vector` as for FindLines (for tests: both agree).
  std::uint64_t StepMask(const char* p, bool vector) const;

  /// Whether the kWidth bytes at p are an anchor (the exact test after the filter).
  bool IsAnchor(const char* p) const;

 private:
  // tables_[g][j][b & 127]: bit k set when an anchor of bucket 8g + k has byte b at offset j.
  alignas(64) std::uint8_t tables_[kGroups][kWidth][128] = {};
  std::vector<std::uint64_t> slots_;  // the anchors' windows, open addressing, 0 = empty
  std::size_t SlotOf(std::uint64_t window) const;
  // Masks of `steps` full steps from p (reads p[0 .. steps * kStep + kWidth - 1)).
  void Masks(const char* p, std::size_t steps, bool vector, std::uint64_t* out) const;
};

}  // namespace sl::diagnose
