#include "agent/collectors/gpu_time/wait_joiner.h"

#include <algorithm>
#include <cmath>

namespace warpscope::gpu {

namespace {

// `total` split in proportion to `weights` (all > 0), every unit kept: the
// floors, then one more to the largest remainders.
std::vector<int64_t> Apportion(int64_t total, const std::vector<int64_t>& weights) {
  std::vector<int64_t> out(weights.size(), 0);
  __int128 sum = 0;
  for (int64_t w : weights) sum += w;
  if (sum <= 0 || weights.empty()) return out;
  std::vector<std::pair<__int128, size_t>> remainders;
  int64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const __int128 scaled = static_cast<__int128>(total) * weights[i];
    out[i] = static_cast<int64_t>(scaled / sum);
    given += out[i];
    remainders.emplace_back(scaled % sum, i);
  }
  std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t k = 0; given < total && k < remainders.size(); ++k, ++given) ++out[remainders[k].second];
  return out;
}

}  // namespace

void WaitJoiner::AddSpan(uint64_t connection, const GpuSpan& span, int64_t now_ns) {
  Spans& s = spans_[connection];
  if (s.by_start.size() >= options_.max_spans_per_connection) {
    ++stats_.spans_dropped;
    return;
  }
  s.max_duration = std::max(s.max_duration, span.end_ns - span.start_ns);
  // Records come nearly in start order: insert from the back.
  auto at = s.by_start.end();
  while (at != s.by_start.begin() && std::prev(at)->first.start_ns > span.start_ns) --at;
  s.by_start.insert(at, {span, now_ns});
}

void WaitJoiner::AddWait(uint64_t connection, uint32_t pid, const ws_cuda_wait& wait, int64_t bucket, double weight,
                         int64_t now_ns) {
  if (pending_.size() >= options_.max_pending_waits) {
    ++stats_.waits_dropped;
    return;
  }
  pending_.push_back({connection, pid, wait, bucket, weight, now_ns});
}

void WaitJoiner::AddStack(uint32_t pid, uint32_t tid, uint64_t probe_key, uint64_t stack_key, int64_t now_ns) {
  if (stacks_.size() >= options_.max_stacks) {
    ++stats_.stacks_dropped;
    return;
  }
  stacks_[{pid, probe_key}] = {tid, stack_key, now_ns};
}

void WaitJoiner::EndConnection(uint64_t connection) {
  if (auto it = spans_.find(connection); it != spans_.end()) it->second.ended = true;
}

void WaitJoiner::Overlaps(const Pending& p, std::map<GpuChild, int64_t>* out) {
  out->clear();
  const int64_t start = static_cast<int64_t>(p.wait.start_ns), end = static_cast<int64_t>(p.wait.end_ns);
  auto it = spans_.find(p.connection);
  if (it == spans_.end() || end <= start) return;
  const Spans& s = it->second;
  // Spans that start before start - max_duration end before the wait starts.
  const int64_t from = start - s.max_duration;
  auto first = std::lower_bound(s.by_start.begin(), s.by_start.end(), from,
                                [](const auto& e, int64_t t) { return e.first.start_ns < t; });
  for (auto i = first; i != s.by_start.end() && i->first.start_ns < end; ++i) {
    const GpuSpan& g = i->first;
    if (p.wait.stream_id != 0 && g.stream != p.wait.stream_id) continue;
    if (p.wait.context_id != 0 && g.context != 0 && g.context != p.wait.context_id) continue;
    const int64_t overlap = std::min(end, g.end_ns) - std::max(start, g.start_ns);
    if (overlap > 0) (*out)[g.child] += overlap;
  }
}

std::vector<GpuWaitSample> WaitJoiner::Drain(int64_t now_ns, bool final) {
  std::map<Key, int64_t> samples;
  // Unsampled waits by (pid, api, bucket, scaled): time per child, and how many.
  std::map<std::tuple<uint32_t, uint16_t, int64_t, bool>, std::pair<std::map<GpuChild, int64_t>, uint64_t>> unsampled;
  // This drain's sampled time per (pid, api) and (stack, tid).
  std::map<std::pair<uint32_t, uint16_t>, std::map<std::pair<uint64_t, uint32_t>, int64_t>> sampled;
  std::map<GpuChild, int64_t> overlaps;
  std::deque<Pending> waiting;
  for (Pending& p : pending_) {
    auto spans = spans_.find(p.connection);
    const bool ended = spans == spans_.end() || spans->second.ended;
    if (!final && !ended && now_ns - p.arrived_ns < options_.grace_ns) {
      waiting.push_back(p);
      continue;
    }
    ++stats_.waits;
    Overlaps(p, &overlaps);
    const int64_t duration = static_cast<int64_t>(p.wait.end_ns - p.wait.start_ns);
    int64_t covered = 0;
    for (const auto& [child, ns] : overlaps) covered += ns;
    // Concurrent streams: scaled down to the wait.
    if (covered > duration) {
      std::vector<int64_t> weights;
      for (const auto& [child, ns] : overlaps) weights.push_back(ns);
      const std::vector<int64_t> fitted = Apportion(duration, weights);
      size_t i = 0;
      for (auto& [child, ns] : overlaps) ns = fitted[i++];
      covered = duration;
    }
    overlaps[GpuChild{}] = duration - covered;
    const bool scaled = p.weight != 1.0;
    if (scaled) {
      // Weighted, every part rounded so that the parts add up to the whole.
      const int64_t total = std::llround(static_cast<double>(duration) * p.weight);
      std::vector<int64_t> weights;
      for (const auto& [child, ns] : overlaps) weights.push_back(std::max<int64_t>(ns, 0));
      const bool any = std::any_of(weights.begin(), weights.end(), [](int64_t w) { return w > 0; });
      if (any) {
        const std::vector<int64_t> fitted = Apportion(total, weights);
        size_t i = 0;
        for (auto& [child, ns] : overlaps) ns = fitted[i++];
      }
    }
    int64_t total = 0, under_gpu = 0;
    for (const auto& [child, ns] : overlaps) {
      total += ns;
      if (!child.none()) under_gpu += ns;
    }
    stats_.wait_ns += static_cast<uint64_t>(total);
    stats_.overlap_ns += static_cast<uint64_t>(under_gpu);
    const uint64_t probe_key = static_cast<uint64_t>(p.wait.attach_epoch) << 32 | p.wait.correlation_id;
    const StackEntry* stack = nullptr;
    if (p.wait.flags & WS_CUDA_WAIT_FLAG_SAMPLED) {
      auto it = stacks_.find({p.pid, probe_key});
      if (it != stacks_.end()) {
        stack = &it->second;
      } else {
        ++stats_.waits_stack_missing;
      }
    }
    if (stack != nullptr) {
      ++stats_.waits_sampled;
      for (const auto& [child, ns] : overlaps) {
        if (ns > 0) samples[Key{p.pid, stack->tid, stack->stack_key, p.wait.api, p.bucket, scaled, child}] += ns;
      }
      sampled[{p.pid, p.wait.api}][{stack->stack_key, stack->tid}] += total;
      stacks_.erase({p.pid, probe_key});
      continue;
    }
    auto& group = unsampled[{p.pid, p.wait.api, p.bucket, scaled}];
    for (const auto& [child, ns] : overlaps) group.first[child] += ns;
    ++group.second;
  }
  pending_.swap(waiting);

  for (auto& [key, dist] : sampled) last_[key] = {dist, now_ns};
  for (const auto& [group_key, group] : unsampled) {
    const auto [pid, api, bucket, scaled] = group_key;
    const std::map<std::pair<uint64_t, uint32_t>, int64_t>* dist = nullptr;
    if (auto it = last_.find({pid, api}); it != last_.end() && now_ns - it->second.second <= options_.stack_ttl_ns) {
      dist = &it->second.first;
    }
    if (dist == nullptr || dist->empty()) {
      stats_.waits_placeholder += group.second;
      for (const auto& [child, ns] : group.first) {
        if (ns > 0) samples[Key{pid, 0, 0, api, bucket, scaled, child}] += ns;
      }
      continue;
    }
    stats_.waits_spread += group.second;
    std::vector<int64_t> weights;
    for (const auto& [stack, ns] : *dist) weights.push_back(std::max<int64_t>(ns, 1));
    for (const auto& [child, ns] : group.first) {
      if (ns <= 0) continue;
      const std::vector<int64_t> parts = Apportion(ns, weights);
      size_t i = 0;
      for (const auto& [stack, w] : *dist) {
        if (parts[i] > 0) samples[Key{pid, stack.second, stack.first, api, bucket, scaled, child}] += parts[i];
        ++i;
      }
    }
  }

  // Forget what can no longer be used.
  for (auto it = last_.begin(); it != last_.end();) {
    it = now_ns - it->second.second > options_.stack_ttl_ns ? last_.erase(it) : std::next(it);
  }
  for (auto it = stacks_.begin(); it != stacks_.end();) {
    it = now_ns - it->second.seen_ns > options_.stack_ttl_ns ? stacks_.erase(it) : std::next(it);
  }
  for (auto it = spans_.begin(); it != spans_.end();) {
    Spans& s = it->second;
    bool waits_left = false;
    for (const Pending& p : pending_) waits_left |= p.connection == it->first;
    if (s.ended && !waits_left) {
      it = spans_.erase(it);
      continue;
    }
    // Spans are sorted by start; one that arrived long ago is no longer
    // needed by any wait still to come (a wait is judged grace_ns after it
    // arrived, and its GPU work arrives within about a second).
    while (!s.by_start.empty() && now_ns - s.by_start.front().second > options_.span_ttl_ns) s.by_start.pop_front();
    if (s.by_start.empty()) s.max_duration = 0;
    ++it;
  }

  std::vector<GpuWaitSample> out;
  out.reserve(samples.size());
  for (const auto& [key, ns] : samples) {
    GpuWaitSample s;
    std::tie(s.pid, s.tid, s.stack_key, s.api, s.bucket, s.scaled, s.child) = key;
    s.wait_ns = ns;
    out.push_back(s);
  }
  return out;
}

}  // namespace warpscope::gpu
