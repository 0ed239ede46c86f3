#include "query/chrome_trace.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "query/frame_label.h"
#include "query/json_text.h"

namespace warpscope::query {

using storage::GpuActivities;
using storage::GpuActivity;
using storage::GpuActivityKind;

namespace {

constexpr int64_t kTidPerDevice = 1'000'000;
// GPU lanes' tids start here, above every Linux thread id (pid_max is at
// most 2^22), so that they never meet a launching thread's tid.
constexpr int64_t kGpuTidBase = 1'000'000'000;

int64_t GpuTid(const GpuActivity& a) { return kGpuTidBase + a.device * kTidPerDevice + a.stream; }

bool HasLaunch(const GpuActivity& a) { return a.kind == GpuActivityKind::kKernel && a.launch_start_ns != 0; }

// CPU sample tracks' tids: above the GPU lanes'.
constexpr int64_t kCpuTidBase = 2'000'000'000;
constexpr int64_t kBucketNs = 1'000'000'000;  // the agent's sample bucket

std::string LabelValue(const storage::Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "";
}

std::string ProcessName(const storage::Labels& labels) {
  const std::string comm = LabelValue(labels, "comm"), pid = LabelValue(labels, "pid"),
                    node = LabelValue(labels, "node");
  std::string out = comm.empty() ? "process" : comm;
  if (!pid.empty()) out += " (" + pid + ")";
  if (!node.empty()) out += " on " + node;
  return out;
}

// CUPTI_ACTIVITY_MEMCPY_KIND_*.
const char* CopyKindName(uint32_t kind) {
  switch (kind) {
    case 1: return "HtoD";
    case 2: return "DtoH";
    case 3: return "HtoA";
    case 4: return "AtoH";
    case 5: return "AtoA";
    case 6: return "AtoD";
    case 7: return "DtoA";
    case 8: return "DtoD";
    case 9: return "HtoH";
    case 10: return "PtoP";
    default: return "";
  }
}

std::string EventName(const GpuActivities& in, const GpuActivity& a) {
  switch (a.kind) {
    case GpuActivityKind::kKernel: {
      const std::string& name = in.names[a.name];
      return name.empty() ? in.names[a.system_name] : name;
    }
    case GpuActivityKind::kMemcpy: {
      const std::string kind = CopyKindName(a.copy_kind);
      return kind.empty() ? "memcpy" : "memcpy " + kind;
    }
    case GpuActivityKind::kMemset: return "memset";
  }
  return "activity";
}

void AppendTriple(const uint32_t (&v)[3], std::string* out) {
  out->push_back('[');
  for (int i = 0; i < 3; ++i) {
    if (i != 0) out->push_back(',');
    AppendJsonInt(v[i], out);
  }
  out->push_back(']');
}

void AppendField(const char* key, int64_t value, std::string* out) {
  out->append(",\"");
  out->append(key);
  out->append("\":");
  AppendJsonInt(value, out);
}

void AppendMetadata(const char* what, int64_t pid, int64_t tid, const std::string& name, std::string* out) {
  out->append("{\"ph\":\"M\",\"name\":\"");
  out->append(what);
  out->append("\",\"pid\":");
  AppendJsonInt(pid, out);
  out->append(",\"tid\":");
  AppendJsonInt(tid, out);
  out->append(",\"args\":{\"name\":");
  AppendJsonString(name, out);
  out->append("}},");
}

// The CPU samples of `cpu` as nested "X" events on one track per lane, in
// the Chrome process of the GPU label set with the lane's node and pid.
// Returns the events left out past kMaxCpuEvents.
uint64_t AppendCpuSamples(const GpuActivities& in, const storage::StackTimeline& cpu, int64_t from_ns, int64_t to_ns,
                          std::string* out) {
  std::map<std::pair<std::string, std::string>, int64_t> chrome_pid;  // (node, pid) -> Chrome pid
  for (size_t p = 0; p < in.label_sets.size(); ++p) {
    chrome_pid.emplace(std::pair{LabelValue(in.label_sets[p], "node"), LabelValue(in.label_sets[p], "pid")},
                       static_cast<int64_t>(p) + 1);
  }
  const storage::MergedProfile& profile = cpu.profile;
  const int64_t ns_per_value = profile.type.sample_unit == "nanoseconds" ? 1 : std::max<int64_t>(profile.type.period_nanos, 1);
  FrameLabelInterner interner;
  StackLabeler labeler(&interner, profile);
  std::vector<std::vector<uint32_t>> root_first(profile.stacks.size());
  std::vector<bool> labelled(profile.stacks.size(), false);
  auto path = [&](uint32_t stack) -> const std::vector<uint32_t>& {
    if (!labelled[stack]) {
      labeler.Label(profile.stacks[stack], &root_first[stack]);
      std::reverse(root_first[stack].begin(), root_first[stack].end());
      labelled[stack] = true;
    }
    return root_first[stack];
  };
  uint64_t events = 0, left_out = 0;
  auto emit = [&](int64_t pid, int64_t tid, uint32_t label, int64_t start, int64_t end) {
    start = std::max(start, from_ns);
    end = std::min(end, to_ns);
    if (end <= start) return;
    if (events >= kMaxCpuEvents) {
      ++left_out;
      return;
    }
    ++events;
    out->append("{\"ph\":\"X\",\"name\":");
    AppendJsonString(interner.label(label).name, out);
    out->append(",\"cat\":\"cpu_sample\"");
    AppendField("pid", pid, out);
    AppendField("tid", tid, out);
    out->append(",\"ts\":" + MicrosecondsText(start - from_ns));
    out->append(",\"dur\":" + MicrosecondsText(end - start));
    const std::string& binary = interner.label(label).binary;
    if (!binary.empty()) {
      out->append(",\"args\":{\"binary\":");
      AppendJsonString(binary, out);
      out->push_back('}');
    }
    out->append("},");
  };
  std::set<uint32_t> named;
  for (size_t begin = 0; begin < cpu.points.size();) {
    // One bucket of one lane: [begin, end).
    const storage::TimelinePoint& first = cpu.points[begin];
    size_t end = begin;
    while (end < cpu.points.size() && cpu.points[end].lane == first.lane && cpu.points[end].time_ns == first.time_ns) ++end;
    const storage::Labels& lane = cpu.lanes[first.lane];
    const auto found = chrome_pid.find({LabelValue(lane, "node"), LabelValue(lane, "pid")});
    if (found == chrome_pid.end()) {
      begin = end;
      continue;
    }
    const int64_t pid = found->second, tid = kCpuTidBase + first.lane;
    if (named.insert(first.lane).second) {
      const std::string thread = LabelValue(lane, "thread");
      AppendMetadata("thread_name", pid, tid, "CPU samples · " + (thread.empty() ? LabelValue(lane, "comm") : thread), out);
    }
    std::vector<const storage::TimelinePoint*> bucket;
    int64_t sum = 0;
    for (size_t i = begin; i < end; ++i) {
      bucket.push_back(&cpu.points[i]);
      sum += cpu.points[i].value * ns_per_value;
    }
    std::sort(bucket.begin(), bucket.end(), [&](const auto* a, const auto* b) {
      const auto& pa = path(a->stack);
      const auto& pb = path(b->stack);
      return std::lexicographical_compare(pa.begin(), pa.end(), pb.begin(), pb.end(), [&](uint32_t x, uint32_t y) {
        return interner.label(x).name < interner.label(y).name || (interner.label(x).name == interner.label(y).name && x < y);
      });
    });
    const double squeeze = sum > kBucketNs ? static_cast<double>(kBucketNs) / static_cast<double>(sum) : 1.0;
    int64_t at = first.time_ns;
    std::vector<std::pair<uint32_t, int64_t>> open;  // (label, start) per depth
    for (const storage::TimelinePoint* p : bucket) {
      const std::vector<uint32_t>& frames = path(p->stack);
      size_t common = 0;
      while (common < open.size() && common < frames.size() && open[common].first == frames[common]) ++common;
      while (open.size() > common) {
        emit(pid, tid, open.back().first, open.back().second, at);
        open.pop_back();
      }
      for (size_t d = common; d < frames.size(); ++d) open.emplace_back(frames[d], at);
      at += static_cast<int64_t>(static_cast<double>(p->value * ns_per_value) * squeeze);
    }
    while (!open.empty()) {
      emit(pid, tid, open.back().first, open.back().second, at);
      open.pop_back();
    }
    begin = end;
  }
  return left_out;
}

}  // namespace

std::string MicrosecondsText(int64_t ns) {
  std::string out;
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  out += std::to_string(ns / 1000);
  const std::string frac = std::to_string(ns % 1000);
  out += "." + std::string(3 - frac.size(), '0') + frac;
  return out;
}

std::string RenderChromeTrace(const GpuActivities& in, int64_t from_ns, int64_t to_ns,
                              const storage::StackTimeline* cpu) {
  std::string out;
  out.reserve(256 + in.activities.size() * 220);
  out.append("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"origin_unix_ns\":");
  AppendJsonInt(from_ns, &out);
  out.append(",\"from_ns\":");
  AppendJsonInt(from_ns, &out);
  out.append(",\"to_ns\":");
  AppendJsonInt(to_ns, &out);
  out.append("},\"traceEvents\":[");
  // Names first: every process, then every (process, device, stream) lane
  // and every launching thread.
  std::set<uint32_t> processes;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> lanes;
  std::set<std::pair<uint32_t, uint32_t>> threads;
  for (const GpuActivity& a : in.activities) {
    processes.insert(a.labels);
    lanes.insert({a.labels, a.device, a.stream});
    if (HasLaunch(a)) threads.insert({a.labels, a.launch_tid});
  }
  for (uint32_t p : processes) {
    AppendMetadata("process_name", p + 1, 0, ProcessName(in.label_sets[p]), &out);
  }
  for (const auto& [p, device, stream] : lanes) {
    AppendMetadata("thread_name", p + 1, kGpuTidBase + device * kTidPerDevice + stream,
                   "GPU " + std::to_string(device) + " stream " + std::to_string(stream), &out);
  }
  for (const auto& [p, tid] : threads) {
    AppendMetadata("thread_name", p + 1, tid, "thread " + std::to_string(tid) + " (CPU)", &out);
  }
  // The CPU side: each launch call once (a graph launch runs many kernels
  // under one correlation id), and a flow from it to each of its kernels.
  std::set<std::pair<uint32_t, uint64_t>> calls;
  int64_t flow = 0;
  for (const GpuActivity& a : in.activities) {
    if (!HasLaunch(a)) continue;
    if (calls.insert({a.labels, a.correlation_id}).second) {
      out.append("{\"ph\":\"X\",\"name\":");
      const std::string api = GpuLaunchApiName(static_cast<uint32_t>(a.launch_api));
      AppendJsonString(api.empty() ? "launch" : api, &out);
      out.append(",\"cat\":\"cuda_api\"");
      AppendField("pid", a.labels + 1, &out);
      AppendField("tid", a.launch_tid, &out);
      out.append(",\"ts\":" + MicrosecondsText(a.launch_start_ns - from_ns));
      out.append(",\"dur\":" + MicrosecondsText(a.launch_duration_ns));
      out.append(",\"args\":{\"correlation_id\":");
      AppendJsonInt(static_cast<int64_t>(a.correlation_id), &out);
      out.append("}},");
    }
    // Flow events bind to the slice enclosing their time: the middle of the
    // call, and the kernel's start ("bp":"e" binds the end to its slice).
    ++flow;
    for (const bool start : {true, false}) {
      out.append(start ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"");
      out.append(",\"name\":\"launch\",\"cat\":\"launch\"");
      AppendField("id", flow, &out);
      AppendField("pid", a.labels + 1, &out);
      AppendField("tid", start ? static_cast<int64_t>(a.launch_tid) : GpuTid(a), &out);
      const int64_t at = start ? a.launch_start_ns + a.launch_duration_ns / 2 : a.start_ns;
      out.append(",\"ts\":" + MicrosecondsText(at - from_ns));
      out.append("},");
    }
  }
  for (const GpuActivity& a : in.activities) {
    out.append("{\"ph\":\"X\",\"name\":");
    AppendJsonString(EventName(in, a), &out);
    out.append(",\"cat\":\"");
    out.append(a.kind == GpuActivityKind::kKernel ? "kernel" : a.kind == GpuActivityKind::kMemcpy ? "memcpy" : "memset");
    out.push_back('"');
    AppendField("pid", a.labels + 1, &out);
    AppendField("tid", GpuTid(a), &out);
    out.append(",\"ts\":" + MicrosecondsText(a.start_ns - from_ns));
    out.append(",\"dur\":" + MicrosecondsText(a.duration_ns));
    out.append(",\"args\":{\"correlation_id\":");
    AppendJsonInt(static_cast<int64_t>(a.correlation_id), &out);
    AppendField("graph_id", static_cast<int64_t>(a.graph_id), &out);
    if (a.kind == GpuActivityKind::kKernel) {
      out.append(",\"grid\":");
      AppendTriple(a.grid, &out);
      out.append(",\"block\":");
      AppendTriple(a.block, &out);
      AppendField("registers_per_thread", a.registers_per_thread, &out);
      AppendField("static_shared_bytes", a.static_shared_bytes, &out);
      AppendField("dynamic_shared_bytes", a.dynamic_shared_bytes, &out);
    } else {
      AppendField("bytes", static_cast<int64_t>(a.bytes), &out);
    }
    out.append("}},");
  }
  const uint64_t cpu_left_out = cpu != nullptr ? AppendCpuSamples(in, *cpu, from_ns, to_ns, &out) : 0;
  if (out.back() == ',') out.pop_back();
  out.append("]");
  if (cpu_left_out > 0) {
    out.append(",\"cpu_events_left_out\":");
    AppendJsonInt(static_cast<int64_t>(cpu_left_out), &out);
  }
  out.append("}");
  return out;
}

}  // namespace warpscope::query
