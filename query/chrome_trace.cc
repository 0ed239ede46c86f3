#include "query/chrome_trace.h"

#include <set>
#include <utility>

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

std::string RenderChromeTrace(const GpuActivities& in, int64_t from_ns, int64_t to_ns) {
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
  if (out.back() == ',') out.pop_back();
  out.append("]}");
  return out;
}

}  // namespace warpscope::query
