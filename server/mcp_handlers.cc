#include "server/mcp_handlers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "query/json_text.h"
#include "server/api_params.h"
#include "server/mcp_endpoint.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using Params = std::multimap<std::string, std::string>;

constexpr int64_t kNsPerMs = 1'000'000;

constexpr char kInstructions[] =
    "warpscope is a continuous profiler of CPUs and NVIDIA GPUs. To find out why a job is slow, call get_insights "
    "over the job's time range first: each insight names the process, what held it back, the evidence and a fix. "
    "Then look closer: top_functions and flame_graph_summary for where the time went (type cpu: on-CPU samples; "
    "off_cpu: time blocked; gpu_time: GPU kernel time under the stacks that launched it; gpu_wait: time blocked in "
    "CUDA synchronisation), gpu_kernels for the kernels the GPUs ran, gpu_metrics_summary for each GPU's "
    "utilization, memory, power and clocks. list_targets says which nodes, processes and GPUs have data in a "
    "range, list_profile_types which types are stored. Times are RFC 3339 (2026-11-29T12:00:00Z), unix "
    "milliseconds or relative to now (now-1h, now-15m); the default range is the last hour. Narrow any tool with "
    "a selector such as {node=\"gpu-7\", pid=\"4242\"}.";

// The device-level GPU metrics gpu_metrics_summary summarizes (the agent's
// NVML gauges), in this order where stored; counters and bitmasks
// (gpu_energy, gpu_clock_event_reasons, ECC) have no meaningful mean.
constexpr const char* kSummarizedGpuMetrics[] = {
    "gpu_utilization",    "gpu_memory_utilization", "gpu_sm_activity", "gpu_sm_occupancy",
    "gpu_tensor_activity", "gpu_dram_bandwidth",    "gpu_memory_used", "gpu_memory_total",
    "gpu_power",          "gpu_power_limit",        "gpu_sm_clock",    "gpu_memory_clock",
    "gpu_temperature",    "gpu_pcie_rx",            "gpu_pcie_tx"};
// gpu_metrics_summary's step: at most this many per range, at least 1 s.
constexpr int64_t kMetricSummarySteps = 3600;

json Property(const std::string& type, const std::string& description) {
  return {{"type", type}, {"description", description}};
}

// from, to and selector, which every range tool takes, plus `extra`.
json RangeSchema(json extra = json::object()) {
  json properties = {
      {"from", Property("string",
                        "Start of the range: RFC 3339 (2026-11-29T12:00:00Z), unix milliseconds, or relative to now "
                        "(now-1h, now-30m, now-2d). Default: now-1h.")},
      {"to", Property("string", "End of the range (exclusive), in the same forms. Default: now.")},
      {"selector", Property("string",
                            "Prometheus-style label selector narrowing what is read, e.g. {node=\"gpu-7\", "
                            "pid=\"4242\"} or {comm=~\"python.*\"}. Labels: node, pid, comm (process name), exe, "
                            "thread, and container/pod labels where known. Default: everything.")}};
  for (auto& [key, value] : extra.items()) properties[key] = value;
  return {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
}

json ProfileTypeProperty() {
  return Property("string",
                  "Profile type: cpu (on-CPU samples), off_cpu (nanoseconds threads spent blocked), gpu_time "
                  "(nanoseconds of GPU kernel time under the launching stacks), gpu_wait (nanoseconds blocked in "
                  "CUDA synchronisation). list_profile_types lists those stored. Default: cpu.");
}

json IntegerProperty(const std::string& description, int64_t fallback, int64_t min, int64_t max) {
  return {{"type", "integer"}, {"description", description}, {"default", fallback}, {"minimum", min},
          {"maximum", max}};
}

// v to `digits` decimals, printed as such (0.8261, not 0.8261000000000001).
double Round(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Percent(double share) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.1f%%", share * 100);
  return buf;
}

std::string KindName(int kind) {
  switch (kind) {
    case 0: return "native";
    case 1: return "kernel";
    case 2: return "python";
    case 4: return "cuda_kernel";
    default: return "other";
  }
}

// Nearest rank: the smallest value with at least p of the values at or below it.
double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

// The tools over the API's own routes.
class McpTools {
 public:
  McpTools(const http::Routes& routes, ApiOptions options) : options_(std::move(options)) {
    for (const char* path : {"/api/v1/insights", "/api/v1/top", "/api/v1/profile", "/api/v1/gpu/kernels",
                             "/api/v1/metrics", "/api/v1/metric_names", "/api/v1/targets", "/api/v1/types"}) {
      auto route = std::find_if(routes.begin(), routes.end(),
                                [&](const http::Route& r) { return r.method == "GET" && r.path == path; });
      CHECK(route != routes.end()) << "AddMcpRoutes needs GET " << path << " in the route table";
      api_.emplace(path, route->handler);
    }
  }

  json Insights(const json& args) const {
    auto params = RangeParams(args);
    if (!params.ok()) return McpToolError(params.status().message());
    if (args.contains("top")) params->emplace("top", std::to_string(args["top"].get<int64_t>()));
    auto answer = Get("/api/v1/insights", *params);
    if (!answer.ok()) return McpToolError(answer.status().message());
    // The per-step sparklines are for drawing; ranges and numbers say the same in fewer tokens.
    if (answer->contains("insights") && (*answer)["insights"].is_array()) {
      for (json& insight : (*answer)["insights"]) insight.erase("sparkline");
    }
    return Answer(std::move(answer).value());
  }

  json TopFunctions(const json& args) const {
    auto params = RangeParams(args);
    if (!params.ok()) return McpToolError(params.status().message());
    params->emplace("sort", args.value("sort", "self"));
    params->emplace("limit", std::to_string(args.value("limit", int64_t{20})));
    auto answer = Get("/api/v1/top", *params);
    if (!answer.ok()) return McpToolError(answer.status().message());
    const double total = answer->value("total", 0.0);
    if (total > 0 && answer->contains("functions")) {
      for (json& f : (*answer)["functions"]) {
        f["self_share"] = Round(f.value("self", 0.0) / total, 4);
        f["total_share"] = Round(f.value("total", 0.0) / total, 4);
      }
    }
    return Answer(std::move(answer).value());
  }

  json FlameGraphSummary(const json& args) const {
    auto params = RangeParams(args);
    if (!params.ok()) return McpToolError(params.status().message());
    params->emplace("format", "json");
    auto graph = Get("/api/v1/profile", *params);
    if (!graph.ok()) return McpToolError(graph.status().message());
    return SummarizeFlameGraph(*graph, args.value("depth", int64_t{12}), args.value("min_share", 0.02),
                               static_cast<size_t>(args.value("max_lines", int64_t{60})));
  }

  json GpuKernels(const json& args) const {
    auto params = RangeParams(args);
    if (!params.ok()) return McpToolError(params.status().message());
    auto answer = Get("/api/v1/gpu/kernels", *params);
    if (!answer.ok()) return McpToolError(answer.status().message());
    const size_t limit = static_cast<size_t>(args.value("limit", int64_t{20}));
    if (answer->contains("kernels") && (*answer)["kernels"].is_array() && (*answer)["kernels"].size() > limit) {
      json& kernels = (*answer)["kernels"];
      (*answer)["kernels_left_out"] = kernels.size() - limit;
      kernels.erase(kernels.begin() + static_cast<std::ptrdiff_t>(limit), kernels.end());
    }
    return Answer(std::move(answer).value());
  }

  json GpuMetricsSummary(const json& args) const {
    auto range = ResolveRange(args);
    if (!range.ok()) return McpToolError(range.status().message());
    auto params = RangeParams(args);
    if (!params.ok()) return McpToolError(params.status().message());
    auto names = Get("/api/v1/metric_names", {});
    if (!names.ok()) return McpToolError(names.status().message());
    const int64_t span_ms = (range->to_ns - range->from_ns + kNsPerMs - 1) / kNsPerMs;
    const int64_t step_s =
        std::max<int64_t>(1, (span_ms + kMetricSummarySteps * 1000 - 1) / (kMetricSummarySteps * 1000));
    using Gpu = std::tuple<std::string, std::string>;  // node, gpu
    std::map<Gpu, json> gpus;
    for (const char* name : kSummarizedGpuMetrics) {
      const json stored = names->value("metrics", json::array());
      if (std::none_of(stored.begin(), stored.end(), [&](const json& m) { return m.value("name", "") == name; })) {
        continue;
      }
      Params p = *params;
      p.emplace("name", name);
      p.emplace("group_by", "node,gpu,gpu_name,uuid");
      p.emplace("step", std::to_string(step_s) + "s");
      auto series = Get("/api/v1/metrics", p);
      if (!series.ok()) return McpToolError(series.status().message());
      for (const json& s : series->value("series", json::array())) {
        const json labels = s.value("labels", json::object());
        const json points = s.value("points", json::array());
        const std::string gpu = labels.value("gpu", "");
        if (gpu.empty() || points.empty()) continue;  // not a device's series
        json& entry = gpus[{labels.value("node", ""), gpu}];
        if (entry.is_null()) {
          entry = {{"node", labels.value("node", "")}, {"gpu", gpu}, {"gpu_name", labels.value("gpu_name", "")},
                   {"uuid", labels.value("uuid", "")}, {"metrics", json::object()}};
        }
        // points: [t_ms, min, max, avg] per step; steps weigh equally (time-weighted).
        std::vector<double> means;
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        for (const json& point : points) {
          lo = std::min(lo, point[1].get<double>());
          hi = std::max(hi, point[2].get<double>());
          means.push_back(point[3].get<double>());
          sum += means.back();
        }
        entry["metrics"][name] = {{"unit", series->value("unit", "")},
                                  {"mean", Round(sum / static_cast<double>(means.size()), 2)},
                                  {"min", Round(lo, 2)},
                                  {"max", Round(hi, 2)},
                                  {"p95", Round(Percentile(means, 0.95), 2)},
                                  {"steps", means.size()}};
      }
    }
    json out = {{"from_ms", range->from_ns / kNsPerMs},
                {"to_ms", range->to_ns / kNsPerMs},
                {"step_ms", step_s * 1000},
                {"gpus", json::array()}};
    for (auto& [key, entry] : gpus) out["gpus"].push_back(std::move(entry));
    if (out["gpus"].empty()) {
      out["note"] = "no GPU metrics in this range and selector: the agents on GPU nodes send them from NVML";
    }
    return Answer(std::move(out));
  }

  json Targets(const json& args) const {
    auto params = RangeParams(args);
    if (!params.ok()) return McpToolError(params.status().message());
    if (!args.contains("type")) params->erase("type");  // every type and metric
    auto answer = Get("/api/v1/targets", *params);
    if (!answer.ok()) return McpToolError(answer.status().message());
    return Answer(std::move(answer).value());
  }

  json ProfileTypes(const json&) const {
    auto types = Get("/api/v1/types", {});
    if (!types.ok()) return McpToolError(types.status().message());
    auto metrics = Get("/api/v1/metric_names", {});
    if (!metrics.ok()) return McpToolError(metrics.status().message());
    return Answer({{"types", (*types)["types"]}, {"metrics", (*metrics)["metrics"]}});
  }

 private:
  // The tool's range (and selector, type) as the API reads them, so a bad
  // one is the API's own message.
  StatusOr<storage::ProfileQuery> ResolveRange(const json& args) const {
    http::HttpRequest req;
    for (const char* key : {"from", "to", "selector", "type"}) {
      if (args.contains(key)) req.query.emplace(key, args[key].get<std::string>());
    }
    return ParseProfileQuery(req, options_.now_ns());
  }

  // from and to fixed once (every call of one tool reads the same range,
  // whatever "now" is by then), selector and type. The ends go on as RFC 3339
  // to the nanosecond, so the routes see exactly the range the API would:
  // rounded to milliseconds, a range at the API's longest span (now-31d)
  // came out a millisecond longer and was refused.
  StatusOr<Params> RangeParams(const json& args) const {
    ASSIGN_OR_RETURN(storage::ProfileQuery q, ResolveRange(args));
    Params p;
    p.emplace("from", FormatRfc3339(q.from_ns));
    p.emplace("to", FormatRfc3339(q.to_ns));
    if (args.contains("selector")) p.emplace("selector", args["selector"].get<std::string>());
    p.emplace("type", q.type);
    return p;
  }

  // GET `path` through its route; the JSON answer, or the route's error
  // message (it names the parameter, which is the tool's argument).
  StatusOr<json> Get(const std::string& path, Params params) const {
    http::HttpRequest req;
    req.method = "GET";
    req.path = path;
    req.query = std::move(params);
    const http::HttpResponse r = api_.at(path)(req);
    json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (r.status != 200) {
      std::string message = "the query failed (HTTP " + std::to_string(r.status) + ")";
      if (body.is_object() && body.contains("error") && body["error"].is_object()) {
        message = body["error"].value("message", message);
      }
      return r.status >= 500 ? UnavailableError(message) : InvalidArgumentError(message);
    }
    if (!body.is_object()) return InternalError("GET " + path + " answered something other than a JSON object");
    return body;
  }

  static json Answer(json body) {
    std::string text = query::DumpJson(body);
    return McpToolResult(std::move(text), std::move(body));
  }

  // The hottest paths of a flame-graph answer (flame_graph.h) as indented
  // lines: every node with at least `min_share` of the total, `depth` levels
  // deep, biggest first. A chain of frames that hands on all but less than
  // min_share of its value is one line ("a > b > c"), so deep Python and
  // framework stacks still reach their interesting frames.
  static json SummarizeFlameGraph(const json& graph, int64_t max_depth, double min_share, size_t max_lines) {
    const json& nodes = graph["nodes"];
    const json& names = graph["names"];
    const json& binaries = graph["binaries"];
    const double total = graph.value("total", 0.0);
    json out = {{"type", graph.value("type", "")},   {"unit", graph.value("unit", "")},
                {"period_nanos", graph.value("period_nanos", 0)}, {"total", graph.value("total", 0)},
                {"min_share", min_share},            {"depth", max_depth},
                {"lines", json::array()},            {"lines_left_out", 0}};
    if (graph.contains("incomplete")) out["incomplete"] = graph["incomplete"];
    std::string text = out["type"].get<std::string>() + " profile, total " + query::DumpJson(out["total"]) + " " +
                       out["unit"].get<std::string>();
    if (nodes.empty() || total <= 0) return McpToolResult(text + ": no samples in this range and selector.", out);
    text += "; paths with at least " + Percent(min_share) + " of it (share of total, self share, frames):\n";
    // Node columns: [parent, name, binary, kind, self, total]; preorder.
    std::vector<std::vector<size_t>> children(nodes.size());
    for (size_t i = 1; i < nodes.size(); ++i) {
      const int64_t parent = nodes[i][0].get<int64_t>();
      if (parent >= 0 && static_cast<size_t>(parent) < i) children[static_cast<size_t>(parent)].push_back(i);
    }
    auto value = [&](size_t i, int column) { return nodes[i][column].get<double>(); };
    const double threshold = min_share * total;
    auto kept = [&](size_t i) {
      std::vector<size_t> k;
      for (size_t c : children[i]) {
        if (value(c, 5) >= threshold) k.push_back(c);
      }
      std::sort(k.begin(), k.end(), [&](size_t a, size_t b) { return value(a, 5) > value(b, 5); });
      return k;
    };
    size_t left_out = 0;
    // Depth-first, biggest child first; an explicit stack of (node, depth).
    std::vector<std::pair<size_t, int64_t>> stack;
    for (auto it = kept(0); !it.empty(); it.pop_back()) stack.emplace_back(it.back(), 1);
    while (!stack.empty()) {
      auto [node, depth] = stack.back();
      stack.pop_back();
      std::vector<size_t> chain = {node};
      std::vector<size_t> next = kept(node);
      while (next.size() == 1 && value(chain.back(), 5) - value(next[0], 5) < threshold) {
        chain.push_back(next[0]);
        next = kept(next[0]);
      }
      if (out["lines"].size() >= max_lines) {
        ++left_out;
        continue;
      }
      const size_t last = chain.back();
      json frames = json::array();
      std::string line(static_cast<size_t>(2 * (depth - 1)), ' ');
      line += Percent(value(last, 5) / total) + " (self " + Percent(value(last, 4) / total) + ") ";
      for (size_t i = 0; i < chain.size(); ++i) {
        const size_t n = chain[i];
        const std::string name = names[nodes[n][1].get<size_t>()].get<std::string>();
        const std::string binary = binaries[nodes[n][2].get<size_t>()].get<std::string>();
        const int kind = nodes[n][3].get<int>();
        frames.push_back({{"name", name}, {"binary", binary}, {"kind", KindName(kind)}});
        line += (i ? " > " : "") + name + (binary.empty() ? "" : " [" + Basename(binary) + "]");
      }
      text += line + "\n";
      out["lines"].push_back({{"depth", depth},
                              {"share", Round(value(last, 5) / total, 4)},
                              {"self_share", Round(value(last, 4) / total, 4)},
                              {"value", nodes[last][5]},
                              {"frames", std::move(frames)}});
      if (depth < max_depth) {
        for (auto it = next.rbegin(); it != next.rend(); ++it) stack.emplace_back(*it, depth + 1);
      }
    }
    out["lines_left_out"] = left_out;
    if (out["lines"].empty()) text += "(no path has " + Percent(min_share) + " of the total: lower min_share)\n";
    if (left_out > 0) text += "(" + std::to_string(left_out) + " more paths left out: raise max_lines or min_share)\n";
    return McpToolResult(std::move(text), std::move(out));
  }

  std::map<std::string, http::HttpHandler> api_;
  ApiOptions options_;
};

std::vector<McpTool> Tools(std::shared_ptr<const McpTools> t) {
  using Method = json (McpTools::*)(const json&) const;
  auto bind = [t](Method fn) { return [t, fn](const json& args) { return ((*t).*fn)(args); }; };
  const json type = ProfileTypeProperty();
  std::vector<McpTool> tools;
  tools.push_back(
      {"get_insights", "Insights: why is it slow",
       "warpscope's findings over a time range, with evidence, largest possible saving first: gpu_starved_by_cpu "
       "(a process's GPU underused while one of its threads is CPU-bound; names the top CPU functions) and "
       "sync_heavy (a thread blocked in CUDA synchronisation for a large share of the range; names the call sites "
       "and the kernels waited for). Each has target (node, pid, comm, gpu or thread), severity, confidence, "
       "summary, fix, numbers, the time ranges of the evidence and the functions. Start here.",
       RangeSchema({{"top", IntegerProperty("Functions named per insight.", 5, 1, 50)}}), bind(&McpTools::Insights)});
  tools.push_back(
      {"top_functions", "Top functions",
       "The functions a profile's value went to, by self (stacks whose leaf is the function) or total (stacks "
       "that contain it), with shares of the profile's total. For type cpu the values are samples.",
       RangeSchema({{"type", type},
                    {"sort", {{"type", "string"},
                              {"enum", {"self", "total"}},
                              {"default", "self"},
                              {"description", "Order by self or by total value."}}},
                    {"limit", IntegerProperty("Functions listed.", 20, 1, 500)}}),
       bind(&McpTools::TopFunctions)});
  tools.push_back(
      {"flame_graph_summary", "Flame graph summary",
       "The hottest call paths of a profile, as indented text an assistant can read instead of the whole tree: "
       "every path with at least min_share of the total, down to depth levels, biggest first, each line its share "
       "of the total, its self share and its frames (a chain of frames that passes on nearly all of its time is "
       "one line, a > b > c). structuredContent has the same lines with names, binaries and frame kinds.",
       RangeSchema({{"type", type},
                    {"depth", IntegerProperty("Levels of lines below the root.", 12, 1, 64)},
                    {"min_share",
                     {{"type", "number"},
                      {"description", "Smallest share of the total (0-1) a path needs to be listed."},
                      {"default", 0.02},
                      {"minimum", 0.001},
                      {"maximum", 1}}},
                    {"max_lines", IntegerProperty("Lines at most.", 60, 1, 500)}}),
       bind(&McpTools::FlameGraphSummary)});
  tools.push_back(
      {"gpu_kernels", "GPU kernels",
       "The CUDA kernels, memcpys and memsets the GPUs ran in the range (the agent's CUPTI trace), per name: "
       "launches, total, mean, p50, p95 and max duration in nanoseconds, the common launch configuration and the "
       "share of all GPU time; largest total first. recorded/sent say how much of the trace the agent kept.",
       RangeSchema({{"limit", IntegerProperty("Kernels listed.", 20, 1, 500)}}), bind(&McpTools::GpuKernels)});
  tools.push_back(
      {"gpu_metrics_summary", "GPU metrics summary",
       "Per GPU (node, index, name, uuid): mean, min, max and p95 of its NVML metrics over the range: "
       "utilization, memory utilization and memory used, power, SM and memory clocks, temperature, PCIe "
       "throughput and, where the GPU reports them, SM activity/occupancy, tensor activity and DRAM bandwidth. "
       "mean and p95 are over per-step means (step_ms); min and max over every raw reading.",
       RangeSchema(), bind(&McpTools::GpuMetricsSummary)});
  tools.push_back({"list_targets", "List targets",
                   "The nodes with data in the range, and on each its processes (pid, comm, exe, container) and "
                   "GPUs (index, uuid, name): what there is to ask about. With type, only series of that profile "
                   "type.",
                   RangeSchema({{"type", Property("string", "Only series of this profile type (cpu, off_cpu, "
                                                            "gpu_time, gpu_wait). Default: every type and metric.")}}),
                   bind(&McpTools::Targets)});
  tools.push_back({"list_profile_types", "List profile types",
                   "The profile types stored at any time (name, unit, sampling period) and the metrics stored "
                   "(name, unit): what top_functions, flame_graph_summary and gpu_metrics_summary can read.",
                   {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}},
                   bind(&McpTools::ProfileTypes)});
  return tools;
}

}  // namespace

void AddMcpRoutes(const ApiOptions& options, http::Routes* routes) {
  McpServerInfo info;
  info.name = "warpscope";
  info.title = "warpscope profiler";
  info.version = WARPSCOPE_VERSION;
  info.instructions = kInstructions;
  auto endpoint = std::make_shared<const McpEndpoint>(
      std::move(info), Tools(std::make_shared<const McpTools>(*routes, options)),
      options.limits != nullptr ? &options.limits->counters : nullptr);
  http::Route route{"POST", "/mcp", [endpoint](const http::HttpRequest& req) { return endpoint->Handle(req); }};
  route.needs_token = true;
  routes->push_back(std::move(route));
}

}  // namespace warpscope::server
