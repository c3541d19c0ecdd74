#pragma once
// The run directory's status.json and output tails, written in one place for every state
// (running, finished, not_started): 0600 through the one writer, and through a Redactor, because
// both hold what the user typed (--api-key K) or what the job printed (a token in a traceback).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "watchdog/hang/redact.h"

namespace sl::watchdog {

/// A Redactor that knows the secrets of `env` (secret-named variables) and of `argv` (values
/// after secret-named flags), for everything written about this job.
std::unique_ptr<hang::Redactor> MakeJobRedactor(const Environment& env,
                                                const std::vector<std::string>& argv);

/// Writes <run_dir>/status.json (0600): `status` as indented JSON, its "command" replaced by the
/// redacted argv and every string value redacted (invalid UTF-8 replaced, never a throw).
Status WriteStatusFile(const std::string& run_dir, const nlohmann::json& status,
                       hang::Redactor& redactor);

/// Writes <run_dir>/<name> (stdout.tail, stderr.tail) from `lines`, one per line, redacted, 0600.
Status WriteTailFile(const std::string& run_dir, const std::string& name,
                     const std::vector<std::string>& lines, const hang::Redactor& redactor);

}  // namespace sl::watchdog
