#include "server/api_handlers.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/logging.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "query/energy_profile.h"
#include "query/flame_chart.h"
#include "query/flame_graph.h"
#include "query/grouped_profile.h"
#include "query/line_granularity.h"
#include "query/profile_diff.h"
#include "query/profile_export.h"
#include "query/series_json.h"
#include "model/selector.h"
#include "query/top_table.h"
#include "server/api_params.h"
#include "server/cubin_handlers.h"
#include "server/energy_handlers.h"
#include "server/gpu_handlers.h"
#include "server/gpu_ingest_rows.h"
#include "server/insight_handlers.h"
#include "server/mcp_handlers.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using storage::MergedProfile;
using storage::ProfileQuery;
using storage::ProfileStore;

class Handlers {
 public:
  // `store` answers the queries; `owned` (if any) is kept alive with the handlers.
  Handlers(ProfileStore* store, ApiOptions options, std::shared_ptr<ProfileStore> owned = nullptr)
      : store_(store), options_(std::move(options)), owned_(std::move(owned)) {}

  http::HttpResponse Ingest(const http::HttpRequest& req) const {
    const std::string type = req.Header("content-type").value_or("");
    const std::string media = MediaType(type);
    if (media != "application/x-protobuf" && media != "application/octet-stream") {
      return http::HttpResponse::Error(415, "ingest takes Content-Type application/x-protobuf (a warpscope.v1.IngestBatch), "
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
      return http::HttpResponse::Error(400, "body is not a warpscope.v1.IngestBatch protobuf");
    }
    // One process's bad GPU row costs only that row, not the node's batch.
    const size_t bad_gpu_rows = server::DropBadGpuActivities(&batch);
    if (bad_gpu_rows > 0) {
      LOG_WARNING_EVERY_N_SEC(60) << "ingest from agent " << batch.agent_id() << ": dropped " << bad_gpu_rows
                                  << " GPU activities out of bounds (a duration past a day, an unknown kind, "
                                     "an index out of range)";
    }
    auto result = store_->Ingest(batch);
    if (!result.ok()) {
      if (HttpStatusFor(result.status()) >= 500) {
        LOG_WARNING_EVERY_N_SEC(10) << "ingest from agent " << batch.agent_id() << ": " << result.status().message();
      }
      return ErrorFor(result.status());
    }
    if (!result->duplicate) NoteCubinUses(store_, batch);
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
                   {"dropped_bad_gpu_activities", bad_gpu_rows},
                   {"duplicate", result->duplicate}});
  }

  http::HttpResponse Profile(const http::HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    const std::string format = req.QueryValue("format").value_or("json");
    if (format != "json" && format != "pprof" && format != "collapsed") {
      return http::HttpResponse::Error(400, "parameter 'format': expected json, pprof or collapsed, found \"" + format + "\"");
    }
    auto max_nodes = ParseUnsigned(req, "max_nodes", options_.default_max_nodes, options_.max_max_nodes);
    if (!max_nodes.ok()) return ErrorFor(max_nodes.status());
    auto group_by = ParseGroupBy(req, "");
    if (!group_by.ok()) return ErrorFor(group_by.status());
    auto max_groups = ParseUnsigned(req, "max_groups", 50, 1000);
    if (!max_groups.ok()) return ErrorFor(max_groups.status());
    storage::QueryContext context = NewContext();
    q->context = &context;
    auto lines = ParseLineGranularity(req);
    if (!lines.ok()) return ErrorFor(lines.status());
    auto profile = group_by->empty() ? SelectProfile(*q) : SelectGroupedProfile(*q, *group_by, *max_groups);
    if (!profile.ok()) return ErrorFor(profile.status());
    if (*lines && format != "pprof") query::SplitFramesByLine(&*profile);  // pprof keeps its lines itself
    http::HttpResponse r;
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

  http::HttpResponse Top(const http::HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    auto limit = ParseUnsigned(req, "limit", 100, 100'000);
    if (!limit.ok()) return ErrorFor(limit.status());
    const std::string sort = req.QueryValue("sort").value_or("self");
    if (sort != "self" && sort != "total") {
      return http::HttpResponse::Error(400, "parameter 'sort': expected self or total, found \"" + sort + "\"");
    }
    auto lines = ParseLineGranularity(req);
    if (!lines.ok()) return ErrorFor(lines.status());
    storage::QueryContext context = NewContext();
    q->context = &context;
    auto profile = SelectProfile(*q);
    if (!profile.ok()) return ErrorFor(profile.status());
    if (*lines) query::SplitFramesByLine(&*profile);
    query::TopOptions o;
    o.limit = *limit;
    o.sort_by = sort == "total" ? query::TopOptions::SortBy::kTotal : query::TopOptions::SortBy::kSelf;
    return WithCaveats(http::HttpResponse::Json(200, query::RenderTopJson(*profile, o)), context);
  }

  http::HttpResponse Diff(const http::HttpRequest& req) const {
    const int64_t now = options_.now_ns();
    auto target = ParseProfileQuery(req, now);
    if (!target.ok()) return ErrorFor(target.status());
    if (!req.QueryValue("base_from") || !req.QueryValue("base_to")) {
      return http::HttpResponse::Error(400, "diff needs the base range: parameters 'base_from' and 'base_to'");
    }
    const std::string selector_key = req.QueryValue("base_selector") ? "base_selector" : "selector";
    auto base = ParseProfileQuery(req, now, "base_from", "base_to", selector_key);
    if (!base.ok()) return ErrorFor(base.status());
    auto max_nodes = ParseUnsigned(req, "max_nodes", options_.default_max_nodes, options_.max_max_nodes);
    if (!max_nodes.ok()) return ErrorFor(max_nodes.status());
    storage::QueryContext context = NewContext();
    base->context = &context;
    target->context = &context;
    auto base_profile = SelectProfile(*base);
    if (!base_profile.ok()) return ErrorFor(base_profile.status());
    auto target_profile = SelectProfile(*target);
    if (!target_profile.ok()) return ErrorFor(target_profile.status());
    auto lines = ParseLineGranularity(req);
    if (!lines.ok()) return ErrorFor(lines.status());
    if (*lines) {
      query::SplitFramesByLine(&*base_profile);
      query::SplitFramesByLine(&*target_profile);
    }
    query::FlameGraphOptions o;
    o.max_nodes = *max_nodes;
    return WithCaveats(http::HttpResponse::Json(200, query::RenderDiffJson(*base_profile, *target_profile, o)), context);
  }

  http::HttpResponse Series(const http::HttpRequest& req) const {
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
    if (Status s = CheckQueryRows(PointsOf(*series), options_.max_query_rows, options_.limits); !s.ok()) {
      return ErrorFor(s);
    }
    return WithCaveats(
        http::HttpResponse::Json(200, query::RenderSeriesJson(*series, RangeOf(*q), q->type, sq.step_ns)), context);
  }

  // One metric downsampled: per step [t_ms, min, max, avg] of the raw points.
  http::HttpResponse Metrics(const http::HttpRequest& req) const {
    const std::string name = req.QueryValue("name").value_or("");
    if (name.empty()) {
      return http::HttpResponse::Error(400, "parameter 'name' (the metric, e.g. gpu_utilization) is required");
    }
    if (name.size() > 256) return http::HttpResponse::Error(400, "parameter 'name': longer than 256 bytes");
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
    if (Status s = CheckQueryRows(PointsOf(*series), options_.max_query_rows, options_.limits); !s.ok()) {
      return ErrorFor(s);
    }
    return WithCaveats(
        http::HttpResponse::Json(200, query::RenderMetricSeriesJson(*series, RangeOf(*q), name, *infos, mq.step_ns)),
        context);
  }

  http::HttpResponse MetricNames(const http::HttpRequest&) const {
    auto infos = store_->MetricNames();
    if (!infos.ok()) return ErrorFor(infos.status());
    return http::HttpResponse::Json(200, query::RenderMetricNamesJson(*infos));
  }

  // Samples per lane over time, for the flame chart. Ranges are capped: a
  // flame chart of an hour is unreadable and its answer would be huge.
  http::HttpResponse FlameChart(const http::HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    if (q->to_ns - q->from_ns > options_.max_flame_chart_range_ns) {
      return http::HttpResponse::Error(400, "the flame chart takes ranges up to " +
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
    auto lines = ParseLineGranularity(req);
    if (!lines.ok()) return ErrorFor(lines.status());
    if (*lines) query::SplitFramesByLine(&timeline->profile);
    query::FlameChartOptions o;
    o.max_lanes = std::max<uint64_t>(*max_lanes, 1);
    o.from_ns = q->from_ns;
    o.to_ns = q->to_ns;
    return WithCaveats(http::HttpResponse::Json(200, query::RenderFlameChartJson(*timeline, o)), context);
  }

  http::HttpResponse LabelNames(const http::HttpRequest&) const {
    auto names = store_->LabelNames();
    if (!names.ok()) return ErrorFor(names.status());
    return http::HttpResponse::Json(200, query::RenderLabelNamesJson(*names));
  }

  http::HttpResponse LabelValues(const http::HttpRequest& req) const {
    const auto name = req.QueryValue("name");
    if (!name || name->empty()) return http::HttpResponse::Error(400, "parameter 'name' (the label) is required");
    auto values = store_->LabelValues(*name);
    if (!values.ok()) return ErrorFor(values.status());
    return http::HttpResponse::Json(200, query::RenderLabelValuesJson(*name, *values));
  }

  // Nodes and, under each, its processes (pid, comm, exe, container) and GPUs
  // with samples or metric points in the range. A process seen only in
  // per-process GPU metrics is listed like a CPU-profiled one; GPUs come from
  // the labels of GPU metric series.
  http::HttpResponse Targets(const http::HttpRequest& req) const {
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
    return WithCaveats(http::HttpResponse::Json(200, query::RenderTargetsJson(*sets, RangeOf(*q))), context);
  }

  http::HttpResponse Types(const http::HttpRequest&) const {
    auto types = store_->ProfileTypes();
    if (!types.ok()) return ErrorFor(types.status());
    return http::HttpResponse::Json(200, query::RenderTypesJson(*types));
  }

  http::HttpResponse StatusPage(const http::HttpRequest&) const {
    const storage::StoreStats s = store_->stats();
    json out = {{"ingested_batches", s.ingested_batches},
                {"duplicate_batches", s.duplicate_batches},
                {"rejected_batches", s.rejected_batches},
                {"samples", s.samples},
                {"metric_points", s.metric_points},
                {"gpu_activities", s.gpu_activities},
                {"dropped_too_old", s.dropped_too_old},
                {"dropped_too_new", s.dropped_too_new},
                {"retention_paused", s.retention_paused},
                {"cubins",
                 {{"stored", s.cubins.stored},
                  {"already_stored", s.cubins.already_stored},
                  {"refused_too_large", s.cubins.too_large},
                  {"refused_store_full", s.cubins.refused_full},
                  {"refused_invalid", s.cubins.refused_invalid},
                  {"expired", s.cubins.expired}}}};
    if (const QueryLimits* l = options_.limits) {
      const QueryCounters& q = l->counters;
      out["queries"] = {{"bad_parameters", q.bad_parameters.load()},
                        {"over_row_budget", q.over_budget.load()},
                        {"refused_busy", q.busy.load()},
                        {"mcp_rejected", q.mcp_rejected.load()},
                        {"mcp_too_deep", q.mcp_too_deep.load()},
                        {"mcp_malformed", q.mcp_malformed.load()},
                        {"mcp_bad_arguments", q.mcp_bad_arguments.load()}};
    }
    if (const http::ConnectionCounters* c = options_.http_counters) {
      out["http"] = {{"connections_accepted", c->accepted.load()},
                     {"connections_refused", c->refused_connections.load()},
                     {"heads_too_large", c->heads_too_large.load()},
                     {"uris_too_long", c->uris_too_long.load()},
                     {"malformed_heads", c->malformed_heads.load()},
                     {"header_timeouts", c->header_timeouts.load()},
                     {"body_timeouts", c->body_timeouts.load()},
                     {"idle_closed", c->idle_closed.load()},
                     {"queue_full", c->queue_full.load()},
                     {"evicted_waiting_heads", c->evicted_waiting_heads.load()},
                     {"foreign_hosts", c->foreign_hosts.load()},
                     {"requests", c->requests.load()}};
    }
    return JsonOk(out);
  }

 private:
  // The merged profile of `q`, named after the type asked for when the range
  // held none. Its distinct stacks count against the row budget: the answers
  // built from it (a flame graph, a diff, pprof) grow with them.
  StatusOr<MergedProfile> SelectProfile(const ProfileQuery& q) const {
    auto profile = store_->SelectProfile(q);
    if (!profile.ok()) return profile;
    RETURN_IF_ERROR(CheckQueryRows(profile->stacks.size(), options_.max_query_rows, options_.limits));
    if (profile->type.name.empty()) profile->type.name = q.type;
    return profile;
  }
  // The profile split by `group_by` labels: the store's per-lane answer (one
  // scan), summed over time (query/grouped_profile.h).
  StatusOr<MergedProfile> SelectGroupedProfile(const ProfileQuery& q, const std::vector<std::string>& group_by,
                                               uint64_t max_groups) const {
    storage::TimelineQuery tq;
    tq.profile = q;
    tq.group_by = group_by;
    tq.max_points = options_.max_flame_chart_points;
    auto timeline = store_->SelectStackTimeline(tq);
    if (!timeline.ok()) return timeline.status();
    MergedProfile profile = query::GroupedProfile(std::move(timeline).value(), group_by, max_groups);
    if (profile.type.name.empty()) profile.type.name = q.type;
    return profile;
  }
  static query::AnswerRange RangeOf(const ProfileQuery& q) { return {q.from_ns, q.to_ns}; }
  storage::QueryContext NewContext() const { return storage::QueryContext::WithTimeout(options_.query_timeout); }

  ProfileStore* store_;
  ApiOptions options_;
  std::shared_ptr<ProfileStore> owned_;
};

}  // namespace

namespace {

// The routes whose work grows with the data they read: they share the heavy
// query gate. /mcp's tools call the routes' own handlers (taken before the
// routes are gated), so a tool call holds one slot, not two.
bool IsHeavyQuery(const std::string& path) {
  static const char* const kHeavy[] = {"/api/v1/profile",      "/api/v1/top",          "/api/v1/diff",
                                       "/api/v1/series",       "/api/v1/flamechart",   "/api/v1/metrics",
                                       "/api/v1/targets",      "/api/v1/gpu/kernels",  "/api/v1/gpu/ranks",
                                       "/api/v1/gpu/trace",    "/api/v1/gpu/trace.json", "/api/v1/gpu/kernel_source",
                                       "/api/v1/gpu/stalls",   "/api/v1/insights",     "/api/v1/energy",
                                       "/mcp"};
  return std::find(std::begin(kHeavy), std::end(kHeavy), path) != std::end(kHeavy);
}

// A route's handler with the gate (heavy routes) and, for query routes, the
// count of their 400s: a parameter the route refused (the row budget's 400s
// are also counted where they are made). Every route holds `limits`: the
// status page reads its counters through ApiOptions::limits.
http::HttpHandler Limited(http::HttpHandler handler, bool query, bool heavy, std::shared_ptr<QueryLimits> limits) {
  return [handler = std::move(handler), query, heavy, limits](const http::HttpRequest& req) {
    if (heavy && !limits->gate.Enter()) {
      limits->counters.busy.fetch_add(1, std::memory_order_relaxed);
      http::HttpResponse busy = http::HttpResponse::Error(
          503, "too many heavy queries at once on this server; retry in a few seconds");
      busy.headers.emplace_back("Retry-After", "2");
      return busy;
    }
    // Left however the handler ends (the HTTP server answers a throw with a 500).
    struct Slot {
      QueryLimits* limits;
      ~Slot() {
        if (limits != nullptr) limits->gate.Leave();
      }
    } slot{heavy ? limits.get() : nullptr};
    http::HttpResponse r = handler(req);
    if (query && r.status == 400) limits->counters.bad_parameters.fetch_add(1, std::memory_order_relaxed);
    return r;
  };
}

}  // namespace

http::Routes ApiRoutes(ProfileStore* store, const ApiOptions& options) {
  ApiOptions o = options;
  auto limits = std::make_shared<QueryLimits>(o.max_heavy_queries, o.heavy_query_wait);
  o.limits = limits.get();
  if (!o.now_ns) {
    o.now_ns = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  // Every query route sees the gpu_energy profile type (query/energy_profile.h)
  // beside the stored ones; the routes hold the handlers, which hold it.
  auto derived = std::make_shared<query::EnergyProfileStore>(store);
  store = derived.get();
  auto h = std::make_shared<const Handlers>(store, o, derived);
  auto bind = [h](http::HttpResponse (Handlers::*fn)(const http::HttpRequest&) const) {
    return [h, fn](const http::HttpRequest& req) { return ((*h).*fn)(req); };
  };
  http::Routes routes;
  routes.push_back({"POST", "/api/v1/ingest", bind(&Handlers::Ingest), http::RouteLane::kIngest});
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
  routes.push_back({"GET", "/api/v1/status", bind(&Handlers::StatusPage), http::RouteLane::kIngest});
  AddGpuRoutes(store, o, &routes);
  AddCubinRoutes(store, &routes);
  AddInsightRoutes(store, o, &routes);
  AddEnergyRoutes(store, o, &routes);
  AddMcpRoutes(o, &routes);  // answered by the routes above
  routes.push_back(
      {"GET", "/healthz", [](const http::HttpRequest&) { return http::HttpResponse::Json(200, "{\"ok\":true}"); }, http::RouteLane::kIngest});
  for (http::Route& r : routes) {
    // /mcp counts its own refusals (McpEndpoint), under their own names.
    const bool query = r.lane == http::RouteLane::kQuery;
    r.handler = Limited(std::move(r.handler), query && r.path != "/mcp", query && IsHeavyQuery(r.path), limits);
  }
  return routes;
}

}  // namespace warpscope::server
