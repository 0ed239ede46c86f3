#include "agent/collectors/gpu_time/activity_analyzer.h"

#include "model/gpu_activity.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <queue>
#include <utility>

namespace warpscope::gpu {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t SecondOf(int64_t unix_ns) { return unix_ns - ((unix_ns % kSecond) + kSecond) % kSecond; }

const char* CategoryName(int c) {
  static const char* const kNames[kGpuWorkCategories] = {"compute", "communication", "memory"};
  return kNames[c];
}

const char* ReasonName(int r) {
  static const char* const kNames[kGpuIdleReasons] = {"host_wait", "kernel_wait", "other"};
  return kNames[r];
}

const char* CopyName(uint8_t kind) {
  static const char* const kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                       "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "unknown";
}

const char* MemoryName(CopyMemory m) {
  switch (m) {
    case CopyMemory::kPageable: return "pageable";
    case CopyMemory::kPinned: return "pinned";
    default: return "device";
  }
}

// A kernel's name short enough for a label: no return type, no parameter
// list, at most 160 bytes.
std::string ShortKernelName(const InternedKernelName* k) {
  if (k == nullptr) return "[unknown kernel]";
  std::string s = k->text.name.empty() ? k->text.system_name : k->text.name;
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s.resize(i);
        break;
      }
    }
  }
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

}  // namespace

GpuWorkCategory KernelCategory(const std::string& system_name) {
  return IsNcclKernel(system_name) ? GpuWorkCategory::kCommunication : GpuWorkCategory::kCompute;
}

CopyMemory CopyMemoryOf(uint8_t src_kind, uint8_t dst_kind) {
  // CUpti_ActivityMemoryKind: 1 pageable, 2 pinned.
  if (src_kind == 1 || dst_kind == 1) return CopyMemory::kPageable;
  if (src_kind == 2 || dst_kind == 2) return CopyMemory::kPinned;
  return CopyMemory::kDevice;
}

int64_t ClassifyTimeline(const std::vector<AnalyzedActivity>& activities, int64_t from_ns, int64_t trailing_until,
                         int64_t kernel_wait_max_ns, const std::function<void(const TimelinePiece&)>& piece) {
  // A sweep over starts and ends: busy time goes to the highest category
  // running (compute over communication over memory); an idle gap is judged
  // by the activity that ends it.
  using End = std::pair<int64_t, int>;  // end, category
  std::priority_queue<End, std::vector<End>, std::greater<End>> running;
  std::array<int, kGpuWorkCategories> count{};
  int64_t t = from_ns;
  size_t i = 0;
  const size_t n = activities.size();
  auto admit = [&] {
    while (i < n && std::max(activities[i].start_ns, from_ns) <= t) {
      const AnalyzedActivity& a = activities[i++];
      if (a.end_ns <= t) continue;
      running.emplace(a.end_ns, static_cast<int>(a.category));
      ++count[static_cast<int>(a.category)];
    }
  };
  auto skip_done = [&] {
    while (i < n && activities[i].end_ns <= t) ++i;
  };
  skip_done();
  admit();
  while (true) {
    if (running.empty()) {
      skip_done();
      if (i >= n) break;
      const AnalyzedActivity& next = activities[i];
      const int64_t start = std::max(next.start_ns, from_ns);
      if (start > t) {
        // Idle from t to start: host wait until the next launch call began
        // (if after t; the whole gap when its call is unknown, as for copies
        // and sets: nothing shows it was queued), then the launch overhead
        // (the call itself and kernel_wait_max_ns after it) or something else.
        const int64_t asked = next.launch_ns != 0 ? next.launch_ns : start;
        int64_t queued = t;
        if (asked > t) {
          queued = std::min(asked, start);
          piece({t, queued, false, GpuWorkCategory::kCompute, GpuIdleReason::kHostWait});
        }
        if (start > queued) {
          const int64_t overhead_until = std::max(asked + next.launch_duration_ns, t) + kernel_wait_max_ns;
          const GpuIdleReason r = start <= overhead_until ? GpuIdleReason::kKernelWait : GpuIdleReason::kOther;
          piece({queued, start, false, GpuWorkCategory::kCompute, r});
        }
        t = start;
      }
      admit();
      continue;
    }
    const int64_t next_start = i < n ? std::max(activities[i].start_ns, from_ns) : kNever;
    const int64_t next_end = running.top().first;
    const int64_t until = std::min(next_start, next_end);
    if (until > t) {
      int top = 0;
      while (top < kGpuWorkCategories - 1 && count[top] == 0) ++top;
      piece({t, until, true, static_cast<GpuWorkCategory>(top), GpuIdleReason::kHostWait});
      t = until;
    }
    while (!running.empty() && running.top().first <= t) {
      --count[running.top().second];
      running.pop();
    }
    admit();
  }
  if (trailing_until > t) {
    piece({t, trailing_until, false, GpuWorkCategory::kCompute, GpuIdleReason::kHostWait});
    t = trailing_until;
  }
  return t;
}

void GpuActivityAnalyzer::Begin(uint64_t connection, uint32_t pid, bool windowed, int64_t start_ns) {
  Connection& c = connections_[connection];
  c.pid = pid;
  c.windowed = windowed;
  c.start_ns = start_ns;
}

void GpuActivityAnalyzer::Add(uint64_t connection, AnalyzedActivity activity) {
  auto it = connections_.find(connection);
  if (it == connections_.end() || activity.end_ns < activity.start_ns) return;
  ++stats_.activities;
  if (pending_ >= options_.max_pending) {
    ++stats_.dropped;
    return;
  }
  Device& d = it->second.devices[activity.device];
  if (d.classified_until == 0 && !it->second.windowed) d.classified_until = it->second.start_ns;
  if (!it->second.windowed && activity.start_ns < d.classified_until) ++stats_.late;
  d.pending.push_back(std::move(activity));
  ++pending_;
}

void GpuActivityAnalyzer::CloseWindow(uint64_t connection, int64_t on_start_ns, int64_t on_end_ns,
                                      int64_t covers_until_ns) {
  auto it = connections_.find(connection);
  if (it == connections_.end() || on_end_ns <= on_start_ns) return;
  Connection& c = it->second;
  for (auto& [id, d] : c.devices) {
    // The window's span: its recording time, or longer when its kernels ran
    // behind the launches; stretched over the time it stands for.
    int64_t span_end = on_end_ns;
    for (const AnalyzedActivity& a : d.pending) span_end = std::max(span_end, a.end_ns);
    const int64_t covers = std::max(covers_until_ns, span_end);
    const double weight = static_cast<double>(covers - on_start_ns) / static_cast<double>(span_end - on_start_ns);
    // Idle to the span's end is host wait: nothing launched in it started.
    d.classified_until = on_start_ns;
    Classify(c, id, d, kNever, span_end, weight, [=](int64_t t) {
      return on_start_ns + static_cast<int64_t>(static_cast<double>(t - on_start_ns) * weight);
    });
    c.complete_until = std::max(c.complete_until, covers);
  }
  c.complete_until = std::max(c.complete_until, covers_until_ns);
}

void GpuActivityAnalyzer::End(uint64_t connection) {
  auto it = connections_.find(connection);
  if (it != connections_.end()) it->second.ended = true;
}

GpuActivityAnalyzer::Figures* GpuActivityAnalyzer::FiguresAt(uint32_t pid, uint32_t device, int64_t second) {
  const auto key = std::make_tuple(pid, device, second);
  auto it = seconds_.find(key);
  if (it != seconds_.end()) return &it->second;
  if (seconds_.size() >= options_.max_seconds) {
    ++stats_.seconds_dropped;
    return nullptr;
  }
  return &seconds_.emplace(key, Figures{}).first->second;
}

void GpuActivityAnalyzer::AddSpan(uint32_t pid, uint32_t device, int64_t from_ns, int64_t to_ns, double weight,
                                  const std::function<void(Figures&, double)>& add) {
  // from/to are unix times already placed; the span's weight is spread over
  // the seconds it covers in proportion to the time in each.
  if (to_ns <= from_ns) return;
  const int64_t length = to_ns - from_ns;
  const double whole = static_cast<double>(length);
  if (length > span_cap_ns_) {
    // Only its last upload window: the rest would be one figure per second
    // of a span any local user can make a day long.
    ++stats_.spans_capped;
    stats_.capped_ns += static_cast<uint64_t>(length - span_cap_ns_);
    from_ns = to_ns - span_cap_ns_;
  }
  const size_t seconds = static_cast<size_t>((to_ns - SecondOf(from_ns) + kSecond - 1) / kSecond);
  if (span_seconds_ + seconds > options_.max_span_seconds) {
    ++stats_.spans_dropped;
    return;
  }
  span_seconds_ += seconds;
  for (int64_t s = SecondOf(from_ns); s < to_ns; s += kSecond) {
    const int64_t part = std::min(to_ns, s + kSecond) - std::max(from_ns, s);
    if (part <= 0) continue;
    if (Figures* f = FiguresAt(pid, device, s)) add(*f, static_cast<double>(part) * weight / whole);
  }
}

void GpuActivityAnalyzer::Classify(Connection& c, uint32_t device_id, Device& d, int64_t until,
                                   int64_t trailing_until, double weight,
                                   const std::function<int64_t(int64_t)>& place) {
  std::vector<AnalyzedActivity> due;
  std::vector<AnalyzedActivity> keep;
  for (AnalyzedActivity& a : d.pending) (a.start_ns < until ? due : keep).push_back(std::move(a));
  pending_ -= due.size();
  d.pending = std::move(keep);
  std::sort(due.begin(), due.end(), [](const AnalyzedActivity& a, const AnalyzedActivity& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  const int64_t offset = unix_offset_ns_;
  auto add_piece = [&](const TimelinePiece& p) {
    AddSpan(c.pid, device_id, place(p.from_ns) + offset, place(p.to_ns) + offset,
            weight * static_cast<double>(p.to_ns - p.from_ns), [&](Figures& f, double v) {
              if (p.busy) {
                f.busy_ns[static_cast<int>(p.category)] += v;
              } else {
                f.idle_ns[static_cast<int>(p.reason)] += v;
              }
            });
  };
  d.classified_until = ClassifyTimeline(due, d.classified_until, trailing_until, options_.kernel_wait_max_ns, add_piece);
  // Launch figures and copies in the second the activity started in.
  for (const AnalyzedActivity& a : due) {
    Figures* at = FiguresAt(c.pid, device_id, SecondOf(place(a.start_ns) + offset));
    if (at == nullptr) continue;
    Figures& f = *at;
    const double duration = static_cast<double>(a.end_ns - a.start_ns);
    if (a.memcpy) {
      auto& [ns, bytes] = f.copies[{a.copy_kind, a.memory}];
      ns += duration * weight;
      bytes += static_cast<double>(a.bytes) * weight;
      continue;
    }
    if (a.kernel == nullptr) continue;
    f.kernels += weight;
    f.kernel_ns += duration * weight;
    if (a.launch_ns == 0) continue;
    f.kernels_launch_known += weight;
    f.launch_call_ns += static_cast<double>(a.launch_duration_ns) * weight;
    if (a.start_ns >= a.launch_ns) f.launch_delay_ns += static_cast<double>(a.start_ns - a.launch_ns) * weight;
    if (a.end_ns - a.start_ns < a.launch_duration_ns) f.short_kernels += weight;
  }
  CountSequences(c, device_id, due, weight, [&](int64_t t) { return SecondOf(place(t) + offset); });
}

void GpuActivityAnalyzer::CountSequences(Connection& c, uint32_t device_id, const std::vector<AnalyzedActivity>& sorted,
                                         double weight, const std::function<int64_t(int64_t)>& second_of) {
  // Kernels by launch order per thread: the start order of one device's
  // timeline is the launch order of each thread's kernels on one stream.
  for (const AnalyzedActivity& a : sorted) {
    if (a.kernel == nullptr || a.launch_ns == 0) continue;
    std::vector<const AnalyzedActivity*>& run = c.runs[a.launch_tid];
    // A graph's kernels share its one launch call: they would read as a run
    // launched back to back, but a graph replay is already one launch, and
    // it breaks the thread's run like a big kernel.
    if (a.graph_id != 0 || a.end_ns - a.start_ns > options_.small_kernel_ns) {
      run.clear();
      continue;
    }
    if (!run.empty() && a.launch_ns - run.back()->launch_ns > options_.sequence_gap_ns) run.clear();
    run.push_back(&a);
    if (run.size() < 3) continue;
    // A loop of a, b, c runs abc, bca or cab depending on where a run began:
    // one sequence, rotated to start with its smallest key.
    size_t first = 0;
    for (size_t i = 1; i < 3; ++i) {
      if (run[i]->kernel->key < run[first]->kernel->key) first = i;
    }
    const SequenceKey key{run[first]->kernel->key, run[(first + 1) % 3]->kernel->key, run[(first + 2) % 3]->kernel->key};
    Figures* at = FiguresAt(c.pid, device_id, second_of(run[0]->start_ns));
    if (at == nullptr) {
      run.clear();
      continue;
    }
    Figures& f = *at;
    auto it = f.sequences.find(key);
    if (it == f.sequences.end()) {
      if (f.sequences.size() >= options_.max_sequences) {
        ++stats_.sequences_dropped;
        run.clear();
        continue;
      }
      it = f.sequences.emplace(key, Sequence{}).first;
      it->second.kernels = {run[first]->kernel, run[(first + 1) % 3]->kernel, run[(first + 2) % 3]->kernel};
    }
    Sequence& s = it->second;
    s.count += weight;
    int64_t gpu = 0;
    for (const AnalyzedActivity* k : run) gpu += k->end_ns - k->start_ns;
    s.gpu_ns += static_cast<double>(gpu) * weight;
    s.gap_ns += static_cast<double>(std::max<int64_t>(0, run[2]->end_ns - run[0]->start_ns - gpu)) * weight;
    // Runs do not overlap: each kernel is in one run at most, so the gaps
    // a fusion would remove are counted once.
    run.clear();
  }
  // The runs point into `sorted`, which goes away: keep none across calls
  // (a run split by a classification boundary is not counted).
  c.runs.clear();
}

void GpuActivityAnalyzer::EmitSequences(const Figures& f, const std::vector<std::pair<std::string, std::string>>& base,
                                        int64_t second, std::vector<MetricReading>* out) {
  std::vector<std::pair<const SequenceKey*, const Sequence*>> top;
  for (const auto& [key, s] : f.sequences) top.emplace_back(&key, &s);
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.second->count != b.second->count ? a.second->count > b.second->count : *a.first < *b.first;
  });
  if (top.size() > options_.top_sequences) top.resize(options_.top_sequences);
  for (const auto& [key, s] : top) {
    // A thread's sequence may span devices: labelled by process only.
    std::vector<std::pair<std::string, std::string>> labels;
    for (const auto& label : base) {
      if (label.first != "device") labels.push_back(label);
    }
    labels.emplace_back("sequence", ShortKernelName(s->kernels[0].get()) + " -> " +
                                        ShortKernelName(s->kernels[1].get()) + " -> " +
                                        ShortKernelName(s->kernels[2].get()));
    std::sort(labels.begin(), labels.end());
    out->push_back({"cuda_kernel_sequence_count", "count", labels, s->count, second});
    out->push_back({"cuda_kernel_sequence_gpu_seconds", "seconds", labels, s->gpu_ns / 1e9, second});
    out->push_back({"cuda_kernel_sequence_gap_seconds", "seconds", labels, s->gap_ns / 1e9, second});
    stats_.readings += 3;
  }
}

void GpuActivityAnalyzer::Finish(int64_t now_ns, int64_t unix_offset_ns, bool final,
                                 const std::function<std::string(uint32_t)>& comm_of,
                                 std::vector<MetricReading>* out) {
  unix_offset_ns_ = unix_offset_ns;
  // This window's cap: the time it reports, from the previous Finish (whose
  // classification stopped grace_ns before it) to now.
  if (last_finish_ns_ != 0) {
    span_cap_ns_ = std::clamp<int64_t>(now_ns - last_finish_ns_ + options_.grace_ns, options_.min_span_cap_ns,
                                       std::max(options_.min_span_cap_ns, options_.max_span_ns));
  }
  last_finish_ns_ = now_ns;
  const int64_t watermark = now_ns - options_.grace_ns;
  const auto identity = [](int64_t t) { return t; };
  // pid -> every second before this (monotonic) is final, over its connections.
  std::map<uint32_t, int64_t> complete;
  std::map<uint32_t, std::string> comms;
  auto comm = [&](uint32_t pid) -> const std::string& {
    auto [it, inserted] = comms.try_emplace(pid);
    if (inserted) it->second = comm_of(pid);
    return it->second;
  };
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection& c = it->second;
    const bool ending = c.ended || final;
    for (auto& [id, d] : c.devices) {
      if (c.windowed) {
        if (!ending || d.pending.empty()) continue;
        // The open window's records at weight 1, as the joiner counts them.
        d.classified_until = d.pending.front().start_ns;
        for (const AnalyzedActivity& a : d.pending) d.classified_until = std::min(d.classified_until, a.start_ns);
        Classify(c, id, d, kNever, 0, 1.0, identity);
      } else if (ending) {
        // What it recorded, with no idle time after its last activity.
        Classify(c, id, d, kNever, 0, 1.0, identity);
      } else if (watermark > d.classified_until) {
        Classify(c, id, d, watermark, watermark, 1.0, identity);
      }
    }
    if (ending) {
      c.complete_until = kNever;
    } else if (!c.windowed) {
      c.complete_until = std::max(c.complete_until, watermark);
    }
    auto [at, inserted] = complete.try_emplace(c.pid, c.complete_until);
    if (!inserted) at->second = std::min(at->second, c.complete_until);
    it = ending ? connections_.erase(it) : std::next(it);
  }
  for (auto it = seconds_.begin(); it != seconds_.end();) {
    const auto& [pid, device, second] = it->first;
    auto done = complete.find(pid);
    // Final once every connection of the pid classified past the second (or
    // none is left).
    if (!final && done != complete.end() && done->second != kNever &&
        second + kSecond > done->second + unix_offset_ns) {
      ++it;
      continue;
    }
    const Figures& f = it->second;
    const std::vector<std::pair<std::string, std::string>> base = {
        {"comm", comm(pid)}, {"device", std::to_string(device)}, {"pid", std::to_string(pid)}};
    auto emit = [&](const char* metric, const char* unit, double value,
                    std::vector<std::pair<std::string, std::string>> extra = {}) {
      if (value <= 0) return;
      std::vector<std::pair<std::string, std::string>> labels = base;
      labels.insert(labels.end(), extra.begin(), extra.end());
      std::sort(labels.begin(), labels.end());
      out->push_back({metric, unit, std::move(labels), value, second});
      ++stats_.readings;
    };
    for (int k = 0; k < kGpuWorkCategories; ++k) {
      emit("cuda_gpu_busy_seconds", "seconds", f.busy_ns[k] / 1e9, {{"category", CategoryName(k)}});
    }
    for (int r = 0; r < kGpuIdleReasons; ++r) {
      emit("cuda_gpu_idle_seconds", "seconds", f.idle_ns[r] / 1e9, {{"reason", ReasonName(r)}});
    }
    emit("cuda_kernels", "count", f.kernels);
    emit("cuda_kernels_launch_known", "count", f.kernels_launch_known);
    emit("cuda_short_kernels", "count", f.short_kernels);
    emit("cuda_kernel_seconds", "seconds", f.kernel_ns / 1e9);
    emit("cuda_launch_call_seconds", "seconds", f.launch_call_ns / 1e9);
    emit("cuda_launch_delay_seconds", "seconds", f.launch_delay_ns / 1e9);
    for (const auto& [key, v] : f.copies) {
      const std::vector<std::pair<std::string, std::string>> extra = {{"copy", CopyName(key.first)},
                                                                      {"memory", MemoryName(key.second)}};
      emit("cuda_memcpy_seconds", "seconds", v.first / 1e9, extra);
      emit("cuda_memcpy_bytes", "bytes", v.second, extra);
    }
    EmitSequences(f, base, second, out);
    it = seconds_.erase(it);
  }
  span_seconds_ = 0;
}

}  // namespace warpscope::gpu
