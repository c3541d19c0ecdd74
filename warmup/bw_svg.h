#pragma once
// The picture `bench` writes: busbw per size (log2 x axis) against the expected line and the
// baseline, with one line per node from the pair rounds, so a slow node is seen, not read.
// Pure: series in, SVG text out.
#include <string>
#include <vector>

#include "warmup/bw_history.h"

namespace sl::warmup {

struct SvgSeries {
  std::string name;  ///< legend text
  std::vector<BusbwPoint> points;
  bool highlight = false;  ///< drawn thick and red (a node the pair rounds named)
};

struct SvgInput {
  std::string title;
  std::vector<BusbwPoint> measured;  ///< the job-wide sweep
  double expected_gbps = 0;          ///< horizontal line; 0 = none
  std::vector<BusbwPoint> baseline;  ///< may be empty
  std::vector<SvgSeries> nodes;      ///< per-node pair-round figures
};

/// A standalone SVG document (no script, no external references).
std::string BandwidthSvg(const SvgInput& in);

}  // namespace sl::warmup
