#pragma once
// The NVIDIA driver's /proc/driver/nvidia files (version, gpus/<bdf>/information): text in,
// values out; never throws.
#include <string>
#include <string_view>

#include "common/result.h"

namespace sl {

/// /proc/driver/nvidia/version, first line: "NVRM version: NVIDIA UNIX Open Kernel Module for
/// x86_64  580.159.04  Release Build ..." or "... x86_64 Kernel Module  535.183.01  Sun May ...".
struct NvidiaDriverVersion {
  std::string version;       ///< "580.159.04"
  int major = 0;             ///< 580
  bool open_kernel = false;  ///< "Open Kernel Module" (the open GPU kernel modules)
};
Result<NvidiaDriverVersion> ParseNvidiaVersion(std::string_view text);
/// "Model:" field of /proc/driver/nvidia/gpus/<bdf>/information ("" when absent).
std::string ParseGpuInformationModel(std::string_view text);

}  // namespace sl
