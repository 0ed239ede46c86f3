// GpuActivityAnalyzer: what each CUDA process's GPU did with its time,
// computed in the agent from every kernel, copy and set the injection
// library records (not from the thinned trace), and sent as metric series
// per process and device (docs/design/insights.md):
//
//   * cuda_gpu_busy_seconds{category}: the union of the process's activity
//     on the device, each instant counted once, as compute (any kernel but
//     NCCL's), communication (NCCL kernels only) or memory (copies and sets
//     only);
//   * cuda_gpu_idle_seconds{reason}: the idle time between, as host_wait
//     (nothing was queued: the next launch call began after the GPU went
//     idle, no activity followed, or the next is a copy or set, whose call
//     time is unknown), kernel_wait (queued, started within the launch
//     overhead: the launch call and kernel_wait_max_ns after it) and other
//     (queued but started later: a dependency, another process);
//   * launch statistics: cuda_kernels, cuda_kernels_launch_known,
//     cuda_short_kernels (shorter than their own launch call),
//     cuda_kernel_seconds, cuda_launch_call_seconds, cuda_launch_delay_seconds
//     (launch call entry to kernel start);
//   * transfers: cuda_memcpy_seconds and cuda_memcpy_bytes{copy, memory}
//     (HtoD, DtoH, ...; pageable, pinned or device);
//   * cuda_kernel_sequence_{count,gpu_seconds,gap_seconds}{sequence}: the
//     most frequent runs of three small kernels launched back to back by one
//     thread (fusion candidates; runs do not overlap; a loop's rotations are
//     one sequence; kernels of a CUDA graph are in none), the GPU time they
//     ran and the idle time between them, in the second each run began.
//
// Durations are placed in the seconds they happened in (one reading per
// process, device, figure and second), so any step of the store sums them
// exactly. In exact mode a device's timeline is classified up to
// now - grace_ns (records come late); in windowed mode each closed window is
// classified on its own and stretched over the time it stands for (its
// figures are estimates of the whole period, like its GPU time). Idle time
// after a process's last activity, once it has ended, is not counted.
//
// Threading: owned by the GPU-time collector's sampling thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "agent/collectors/gpu_time/socket/kernel_name_table.h"
#include "model/metric_reading.h"

namespace warpscope::gpu {

enum class GpuWorkCategory : uint8_t { kCompute = 0, kCommunication = 1, kMemory = 2 };
inline constexpr int kGpuWorkCategories = 3;
enum class GpuIdleReason : uint8_t { kHostWait = 0, kKernelWait = 1, kOther = 2 };
inline constexpr int kGpuIdleReasons = 3;

// Where a copy's host side lives (CUpti_ActivityMemoryKind of its ends).
enum class CopyMemory : uint8_t { kDevice = 0, kPageable = 1, kPinned = 2 };

struct AnalyzedActivity {
  int64_t start_ns = 0;  // host CLOCK_MONOTONIC
  int64_t end_ns = 0;
  uint32_t device = 0;
  GpuWorkCategory category = GpuWorkCategory::kCompute;
  // Kernels: the name (null for copies and sets) and the launch call on the
  // host (launch_ns 0: unknown).
  std::shared_ptr<const InternedKernelName> kernel;
  int64_t launch_ns = 0;
  int64_t launch_duration_ns = 0;
  uint32_t launch_tid = 0;
  // 0 unless the kernel ran as part of a CUDA graph: its launch call is the
  // graph's, and a graph is never a fusion candidate's run (its kernels
  // already go to the GPU in one launch).
  uint32_t graph_id = 0;
  // Copies.
  bool memcpy = false;
  uint8_t copy_kind = 0;  // CUpti_ActivityMemcpyKind
  CopyMemory memory = CopyMemory::kDevice;
  uint64_t bytes = 0;
};

// NCCL's kernels are communication, every other kernel compute.
GpuWorkCategory KernelCategory(const std::string& system_name);
// The copy's host memory from CUPTI's memory kinds of its source and destination.
CopyMemory CopyMemoryOf(uint8_t src_kind, uint8_t dst_kind);

struct ActivityAnalysisOptions {
  // A queued activity that started within this of its launch call's end (or
  // of the previous activity's end) waited for the launch overhead, not for
  // work.
  int64_t kernel_wait_max_ns = 50'000;
  // Kernels at most this long are small (fusion candidates).
  int64_t small_kernel_ns = 50'000;
  // Small kernels whose launch calls are at most this far apart run back to back.
  int64_t sequence_gap_ns = 1'000'000;
  // Exact mode classifies up to now - grace_ns (CUPTI delivers records late).
  int64_t grace_ns = 3'000'000'000;
  size_t max_pending = 1'000'000;   // activities waiting to be classified, all processes
  // The work one upload window's analysis may do, so that the sampling
  // thread it runs on is never held long (records are bounded where they
  // enter the agent, cuda_record_bounds.h, but a day-long kernel or gap is
  // still 86,400 seconds):
  //   * a span (a busy or idle piece, stretched by a window's weight) is cut
  //     to its last (time since the previous Finish + grace_ns: the upload
  //     window it is reported in), but never below min_span_cap_ns (the
  //     longest a recording window may stand for, so windowed figures stay
  //     whole) nor above max_span_ns; the part cut off is not counted in any
  //     second (spans_capped, capped_ns);
  //   * at most max_span_seconds (span, second) placements per window, then
  //     spans are left out (spans_dropped);
  //   * at most max_seconds (process, device, second) figures held, then
  //     new ones are left out (seconds_dropped).
  int64_t min_span_cap_ns = 120'000'000'000;  // 2 minutes: CudaRecordBounds::max_window_ns
  int64_t max_span_ns = 600'000'000'000;      // 10 minutes; the first window's cap
  size_t max_span_seconds = 4'000'000;
  size_t max_seconds = 200'000;
  size_t max_sequences = 64;        // distinct kernel sequences per process, device and second
  size_t top_sequences = 3;         // the most frequent of them reported
};

struct ActivityAnalysisStats {
  uint64_t activities = 0;
  uint64_t dropped = 0;            // past max_pending: not classified (its time reads as idle)
  uint64_t late = 0;               // began before the classified time: only the rest counted
  uint64_t sequences_dropped = 0;  // a run of a new sequence past max_sequences
  uint64_t spans_capped = 0;       // cut to the upload window
  uint64_t capped_ns = 0;          // the time cut off them
  uint64_t spans_dropped = 0;      // past max_span_seconds in one window
  uint64_t seconds_dropped = 0;    // figures past max_seconds
  uint64_t readings = 0;
};

// One classified piece of a device's timeline.
struct TimelinePiece {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  bool busy = false;
  GpuWorkCategory category = GpuWorkCategory::kCompute;  // busy
  GpuIdleReason reason = GpuIdleReason::kHostWait;       // idle
};

// Classifies one device's timeline from `from_ns` on: `activities` sorted by
// start (parts before from_ns are ignored); with `trailing_until` > the last
// busy end, the time up to it is host wait. Returns the classified end (the
// last busy end, or trailing_until).
int64_t ClassifyTimeline(const std::vector<AnalyzedActivity>& activities, int64_t from_ns, int64_t trailing_until,
                         int64_t kernel_wait_max_ns, const std::function<void(const TimelinePiece&)>& piece);

class GpuActivityAnalyzer {
 public:
  explicit GpuActivityAnalyzer(const ActivityAnalysisOptions& options)
      : options_(options), span_cap_ns_(options.max_span_ns) {}

  // A connection's recording begins: continuous from `start_ns` (exact), or
  // in windows (CloseWindow).
  void Begin(uint64_t connection, uint32_t pid, bool windowed, int64_t start_ns);
  void Add(uint64_t connection, AnalyzedActivity activity);
  // Windowed: the window recorded [on_start_ns, on_end_ns] (all its records
  // were added) and stands for [on_start_ns, covers_until_ns).
  void CloseWindow(uint64_t connection, int64_t on_start_ns, int64_t on_end_ns, int64_t covers_until_ns);
  // The process disconnected: what it recorded is classified at the next Finish.
  void End(uint64_t connection);
  // Classifies what is due by `now_ns` (everything with `final`) and appends
  // the readings of the seconds that are complete (unix time:
  // monotonic + unix_offset_ns); `comm_of` names a pid.
  void Finish(int64_t now_ns, int64_t unix_offset_ns, bool final,
              const std::function<std::string(uint32_t)>& comm_of, std::vector<MetricReading>* out);

  const ActivityAnalysisStats& stats() const { return stats_; }

 private:
  struct Sequence {
    double count = 0, gpu_ns = 0, gap_ns = 0;
    std::array<std::shared_ptr<const InternedKernelName>, 3> kernels;
  };
  // Kernel name keys in launch order, rotated to start with the smallest.
  using SequenceKey = std::array<uint64_t, 3>;
  struct Figures {
    std::array<double, kGpuWorkCategories> busy_ns{};
    std::array<double, kGpuIdleReasons> idle_ns{};
    double kernels = 0, kernels_launch_known = 0, short_kernels = 0;
    double kernel_ns = 0, launch_call_ns = 0, launch_delay_ns = 0;
    std::map<std::pair<uint8_t, CopyMemory>, std::pair<double, double>> copies;  // ns, bytes
    std::map<SequenceKey, Sequence> sequences;  // runs that began in the second
  };
  struct Device {
    int64_t classified_until = 0;
    std::vector<AnalyzedActivity> pending;
  };
  struct Connection {
    uint32_t pid = 0;
    bool windowed = false;
    bool ended = false;
    int64_t start_ns = 0;
    std::map<uint32_t, Device> devices;
    // Per launching thread: the last small kernels, in launch order.
    std::unordered_map<uint32_t, std::vector<const AnalyzedActivity*>> runs;
    int64_t complete_until = 0;  // every second before it is final
  };

  // Classifies `device`'s pending activities that start before `until` from
  // its classified time (idle up to trailing_until, if later, is host wait);
  // the pieces, launch figures and sequences go in with `weight`, their
  // times mapped by `place`.
  void Classify(Connection& c, uint32_t device_id, Device& d, int64_t until, int64_t trailing_until, double weight,
                const std::function<int64_t(int64_t)>& place);
  void AddSpan(uint32_t pid, uint32_t device, int64_t from_ns, int64_t to_ns, double weight,
               const std::function<void(Figures&, double)>& add);
  // The figures of (pid, device, second); null when max_seconds are held.
  Figures* FiguresAt(uint32_t pid, uint32_t device, int64_t second);
  void CountSequences(Connection& c, uint32_t device_id, const std::vector<AnalyzedActivity>& sorted, double weight,
                      const std::function<int64_t(int64_t)>& second_of);
  void EmitSequences(const Figures& f, const std::vector<std::pair<std::string, std::string>>& base, int64_t second,
                     std::vector<MetricReading>* out);

  ActivityAnalysisOptions options_;
  ActivityAnalysisStats stats_;
  size_t pending_ = 0;
  std::map<uint64_t, Connection> connections_;
  // (pid, device, second) -> the figures placed in that second (unix time).
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, Figures> seconds_;
  int64_t unix_offset_ns_ = 0;
  int64_t last_finish_ns_ = 0;  // monotonic
  int64_t span_cap_ns_;         // AddSpan's cap until the next Finish
  size_t span_seconds_ = 0;     // placements since the last Finish
};

}  // namespace warpscope::gpu
