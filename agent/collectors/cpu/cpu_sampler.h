// CpuSampler owns the cpu_sampler BPF skeleton: it sizes and loads the maps,
// opens one cpu-clock perf event per online CPU, and hands user space the
// aggregated samples and process lifecycle events.
//
// Threading: one owner thread calls every method (the recorder's loop). The
// BPF side runs concurrently in the kernel; the double-buffer flip in Drain()
// is the only synchronisation with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/collectors/cpu/map_sizing.h"
#include "agent/unwind/unwind_map_sizing.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/status.h"
#include "bpf/intf/cpu_sampler.h"

struct cpu_sampler_bpf;
struct ring_buffer;
struct bpf_link;
struct bpf_map;

namespace warpscope {

// Off-CPU time: how long threads stay blocked, under the stacks they block in
// (docs/design/off_cpu.md).
struct OffCpuOptions {
  bool enabled = false;
  // Waits shorter than this are not counted (WS_STAT_OFFCPU_SHORT).
  std::chrono::nanoseconds min_wait{0};
  // Timed waits per CPU per second the sampling aims at: when threads block
  // faster, one blocking in N is timed and stands for N.
  uint32_t target_per_cpu = 250;
  // The hard bound in the kernel, per CPU per second, for the second before
  // the sampling rate catches up with a burst (WS_STAT_OFFCPU_RATE_LIMITED).
  uint32_t max_per_cpu = 2000;
  uint32_t pending_entries = 1u << 13;  // waits in progress at once, node-wide (296 B each)
};

struct CpuSamplerOptions {
  uint32_t frequency_hz = 99;
  std::vector<uint32_t> pids;  // empty: every process on the machine
  std::chrono::milliseconds drain_interval{1000};
  UnwindMapSizes unwind_maps = ComputeUnwindMapSizes();
  bool python_frames = true;  // interleave CPython frames (bpf/include/ws_python.h)
  OffCpuOptions off_cpu;
};

struct RawStack {
  std::vector<uint64_t> frames;  // leaf first
  bool truncated = false;
  bool python = false;  // holds Python frames: two slots each (bpf/intf/python.h)
  uint32_t end = WS_END_KERNEL_FP;  // enum ws_stack_end: why a user stack walk stopped
};

struct RawSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;          // thread name
  std::string process_comm;  // thread-group leader's name
  uint64_t user_stack_hash = 0;
  uint64_t kernel_stack_hash = 0;
  uint64_t count = 0;
};

// One drained buffer: samples reference stacks by hash.
struct CpuSampleBatch {
  std::vector<RawSample> samples;
  // Off-CPU time: RawSample::count is blocked nanoseconds (re-weighted), on
  // the stacks the thread blocked in; the wait ended in this buffer.
  std::vector<RawSample> off_cpu;
  std::unordered_map<uint64_t, RawStack> stacks;
  uint64_t missing_stacks = 0;  // a sample's stack hash with no entry (should stay 0)
};

// Sums over CPUs of the BPF program's counters (bpf/intf/cpu_sampler.h), since Start().
struct CpuSamplerStats {
  uint64_t values[WS_STAT_MAX] = {};
  uint64_t operator[](ws_cpu_sampler_stat s) const { return values[s]; }
};
const char* CpuSamplerStatName(ws_cpu_sampler_stat stat);

class CpuSampler {
 public:
  ~CpuSampler();
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Loads and verifies the BPF program with maps sized for this machine.
  static StatusOr<std::unique_ptr<CpuSampler>> Create(const CpuSamplerOptions& options);

  // Opens the perf events on every online CPU and attaches the programs.
  Status Start();

  // Detaches from the perf events (samples stop); the maps stay readable.
  void Stop();

  // The off-CPU share now timed: one blocking switch in this many (1: all).
  uint32_t off_cpu_sample_every() const;

  // Waits up to `timeout` for process events and delivers each to `on_event`.
  Status PollProcessEvents(std::chrono::milliseconds timeout,
                           const std::function<void(const ws_proc_event&)>& on_event);

  // Flips the buffers and returns everything recorded in the previous one.
  Status Drain(CpuSampleBatch* batch);
  // Drains both buffers (used once at the end of a recording).
  Status DrainAll(CpuSampleBatch* batch);

  // A stack still in the kernel (for WS_PROC_PY_STACK events); false once drained.
  bool LookupStack(uint32_t buffer, uint64_t hash, RawStack* out) const;

  CpuSamplerStats ReadStats() const;
  // The sampling program's total run time and run count since load; both stay
  // 0 unless kernel.bpf_stats_enabled is 1.
  void ReadProgramRunStats(uint64_t* run_time_ns, uint64_t* run_count) const;
  const CpuSamplerMapSizes& map_sizes() const { return sizes_; }
  // The unwinder's maps inside this skeleton, for UnwindTableLoader.
  UnwindMapFds unwind_map_fds() const;
  size_t num_cpus() const { return perf_fds_.size(); }

 private:
  explicit CpuSampler(const CpuSamplerOptions& options);
  Status DrainBuffer(uint32_t buffer, CpuSampleBatch* batch);
  // Reads and deletes every entry of a counts map (`entries` at most) into
  // `out`; a stack hash not in `batch` counts in `missing_stacks`.
  Status DrainCounts(bpf_map* counts, uint32_t entries, const CpuSampleBatch& batch, std::vector<RawSample>* out,
                     uint64_t* missing_stacks);
  // Sets the share of blocking switches that are timed from the rate they
  // came at since the previous drain.
  void AdjustOffCpuSampling();
  Status AttachOffCpu();

  CpuSamplerOptions options_;
  CpuSamplerMapSizes sizes_;
  cpu_sampler_bpf* skel_ = nullptr;
  ring_buffer* proc_events_ = nullptr;
  std::vector<int> perf_fds_;
  std::vector<bpf_link*> links_;
  std::function<void(const ws_proc_event&)> on_event_;  // valid during PollProcessEvents only
  // Drain buffers, one entry per map entry (DrainBuffer).
  std::unique_ptr<ws_sample_key[]> count_keys_;
  std::unique_ptr<uint64_t[]> count_values_;
  std::unique_ptr<uint64_t[]> stack_hashes_;
  std::unique_ptr<ws_stack[]> stack_values_;
  // AdjustOffCpuSampling: the blocking switches counted at the previous drain.
  uint64_t off_cpu_switches_ = 0;
  std::chrono::steady_clock::time_point off_cpu_adjusted_{};
};

}  // namespace warpscope
