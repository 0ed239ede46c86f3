#include "query/series_json.h"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "model/time_range.h"
#include "query/json_text.h"

namespace warpscope::query {
namespace {

using nlohmann::json;

json LabelsJson(const storage::Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

json RangeJson(const AnswerRange& r) {
  return {{"from", FormatRfc3339(r.from_ns)}, {"to", FormatRfc3339(r.to_ns)}, {"from_ms", r.from_ns / 1'000'000},
          {"to_ms", r.to_ns / 1'000'000}};
}

}  // namespace

std::string RenderSeriesJson(const std::vector<storage::Series>& series, const AnswerRange& range,
                             const std::string& type, int64_t step_ns) {
  json out = RangeJson(range);
  out["type"] = type;
  out["step_ms"] = step_ns / 1'000'000;
  json list = json::array();
  for (const storage::Series& s : series) {
    json points = json::array();
    for (const storage::SeriesPoint& p : s.points) points.push_back({p.time_ns / 1'000'000, p.value});
    list.push_back({{"labels", LabelsJson(s.labels)}, {"points", std::move(points)}});
  }
  out["series"] = std::move(list);
  return DumpJson(out);
}

std::string RenderMetricSeriesJson(const std::vector<storage::MetricSeries>& series, const AnswerRange& range,
                                   const std::string& name, const std::vector<storage::MetricInfo>& infos,
                                   int64_t step_ns) {
  std::string unit;
  for (const storage::MetricInfo& info : infos) {
    if (info.name == name) unit += (unit.empty() ? "" : ",") + info.unit;
  }
  json out = RangeJson(range);
  out["name"] = name;
  out["unit"] = unit;
  out["step_ms"] = step_ns / 1'000'000;
  json list = json::array();
  for (const storage::MetricSeries& s : series) {
    json points = json::array();
    for (const storage::MetricStep& p : s.points) {
      points.push_back({p.time_ns / 1'000'000, p.min, p.max, p.sum / static_cast<double>(p.count)});
    }
    list.push_back({{"labels", LabelsJson(s.labels)}, {"points", std::move(points)}});
  }
  out["series"] = std::move(list);
  return DumpJson(out);
}

std::string RenderMetricNamesJson(const std::vector<storage::MetricInfo>& infos) {
  json list = json::array();
  for (const storage::MetricInfo& info : infos) list.push_back({{"name", info.name}, {"unit", info.unit}});
  return DumpJson(json{{"metrics", std::move(list)}});
}

std::string RenderLabelNamesJson(const std::vector<std::string>& names) { return DumpJson(json{{"names", names}}); }

std::string RenderLabelValuesJson(const std::string& name, const std::vector<std::string>& values) {
  return DumpJson(json{{"name", name}, {"values", values}});
}

std::string RenderTargetsJson(const std::vector<storage::Labels>& label_sets, const AnswerRange& range) {
  static const char* kProcessLabels[] = {"pid", "comm", "exe", "container_id", "container_runtime", "pod_uid",
                                         "qos_class"};
  static const char* kGpuLabels[] = {"gpu", "uuid", "gpu_name", "pci_bus_id"};
  // GPUs by (index, uuid), the index compared as a number ("2" before "10").
  using GpuKey = std::tuple<size_t, std::string, std::string>;
  std::map<std::string, std::map<std::string, json>> nodes;  // node -> process key -> process
  std::map<std::string, std::map<GpuKey, json>> gpus;        // node -> GPU key -> GPU
  std::map<std::string, uint64_t> node_series;
  for (const storage::Labels& labels : label_sets) {
    std::string node, key;
    json process = json::object();
    json gpu = json::object();
    for (const auto& [k, v] : labels) {
      if (k == "node") node = v;
      for (const char* p : kProcessLabels) {
        if (k == p) {
          process[k] = v;
          key += k + "=" + v + "\n";
        }
      }
      for (const char* g : kGpuLabels) {
        if (k == g) gpu[k] = v;
      }
    }
    ++node_series[node];
    if (!key.empty()) nodes[node].emplace(key, std::move(process));
    if (gpu.contains("gpu") || gpu.contains("uuid")) {
      const std::string index = gpu.value("gpu", ""), uuid = gpu.value("uuid", "");
      json& entry = gpus[node][GpuKey{index.size(), index, uuid}];
      if (entry.is_null()) entry = json::object();
      for (auto& [k, v] : gpu.items()) {
        if (!entry.contains(k)) entry[k] = v;
      }
    }
  }
  json list = json::array();
  for (const auto& [node, series] : node_series) {
    json processes = json::array();
    for (auto& [key, p] : nodes[node]) processes.push_back(p);
    json node_gpus = json::array();
    for (auto& [key, g] : gpus[node]) node_gpus.push_back(g);
    list.push_back(
        {{"node", node}, {"series", series}, {"processes", std::move(processes)}, {"gpus", std::move(node_gpus)}});
  }
  json out = RangeJson(range);
  out["nodes"] = std::move(list);
  return DumpJson(out);
}

std::string RenderTypesJson(const std::vector<storage::ProfileTypeInfo>& types) {
  json list = json::array();
  for (const auto& t : types) {
    list.push_back({{"name", t.name}, {"unit", t.sample_unit}, {"period_nanos", t.period_nanos}});
  }
  return DumpJson(json{{"types", std::move(list)}});
}

}  // namespace warpscope::query
