#include "agent/collectors/cpu/cpu_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#include "agent/collectors/per_cpu_counters.h"
#include "agent/unwind/unwind_bpf_maps.h"
#include "base/cpu_list.h"
#include "base/logging.h"
#include "agent/unwind/bpf_features.h"
#include "cpu_sampler.skel.h"

namespace warpscope {
namespace {

// How long user space waits after a flip for programs that read the old
// buffer index to finish. A perf_event program runs for microseconds with
// preemption off, so this is generous.
constexpr std::chrono::milliseconds kFlipGrace{5};

std::string CString(const char* s, size_t max) { return std::string(s, strnlen(s, max)); }

int OpenCpuClock(uint32_t cpu, uint64_t period_ns) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = period_ns;  // cpu-clock counts nanoseconds: an exact rate
  attr.freq = 0;
  return static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, static_cast<int>(cpu), -1, PERF_FLAG_FD_CLOEXEC));
}

// Reads every (key, value) of a hash map into `keys` and `values` (room for
// max_entries each) and deletes them, in batches; returns how many.
template <typename K, typename V>
StatusOr<uint32_t> DrainHashMap(int fd, uint32_t max_entries, K* keys, V* values) {
  uint32_t done = 0;
  uint64_t in_batch = 0, out_batch = 0;
  bool first = true;
  // The map never holds more than max_entries, so the room left always fits
  // what is left (and so every bucket).
  while (done < max_entries) {
    __u32 count = max_entries - done;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    int err = bpf_map_lookup_and_delete_batch(fd, first ? nullptr : &in_batch, &out_batch, keys + done,
                                              values + done, &count, &opts);
    const int e = err ? errno : 0;
    if (err && e != ENOENT) return ErrnoError(e, "draining BPF map");
    done += count;
    if (e == ENOENT) break;
    in_batch = out_batch;
    first = false;
  }
  return done;
}

int HandleProcEvent(void* ctx, void* data, size_t size) {
  if (size < sizeof(ws_proc_event)) return 0;
  auto* on_event = static_cast<std::function<void(const ws_proc_event&)>*>(ctx);
  if (*on_event) (*on_event)(*static_cast<const ws_proc_event*>(data));
  return 0;
}

}  // namespace

const char* CpuSamplerStatName(ws_cpu_sampler_stat stat) {
  switch (stat) {
    case WS_STAT_SAMPLES: return "bpf_samples";
    case WS_STAT_IDLE: return "bpf_idle_samples";
    case WS_STAT_FILTERED: return "bpf_filtered_samples";
    case WS_STAT_RECORDED: return "bpf_recorded_samples";
    case WS_STAT_DROP_COUNTS_FULL: return "drop_counts_map_full";
    case WS_STAT_DROP_STACKS_FULL: return "drop_stacks_map_full";
    case WS_STAT_USER_STACK_ERROR: return "user_stack_errors";
    case WS_STAT_KERNEL_STACK_ERROR: return "kernel_stack_errors";
    case WS_STAT_USER_TRUNCATED: return "user_stacks_truncated";
    case WS_STAT_DROP_PROC_EVENTS: return "drop_process_events";
    case WS_STAT_NEW_PROCESSES: return "processes_seen";
    case WS_STAT_OFFCPU_SWITCHES: return "off_cpu_blocking_switches";
    case WS_STAT_OFFCPU_TIMED: return "off_cpu_waits_chosen";
    case WS_STAT_OFFCPU_RATE_LIMITED: return "off_cpu_waits_rate_limited";
    case WS_STAT_OFFCPU_PENDING_FULL: return "off_cpu_waits_pending_map_full";
    case WS_STAT_OFFCPU_SHORT: return "off_cpu_waits_below_minimum";
    case WS_STAT_OFFCPU_RECORDED: return "off_cpu_waits_recorded";
    case WS_STAT_OFFCPU_DROP_COUNTS_FULL: return "off_cpu_drop_counts_map_full";
    case WS_STAT_OFFCPU_NOT_SYSCALL: return "off_cpu_waits_outside_syscalls";
    case WS_STAT_UNWIND_NO_WALK: return "unwind_walk_not_called";
    case WS_STAT_MAX: break;
  }
  return "unknown";
}

CpuSampler::CpuSampler(const CpuSamplerOptions& options) : options_(options) {}

CpuSampler::~CpuSampler() {
  Stop();
  ring_buffer__free(proc_events_);
  cpu_sampler_bpf__destroy(skel_);
}

StatusOr<std::unique_ptr<CpuSampler>> CpuSampler::Create(const CpuSamplerOptions& options) {
  if (options.frequency_hz == 0 || options.frequency_hz > 10000) {
    return InvalidArgumentError("frequency must be between 1 and 10000 Hz, got " +
                                std::to_string(options.frequency_hz));
  }
  if (options.off_cpu.enabled && (options.off_cpu.target_per_cpu == 0 || options.off_cpu.max_per_cpu == 0)) {
    return InvalidArgumentError("off-CPU time needs a target and a bound of at least one wait per CPU per second");
  }
  ASSIGN_OR_RETURN(std::vector<uint32_t> cpus, OnlineCpus());
  std::unique_ptr<CpuSampler> sampler(new CpuSampler(options));
  sampler->sizes_ = ComputeCpuSamplerMapSizes(options.frequency_hz, static_cast<uint32_t>(cpus.size()),
                                              options.drain_interval, static_cast<uint32_t>(options.pids.size()),
                                              options.off_cpu.enabled ? options.off_cpu.target_per_cpu : 0);
  const CpuSamplerMapSizes& sizes = sampler->sizes_;

  cpu_sampler_bpf* skel = cpu_sampler_bpf__open();
  if (!skel) return ErrnoError(errno, "opening the cpu_sampler BPF object");
  sampler->skel_ = skel;
  skel->rodata->filter_pids = !options.pids.empty();
  skel->rodata->python_frames = options.python_frames;
  for (bpf_map* map : {skel->maps.counts_0, skel->maps.counts_1}) bpf_map__set_max_entries(map, sizes.counts_entries);
  for (bpf_map* map : {skel->maps.stacks_0, skel->maps.stacks_1}) bpf_map__set_max_entries(map, sizes.stacks_entries);
  const OffCpuOptions& off = options.off_cpu;
  skel->rodata->off_cpu = off.enabled;
  skel->rodata->off_cpu_min_ns = static_cast<uint64_t>(std::max<int64_t>(0, off.min_wait.count()));
  // Per 2^27 ns bucket (ws_sched_switch), at least one.
  skel->rodata->off_cpu_max_per_bucket =
      static_cast<uint32_t>(std::max<uint64_t>(1, (uint64_t{off.max_per_cpu} << 27) / 1'000'000'000ull));
  for (bpf_map* map : {skel->maps.off_cpu_counts_0, skel->maps.off_cpu_counts_1}) {
    bpf_map__set_max_entries(map, off.enabled ? sizes.off_cpu_counts_entries : 1);
  }
  bpf_map__set_max_entries(skel->maps.off_cpu_pending, off.enabled ? std::max<uint32_t>(1, off.pending_entries) : 1);
  bpf_program__set_autoload(skel->progs.ws_sched_switch, off.enabled);
  bpf_program__set_autoload(skel->progs.ws_off_cpu_end, off.enabled);
  // The unwinder's walk programs of the chosen driver (bpf_features.h), and
  // what the begin parts may call.
  SelectWalkProgram(skel->progs.ws_cpu_sample_walk_loop, skel->progs.ws_cpu_sample_walk_tail);
  if (off.enabled) {
    SelectWalkProgram(skel->progs.ws_off_cpu_walk_loop, skel->progs.ws_off_cpu_walk_tail);
  } else {
    bpf_program__set_autoload(skel->progs.ws_off_cpu_walk_loop, false);
    bpf_program__set_autoload(skel->progs.ws_off_cpu_walk_tail, false);
  }
  const BpfFeatures& features = ActiveUnwinderDriver().features;
  skel->rodata->have_task_pt_regs = features.task_pt_regs && features.current_task_btf;
  bpf_map__set_max_entries(skel->maps.seen_pids, sizes.seen_pids_entries);
  bpf_map__set_max_entries(skel->maps.target_pids, sizes.target_pids_entries);
  UnwindMapsOf(skel).SetSizes(options.unwind_maps);

  if (int err = cpu_sampler_bpf__load(skel); err) {
    const int e = -err;
    if (e == EPERM || e == EACCES) {
      return PermissionDeniedError("the kernel refused to load the BPF program (" + std::string(strerror(e)) +
                                   "); run as root with CAP_BPF and CAP_PERFMON");
    }
    return ErrnoError(e, "loading the cpu_sampler BPF program (run with -v for the verifier log)");
  }
  if (int err = InstallWalkProgram(skel->maps.sample_progs, skel->progs.ws_cpu_sample_walk_loop,
                                   skel->progs.ws_cpu_sample_walk_tail);
      err) {
    return ErrnoError(-err, "installing the CPU sampler's stack walk program");
  }
  if (off.enabled) {
    if (int err = InstallWalkProgram(skel->maps.off_cpu_progs, skel->progs.ws_off_cpu_walk_loop,
                                     skel->progs.ws_off_cpu_walk_tail);
        err) {
      return ErrnoError(-err, "installing the off-CPU stack walk program");
    }
  }
  const uint8_t one = 1;
  for (uint32_t pid : options.pids) {
    if (bpf_map__update_elem(skel->maps.target_pids, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY)) {
      return ErrnoError(errno, "adding pid " + std::to_string(pid) + " to the BPF filter");
    }
  }
  sampler->proc_events_ = ring_buffer__new(bpf_map__fd(skel->maps.proc_events), HandleProcEvent,
                                           &sampler->on_event_, nullptr);
  if (!sampler->proc_events_) return ErrnoError(errno, "creating the process-event ring buffer");
  LOG_DEBUG() << "cpu sampler maps: counts " << sizes.counts_entries << " x2, stacks " << sizes.stacks_entries
              << " x2, drain every " << sizes.drain_interval.count() << " ms, ~"
              << sizes.approx_kernel_bytes / 1024 << " KiB kernel memory";
  return sampler;
}

Status CpuSampler::Start() {
  ASSIGN_OR_RETURN(std::vector<uint32_t> cpus, OnlineCpus());
  const uint64_t period_ns = 1'000'000'000ull / options_.frequency_hz;
  for (uint32_t cpu : cpus) {
    int fd = OpenCpuClock(cpu, period_ns);
    if (fd < 0) {
      if (errno == ENODEV) continue;  // went offline since we read the list
      const int e = errno;
      if (e == EACCES || e == EPERM) {
        return PermissionDeniedError("perf_event_open refused on CPU " + std::to_string(cpu) +
                                     ": need CAP_PERFMON (or root), or lower kernel.perf_event_paranoid");
      }
      return ErrnoError(e, "perf_event_open on CPU " + std::to_string(cpu));
    }
    perf_fds_.push_back(fd);
    bpf_link* link = bpf_program__attach_perf_event(skel_->progs.ws_cpu_sample, fd);
    if (!link) return ErrnoError(errno, "attaching the sampler to CPU " + std::to_string(cpu));
    links_.push_back(link);
  }
  if (perf_fds_.empty()) return UnavailableError("no online CPU accepted a perf event");
  for (bpf_program* prog : {skel_->progs.ws_process_exec, skel_->progs.ws_process_exit}) {
    bpf_link* link = bpf_program__attach(prog);
    if (!link) return ErrnoError(errno, std::string("attaching ") + bpf_program__name(prog));
    links_.push_back(link);
  }
  if (options_.off_cpu.enabled) RETURN_IF_ERROR(AttachOffCpu());
  return Status::Ok();
}

Status CpuSampler::AttachOffCpu() {
  // The end first: a wait noted before it is attached would never end.
  bpf_link* end = bpf_program__attach(skel_->progs.ws_off_cpu_end);
  if (!end) return ErrnoError(errno, "attaching the off-CPU program to sys_exit");
  links_.push_back(end);
  bpf_link* start = bpf_program__attach(skel_->progs.ws_sched_switch);
  if (!start) return ErrnoError(errno, "attaching the off-CPU program to sched_switch");
  links_.push_back(start);
  off_cpu_adjusted_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

uint32_t CpuSampler::off_cpu_sample_every() const {
  return std::max<uint32_t>(1, __atomic_load_n(&skel_->bss->off_cpu_sample_every, __ATOMIC_RELAXED));
}

void CpuSampler::AdjustOffCpuSampling() {
  if (!options_.off_cpu.enabled) return;
  const auto now = std::chrono::steady_clock::now();
  const uint64_t switches = ReadStats()[WS_STAT_OFFCPU_SWITCHES];
  const double seconds = std::chrono::duration<double>(now - off_cpu_adjusted_).count();
  if (seconds < 0.05) return;  // too short to tell a rate
  const double rate = static_cast<double>(switches - off_cpu_switches_) / seconds;
  off_cpu_switches_ = switches;
  off_cpu_adjusted_ = now;
  const double target =
      std::max(1.0, static_cast<double>(options_.off_cpu.target_per_cpu) * static_cast<double>(num_cpus()));
  // The smallest N that brings the timed waits to the target; 1 below it.
  const uint32_t every = static_cast<uint32_t>(std::clamp(std::ceil(rate / target), 1.0, double{1u << 20}));
  __atomic_store_n(&skel_->bss->off_cpu_sample_every, every, __ATOMIC_RELAXED);
}

void CpuSampler::Stop() {
  for (bpf_link* link : links_) bpf_link__destroy(link);
  links_.clear();
  for (int fd : perf_fds_) close(fd);
  perf_fds_.clear();
}

Status CpuSampler::PollProcessEvents(std::chrono::milliseconds timeout,
                                     const std::function<void(const ws_proc_event&)>& on_event) {
  on_event_ = on_event;
  int n = ring_buffer__poll(proc_events_, static_cast<int>(timeout.count()));
  // Exit events do not wake the poll (see emit_proc_event): take what a
  // timeout left in the ring as well.
  if (n >= 0) n = ring_buffer__consume(proc_events_);
  on_event_ = nullptr;
  if (n < 0 && n != -EINTR) return ErrnoError(-n, "polling process events");
  return Status::Ok();
}

bool CpuSampler::LookupStack(uint32_t buffer, uint64_t hash, RawStack* out) const {
  bpf_map* stacks = buffer ? skel_->maps.stacks_1 : skel_->maps.stacks_0;
  ws_stack s;
  if (bpf_map__lookup_elem(stacks, &hash, sizeof(hash), &s, sizeof(s), 0) != 0) return false;
  const uint32_t len = std::min<uint32_t>(s.len, WS_MAX_STACK_FRAMES);
  out->frames.assign(s.frames, s.frames + len);
  out->truncated = s.flags & WS_STACK_TRUNCATED;
  out->python = s.flags & WS_STACK_PYTHON;
  out->end = ws_stack_end(s.flags);
  return true;
}

Status CpuSampler::DrainCounts(bpf_map* counts, uint32_t entries, const CpuSampleBatch& batch,
                               std::vector<RawSample>* out, uint64_t* missing_stacks) {
  ASSIGN_OR_RETURN(const uint32_t num_counts,
                   DrainHashMap(bpf_map__fd(counts), entries, count_keys_.get(), count_values_.get()));
  for (uint32_t i = 0; i < num_counts; ++i) {
    const ws_sample_key& k = count_keys_[i];
    RawSample sample;
    sample.pid = k.pid;
    sample.tid = k.tid;
    sample.comm = CString(k.comm, sizeof(k.comm));
    sample.process_comm = CString(k.process_comm, sizeof(k.process_comm));
    sample.user_stack_hash = k.user_stack_hash;
    sample.kernel_stack_hash = k.kernel_stack_hash;
    sample.count = count_values_[i];
    for (uint64_t h : {k.user_stack_hash, k.kernel_stack_hash}) {
      if (h && !batch.stacks.count(h)) ++*missing_stacks;
    }
    out->push_back(std::move(sample));
  }
  return Status::Ok();
}

Status CpuSampler::DrainBuffer(uint32_t buffer, CpuSampleBatch* batch) {
  bpf_map* counts = buffer ? skel_->maps.counts_1 : skel_->maps.counts_0;
  bpf_map* off_cpu_counts = buffer ? skel_->maps.off_cpu_counts_1 : skel_->maps.off_cpu_counts_0;
  bpf_map* stacks = buffer ? skel_->maps.stacks_1 : skel_->maps.stacks_0;
  // Allocated once and not cleared: the stacks buffer alone is 1 KiB per
  // entry, and zeroing it every drain was most of the agent's steady CPU.
  if (!count_keys_) {
    const uint32_t keys = std::max(sizes_.counts_entries, sizes_.off_cpu_counts_entries);
    count_keys_.reset(new ws_sample_key[keys]);
    count_values_.reset(new uint64_t[keys]);
    stack_hashes_.reset(new uint64_t[sizes_.stacks_entries]);
    stack_values_.reset(new ws_stack[sizes_.stacks_entries]);
  }
  // The stacks first: the counts are checked against them.
  ASSIGN_OR_RETURN(const uint32_t num_stacks,
                   DrainHashMap(bpf_map__fd(stacks), sizes_.stacks_entries, stack_hashes_.get(), stack_values_.get()));

  for (uint32_t i = 0; i < num_stacks; ++i) {
    const ws_stack& s = stack_values_[i];
    RawStack raw;
    const uint32_t len = std::min<uint32_t>(s.len, WS_MAX_STACK_FRAMES);
    raw.frames.assign(s.frames, s.frames + len);
    raw.truncated = s.flags & WS_STACK_TRUNCATED;
    raw.python = s.flags & WS_STACK_PYTHON;
    raw.end = ws_stack_end(s.flags);
    batch->stacks.emplace(stack_hashes_[i], std::move(raw));
  }
  RETURN_IF_ERROR(DrainCounts(counts, sizes_.counts_entries, *batch, &batch->samples, &batch->missing_stacks));
  if (options_.off_cpu.enabled) {
    RETURN_IF_ERROR(DrainCounts(off_cpu_counts, sizes_.off_cpu_counts_entries, *batch, &batch->off_cpu,
                                &batch->missing_stacks));
  }
  return Status::Ok();
}

Status CpuSampler::Drain(CpuSampleBatch* batch) {
  const uint32_t old = __atomic_load_n(&skel_->bss->active_buffer, __ATOMIC_SEQ_CST) & 1;
  __atomic_store_n(&skel_->bss->active_buffer, old ^ 1, __ATOMIC_SEQ_CST);
  AdjustOffCpuSampling();
  std::this_thread::sleep_for(kFlipGrace);
  return DrainBuffer(old, batch);
}

Status CpuSampler::DrainAll(CpuSampleBatch* batch) {
  RETURN_IF_ERROR(Drain(batch));
  return Drain(batch);
}

void CpuSampler::ReadProgramRunStats(uint64_t* run_time_ns, uint64_t* run_count) const {
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  *run_time_ns = *run_count = 0;
  if (bpf_obj_get_info_by_fd(bpf_program__fd(skel_->progs.ws_cpu_sample), &info, &len) == 0) {
    *run_time_ns = info.run_time_ns;
    *run_count = info.run_cnt;
  }
}

UnwindMapFds CpuSampler::unwind_map_fds() const { return UnwindMapsOf(skel_).Fds(); }

CpuSamplerStats CpuSampler::ReadStats() const {
  CpuSamplerStats stats;
  SumPerCpuCounters(skel_->maps.stats, WS_STAT_MAX, stats.values);
  return stats;
}

}  // namespace warpscope
