#include "agent/core/record.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "agent/collectors/cpu/cpu_sampler.h"
#include "agent/core/preflight.h"
#include "agent/core/profile_assembler.h"
#include "agent/export/collapsed_writer.h"
#include "agent/export/pprof_writer.h"
#include "agent/export/top_functions.h"
#include "agent/symbolize/symbolizer.h"
#include "agent/unwind/python/python_processes.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/duration.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(int code, const Status& status) {
  std::cerr << "warpscope-agent: " << status.message() << "\n";
  return code;
}

// The target processes of --pid, watched through pidfds so the recording ends
// when the last one exits (like `perf record -p`).
class TargetWatch {
 public:
  ~TargetWatch() {
    for (int fd : fds_) close(fd);
  }
  Status Add(uint32_t pid) {
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) {
      if (errno == ESRCH) return NotFoundError("no process with pid " + std::to_string(pid));
      return ErrnoError(errno, "watching pid " + std::to_string(pid));
    }
    fds_.push_back(fd);
    pids_.push_back(pid);
    return Status::Ok();
  }
  bool empty() const { return fds_.empty(); }
  // True once every watched process has exited.
  bool AllExited() {
    if (fds_.empty()) return false;
    std::vector<pollfd> p;
    for (int fd : fds_) p.push_back({fd, POLLIN, 0});
    if (poll(p.data(), p.size(), 0) < 0) return false;
    return std::all_of(p.begin(), p.end(), [](const pollfd& x) { return x.revents & (POLLIN | POLLHUP); });
  }

 private:
  std::vector<int> fds_;
  std::vector<uint32_t> pids_;
};

// SIGINT/SIGTERM end the recording gracefully; read through a signalfd so no
// handler or global flag is needed.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&mask_);
    sigaddset(&mask_, SIGINT);
    sigaddset(&mask_, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask_, &old_);
    fd_ = signalfd(-1, &mask_, SFD_NONBLOCK | SFD_CLOEXEC);
  }
  ~StopSignals() {
    if (fd_ >= 0) close(fd_);
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  bool Received() {
    signalfd_siginfo info;
    return fd_ >= 0 && read(fd_, &info, sizeof(info)) == sizeof(info);
  }

 private:
  sigset_t mask_{};
  sigset_t old_{};
  int fd_ = -1;
};

int64_t UnixNanosNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void AddCounters(const CpuSamplerStats& stats, const CpuSampleBatch& totals, const AssemblerStats& assembled,
                 const SymbolizerStats& sym, ProfileBuilder* builder) {
  for (uint32_t i = 0; i < WS_STAT_MAX; ++i) {
    builder->SetCounter(CpuSamplerStatName(static_cast<ws_cpu_sampler_stat>(i)), stats.values[i]);
  }
  builder->SetCounter("missing_stack_refs", totals.missing_stacks + assembled.missing_stack_refs);
  builder->SetCounter("user_frames", sym.user_frames);
  builder->SetCounter("user_frames_symbolized", sym.user_symbolized);
  builder->SetCounter("user_frames_no_mapping", sym.user_no_mapping);
  builder->SetCounter("user_frames_no_symbol", sym.user_no_symbol);
  builder->SetCounter("kernel_frames", sym.kernel_frames);
  builder->SetCounter("kernel_frames_symbolized", sym.kernel_symbolized);
  builder->SetCounter("elf_load_errors", sym.elf_load_errors);
}

// One line per process (most samples first) into the profile's comments, and
// a short summary for stderr: how many user stacks reached their root, and why
// the others stopped.
std::string SummarizeUnwinding(const AssemblerStats& stats, ProfileBuilder* builder) {
  std::vector<std::pair<uint32_t, const UnwindOutcome*>> procs;
  uint64_t total = 0, root = 0;
  for (const auto& [pid, outcome] : stats.unwind_by_pid) {
    procs.emplace_back(pid, &outcome);
    total += outcome.samples;
    root += outcome.by_end[WS_END_ROOT];
  }
  std::sort(procs.begin(), procs.end(),
            [](const auto& a, const auto& b) { return a.second->samples > b.second->samples; });
  std::ostringstream summary;
  if (total > 0) {
    summary << "warpscope-agent: " << std::fixed << std::setprecision(1) << 100.0 * root / total
            << "% of user stacks reached their root";
  }
  for (size_t i = 0; i < procs.size(); ++i) {
    const auto& [pid, o] = procs[i];
    std::ostringstream line;
    line << "unwind pid=" << pid << " comm=" << o->comm << " samples=" << o->samples;
    for (uint32_t end = 0; end < WS_END_MAX; ++end) {
      if (o->by_end[end]) line << " " << StackEndName(end) << "=" << o->by_end[end];
    }
    builder->AddComment(line.str());
    if (i < 3) {
      summary << (i == 0 ? " (" : ", ") << o->comm << "[" << pid << "] " << std::fixed << std::setprecision(1)
              << 100.0 * o->RootShare() << "%";
      if (i + 1 == std::min<size_t>(procs.size(), 3)) summary << ")";
    }
  }
  if (total > 0) summary << "; details: go tool pprof -comments\n";
  return summary.str();
}

}  // namespace

int RunRecord(const RecordOptions& options) {
  if (Status s = CheckCanProfile(ReadPreflightFacts()); !s.ok()) {
    return Fail(s.code() == StatusCode::kPermissionDenied ? kExitPermission : kExitUnsupported, s);
  }
  if (Status s = CheckWritable(options.output); !s.ok()) return Fail(kExitUsage, s);

  TargetWatch targets;
  for (uint32_t pid : options.pids) {
    if (Status s = targets.Add(pid); !s.ok()) {
      return Fail(s.code() == StatusCode::kNotFound ? kExitNoSuchProcess : kExitError, s);
    }
  }

  Symbolizer symbolizer{ProcFs()};
  if (Status s = symbolizer.Init(); !s.ok()) {
    LOG_WARNING() << "kernel frames will not be symbolized: " << s.message();
  }
  CpuSamplerOptions sampler_options;
  sampler_options.frequency_hz = options.frequency_hz;
  sampler_options.pids = options.pids;
  sampler_options.drain_interval = options.drain_interval;
  sampler_options.python_frames = options.python_frames && !options.frame_pointers_only;
  auto sampler_or = CpuSampler::Create(sampler_options);
  if (!sampler_or.ok()) {
    const Status& s = sampler_or.status();
    return Fail(s.code() == StatusCode::kPermissionDenied ? kExitPermission : kExitError, s);
  }
  std::unique_ptr<CpuSampler> sampler = std::move(sampler_or).value();

  // Processes are described to the symbolizer and to the BPF unwinder when
  // first seen; targets of --pid before sampling starts, so that every sample
  // of theirs gets a whole stack.
  UnwindTableLoader unwinder(sampler->unwind_map_fds(), sampler_options.unwind_maps, ProcFs());
  PythonProcesses python(sampler->unwind_map_fds().py_procs, ProcFs());
  auto publish = [&](const ProcessInfo& info) -> Status {
    const uint32_t flags = sampler_options.python_frames ? python.Describe(info) : 0;
    return unwinder.Describe(info, flags);
  };
  auto describe = [&](uint32_t pid) {
    symbolizer.OnProcessSeen(pid);
    if (!options.frame_pointers_only) {
      if (const ProcessInfo* info = symbolizer.processes().Find(pid)) {
        if (Status s = publish(*info); !s.ok()) LOG_WARNING() << "unwinder: " << s.message();
      }
    }
  };
  for (uint32_t pid : options.pids) describe(pid);

  const int64_t period_nanos = 1'000'000'000 / options.frequency_hz;
  ProfileBuilder builder(UnixNanosNow(), period_nanos, options.frequency_hz);
  // pprof tools name a profile after its first mapping: make it the target's executable.
  if (!options.pids.empty()) {
    if (auto main_binary = symbolizer.MainExecutableMapping(options.pids[0])) builder.InternMapping(*main_binary);
  }
  ProfileAssembler assembler(&symbolizer, &python, &builder, period_nanos);
  StopSignals stop_signals;

  if (Status s = sampler->Start(); !s.ok()) {
    return Fail(s.code() == StatusCode::kPermissionDenied ? kExitPermission : kExitError, s);
  }
  const size_t num_cpus = sampler->num_cpus();
  const auto start = Clock::now();
  const auto deadline = start + options.duration;
  const auto drain_interval = sampler->map_sizes().drain_interval;
  auto next_drain = start + drain_interval;
  std::cerr << "warpscope-agent: recording "
            << (options.all ? std::string("all processes") : "pid " + std::to_string(options.pids[0]) +
                                                                (options.pids.size() > 1 ? " and others" : ""))
            << " at " << options.frequency_hz << " Hz on " << num_cpus << " CPUs for "
            << FormatDuration(options.duration) << " (Ctrl-C stops early)\n";

  auto on_event = [&](const ws_proc_event& event) {
    switch (event.type) {
      case WS_PROC_SEEN: describe(event.pid); break;
      case WS_PROC_EXEC:
        symbolizer.OnExec(event.pid);
        unwinder.Forget(event.pid);
        python.OnExec(event.pid);
        describe(event.pid);
        break;
      case WS_PROC_EXIT:
        symbolizer.OnExit(event.pid);
        unwinder.Forget(event.pid);
        python.OnExit(event.pid);
        break;
      case WS_PROC_PY_STACK: {
        RawStack stack;
        if (sampler->LookupStack(event.buffer, event.stack_hash, &stack)) {
          python.Prefetch(event.pid, stack.frames.data(), stack.frames.size());
        }
        break;
      }
      default: break;
    }
  };
  CpuSampleBatch totals;  // only the counters are accumulated here
  auto drain = [&](bool final_drain) -> Status {
    CpuSampleBatch batch;
    symbolizer.BeginEpoch();
    RETURN_IF_ERROR(final_drain ? sampler->DrainAll(&batch) : sampler->Drain(&batch));
    assembler.AddBatch(batch);
    totals.missing_stacks += batch.missing_stacks;
    // Maps re-read during symbolization (dlopen) get a new generation: publish it.
    if (!options.frame_pointers_only) {
      uint32_t last_pid = 0;
      for (const RawSample& sample : batch.samples) {
        if (sample.pid == last_pid) continue;
        last_pid = sample.pid;
        // Exited processes stay in the symbolizer until EndEpoch; the unwinder
        // has already forgotten them and must not take them back.
        const ProcessInfo* info = symbolizer.processes().Find(sample.pid);
        if (info != nullptr && !info->exited) (void)publish(*info);
      }
    }
    // Processes that exited before this drain's flip have no samples left in
    // the kernel, so their maps can go now.
    symbolizer.EndEpoch();
    python.EndEpoch();
    return Status::Ok();
  };

  std::string stop_reason = "duration reached";
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (stop_signals.Received()) {
      stop_reason = "interrupted";
      break;
    }
    if (!targets.empty() && targets.AllExited()) {
      stop_reason = options.pids.size() == 1 ? "process exited" : "all processes exited";
      break;
    }
    const auto wait = std::min({deadline, next_drain, now + std::chrono::milliseconds(100)}) - now;
    if (Status s = sampler->PollProcessEvents(std::chrono::duration_cast<std::chrono::milliseconds>(wait), on_event);
        !s.ok()) {
      return Fail(kExitError, s);
    }
    if (Clock::now() >= next_drain) {
      if (Status s = drain(false); !s.ok()) return Fail(kExitError, s);
      next_drain += drain_interval;
    }
  }
  const auto elapsed = Clock::now() - start;
  sampler->Stop();
  // Deliver the last process events before the final drain so new processes get maps.
  (void)sampler->PollProcessEvents(std::chrono::milliseconds(0), on_event);
  if (Status s = drain(true); !s.ok()) return Fail(kExitError, s);

  const CpuSamplerStats stats = sampler->ReadStats();
  uint64_t bpf_run_ns = 0, bpf_runs = 0;
  sampler->ReadProgramRunStats(&bpf_run_ns, &bpf_runs);
  if (bpf_runs > 0) {  // only with kernel.bpf_stats_enabled=1
    builder.SetCounter("bpf_run_time_ns", bpf_run_ns);
    builder.SetCounter("bpf_run_count", bpf_runs);
  }
  AddCounters(stats, totals, assembler.stats(), symbolizer.stats(), &builder);
  builder.AddComment("warpscope-agent record, " + std::to_string(options.frequency_hz) + " Hz, stop: " + stop_reason);
  const std::string unwind_summary = SummarizeUnwinding(assembler.stats(), &builder);
  if (!options.frame_pointers_only) {
    const UnwindLoaderStats& u = unwinder.stats();
    builder.SetCounter("unwind_tables_built", u.tables_built);
    builder.SetCounter("unwind_tables_failed", u.tables_failed);
    builder.SetCounter("unwind_tables_no_space", u.tables_no_space);
    builder.SetCounter("unwind_rows_used", u.rows_used);
    builder.SetCounter("unwind_tables_live", u.tables_live);
    builder.SetCounter("unwind_tables_freed", u.tables_freed);
    builder.SetCounter("unwind_processes_described", u.processes_described);
    builder.SetCounter("unwind_table_build_ms_total", static_cast<uint64_t>(u.build_ms_total));
    const PythonStats& py = python.stats();
    builder.SetCounter("python_processes", py.processes);
    builder.SetCounter("python_unsupported_processes", py.unsupported_processes);
    builder.SetCounter("python_code_objects_read", py.code_objects_read);
    builder.SetCounter("python_code_object_errors", py.code_object_errors);
    builder.SetCounter("python_frames_resolved", py.frames_resolved);
    builder.SetCounter("python_frames_unresolved", py.frames_unresolved);
  }
  Profile profile =
      builder.Finish(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  for (const ProfileCounter& c : profile.counters) LOG_DEBUG() << "counter " << c.name << "=" << c.value;

  StatusOr<std::string> encoded = options.format == OutputFormat::kPprof ? EncodePprofGzip(profile)
                                                                         : StatusOr<std::string>(EncodeCollapsed(profile));
  if (!encoded.ok()) return Fail(kExitError, encoded.status());
  if (Status s = WriteFileAtomically(options.output, *encoded); !s.ok()) return Fail(kExitError, s);

  const uint64_t drops = stats[WS_STAT_DROP_COUNTS_FULL] + stats[WS_STAT_DROP_STACKS_FULL] +
                         stats[WS_STAT_DROP_PROC_EVENTS];
  std::cerr << "warpscope-agent: " << stop_reason << " after " << FormatDuration(elapsed) << "; "
            << assembler.stats().samples << " samples written to " << options.output << " ("
            << profile.samples.size() << " distinct stacks, " << drops << " dropped";
  if (drops) {
    std::cerr << ": counts map full " << stats[WS_STAT_DROP_COUNTS_FULL] << ", stacks map full "
              << stats[WS_STAT_DROP_STACKS_FULL] << ", process events " << stats[WS_STAT_DROP_PROC_EVENTS];
  }
  std::cerr << ")\n";
  if (!unwind_summary.empty()) std::cerr << unwind_summary;
  if (options.top > 0 && !profile.samples.empty()) std::cout << FormatTopFunctions(profile, options.top);
  return kExitOk;
}

}  // namespace warpscope
