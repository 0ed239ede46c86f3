#include "agent/collectors/gpu_time/launch_joiner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

namespace warpscope::gpu {
namespace {

// What a sample is keyed by in the output.
struct SampleKey {
  uint32_t pid, tid;
  uint64_t stack_key, kernel_key;
  uint32_t device, stream;
  uint64_t graph_id;
  int64_t bucket;
  auto Tie() const { return std::tie(pid, kernel_key, stack_key, tid, device, stream, graph_id, bucket); }
  bool operator<(const SampleKey& o) const { return Tie() < o.Tie(); }
};

// Unsampled kernels of one name, on one device, stream and graph.
struct UnsampledKey {
  uint32_t pid;
  uint64_t kernel_key;
  uint32_t device, stream;
  uint64_t graph_id;
  int64_t bucket;
  auto Tie() const { return std::tie(pid, kernel_key, device, stream, graph_id, bucket); }
  bool operator<(const UnsampledKey& o) const { return Tie() < o.Tie(); }
};

struct Accumulated {
  int64_t gpu_ns = 0;
  int64_t kernels = 0;
  bool estimated = false;
  bool scaled = false;
};

// The kernel's GPU time times its window's weight.
int64_t WeightedDuration(const KernelExecution& k, LaunchJoinerStats* stats) {
  if (k.end_ns < k.start_ns) {
    ++stats->bad_durations;
    return 0;
  }
  const int64_t ns = k.end_ns - k.start_ns;
  if (k.weight == 1.0 || !(k.weight > 0) || !std::isfinite(k.weight)) return ns;
  return static_cast<int64_t>(std::llround(static_cast<double>(ns) * k.weight));
}

// Splits `total` over `weights` in proportion, exactly (the rounding remainder
// goes to the largest shares first).
std::vector<int64_t> SplitExactly(int64_t total, const std::vector<int64_t>& weights) {
  std::vector<int64_t> out(weights.size(), 0);
  long double sum = 0;
  for (int64_t w : weights) sum += static_cast<long double>(w);
  if (weights.empty()) return out;
  if (sum <= 0) {
    out[0] = total;
    return out;
  }
  int64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    out[i] = static_cast<int64_t>(std::floor(static_cast<long double>(total) * weights[i] / sum));
    given += out[i];
  }
  std::vector<size_t> order(weights.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  for (size_t i = 0; given < total; i = (i + 1) % order.size(), ++given) ++out[order[i]];
  return out;
}

// The kernel's (weighted) time by the seconds its window covers: `ns` split
// in proportion to each second's overlap with [covers_from, covers_to),
// exactly (the remainder goes to the last); one part in `bucket` otherwise.
void ForEachBucket(const KernelExecution& k, int64_t ns, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kSecond = 1'000'000'000;
  if (k.covers_to <= k.covers_from) {
    fn(k.bucket, ns);
    return;
  }
  const long double span = static_cast<long double>(k.covers_to - k.covers_from);
  int64_t given = 0;
  for (int64_t second = k.covers_from - k.covers_from % kSecond; second < k.covers_to; second += kSecond) {
    const int64_t overlap = std::min(second + kSecond, k.covers_to) - std::max(second, k.covers_from);
    int64_t part = static_cast<int64_t>(static_cast<long double>(ns) * overlap / span);
    if (second + kSecond >= k.covers_to) part = ns - given;
    given += part;
    fn(second, part);
  }
}

}  // namespace

void LaunchJoiner::AddLaunch(const SampledLaunch& launch, int64_t now_ns) {
  const LaunchKey key{launch.pid, launch.correlation_id};
  auto it = launches_.find(key);
  if (it == launches_.end()) {
    if (launches_.size() >= options_.max_launches) {
      ++stats_.launches_dropped;
      return;
    }
    launches_.emplace(key, RememberedLaunch{launch.tid, launch.stack_key, now_ns, false});
    launch_order_.push_back(key);
  } else {
    it->second = RememberedLaunch{launch.tid, launch.stack_key, it->second.added_ns, false};
  }
  ++stats_.launches;
}

void LaunchJoiner::AddKernel(const KernelExecution& kernel, int64_t now_ns) {
  if (pending_.size() >= options_.max_pending_kernels) {
    ++stats_.kernels_dropped;
    return;
  }
  pending_.push_back(PendingKernel{kernel, now_ns});
  ++stats_.kernels;
}

void LaunchJoiner::ForgetProcess(uint32_t pid) {
  for (auto it = launches_.begin(); it != launches_.end();) {
    it = it->first.pid == pid ? launches_.erase(it) : std::next(it);
  }
  for (auto it = recent_launchers_.begin(); it != recent_launchers_.end();) {
    it = it->first.first == pid ? recent_launchers_.erase(it) : std::next(it);
  }
}

std::vector<GpuTimeSample> LaunchJoiner::Drain(int64_t now_ns, bool flush_all) {
  std::map<SampleKey, Accumulated> samples;
  std::map<UnsampledKey, Accumulated> unsampled;
  while (!pending_.empty() && (flush_all || pending_.front().arrived_ns <= now_ns - options_.grace_ns)) {
    const KernelExecution& k = pending_.front().kernel;
    const int64_t ns = WeightedDuration(k, &stats_);
    const bool scaled = k.weight != 1.0;
    auto launch = launches_.find(LaunchKey{k.pid, k.correlation_id});
    if (launch != launches_.end() && k.graph_id == 0) {
      if (launch->second.joined) {
        ++stats_.kernels_duplicate_correlation;
        launch = launches_.end();
      } else {
        launch->second.joined = true;
      }
    }
    bool first = true;  // the kernel counts once, in its first bucket
    if (launch != launches_.end()) {
      ForEachBucket(k, ns, [&](int64_t bucket, int64_t part) {
        Accumulated& a = samples[SampleKey{k.pid, launch->second.tid, launch->second.stack_key, k.kernel_key,
                                           k.device, k.stream, k.graph_id, bucket}];
        a.gpu_ns += part;
        a.kernels += first ? 1 : 0;
        a.scaled = a.scaled || scaled;
        first = false;
      });
      ++stats_.kernels_sampled;
    } else {
      ForEachBucket(k, ns, [&](int64_t bucket, int64_t part) {
        Accumulated& a = unsampled[UnsampledKey{k.pid, k.kernel_key, k.device, k.stream, k.graph_id, bucket}];
        a.gpu_ns += part;
        a.kernels += first ? 1 : 0;
        a.scaled = a.scaled || scaled;
        first = false;
      });
    }
    pending_.pop_front();
  }

  // Sampled stacks by (pid, kernel): whom an unsampled kernel of that name is spread over.
  // Weights are the directly measured values, taken before any spreading.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<Launcher>> launchers;
  for (const auto& [key, a] : samples) {
    launchers[{key.pid, key.kernel_key}].push_back(Launcher{key.tid, key.stack_key, a.gpu_ns, a.kernels});
  }
  // A kernel name with no sampled launch in this drain (a short drain, a
  // rarely launched kernel) uses the stacks of its most recent drain that had one.
  for (const auto& [key, list] : launchers) recent_launchers_[key] = RecentLaunchers{list, now_ns};
  for (auto it = recent_launchers_.begin(); it != recent_launchers_.end();) {
    it = it->second.seen_ns <= now_ns - options_.launch_ttl_ns ? recent_launchers_.erase(it) : std::next(it);
  }
  for (const auto& [u, a] : unsampled) {
    const std::vector<Launcher>* sampled = nullptr;
    if (auto it = launchers.find({u.pid, u.kernel_key}); it != launchers.end()) {
      sampled = &it->second;
    } else if (auto r = recent_launchers_.find({u.pid, u.kernel_key}); r != recent_launchers_.end()) {
      sampled = &r->second.launchers;
    }
    if (sampled == nullptr) {
      Accumulated& p = samples[SampleKey{u.pid, 0, 0, u.kernel_key, u.device, u.stream, u.graph_id, u.bucket}];
      p.gpu_ns += a.gpu_ns;
      p.estimated = true;
      p.scaled = p.scaled || a.scaled;
      stats_.kernels_placeholder += static_cast<uint64_t>(a.kernels);
      continue;
    }
    // Weighted by the stacks' measured GPU time of this kernel (by kernel
    // counts when that is all zero).
    std::vector<int64_t> weights;
    std::map<std::tuple<uint32_t, uint64_t>, int64_t> by_stack;  // (tid, stack) -> weight
    for (const Launcher& l : *sampled) by_stack[{l.tid, l.stack_key}] += l.gpu_ns;
    bool all_zero = true;
    for (const auto& [stack, w] : by_stack) all_zero = all_zero && w == 0;
    if (all_zero) {
      for (const Launcher& l : *sampled) by_stack[{l.tid, l.stack_key}] += l.kernels;
    }
    for (const auto& [stack, w] : by_stack) weights.push_back(w);
    const std::vector<int64_t> shares = SplitExactly(a.gpu_ns, weights);
    size_t i = 0;
    for (const auto& [stack, w] : by_stack) {
      Accumulated& s =
          samples[SampleKey{u.pid, std::get<0>(stack), std::get<1>(stack), u.kernel_key, u.device, u.stream,
                            u.graph_id, u.bucket}];
      s.gpu_ns += shares[i++];
      s.estimated = true;
      s.scaled = s.scaled || a.scaled;
    }
    stats_.kernels_spread += static_cast<uint64_t>(a.kernels);
  }

  std::vector<GpuTimeSample> out;
  out.reserve(samples.size());
  for (const auto& [k, a] : samples) {
    GpuTimeSample s{k.pid,      k.tid,    k.stack_key, k.kernel_key, k.device,     k.stream,
                    k.graph_id, k.bucket, a.gpu_ns,    a.kernels,    a.estimated || a.scaled, a.scaled};
    if (s.gpu_ns > 0 || s.kernels > 0) out.push_back(s);
  }

  // Launches older than the TTL can no longer meet a kernel.
  while (!launch_order_.empty()) {
    auto it = launches_.find(launch_order_.front());
    if (it != launches_.end()) {
      if (!flush_all && it->second.added_ns > now_ns - options_.launch_ttl_ns) break;
      launches_.erase(it);
    }
    launch_order_.pop_front();
  }
  return out;
}

}  // namespace warpscope::gpu
