// LaunchJoiner: turns CUDA kernel executions (CUPTI activity records from
// libwarpscope_cuda.so) and sampled launch stacks (the agent's uprobe on the
// library's probe function) into GPU-time samples: value = a kernel's GPU
// duration, attributed to the stack that launched it.
//
// The two inputs arrive on different paths and out of order: a launch's
// stack comes through a BPF ring buffer within milliseconds, its kernel
// record through CUPTI's activity buffers about a second later (or, rarely,
// the other way round). So:
//   * sampled launches are kept by (pid, correlation id) for `launch_ttl_ns`
//     (a graph launch's correlation id covers every kernel of the graph);
//   * a kernel record waits `grace_ns` after it arrived before it is judged,
//     so a late stack can still claim it;
//   * a kernel whose launch was not sampled is never dropped: its time is
//     spread over the sampled stacks that launched a kernel of the same name
//     in the same process during the same drain (or, when that drain had
//     none, the most recent drain within launch_ttl_ns that had), in
//     proportion to their sampled GPU time, or, when there is none, goes to
//     a placeholder stack (stack_key 0);
//   * when the library recorded kernels only part of the time (windowed
//     recording), each kernel carries the weight of its window (the time the
//     window stands for over the time it recorded): its time is multiplied
//     by it and marked scaled.
// Every bound (pending records, remembered launches) has a drop counter.
//
// Threading: one owner thread (the agent's GPU-time loop) calls everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <utility>
#include <unordered_map>
#include <vector>

namespace warpscope::gpu {

// A launch whose stack was captured. stack_key is the caller's handle for
// the interned stack (never 0).
struct SampledLaunch {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t correlation_id = 0;
  uint64_t stack_key = 0;
};

// One kernel's execution. kernel_key is the caller's handle for the kernel's
// name (the same key for the same name within a process).
struct KernelExecution {
  uint32_t pid = 0;
  uint64_t correlation_id = 0;
  uint64_t kernel_key = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t graph_id = 0;  // 0 unless the kernel ran as part of a CUDA graph
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // The time bucket the kernel's time is reported in (the caller's key, e.g.
  // the Unix second it started in): samples are kept apart per bucket.
  int64_t bucket = 0;
  // Its window's period over its recording time (1: recorded all the time).
  double weight = 1.0;
  // With weight != 1: the time the window stands for, in the bucket's clock
  // (Unix ns); the weighted time is spread over the buckets (seconds) it
  // covers, so a range or a timeline counts what the window stands for in
  // it. Empty (to <= from): all in `bucket`.
  int64_t covers_from = 0, covers_to = 0;
};

// Output: GPU time of one (process, launching stack, kernel, device, stream,
// graph, time bucket) over one drain.
struct GpuTimeSample {
  uint32_t pid = 0;
  uint32_t tid = 0;         // the launching thread (0 for the placeholder)
  uint64_t stack_key = 0;   // 0: placeholder, no sampled launch of this kernel
  uint64_t kernel_key = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t graph_id = 0;
  int64_t bucket = 0;       // KernelExecution::bucket of the kernels counted here
  int64_t gpu_ns = 0;       // attributed GPU time (scaled when estimated)
  int64_t kernels = 0;      // kernel executions measured directly for this stack
  bool estimated = false;   // includes spread or scaled time
  bool scaled = false;      // includes time of kernels with weight != 1
};

struct LaunchJoinerOptions {
  int64_t grace_ns = 3'000'000'000;        // a kernel record waits this long for its stack
  int64_t launch_ttl_ns = 60'000'000'000;  // a sampled launch is remembered this long
  size_t max_pending_kernels = 1'000'000;  // records waiting for their grace period
  size_t max_launches = 1'000'000;         // remembered sampled launches
};

struct LaunchJoinerStats {
  uint64_t kernels = 0;            // records taken
  uint64_t kernels_sampled = 0;    // ... whose launch stack was captured
  uint64_t kernels_spread = 0;     // ... spread over sampled stacks of the same kernel name
  uint64_t kernels_placeholder = 0;  // ... with no sampled stack at all
  uint64_t kernels_dropped = 0;    // pending queue full (their time is lost: counted)
  uint64_t launches = 0;           // sampled launches taken
  uint64_t launches_dropped = 0;   // remembered-launch table full
  uint64_t bad_durations = 0;      // end < start: counted as 0 ns
  // A second kernel (not from a graph) with the correlation id of a sampled
  // launch: one launch call runs one kernel, so the ids were reused; the
  // kernel counts as unsampled instead of taking that launch's stack.
  uint64_t kernels_duplicate_correlation = 0;
};

class LaunchJoiner {
 public:
  explicit LaunchJoiner(const LaunchJoinerOptions& options = LaunchJoinerOptions()) : options_(options) {}

  void AddLaunch(const SampledLaunch& launch, int64_t now_ns);
  void AddKernel(const KernelExecution& kernel, int64_t now_ns);
  // Joins every kernel record that arrived at least grace_ns before now_ns
  // (all of them when `flush_all`) and returns the GPU time by stack; also
  // forgets launches older than launch_ttl_ns and processes that are gone.
  std::vector<GpuTimeSample> Drain(int64_t now_ns, bool flush_all = false);
  void ForgetProcess(uint32_t pid);

  const LaunchJoinerStats& stats() const { return stats_; }
  size_t pending_kernels() const { return pending_.size(); }
  size_t remembered_launches() const { return launches_.size(); }

 private:
  struct LaunchKey {
    uint32_t pid;
    uint64_t correlation_id;
    bool operator==(const LaunchKey&) const = default;
  };
  struct LaunchKeyHash {
    size_t operator()(const LaunchKey& k) const {
      return std::hash<uint64_t>{}(k.correlation_id * 0x9E3779B97F4A7C15ull ^ k.pid);
    }
  };
  struct RememberedLaunch {
    uint32_t tid;
    uint64_t stack_key;
    int64_t added_ns;
    bool joined = false;  // a non-graph kernel took it
  };
  struct Launcher {
    uint32_t tid;
    uint64_t stack_key;
    int64_t gpu_ns, kernels;
  };
  struct RecentLaunchers {
    std::vector<Launcher> launchers;
    int64_t seen_ns;
  };
  struct PendingKernel {
    KernelExecution kernel;
    int64_t arrived_ns;
  };

  LaunchJoinerOptions options_;
  LaunchJoinerStats stats_;
  std::unordered_map<LaunchKey, RememberedLaunch, LaunchKeyHash> launches_;
  std::deque<LaunchKey> launch_order_;  // insertion order, for expiry
  std::deque<PendingKernel> pending_;   // arrival order
  // (pid, kernel) -> its sampled stacks in the latest drain that had any.
  std::map<std::pair<uint32_t, uint64_t>, RecentLaunchers> recent_launchers_;
};

}  // namespace warpscope::gpu
