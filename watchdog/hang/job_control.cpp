#include "watchdog/hang/job_control.h"

namespace sl::hang {
namespace {

class SupervisorControl final : public JobControl {
 public:
  explicit SupervisorControl(watchdog::Supervisor* s) : s_(s) {}
  pid_t JobPid() const override { return s_->JobPid(); }
  std::vector<pid_t> Descendants() const override { return s_->Descendants(); }
  std::vector<std::string> TailLines(int stream, std::size_t n) const override {
    return s_->TailLines(stream, n);
  }
  void RequestStop(std::string reason, int exit_status) override {
    s_->RequestStop(std::move(reason), exit_status, "hang detector");
  }
  watchdog::Clock::time_point LastOutput() const override { return s_->LastOutput(); }
  Result<HelperOutput> RunHelper(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds deadline) override {
    auto r = s_->RunHelper(argv, deadline);
    if (!r.ok()) return r.error();
    return HelperOutput{r->exit_status, r->timed_out, r->output};
  }

 private:
  watchdog::Supervisor* s_;
};

}  // namespace

std::unique_ptr<JobControl> MakeSupervisorControl(watchdog::Supervisor* supervisor) {
  return std::make_unique<SupervisorControl>(supervisor);
}

}  // namespace sl::hang
