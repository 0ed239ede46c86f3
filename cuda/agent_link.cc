#include "cuda/agent_link.h"

#include <cupti.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/launch_callbacks.h"
#include "cuda/wait_callbacks.h"

namespace warpscope::cuda {

namespace {

constexpr uint32_t kLibraryVersion = (0u << 16) | (1u << 8) | 0u;
constexpr int kHandshakeTimeoutMs = 5000;
constexpr uint64_t kClockIntervalNs = 5'000'000'000ull;
constexpr uint64_t kMs = 1'000'000ull;

void SleepMs(uint32_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

uint32_t RetryIntervalMs() {
  const char* env = std::getenv("WARPSCOPE_CUDA_RETRY_MS");  // tests shorten it
  if (env != nullptr) {
    const long v = std::strtol(env, nullptr, 10);
    if (v >= 10 && v <= 600000) return static_cast<uint32_t>(v);
  }
  return 2000;
}

int TryConnect(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return -1;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The tightest of a few brackets.
ws_cuda_clock_pair Calibrate(const CuptiFunctions& fn) {
  ws_cuda_clock_pair best{};
  uint64_t best_width = ~0ull;
  for (int i = 0; i < 5; ++i) {
    ws_cuda_clock_pair p{};
    p.host_before_ns = MonotonicNs();
    if (fn.cuptiGetTimestamp(&p.cupti_ns) != CUPTI_SUCCESS) return ws_cuda_clock_pair{};
    p.host_after_ns = MonotonicNs();
    if (p.host_after_ns - p.host_before_ns < best_width) {
      best_width = p.host_after_ns - p.host_before_ns;
      best = p;
    }
  }
  return best;
}

bool SendWhole(int fd, const void* data, size_t size, int timeout_ms) {
  for (;;) {
    const ssize_t n = send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(size)) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return false;
      continue;
    }
    return false;
  }
}

// A CONFIG message, validated; false for anything else.
// A version 1 agent's CONFIG is shorter: its missing fields read as 0.
bool ParseConfig(const uint8_t* data, size_t size, ws_cuda_config* out) {
  if (size < sizeof(ws_cuda_msg_header)) return false;
  ws_cuda_msg_header header;
  std::memcpy(&header, data, sizeof(header));
  const size_t record = ws_cuda_config_size(header.version);
  if (header.magic != WS_CUDA_WIRE_MAGIC || header.version < 1 || header.version > WS_CUDA_WIRE_VERSION ||
      header.type != WS_CUDA_MSG_CONFIG || header.length != size || header.count != 1 ||
      size != sizeof(header) + record) {
    return false;
  }
  *out = ws_cuda_config{};
  std::memcpy(out, data + sizeof(header), record);
  return out->mode <= WS_CUDA_MODE_ADAPTIVE;
}

void AtExitHandler() noexcept { DrainAtExit(); }

// Buffer callbacks: C entry points called by CUPTI.
void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *max_records = 0;
  InjectionState* s = GetInjectionState();
  if (s == nullptr) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = s->pool.Take(size);
}

void CUPTIAPI OnBufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) noexcept {
  InjectionState* s = GetInjectionState();
  if (s == nullptr || buffer == nullptr) return;
  if (valid_size > 0 && s->records_wanted.load(std::memory_order_acquire)) {
    KernelRecordFilter filter;
    filter.attach_epoch = s->attach_epoch.load(std::memory_order_relaxed);
    if (s->window_filter.load(std::memory_order_relaxed)) {
      filter.first_correlation = s->window_first_correlation.load(std::memory_order_acquire);
    }
    ConvertActivityBuffer(s->cupti.fn, buffer, valid_size, s->outbox, s->conversion, filter, s->launch_times);
  }
  s->pool.Give(buffer);
}

void QueueStatsMessage(InjectionState& s, uint64_t now);

// One connection's life. Owned by the link thread.
class AgentSession {
 public:
  AgentSession(InjectionState& s, int fd, uint32_t connection_seq) : s_(s), fd_(fd), seq_(connection_seq) {}

  // Returns false after a fatal CUPTI error (the library stays off).
  bool Run();

 private:
  const CuptiFunctions& fn() const { return s_.cupti.fn; }
  bool Check(CUptiResult result, const char* what);
  bool Handshake(ws_cuda_config* config);
  bool StartTracing(const LinkConfig& config);
  // cuptiSubscribe_v2 where CUPTI has it (it names us to other tools and
  // names the tool in the way when the subscription is taken), else v1.
  bool Subscribe();
  // Buffer callbacks registered and subscribed (again, after a detach).
  bool Attach();
  bool AttachAndEnable();
  // Settles a pending detach (InjectionState::detach_state): takes the
  // request back when no launch has claimed it, else waits up to `wait_ms`
  // for cuptiFinalize to finish and notes that CUPTI is detached. False
  // while a claimed detach is still running: make no CUPTI call then.
  bool SettleDetach(uint32_t wait_ms);
  // True when CUPTI may be called now without attaching it again.
  bool CuptiLive() const {
    return s_.attached && s_.detach_state.load(std::memory_order_acquire) == InjectionState::kNone;
  }
  // Everything off and the records out; then CUPTI is detached (by the next
  // launch to exit) where cuptiFinalize exists, else unsubscribed.
  void StopTracing();
  // Asks for the detach; launch callbacks must still be enabled.
  void RequestDetach();
  bool SetKernelActivity(bool on, uint64_t now);
  bool SetMemopActivity(bool on);
  // Enables or disables every launch-API and synchronisation-API callback (duty mode with
  // WS_CUDA_CONFIG_DUTY_CALLBACKS); false when none could be enabled.
  bool SetLaunchCallbacks(bool on);
  // Windowed modes (LinkConfig::windowed): attach and start recording; close
  // the window (it is planned: continue, or stop and detach after a drain).
  bool OpenWindow(uint64_t now);
  void CloseWindow(uint64_t now);
  void FinishDrain();
  void QueueWindow(uint64_t end, uint64_t covers_until);
  // The sampled launches and the waits the application threads queued.
  void QueueSampledRecords();
  void FlushAndQueue(uint64_t now);
  void QueueStats(uint64_t now);
  void QueueClock();
  // Process exit: the last records out, then this thread waits for the end.
  [[noreturn]] void FinalDrainAndPark();
  // False when the connection ended; sets `config_changed` for a new CONFIG.
  bool ReadAgent(bool* config_changed, ws_cuda_config* config);

  // Windowed recording: the window open now, or the one draining or off.
  struct Window {
    bool open = false;
    uint64_t start_ns = 0;
    uint64_t launches_base = 0;
    uint64_t records_base = 0;  // ConversionCounters at the window's start
    uint64_t before_base = 0;
    uint64_t attach_ns = 0;
    uint64_t end_ns = 0;
    uint64_t covers_until_ns = 0;
    uint64_t drain_until_ns = 0;  // != 0: stopped, records still to flush
    uint64_t next_open_ns = 0;    // != 0: closed, opens again at this time
  };

  InjectionState& s_;
  const int fd_;
  const uint32_t seq_;
  bool fatal_ = false;
  bool memcpy_on_ = false, memset_on_ = false, kernel_on_ = false, callbacks_on_ = false;
  LinkConfig config_;
  Window window_;
  std::vector<ws_cuda_launch> launches_;
  std::vector<ws_cuda_wait> waits_;
};

bool AgentSession::Check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return true;
  SayOnce(std::string(what) + " failed: " + CuptiResultText(fn(), result) + "; GPU profiling off");
  fatal_ = true;
  return false;
}

bool AgentSession::Handshake(ws_cuda_config* config) {
  uint8_t hello_bytes[sizeof(ws_cuda_msg_header) + sizeof(ws_cuda_hello)];
  ws_cuda_hello hello{};
  hello.pid = static_cast<uint32_t>(getpid());
  hello.library_version = kLibraryVersion;
  uint32_t version = 0;
  if (fn().cuptiGetVersion(&version) == CUPTI_SUCCESS) hello.cupti_version = version;
  hello.connection_seq = seq_;
  hello.flags = fn().cuptiGetGraphExecId != nullptr ? WS_CUDA_HELLO_FLAG_CUPTI_GRAPH_IDS : 0;
  hello.max_message_bytes = WS_CUDA_WIRE_MAX_MESSAGE;
  hello.clock = Calibrate(fn());
  WriteWireHeader(hello_bytes, WS_CUDA_MSG_HELLO, sizeof(hello_bytes), 1);
  std::memcpy(hello_bytes + sizeof(ws_cuda_msg_header), &hello, sizeof(hello));
  if (!SendWhole(fd_, hello_bytes, sizeof(hello_bytes), kHandshakeTimeoutMs)) return false;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, kHandshakeTimeoutMs) <= 0) return false;
  uint8_t reply[WS_CUDA_WIRE_MAX_MESSAGE];
  const ssize_t n = recv(fd_, reply, sizeof(reply), MSG_DONTWAIT);
  return n > 0 && ParseConfig(reply, static_cast<size_t>(n), config);
}

bool AgentSession::Subscribe() {
  if (fn().cuptiSubscribe_v2 == nullptr) {
    return Check(fn().cuptiSubscribe(&s_.subscriber, &OnLaunchCallback, nullptr), "cuptiSubscribe");
  }
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "warpscope";
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof(other);
  const CUptiResult r = fn().cuptiSubscribe_v2(&s_.subscriber, &OnLaunchCallback, nullptr, &params);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && other[0] != '\0') {
    other[sizeof(other) - 1] = '\0';
    SayOnce(std::string("another CUPTI client is active (") + other + "); GPU profiling off");
    fatal_ = true;
    return false;
  }
  return Check(r, "cuptiSubscribe_v2");
}

bool AgentSession::SettleDetach(uint32_t wait_ms) {
  int expected = InjectionState::kDetachRequested;
  if (s_.detach_state.compare_exchange_strong(expected, InjectionState::kNone, std::memory_order_acq_rel)) {
    return true;  // taken back: still attached, callbacks still enabled
  }
  const uint64_t deadline = MonotonicNs() + wait_ms * kMs;
  while (s_.detach_state.load(std::memory_order_acquire) == InjectionState::kDetaching) {
    if (MonotonicNs() >= deadline) return false;
    SleepMs(1);
  }
  if (s_.detach_state.load(std::memory_order_acquire) == InjectionState::kDetached) {
    // cuptiFinalize undid everything: subscription, callbacks, activity kinds.
    s_.attached = false;
    s_.buffers_registered = false;
    s_.subscriber = nullptr;
    callbacks_on_ = kernel_on_ = memcpy_on_ = memset_on_ = false;
    s_.detach_state.store(InjectionState::kNone, std::memory_order_release);
  }
  return true;
}

bool AgentSession::Attach() {
  if (s_.attached) return true;
  if (!s_.buffers_registered) {
    if (!Check(fn().cuptiActivityRegisterCallbacks(&OnBufferRequested, &OnBufferCompleted),
               "cuptiActivityRegisterCallbacks")) {
      return false;
    }
    s_.buffers_registered = true;
  }
  if (!Subscribe()) return false;
  s_.attached = true;
  s_.attach_epoch.fetch_add(1, std::memory_order_relaxed);  // CUPTI's correlation ids may start over
  callbacks_on_ = false;
  return true;
}

// Subscribes (if detached) and turns on what every recording needs before
// its kernels: the launch callbacks and memcpy/memset activity.
bool AgentSession::AttachAndEnable() {
  if (!Attach()) return false;
  if (s_.pc.wanted()) {
    // Contexts being created or destroyed and modules being loaded (PC
    // sampling); a CUPTI without them leaves PC sampling to the launches'
    // contexts and without cubins.
    for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                  CUPTI_CBID_RESOURCE_MODULE_LOADED}) {
      (void)fn().cuptiEnableCallback(1, s_.subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    }
  }
  if (!SetLaunchCallbacks(true)) {
    SayOnce("cuptiEnableCallback failed for every launch API; GPU profiling off");
    fatal_ = true;
    return false;
  }
  return SetMemopActivity(true);
}

bool AgentSession::StartTracing(const LinkConfig& config) {
  config_ = config;
  window_ = Window{};
  s_.samples_per_sec.store(config.samples_per_sec, std::memory_order_relaxed);
  s_.sample_burst.store(config.sample_burst, std::memory_order_relaxed);
  s_.epoch.fetch_add(1, std::memory_order_relaxed);
  s_.pool.Configure(config.buffer_bytes, config.buffer_count);
  s_.pc.Configure(config);
  if (config.mode == WS_CUDA_MODE_OFF) return true;
  s_.window_filter.store(false, std::memory_order_relaxed);
  if (config.windowed) return OpenWindow(MonotonicNs());
  if (!SettleDetach(1000)) {
    SayOnce("CUPTI did not finish detaching; GPU profiling off");
    fatal_ = true;
    return false;
  }
  if (!AttachAndEnable()) return false;
  if (!SetKernelActivity(true, MonotonicNs())) return false;
  s_.callbacks_live.store(true, std::memory_order_release);
  return true;
}

bool AgentSession::SetLaunchCallbacks(bool on) {
  if (on == callbacks_on_) return true;
  // The synchronisation APIs (waits) ride on the same subscription. The
  // launch callbacks are switched right next to kernel activity (on last,
  // off first), so a launch seen in duty mode finds kernel activity on.
  size_t wait_count = 0;
  const WaitApi* waits = WaitApis(&wait_count);
  auto set_waits = [&] {
    for (size_t i = 0; i < wait_count; ++i) {
      (void)fn().cuptiEnableCallback(on ? 1 : 0, s_.subscriber, waits[i].domain, waits[i].cbid);
    }
  };
  if (on) set_waits();
  size_t count = 0;
  const LaunchApi* apis = LaunchApis(&count);
  size_t changed = 0;
  for (size_t i = 0; i < count; ++i) {
    // An older CUPTI may not know every id: skip those.
    if (fn().cuptiEnableCallback(on ? 1 : 0, s_.subscriber, apis[i].domain, apis[i].cbid) == CUPTI_SUCCESS) changed++;
  }
  if (!on) set_waits();
  if (on && changed == 0) return false;
  callbacks_on_ = on;
  return true;
}

bool AgentSession::SetMemopActivity(bool on) {
  auto set = [&](bool wanted, bool* state, CUpti_ActivityKind kind, const char* what) {
    if (!wanted || on == *state) return true;
    if (!on) {
      fn().cuptiActivityDisable(kind);
    } else if (!Check(fn().cuptiActivityEnable(kind), what)) {
      return false;
    }
    *state = on;
    return true;
  };
  return set(config_.memcpy, &memcpy_on_, CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)") &&
         set(config_.memset, &memset_on_, CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)");
}

bool AgentSession::SetKernelActivity(bool on, uint64_t now) {
  if (on == kernel_on_) return true;
  if (on) {
    if (!Check(fn().cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)")) {
      return false;
    }
    s_.kernel_on_since.store(now, std::memory_order_relaxed);
  } else {
    fn().cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    const uint64_t since = s_.kernel_on_since.exchange(0, std::memory_order_relaxed);
    if (since != 0 && now > since) s_.activity_on_ns.fetch_add(now - since, std::memory_order_relaxed);
  }
  kernel_on_ = on;
  s_.kernel_activity_on.store(on, std::memory_order_relaxed);
  return true;
}

void AgentSession::RequestDetach() {
  s_.callbacks_live.store(false, std::memory_order_release);
  if (fn().cuptiFinalize != nullptr && callbacks_on_) {
    s_.detach_state.store(InjectionState::kDetachRequested, std::memory_order_release);
    return;
  }
  // No cuptiFinalize (an old CUPTI): unsubscribing is the most we can do.
  // (Such a CUPTI has no PC sampling API: nothing is enabled there.)
  s_.pc.DisableAll(fn(), s_.outbox, MonotonicNs());
  fn().cuptiUnsubscribe(s_.subscriber);
  s_.subscriber = nullptr;
  s_.attached = false;
  callbacks_on_ = false;
}

void AgentSession::StopTracing() {
  s_.callbacks_live.store(false, std::memory_order_release);
  if (!SettleDetach(1000) || !s_.attached) {
    window_ = Window{};
    return;  // detached, or detaching: nothing of ours is enabled
  }
  const uint64_t now = MonotonicNs();
  s_.pc.Read(fn(), s_.outbox, now);  // PC sampling is disabled by the detach (PcSampling::DisableAll)
  SetKernelActivity(false, now);
  SetMemopActivity(false);
  // Buffers CUPTI still holds come back (and are converted while a connection
  // still wants them).
  fn().cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (window_.open) QueueWindow(now, now);
  window_ = Window{};
  RequestDetach();
}

bool AgentSession::OpenWindow(uint64_t now) {
  window_.next_open_ns = 0;
  if (!SettleDetach(100)) {
    window_.next_open_ns = now + 10 * kMs;  // cuptiFinalize still running: try again soon
    return true;
  }
  const uint64_t t0 = MonotonicNs();
  if (!AttachAndEnable()) return false;
  s_.window_first_correlation.store(0, std::memory_order_release);
  s_.window_filter.store(true, std::memory_order_relaxed);
  window_.records_base = s_.conversion.kernel_records.load(std::memory_order_relaxed);
  window_.before_base = s_.conversion.kernels_before_window.load(std::memory_order_relaxed);
  const uint64_t start = MonotonicNs();
  if (!SetKernelActivity(true, start)) return false;
  window_.open = true;
  window_.start_ns = start;
  window_.attach_ns = start - t0;
  window_.launches_base = s_.launches_seen_activity_on.load(std::memory_order_relaxed);
  s_.callbacks_live.store(true, std::memory_order_release);
  QueueClock();
  return true;
}

void AgentSession::QueueWindow(uint64_t end, uint64_t covers_until) {
  ws_cuda_window w{};
  w.on_start_ns = window_.start_ns;
  w.on_end_ns = std::max(end, window_.start_ns);
  w.covers_until_ns = std::max(covers_until, w.on_end_ns);
  w.launches_seen = s_.launches_seen_activity_on.load(std::memory_order_relaxed) - window_.launches_base;
  w.attach_ns = window_.attach_ns;
  w.detach_ns = s_.finalize_ns.exchange(0, std::memory_order_relaxed);
  w.kernels_recorded = s_.conversion.kernel_records.load(std::memory_order_relaxed) - window_.records_base;
  w.kernels_before_window =
      s_.conversion.kernels_before_window.load(std::memory_order_relaxed) - window_.before_base;
  // Every record of the window goes out before the message that closes it.
  QueueSampledRecords();
  s_.outbox.CloseBatches();
  s_.outbox.AddControl(WS_CUDA_MSG_WINDOW, &w, sizeof(w));
}

void AgentSession::CloseWindow(uint64_t now) {
  const uint64_t on_ns = now - window_.start_ns;
  const uint64_t period_ms = config_.duty_period_ms;
  uint64_t period_ns = period_ms * kMs;
  if (config_.mode == WS_CUDA_MODE_ADAPTIVE) {
    const uint64_t launches = s_.launches_seen_activity_on.load(std::memory_order_relaxed) - window_.launches_base;
    const uint64_t fixed = window_.attach_ns + s_.finalize_ns.load(std::memory_order_relaxed);
    period_ns = PlanWindowPeriodNs(on_ns, launches, fixed, config_.overhead_budget_ppm, period_ns);
  }
  if (period_ns <= on_ns) {
    // Recording all the time: this window closes and the next one opens now.
    fn().cuptiActivityFlushAll(0);
    s_.pc.Read(fn(), s_.outbox, now);
    QueueWindow(now, now);
    window_.start_ns = now;
    window_.attach_ns = 0;
    window_.launches_base = s_.launches_seen_activity_on.load(std::memory_order_relaxed);
    window_.records_base = s_.conversion.kernel_records.load(std::memory_order_relaxed);
    window_.before_base = s_.conversion.kernels_before_window.load(std::memory_order_relaxed);
    return;
  }
  // PC sampling goes on until the detach disables it (PcSampling::DisableAll).
  s_.pc.Read(fn(), s_.outbox, now);
  SetKernelActivity(false, now);
  SetMemopActivity(false);
  s_.callbacks_live.store(false, std::memory_order_release);
  window_.open = false;
  window_.end_ns = now;
  window_.covers_until_ns = window_.start_ns + period_ns;
  // Kernels launched in the window may still be running: give them a moment
  // before the forced flush, so that their records are complete.
  window_.drain_until_ns = now + 20 * kMs;
}

void AgentSession::FinishDrain() {
  fn().cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  if (fn().cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    s_.cupti_dropped_records.fetch_add(dropped, std::memory_order_relaxed);
  }
  QueueWindow(window_.end_ns, window_.covers_until_ns);
  window_.drain_until_ns = 0;
  window_.next_open_ns = window_.covers_until_ns;
  RequestDetach();
}

void AgentSession::FlushAndQueue(uint64_t now) {
  if (CuptiLive()) {
    if (kernel_on_) s_.pc.Read(fn(), s_.outbox, now);
    fn().cuptiActivityFlushAll(0);
    size_t dropped = 0;
    if (fn().cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      s_.cupti_dropped_records.fetch_add(dropped, std::memory_order_relaxed);
    }
  }
  QueueSampledRecords();
  s_.outbox.CloseBatches();
}

void AgentSession::QueueSampledRecords() {
  s_.launch_queue.Drain(&launches_);
  if (!launches_.empty()) s_.outbox.AddLaunches(launches_.data(), launches_.size());
  s_.wait_queue.Drain(&waits_);
  if (!waits_.empty()) s_.outbox.AddWaits(waits_.data(), waits_.size());
}

void AgentSession::QueueStats(uint64_t now) { QueueStatsMessage(s_, now); }

// Open batches are sealed first: a STATS message arrives after every record
// queued before it (at exit the agent may read the last one as the end).
void QueueStatsMessage(InjectionState& s_, uint64_t now) {
  s_.outbox.CloseBatches();
  ws_cuda_stats st{};
  st.host_time_ns = now;
  st.launches_seen = s_.launches_seen.load(std::memory_order_relaxed);
  st.launches_sampled = s_.launches_sampled.load(std::memory_order_relaxed);
  st.launches_seen_activity_on = s_.launches_seen_activity_on.load(std::memory_order_relaxed);
  st.launches_seen_activity_off = s_.launches_seen_activity_off.load(std::memory_order_relaxed);
  const uint64_t on_since = s_.kernel_on_since.load(std::memory_order_relaxed);
  st.activity_on_ns = s_.activity_on_ns.load(std::memory_order_relaxed) + (on_since != 0 && now > on_since ? now - on_since : 0);
  st.kernel_records = s_.conversion.kernel_records.load(std::memory_order_relaxed);
  st.memop_records = s_.conversion.memop_records.load(std::memory_order_relaxed);
  st.cupti_dropped_records = s_.cupti_dropped_records.load(std::memory_order_relaxed);
  st.buffers_denied = s_.pool.denied();
  const WireOutboxCounters wire = s_.outbox.counters();
  st.wire_records_dropped = wire.records_dropped;
  st.wire_messages_dropped = wire.messages_dropped;
  st.launch_records_dropped = s_.launch_records_dropped.load(std::memory_order_relaxed);
  st.names_unsent = wire.names_unsent;
  st.waits_seen = s_.waits_seen.load(std::memory_order_relaxed);
  st.waits_sampled = s_.waits_sampled.load(std::memory_order_relaxed);
  st.wait_records_dropped = s_.wait_records_dropped.load(std::memory_order_relaxed);
  s_.pc.FillStats(&st);
  s_.outbox.AddControl(WS_CUDA_MSG_STATS, &st, sizeof(st));
}

void AgentSession::FinalDrainAndPark() {
  s_.callbacks_live.store(false, std::memory_order_release);
  // A detach that no launch claimed is taken back; one running is not waited
  // for long (the process is exiting).
  if (SettleDetach(50) && CuptiLive()) {
    s_.pc.Read(fn(), s_.outbox, MonotonicNs());
    fn().cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (window_.open) {
      const uint64_t now = MonotonicNs();
      QueueWindow(now, now);
    }
  }
  QueueSampledRecords();
  QueueStatsMessage(s_, MonotonicNs());  // the last message, after every record
  const uint64_t deadline = MonotonicNs() + 300 * kMs;
  for (;;) {
    if (s_.outbox.SendSome(fd_) != WireOutbox::SendResult::kBlocked) break;
    const uint64_t now = MonotonicNs();
    if (now >= deadline) break;
    pollfd p{fd_, POLLOUT, 0};
    poll(&p, 1, static_cast<int>((deadline - now) / kMs) + 1);
  }
  {
    std::lock_guard<std::mutex> lock(s_.exit_mu);
    s_.exit_drained = true;
  }
  s_.exit_cv.notify_all();
  for (;;) pause();  // all signals are blocked here: the process's exit ends us
}

void AgentSession::QueueClock() {
  if (!CuptiLive()) return;  // a CUPTI call now would attach it again
  const ws_cuda_clock_pair pair = Calibrate(fn());
  if (pair.host_after_ns != 0) s_.outbox.AddControl(WS_CUDA_MSG_CLOCK, &pair, sizeof(pair));
}

bool AgentSession::ReadAgent(bool* config_changed, ws_cuda_config* config) {
  uint8_t buffer[sizeof(ws_cuda_msg_header) + sizeof(ws_cuda_config) + 1];
  for (;;) {
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (n == 0) return false;  // the agent closed
    if (!ParseConfig(buffer, static_cast<size_t>(n), config)) return false;  // not our agent
    *config_changed = true;
  }
}

bool AgentSession::Run() {
  ws_cuda_config wire_config{};
  // The handshake calls CUPTI (version, clock): settle a detach first.
  if (!SettleDetach(1000)) return true;
  s_.session_fd.store(fd_);
  const bool handshaken = Handshake(&wire_config);
  if (!handshaken) {
    s_.session_fd.store(-1);
    return true;
  }
  if (!s_.exit_handler_registered) {
    atexit(&AtExitHandler);
    s_.exit_handler_registered = true;
  }
  s_.outbox.Reset(WireOutboxLimits{ResolveLinkConfig(wire_config).outbox_bytes, 8u << 20});
  s_.records_wanted.store(true, std::memory_order_release);
  bool ok = StartTracing(ResolveLinkConfig(wire_config));
  uint64_t now = MonotonicNs();
  uint64_t next_flush = now + config_.flush_interval_ms * kMs;
  uint64_t next_stats = now + config_.stats_interval_ms * kMs;
  uint64_t next_clock = now + kClockIntervalNs;
  uint64_t duty_window = now;
  uint64_t last_progress = now;
  if (ok) {
    QueueStats(now);  // the baseline
    QueueClock();
  }
  while (ok) {
    now = MonotonicNs();
    uint64_t next_duty = ~0ull;
    if (config_.windowed && config_.mode != WS_CUDA_MODE_OFF) {
      // Windows: record, drain, detach, wait, attach again.
      if (window_.open && now >= window_.start_ns + config_.duty_on_ms * kMs) CloseWindow(now);
      if (window_.drain_until_ns != 0 && now >= window_.drain_until_ns) FinishDrain();
      if (window_.next_open_ns != 0 && now >= window_.next_open_ns && !OpenWindow(now)) break;
      next_duty = window_.open ? window_.start_ns + config_.duty_on_ms * kMs
                  : window_.drain_until_ns != 0 ? window_.drain_until_ns
                  : window_.next_open_ns != 0 ? window_.next_open_ns
                                              : ~0ull;
    } else if (config_.mode == WS_CUDA_MODE_DUTY) {
      // Duty cycle (attached throughout): kernel activity on for the first
      // duty_on_ms of each period.
      const uint64_t period = config_.duty_period_ms * kMs;
      while (now >= duty_window + period) duty_window += period;
      const uint64_t off_at = duty_window + config_.duty_on_ms * kMs;
      const bool want_on = now < off_at;
      // The launch callbacks on after kernel activity and off before it, so
      // a launch they see always finds kernel activity on.
      if (!want_on && config_.duty_callbacks && !SetLaunchCallbacks(false)) break;
      if (!SetKernelActivity(want_on, now)) break;
      if (want_on && config_.duty_callbacks && !SetLaunchCallbacks(true)) break;
      next_duty = want_on ? off_at : duty_window + period;
    }
    // Contexts the application threads noted get PC sampling while kernel
    // activity is on; cubins go out while the outbox has room.
    if (kernel_on_ && s_.pc.wanted() && CuptiLive()) (void)s_.pc.Enable(fn());
    s_.pc.FeedCubins(s_.outbox, config_.outbox_bytes / 2);
    if (now >= next_flush) {
      FlushAndQueue(now);
      next_flush = now + config_.flush_interval_ms * kMs;
    }
    if (now >= next_stats) {
      QueueStats(now);
      next_stats = now + config_.stats_interval_ms * kMs;
    }
    if (now >= next_clock) {
      QueueClock();
      next_clock = now + kClockIntervalNs;
    }
    size_t sent = 0;
    const WireOutbox::SendResult result = s_.outbox.SendSome(fd_, &sent);
    if (result == WireOutbox::SendResult::kBroken) break;
    if (result != WireOutbox::SendResult::kBlocked || sent > 0) last_progress = now;
    if (now - last_progress > config_.stall_timeout_ms * kMs) break;  // the agent stopped reading

    const uint64_t deadline = std::min({next_flush, next_stats, next_clock, next_duty, now + 200 * kMs});
    const int timeout_ms = static_cast<int>(std::max<uint64_t>(1, (deadline - now + kMs - 1) / kMs));
    pollfd polls[2] = {
        {fd_, static_cast<short>(POLLIN | (result == WireOutbox::SendResult::kBlocked ? POLLOUT : 0)), 0},
        {s_.wake_fd, POLLIN, 0}};
    if (poll(polls, s_.wake_fd >= 0 ? 2 : 1, timeout_ms) < 0 && errno != EINTR) break;
    if (s_.exit_requested.load()) FinalDrainAndPark();  // never returns
    const pollfd& p = polls[0];
    if (p.revents & (POLLERR | POLLNVAL)) break;
    if (p.revents & (POLLIN | POLLHUP)) {
      bool changed = false;
      if (!ReadAgent(&changed, &wire_config)) break;
      if (changed) {
        StopTracing();
        if (!StartTracing(ResolveLinkConfig(wire_config))) break;
        duty_window = MonotonicNs();
        QueueStats(MonotonicNs());
      }
    }
  }
  StopTracing();
  s_.records_wanted.store(false, std::memory_order_release);
  s_.outbox.Reset(WireOutboxLimits{});
  s_.pool.Trim();
  s_.session_fd.store(-1);
  return !fatal_;
}

}  // namespace

void DrainAtExit() noexcept {
  InjectionState* s = GetInjectionState();
  if (s == nullptr || s->wake_fd < 0 || !s->records_wanted.load()) return;
  try {
    s->exit_requested.store(true);
    const uint64_t one = 1;
    (void)!write(s->wake_fd, &one, sizeof(one));
    std::unique_lock<std::mutex> lock(s->exit_mu);
    s->exit_cv.wait_for(lock, std::chrono::milliseconds(500), [s] { return s->exit_drained; });
  } catch (...) {
  }
}

void RunLinkThread(InjectionState& s) noexcept {
  try {
    std::string why;
    if (!LoadCuptiLibrary(&s.cupti, &why)) {
      SayOnce(why + "; GPU profiling off");
      return;
    }
    const uint32_t retry_ms = RetryIntervalMs();
    uint32_t connection_seq = 0;
    for (;;) {
      const int fd = TryConnect(s.socket_path);
      if (fd < 0) {
        SleepMs(retry_ms);
        continue;
      }
      AgentSession session(s, fd, ++connection_seq);
      const bool keep_going = session.Run();
      close(fd);
      if (!keep_going) return;
      SleepMs(retry_ms);
    }
  } catch (...) {
    SayOnce("internal error; GPU profiling off");
  }
}

}  // namespace warpscope::cuda
