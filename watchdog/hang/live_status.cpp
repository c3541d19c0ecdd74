#include "watchdog/hang/live_status.h"

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/json_text.h"
#include "common/log.h"
#include "watchdog/run_dir.h"

namespace sl::hang {

std::string LiveJson(const LiveState& s, double updated_unix) {
  nlohmann::json event = nullptr;
  if (!s.event_signature.empty()) {
    event = {{"signature", s.event_signature},
             {"category", s.event_category},
             {"severity", s.event_severity},
             {"line", s.event_line},
             {"at_unix", s.event_unix}};
  }
  nlohmann::json j = {
      {"schema", "safe-launch.live/1"},
      {"phase", s.phase},
      {"phase_since_unix", s.phase_since_unix},
      {"updated_unix", updated_unix},
      {"last_output_unix", s.last_output_unix > 0 ? nlohmann::json(s.last_output_unix) : nullptr},
      {"lines", {{"stdout", s.stdout_lines}, {"stderr", s.stderr_lines}}},
      {"last_event", event}};
  return JsonText(j) + "\n";
}

std::string LiveTail(const LiveState& s) {
  std::string text;
  for (const auto& l : s.tail) text += l + "\n";
  return text;
}

struct LiveWriter::State {
  std::mutex mu;
  std::condition_variable cv;
  std::string dir;
  std::optional<std::string> pending;
  std::string pending_tail;
  bool writing = false, stop = false, done = false, warned = false;
};

namespace {

void WriterLoop(std::shared_ptr<LiveWriter::State> s) {
  std::unique_lock lock(s->mu);
  while (true) {
    s->cv.wait(lock, [&] { return s->stop || s->pending; });
    if (!s->pending) break;
    std::string content = std::move(*s->pending);
    std::string tail = std::move(s->pending_tail);
    s->pending.reset();
    s->pending_tail.clear();
    s->writing = true;
    lock.unlock();
    Status st = tail.empty() ? OkStatus() : watchdog::WriteRunFile(s->dir, "live.tail", tail);
    if (st.ok()) st = watchdog::WriteRunFile(s->dir, "live.json", content);
    lock.lock();
    s->writing = false;
    if (!st.ok() && !s->warned) {
      s->warned = true;
      log::Warn("live.json not written: {}", st.error().Describe());
    }
    s->cv.notify_all();
    if (s->stop) break;
  }
  s->done = true;
  s->cv.notify_all();
}

}  // namespace

LiveWriter::LiveWriter(std::string run_dir) : state_(std::make_shared<State>()) {
  state_->dir = std::move(run_dir);
  std::thread(WriterLoop, state_).detach();
}

LiveWriter::~LiveWriter() {
  std::unique_lock lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
  state_->cv.wait_for(lock, std::chrono::seconds(1), [&] { return state_->done; });
}

void LiveWriter::Publish(std::string content, std::string tail) {
  std::lock_guard lock(state_->mu);
  state_->pending = std::move(content);
  if (!tail.empty()) state_->pending_tail = std::move(tail);
  state_->cv.notify_all();
}

bool LiveWriter::Flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, deadline, [&] { return !state_->pending && !state_->writing; });
}

}  // namespace sl::hang
