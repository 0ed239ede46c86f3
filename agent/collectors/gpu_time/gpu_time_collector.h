// GpuTimeCollector: where GPU time goes, for `warpscope-agent run`.
//
// It brings together the three parts of GPU time (docs/design/gpu_time.md):
//   * the socket libwarpscope_cuda.so connects to (CudaSocketServer): kernel,
//     memcpy and memset records, clock calibration pairs and the library's
//     counters, from every CUDA process on the node;
//   * a uprobe on the library's exported probe function
//     (warpscope_cuda_launch_probe), attached once per distinct library file
//     when a process first connects, which captures the launching stack of
//     each sampled launch with the CPU sampler's unwinder maps (shared, not
//     copied) and the correlation id as the probe's first argument;
//   * in processes that map libtorch_python.so, a uprobe and a uretprobe on
//     THPEngine_run_backward, so that the stacks of PyTorch's autograd
//     threads are grafted under the Python caller of backward()
//     (autograd_graft.h);
//   * LaunchJoiner, which joins the two by (pid, correlation id) and spreads
//     the time of unsampled launches, and CuptiClock per connection, which
//     puts CUPTI's timestamps on the host clock.
// Each upload window it adds a gpu_time/nanoseconds profile (stacks from the
// application's code to a CUDA-kernel leaf, labels device, stream, graph_id),
// a gpu_pc/cycles profile (PC samples inside kernels, under the kernels'
// launch stacks; gpu_pc_profile.h), a gpu_wait/nanoseconds profile (host threads blocked in CUDA
// synchronisation calls, under the calls' stacks, with the kernels and copies
// the GPU ran meanwhile as the call's children; WaitJoiner) and the window's
// activity trace (thinned to a per-process, per-second budget; coverage rows
// say how much was kept).
//
// Threading: the socket server's thread only posts decoded events into a
// bounded inbox (PostFromSocketThread); the probes are attached on the
// ProbeAttacher's thread (probe_attacher.h: opening a user's library file
// can wait); everything else runs on the sampling thread, which owns this
// object, the session's Symbolizer and PythonProcesses it borrows, and the
// uprobe collector (shared with the attacher's thread for attach and detach).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/collectors/gpu_time/activity_analyzer.h"
#include "agent/collectors/gpu_time/autograd_graft.h"
#include "agent/collectors/gpu_time/gpu_pc_profile.h"
#include "agent/collectors/gpu_time/probe_attacher.h"
#include "agent/collectors/gpu_time/uprobe_stack_collector.h"
#include "model/gpu_trace.h"
#include "model/profile.h"
#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"
#include "agent/pipeline/collector.h"
#include "agent/collectors/gpu_time/launch_stack_table.h"
#include "agent/collectors/gpu_time/recording_windows.h"
#include "agent/collectors/gpu_time/cupti_clock.h"
#include "agent/collectors/gpu_time/launch_joiner.h"
#include "agent/collectors/gpu_time/wait_joiner.h"
#include "agent/process/proc_fs.h"
#include "agent/symbolize/symbolizer.h"
#include "agent/unwind/python/python_processes.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/status.h"

namespace warpscope::gpu {

inline constexpr char kGpuTimeTypeName[] = "gpu_time";
inline constexpr char kGpuTimeUnit[] = "nanoseconds";
inline constexpr char kGpuWaitTypeName[] = "gpu_wait";

struct GpuTimeOptions {
  CudaSocketServerOptions socket;  // path, and the CONFIG every library gets (mode, rates, duty)
  LaunchJoinerOptions join;
  // The per-process analyses of the activity (its grace is join.grace_ns).
  ActivityAnalysisOptions analysis;
  // Activities per process and second kept in the trace (the first ones of
  // the second); 0 sends no trace. GPU time is counted for every kernel regardless.
  uint32_t trace_per_second = 20'000;
  // All processes together: ~120 bytes each here and ~35 in the batch, so a
  // window's batch stays well under the server's 64 MiB decompressed limit.
  size_t max_trace_per_window = 500'000;
  size_t max_inbox_records = 4'000'000;     // records waiting for the sampling thread
  size_t max_stacks = 100'000;              // distinct launch stacks remembered
  // Every kernel name the agent holds, from all connections together
  // (KernelNameTable); names past it are refused and counted.
  size_t kernel_name_bytes = kDefaultKernelNameBytes;
  // Distinct library files probed at once. Any local user can make a file
  // named libwarpscope_cuda.so that exports the probe and connect from a
  // process mapping it; past this bound such files are not probed (their
  // launch stacks are missing) and counted.
  size_t max_probe_files = 16;
  // An attach (open the file, register the probes) on the attacher's thread
  // that runs longer than this is given up (probe_attacher.h).
  std::chrono::milliseconds probe_attach_timeout{5000};
  // PC sampling (socket.config's WS_CUDA_CONFIG_PC_SAMPLING): the cubins the
  // libraries send, held for all processes together, and how they are read.
  size_t max_cubin_bytes = 512u << 20;
  CubinSymbolsOptions cubin_symbols;
};

// The CPU profiling session's parts the collector shares (sampling thread).
struct GpuTimeSessionParts {
  Symbolizer* symbolizer = nullptr;
  PythonProcesses* python = nullptr;  // may be null
  UnwindMapFds unwind_maps;
  // Reads a process's maps again and describes it to the symbolizer and the
  // unwinder now (a CUDA process connecting may not have been sampled yet,
  // or only before it loaded the injection library and CUPTI).
  std::function<void(uint32_t pid)> describe;
  ProcFs procfs;  // process names and maps of connecting processes
};

struct GpuTimeStats {
  uint64_t inbox_dropped_records = 0;  // the sampling thread fell behind: records lost (counted)
  uint64_t kernels_without_clock = 0;  // records before any calibration pair (not expected)
  uint64_t trace_activities = 0;       // kept in the trace
  uint64_t trace_thinned = 0;          // left out by the per-second budget or the window cap
  uint64_t trace_kernels_without_launch = 0;  // kernel records without their launch call's time and thread
  uint64_t probe_attach_failures = 0;
  // cuda_profiling_paused_seconds readings past the bound between uploads.
  uint64_t paused_readings_dropped = 0;
  uint64_t probe_files_attached = 0;  // attaches, since the start
  uint64_t probe_files_detached = 0;  // no connected process mapped the file any more
  uint64_t probe_files_refused = 0;   // not probed: max_probe_files were probed already
  // libtorch_python.so files whose THPEngine_run_backward is probed (entry
  // and return), since the start; failures: the symbol missing, the bound.
  uint64_t autograd_probe_files_attached = 0;
  uint64_t autograd_probe_failures = 0;
  uint64_t probe_files_unsafe = 0;      // not the mapped regular file, or on FUSE: never opened
  uint64_t probe_attach_timeouts = 0;   // attaches given up (their thread abandoned)
  uint64_t probe_attaches_dropped = 0;  // the attach queue full, or attaching stopped for stuck threads
  uint64_t launch_stacks_expired = 0;  // a joined launch whose stack was already forgotten
  // GPU time whose kernel's name was evicted (its process gone, the name
  // budget needed) before the window that joined it: shown as such.
  uint64_t kernel_names_lost = 0;
  uint64_t scaled_processes = 0;       // processes recorded in windows now (adaptive, duty)
  uint64_t recording_windows = 0;      // windows closed, over the processes connected now
  uint64_t window_overflow = 0;        // kernels passed on unweighted: a window held too many
  uint64_t recorded_share_ppm = 1'000'000;  // lowest share of time recorded, over processes
  uint64_t estimate_error_ppm = 0;     // highest relative standard error of a scaled estimate
  uint64_t window_attach_ns_max = 0;   // longest attach (subscribe + enable) a library reported
  uint64_t window_detach_ns_max = 0;   // longest cuptiFinalize (on an application thread)
  uint64_t kernels_before_window = 0;  // records the libraries left out: launched outside their window
  // The libraries' own counters, summed over connections (latest STATS each).
  uint64_t lib_cupti_dropped_records = 0;
  uint64_t lib_buffers_denied = 0;
  uint64_t lib_wire_records_dropped = 0;
  uint64_t lib_launch_records_dropped = 0;
  uint64_t lib_waits_seen = 0;
  uint64_t lib_waits_sampled = 0;
  uint64_t lib_wait_records_dropped = 0;
  uint64_t waits_window_overflow = 0;  // windowed waits passed on unweighted: too many waiting
};

class GpuTimeCollector : public Collector {
 public:
  // Loads the uprobe program on the session's unwinder maps and starts the
  // socket server. Errors: BPF load failures, the socket path unusable.
  static StatusOr<std::unique_ptr<GpuTimeCollector>> Open(const GpuTimeOptions& options, GpuTimeSessionParts parts);
  ~GpuTimeCollector() override;
  GpuTimeCollector(const GpuTimeCollector&) = delete;
  GpuTimeCollector& operator=(const GpuTimeCollector&) = delete;

  // Sampling thread, often (every loop of `run`, <= 100 ms apart): takes the
  // captured launch stacks and the socket's events.
  void Poll();
  // Sampling thread, at the end of an upload window: adds the GPU time joined
  // so far to `builder` (a gpu_time profile), the window's PC samples to
  // `pc_builder` (a gpu_pc profile; null: they, and the GPU time's split
  // of their kernels, wait for the next call with one) and the window's
  // trace to `trace`. `final`: everything still
  // waiting for its grace period too.
  void FinishWindow(ProfileBuilder* builder, GpuTrace* trace, bool final, ProfileBuilder* pc_builder = nullptr);
  // After FinishWindow: adds the waits judged by now to `builder` (a
  // gpu_wait profile). `final`: every wait still held too.
  void FinishWaits(ProfileBuilder* builder, bool final);
  // The collector's counters, into the window's (CPU) profile.
  void AddCounters(std::vector<ProfileCounter>* counters) const;

  // Collector: the socket listens from Open on; a window gets the gpu_time
  // profile, the trace and the counters; Stop closes the socket (the
  // libraries go dormant).
  std::string_view name() const override { return "gpu_time"; }
  Status Start() override { return Status::Ok(); }
  Status Poll(Clock::time_point until) override {
    Poll();
    return Status::Ok();
  }
  Status FinishWindow(Window* window) override;
  void Stop() override;

  const LaunchJoinerStats& join_stats() const { return joiner_.stats(); }
  const GpuWaitStats& wait_stats() const { return waits_.stats(); }
  const GpuTimeStats& stats() const { return stats_; }
  const std::string& socket_path() const { return server_->socket_path(); }

 private:
  struct Connection {
    uint64_t id = 0;
    uint32_t pid = 0;
    uint32_t uid = 0;  // SO_PEERCRED: the cubin budget's share is per user
    CuptiClock clock;
    ws_cuda_stats stats_last{};
    std::unique_ptr<RecordingWindows> windows;  // windowed recording only
    // Windowed recording: waits of the open window, until its WINDOW message
    // gives their weight.
    std::vector<ws_cuda_wait> open_waits;
  };
  // The libraries' counters summed over connections.
  struct LibraryTotals {
    uint64_t cupti_dropped_records = 0, buffers_denied = 0, wire_records_dropped = 0, launch_records_dropped = 0;
    uint64_t waits_seen = 0, waits_sampled = 0, wait_records_dropped = 0;
    uint64_t pc_samples = 0, pc_samples_total = 0, pc_samples_dropped = 0, pc_records_dropped = 0;
    uint64_t pc_hardware_buffer_full = 0, cubins_dropped = 0;
    uint64_t pc_refused = 0;  // processes whose driver or GPU refused PC sampling
    // CUPTI shared with the application's own clients (cupti_session.h).
    uint64_t cupti_yields = 0, cupti_taken = 0, cupti_aside_ns = 0, graph_launches = 0;
    void Add(const ws_cuda_stats& s) {
      cupti_dropped_records += s.cupti_dropped_records;
      buffers_denied += s.buffers_denied;
      wire_records_dropped += s.wire_records_dropped;
      launch_records_dropped += s.launch_records_dropped;
      waits_seen += s.waits_seen;
      waits_sampled += s.waits_sampled;
      wait_records_dropped += s.wait_records_dropped;
      pc_samples += s.pc_samples;
      pc_samples_total += s.pc_samples_total;
      pc_samples_dropped += s.pc_samples_dropped;
      pc_records_dropped += s.pc_records_dropped;
      pc_hardware_buffer_full += s.pc_hardware_buffer_full;
      cubins_dropped += s.cubins_dropped;
      pc_refused += s.pc_sampling_state >= WS_CUDA_PC_SAMPLING_NO_PERMISSION;
      cupti_yields += s.cupti_yields;
      cupti_taken += s.cupti_taken;
      cupti_aside_ns += s.cupti_aside_ns;
      graph_launches += s.graph_launches;
    }
  };
  struct Coverage {
    uint64_t recorded = 0;
    uint64_t sent = 0;
    int64_t complete_until = 0;  // 0: nothing dropped
  };
  class Inbox;

  GpuTimeCollector(const GpuTimeOptions& options, GpuTimeSessionParts parts);
  void OnEvent(CudaProcessEvent& event, int64_t now_ns, int64_t unix_offset_ns);
  void OnConnected(const CudaProcessEvent& event, int64_t now_ns);
  void OnKernels(Connection& c, const std::vector<CudaKernel>& kernels, int64_t now_ns, int64_t unix_offset_ns);
  void OnMemops(Connection& c, const std::vector<ws_cuda_memop>& memops, int64_t now_ns, int64_t unix_offset_ns);
  void OnWaits(Connection& c, const std::vector<ws_cuda_wait>& waits, int64_t now_ns);
  // To the wait joiner, with the weight of the window they were recorded in.
  void PassWait(Connection& c, const ws_cuda_wait& w, double weight, int64_t now_ns);
  // Kernels of windows whose weight is settled go to the joiner.
  void PassSettled(Connection& c, int64_t now_ns, bool ended);
  void OnLaunchStack(const ws_uprobe_stack_event& event, int64_t now_ns);
  // The probe attacher's counters into stats_.
  void CopyProbeStats();
  void OnBackwardEntry(const ws_uprobe_stack_event& event, int64_t now_ns);
  // `key`, or the key of its stack grafted under the backward call it ran
  // for when it is an autograd thread's.
  uint64_t GraftAutograd(const ws_uprobe_stack_event& event, uint64_t key, int64_t now_ns);
  // Keeps `a` in the trace unless its process's second is over budget.
  void Trace(GpuActivityRecord&& a);
  // The name of kernel `key` (an InternedKernelName key), held while the
  // caller copies it; "[kernel name evicted]" once it is gone.
  std::shared_ptr<const KernelName> KernelNameOf(uint64_t key);
  void PruneNameKeys();  // forgets keys whose names are gone
  const std::vector<uint64_t>& StackLocations(uint64_t stack_key, ProfileBuilder* builder);
  // pid, tid, and the process's and thread's names where known.
  SampleLabels ThreadLabels(uint32_t pid, uint32_t tid) const;

  const GpuTimeOptions options_;
  GpuTimeSessionParts parts_;
  std::unique_ptr<Inbox> inbox_;
  // Shared with the probe attacher's thread (attach and detach from any thread).
  std::shared_ptr<UprobeStackCollector> probe_;
  // The launch and autograd probes of the connected processes' library files.
  std::unique_ptr<ProbeAttacher> probes_;
  std::unique_ptr<CudaSocketServer> server_;  // last: its thread posts into inbox_
  LaunchJoiner joiner_;
  WaitJoiner waits_;
  GpuActivityAnalyzer analyzer_;
  LaunchStackTable stacks_;
  GpuTimeStats stats_;
  std::map<uint64_t, Connection> connections_;  // by connection id
  LibraryTotals ended_libraries_;              // counters of the connections that ended
  AutogradCalls autograd_;
  struct ProcessName {
    std::string comm;
    int64_t gone_ns = 0;  // when its last connection closed; 0 while connected
  };
  std::map<uint32_t, ProcessName> comms_;                   // pid -> process name
  // Seconds a process's library spent aside for another CUPTI client (from
  // its STATS), as cuda_profiling_paused_seconds readings for the next window.
  std::vector<MetricReading> paused_readings_;
  size_t windowed_kernels_ = 0;  // waiting in every connection's RecordingWindows
  std::map<std::pair<uint32_t, uint32_t>, std::string> thread_names_;  // (pid, tid) -> name
  // Every kernel name, shared with the socket server (which interns them).
  std::shared_ptr<KernelNameTable> kernel_names_;
  // Kernel keys the joiner may hand back, to their names: not owned (the
  // names live in their connections' dictionaries, or warm in the table, or
  // are evicted: kernel_names_lost). Expired ones are pruned every window,
  // and sooner when the map doubled.
  std::unordered_map<uint64_t, std::weak_ptr<const InternedKernelName>> name_of_key_;
  static constexpr size_t kMinPruneNamesAt = 1 << 16;
  size_t prune_names_at_ = kMinPruneNamesAt;  // name_of_key_'s size that prunes it
  std::vector<KernelExecution> settled_;  // reused
  GpuTrace trace_;
  std::map<std::pair<uint32_t, int64_t>, Coverage> coverage_;  // (pid, Unix second) this window
  std::unordered_map<uint64_t, std::vector<uint64_t>> stack_locations_;  // this window's builder
  std::vector<CudaProcessEvent> events_;  // reused
  GpuPcAggregator pc_;
  std::unique_ptr<CubinLibrary> cubins_;
  std::vector<std::pair<uint32_t, int64_t>> ended_pids_;  // (pid, when): their PC splits go later
};

}  // namespace warpscope::gpu
