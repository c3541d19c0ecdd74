#pragma once
// What the hang monitor may ask of the supervisor running the job, as an interface so that the
// monitor, the peer coordinator and the capture are testable without one.
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "watchdog/hang/collectors.h"
#include "watchdog/supervisor.h"

namespace sl::hang {

/// The supervisor calls the monitor needs.
class JobControl {
 public:
  virtual ~JobControl() = default;
  virtual pid_t JobPid() const = 0;
  virtual std::vector<pid_t> Descendants() const = 0;
  virtual std::vector<std::string> TailLines(int stream, std::size_t n) const = 0;
  virtual void RequestStop(std::string reason, int exit_status) = 0;
  virtual Result<HelperOutput> RunHelper(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds deadline) = 0;
  /// When the job was last heard from as the supervisor measures it (bytes read from its
  /// pipes; "now" while safe-launch's own stdout is blocked; re-armed after safe-launch was
  /// stopped). The epoch when unknown: then only the output the monitor saw counts.
  virtual watchdog::Clock::time_point LastOutput() const { return {}; }
};

/// JobControl backed by the real Supervisor.
std::unique_ptr<JobControl> MakeSupervisorControl(watchdog::Supervisor* supervisor);

}  // namespace sl::hang
