// Insights: answers with evidence, computed from what the store holds over
// a range (GET /api/v1/insights, docs/design/insights.md).
//
// Each finder is a pure function of series the server reads from the store
// (GPU metrics per process and per GPU, CPU samples and GPU wait per thread,
// over fixed steps); it returns candidates whose evidence ranges the server
// then reads profiles for (the top CPU functions of a starved process, the
// call sites of a thread's waits), and RenderInsightsJson writes the answer,
// sorted by the GPU time each insight could save.
//
//  * gpu_starved_by_cpu: a process's GPU (its own SM utilization from NVML,
//    or the device's when NVML has no per-process sample) is underused while
//    one of its threads is busy on the CPU, steadily or in dips. Works from
//    NVML alone.
//  * sync_heavy: a thread's CUDA synchronisation waits leave its GPU idle
//    (the gpu_wait profile, from the injection library).
//
// Thresholds are InsightOptions (each a query parameter of the API). Every
// kind's severity is one rule of its saving (insight_support.h, Severity).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/profile_store.h"

namespace warpscope::query {

struct InsightOptions {
  // gpu_starved_by_cpu: a step is starved when the process's GPU utilization
  // is below starved_gpu_percent while its busiest thread ran at least
  // starved_thread_cores of a core (Python's GIL makes one thread the usual
  // bottleneck).
  double starved_gpu_percent = 50;
  double starved_thread_cores = 0.7;
  // Flagged steps count when they are at least min_share of the observed
  // steps (steady), or in a dip of consecutive flagged steps lasting
  // min_duration (a periodic stall); an insight needs min_duration of
  // counted steps. For gpu_starved_by_cpu, launch_bound, transfer_bound,
  // throttled and memory_bound.
  double min_share = 0.2;
  int64_t min_duration_ns = 10'000'000'000;
  // sync_heavy: a step counts when the thread waited in CUDA
  // synchronisation with its GPU idle (at most the smaller of its waiting
  // and its process's GPU idle time) for at least sync_share of it; an
  // insight needs one such step and min_wait_ns of waiting in all.
  double sync_share = 0.2;
  int64_t min_wait_ns = 1'000'000'000;
  // launch_bound: a step counts when at least short_kernel_share of the
  // process's kernels on a device ran shorter than their launch call, it
  // launched at least min_launch_rate kernels per second, and the GPU idled
  // waiting for launches (host wait + kernel wait) launch_idle_share of the
  // time.
  double short_kernel_share = 0.5;
  double min_launch_rate = 1000;
  double launch_idle_share = 0.3;
  // fusion_candidate: a sequence of three small kernels from one thread
  // repeated at least min_sequence_rate times per second of the range.
  double min_sequence_rate = 50;
  // throttled: a step counts when the GPU is busy (gpu_utilization at least
  // busy_gpu_percent) and its clocks were held down by power or heat for
  // throttle_share of the readings.
  double busy_gpu_percent = 50;
  double throttle_share = 0.2;
  // transfer_bound: copies alone keep the GPU busy for transfer_share of
  // the observed time while compute runs less than half of it.
  double transfer_share = 0.3;
  // memory_bound: a busy GPU (busy_gpu_percent) whose DRAM bandwidth (GPM)
  // is at least memory_bound_dram_percent of its peak while its tensor
  // cores are active at most memory_bound_tensor_percent of the time.
  double memory_bound_dram_percent = 60;
  double memory_bound_tensor_percent = 20;
  // memory_bound from PC samples (gpu_pc): a kernel holding at least
  // memory_bound_kernel_share of the range's sampled cycles whose warps
  // were stalled on memory at least memory_bound_stall_share of them.
  double memory_bound_stall_share = 0.6;
  double memory_bound_kernel_share = 0.1;
  // Top functions / call sites named in the evidence.
  size_t top = 5;
};

// The series a finder reads, all over the same steps [from_ns + k * step_ns).
struct InsightInputs {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  int64_t step_ns = 0;
  // gpu_process_sm_utilization and gpu_process_memory_used, grouped by
  // node, pid, comm, gpu; gpu_utilization grouped by node, gpu.
  std::vector<storage::MetricSeries> process_sm;
  std::vector<storage::MetricSeries> process_memory;
  std::vector<storage::MetricSeries> device_utilization;
  // CPU samples grouped by node, pid, comm, thread, and their period (1:
  // the series are nanoseconds, from agents with different periods).
  std::vector<storage::Series> cpu_threads;
  int64_t cpu_period_ns = 0;
  // gpu_wait nanoseconds grouped by node, pid, comm, thread.
  std::vector<storage::Series> wait_threads;
  // The agent's analyses of the CUDA activity (agent/collectors/gpu_time/
  // activity_analyzer.h), grouped by node, pid, comm, device and: category
  // (busy), reason (idle), nothing (kernel counts and seconds), copy and
  // memory (copies); sequences by node, pid, comm, sequence.
  std::vector<storage::MetricSeries> busy, idle;
  std::vector<storage::MetricSeries> kernels, kernels_launch_known, short_kernels, kernel_seconds, launch_call_seconds;
  std::vector<storage::MetricSeries> memcpy_seconds, memcpy_bytes;
  std::vector<storage::MetricSeries> sequence_count, sequence_gpu_seconds, sequence_gap_seconds;
  // NVML per GPU (node, gpu): gpu_clocks_throttled by reason too, the SM
  // clocks, and GPM's DRAM bandwidth and tensor activity (percent).
  std::vector<storage::MetricSeries> throttled, sm_clock, sm_clock_max, dram_bandwidth, tensor_activity;
  // The store holds gpu_pc samples (PC sampling inside kernels).
  bool has_gpu_pc = false;
};

struct InsightRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// A named frame of the evidence and its share of the evidence's value.
struct InsightFunction {
  std::string name;
  std::string binary;
  int kind = 0;  // as flame_graph.h: 0 native, 1 kernel, 2 Python, 4 CUDA kernel
  int64_t value = 0;
  double share = 0;
};

struct Insight {
  std::string kind;  // gpu_starved_by_cpu, sync_heavy, launch_bound, fusion_candidate, transfer_bound, throttled
  storage::Labels target;  // node, pid, comm, and gpu or thread
  // What it could save: GPU-seconds idle in the evidence, and that over the
  // range's GPU-seconds of the target.
  double saving_gpu_seconds = 0;
  double saving_share = 0;
  // The one rule, of the saving only (insight_support.h, Severity): high at
  // >= 25 % of the range, medium at >= 10 %, low below or under 1 GPU-s.
  std::string severity;
  std::string confidence;  // high, medium, low
  std::string confidence_reason;
  std::string summary;
  std::string fix;
  std::string fix_reason;
  // Where the problem happened (the starved dips, the waits with the GPU
  // idle; not the busy time around them), merged, longest first (at most 20).
  std::vector<InsightRange> ranges;
  std::vector<std::pair<std::string, double>> numbers;  // named figures of the evidence
  // Per step of the range: the figure that flags a step (starved: the GPU's
  // idle percent while CPU-bound, else 0; sync: the share of the step the
  // thread waited with its GPU idle, estimated).
  std::vector<std::pair<int64_t, double>> sparkline;
  std::vector<InsightFunction> functions;  // top CPU functions, or the waits' call sites
  std::vector<InsightFunction> waited_for;  // sync_heavy: the kernels the waits waited for
  std::vector<InsightFunction> kernels;     // launch_bound, fusion_candidate: the kernels of the evidence
  std::vector<std::string> sequence;        // fusion_candidate: the kernels in launch order
  // The evidence views: a selector and profile type over `ranges`.
  std::string evidence_type;
  std::string evidence_selector;
};

std::vector<Insight> FindGpuStarvedByCpu(const InsightInputs& in, const InsightOptions& options);
std::vector<Insight> FindSyncHeavy(const InsightInputs& in, const InsightOptions& options);
// From the agent's activity analyses (query/gpu_activity_insights.cc):
//  * launch_bound: many kernels shorter than their launch call while the
//    GPU idles waiting for launches;
//  * fusion_candidate: a frequent run of small kernels from one thread;
//  * transfer_bound: copies alone keep the GPU busy, compute little.
// And from NVML: throttled, a busy GPU whose clocks power or heat hold down.
std::vector<Insight> FindLaunchBound(const InsightInputs& in, const InsightOptions& options);
std::vector<Insight> FindFusionCandidates(const InsightInputs& in, const InsightOptions& options);
std::vector<Insight> FindTransferBound(const InsightInputs& in, const InsightOptions& options);
std::vector<Insight> FindThrottled(const InsightInputs& in, const InsightOptions& options);
// And from GPM: memory_bound, a busy GPU near its DRAM bandwidth with idle
// tensor cores (a hint, its saving not estimated: 0).
std::vector<Insight> FindMemoryBound(const InsightInputs& in, const InsightOptions& options);
// gpu_starved_by_cpu: with the injection library's analyses of the process
// over the insight's ranges, how much of that time its GPU waited for the
// host (a number, and a sentence in the confidence reason).
void AddHostWaitEvidence(const InsightInputs& in, Insight* insight);
// gpu_starved_by_cpu insights of processes that also have a launch_bound
// one are dropped: the CPU time is spent launching, and launch_bound says so.
void DropExplainedStarvation(std::vector<Insight>* insights);

// The evidence profiles, once the server read them for an insight's ranges
// (one profile per range): the top functions by self value (starved: where
// the CPU time went; the summary names the first).
void AddTopFunctions(const std::vector<storage::MergedProfile>& profiles, size_t top, Insight* insight);
// gpu_wait: the call sites (the innermost Python frame of each stack, else
// the frame that called the CUDA call) and the kernels waited for (the
// CUDA-kernel leaves); the saving, exact, replaces FindSyncHeavy's estimate
// (and the severity follows): the waiting with no GPU work under it, its
// share that over `range_seconds`.
void AddWaitCallSites(const std::vector<storage::MergedProfile>& profiles, size_t top, double range_seconds,
                      Insight* insight);
// gpu_time: the call sites (as AddWaitCallSites) of the kernels whose names
// start with one of `kernels` (all kernels when empty), and those kernels.
void AddLaunchCallSites(const std::vector<storage::MergedProfile>& profiles, const std::vector<std::string>& kernels,
                        size_t top, Insight* insight);

// {"version":1,"from":ms,"to":ms,"step_ms":...,"options":{...},
//  "insights":[...]} sorted by saving_gpu_seconds, descending.
std::string RenderInsightsJson(std::vector<Insight> insights, const InsightInputs& in, const InsightOptions& options);

}  // namespace warpscope::query
