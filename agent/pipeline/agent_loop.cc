#include "agent/pipeline/agent_loop.h"

#include <malloc.h>

#include <thread>
#include <utility>

#include "base/unix_time.h"

namespace warpscope {

AgentLoop::AgentLoop(AgentLoopOptions options, std::vector<std::unique_ptr<Collector>> collectors,
                     WindowSink* sink)
    : options_(std::move(options)), collectors_(std::move(collectors)), sink_(sink) {}

AgentLoop::~AgentLoop() { Stop(); }

Status AgentLoop::Start() {
  for (; started_ < collectors_.size(); ++started_) {
    if (Status s = collectors_[started_]->Start(); !s.ok()) {
      Stop();
      return s;
    }
  }
  return Status::Ok();
}

void AgentLoop::Stop() {
  while (started_ > 0) collectors_[--started_]->Stop();
}

AgentLoopResult AgentLoop::Run() {
  AgentLoopResult result;
  const auto length = std::chrono::duration_cast<Clock::duration>(options_.window_length);
  const auto run_start = Clock::now();
  // Each window ends when its collectors are done with it, and the next
  // starts there: the time spent finishing a window belongs to the next.
  int64_t window_start_unix = UnixNanosNow();
  auto window_start = run_start;
  std::optional<StopVerdict> stop;
  while (!stop) {
    const auto window_end = window_start + length;
    for (auto& c : collectors_) c->BeginWindow(window_start_unix);
    while (!stop) {
      if (options_.stop_check) stop = options_.stop_check();
      if (stop) break;
      const auto now = Clock::now();
      if (now >= window_end) {
        if (options_.single_window) stop = StopVerdict{StopCause::kWindowsDone};
        break;
      }
      for (auto& c : collectors_) {
        if (Status s = c->Poll(window_end); !s.ok()) {
          result.error = s.WithContext(std::string(c->name()));
          stop = StopVerdict{StopCause::kError};
          break;
        }
      }
      // A loop whose collectors do not wait in Poll must not spin.
      if (!stop && Clock::now() - now < std::chrono::milliseconds(1)) {
        std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(10), window_end - now));
      }
    }
    Window window;
    window.start_unix_nanos = window_start_unix;
    window.final = stop.has_value();
    for (auto& c : collectors_) {
      if (Status s = c->FinishWindow(&window); !s.ok()) {
        if (result.error.ok()) result.error = s.WithContext(std::string(c->name()));
        stop = StopVerdict{StopCause::kError};
        window.final = true;  // the collectors after it hand over everything too
      }
    }
    const auto finished = Clock::now();
    int64_t finished_unix = UnixNanosNow();
    if (finished_unix <= window_start_unix) {  // the clock was set back: the steady clock's length
      finished_unix = window_start_unix +
                      std::chrono::duration_cast<std::chrono::nanoseconds>(finished - window_start).count();
    }
    window.duration_nanos = finished_unix - window_start_unix;
    sink_->Consume(std::move(window));
    // A window frees what it built (profiles, encoded batches); glibc keeps
    // freed heap pages mapped, which held 8 MB of a steady 41 MB RSS. Hand
    // them back once per window (a walk of the free lists: microseconds).
    malloc_trim(0);
    ++result.windows;
    window_start_unix = finished_unix;
    window_start = finished;
  }
  result.stop = *stop;
  result.elapsed = Clock::now() - run_start;
  return result;
}

}  // namespace warpscope
