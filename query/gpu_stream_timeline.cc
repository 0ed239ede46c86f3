#include "query/gpu_stream_timeline.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "query/json_text.h"

namespace warpscope::query {

using storage::GpuActivities;
using storage::GpuActivity;

namespace {

void AppendLabels(const storage::Labels& labels, std::string* out) {
  out->push_back('{');
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i != 0) out->push_back(',');
    AppendJsonString(labels[i].first, out);
    out->push_back(':');
    AppendJsonString(labels[i].second, out);
  }
  out->push_back('}');
}

void AppendKey(const char* key, std::string* out) {
  out->push_back('"');
  out->append(key);
  out->append("\":");
}

}  // namespace

std::vector<GpuStreamLane> BuildStreamTimeline(const GpuActivities& in, int64_t from_ns, int64_t to_ns) {
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, GpuStreamLane> lanes;
  for (uint32_t i = 0; i < in.activities.size(); ++i) {
    const GpuActivity& a = in.activities[i];
    GpuStreamLane& lane = lanes[{a.labels, a.device, a.stream}];
    lane.labels = a.labels;
    lane.device = a.device;
    lane.stream = a.stream;
    lane.activities.push_back(i);
  }
  std::vector<GpuStreamLane> out;
  out.reserve(lanes.size());
  for (auto& [key, lane] : lanes) {
    // Activities are sorted by start already (GpuActivities), so the union
    // is one sweep.
    std::stable_sort(lane.activities.begin(), lane.activities.end(),
                     [&](uint32_t a, uint32_t b) { return in.activities[a].start_ns < in.activities[b].start_ns; });
    int64_t covered_until = from_ns;
    for (uint32_t i : lane.activities) {
      const GpuActivity& a = in.activities[i];
      const int64_t start = std::max({a.start_ns, covered_until, from_ns});
      const int64_t end = std::min(a.start_ns + a.duration_ns, to_ns);
      if (end > start) {
        lane.busy_ns += end - start;
        covered_until = end;
      }
    }
    out.push_back(std::move(lane));
  }
  return out;
}

std::string RenderGpuTraceJson(const GpuActivities& in, int64_t from_ns, int64_t to_ns) {
  std::string out;
  out.reserve(256 + in.activities.size() * 48);
  out.push_back('{');
  AppendKey("from_ns", &out);
  AppendJsonInt(from_ns, &out);
  out.push_back(',');
  AppendKey("to_ns", &out);
  AppendJsonInt(to_ns, &out);
  out.push_back(',');
  AppendKey("names", &out);
  out.push_back('[');
  for (size_t i = 0; i < in.names.size(); ++i) {
    if (i != 0) out.push_back(',');
    AppendJsonString(in.names[i], &out);
  }
  out.append("],");
  AppendKey("launch_apis", &out);
  out.push_back('[');
  for (uint32_t i = 0; i < kGpuLaunchApiCount; ++i) {
    if (i != 0) out.push_back(',');
    AppendJsonString(GpuLaunchApiName(i), &out);
  }
  out.append("],");
  AppendKey("streams", &out);
  out.push_back('[');
  const std::vector<GpuStreamLane> lanes = BuildStreamTimeline(in, from_ns, to_ns);
  for (size_t l = 0; l < lanes.size(); ++l) {
    const GpuStreamLane& lane = lanes[l];
    if (l != 0) out.push_back(',');
    out.push_back('{');
    AppendKey("labels", &out);
    AppendLabels(in.label_sets[lane.labels], &out);
    out.push_back(',');
    AppendKey("device", &out);
    AppendJsonInt(lane.device, &out);
    out.push_back(',');
    AppendKey("stream", &out);
    AppendJsonInt(lane.stream, &out);
    out.push_back(',');
    AppendKey("busy_ns", &out);
    AppendJsonInt(lane.busy_ns, &out);
    out.push_back(',');
    AppendKey("activities", &out);
    out.push_back('[');
    for (size_t i = 0; i < lane.activities.size(); ++i) {
      const GpuActivity& a = in.activities[lane.activities[i]];
      if (i != 0) out.push_back(',');
      out.push_back('[');
      for (int64_t v : {a.start_ns, a.duration_ns, static_cast<int64_t>(a.name), static_cast<int64_t>(a.kind),
                        static_cast<int64_t>(a.correlation_id), static_cast<int64_t>(a.graph_id), a.launch_start_ns,
                        a.launch_duration_ns, static_cast<int64_t>(a.launch_tid),
                        static_cast<int64_t>(a.launch_api)}) {
        if (out.back() != '[') out.push_back(',');
        AppendJsonInt(v, &out);
      }
      out.push_back(']');
    }
    out.append("]}");
  }
  out.append("],");
  AppendKey("coverage", &out);
  out.push_back('[');
  for (size_t i = 0; i < in.coverage.size(); ++i) {
    const storage::GpuTraceCoverage& c = in.coverage[i];
    if (i != 0) out.push_back(',');
    out.push_back('{');
    AppendKey("labels", &out);
    AppendLabels(in.label_sets[c.labels], &out);
    out.push_back(',');
    AppendKey("second_ns", &out);
    AppendJsonInt(c.second_ns, &out);
    out.push_back(',');
    AppendKey("recorded", &out);
    AppendJsonInt(static_cast<int64_t>(c.recorded), &out);
    out.push_back(',');
    AppendKey("sent", &out);
    AppendJsonInt(static_cast<int64_t>(c.sent), &out);
    out.push_back(',');
    AppendKey("complete_until_ns", &out);
    AppendJsonInt(c.complete_until_ns, &out);
    out.push_back('}');
  }
  out.append("]}");
  return out;
}

}  // namespace warpscope::query
