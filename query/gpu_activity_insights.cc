// The insights that read the agent's analyses of the CUDA activity
// (launch_bound, fusion_candidate, transfer_bound) and NVML's clock event
// reasons (throttled). docs/design/insights.md says how each is judged.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "query/insight_support.h"
#include "query/insights.h"

namespace warpscope::query {
namespace {

using namespace insight_support;

// Per step sums of a metric's series, keyed by the values of `keys`.
using Key = std::vector<std::string>;
using Steps = std::vector<double>;

std::map<Key, Steps> SumByKey(const InsightInputs& in, const std::vector<storage::MetricSeries>& series,
                              const std::vector<const char*>& keys, bool average = false) {
  const size_t steps = StepCount(in);
  std::map<Key, Steps> out;
  std::map<Key, std::vector<double>> counts;
  for (const storage::MetricSeries& s : series) {
    Key k;
    for (const char* name : keys) k.push_back(LabelOf(s.labels, name));
    Steps& v = out[k];
    std::vector<double>& c = counts[k];
    if (v.empty()) {
      v.assign(steps, 0);
      c.assign(steps, 0);
    }
    for (const storage::MetricStep& p : s.points) {
      if (p.time_ns < in.from_ns || p.time_ns >= in.to_ns) continue;
      v[StepIndex(in, p.time_ns)] += p.sum;
      c[StepIndex(in, p.time_ns)] += static_cast<double>(p.count);
    }
  }
  if (average) {
    for (auto& [k, v] : out) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = counts[k][i] > 0 ? v[i] / counts[k][i] : NAN;
    }
  }
  return out;
}

const Steps* Find(const std::map<Key, Steps>& m, const Key& k) {
  auto it = m.find(k);
  return it == m.end() ? nullptr : &it->second;
}

double At(const Steps* s, size_t i) { return s == nullptr || std::isnan((*s)[i]) ? 0 : (*s)[i]; }

double Sum(const Steps* s, const std::vector<bool>& flagged) {
  double total = 0;
  for (size_t i = 0; s != nullptr && i < s->size(); ++i) {
    if (flagged.empty() || flagged[i]) total += At(s, i);
  }
  return total;
}

std::string Count(double n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, n >= 100 ? "%.0f" : "%.1f", n);
  return buf;
}

std::string Micros(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, seconds < 1e-3 ? "%.1f us" : "%.2f ms", seconds < 1e-3 ? seconds * 1e6 : seconds * 1e3);
  return buf;
}

// The process's figures on one device, per step.
struct DeviceUse {
  Steps observed, busy_compute, busy_memory, host_wait, kernel_wait;
};

// (node, pid, comm, device) -> its busy and idle seconds per step.
std::map<Key, DeviceUse> DeviceUses(const InsightInputs& in) {
  const size_t steps = StepCount(in);
  std::map<Key, DeviceUse> out;
  auto use = [&](const Key& k) -> DeviceUse& {
    DeviceUse& u = out[k];
    if (u.observed.empty()) {
      for (Steps* s : {&u.observed, &u.busy_compute, &u.busy_memory, &u.host_wait, &u.kernel_wait}) s->assign(steps, 0);
    }
    return u;
  };
  for (const auto& [k, v] : SumByKey(in, in.busy, {"node", "pid", "comm", "device", "category"})) {
    DeviceUse& u = use(Key(k.begin(), k.end() - 1));
    for (size_t i = 0; i < steps; ++i) {
      u.observed[i] += v[i];
      if (k.back() == "compute") u.busy_compute[i] += v[i];
      if (k.back() == "memory") u.busy_memory[i] += v[i];
    }
  }
  for (const auto& [k, v] : SumByKey(in, in.idle, {"node", "pid", "comm", "device", "reason"})) {
    DeviceUse& u = use(Key(k.begin(), k.end() - 1));
    for (size_t i = 0; i < steps; ++i) {
      u.observed[i] += v[i];
      if (k.back() == "host_wait") u.host_wait[i] += v[i];
      if (k.back() == "kernel_wait") u.kernel_wait[i] += v[i];
    }
  }
  return out;
}

// The flagged steps an insight rests on (CountedSteps: steady, or dips of
// min_duration); false when there are none. `flagged` becomes the counted steps.
bool Enough(const InsightInputs& in, const InsightOptions& o, std::vector<bool>* flagged, size_t observed,
            double* flagged_s) {
  *flagged = CountedSteps(in, o, *flagged, observed, flagged_s);
  return std::find(flagged->begin(), flagged->end(), true) != flagged->end();
}

// The insight's saving (SetSaving: its share of the range and the severity
// that follows) and confidence (by the counted steps, whose count it returns).
size_t Rate(double saving_s, double range_s, const std::vector<bool>& flagged, Insight* x) {
  const size_t hits = std::count(flagged.begin(), flagged.end(), true);
  SetSaving(saving_s, range_s, x);
  x->confidence = Confidence(hits);
  return hits;
}

std::string StepsReason(const InsightInputs& in, size_t flagged, size_t observed, const std::string& what) {
  return std::to_string(flagged) + " of " + std::to_string(observed) + " observed steps of " +
         Seconds(static_cast<double>(in.step_ns) / kNsPerSecond) + " " + what;
}

}  // namespace

std::vector<Insight> FindLaunchBound(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  const std::vector<const char*> keys = {"node", "pid", "comm", "device"};
  const auto kernels = SumByKey(in, in.kernels, keys);
  const auto known = SumByKey(in, in.kernels_launch_known, keys);
  const auto short_kernels = SumByKey(in, in.short_kernels, keys);
  const auto kernel_s = SumByKey(in, in.kernel_seconds, keys);
  const auto launch_s = SumByKey(in, in.launch_call_seconds, keys);
  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  for (const auto& [key, u] : DeviceUses(in)) {
    const Steps* k = Find(kernels, key);
    const Steps* kk = Find(known, key);
    const Steps* sk = Find(short_kernels, key);
    std::vector<bool> flagged(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    size_t observed = 0;
    for (size_t i = 0; i < steps; ++i) {
      const int64_t t = in.from_ns + static_cast<int64_t>(i) * in.step_ns;
      const double obs = u.observed[i];
      const double waiting = obs > 0 ? (u.host_wait[i] + u.kernel_wait[i]) / obs : 0;
      if (obs > 0) ++observed;
      const bool hit = obs > 0 && At(kk, i) > 0 && At(sk, i) / At(kk, i) >= o.short_kernel_share &&
                       At(k, i) / obs >= o.min_launch_rate && waiting >= o.launch_idle_share;
      flagged[i] = hit;
      sparkline.emplace_back(t, hit ? 100 * waiting : 0);
    }
    double flagged_s = 0;
    if (!Enough(in, o, &flagged, observed, &flagged_s)) continue;
    const double obs = Sum(&u.observed, flagged), n = Sum(k, flagged), n_known = Sum(kk, flagged);
    const double n_short = Sum(sk, flagged);
    const double waiting_s = Sum(&u.host_wait, flagged) + Sum(&u.kernel_wait, flagged);
    const double mean_kernel = n > 0 ? Sum(Find(kernel_s, key), flagged) / n : 0;
    const double mean_launch = n_known > 0 ? Sum(Find(launch_s, key), flagged) / n_known : 0;
    const std::string &node = key[0], &pid = key[1], &comm = key[2], &device = key[3];
    Insight x;
    x.kind = "launch_bound";
    x.target = {{"comm", comm}, {"device", device}, {"node", node}, {"pid", pid}};
    std::sort(x.target.begin(), x.target.end());
    // CUDA graphs or fused kernels would run the same work back to back: the
    // time the GPU waited for launches is what they could give back.
    const size_t hits = Rate(waiting_s, range_s, flagged, &x);
    x.confidence_reason = StepsReason(in, hits, observed, "were launch-bound") + "; " + Count(n) + " kernels";
    x.summary = ProcessName(comm, pid) + " launched " + Count(n / obs) + " kernels/s on device " + device + ", " +
                Percent(n_known > 0 ? n_short / n_known : 0) + " of them shorter than their own launch call (mean kernel " +
                Micros(mean_kernel) + ", mean launch call " + Micros(mean_launch) + "): the GPU waited for launches " +
                Percent(obs > 0 ? waiting_s / obs : 0) + " of " + Seconds(flagged_s) + ".";
    x.fix = "Launch fewer, bigger kernels: capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\") "
            "or torch.cuda.graphs), let torch.compile fuse the small operations, or give each launch more work "
            "(larger batches).";
    x.fix_reason = "Each kernel runs for less time than the CPU takes to launch it, so the GPU drains its queue and "
                   "waits for the next launch; a graph launches the whole sequence in one call. The call sites below "
                   "launch the most GPU time.";
    x.ranges = Ranges(in, flagged);
    x.numbers = {{"kernels_per_second", n / obs},
                 {"short_kernel_share", n_known > 0 ? n_short / n_known : 0},
                 {"mean_kernel_seconds", mean_kernel},
                 {"mean_launch_call_seconds", mean_launch},
                 {"launch_wait_seconds", waiting_s},
                 {"launch_wait_share", obs > 0 ? waiting_s / obs : 0},
                 {"observed_seconds", obs}};
    x.sparkline = std::move(sparkline);
    x.evidence_type = "gpu_time";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node", "pid"}));
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<Insight> FindFusionCandidates(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  const std::vector<const char*> keys = {"node", "pid", "comm", "sequence"};
  const auto count = SumByKey(in, in.sequence_count, keys);
  const auto gpu_s = SumByKey(in, in.sequence_gpu_seconds, keys);
  const auto gap_s = SumByKey(in, in.sequence_gap_seconds, keys);
  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  // The most frequent sequence per process only: the others are usually
  // the same loop seen from another kernel.
  std::map<Key, std::pair<Key, double>> best;
  for (const auto& [key, v] : count) {
    const double n = Sum(&v, {});
    if (n / range_s < o.min_sequence_rate) continue;
    const Key process(key.begin(), key.end() - 1);
    auto [it, inserted] = best.try_emplace(process, key, n);
    if (!inserted && n > it->second.second) it->second = {key, n};
  }
  for (const auto& [process, chosen] : best) {
    const Key& key = chosen.first;
    const Steps* c = Find(count, key);
    std::vector<bool> flagged(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    for (size_t i = 0; i < steps; ++i) {
      const double rate = At(c, i) / (static_cast<double>(StepLength(in, i)) / kNsPerSecond);
      flagged[i] = rate >= o.min_sequence_rate;
      sparkline.emplace_back(in.from_ns + static_cast<int64_t>(i) * in.step_ns, rate);
    }
    const double n = chosen.second, gpu = Sum(Find(gpu_s, key), {}), gap = Sum(Find(gap_s, key), {});
    const std::string &node = key[0], &pid = key[1], &comm = key[2], &sequence = key[3];
    Insight x;
    x.kind = "fusion_candidate";
    x.target = {{"comm", comm}, {"node", node}, {"pid", pid}};
    for (size_t start = 0; start <= sequence.size();) {
      const size_t arrow = sequence.find(" -> ", start);
      std::string part = sequence.substr(start, arrow == std::string::npos ? std::string::npos : arrow - start);
      if (part.size() > 3 && part.compare(part.size() - 3, 3, "...") == 0) part.resize(part.size() - 3);
      x.sequence.push_back(part);
      if (arrow == std::string::npos) break;
      start = arrow + 4;
    }
    // One fused kernel instead of three: at least the idle time between them.
    const size_t hits = Rate(gap, range_s, flagged, &x);
    x.confidence_reason = Count(n) + " runs of the sequence; " + std::to_string(hits) + " of " +
                          std::to_string(steps) + " steps had it at " + Count(o.min_sequence_rate) + "/s or more";
    x.summary = ProcessName(comm, pid) + " ran the same " + std::to_string(x.sequence.size()) +
                " small kernels back to back " + Count(n / range_s) + " times a second (" + Micros(gpu / n) +
                " of GPU time and " + Micros(gap / n) + " idle between them each time): one fused kernel would do.";
    x.fix = "Fuse the operations: torch.compile (or a Triton kernel, or a fused op such as torch.nn.functional's) "
            "turns a chain of elementwise operations into one kernel.";
    x.fix_reason = "Each small kernel reads and writes its tensors through memory and waits for its own launch; "
                   "fused, the chain reads its input once and launches once. The call sites below launch it.";
    x.ranges = Ranges(in, flagged);
    x.numbers = {{"runs", n},
                 {"runs_per_second", n / range_s},
                 {"gpu_seconds", gpu},
                 {"gap_seconds", gap}};
    x.sparkline = std::move(sparkline);
    x.evidence_type = "gpu_time";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node", "pid"}));
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<Insight> FindTransferBound(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  const auto copy_s = SumByKey(in, in.memcpy_seconds, {"node", "pid", "comm", "device", "copy", "memory"});
  const auto copy_bytes = SumByKey(in, in.memcpy_bytes, {"node", "pid", "comm", "device", "copy", "memory"});
  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  for (const auto& [key, u] : DeviceUses(in)) {
    std::vector<bool> flagged(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    size_t observed = 0;
    for (size_t i = 0; i < steps; ++i) {
      const double obs = u.observed[i];
      if (obs > 0) ++observed;
      const double share = obs > 0 ? u.busy_memory[i] / obs : 0;
      flagged[i] = obs > 0 && share >= o.transfer_share && u.busy_compute[i] / obs < 0.5;
      sparkline.emplace_back(in.from_ns + static_cast<int64_t>(i) * in.step_ns, flagged[i] ? 100 * share : 0);
    }
    double flagged_s = 0;
    if (!Enough(in, o, &flagged, observed, &flagged_s)) continue;
    const double obs = Sum(&u.observed, flagged), copying = Sum(&u.busy_memory, flagged);
    // The copies by kind and memory over the whole range.
    double total_s = 0, pageable_s = 0, bytes = 0;
    std::map<std::string, double> by_kind;
    for (const auto& [k, v] : copy_s) {
      if (!std::equal(key.begin(), key.end(), k.begin())) continue;
      const double s = Sum(&v, {});
      total_s += s;
      by_kind[k[4]] += s;
      if (k[5] == "pageable") pageable_s += s;
    }
    for (const auto& [k, v] : copy_bytes) {
      if (std::equal(key.begin(), key.end(), k.begin())) bytes += Sum(&v, {});
    }
    const std::string top_kind = by_kind.empty() ? "" : std::max_element(by_kind.begin(), by_kind.end(), [](const auto& a, const auto& b) {
                                                          return a.second < b.second;
                                                        })->first;
    const std::string &node = key[0], &pid = key[1], &comm = key[2], &device = key[3];
    Insight x;
    x.kind = "transfer_bound";
    x.target = {{"comm", comm}, {"device", device}, {"node", node}, {"pid", pid}};
    std::sort(x.target.begin(), x.target.end());
    // Copies that ran with nothing else: overlapped with compute (pinned
    // memory, non_blocking, a side stream), they would cost no GPU time.
    const size_t hits = Rate(copying, range_s, flagged, &x);
    x.confidence_reason = StepsReason(in, hits, observed, "were copy-bound");
    const double gbps = total_s > 0 ? bytes / total_s / 1e9 : 0;
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f GB/s", gbps);
    x.summary = ProcessName(comm, pid) + " kept device " + device + " busy with copies alone " +
                Percent(obs > 0 ? copying / obs : 0) + " of " + Seconds(flagged_s) + " (mostly " + top_kind + ", " +
                rate + ", " + Percent(total_s > 0 ? pageable_s / total_s : 0) + " from pageable memory).";
    x.fix = pageable_s > 0.2 * total_s
                ? "Copy from pinned memory (DataLoader(pin_memory=True), tensor.pin_memory()) with non_blocking=True, "
                  "and start the next batch's copy while this one computes."
                : "Overlap the copies with compute (non_blocking=True on a side stream, prefetch the next batch), "
                  "and keep tensors on the GPU between steps instead of copying them back.";
    x.fix_reason = "While only a copy runs the SMs are idle. Pageable memory is copied through a staging buffer at a "
                   "fraction of PCIe's bandwidth and cannot overlap with compute.";
    x.ranges = Ranges(in, flagged);
    x.numbers = {{"copy_only_seconds", copying},
                 {"copy_seconds", total_s},
                 {"pageable_copy_seconds", pageable_s},
                 {"copy_bytes", bytes},
                 {"copy_gb_per_second", gbps},
                 {"observed_seconds", obs}};
    x.sparkline = std::move(sparkline);
    x.evidence_type = "gpu_time";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node", "pid"}));
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<Insight> FindThrottled(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  const auto util = SumByKey(in, in.device_utilization, {"node", "gpu"}, /*average=*/true);
  const auto throttled = SumByKey(in, in.throttled, {"node", "gpu", "reason"}, /*average=*/true);
  const auto clock = SumByKey(in, in.sm_clock, {"node", "gpu"}, true);
  const auto clock_max = SumByKey(in, in.sm_clock_max, {"node", "gpu"}, true);
  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  for (const auto& [key, u] : util) {
    const Steps* power = Find(throttled, {key[0], key[1], "power"});
    const Steps* thermal = Find(throttled, {key[0], key[1], "thermal"});
    const Steps* hw = Find(throttled, {key[0], key[1], "hw_slowdown"});
    if (power == nullptr && thermal == nullptr && hw == nullptr) continue;
    const Steps* c = Find(clock, key);
    const Steps* cm = Find(clock_max, key);
    std::vector<bool> flagged(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    size_t observed = 0;
    for (size_t i = 0; i < steps; ++i) {
      const double busy = u[i];
      if (std::isnan(busy)) {
        sparkline.emplace_back(in.from_ns + static_cast<int64_t>(i) * in.step_ns, 0);
        continue;
      }
      ++observed;
      const double share = std::min(1.0, At(power, i) + At(thermal, i) + At(hw, i));
      flagged[i] = busy >= o.busy_gpu_percent && share >= o.throttle_share;
      sparkline.emplace_back(in.from_ns + static_cast<int64_t>(i) * in.step_ns, flagged[i] ? 100 * share : 0);
    }
    double flagged_s = 0;
    if (!Enough(in, o, &flagged, observed, &flagged_s)) continue;
    double saving = 0, power_s = 0, thermal_s = 0, hw_s = 0, clock_sum = 0, clock_max_sum = 0, busy_sum = 0;
    for (size_t i = 0; i < steps; ++i) {
      if (!flagged[i]) continue;
      const double busy = u[i];
      const double step_s = static_cast<double>(StepLength(in, i)) / kNsPerSecond;
      power_s += At(power, i) * step_s;
      thermal_s += At(thermal, i) * step_s;
      hw_s += At(hw, i) * step_s;
      busy_sum += busy / 100 * step_s;
      // The busy time's share the lower clock cost: work at clock f instead
      // of f_max takes f_max / f as long.
      if (At(c, i) > 0 && At(cm, i) > At(c, i)) {
        saving += busy / 100 * step_s * (1 - At(c, i) / At(cm, i));
        clock_sum += At(c, i) * step_s;
        clock_max_sum += At(cm, i) * step_s;
      }
    }
    const std::string &node = key[0], &gpu = key[1];
    const std::string cause = power_s >= thermal_s && power_s >= hw_s ? "power" : thermal_s >= hw_s ? "thermal" : "hw_slowdown";
    Insight x;
    x.kind = "throttled";
    x.target = {{"gpu", gpu}, {"node", node}};
    const size_t hits = Rate(saving, range_s, flagged, &x);
    x.confidence_reason = StepsReason(in, hits, observed, "were busy and throttled");
    const double mean_clock = flagged_s > 0 && clock_max_sum > 0 ? clock_sum / clock_max_sum : 0;
    x.summary = "GPU " + gpu + " on " + node + " was busy but held below its top clock by " +
                (cause == "power" ? std::string("its power limit")
                 : cause == "thermal" ? std::string("heat")
                                      : std::string("a hardware slowdown")) +
                " for " + Seconds(cause == "power" ? power_s : cause == "thermal" ? thermal_s : hw_s) + " of " +
                Seconds(flagged_s) + (mean_clock > 0 ? ", at " + Percent(mean_clock) + " of its top SM clock" : "") + ".";
    x.fix = cause == "power"
                ? "Check the power limit (nvidia-smi -q -d POWER): raise it where the board and the facility allow, or "
                  "accept it and count on the slower clock; uneven power across GPUs of a node points to one GPU."
                : cause == "thermal"
                      ? "Check cooling: airflow, fan speeds, inlet temperature and neighbouring GPUs; a GPU that "
                        "throttles for heat while its neighbours do not points to its slot."
                      : "A hardware slowdown (HW_SLOWDOWN) is the board protecting itself: check power supply and "
                        "temperature alarms (nvidia-smi -q -d PERFORMANCE) and the node's logs.";
    x.fix_reason = "The same kernels take longer at a lower clock; the saving is the busy time the lower clock added.";
    x.ranges = Ranges(in, flagged);
    x.numbers = {{"power_capped_seconds", power_s},
                 {"thermal_seconds", thermal_s},
                 {"hw_slowdown_seconds", hw_s},
                 {"busy_gpu_seconds", busy_sum},
                 {"sm_clock_share", mean_clock}};
    x.sparkline = std::move(sparkline);
    x.evidence_type = "gpu_time";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node"}));
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<Insight> FindMemoryBound(const InsightInputs& in, const InsightOptions& o) {
  std::vector<Insight> out;
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return out;
  const size_t steps = StepCount(in);
  const auto util = SumByKey(in, in.device_utilization, {"node", "gpu"}, /*average=*/true);
  const auto dram = SumByKey(in, in.dram_bandwidth, {"node", "gpu"}, true);
  const auto tensor = SumByKey(in, in.tensor_activity, {"node", "gpu"}, true);
  const double range_s = static_cast<double>(in.to_ns - in.from_ns) / kNsPerSecond;
  for (const auto& [key, u] : util) {
    const Steps* d = Find(dram, key);
    if (d == nullptr) continue;  // no GPM on this GPU
    const Steps* t = Find(tensor, key);
    std::vector<bool> flagged(steps, false);
    std::vector<std::pair<int64_t, double>> sparkline;
    size_t observed = 0;
    for (size_t i = 0; i < steps; ++i) {
      const bool seen = !std::isnan(u[i]) && !std::isnan((*d)[i]);
      observed += seen ? 1 : 0;
      flagged[i] = seen && u[i] >= o.busy_gpu_percent && (*d)[i] >= o.memory_bound_dram_percent &&
                   At(t, i) <= o.memory_bound_tensor_percent;
      sparkline.emplace_back(in.from_ns + static_cast<int64_t>(i) * in.step_ns, flagged[i] ? (*d)[i] : 0);
    }
    double flagged_s = 0;
    if (!Enough(in, o, &flagged, observed, &flagged_s)) continue;
    double dram_sum = 0, tensor_sum = 0;
    for (size_t i = 0; i < steps; ++i) {
      if (!flagged[i]) continue;
      dram_sum += (*d)[i];
      tensor_sum += At(t, i);
    }
    const std::string &node = key[0], &gpu = key[1];
    Insight x;
    x.kind = "memory_bound";
    x.target = {{"gpu", gpu}, {"node", node}};
    // No saving estimated (it depends on the kernels): low, ranked last, by the one rule.
    const size_t hits = Rate(0, range_s, flagged, &x);
    const double n = static_cast<double>(hits);
    x.confidence_reason = StepsReason(in, hits, observed, "were busy and memory-bound") +
                          "; the saving is not estimated (it depends on the kernels)";
    x.summary = "GPU " + gpu + " on " + node + " moved data at " + Percent(dram_sum / n / 100) +
                " of its DRAM bandwidth while its tensor cores were active " + Percent(tensor_sum / n / 100) +
                " of the time, for " + Seconds(flagged_s) + ": its kernels wait on memory, not on math.";
    x.fix = "Do more math per byte: a larger batch (if memory allows), fused elementwise chains (torch.compile), "
            "lower precision (bf16/fp8) for the tensors that stream, and tensor-core shapes (multiples of 8/16).";
    x.fix_reason = "A memory-bound GPU finishes no sooner with a faster math path; the same data read fewer times, "
                   "or more work done on it while it is read, is what helps. The GPU-time flame graph shows which "
                   "kernels run then.";
    x.ranges = Ranges(in, flagged);
    x.numbers = {{"dram_bandwidth_percent", dram_sum / n}, {"tensor_activity_percent", tensor_sum / n},
                 {"memory_bound_seconds", flagged_s}};
    x.sparkline = std::move(sparkline);
    x.evidence_type = "gpu_time";
    x.evidence_selector = SelectorOf(Pick(x.target, {"node"}));
    out.push_back(std::move(x));
  }
  return out;
}

void AddHostWaitEvidence(const InsightInputs& in, Insight* x) {
  if (in.step_ns <= 0 || in.to_ns <= in.from_ns) return;
  const std::string node = LabelOf(x->target, "node"), pid = LabelOf(x->target, "pid");
  std::vector<bool> flagged(StepCount(in), false);
  for (const InsightRange& r : x->ranges) {
    for (int64_t t = r.from_ns; t < r.to_ns && t < in.to_ns; t += in.step_ns) {
      if (t >= in.from_ns) flagged[StepIndex(in, t)] = true;
    }
  }
  double observed = 0, host_wait = 0;
  for (const auto& [key, u] : DeviceUses(in)) {
    if (key[0] != node || key[1] != pid) continue;
    observed += Sum(&u.observed, flagged);
    host_wait += Sum(&u.host_wait, flagged);
  }
  if (observed <= 0) return;
  x->numbers.emplace_back("host_wait_share", host_wait / observed);
  x->confidence_reason += "; the CUDA timeline agrees: the GPU waited for the host " + Percent(host_wait / observed) +
                          " of the time it recorded then";
}

void DropExplainedStarvation(std::vector<Insight>* insights) {
  auto process = [](const Insight& x) { return std::make_pair(LabelOf(x.target, "node"), LabelOf(x.target, "pid")); };
  std::vector<std::pair<std::string, std::string>> launch_bound;
  for (const Insight& x : *insights) {
    if (x.kind == "launch_bound") launch_bound.push_back(process(x));
  }
  insights->erase(std::remove_if(insights->begin(), insights->end(),
                                 [&](const Insight& x) {
                                   return x.kind == "gpu_starved_by_cpu" &&
                                          std::find(launch_bound.begin(), launch_bound.end(), process(x)) !=
                                              launch_bound.end();
                                 }),
                  insights->end());
}

}  // namespace warpscope::query
