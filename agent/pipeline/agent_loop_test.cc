#include "agent/pipeline/agent_loop.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

using namespace std::chrono_literals;

// Records every call in a shared journal; fails where told to.
class ScriptedCollector : public Collector {
 public:
  ScriptedCollector(std::string name, std::vector<std::string>* journal) : name_(std::move(name)), journal_(journal) {}

  Status start_status = Status::Ok();
  int fail_poll_at = -1;    // the Nth Poll fails
  int fail_finish_at = -1;  // the Nth FinishWindow fails
  std::chrono::milliseconds poll_wait = 5ms;

  std::string_view name() const override { return name_; }
  Status Start() override {
    Log("start");
    return start_status;
  }
  void BeginWindow(int64_t start_unix_nanos) override {
    Log("begin");
    begin_unix_.push_back(start_unix_nanos);
  }
  Status Poll(Clock::time_point until) override {
    ++polls_;
    std::this_thread::sleep_for(std::min<Clock::duration>(poll_wait, until - Clock::now()));
    if (polls_ == fail_poll_at) return InternalError("poll broke");
    return Status::Ok();
  }
  Status FinishWindow(Window* window) override {
    ++finishes_;
    Log(window->final ? "finish final" : "finish");
    SetCounter(&window->counters, name_ + "_windows", finishes_);
    if (finishes_ == fail_finish_at) return InternalError("drain broke");
    return Status::Ok();
  }
  void Stop() override { Log("stop"); }

  int polls() const { return polls_; }
  const std::vector<int64_t>& begin_unix() const { return begin_unix_; }

 private:
  void Log(const std::string& what) { journal_->push_back(name_ + " " + what); }

  const std::string name_;
  std::vector<std::string>* journal_;
  int polls_ = 0;
  int finishes_ = 0;
  std::vector<int64_t> begin_unix_;
};

class KeepingSink : public WindowSink {
 public:
  void Consume(Window window) override { windows.push_back(std::move(window)); }
  std::vector<Window> windows;
};

struct Loop {
  std::vector<std::string> journal;
  KeepingSink sink;
  ScriptedCollector* a = nullptr;
  ScriptedCollector* b = nullptr;
  std::unique_ptr<AgentLoop> loop;

  explicit Loop(AgentLoopOptions options) {
    auto ca = std::make_unique<ScriptedCollector>("a", &journal);
    auto cb = std::make_unique<ScriptedCollector>("b", &journal);
    a = ca.get();
    b = cb.get();
    std::vector<std::unique_ptr<Collector>> collectors;
    collectors.push_back(std::move(ca));
    collectors.push_back(std::move(cb));
    loop = std::make_unique<AgentLoop>(std::move(options), std::move(collectors), &sink);
  }
};

TEST(AgentLoopTest, SingleWindowRunsItsLengthThenStopsWithEveryCollectorFinal) {
  AgentLoopOptions o;
  o.window_length = 60ms;
  o.single_window = true;
  Loop l(o);
  ASSERT_TRUE(l.loop->Start().ok());
  const AgentLoopResult r = l.loop->Run();
  l.loop->Stop();
  EXPECT_EQ(r.stop.cause, StopCause::kWindowsDone);
  EXPECT_TRUE(r.error.ok());
  EXPECT_EQ(r.windows, 1u);
  EXPECT_GE(r.elapsed, 60ms);
  EXPECT_GT(l.a->polls(), 1);
  EXPECT_EQ(l.journal, (std::vector<std::string>{"a start", "b start", "a begin", "b begin", "a finish final",
                                                 "b finish final", "b stop", "a stop"}));
  ASSERT_EQ(l.sink.windows.size(), 1u);
  const Window& w = l.sink.windows[0];
  EXPECT_TRUE(w.final);
  EXPECT_GE(w.duration_nanos, 60'000'000);
  ASSERT_EQ(w.counters.size(), 2u);  // registration order
  EXPECT_EQ(w.counters[0].name, "a_windows");
  EXPECT_EQ(w.counters[1].name, "b_windows");
}

TEST(AgentLoopTest, WindowsFollowEachOtherWithoutGapsUntilTheStopCheckSaysSo) {
  AgentLoopOptions o;
  o.window_length = 30ms;
  int checks = 0;
  const auto start = std::chrono::steady_clock::now();
  o.stop_check = [&]() -> std::optional<StopVerdict> {
    ++checks;
    if (std::chrono::steady_clock::now() - start >= 100ms) return StopVerdict{StopCause::kSignal, 15};
    return std::nullopt;
  };
  Loop l(o);
  ASSERT_TRUE(l.loop->Start().ok());
  const AgentLoopResult r = l.loop->Run();
  EXPECT_EQ(r.stop.cause, StopCause::kSignal);
  EXPECT_EQ(r.stop.signal, 15);
  EXPECT_GE(r.windows, 3u);
  ASSERT_EQ(l.sink.windows.size(), r.windows);
  for (size_t i = 0; i < l.sink.windows.size(); ++i) {
    const Window& w = l.sink.windows[i];
    EXPECT_EQ(w.final, i + 1 == l.sink.windows.size()) << i;
    EXPECT_EQ(w.start_unix_nanos, l.a->begin_unix()[i]);
    if (i > 0) {
      const Window& prev = l.sink.windows[i - 1];
      EXPECT_EQ(w.start_unix_nanos, prev.start_unix_nanos + prev.duration_nanos) << i;
    }
  }
  EXPECT_GT(checks, 3);
}

TEST(AgentLoopTest, APollErrorEndsTheLoopAndTheWindowInProgressIsFinal) {
  AgentLoopOptions o;
  o.window_length = 10s;
  Loop l(o);
  l.b->fail_poll_at = 3;
  ASSERT_TRUE(l.loop->Start().ok());
  const AgentLoopResult r = l.loop->Run();
  EXPECT_EQ(r.stop.cause, StopCause::kError);
  EXPECT_EQ(r.error.message(), "b: poll broke");
  EXPECT_EQ(l.b->polls(), 3);
  ASSERT_EQ(l.sink.windows.size(), 1u);
  EXPECT_TRUE(l.sink.windows[0].final);
}

TEST(AgentLoopTest, AFinishErrorMakesTheRestOfThatWindowFinalAndStops) {
  AgentLoopOptions o;
  o.window_length = 20ms;
  Loop l(o);
  l.a->fail_finish_at = 2;
  ASSERT_TRUE(l.loop->Start().ok());
  const AgentLoopResult r = l.loop->Run();
  EXPECT_EQ(r.stop.cause, StopCause::kError);
  EXPECT_EQ(r.error.message(), "a: drain broke");
  ASSERT_EQ(l.sink.windows.size(), 2u);
  EXPECT_FALSE(l.sink.windows[0].final);
  EXPECT_TRUE(l.sink.windows[1].final);
  // a finished window 2 before it failed; b, after it, was told the window is final.
  EXPECT_EQ(l.journal[l.journal.size() - 2], "a finish");
  EXPECT_EQ(l.journal.back(), "b finish final");
}

TEST(AgentLoopTest, AFailedStartStopsTheCollectorsAlreadyStartedAndNoOthers) {
  AgentLoopOptions o;
  Loop l(o);
  l.b->start_status = PermissionDeniedError("no CAP_BPF");
  const Status s = l.loop->Start();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(l.journal, (std::vector<std::string>{"a start", "b start", "a stop"}));
  l.loop->Stop();  // idempotent
  EXPECT_EQ(l.journal.size(), 3u);
}

}  // namespace
}  // namespace warpscope
