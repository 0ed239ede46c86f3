#include "query/insights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <tuple>

#include "query/frame_label.h"
#include "query/insight_support.h"

namespace warpscope::query {
namespace {

using nlohmann::json;
using storage::Labels;
using namespace insight_support;

}  // namespace

std::vector<Insight> FindGpuStarvedByCpu(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  using Gpu = std::tuple<std::string, std::string>;            // node, gpu
  using ProcessGpu = std::tuple<std::string, std::string, std::string>;  // node, pid, gpu
  using Process = std::tuple<std::string, std::string>;        // node, pid
  // The device's utilization per step, and each GPU process's own.
  std::map<Gpu, std::vector<double>> device;
  for (const storage::MetricSeries& s : in.device_utilization) {
    auto& v = device[{LabelOf(s.labels, "node"), LabelOf(s.labels, "gpu")}];
    v.assign(steps, NAN);
    for (const storage::MetricStep& p : s.points) {
      if (p.time_ns >= in.from_ns && p.time_ns < in.to_ns) v[StepIndex(in, p.time_ns)] = p.sum / p.count;
    }
  }
  struct Use {
    std::string comm;
    std::vector<double> own;   // its SM utilization, NAN where no sample
    std::vector<bool> present;  // it held memory on the GPU
  };
  std::map<ProcessGpu, Use> uses;
  auto use_of = [&](const Labels& l) -> Use& {
    Use& u = uses[{LabelOf(l, "node"), LabelOf(l, "pid"), LabelOf(l, "gpu")}];
    if (u.own.empty()) {
      u.own.assign(steps, NAN);
      u.present.assign(steps, false);
    }
    if (u.comm.empty()) u.comm = LabelOf(l, "comm");
    return u;
  };
  for (const storage::MetricSeries& s : in.process_sm) {
    Use& u = use_of(s.labels);
    for (const storage::MetricStep& p : s.points) {
      if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns) continue;
      u.own[StepIndex(in, p.time_ns)] = p.sum / p.count;
      u.present[StepIndex(in, p.time_ns)] = true;
    }
  }
  for (const storage::MetricSeries& s : in.process_memory) {
    Use& u = use_of(s.labels);
    for (const storage::MetricStep& p : s.points) {
      if (p.time_ns >= in.from_ns && p.time_ns < in.to_ns) u.present[StepIndex(in, p.time_ns)] = true;
    }
  }
  // Per process and step: its busiest thread's cores, that thread, and all its threads' cores.
  struct Cpu {
    std::vector<double> busiest, total;
    std::vector<std::string> thread;
  };
  std::map<Process, Cpu> cpu;
  for (const storage::Series& s : in.cpu_threads) {
    Cpu& c = cpu[{LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")}];
    if (c.busiest.empty()) {
      c.busiest.assign(steps, 0);
      c.total.assign(steps, 0);
      c.thread.assign(steps, "");
    }
    for (const storage::SeriesPoint& p : s.points) {
      if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns) continue;
      const size_t i = StepIndex(in, p.time_ns);
      const double cores = static_cast<double>(p.value) * static_cast<double>(in.cpu_period_ns) /
                           static_cast<double>(StepLength(in, i));
      c.total[i] += cores;
      if (cores > c.busiest[i]) {
        c.busiest[i] = cores;
        c.thread[i] = LabelOf(s.labels, "thread");
      }
    }
  }

  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  for (const auto& [key, use] : uses) {
    const auto& [node, pid, gpu] = key;
    auto c = cpu.find({node, pid});
    const Cpu* threads_cpu = c != cpu.end() ? &c->second : nullptr;
    auto d = device.find({node, gpu});
    // Per step: the GPU's utilization for the process (NAN: not observed)
    // and whether it was starved.
    size_t observed = 0;
    std::vector<double> util(steps, NAN);
    std::vector<bool> own(steps, false), starved(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    for (size_t i = 0; i < steps; ++i) {
      util[i] = use.own[i];
      own[i] = !std::isnan(util[i]);
      if (!own[i] && use.present[i] && d != device.end()) util[i] = d->second[i];
      const int64_t t = in.from_ns + static_cast<int64_t>(i) * in.step_ns;
      if (std::isnan(util[i])) {
        sparkline.emplace_back(t, 0);
        continue;
      }
      ++observed;
      const double busiest = threads_cpu != nullptr ? threads_cpu->busiest[i] : 0;
      starved[i] = util[i] < o.starved_gpu_percent && busiest >= o.starved_thread_cores;
      sparkline.emplace_back(t, starved[i] ? 100 - util[i] : 0);
    }
    // Steady or in dips: a stall of 25 s every few minutes is a small share
    // of the steps but can idle the GPU longer than anything else.
    double starved_s = 0;
    const std::vector<bool> flagged = CountedSteps(in, o, starved, observed, &starved_s);
    size_t counted = 0, own_samples = 0;
    double idle_gpu_s = 0, util_sum = 0, busiest_sum = 0, total_sum = 0, observed_s = 0;
    std::map<std::string, size_t> threads;
    for (size_t i = 0; i < steps; ++i) {
      const double step_s = static_cast<double>(StepLength(in, i)) / kNsPerSecond;
      if (!std::isnan(util[i])) observed_s += step_s;
      if (!flagged[i]) continue;
      ++counted;
      own_samples += own[i] ? 1 : 0;
      idle_gpu_s += (100 - std::max(0.0, util[i])) / 100 * step_s;
      util_sum += util[i];
      if (threads_cpu == nullptr) continue;  // starved_thread_cores 0: a starved step without CPU samples
      busiest_sum += threads_cpu->busiest[i];
      total_sum += threads_cpu->total[i];
      ++threads[threads_cpu->thread[i]];
    }
    if (counted == 0) continue;
    size_t stretches = 0;
    for (size_t i = 0; i < steps; ++i) stretches += flagged[i] && (i == 0 || !flagged[i - 1]) ? 1 : 0;
    const std::string thread =
        threads.empty() ? "" : std::max_element(threads.begin(), threads.end(), [](const auto& a, const auto& b) {
                                 return a.second < b.second;
                               })->first;
    Insight x;
    x.kind = "gpu_starved_by_cpu";
    x.target = {{"comm", use.comm}, {"gpu", gpu}, {"node", node}, {"pid", pid}};
    SetSaving(idle_gpu_s, range_s, &x);
    x.ranges = Ranges(in, flagged);
    x.confidence = Confidence(counted);
    x.confidence_reason = std::to_string(counted) + " of " + std::to_string(observed) + " observed steps of " +
                          Seconds(static_cast<double>(in.step_ns) / kNsPerSecond) + " were starved" +
                          (stretches > 1 ? ", in " + std::to_string(stretches) + " stretches" : "") +
                          "; " + std::to_string(own_samples) +
                          " of them had the process's own SM utilization from NVML" +
                          (own_samples < counted ? ", the others the GPU's" : "");
    const double util_avg = util_sum / static_cast<double>(counted);
    const double busiest_avg = busiest_sum / static_cast<double>(counted);
    x.summary = ProcessName(use.comm, pid) + " kept GPU " + gpu + " at " +
                Percent(util_avg / 100) + " while its thread " + (thread.empty() ? "" : "'" + thread + "' ") + "was " +
                Percent(busiest_avg) + " busy on the CPU, for " + Seconds(starved_s) + " of " + Seconds(observed_s) +
                (stretches > 1 ? " (" + std::to_string(stretches) + " stretches)" : "") +
                ": the GPU waits for the CPU.";
    x.fix = "Take the CPU work off the thread that feeds the GPU: more DataLoader workers (num_workers), pinned memory "
            "and prefetching, preprocessing on the GPU, or a compiled step (torch.compile, CUDA graphs) if the time "
            "is in Python launching kernels.";
    x.fix_reason = "The GPU idles because its next work is not ready: a faster GPU path would not help until the CPU "
                   "keeps up. The top functions below are where the busy thread spent its time.";
    x.numbers = {{"gpu_utilization_percent", util_avg},
                 {"busiest_thread_cores", busiest_avg},
                 {"process_cores", total_sum / static_cast<double>(counted)},
                 {"starved_seconds", starved_s},
                 {"observed_seconds", observed_s},
                 {"idle_gpu_seconds", idle_gpu_s}};
    x.sparkline = std::move(sparkline);
    x.evidence_type = "cpu";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node", "pid"}));
    out.push_back(std::move(x));
  }
  return out;
}

namespace {

using Process = std::pair<std::string, std::string>;  // node, pid

// Per process and step, from the agent's analyses of its CUDA timeline: the
// seconds its GPUs were observed and the seconds of that they idled.
struct GpuIdle {
  std::vector<double> observed, idle;
};

std::map<Process, GpuIdle> ProcessGpuIdle(const InsightInputs& in) {
  const size_t steps = StepCount(in);
  std::map<Process, GpuIdle> out;
  auto add = [&](const std::vector<storage::MetricSeries>& series, bool idle) {
    for (const storage::MetricSeries& s : series) {
      GpuIdle& g = out[{LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")}];
      if (g.observed.empty()) {
        g.observed.assign(steps, 0);
        g.idle.assign(steps, 0);
      }
      for (const storage::MetricStep& p : s.points) {
        if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns) continue;
        g.observed[StepIndex(in, p.time_ns)] += p.sum;
        if (idle) g.idle[StepIndex(in, p.time_ns)] += p.sum;
      }
    }
  };
  add(in.busy, false);
  add(in.idle, true);
  return out;
}

double NumberOf(const Insight& x, const std::string& name) {
  for (const auto& [k, v] : x.numbers) {
    if (k == name) return v;
  }
  return 0;
}

// sync_heavy's summary, with the waiting under which the GPU had no work:
// estimated per step by FindSyncHeavy, exact once AddWaitCallSites read the
// waits' profile.
std::string SyncSummary(const Insight& x, double idle_s, bool exact) {
  const std::string thread = LabelOf(x.target, "thread");
  const double wait_s = NumberOf(x, "wait_seconds");
  return (thread.empty() ? "A thread" : "Thread '" + thread + "'") + " of " +
         ProcessName(LabelOf(x.target, "comm"), LabelOf(x.target, "pid")) + " spent " +
         Percent(NumberOf(x, "wait_share")) + " of the time (" + Seconds(wait_s) +
         ") blocked in CUDA synchronisation; its GPU had no work for " + (exact ? "" : "about ") + Seconds(idle_s) +
         " of that waiting" + (wait_s > 0 ? " (" + Percent(idle_s / wait_s) + ")" : "") +
         ": while it waits it launches nothing.";
}

}  // namespace

std::vector<Insight> FindSyncHeavy(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  const std::map<Process, GpuIdle> gpu_idle = ProcessGpuIdle(in);
  for (const storage::Series& s : in.wait_threads) {
    int64_t total = 0;
    std::vector<double> wait_s(steps, 0);
    for (const storage::SeriesPoint& p : s.points) {
      if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns) continue;
      total += p.value;
      wait_s[StepIndex(in, p.time_ns)] += static_cast<double>(p.value) / kNsPerSecond;
    }
    if (total < o.min_wait_ns) continue;
    // What a wait costs is the GPU idle under it: a thread that waits while
    // its GPU runs the work it waits for loses the GPU nothing. Per step that
    // is at most the smaller of the waiting and the process's GPU idle time
    // (from its CUDA timeline); without a timeline for the step, the
    // waiting. AddWaitCallSites replaces the estimate with the exact figure.
    auto g = gpu_idle.find({LabelOf(s.labels, "node"), LabelOf(s.labels, "pid")});
    std::vector<double> idle_wait_s(steps, 0);
    std::vector<bool> flagged(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    double estimate_s = 0;
    for (size_t i = 0; i < steps; ++i) {
      const double step_s = static_cast<double>(StepLength(in, i)) / kNsPerSecond;
      idle_wait_s[i] = wait_s[i];
      if (g != gpu_idle.end() && g->second.observed[i] > 0) {
        idle_wait_s[i] = std::min(wait_s[i], g->second.idle[i] / g->second.observed[i] * step_s);
      }
      estimate_s += idle_wait_s[i];
      flagged[i] = idle_wait_s[i] >= o.sync_share * step_s;
      sparkline.emplace_back(in.from_ns + static_cast<int64_t>(i) * in.step_ns, std::min(1.0, idle_wait_s[i] / step_s));
    }
    // Every such step counts, however few: a burst of waits is a finding of
    // its own, and the saving (not the count of steps) sets its severity.
    const std::vector<bool>& counted = flagged;
    const size_t waiting_steps = static_cast<size_t>(std::count(counted.begin(), counted.end(), true));
    if (waiting_steps == 0) continue;
    const double share = static_cast<double>(total) / kNsPerSecond / range_s;
    Insight x;
    x.kind = "sync_heavy";
    x.target = Pick(s.labels, {"comm", "node", "pid", "thread"});
    SetSaving(estimate_s, range_s, &x);
    x.confidence = Confidence(waiting_steps);
    x.confidence_reason = std::to_string(waiting_steps) + " of " + std::to_string(steps) + " steps of " +
                          Seconds(static_cast<double>(in.step_ns) / kNsPerSecond) +
                          " had the thread waiting with its GPU idle for " + Percent(o.sync_share) + " or more";
    x.numbers = {{"wait_seconds", static_cast<double>(total) / kNsPerSecond},
                 {"wait_share", share},
                 {"idle_wait_estimate_seconds", estimate_s}};
    x.summary = SyncSummary(x, estimate_s, /*exact=*/false);
    x.fix = "Synchronise less often: keep values on the GPU (accumulate the loss as a tensor and call .item() every N "
            "steps), copy to pinned memory with non_blocking=True, and use CUDA events instead of "
            "torch.cuda.synchronize() where only timing is needed.";
    x.fix_reason = "Each wait empties the GPU's queue: after it returns, the GPU idles until the thread launches "
                   "again. The call sites below are where the waits come from.";
    x.ranges = Ranges(in, counted);
    x.sparkline = std::move(sparkline);
    x.evidence_type = "gpu_wait";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node", "pid", "thread"}));
    out.push_back(std::move(x));
  }
  return out;
}

namespace {

// Adds `value` under (name, binary, kind) in `into`.
void Count(std::map<std::tuple<std::string, std::string, int>, int64_t>* into, const FrameLabel& label,
           int64_t value) {
  (*into)[{label.name, label.binary, label.JsonKind()}] += value;
}

std::vector<InsightFunction> Top(const std::map<std::tuple<std::string, std::string, int>, int64_t>& by, int64_t total,
                                 size_t top) {
  std::vector<InsightFunction> out;
  for (const auto& [key, value] : by) {
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), value,
                   total > 0 ? static_cast<double>(value) / static_cast<double>(total) : 0});
  }
  std::sort(out.begin(), out.end(), [](const InsightFunction& a, const InsightFunction& b) {
    return std::tie(b.value, a.name, a.binary) < std::tie(a.value, b.name, b.binary);
  });
  if (out.size() > top) out.resize(top);
  return out;
}

// CUDA's libraries and the profiler's own, whose frames are not a call site.
bool IsCudaLibrary(const std::string& binary) {
  for (const char* prefix : {"libcuda", "libcudart", "libcupti", "libnvidia", "libcublas", "libcudnn", "libnccl",
                             "libwarpscope_cuda", "libws_fake_cupti"}) {
    if (binary.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

void AddTopFunctions(const std::vector<storage::MergedProfile>& profiles, size_t top, Insight* insight) {
  std::map<std::tuple<std::string, std::string, int>, int64_t> self;
  int64_t total = 0;
  for (const storage::MergedProfile& profile : profiles) {
    total += profile.total;
    for (const storage::StackValue& s : profile.stacks) {
      if (s.frames.empty()) continue;
      Count(&self, LabelFrame(profile.frame(s.frames.front())), s.value);
    }
  }
  insight->functions = Top(self, total, top);
  // The card names the function that feeds the GPU too slowly, not only the thread.
  if (insight->kind == "gpu_starved_by_cpu" && !insight->functions.empty()) {
    const InsightFunction& f = insight->functions.front();
    insight->summary += " Its top function then: " + f.name + " (" + Percent(f.share) + " of the process's CPU time).";
  }
}

namespace {

// The call site of a stack (frames from `first` on): its innermost Python
// frame; else the innermost frame outside the CUDA libraries (the
// application's code that made the call).
std::optional<FrameLabel> CallSite(const storage::MergedProfile& profile, const storage::StackValue& s, size_t first) {
  std::optional<FrameLabel> native;
  for (size_t i = first; i < s.frames.size(); ++i) {
    FrameLabel l = LabelFrame(profile.frame(s.frames[i]));
    if (l.kind == FrameKind::kPython) return l;
    if (!native && !IsCudaLibrary(l.binary)) native = std::move(l);
  }
  return native;
}

}  // namespace

void AddWaitCallSites(const std::vector<storage::MergedProfile>& profiles, size_t top, double range_seconds,
                      Insight* insight) {
  std::map<std::tuple<std::string, std::string, int>, int64_t> sites, kernels;
  int64_t uncovered = 0, total = 0;
  for (const storage::MergedProfile& profile : profiles) {
    total += profile.total;
    for (const storage::StackValue& s : profile.stacks) {
      if (s.frames.empty()) continue;
      size_t first = 0;
      const FrameLabel leaf = LabelFrame(profile.frame(s.frames.front()));
      if (leaf.kind == FrameKind::kCudaKernel) {
        Count(&kernels, leaf, s.value);
        first = 1;
      } else {
        uncovered += s.value;
      }
      if (std::optional<FrameLabel> site = CallSite(profile, s, first)) Count(&sites, *site, s.value);
    }
  }
  insight->functions = Top(sites, total, top);
  insight->waited_for = Top(kernels, total, top);
  // The exact saving: the waiting under which the GPU ran nothing of the
  // process's on what was waited on (the estimate's replacement).
  SetSaving(static_cast<double>(uncovered) / kNsPerSecond, range_seconds, insight);
  insight->numbers.emplace_back("wait_without_gpu_work_seconds", insight->saving_gpu_seconds);
  if (insight->kind == "sync_heavy") insight->summary = SyncSummary(*insight, insight->saving_gpu_seconds, /*exact=*/true);
}

void AddLaunchCallSites(const std::vector<storage::MergedProfile>& profiles, const std::vector<std::string>& kernels,
                        size_t top, Insight* insight) {
  std::map<std::tuple<std::string, std::string, int>, int64_t> sites, leaves;
  int64_t total = 0;
  for (const storage::MergedProfile& profile : profiles) {
    for (const storage::StackValue& s : profile.stacks) {
      if (s.frames.empty()) continue;
      const FrameLabel leaf = LabelFrame(profile.frame(s.frames.front()));
      if (leaf.kind != FrameKind::kCudaKernel) continue;
      std::string name = leaf.name;
      if (name.rfind("void ", 0) == 0) name.erase(0, 5);
      const bool wanted = kernels.empty() || std::any_of(kernels.begin(), kernels.end(), [&](const std::string& k) {
                            return name.rfind(k, 0) == 0;
                          });
      if (!wanted) continue;
      total += s.value;
      Count(&leaves, leaf, s.value);
      if (std::optional<FrameLabel> site = CallSite(profile, s, 1)) Count(&sites, *site, s.value);
    }
  }
  insight->functions = Top(sites, total, top);
  insight->kernels = Top(leaves, total, top);
}

std::string RenderInsightsJson(std::vector<Insight> insights, const InsightInputs& in, const InsightOptions& o) {
  std::stable_sort(insights.begin(), insights.end(), [](const Insight& a, const Insight& b) {
    return a.saving_gpu_seconds != b.saving_gpu_seconds ? a.saving_gpu_seconds > b.saving_gpu_seconds
                                                        : a.saving_share > b.saving_share;
  });
  constexpr int64_t kMs = 1'000'000;
  json list = json::array();
  for (const Insight& x : insights) {
    json target = json::object();
    for (const auto& [k, v] : x.target) target[k] = v;
    json ranges = json::array();
    for (const InsightRange& r : x.ranges) ranges.push_back({{"from", r.from_ns / kMs}, {"to", r.to_ns / kMs}});
    json numbers = json::object();
    for (const auto& [k, v] : x.numbers) numbers[k] = v;
    json spark = json::array();
    for (const auto& [t, v] : x.sparkline) spark.push_back({t / kMs, v});
    auto functions = [](const std::vector<InsightFunction>& fs) {
      json a = json::array();
      for (const InsightFunction& f : fs) {
        a.push_back({{"name", f.name}, {"binary", f.binary}, {"kind", f.kind}, {"value", f.value}, {"share", f.share}});
      }
      return a;
    };
    // The evidence: the views of exactly the evidence's ranges (the longest
    // one when there are several; the API lists them all).
    json links = json::array();
    if (!x.ranges.empty()) {
      const InsightRange& r = x.ranges.front();
      links.push_back({{"view", "flame"}, {"type", x.evidence_type}, {"selector", x.evidence_selector},
                       {"from", r.from_ns / kMs}, {"to", r.to_ns / kMs}});
      const char* second = x.kind == "sync_heavy"                                     ? "flamechart"
                           : x.kind == "launch_bound" || x.kind == "fusion_candidate" ? "kernels"
                                                                                      : "gpus";
      links.push_back({{"view", second}, {"type", x.evidence_type},
                       {"selector", x.evidence_selector}, {"from", r.from_ns / kMs}, {"to", r.to_ns / kMs}});
    }
    // Severity by the one rule, from the saving the answer shows beside it.
    json item = {{"kind", x.kind},
                 {"target", target},
                 {"severity", Severity(x.saving_gpu_seconds, x.saving_share)},
                 {"saving_gpu_seconds", x.saving_gpu_seconds},
                 {"saving_share", x.saving_share},
                 {"confidence", x.confidence},
                 {"confidence_reason", x.confidence_reason},
                 {"summary", x.summary},
                 {"fix", x.fix},
                 {"fix_reason", x.fix_reason},
                 {"numbers", numbers},
                 {"ranges", ranges},
                 {"sparkline", spark},
                 {"evidence", {{"type", x.evidence_type}, {"selector", x.evidence_selector}}},
                 {"links", links},
                 {"functions", functions(x.functions)}};
    if (!x.waited_for.empty()) item["waited_for"] = functions(x.waited_for);
    if (!x.kernels.empty()) item["kernels"] = functions(x.kernels);
    if (!x.sequence.empty()) item["sequence"] = x.sequence;
    list.push_back(std::move(item));
  }
  json options = {{"starved_gpu_percent", o.starved_gpu_percent},
                  {"starved_thread_cores", o.starved_thread_cores},
                  {"min_share", o.min_share},
                  {"min_duration_ms", o.min_duration_ns / kMs},
                  {"sync_share", o.sync_share},
                  {"min_wait_ms", o.min_wait_ns / kMs},
                  {"short_kernel_share", o.short_kernel_share},
                  {"min_launch_rate", o.min_launch_rate},
                  {"launch_idle_share", o.launch_idle_share},
                  {"min_sequence_rate", o.min_sequence_rate},
                  {"busy_gpu_percent", o.busy_gpu_percent},
                  {"throttle_share", o.throttle_share},
                  {"transfer_share", o.transfer_share},
                  {"memory_bound_dram_percent", o.memory_bound_dram_percent},
                  {"memory_bound_tensor_percent", o.memory_bound_tensor_percent},
                  {"memory_bound_stall_share", o.memory_bound_stall_share},
                  {"memory_bound_kernel_share", o.memory_bound_kernel_share}};
  json answer = {{"version", 1},          {"from", in.from_ns / kMs}, {"to", in.to_ns / kMs},
                 {"step_ms", in.step_ns / kMs}, {"options", options},   {"insights", list}};
  return answer.dump();
}

}  // namespace warpscope::query
