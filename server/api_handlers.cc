#include "server/api_handlers.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/duration.h"
#include "base/logging.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "query/flame_chart.h"
#include "query/flame_graph.h"
#include "query/profile_diff.h"
#include "query/profile_export.h"
#include "query/selector.h"
#include "query/time_range.h"
#include "query/top_table.h"
#include "server/api_params.h"
#include "server/gpu_handlers.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using storage::MergedProfile;
using storage::ProfileQuery;
using storage::ProfileStore;

// group_by=a,b,c (at most 8 labels); `fallback` when absent.
StatusOr<std::vector<std::string>> ParseGroupBy(const HttpRequest& req, const std::string& fallback) {
  const std::string text = req.QueryValue("group_by").value_or(fallback);
  std::vector<std::string> names;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string name = text.substr(start, comma - start);
    if (!name.empty()) names.push_back(std::move(name));
    start = comma + 1;
  }
  if (names.size() > 8) return InvalidArgumentError("parameter 'group_by': at most 8 labels");
  return names;
}

// The step of a series answer over `range`: `step` when given (a duration of
// at least 1 ms, at most 10000 points), else the smallest round step giving at
// most `max_points` (default 300) points.
StatusOr<int64_t> ParseStep(const HttpRequest& req, const TimeRange& range) {
  auto max_points = ParseUnsigned(req, "max_points", 300, 10'000);
  if (!max_points.ok()) return max_points.status();
  int64_t step_ns = ChooseStep(range, static_cast<int>(std::max<uint64_t>(*max_points, 1)));
  if (auto step = req.QueryValue("step"); step && !step->empty()) {
    auto parsed = ParseDuration(*step);
    if (!parsed.ok() || parsed->count() < 1'000'000) {
      return InvalidArgumentError("parameter 'step': expected a duration of at least 1ms like 10s or 1m, found \"" +
                                  *step + "\"");
    }
    if (range.span_ns() / parsed->count() > 10'000) {
      return InvalidArgumentError("parameter 'step': more than 10000 points over the range; use a larger step");
    }
    step_ns = parsed->count();
  }
  return step_ns;
}

// A Content-Type's media type, lower-cased, without parameters or spaces:
// "Application/X-Protobuf; foo=bar" -> "application/x-protobuf".
std::string MediaType(const std::string& content_type) {
  std::string out;
  for (char c : content_type.substr(0, content_type.find(';'))) {
    if (c != ' ' && c != '\t') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

json LabelsJson(const storage::Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

json RangeJson(const ProfileQuery& q) {
  return {{"from", FormatRfc3339(q.from_ns)}, {"to", FormatRfc3339(q.to_ns)}, {"from_ms", q.from_ns / 1'000'000},
          {"to_ms", q.to_ns / 1'000'000}};
}

class Handlers {
 public:
  Handlers(ProfileStore* store, ApiOptions options) : store_(store), options_(std::move(options)) {}

  HttpResponse Ingest(const HttpRequest& req) const {
    const std::string type = req.Header("content-type").value_or("");
    const std::string media = MediaType(type);
    if (media != "application/x-protobuf" && media != "application/octet-stream") {
      return HttpResponse::Error(415, "ingest takes Content-Type application/x-protobuf (a warpscope.v1.IngestBatch), "
                                      "found \"" + type + "\"");
    }
    // Parsed into an arena: a batch is thousands of small messages and
    // strings, and freeing them one by one cost ~15% of ingest CPU.
    google::protobuf::ArenaOptions arena_options;
    arena_options.start_block_size = 64 << 10;
    arena_options.max_block_size = 1 << 20;
    google::protobuf::Arena arena(arena_options);
    auto& batch = *google::protobuf::Arena::CreateMessage<warpscope::v1::IngestBatch>(&arena);
    if (req.body.empty() || !batch.ParseFromString(req.body)) {
      return HttpResponse::Error(400, "body is not a warpscope.v1.IngestBatch protobuf");
    }
    auto result = store_->Ingest(batch);
    if (!result.ok()) {
      if (HttpStatusFor(result.status()) >= 500) {
        LOG_WARNING_EVERY_N_SEC(10) << "ingest from agent " << batch.agent_id() << ": " << result.status().message();
      }
      return ErrorFor(result.status());
    }
    if (result->dropped.total() > 0) {
      LOG_WARNING_EVERY_N_SEC(60) << "ingest from agent " << batch.agent_id() << ": dropped "
                                  << result->dropped.too_old << " rows older than retention and "
                                  << result->dropped.too_new << " rows more than "
                                  << storage::kDefaultMaxFutureSkewNs / 1'000'000'000
                                  << " s in the future (is the node's clock right?)";
    }
    return JsonOk({{"stored_samples", result->samples},
                   {"stored_metric_points", result->metric_points},
                   {"stored_gpu_activities", result->gpu_activities},
                   {"dropped_too_old", result->dropped.too_old},
                   {"dropped_too_new", result->dropped.too_new},
                   {"duplicate", result->duplicate}});
  }

  HttpResponse Profile(const HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    const std::string format = req.QueryValue("format").value_or("json");
    if (format != "json" && format != "pprof" && format != "collapsed") {
      return HttpResponse::Error(400, "parameter 'format': expected json, pprof or collapsed, found \"" + format + "\"");
    }
    auto max_nodes = ParseUnsigned(req, "max_nodes", options_.default_max_nodes, options_.max_max_nodes);
    if (!max_nodes.ok()) return ErrorFor(max_nodes.status());
    storage::QueryContext context = NewContext();
    q->context = &context;
    auto profile = store_->SelectProfile(*q);
    if (!profile.ok()) return ErrorFor(profile.status());
    if (profile->type.name.empty()) profile->type.name = q->type;
    HttpResponse r;
    if (format == "pprof") {
      auto encoded = query::RenderPprofGzip(*profile, q->from_ns, q->to_ns);
      if (!encoded.ok()) return ErrorFor(encoded.status());
      r.content_type = "application/octet-stream";
      r.body = std::move(encoded).value();
      r.headers.emplace_back("Content-Disposition", "attachment; filename=\"warpscope-" + q->type + ".pb.gz\"");
    } else if (format == "collapsed") {
      r.content_type = "text/plain; charset=utf-8";
      r.body = query::RenderCollapsed(*profile);
    } else {
      query::FlameGraphOptions o;
      o.max_nodes = *max_nodes;
      r.body = query::RenderFlameGraphJson(*profile, o);
    }
    return WithCaveats(std::move(r), context);
  }

  HttpResponse Top(const HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    auto limit = ParseUnsigned(req, "limit", 100, 100'000);
    if (!limit.ok()) return ErrorFor(limit.status());
    const std::string sort = req.QueryValue("sort").value_or("self");
    if (sort != "self" && sort != "total") {
      return HttpResponse::Error(400, "parameter 'sort': expected self or total, found \"" + sort + "\"");
    }
    storage::QueryContext context = NewContext();
    q->context = &context;
    auto profile = store_->SelectProfile(*q);
    if (!profile.ok()) return ErrorFor(profile.status());
    if (profile->type.name.empty()) profile->type.name = q->type;
    query::TopOptions o;
    o.limit = *limit;
    o.sort_by = sort == "total" ? query::TopOptions::SortBy::kTotal : query::TopOptions::SortBy::kSelf;
    return WithCaveats(HttpResponse::Json(200, query::RenderTopJson(*profile, o)), context);
  }

  HttpResponse Diff(const HttpRequest& req) const {
    const int64_t now = options_.now_ns();
    auto target = ParseProfileQuery(req, now);
    if (!target.ok()) return ErrorFor(target.status());
    if (!req.QueryValue("base_from") || !req.QueryValue("base_to")) {
      return HttpResponse::Error(400, "diff needs the base range: parameters 'base_from' and 'base_to'");
    }
    const std::string selector_key = req.QueryValue("base_selector") ? "base_selector" : "selector";
    auto base = ParseProfileQuery(req, now, "base_from", "base_to", selector_key);
    if (!base.ok()) return ErrorFor(base.status());
    auto max_nodes = ParseUnsigned(req, "max_nodes", options_.default_max_nodes, options_.max_max_nodes);
    if (!max_nodes.ok()) return ErrorFor(max_nodes.status());
    storage::QueryContext context = NewContext();
    base->context = &context;
    target->context = &context;
    auto base_profile = store_->SelectProfile(*base);
    if (!base_profile.ok()) return ErrorFor(base_profile.status());
    auto target_profile = store_->SelectProfile(*target);
    if (!target_profile.ok()) return ErrorFor(target_profile.status());
    if (base_profile->type.name.empty()) base_profile->type.name = base->type;
    if (target_profile->type.name.empty()) target_profile->type.name = target->type;
    query::FlameGraphOptions o;
    o.max_nodes = *max_nodes;
    return WithCaveats(HttpResponse::Json(200, query::RenderDiffJson(*base_profile, *target_profile, o)), context);
  }

  HttpResponse Series(const HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    storage::SeriesQuery sq;
    sq.profile = *q;
    auto step = ParseStep(req, TimeRange{q->from_ns, q->to_ns});
    if (!step.ok()) return ErrorFor(step.status());
    sq.step_ns = *step;
    auto group_by = ParseGroupBy(req, "");
    if (!group_by.ok()) return ErrorFor(group_by.status());
    sq.group_by = std::move(group_by).value();
    storage::QueryContext context = NewContext();
    sq.profile.context = &context;
    auto series = store_->SelectSeries(sq);
    if (!series.ok()) return ErrorFor(series.status());
    json out = RangeJson(*q);
    out["type"] = q->type;
    out["step_ms"] = sq.step_ns / 1'000'000;
    json list = json::array();
    for (const storage::Series& s : *series) {
      json points = json::array();
      for (const storage::SeriesPoint& p : s.points) points.push_back({p.time_ns / 1'000'000, p.value});
      list.push_back({{"labels", LabelsJson(s.labels)}, {"points", std::move(points)}});
    }
    out["series"] = std::move(list);
    return WithCaveats(JsonOk(out), context);
  }

  // One metric downsampled: per step [t_ms, min, max, avg] of the raw points.
  HttpResponse Metrics(const HttpRequest& req) const {
    const std::string name = req.QueryValue("name").value_or("");
    if (name.empty()) {
      return HttpResponse::Error(400, "parameter 'name' (the metric, e.g. gpu_utilization) is required");
    }
    if (name.size() > 256) return HttpResponse::Error(400, "parameter 'name': longer than 256 bytes");
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    storage::MetricQuery mq;
    mq.name = name;
    mq.from_ns = q->from_ns;
    mq.to_ns = q->to_ns;
    mq.selector = q->selector;
    auto step = ParseStep(req, TimeRange{q->from_ns, q->to_ns});
    if (!step.ok()) return ErrorFor(step.status());
    mq.step_ns = *step;
    auto group_by = ParseGroupBy(req, "");
    if (!group_by.ok()) return ErrorFor(group_by.status());
    mq.group_by = std::move(group_by).value();
    auto infos = store_->MetricNames();
    if (!infos.ok()) return ErrorFor(infos.status());
    storage::QueryContext context = NewContext();
    mq.context = &context;
    auto series = store_->SelectMetricSeries(mq);
    if (!series.ok()) return ErrorFor(series.status());
    // One name sent in several units (a misconfigured agent) lists them all.
    std::string unit;
    for (const storage::MetricInfo& info : *infos) {
      if (info.name == name) unit += (unit.empty() ? "" : ",") + info.unit;
    }
    json out = RangeJson(*q);
    out["name"] = name;
    out["unit"] = unit;
    out["step_ms"] = mq.step_ns / 1'000'000;
    json list = json::array();
    for (const storage::MetricSeries& s : *series) {
      json points = json::array();
      for (const storage::MetricStep& p : s.points) {
        points.push_back({p.time_ns / 1'000'000, p.min, p.max, p.sum / static_cast<double>(p.count)});
      }
      list.push_back({{"labels", LabelsJson(s.labels)}, {"points", std::move(points)}});
    }
    out["series"] = std::move(list);
    return WithCaveats(JsonOk(out), context);
  }

  HttpResponse MetricNames(const HttpRequest&) const {
    auto infos = store_->MetricNames();
    if (!infos.ok()) return ErrorFor(infos.status());
    json list = json::array();
    for (const storage::MetricInfo& info : *infos) list.push_back({{"name", info.name}, {"unit", info.unit}});
    return JsonOk({{"metrics", std::move(list)}});
  }

  // Samples per lane over time, for the flame chart. Ranges are capped: a
  // flame chart of an hour is unreadable and its answer would be huge.
  HttpResponse FlameChart(const HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    if (q->to_ns - q->from_ns > options_.max_flame_chart_range_ns) {
      return HttpResponse::Error(400, "the flame chart takes ranges up to " +
                                          std::to_string(options_.max_flame_chart_range_ns / 60'000'000'000) +
                                          " minutes; choose a shorter range");
    }
    storage::TimelineQuery tq;
    tq.profile = *q;
    auto group_by = ParseGroupBy(req, "pid,comm,thread");
    if (!group_by.ok()) return ErrorFor(group_by.status());
    tq.group_by = std::move(group_by).value();
    auto max_lanes = ParseUnsigned(req, "max_lanes", 32, 1000);
    if (!max_lanes.ok()) return ErrorFor(max_lanes.status());
    tq.max_points = options_.max_flame_chart_points;
    storage::QueryContext context = NewContext();
    tq.profile.context = &context;
    auto timeline = store_->SelectStackTimeline(tq);
    if (!timeline.ok()) return ErrorFor(timeline.status());
    if (timeline->profile.type.name.empty()) timeline->profile.type.name = q->type;
    query::FlameChartOptions o;
    o.max_lanes = std::max<uint64_t>(*max_lanes, 1);
    o.from_ns = q->from_ns;
    o.to_ns = q->to_ns;
    return WithCaveats(HttpResponse::Json(200, query::RenderFlameChartJson(*timeline, o)), context);
  }

  HttpResponse LabelNames(const HttpRequest&) const {
    auto names = store_->LabelNames();
    if (!names.ok()) return ErrorFor(names.status());
    return JsonOk({{"names", *names}});
  }

  HttpResponse LabelValues(const HttpRequest& req) const {
    const auto name = req.QueryValue("name");
    if (!name || name->empty()) return HttpResponse::Error(400, "parameter 'name' (the label) is required");
    auto values = store_->LabelValues(*name);
    if (!values.ok()) return ErrorFor(values.status());
    return JsonOk({{"name", *name}, {"values", *values}});
  }

  // Nodes and, under each, its processes (pid, comm, exe, container) and GPUs
  // with samples or metric points in the range. A process seen only in
  // per-process GPU metrics is listed like a CPU-profiled one; GPUs come from
  // the labels of GPU metric series.
  HttpResponse Targets(const HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    storage::SeriesLabelsQuery lq;
    lq.type = req.QueryValue("type").value_or("");
    lq.from_ns = q->from_ns;
    lq.to_ns = q->to_ns;
    lq.selector = q->selector;
    storage::QueryContext context = NewContext();
    lq.context = &context;
    auto sets = store_->SelectSeriesLabels(lq);
    if (!sets.ok()) return ErrorFor(sets.status());
    static const char* kProcessLabels[] = {"pid", "comm", "exe", "container_id", "container_runtime", "pod_uid",
                                           "qos_class"};
    static const char* kGpuLabels[] = {"gpu", "uuid", "gpu_name", "pci_bus_id"};
    // GPUs by (index, uuid), the index compared as a number ("2" before "10").
    using GpuKey = std::tuple<size_t, std::string, std::string>;
    std::map<std::string, std::map<std::string, json>> nodes;  // node -> process key -> process
    std::map<std::string, std::map<GpuKey, json>> gpus;        // node -> GPU key -> GPU
    std::map<std::string, uint64_t> node_series;
    for (const storage::Labels& labels : *sets) {
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
        // Per-process series may carry only some GPU labels: fill in, never overwrite.
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
    json out = RangeJson(*q);
    out["nodes"] = std::move(list);
    return WithCaveats(JsonOk(out), context);
  }

  HttpResponse Types(const HttpRequest&) const {
    auto types = store_->ProfileTypes();
    if (!types.ok()) return ErrorFor(types.status());
    json list = json::array();
    for (const auto& t : *types) {
      list.push_back({{"name", t.name}, {"unit", t.sample_unit}, {"period_nanos", t.period_nanos}});
    }
    return JsonOk({{"types", std::move(list)}});
  }

  HttpResponse StatusPage(const HttpRequest&) const {
    const storage::StoreStats s = store_->stats();
    json out = {{"ingested_batches", s.ingested_batches},
                {"duplicate_batches", s.duplicate_batches},
                {"rejected_batches", s.rejected_batches},
                {"samples", s.samples},
                {"metric_points", s.metric_points},
                {"gpu_activities", s.gpu_activities},
                {"dropped_too_old", s.dropped_too_old},
                {"dropped_too_new", s.dropped_too_new}};
    if (const ConnectionCounters* c = options_.http_counters) {
      out["http"] = {{"connections_accepted", c->accepted.load()},
                     {"connections_refused", c->refused_connections.load()},
                     {"heads_too_large", c->heads_too_large.load()},
                     {"uris_too_long", c->uris_too_long.load()},
                     {"malformed_heads", c->malformed_heads.load()},
                     {"header_timeouts", c->header_timeouts.load()},
                     {"body_timeouts", c->body_timeouts.load()},
                     {"idle_closed", c->idle_closed.load()},
                     {"queue_full", c->queue_full.load()},
                     {"requests", c->requests.load()}};
    }
    return JsonOk(out);
  }

 private:
  storage::QueryContext NewContext() const { return storage::QueryContext::WithTimeout(options_.query_timeout); }

  ProfileStore* store_;
  ApiOptions options_;
};

}  // namespace

Routes ApiRoutes(ProfileStore* store, const ApiOptions& options) {
  ApiOptions o = options;
  if (!o.now_ns) {
    o.now_ns = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  auto h = std::make_shared<const Handlers>(store, o);
  auto bind = [h](HttpResponse (Handlers::*fn)(const HttpRequest&) const) {
    return [h, fn](const HttpRequest& req) { return ((*h).*fn)(req); };
  };
  Routes routes;
  routes.push_back({"POST", "/api/v1/ingest", bind(&Handlers::Ingest), RouteLane::kIngest});
  routes.push_back({"GET", "/api/v1/profile", bind(&Handlers::Profile)});
  routes.push_back({"GET", "/api/v1/top", bind(&Handlers::Top)});
  routes.push_back({"GET", "/api/v1/diff", bind(&Handlers::Diff)});
  routes.push_back({"GET", "/api/v1/series", bind(&Handlers::Series)});
  routes.push_back({"GET", "/api/v1/flamechart", bind(&Handlers::FlameChart)});
  routes.push_back({"GET", "/api/v1/metrics", bind(&Handlers::Metrics)});
  routes.push_back({"GET", "/api/v1/metric_names", bind(&Handlers::MetricNames)});
  routes.push_back({"GET", "/api/v1/labels", bind(&Handlers::LabelNames)});
  routes.push_back({"GET", "/api/v1/label_values", bind(&Handlers::LabelValues)});
  routes.push_back({"GET", "/api/v1/targets", bind(&Handlers::Targets)});
  routes.push_back({"GET", "/api/v1/types", bind(&Handlers::Types)});
  routes.push_back({"GET", "/api/v1/status", bind(&Handlers::StatusPage), RouteLane::kIngest});
  AddGpuRoutes(store, o, &routes);
  routes.push_back(
      {"GET", "/healthz", [](const HttpRequest&) { return HttpResponse::Json(200, "{\"ok\":true}"); }, RouteLane::kIngest});
  return routes;
}

}  // namespace warpscope::server
