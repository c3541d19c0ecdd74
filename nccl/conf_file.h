#pragma once
// NCCL's configuration files (src/misc/param.cc, initEnv/setEnvFile, NCCL 2.10 -> 2.28): at init
// NCCL reads $NCCL_CONF_FILE (NCCL >= 2.23, when set and non-empty) or else ~/.nccl.conf, then
// /etc/nccl.conf, and setenv()s each NAME=VALUE line *without overwriting*: the environment wins
// over the user's file, which wins over /etc/nccl.conf. An admin's value there is as real as a
// user's, so the env plan keeps it instead of exporting the recipe's value over it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/file_reader.h"
#include "common/result.h"
#include "nccl/version.h"

namespace sl::nccl {

/// One NAME=VALUE line as NCCL reads it.
struct ConfValue {
  std::string name;
  std::string value;
  std::string origin;  ///< "/etc/nccl.conf:3"
};

/// What NCCL will take from its configuration files for the job.
struct ConfFiles {
  std::vector<ConfValue> values;  ///< effective: first file wins per name, in NCCL's order
  std::vector<std::string> read;  ///< node paths of the files that exist and were read
  std::vector<Error> problems;    ///< files that exist but could not be read; lines NCCL misreads
};

/// Parses one file the way setEnvFile does: lines starting with '#' and lines without '=' are
/// skipped; the name is everything before the first '=' (spaces included, at most 1023 bytes),
/// the value everything after it up to the newline (at most 1023 bytes). A name NCCL would set
/// but nobody reads (spaces around '=', a '\r' line end) is reported in `problems`.
std::vector<ConfValue> ParseConfFile(std::string_view text, std::string_view path,
                                     std::vector<Error>* problems);

/// The files NCCL reads for this environment, in its order. `nccl` unknown: the newest rules.
std::vector<std::string> ConfFilePaths(const Environment& env, const std::optional<Version>& nccl);

/// Reads those files through `fs` (so --sysroot trees work). A missing file is skipped, as NCCL
/// does; an unreadable one is a problem, not a silent "empty".
ConfFiles ReadConfFiles(const FileReader& fs, const Environment& env,
                        const std::optional<Version>& nccl);

/// The conf values the job's NCCL will see, under `env` (which wins, as in NCCL): for lints and
/// conflicts that judge what NCCL will use.
Environment EffectiveEnvironment(const ConfFiles& conf, Environment env);

}  // namespace sl::nccl
