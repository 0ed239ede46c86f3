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

#include "cuda/cupti_client_guard.h"
#include "cuda/recording_scheduler.h"

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

// Connects to the agent's socket, but only to one whose listener belongs to
// root or to this process's own user (SO_PEERCRED of the peer, taken when it
// listened): whoever owns the socket gets the application's kernel names and
// whole cubins, and its CONFIG can turn on exact mode and PC sampling. A
// WARPSCOPE_AGENT_SOCKET in a directory others can write to (/tmp) could be
// another user's. Such a peer is refused without a byte sent, said once on
// stderr, and counted in `untrusted_peers` (the link thread's); the library
// stays dormant and tries again later, as without an agent.
int TryConnect(const std::string& path, uint64_t* untrusted_peers) {
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
  ucred peer{};
  socklen_t length = sizeof(peer);
  const bool known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 && length == sizeof(peer);
  if (!known || (peer.uid != 0 && peer.uid != geteuid() && peer.uid != getuid())) {
    close(fd);
    ++*untrusted_peers;
    SayOnce(path + " belongs to uid " + (known ? std::to_string(peer.uid) : std::string("unknown")) +
            ", not root or this process's user; not connecting to it (GPU profiling waits for a trusted agent)");
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

void QueueStatsMessage(InjectionState& s, uint64_t now);

// One connection's life. Owned by the link thread. What CUPTI does is the
// session's (cupti_session.h), when to record the scheduler's
// (recording_scheduler.h); this class carries their results to the agent.
class AgentSession {
 public:
  AgentSession(InjectionState& s, int fd, uint32_t connection_seq) : s_(s), fd_(fd), seq_(connection_seq) {}

  // Returns false after a fatal CUPTI error (the library stays off).
  bool Run();

 private:
  const CuptiFunctions& fn() const { return s_.cupti.fn; }
  CuptiSession& cupti() { return s_.session; }
  bool Handshake(ws_cuda_config* config);
  bool StartTracing(const LinkConfig& config);
  // Everything off and the records out; the session leaves CUPTI.
  void StopTracing();
  // Exact and duty modes: enter CUPTI (again, after a step-aside) and turn
  // kernel activity on. False after a fatal CUPTI error.
  bool EnterContinuous(uint64_t now);
  // Duty mode in CUPTI throughout: kernel activity (and with
  // duty_callbacks the launch callbacks) as the duty phase at `now` wants;
  // `next_change` (if not null) gets when the phase changes.
  bool ApplyDutyPhase(uint64_t now, uint64_t* next_change = nullptr);
  // Windowed modes: the scheduler's steps.
  bool OpenWindow(uint64_t now);
  void CloseWindow(uint64_t now);
  void FinishDrain();
  // Every kernel launched in the closed window has its record (a graph
  // launch counts one kernel; a launch that ran none keeps the drain going
  // to its most).
  bool WindowKernelsIn() const;
  // Another client took CUPTI (the session stepped aside): the open window
  // ends there; recording resumes once the client is done.
  void OnSteppedAside();
  void QueueWindow(const RecordingScheduler::Window& window, uint64_t end, uint64_t covers_until);
  // The sampled launches and the waits the application threads queued.
  void QueueSampledRecords();
  void FlushAndQueue(uint64_t now);
  void QueueStats(uint64_t now);
  void QueueClock();
  // Process exit: the last records out, then this thread waits for the end.
  [[noreturn]] void FinalDrainAndPark();
  // False when the connection ended; sets `config_changed` for a new CONFIG.
  bool ReadAgent(bool* config_changed, ws_cuda_config* config);

  // The counters at the open window's start.
  struct WindowBase {
    uint64_t launches = 0;
    uint64_t records = 0;
    uint64_t before = 0;
  };

  InjectionState& s_;
  const int fd_;
  const uint32_t seq_;
  bool fatal_ = false;
  bool aside_ = false;  // the session's step-aside has been handled
  uint64_t last_leave_ns_ = 0;  // the last leave took this long (the planner counts it)
  uint64_t next_enter_ns_ = 0;  // exact and duty modes: when to try entering again
  LinkConfig config_;
  RecordingScheduler scheduler_;
  WindowBase base_;
  uint64_t drain_launches_ = 0;  // launches recorded in the window now draining
  std::vector<ws_cuda_launch> launches_;
  std::vector<ws_cuda_wait> waits_;
};

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

bool AgentSession::StartTracing(const LinkConfig& config) {
  config_ = config;
  const uint64_t now = MonotonicNs();
  scheduler_.Reset(config, now);
  aside_ = false;
  s_.samples_per_sec.store(config.samples_per_sec, std::memory_order_relaxed);
  s_.sample_burst.store(config.sample_burst, std::memory_order_relaxed);
  s_.epoch.fetch_add(1, std::memory_order_relaxed);
  s_.pool.Configure(config.buffer_bytes, config.buffer_count);
  s_.pc.Configure(config);
  if (config.mode == WS_CUDA_MODE_OFF) return true;
  s_.window_filter.store(false, std::memory_order_relaxed);
  if (config.windowed) return OpenWindow(now);
  return EnterContinuous(now);
}

bool AgentSession::EnterContinuous(uint64_t now) {
  if (!cupti().Settle(1000)) return true;  // a launch is still disabling PC sampling: next turn
  switch (cupti().Enter(config_)) {
    case CuptiSession::EnterResult::kFailed:
      fatal_ = true;
      return false;
    case CuptiSession::EnterResult::kTaken:
      return true;  // another client has CUPTI: the loop tries again
    case CuptiSession::EnterResult::kIn:
      break;
  }
  const bool ok = config_.mode == WS_CUDA_MODE_DUTY ? ApplyDutyPhase(now) : cupti().SetKernelActivity(true, now);
  if (!ok) {
    fatal_ = true;
    return false;
  }
  s_.callbacks_live.store(true, std::memory_order_release);
  QueueClock();
  return true;
}

bool AgentSession::ApplyDutyPhase(uint64_t now, uint64_t* next_change) {
  const RecordingScheduler::DutyPhase phase = scheduler_.Duty(now);
  if (next_change != nullptr) *next_change = phase.next_change_ns;
  // Kernel activity on for the first duty_on_ms of each period; the launch
  // callbacks on after kernel activity and off before it, so a launch they
  // see always finds kernel activity on.
  if (!phase.on && config_.duty_callbacks && !cupti().SetLaunchCallbacks(false)) return false;
  if (!cupti().SetKernelActivity(phase.on, now)) return false;
  return !(phase.on && config_.duty_callbacks && !cupti().SetLaunchCallbacks(true));
}

void AgentSession::StopTracing() {
  if (scheduler_.window().open) {
    const uint64_t now = MonotonicNs();
    cupti().ReadPcSamples(now);
    QueueWindow(scheduler_.window(), now, now);
  }
  cupti().Leave();
  (void)cupti().Settle(50);
  scheduler_.Reset(LinkConfig{}, MonotonicNs());
}

bool AgentSession::OpenWindow(uint64_t now) {
  if (!cupti().Settle(100)) {
    scheduler_.RetryOpenAt(now + 10 * kMs);  // a launch is still disabling PC sampling
    return true;
  }
  const uint64_t t0 = MonotonicNs();
  switch (cupti().Enter(config_)) {
    case CuptiSession::EnterResult::kFailed:
      fatal_ = true;
      return false;
    case CuptiSession::EnterResult::kTaken:
      // CUPTI is another client's: try again a period later.
      scheduler_.RetryOpenAt(now + uint64_t{config_.duty_period_ms} * kMs);
      return true;
    case CuptiSession::EnterResult::kIn:
      break;
  }
  s_.window_first_correlation.store(0, std::memory_order_release);
  s_.window_last_correlation.store(0, std::memory_order_relaxed);
  s_.window_draining.store(false, std::memory_order_release);
  s_.window_filter.store(true, std::memory_order_relaxed);
  base_.records = s_.conversion.kernel_records.load(std::memory_order_relaxed);
  base_.before = s_.conversion.kernels_before_window.load(std::memory_order_relaxed);
  const uint64_t start = MonotonicNs();
  if (!cupti().SetKernelActivity(true, start)) {
    fatal_ = true;
    return false;
  }
  scheduler_.Opened(start, start - t0);
  base_.launches = s_.launches_seen_activity_on.load(std::memory_order_relaxed);
  s_.callbacks_live.store(true, std::memory_order_release);
  QueueClock();
  return true;
}

void AgentSession::QueueWindow(const RecordingScheduler::Window& window, uint64_t end, uint64_t covers_until) {
  ws_cuda_window w{};
  w.on_start_ns = window.start_ns;
  w.on_end_ns = std::max(end, window.start_ns);
  w.covers_until_ns = std::max(covers_until, w.on_end_ns);
  w.launches_seen = s_.launches_seen_activity_on.load(std::memory_order_relaxed) - base_.launches;
  w.attach_ns = window.attach_ns;
  w.detach_ns = last_leave_ns_;
  w.kernels_recorded = s_.conversion.kernel_records.load(std::memory_order_relaxed) - base_.records;
  w.kernels_before_window = s_.conversion.kernels_before_window.load(std::memory_order_relaxed) - base_.before;
  // Every record of the window goes out before the message that closes it.
  QueueSampledRecords();
  s_.outbox.CloseBatches();
  s_.outbox.AddControl(WS_CUDA_MSG_WINDOW, &w, sizeof(w));
}

void AgentSession::CloseWindow(uint64_t now) {
  const uint64_t launches = s_.launches_seen_activity_on.load(std::memory_order_relaxed) - base_.launches;
  const RecordingScheduler::Window before = scheduler_.window();
  cupti().ReadPcSamples(now);
  const RecordingScheduler::Close close = scheduler_.CloseAt(now, launches, last_leave_ns_);
  if (close.continuous) {
    // The window just ended is queued; the next one starts now and CUPTI is
    // not left.
    cupti().Flush(false);
    QueueWindow(before, now, now);
    base_.launches = s_.launches_seen_activity_on.load(std::memory_order_relaxed);
    base_.records = s_.conversion.kernel_records.load(std::memory_order_relaxed);
    base_.before = s_.conversion.kernels_before_window.load(std::memory_order_relaxed);
    return;
  }
  // No launch is recorded after the window; kernel activity stays on while
  // its kernels, still queued on a GPU that runs behind the launches, run
  // (PC sampling goes on until the leave disables it).
  s_.callbacks_live.store(false, std::memory_order_release);
  s_.window_draining.store(true, std::memory_order_release);
  drain_launches_ = launches;
}

bool AgentSession::WindowKernelsIn() const {
  return s_.conversion.kernel_records.load(std::memory_order_relaxed) - base_.records >= drain_launches_;
}

void AgentSession::FinishDrain() {
  const uint64_t now = MonotonicNs();
  cupti().SetKernelActivity(false, now);
  cupti().SetMemopActivity(false);
  cupti().Flush(true);
  const RecordingScheduler::Window& window = scheduler_.window();
  QueueWindow(window, window.end_ns, window.covers_until_ns);
  scheduler_.Drained();
  const uint64_t t0 = MonotonicNs();
  cupti().Leave();
  last_leave_ns_ = MonotonicNs() - t0;
}

void AgentSession::OnSteppedAside() {
  aside_ = true;
  const uint64_t at = std::max(cupti().aside_since_ns(), scheduler_.window().start_ns);
  const RecordingScheduler::Window& window = scheduler_.window();
  if (window.open) {
    QueueWindow(window, at, at);
  } else if (window.drain_until_ns != 0) {
    QueueWindow(window, window.end_ns, std::min(window.covers_until_ns, std::max(at, window.end_ns)));
  }
  scheduler_.Interrupted();
  s_.window_filter.store(false, std::memory_order_relaxed);
}

void AgentSession::FlushAndQueue(uint64_t now) {
  if (cupti().in()) {
    if (cupti().kernel_activity_on()) cupti().ReadPcSamples(now);
    cupti().Flush(false);
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
  st.cupti_yields = s_.session.yields();
  st.cupti_taken = s_.session.taken_on_enter();
  st.cupti_aside_ns = s_.session.aside_ns(now);
  st.graph_launches = s_.graph_launches_seen.load(std::memory_order_relaxed);
  st.cupti_state = static_cast<uint32_t>(s_.session.hold());
  st.cupti_flags = (s_.session.stays_subscribed() ? WS_CUDA_CUPTI_FLAG_STAYS_SUBSCRIBED : 0u) |
                   (ClientGuardTotals().slots_patched > 0 ? WS_CUDA_CUPTI_FLAG_GUARD : 0u);
  s_.outbox.AddControl(WS_CUDA_MSG_STATS, &st, sizeof(st));
}

void AgentSession::FinalDrainAndPark() {
  s_.callbacks_live.store(false, std::memory_order_release);
  // A leave that no launch claimed is taken back; one running is not waited
  // for long (the process is exiting).
  if (cupti().Settle(50) && cupti().in()) {
    const uint64_t now = MonotonicNs();
    cupti().ReadPcSamples(now);
    cupti().Flush(true);
    if (scheduler_.window().open) QueueWindow(scheduler_.window(), now, now);
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
  for (;;) pause();  // asynchronous signals are blocked here: the process's exit ends us
}

void AgentSession::QueueClock() {
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
  // The handshake calls CUPTI (version, clock): settle a leave first.
  if (!cupti().Settle(1000)) return true;
  s_.session_fd.store(fd_);
  const bool handshaken = Handshake(&wire_config);
  if (!handshaken) {
    s_.session_fd.store(-1);
    return true;
  }
  if (!s_.exit_handler_registered) {
    atexit(&AtExitHandler);
    s_.exit_handler_registered = true;
    // From the first session on, the application's own CUPTI clients get
    // CUPTI whenever they ask (cupti_client_guard.h). Dormant, nothing of
    // the application is touched.
    (void)InstallClientGuard(s_);
  }
  s_.outbox.Reset(WireOutboxLimits{ResolveLinkConfig(wire_config).outbox_bytes, 8u << 20});
  s_.records_wanted.store(true, std::memory_order_release);
  bool ok = StartTracing(ResolveLinkConfig(wire_config));
  uint64_t now = MonotonicNs();
  uint64_t next_flush = now + config_.flush_interval_ms * kMs;
  uint64_t next_stats = now + config_.stats_interval_ms * kMs;
  uint64_t next_clock = now + kClockIntervalNs;
  uint64_t last_progress = now;
  if (ok) {
    QueueStats(now);  // the baseline
    QueueClock();
  }
  while (ok) {
    now = MonotonicNs();
    // Objects loaded since (a profiler imported late) get the client guard.
    PatchNewClients();
    uint64_t next_step = ~0ull;
    if (config_.mode != WS_CUDA_MODE_OFF) {
      if (cupti().waiting_for_client()) {
        // Another client has CUPTI: what was recorded goes out, nothing more.
        cupti().SettleStepAside();
        if (!aside_) OnSteppedAside();
      } else if (aside_) {
        // The client is done: record again from now.
        aside_ = false;
        scheduler_.Resume(now);
        next_enter_ns_ = 0;
      }
    }
    if (config_.mode == WS_CUDA_MODE_OFF || aside_) {
      // nothing to schedule
    } else if (config_.windowed) {
      // Windows: record, drain, leave, wait, enter again.
      switch (scheduler_.Due(now)) {
        case RecordingScheduler::Step::kClose:
          CloseWindow(now);
          break;
        case RecordingScheduler::Step::kFinishDrain:
          // Records come back as CUPTI fills or flushes its buffers.
          if (!WindowKernelsIn() && scheduler_.DrainMore(now)) {
            cupti().Flush(false);
            break;
          }
          FinishDrain();
          break;
        case RecordingScheduler::Step::kOpen:
          ok = OpenWindow(now);
          break;
        case RecordingScheduler::Step::kNone:
          break;
      }
      if (!ok) break;
      next_step = scheduler_.NextDeadline();
    } else if (!cupti().in()) {
      // Exact or duty mode not in CUPTI (a client was using it, or took it
      // before us): try again now and then.
      if (now >= next_enter_ns_) {
        if (!EnterContinuous(now)) break;
        if (!cupti().in()) next_enter_ns_ = now + uint64_t{config_.duty_period_ms} * kMs;
      }
      next_step = next_enter_ns_;
    } else if (config_.mode == WS_CUDA_MODE_DUTY) {
      // Duty cycle (in CUPTI throughout).
      if (!ApplyDutyPhase(now, &next_step)) break;
    }
    // Contexts the application threads noted get PC sampling while kernel
    // activity is on; cubins go out while the outbox has room.
    cupti().EnablePcSampling();
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

    const uint64_t deadline = std::min({next_flush, next_stats, next_clock, next_step, now + 200 * kMs});
    const int timeout_ms =
        static_cast<int>(std::max<uint64_t>(1, (deadline > now ? deadline - now + kMs - 1 : 0) / kMs));
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
        QueueStats(MonotonicNs());
      }
    }
  }
  StopTracing();
  if (fatal_) cupti().MarkOff();  // after the leave, which undoes a half-made entry
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
    uint64_t untrusted_peers = 0;
    for (;;) {
      const int fd = TryConnect(s.socket_path, &untrusted_peers);
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
