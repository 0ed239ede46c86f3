// ProfilingSession: the CPU sampler with everything that turns its samples
// into a Profile (symbolizer, .eh_frame unwind tables, CPython frames, the
// ProfileAssembler), driven the same way by `record` (one profile) and `run`
// (one profile per upload window; symbols, unwind tables and Python state
// persist across windows).
//
// Threading: owned by and used only from the sampling (main) thread; what it
// reads from new binaries is read on the BinaryLearner's worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "agent/collectors/cpu/binary_learner.h"
#include "agent/collectors/cpu/cpu_sampler.h"
#include "agent/collectors/cpu/profile_assembler.h"
#include "model/profile.h"
#include "agent/symbolize/symbolizer.h"
#include "agent/unwind/python/python_processes.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/status.h"

namespace warpscope {

// The time bucket of stamped samples (ProfilingSessionOptions::stamp_sample_times).
inline constexpr int64_t kSampleTimeResolutionNanos = 1'000'000'000;

struct ProfilingSessionOptions {
  std::vector<uint32_t> pids;  // empty: every process
  uint32_t frequency_hz = 99;
  std::chrono::milliseconds drain_interval{1000};
  bool frame_pointers_only = false;  // no .eh_frame unwinding and no Python frames
  bool python_frames = true;
  // Stamps samples with the second they were taken in (ProfileSample::
  // time_nanos), so a window's profile keeps its per-second timeline (`run`;
  // the server's flame chart). Drains are then aligned to whole seconds of
  // the Unix clock. Off: samples carry no time (`record`).
  bool stamp_sample_times = false;
  size_t symbol_cache_bytes = kDefaultSymbolCacheBytes;  // see Symbolizer
  OffCpuOptions off_cpu;  // off: no off-CPU programs are loaded
};

class ProfilingSession {
 public:
  using Clock = std::chrono::steady_clock;
  using ProcessEventObserver = std::function<void(const ws_proc_event&)>;

  // Loads the BPF program and describes the --pid targets to the symbolizer
  // and unwinder (so their first samples get whole stacks). Errors carry
  // kPermissionDenied when privileges are missing.
  static StatusOr<std::unique_ptr<ProfilingSession>> Create(const ProfilingSessionOptions& options);

  ProfilingSession(const ProfilingSession&) = delete;
  ProfilingSession& operator=(const ProfilingSession&) = delete;

  // Sees every process event after the session handled it (run: the label cache).
  void SetProcessEventObserver(ProcessEventObserver observer) { observer_ = std::move(observer); }
  // Where drained samples go from now on. Must be set before the first drain.
  void SetBuilder(ProfileBuilder* builder) { assembler_.SetBuilder(builder); }
  // Where drained off-CPU time goes (options.off_cpu.enabled): set before the
  // first drain, like SetBuilder.
  void SetOffCpuBuilder(ProfileBuilder* builder) { off_cpu_assembler_.SetBuilder(builder); }
  bool off_cpu() const { return options_.off_cpu.enabled; }

  // Attaches to the perf events: sampling starts.
  Status Start();
  // Waits for process events until `until` (at most 100 ms per call, so
  // callers can check for signals) and drains the sampler whenever the drain
  // interval has passed.
  Status Poll(Clock::time_point until);
  // Drains now, so that everything sampled so far is in the current builder.
  Status DrainNow() { return Drain(false); }
  // Stops sampling, delivers the last process events and drains both buffers.
  Status StopAndDrainAll();

  // The agent's counters since Start (BPF drops, symbolization, unwinding,
  // Python) into `counters`.
  void AddCounters(std::vector<ProfileCounter>* counters) const;

  Symbolizer& symbolizer() { return symbolizer_; }
  PythonProcesses* python() { return python_frames_ ? &python_ : nullptr; }
  // The unwinder's maps (inside the CPU sampler), for other stack sources
  // (the CUDA launch probe) to unwind from the same tables.
  UnwindMapFds unwind_map_fds() const { return sampler_->unwind_map_fds(); }
  // Describes `pid` to the symbolizer and unwinder now, before it is sampled.
  // Reads the process's maps again and publishes them to the unwinder: a
  // process that dlopen'ed libraries since it was first seen (a CUDA process
  // connecting: libwarpscope_cuda.so and CUPTI), whose launch stacks would
  // otherwise stop in those libraries until a CPU sample there re-reads them.
  void DescribeProcess(uint32_t pid);
  const AssemblerStats& assembler_stats() const { return assembler_.stats(); }
  CpuSamplerStats sampler_stats() const { return sampler_->ReadStats(); }
  size_t num_cpus() const { return sampler_->num_cpus(); }
  int64_t period_nanos() const { return period_nanos_; }

 private:
  ProfilingSession(const ProfilingSessionOptions& options, std::unique_ptr<CpuSampler> sampler,
                   const CpuSamplerOptions& sampler_options);
  // Queues the process's files that a reader does not know yet for the
  // learner, then publishes it to the CPython detector and the unwinder with
  // what is known now; the rest is published as it arrives (ApplyLearned).
  Status Publish(const ProcessInfo& info);
  void RequestUnknown(const ProcessInfo& info);
  // Hands what the learner finished to the readers and publishes again the
  // processes that waited for it.
  void ApplyLearned();
  // Reads the process's maps (again when `maps_changed`) and describes it to
  // the symbolizer, the CPython detector and the unwinder.
  void Describe(uint32_t pid, bool maps_changed = false);
  void OnEvent(const ws_proc_event& event);
  Status Drain(bool final_drain);

  const ProfilingSessionOptions options_;
  const int64_t period_nanos_;
  const bool python_frames_;
  // Declaration order is destruction order in reverse: the sampler (whose maps
  // the unwinder writes) outlives the unwinder and the Python tables.
  Symbolizer symbolizer_;
  std::unique_ptr<CpuSampler> sampler_;
  UnwindTableLoader unwinder_;
  PythonProcesses python_;
  ProfileAssembler assembler_;
  ProfileAssembler off_cpu_assembler_;
  ProcessEventObserver observer_;
  std::unique_ptr<BinaryLearner> learner_;
  // Files queued in the learner -> the processes waiting for them, and how
  // many files each process still waits for.
  std::unordered_map<FileIdentity, std::vector<uint32_t>, FileIdentityHash> waiting_;
  std::unordered_map<uint32_t, uint32_t> pending_;
  Clock::duration drain_interval_{};
  Clock::time_point next_drain_{};
  int64_t last_drain_unix_ = 0;  // stamp_sample_times: when the previous drain took its samples
  uint64_t missing_stacks_ = 0;  // stacks referenced by samples but absent from their batch
};

}  // namespace warpscope
