#pragma once
// Readers of the host files behind NodeFacts: they fetch text through a FileReader (so --sysroot
// trees work) and hand it to the parsers in common/parse/.
#include <cstdint>
#include <string>
#include <vector>

#include "common/file_reader.h"
#include "common/node_facts.h"
#include "common/result.h"

namespace sl {

/// Size of the /dev/shm mount: statvfs on the live node; under a sysroot the last /dev/shm line
/// of /proc/mounts (size= option, else tmpfs' default of half of MemTotal from /proc/meminfo).
/// Error when /dev/shm is not mounted or the files are unreadable/malformed.
Result<ShmSize> ReadShmSize(const FileReader& fs);

/// PCI functions of NVIDIA GPUs (vendor 0x10de, class 0x0300xx VGA or 0x0302xx 3D) from
/// /sys/bus/pci/devices, with models from /proc/driver/nvidia/gpus/<bdf>/information.
/// Unreadable or malformed attributes are appended to `problems` (never fatal).
std::vector<GpuInfo> ScanNvidiaGpus(const FileReader& fs, std::vector<Error>* problems);

}  // namespace sl
