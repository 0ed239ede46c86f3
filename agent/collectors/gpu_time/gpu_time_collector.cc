#include "agent/collectors/gpu_time/gpu_time_collector.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "agent/process/proc_maps.h"
#include "agent/symbolize/demangle.h"
#include "base/logging.h"

namespace warpscope::gpu {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
// cuda_profiling_paused_seconds readings held between two uploads (one a
// second for each process whose library is aside).
constexpr size_t kMaxPausedReadings = 4096;

bool Windowed(const ws_cuda_config& c) {
  return c.mode == WS_CUDA_MODE_ADAPTIVE || (c.mode == WS_CUDA_MODE_DUTY && (c.flags & WS_CUDA_CONFIG_DUTY_DETACH));
}

int64_t ClockNanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kSecond + ts.tv_nsec;
}

// The library's (launch kind, flags) as the API's name.
GpuLaunchApi LaunchApiOf(uint16_t kind, uint16_t flags) {
  const bool driver = (flags & WS_CUDA_LAUNCH_FLAG_DRIVER_API) != 0;
  switch (kind) {
    case WS_CUDA_LAUNCH_KERNEL: return driver ? GpuLaunchApi::kCuLaunchKernel : GpuLaunchApi::kCudaLaunchKernel;
    case WS_CUDA_LAUNCH_KERNEL_EX: return driver ? GpuLaunchApi::kCuLaunchKernelEx : GpuLaunchApi::kCudaLaunchKernelEx;
    case WS_CUDA_LAUNCH_COOPERATIVE:
      return driver ? GpuLaunchApi::kCuLaunchCooperativeKernel : GpuLaunchApi::kCudaLaunchCooperativeKernel;
    case WS_CUDA_LAUNCH_GRAPH: return driver ? GpuLaunchApi::kCuGraphLaunch : GpuLaunchApi::kCudaGraphLaunch;
    default: return GpuLaunchApi::kUnknown;
  }
}

}  // namespace

// Events from the socket thread to the sampling thread, bounded by records.
class GpuTimeCollector::Inbox {
 public:
  explicit Inbox(size_t max_records) : max_records_(max_records) {}
  // Socket thread.
  void PostFromSocketThread(CudaProcessEvent&& event) {
    const size_t records = event.kernels.size() + event.memops.size() + event.waits.size() + event.pc_samples.size();
    std::lock_guard<std::mutex> lock(mu_);
    if (records > 0 && queued_records_ + records > max_records_) {
      dropped_records_ += records;
      return;
    }
    queued_records_ += records;
    events_.push_back(std::move(event));
  }
  // Sampling thread.
  void Take(std::vector<CudaProcessEvent>* out, uint64_t* dropped_records) {
    out->clear();
    std::lock_guard<std::mutex> lock(mu_);
    out->swap(events_);
    queued_records_ = 0;
    *dropped_records = dropped_records_;
  }

 private:
  const size_t max_records_;
  std::mutex mu_;
  std::vector<CudaProcessEvent> events_;  // guarded by mu_
  size_t queued_records_ = 0;             // guarded by mu_
  uint64_t dropped_records_ = 0;          // guarded by mu_
};

namespace {

// How a kernel shows in profiles and traces: demangled, and bounded (a
// demangled name can be far longer than the mangled one).
std::string DisplayKernelName(std::string_view system_name) {
  if (system_name.empty()) return "[unknown kernel]";
  std::string name = Demangle(system_name);
  if (name.size() > WS_CUDA_WIRE_MAX_NAME) {
    size_t cut = WS_CUDA_WIRE_MAX_NAME;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    name.resize(cut);
    name += "...";
  }
  return name;
}

}  // namespace

GpuTimeCollector::GpuTimeCollector(const GpuTimeOptions& options, GpuTimeSessionParts parts)
    : options_(options),
      parts_(std::move(parts)),
      inbox_(std::make_unique<Inbox>(options.max_inbox_records)),
      joiner_(options.join),
      analyzer_([&] {
        ActivityAnalysisOptions a = options.analysis;
        a.grace_ns = options.join.grace_ns;
        return a;
      }()),
      stacks_(parts_.symbolizer, parts_.python, options.max_stacks),
      kernel_names_(std::make_shared<KernelNameTable>(options.kernel_name_bytes, DisplayKernelName)),
      cubins_(std::make_unique<CubinLibrary>(options.max_cubin_bytes, options.cubin_symbols)) {}

GpuTimeCollector::~GpuTimeCollector() {
  server_.reset();  // stops the socket thread before the inbox goes
}

StatusOr<std::unique_ptr<GpuTimeCollector>> GpuTimeCollector::Open(const GpuTimeOptions& options,
                                                                    GpuTimeSessionParts parts) {
  std::unique_ptr<GpuTimeCollector> c(new GpuTimeCollector(options, std::move(parts)));
  ASSIGN_OR_RETURN(std::unique_ptr<UprobeStackCollector> probe,
                   UprobeStackCollector::CreateSharing(1, c->parts_.unwind_maps));
  c->probe_ = std::move(probe);
  ProbeAttacherOptions probes;
  probes.max_probe_files = options.max_probe_files;
  probes.attach_timeout = options.probe_attach_timeout;
  c->probes_ = std::make_unique<ProbeAttacher>(probes, c->parts_.procfs, c->probe_);
  Inbox* inbox = c->inbox_.get();
  CudaSocketServerOptions socket = options.socket;
  socket.kernel_names = c->kernel_names_;
  ASSIGN_OR_RETURN(c->server_, CudaSocketServer::Start(socket, [inbox](CudaProcessEvent&& event) {
                     inbox->PostFromSocketThread(std::move(event));
                   }));
  return c;
}

void GpuTimeCollector::CopyProbeStats() {
  const ProbeAttacherStats& p = probes_->stats();
  stats_.probe_attach_failures = p.attach_failures;
  stats_.probe_files_attached = p.files_attached;
  stats_.probe_files_detached = p.files_detached;
  stats_.probe_files_refused = p.files_refused;
  stats_.autograd_probe_files_attached = p.autograd_files_attached;
  stats_.autograd_probe_failures = p.autograd_failures;
  stats_.probe_files_unsafe = p.files_unsafe;
  stats_.probe_attach_timeouts = p.attach_timeouts;
  stats_.probe_attaches_dropped = p.attaches_dropped;
}

void GpuTimeCollector::OnConnected(const CudaProcessEvent& event, int64_t now_ns) {
  Connection& c = connections_[event.connection_id];
  c.id = event.connection_id;
  c.pid = static_cast<uint32_t>(event.pid);
  c.uid = event.uid;
  if (Windowed(options_.socket.config)) c.windows = std::make_unique<RecordingWindows>(options_.join.max_pending_kernels);
  analyzer_.Begin(c.id, c.pid, c.windows != nullptr, now_ns);
  c.clock.AddPair({event.hello.clock.host_before_ns, event.hello.clock.cupti_ns, event.hello.clock.host_after_ns});
  StatusOr<std::string> comm = parts_.procfs.ReadComm(c.pid);
  comms_[c.pid] = {comm.ok() ? *comm : "", 0};
  if (parts_.describe) parts_.describe(c.pid);
  probes_->PostConnected(event.connection_id, c.pid);
}

std::shared_ptr<const KernelName> GpuTimeCollector::KernelNameOf(uint64_t key) {
  static const auto* const lost =
      new std::shared_ptr<const KernelName>(new KernelName{"[kernel name evicted]", "[kernel name evicted]"});
  if (key == KernelNameTable::kUnknownKey || key == KernelNameTable::kRefusedKey) {
    const auto& placeholder = key == KernelNameTable::kUnknownKey ? KernelNameTable::UnknownName()
                                                                   : KernelNameTable::RefusedName();
    return std::shared_ptr<const KernelName>(placeholder, &placeholder->text);
  }
  auto it = name_of_key_.find(key);
  std::shared_ptr<const InternedKernelName> name = it != name_of_key_.end() ? it->second.lock() : nullptr;
  if (name == nullptr) {
    ++stats_.kernel_names_lost;
    return *lost;
  }
  return std::shared_ptr<const KernelName>(name, &name->text);  // held while the builder copies it
}

void GpuTimeCollector::PruneNameKeys() {
  for (auto it = name_of_key_.begin(); it != name_of_key_.end();) {
    it = it->second.expired() ? name_of_key_.erase(it) : std::next(it);
  }
  // Pruned again once it doubled: amortized O(1) per kernel, and at most
  // twice the names alive (themselves within the name budget).
  prune_names_at_ = std::max<size_t>(kMinPruneNamesAt, 2 * name_of_key_.size());
}

void GpuTimeCollector::Trace(GpuActivityRecord&& a) {
  const int64_t second = a.start_ns - a.start_ns % kSecond;
  Coverage& cov = coverage_[{a.pid, second}];
  ++cov.recorded;
  if (cov.sent >= options_.trace_per_second || trace_.activities.size() >= options_.max_trace_per_window) {
    if (cov.complete_until == 0 || a.start_ns < cov.complete_until) cov.complete_until = a.start_ns;
    ++stats_.trace_thinned;
    return;
  }
  ++cov.sent;
  ++stats_.trace_activities;
  trace_.activities.push_back(std::move(a));
}

void GpuTimeCollector::OnKernels(Connection& c, const std::vector<CudaKernel>& kernels, int64_t now_ns,
                                 int64_t unix_offset_ns) {
  for (const CudaKernel& k : kernels) {
    const ws_cuda_kernel& r = k.record;
    const uint64_t key = k.name->key;
    if (key != KernelNameTable::kUnknownKey && key != KernelNameTable::kRefusedKey &&
        name_of_key_.try_emplace(key, k.name).second && name_of_key_.size() > prune_names_at_) {
      PruneNameKeys();  // names churned through the budget within one window
    }
    KernelExecution e;
    e.pid = c.pid;
    // The probe's key: the library's CUPTI attachment in the upper half.
    e.correlation_id = static_cast<uint64_t>(r.attach_epoch) << 32 | r.correlation_id;
    e.kernel_key = key;
    e.device = r.device_id;
    e.stream = r.stream_id;
    e.graph_id = r.graph_id;
    const std::optional<int64_t> start = c.clock.ToHostMonotonic(r.start_ns);
    const std::optional<int64_t> end = c.clock.ToHostMonotonic(r.end_ns);
    if (!start || !end) {
      ++stats_.kernels_without_clock;
      e.start_ns = e.end_ns = now_ns;
    } else if (r.flags & WS_CUDA_RECORD_FLAG_NO_TIME) {
      e.start_ns = e.end_ns = *start;
    } else {
      e.start_ns = *start;
      e.end_ns = *end;
    }
    const int64_t start_unix = e.start_ns + unix_offset_ns;
    e.bucket = start_unix - start_unix % kSecond;
    if (!(r.flags & WS_CUDA_RECORD_FLAG_NO_TIME)) {
      waits_.AddSpan(c.id, {static_cast<int64_t>(r.start_ns), static_cast<int64_t>(r.end_ns), r.stream_id, r.context_id,
                            GpuChild{key, 0}},
                     now_ns);
      if (start && end) {
        AnalyzedActivity a;
        a.start_ns = e.start_ns;
        a.end_ns = e.end_ns;
        a.device = r.device_id;
        a.kernel = k.name;
        a.category = KernelCategory(k.name->text.system_name);
        a.launch_ns = static_cast<int64_t>(r.launch_host_ns);
        a.launch_duration_ns = r.launch_duration_ns;
        a.launch_tid = r.launch_tid;
        a.graph_id = r.graph_id;
        analyzer_.Add(c.id, std::move(a));
      }
    }
    // Kernels waiting for their windows are bounded over all connections
    // together, like the joiner's pending ones.
    if (c.windows == nullptr || windowed_kernels_ >= options_.join.max_pending_kernels || !c.windows->Add(e)) {
      if (c.windows != nullptr) ++stats_.window_overflow;
      joiner_.AddKernel(e, now_ns);
    } else {
      ++windowed_kernels_;
    }
    if (options_.trace_per_second == 0 || !start || (r.flags & WS_CUDA_RECORD_FLAG_NO_TIME)) continue;
    GpuActivityRecord a;
    a.pid = c.pid;
    a.start_ns = start_unix;
    a.duration_ns = std::max<int64_t>(0, e.end_ns - e.start_ns);
    a.kind = GpuActivityKind::kKernel;
    a.name = std::shared_ptr<const KernelName>(k.name, &k.name->text);  // shares the name's ownership
    a.device = r.device_id;
    a.stream = r.stream_id;
    a.correlation_id = r.correlation_id;
    a.graph_id = r.graph_id;
    a.grid[0] = static_cast<uint32_t>(r.grid_x), a.grid[1] = static_cast<uint32_t>(r.grid_y);
    a.grid[2] = static_cast<uint32_t>(r.grid_z);
    a.block[0] = static_cast<uint32_t>(r.block_x), a.block[1] = static_cast<uint32_t>(r.block_y);
    a.block[2] = static_cast<uint32_t>(r.block_z);
    a.registers_per_thread = r.registers_per_thread;
    a.static_shared_bytes = static_cast<uint32_t>(r.static_shared_memory);
    a.dynamic_shared_bytes = static_cast<uint32_t>(r.dynamic_shared_memory);
    if (r.launch_host_ns == 0) {
      ++stats_.trace_kernels_without_launch;
    } else {
      a.launch_start_ns = static_cast<int64_t>(r.launch_host_ns) + unix_offset_ns;
      a.launch_duration_ns = r.launch_duration_ns;
      a.launch_tid = r.launch_tid;
      a.launch_api = LaunchApiOf(r.launch_kind, r.launch_flags);
    }
    Trace(std::move(a));
  }
}

void GpuTimeCollector::OnMemops(Connection& c, const std::vector<ws_cuda_memop>& memops, int64_t now_ns,
                                int64_t unix_offset_ns) {
  for (const ws_cuda_memop& m : memops) {
    if (m.end_ns > m.start_ns) {
      const uint16_t memop = static_cast<uint16_t>(m.op << 8 | m.kind);
      waits_.AddSpan(c.id, {static_cast<int64_t>(m.start_ns), static_cast<int64_t>(m.end_ns), m.stream_id, m.context_id,
                            GpuChild{0, memop}},
                     now_ns);
    }
    const std::optional<int64_t> start = c.clock.ToHostMonotonic(m.start_ns);
    const std::optional<int64_t> end = c.clock.ToHostMonotonic(m.end_ns);
    if (!start || !end) continue;
    AnalyzedActivity analyzed;
    analyzed.start_ns = *start;
    analyzed.end_ns = std::max(*start, *end);
    analyzed.device = m.device_id;
    analyzed.category = GpuWorkCategory::kMemory;
    analyzed.memcpy = m.op == WS_CUDA_MEMOP_MEMCPY;
    analyzed.copy_kind = m.kind;
    analyzed.memory = CopyMemoryOf(m.src_kind, m.dst_kind);
    analyzed.bytes = m.bytes;
    analyzer_.Add(c.id, std::move(analyzed));
    if (options_.trace_per_second == 0) continue;
    GpuActivityRecord a;
    a.pid = c.pid;
    a.start_ns = *start + unix_offset_ns;
    a.duration_ns = std::max<int64_t>(0, *end - *start);
    a.kind = m.op == WS_CUDA_MEMOP_MEMSET ? GpuActivityKind::kMemset : GpuActivityKind::kMemcpy;
    a.device = m.device_id;
    a.stream = m.stream_id;
    a.correlation_id = m.correlation_id;
    a.graph_id = m.graph_id;
    a.bytes = m.bytes;
    a.copy_kind = m.kind;
    Trace(std::move(a));
  }
}

void GpuTimeCollector::PassSettled(Connection& c, int64_t now_ns, bool ended) {
  if (c.windows == nullptr) return;
  settled_.clear();
  const int64_t unix_offset = ClockNanos(CLOCK_REALTIME) - ClockNanos(CLOCK_MONOTONIC);
  const size_t waiting = c.windows->waiting();
  c.windows->TakeSettled(now_ns, ended, unix_offset, &settled_);
  windowed_kernels_ -= std::min(windowed_kernels_, waiting - std::min(waiting, c.windows->waiting()));
  for (const KernelExecution& k : settled_) joiner_.AddKernel(k, now_ns);
}

void GpuTimeCollector::OnEvent(CudaProcessEvent& event, int64_t now_ns, int64_t unix_offset_ns) {
  if (event.kind == CudaProcessEvent::Kind::kConnected) {
    OnConnected(event, now_ns);
    return;
  }
  auto it = connections_.find(event.connection_id);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  if (event.kind == CudaProcessEvent::Kind::kDisconnected) {
    // Its records already taken stay in the joiner; the clock goes with it.
    PassSettled(c, now_ns, /*ended=*/true);
    for (const ws_cuda_wait& wait : c.open_waits) PassWait(c, wait, 1.0, now_ns);
    c.open_waits.clear();
    waits_.EndConnection(c.id);
    analyzer_.End(c.id);
    cubins_->Release(c.id, now_ns);
    probes_->Disconnected(event.connection_id);
    const uint32_t pid = c.pid;
    ended_pids_.emplace_back(pid, now_ns);
    ended_libraries_.Add(c.stats_last);
    connections_.erase(it);
    bool connected = false;
    for (const auto& [id, other] : connections_) connected |= other.pid == pid;
    if (auto name = comms_.find(pid); name != comms_.end() && !connected) name->second.gone_ns = now_ns;
    return;
  }
  if (event.clock) c.clock.AddPair({event.clock->host_before_ns, event.clock->cupti_ns, event.clock->host_after_ns});
  if (!event.kernels.empty()) OnKernels(c, event.kernels, now_ns, unix_offset_ns);
  if (!event.memops.empty()) OnMemops(c, event.memops, now_ns, unix_offset_ns);
  if (!event.waits.empty()) OnWaits(c, event.waits, now_ns);
  for (const CudaPcSample& sample : event.pc_samples) {
    const int64_t unix_ns = now_ns + unix_offset_ns;
    pc_.Add(c.pid, sample, now_ns, unix_ns - unix_ns % kSecond);
    cubins_->NoteSampled(sample.record.cubin_crc, sample.function->text.system_name);
  }
  if (event.cubin) cubins_->Add(event.cubin->crc, event.cubin->bytes, c.id, c.uid);
  if (event.stats) {
    // Time aside for another CUPTI client (torch.profiler, Nsight) is time
    // this process's GPU work was not recorded: a per-process series says
    // when, so that the UI does not read it as an idle GPU.
    const uint64_t before = c.stats_last.cupti_aside_ns;
    if (event.stats->cupti_aside_ns > before && paused_readings_.size() >= kMaxPausedReadings) {
      stats_.paused_readings_dropped++;
    } else if (event.stats->cupti_aside_ns > before) {
      const int64_t unix_ns = now_ns + unix_offset_ns;
      auto comm = comms_.find(c.pid);
      MetricReading r;
      r.metric = "cuda_profiling_paused_seconds";
      r.unit = "seconds";
      r.labels = {{"comm", comm != comms_.end() ? comm->second.comm : std::string()},
                  {"pid", std::to_string(c.pid)},
                  {"reason", "cupti_client"}};
      r.value = static_cast<double>(event.stats->cupti_aside_ns - before) / 1e9;
      r.time_unix_nanos = unix_ns - unix_ns % kSecond;
      paused_readings_.push_back(std::move(r));
    }
    c.stats_last = *event.stats;
  }
  if (event.window && c.windows != nullptr) {
    const ws_cuda_window& w = *event.window;
    LOG_DEBUG() << "cuda window pid " << c.pid << ": recorded " << (w.on_end_ns - w.on_start_ns) / 1'000'000
                << " ms of " << (w.covers_until_ns - w.on_start_ns) / 1'000'000 << " ms, " << w.launches_seen
                << " launches, " << w.kernels_recorded << " kernels (" << w.kernels_before_window
                << " from before it left out), attach " << w.attach_ns / 1000 << " us, detach " << w.detach_ns / 1000
                << " us";
    c.windows->Close(w);
    analyzer_.CloseWindow(c.id, static_cast<int64_t>(w.on_start_ns), static_cast<int64_t>(w.on_end_ns),
                          static_cast<int64_t>(w.covers_until_ns));
    // The window's waits, weighted like its kernels: the time it stands for
    // over the time it recorded. Any of a later window stay.
    const double weight = w.on_end_ns > w.on_start_ns ? static_cast<double>(w.covers_until_ns - w.on_start_ns) /
                                                            static_cast<double>(w.on_end_ns - w.on_start_ns)
                                                      : 1.0;
    std::vector<ws_cuda_wait> later;
    for (const ws_cuda_wait& wait : c.open_waits) {
      const std::optional<int64_t> start = c.clock.ToHostMonotonic(wait.start_ns);
      if (start && *start > static_cast<int64_t>(w.on_end_ns)) {
        later.push_back(wait);
      } else {
        PassWait(c, wait, weight, now_ns);
      }
    }
    c.open_waits.swap(later);
    stats_.window_attach_ns_max = std::max(stats_.window_attach_ns_max, event.window->attach_ns);
    stats_.window_detach_ns_max = std::max(stats_.window_detach_ns_max, event.window->detach_ns);
    stats_.kernels_before_window += w.kernels_before_window;
  }
}

void GpuTimeCollector::OnWaits(Connection& c, const std::vector<ws_cuda_wait>& waits, int64_t now_ns) {
  for (const ws_cuda_wait& w : waits) {
    if (c.windows == nullptr) {
      PassWait(c, w, 1.0, now_ns);
    } else if (c.open_waits.size() >= options_.join.max_pending_kernels) {
      ++stats_.waits_window_overflow;
      PassWait(c, w, 1.0, now_ns);
    } else {
      c.open_waits.push_back(w);
    }
  }
}

void GpuTimeCollector::PassWait(Connection& c, const ws_cuda_wait& w, double weight, int64_t now_ns) {
  // Counted in the second it started in.
  const std::optional<int64_t> start = c.clock.ToHostMonotonic(w.start_ns);
  const int64_t unix_start = (start ? *start : now_ns) + ClockNanos(CLOCK_REALTIME) - ClockNanos(CLOCK_MONOTONIC);
  waits_.AddWait(c.id, c.pid, w, unix_start - unix_start % kSecond, weight, now_ns);
}

void GpuTimeCollector::OnBackwardEntry(const ws_uprobe_stack_event& e, int64_t now_ns) {
  const int64_t time = static_cast<int64_t>(e.time_ns);
  const uint64_t key = e.stack.len > 0 ? stacks_.Intern(e.pid, e.stack, now_ns) : 0;
  const LaunchStack* stack = key != 0 ? stacks_.Find(key) : nullptr;
  if (stack == nullptr) {
    autograd_.Enter(e.pid, e.tid, time, 0, {});
    return;
  }
  if (stack->autograd.worker) {
    // A reentrant backward on an autograd thread: its stack shows the
    // nodes it runs already, and it is nobody's caller.
    ++autograd_.stats().calls_on_workers;
    return;
  }
  autograd_.Enter(e.pid, e.tid, time, key, stack->frames);
}

uint64_t GpuTimeCollector::GraftAutograd(const ws_uprobe_stack_event& e, uint64_t key, int64_t now_ns) {
  const LaunchStack* stack = stacks_.Find(key);
  if (stack == nullptr || !stack->autograd.worker) return key;
  const AutogradMatch match = autograd_.Match(e.pid, e.tid, static_cast<int64_t>(e.time_ns));
  AutogradStats& stats = autograd_.stats();
  if (match.call == nullptr) {
    ++stats.unmatched;
    return key;
  }
  const uint64_t grafted = stacks_.InternGraft(key, *match.call, now_ns);
  if (grafted == 0) return key;  // table full (counted there): the worker's own stack
  ++stats.grafted;
  if (match.ambiguous) ++stats.ambiguous;
  return grafted;
}

void GpuTimeCollector::OnLaunchStack(const ws_uprobe_stack_event& e, int64_t now_ns) {
  if (e.role == WS_UPROBE_ROLE_AUTOGRAD_ENTRY || e.role == WS_UPROBE_ROLE_AUTOGRAD_RETURN) {
    // The probe serves every process mapping the file; only connected ones
    // launch kernels (calls of others would be kept for nothing).
    const bool connected = std::any_of(connections_.begin(), connections_.end(),
                                       [&](const auto& entry) { return entry.second.pid == e.pid; });
    if (!connected) return;
    if (e.role == WS_UPROBE_ROLE_AUTOGRAD_ENTRY) {
      OnBackwardEntry(e, now_ns);
    } else {
      autograd_.Return(e.pid, e.tid, static_cast<int64_t>(e.time_ns));
    }
    return;
  }
  if (e.role != WS_UPROBE_ROLE_STACK) return;
  uint64_t key = stacks_.Intern(e.pid, e.stack, now_ns);
  if (key == 0) return;  // table full: the launch (or wait) counts as unsampled
  key = GraftAutograd(e, key, now_ns);
  auto [name, inserted] = thread_names_.try_emplace({e.pid, e.tid});
  if (inserted) {
    StatusOr<std::string> thread = parts_.procfs.ReadThreadComm(e.pid, e.tid);
    if (thread.ok()) name->second = *thread;
    if (thread_names_.size() > 100'000) thread_names_.clear();  // bounded; names are re-read
  }
  if (e.args[1] & WS_CUDA_PROBE_WAIT) {
    waits_.AddStack(e.pid, e.tid, e.args[0], key, now_ns);
    return;
  }
  joiner_.AddLaunch(SampledLaunch{e.pid, e.tid, e.args[0], key}, now_ns);
}

void GpuTimeCollector::Poll() {
  const int64_t now = ClockNanos(CLOCK_MONOTONIC);
  const int64_t unix_offset = ClockNanos(CLOCK_REALTIME) - now;
  // Stacks first: a launch's stack then usually meets its kernel record.
  (void)probe_->Consume([&](const ws_uprobe_stack_event& e) { OnLaunchStack(e, now); });
  inbox_->Take(&events_, &stats_.inbox_dropped_records);
  for (CudaProcessEvent& event : events_) OnEvent(event, now, unix_offset);
  events_.clear();
  for (auto& [id, c] : connections_) PassSettled(c, now, /*ended=*/false);
  probes_->Poll();
  CopyProbeStats();
}

SampleLabels GpuTimeCollector::ThreadLabels(uint32_t pid, uint32_t tid) const {
  SampleLabels labels;
  labels.pid = pid;
  labels.tid = tid;
  if (auto it = comms_.find(pid); it != comms_.end()) labels.comm = it->second.comm;
  if (auto it = thread_names_.find({pid, tid}); it != thread_names_.end()) labels.thread_name = it->second;
  return labels;
}

const std::vector<uint64_t>& GpuTimeCollector::StackLocations(uint64_t stack_key, ProfileBuilder* builder) {
  auto [it, inserted] = stack_locations_.try_emplace(stack_key);
  if (!inserted) return it->second;
  const LaunchStack* stack = stack_key != 0 ? stacks_.Find(stack_key) : nullptr;
  if (stack == nullptr) {
    if (stack_key != 0) ++stats_.launch_stacks_expired;
    const char* label = stack_key == 0 ? "[launch not sampled]" : "[launch stack expired]";
    const uint64_t fn = builder->InternFunction(label, label);
    it->second.push_back(builder->InternFunctionLocation(0, 0, FrameKind::kNative, fn));
    return it->second;
  }
  for (const CapturedFrame& f : stack->frames) {
    if (f.synthetic) {
      const SymbolizedFunction& fn = f.frame.functions.front();
      const uint64_t id = builder->InternFunction(fn.name, fn.system_name);
      it->second.push_back(builder->InternFunctionLocation(0, 0, FrameKind::kNative, id));
    } else if (f.kind == FrameKind::kPython) {
      const SymbolizedFunction& fn = f.frame.functions.front();
      const uint64_t id = builder->InternFunction(fn.name, fn.system_name, fn.filename);
      it->second.push_back(builder->InternSourceLocation(id, fn.line, FrameKind::kPython));
    } else {
      it->second.push_back(InternSymbolizedFrame(builder, f.frame, FrameKind::kNative));
    }
  }
  return it->second;
}

void GpuTimeCollector::FinishWindow(ProfileBuilder* builder, GpuTrace* trace, bool final, ProfileBuilder* pc_builder) {
  Poll();
  const int64_t now = ClockNanos(CLOCK_MONOTONIC);
  // The agent is stopping: windows still waiting count up to now.
  if (final) {
    for (auto& [id, c] : connections_) PassSettled(c, now, /*ended=*/true);
  }
  stack_locations_.clear();
  std::vector<uint64_t> locations;
  for (const GpuTimeSample& s : joiner_.Drain(now, final)) {
    if (s.gpu_ns <= 0) continue;
    const std::shared_ptr<const KernelName> kernel = KernelNameOf(s.kernel_key);
    const uint64_t fn = builder->InternFunction(kernel->name, kernel->system_name);
    locations.clear();
    locations.push_back(builder->InternSourceLocation(fn, 0, FrameKind::kCudaKernel));
    const std::vector<uint64_t>& stack = StackLocations(s.stack_key, builder);
    locations.insert(locations.end(), stack.begin(), stack.end());
    SampleLabels labels = ThreadLabels(s.pid, s.tid);
    labels.extra.emplace_back("device", std::to_string(s.device));
    if (s.scaled) labels.extra.emplace_back("estimate", "scaled");
    if (s.graph_id != 0) labels.extra.emplace_back("graph_id", std::to_string(s.graph_id));
    labels.extra.emplace_back("stream", std::to_string(s.stream));
    builder->SetSampleTime(s.bucket);
    builder->AddSample(locations, s.gpu_ns, labels);
    pc_.AddGpuTime(s.pid, kernel->system_name, s.stack_key, s.tid, s.gpu_ns);
  }
  builder->SetSampleTime(0);
  if (pc_builder != nullptr) {
    GpuPcAggregator::Context context;
    context.stack = [&](uint64_t key) -> const std::vector<uint64_t>& { return StackLocations(key, pc_builder); };
    context.labels = [&](uint32_t pid, uint32_t tid) { return ThreadLabels(pid, tid); };
    context.cubins = cubins_.get();
    const uint32_t period = options_.socket.config.pc_sampling_period_log2;
    context.period_log2 = period != 0 ? period : 20;
    context.now_ns = now;
    context.delay_ns = options_.join.grace_ns + kSecond;
    context.final = final;
    // Stack locations are per builder: the gpu_time builder's are done with.
    stack_locations_.clear();
    pc_.Finish(context, pc_builder);
    // An ended process's splits go once its last samples are out.
    std::erase_if(ended_pids_, [&](const std::pair<uint32_t, int64_t>& e) {
      if (!final && now - e.second <= context.delay_ns) return false;
      pc_.ForgetProcess(e.first);
      return true;
    });
  }
  PruneNameKeys();
  stacks_.Expire(now, options_.join.launch_ttl_ns + 2 * options_.join.grace_ns);
  autograd_.Expire(now);
  stats_.scaled_processes = 0;
  stats_.recording_windows = 0;
  stats_.recorded_share_ppm = 1'000'000;
  stats_.estimate_error_ppm = 0;
  for (const auto& [id, c] : connections_) {
    if (c.windows == nullptr) continue;
    const RecordingEstimate e = c.windows->estimate();
    stats_.recording_windows += e.windows;
    if (e.recorded_share < 1) ++stats_.scaled_processes;
    stats_.recorded_share_ppm = std::min<uint64_t>(stats_.recorded_share_ppm, std::llround(e.recorded_share * 1e6));
    stats_.estimate_error_ppm = std::max<uint64_t>(stats_.estimate_error_ppm, std::llround(e.relative_error * 1e6));
  }

  for (const auto& [key, cov] : coverage_) {
    const int64_t second_end = key.second + kSecond;
    trace_.coverage.push_back(
        {key.first, key.second, cov.recorded, cov.sent, cov.complete_until != 0 ? cov.complete_until : second_end});
  }
  coverage_.clear();
  // Every activity kept has a coverage row for its (pid, second): their pids are all the trace's.
  for (const GpuTraceCoverageRow& r : trace_.coverage) {
    if (auto it = comms_.find(r.pid); it != comms_.end()) trace_.comms.emplace(r.pid, it->second.comm);
  }
  *trace = std::move(trace_);
  trace_ = GpuTrace();
  // Processes refused a probe for the bound get one once room was made.
  probes_->RetryRefused();
  // A process's name is kept while its kernels may still be joined (the
  // stacks' horizon), then forgotten: bounded by the connections of a minute.
  const int64_t horizon = options_.join.launch_ttl_ns + 2 * options_.join.grace_ns;
  for (auto it = comms_.begin(); it != comms_.end();) {
    const bool gone = it->second.gone_ns != 0 && now - it->second.gone_ns > horizon;
    if (gone) autograd_.ForgetProcess(it->first);
    it = gone ? comms_.erase(it) : std::next(it);
  }
}

namespace {

// The CUDA call of a wait, as the API's name.
const char* WaitApiName(uint16_t api) {
  switch (api) {
    case WS_CUDA_WAIT_DEVICE_SYNCHRONIZE: return "cudaDeviceSynchronize";
    case WS_CUDA_WAIT_STREAM_SYNCHRONIZE: return "cudaStreamSynchronize";
    case WS_CUDA_WAIT_EVENT_SYNCHRONIZE: return "cudaEventSynchronize";
    case WS_CUDA_WAIT_MEMCPY: return "cudaMemcpy";
    case WS_CUDA_WAIT_FREE: return "cudaFree";
    case WS_CUDA_WAIT_MALLOC: return "cudaMalloc";
    case WS_CUDA_WAIT_CU_CTX_SYNCHRONIZE: return "cuCtxSynchronize";
    case WS_CUDA_WAIT_CU_STREAM_SYNCHRONIZE: return "cuStreamSynchronize";
    case WS_CUDA_WAIT_CU_EVENT_SYNCHRONIZE: return "cuEventSynchronize";
    case WS_CUDA_WAIT_CU_MEMCPY: return "cuMemcpy";
    case WS_CUDA_WAIT_CU_MEM_FREE: return "cuMemFree";
    case WS_CUDA_WAIT_CU_MEM_ALLOC: return "cuMemAlloc";
    default: return "[unknown CUDA call]";
  }
}

// A memory operation the GPU ran during a wait (GpuChild::memop), as a frame name.
std::string MemopFrameName(uint16_t memop) {
  if ((memop >> 8) == WS_CUDA_MEMOP_MEMSET) return "[memset]";
  static const char* const kCopy[] = {"",     "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  const unsigned kind = memop & 0xff;
  return std::string("[memcpy ") + (kind < std::size(kCopy) && kind > 0 ? kCopy[kind] : "?") + "]";
}

}  // namespace

void GpuTimeCollector::FinishWaits(ProfileBuilder* builder, bool final) {
  const int64_t now = ClockNanos(CLOCK_MONOTONIC);
  stack_locations_.clear();
  std::vector<uint64_t> locations;
  for (const GpuWaitSample& s : waits_.Drain(now, final)) {
    if (s.wait_ns <= 0) continue;
    locations.clear();
    if (s.child.kernel_key != 0) {
      const std::shared_ptr<const KernelName> kernel = KernelNameOf(s.child.kernel_key);
      const uint64_t fn = builder->InternFunction(kernel->name, kernel->system_name);
      locations.push_back(builder->InternSourceLocation(fn, 0, FrameKind::kCudaKernel));
    } else if (s.child.memop != 0) {
      const std::string name = MemopFrameName(s.child.memop);
      const uint64_t fn = builder->InternFunction(name, name);
      locations.push_back(builder->InternSourceLocation(fn, 0, FrameKind::kCudaKernel));
    }
    const char* api = WaitApiName(s.api);
    if (s.stack_key == 0) {
      // No sampled wait of this call in the process: the call's name under a placeholder.
      const uint64_t call = builder->InternFunction(api, api);
      locations.push_back(builder->InternFunctionLocation(0, 0, FrameKind::kNative, call));
      const uint64_t fn = builder->InternFunction("[wait not sampled]", "[wait not sampled]");
      locations.push_back(builder->InternFunctionLocation(0, 0, FrameKind::kNative, fn));
    } else {
      const std::vector<uint64_t>& stack = StackLocations(s.stack_key, builder);
      locations.insert(locations.end(), stack.begin(), stack.end());
    }
    SampleLabels labels = ThreadLabels(s.pid, s.tid);
    if (s.scaled) labels.extra.emplace_back("estimate", "scaled");
    labels.extra.emplace_back("wait_api", api);
    builder->SetSampleTime(s.bucket);
    builder->AddSample(locations, s.wait_ns, labels);
  }
  builder->SetSampleTime(0);
}

Status GpuTimeCollector::FinishWindow(Window* window) {
  ProfileBuilder builder(0, 0, 0);
  ProfileBuilder pc(0, 0, 0);
  FinishWindow(&builder, &window->gpu_trace, window->final, &pc);
  ProfileBuilder waits(0, 0, 0);
  FinishWaits(&waits, window->final);
  const int64_t now = ClockNanos(CLOCK_MONOTONIC);
  analyzer_.Finish(
      now, ClockNanos(CLOCK_REALTIME) - now, window->final,
      [this](uint32_t pid) {
        auto it = comms_.find(pid);
        return it != comms_.end() ? it->second.comm : std::string();
      },
      &window->metrics);
  for (MetricReading& r : paused_readings_) window->metrics.push_back(std::move(r));
  paused_readings_.clear();
  AddCounters(&window->counters);
  window->gpu_time = builder.Finish(0);
  window->gpu_time->sample_types = {{kGpuTimeTypeName, kGpuTimeUnit}};
  window->gpu_wait = waits.Finish(0);
  window->gpu_wait->sample_types = {{kGpuWaitTypeName, kGpuTimeUnit}};
  window->gpu_pc = pc.Finish(0);
  window->gpu_pc->sample_types = {{kGpuPcTypeName, kGpuPcUnit}};
  window->cubins = cubins_->TakeAdded();
  cubins_->EndWindow(ClockNanos(CLOCK_MONOTONIC));
  return Status::Ok();
}

void GpuTimeCollector::Stop() {
  server_.reset();  // stops the socket thread; Poll is not called again
}

void GpuTimeCollector::AddCounters(std::vector<ProfileCounter>* counters) const {
  const LaunchJoinerStats& j = joiner_.stats();
  SetCounter(counters, "gpu_kernels", j.kernels);
  SetCounter(counters, "gpu_kernels_sampled", j.kernels_sampled);
  SetCounter(counters, "gpu_kernels_spread", j.kernels_spread);
  SetCounter(counters, "gpu_kernels_placeholder", j.kernels_placeholder);
  SetCounter(counters, "gpu_kernels_dropped", j.kernels_dropped + stats_.inbox_dropped_records);
  SetCounter(counters, "gpu_kernels_bad_duration", j.bad_durations);
  SetCounter(counters, "gpu_kernels_duplicate_correlation", j.kernels_duplicate_correlation);
  SetCounter(counters, "gpu_kernels_without_clock", stats_.kernels_without_clock);
  SetCounter(counters, "gpu_launch_stacks", j.launches);
  SetCounter(counters, "gpu_launch_stacks_dropped", j.launches_dropped + stacks_.stats().full);
  SetCounter(counters, "gpu_launch_stacks_expired", stats_.launch_stacks_expired);
  SetCounter(counters, "gpu_launch_stacks_distinct", stacks_.stats().symbolized);
  SetCounter(counters, "cache_bytes_launch_stacks", stacks_.stats().bytes);
  SetCounter(counters, "cache_budget_bytes_launch_stacks", stacks_.max_bytes());
  SetCounter(counters, "cache_evictions_launch_stacks", stacks_.stats().evicted + stacks_.stats().full);
  SetCounter(counters, "gpu_trace_activities", stats_.trace_activities);
  SetCounter(counters, "gpu_trace_thinned", stats_.trace_thinned);
  SetCounter(counters, "gpu_trace_kernels_without_launch", stats_.trace_kernels_without_launch);
  SetCounter(counters, "gpu_probe_files_attached", stats_.probe_files_attached);
  SetCounter(counters, "gpu_probe_files_detached", stats_.probe_files_detached);
  SetCounter(counters, "gpu_probe_files_refused", stats_.probe_files_refused);
  SetCounter(counters, "gpu_probe_attach_failures", stats_.probe_attach_failures);
  SetCounter(counters, "gpu_probe_files_unsafe", stats_.probe_files_unsafe);
  SetCounter(counters, "gpu_probe_attach_timeouts", stats_.probe_attach_timeouts);
  SetCounter(counters, "gpu_probe_attaches_dropped", stats_.probe_attaches_dropped);
  SetCounter(counters, "gpu_scaled_processes", stats_.scaled_processes);
  SetCounter(counters, "gpu_recording_windows", stats_.recording_windows);
  SetCounter(counters, "gpu_kernels_window_overflow", stats_.window_overflow);
  SetCounter(counters, "gpu_recorded_share_ppm", stats_.recorded_share_ppm);
  SetCounter(counters, "gpu_estimate_error_ppm", stats_.estimate_error_ppm);
  SetCounter(counters, "gpu_window_attach_ns_max", stats_.window_attach_ns_max);
  SetCounter(counters, "gpu_window_detach_ns_max", stats_.window_detach_ns_max);
  SetCounter(counters, "gpu_kernels_before_window", stats_.kernels_before_window);
  const UprobeStackStats u = probe_->ReadStats();
  SetCounter(counters, "gpu_probe_hits", u.values[WS_UPROBE_HITS]);
  SetCounter(counters, "gpu_probe_ring_dropped", u.values[WS_UPROBE_DROPPED]);
  SetCounter(counters, "gpu_probe_not_described", u.values[WS_UPROBE_NOT_DESCRIBED]);
  SetCounter(counters, "gpu_probe_returns", u.values[WS_UPROBE_RETURNS]);
  SetCounter(counters, "gpu_probe_walk_not_called", u.values[WS_UPROBE_NO_WALK]);
  const AutogradStats& ag = autograd_.stats();
  SetCounter(counters, "gpu_autograd_calls", ag.calls);
  SetCounter(counters, "gpu_autograd_calls_on_workers", ag.calls_on_workers);
  SetCounter(counters, "gpu_autograd_calls_without_stack", ag.calls_without_stack);
  SetCounter(counters, "gpu_autograd_calls_dropped", ag.calls_dropped);
  SetCounter(counters, "gpu_autograd_returns_lost", ag.returns_lost);
  SetCounter(counters, "gpu_autograd_grafted", ag.grafted);
  SetCounter(counters, "gpu_autograd_ambiguous", ag.ambiguous);
  SetCounter(counters, "gpu_autograd_unmatched", ag.unmatched);
  SetCounter(counters, "gpu_autograd_probe_files_attached", stats_.autograd_probe_files_attached);
  SetCounter(counters, "gpu_autograd_probe_failures", stats_.autograd_probe_failures);
  const CudaSocketServerCounters sc = server_->counters();
  SetCounter(counters, "cuda_connections_accepted", sc.connections_accepted);
  SetCounter(counters, "cuda_connections_open", sc.connections_open);
  SetCounter(counters, "cuda_connections_refused", sc.connections_refused);
  SetCounter(counters, "cuda_connections_refused_per_uid", sc.connections_refused_per_uid);
  SetCounter(counters, "cuda_connections_refused_rate", sc.connections_refused_rate);
  SetCounter(counters, "cuda_protocol_errors", sc.protocol_errors);
  SetCounter(counters, "cuda_connections_over_name_budget", sc.closed_over_name_budget);
  // Records out of the socket's bounds (cuda_record_bounds.h), dropped one by one.
  SetCounter(counters, "cuda_records_rejected_kernels", sc.rejected.kernels);
  SetCounter(counters, "cuda_records_rejected_memops", sc.rejected.memops);
  SetCounter(counters, "cuda_records_rejected_waits", sc.rejected.waits);
  SetCounter(counters, "cuda_records_rejected_launches", sc.rejected.launches);
  SetCounter(counters, "cuda_records_rejected_pc_samples", sc.rejected.pc_samples);
  SetCounter(counters, "cuda_records_rejected_clock_pairs", sc.rejected.clock_pairs);
  SetCounter(counters, "cuda_records_rejected_windows", sc.rejected.windows);
  const KernelNameTableStats names = kernel_names_->stats();
  SetCounter(counters, "cuda_kernel_name_bytes", names.bytes);
  SetCounter(counters, "cuda_kernel_name_budget_bytes", names.budget_bytes);
  SetCounter(counters, "cuda_kernel_names", names.names);
  SetCounter(counters, "cuda_kernel_names_refused", names.refused);
  SetCounter(counters, "cuda_kernel_names_evicted", names.evicted);
  SetCounter(counters, "cache_bytes_kernel_names", names.bytes);
  SetCounter(counters, "cache_budget_bytes_kernel_names", names.budget_bytes);
  SetCounter(counters, "cache_evictions_kernel_names", names.evicted);
  SetCounter(counters, "gpu_kernel_names_lost", stats_.kernel_names_lost);
  // The libraries' counters: those of ended connections, plus the latest
  // STATS of each open one.
  LibraryTotals lib = ended_libraries_;
  for (const auto& [id, c] : connections_) lib.Add(c.stats_last);
  SetCounter(counters, "cuda_lib_cupti_dropped_records", lib.cupti_dropped_records);
  SetCounter(counters, "cuda_lib_buffers_denied", lib.buffers_denied);
  SetCounter(counters, "cuda_lib_wire_records_dropped", lib.wire_records_dropped);
  SetCounter(counters, "cuda_lib_launch_records_dropped", lib.launch_records_dropped);
  SetCounter(counters, "cuda_lib_waits", lib.waits_seen);
  SetCounter(counters, "cuda_lib_waits_sampled", lib.waits_sampled);
  SetCounter(counters, "cuda_lib_wait_records_dropped", lib.wait_records_dropped);
  const GpuWaitStats& w = waits_.stats();
  SetCounter(counters, "gpu_waits", w.waits);
  SetCounter(counters, "gpu_waits_sampled", w.waits_sampled);
  SetCounter(counters, "gpu_waits_spread", w.waits_spread);
  SetCounter(counters, "gpu_waits_placeholder", w.waits_placeholder);
  SetCounter(counters, "gpu_waits_stack_missing", w.waits_stack_missing);
  SetCounter(counters, "gpu_waits_dropped", w.waits_dropped);
  SetCounter(counters, "gpu_wait_stacks_dropped", w.stacks_dropped);
  SetCounter(counters, "gpu_wait_spans_dropped", w.spans_dropped);
  SetCounter(counters, "gpu_waits_window_overflow", stats_.waits_window_overflow);
  SetCounter(counters, "gpu_wait_ns", w.wait_ns);
  const ActivityAnalysisStats& a = analyzer_.stats();
  SetCounter(counters, "gpu_analysis_activities", a.activities);
  SetCounter(counters, "gpu_analysis_dropped", a.dropped);
  SetCounter(counters, "gpu_analysis_late", a.late);
  SetCounter(counters, "gpu_analysis_sequences_dropped", a.sequences_dropped);
  SetCounter(counters, "gpu_analysis_readings", a.readings);
  SetCounter(counters, "gpu_analysis_spans_capped", a.spans_capped);
  SetCounter(counters, "gpu_analysis_capped_ns", a.capped_ns);
  SetCounter(counters, "gpu_analysis_spans_dropped", a.spans_dropped);
  SetCounter(counters, "gpu_analysis_seconds_dropped", a.seconds_dropped);
  SetCounter(counters, "gpu_wait_under_gpu_work_ns", w.overlap_ns);
  // PC sampling: the libraries', then the agent's.
  SetCounter(counters, "cuda_lib_pc_samples", lib.pc_samples);
  SetCounter(counters, "cuda_lib_pc_samples_total", lib.pc_samples_total);
  SetCounter(counters, "cuda_lib_pc_samples_dropped", lib.pc_samples_dropped);
  SetCounter(counters, "cuda_lib_pc_records_dropped", lib.pc_records_dropped);
  SetCounter(counters, "cuda_lib_pc_hardware_buffer_full", lib.pc_hardware_buffer_full);
  SetCounter(counters, "cuda_lib_cubins_dropped", lib.cubins_dropped);
  SetCounter(counters, "cuda_lib_pc_sampling_refused", lib.pc_refused);
  // The application's own CUPTI clients (torch.profiler, Nsight): how often
  // the libraries stepped aside for one, and for how long.
  SetCounter(counters, "cuda_lib_cupti_yields", lib.cupti_yields);
  SetCounter(counters, "cuda_lib_cupti_taken", lib.cupti_taken);
  SetCounter(counters, "cuda_lib_cupti_aside_ns", lib.cupti_aside_ns);
  SetCounter(counters, "cuda_lib_graph_launches", lib.graph_launches);
  uint64_t aside_now = 0, off_now = 0;
  for (const auto& [id, c] : connections_) {
    aside_now += c.stats_last.cupti_state == WS_CUDA_CUPTI_ASIDE;
    off_now += c.stats_last.cupti_state == WS_CUDA_CUPTI_OFF;
  }
  SetCounter(counters, "cuda_lib_processes_cupti_aside", aside_now);
  SetCounter(counters, "cuda_lib_processes_cupti_off", off_now);
  SetCounter(counters, "gpu_paused_readings_dropped", stats_.paused_readings_dropped);
  const GpuPcStats& p = pc_.stats();
  SetCounter(counters, "gpu_pc_samples", p.samples);
  SetCounter(counters, "gpu_pc_samples_unjoined", p.samples_unjoined);
  SetCounter(counters, "gpu_pc_samples_dropped", p.samples_dropped);
  SetCounter(counters, "gpu_pc_instructions_unknown", p.instructions_unknown);
  SetCounter(counters, "cache_bytes_gpu_pc_samples", pc_.keys() * GpuPcAggregator::kKeyBytes);
  SetCounter(counters, "cache_budget_bytes_gpu_pc_samples", pc_.max_keys() * GpuPcAggregator::kKeyBytes);
  SetCounter(counters, "cache_evictions_gpu_pc_samples", p.samples_dropped);
  const CubinLibraryStats cubins = cubins_->stats();
  SetCounter(counters, "gpu_cubins", cubins.cubins);
  SetCounter(counters, "gpu_cubin_bytes", cubins.bytes);
  SetCounter(counters, "gpu_cubins_refused", cubins.refused + sc.cubins_skipped);
  SetCounter(counters, "gpu_cubin_parse_failures", cubins.parse_failures);
  SetCounter(counters, "gpu_cubins_without_sass", cubins.without_sass);
  SetCounter(counters, "gpu_cubins_refused_per_uid", cubins.refused_per_uid);
  SetCounter(counters, "gpu_cubins_released", cubins.released);
  SetCounter(counters, "gpu_cubins_not_uploaded", cubins.not_uploaded);
  SetCounter(counters, "cache_bytes_cubins", cubins.memory_bytes);
  SetCounter(counters, "gpu_cubin_spilled_bytes", cubins.bytes - cubins.memory_bytes);
  SetCounter(counters, "cache_bytes_cubin_tables", cubins.parsed_bytes);
  SetCounter(counters, "cache_budget_bytes_cubin_tables", cubins_->max_parsed_bytes());
  SetCounter(counters, "cache_evictions_cubin_tables", cubins.parsed_evicted);
  SetCounter(counters, "cache_budget_bytes_cubins", options_.max_cubin_bytes);
  SetCounter(counters, "cache_evictions_cubins", cubins.refused + cubins.refused_per_uid);
}

}  // namespace warpscope::gpu
