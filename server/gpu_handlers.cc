#include "server/gpu_handlers.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/logging.h"
#include "model/selector.h"
#include "query/chrome_trace.h"
#include "query/gpu_kernel_source.h"
#include "query/gpu_kernel_table.h"
#include "query/gpu_ranks.h"
#include "query/gpu_stream_timeline.h"
#include "query/json_text.h"
#include "server/api_params.h"

namespace warpscope::server {
namespace {

using storage::GpuActivities;
using storage::GpuActivityQuery;

class GpuHandlers {
 public:
  GpuHandlers(storage::ProfileStore* store, ApiOptions options) : store_(store), options_(std::move(options)) {}

  http::HttpResponse Kernels(const http::HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/false);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    return WithCaveats(http::HttpResponse::Json(200, query::RenderKernelTableJson(*activities, q->from_ns, q->to_ns)),
                       context);
  }

  // The ranks of a multi-GPU job side by side, and the straggler of each
  // collective step (query/gpu_ranks.h).
  http::HttpResponse Ranks(const http::HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/false);
    if (!q.ok()) return ErrorFor(q.status());
    auto tolerance_us = ParseUnsigned(req, "step_tolerance_us", 2000, 1'000'000);
    if (!tolerance_us.ok()) return ErrorFor(tolerance_us.status());
    auto max_kernels = ParseUnsigned(req, "kernels", 20, 1000);
    if (!max_kernels.ok()) return ErrorFor(max_kernels.status());
    // No kernel listed is no comparison.
    if (*max_kernels < 1) return ErrorFor(InvalidArgumentError("parameter 'kernels': at least 1, found 0"));
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    query::RankOptions options;
    options.step_tolerance_ns = static_cast<int64_t>(*tolerance_us) * 1000;
    options.max_kernels = *max_kernels;
    return WithCaveats(
        http::HttpResponse::Json(200, query::RenderRanksJson(query::CompareRanks(*activities, options), q->from_ns,
                                                              q->to_ns)),
        context);
  }

  http::HttpResponse Trace(const http::HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/true);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    return WithCaveats(http::HttpResponse::Json(200, query::RenderGpuTraceJson(*activities, q->from_ns, q->to_ns)),
                       context);
  }

  // Inside one kernel (gpu_pc): its sampled instructions under their source
  // lines with cycles per stall reason, and the cubins they came from (held
  // by the store or not). `kernel`: its mangled or display name.
  http::HttpResponse KernelSource(const http::HttpRequest& req) const {
    const std::string kernel = req.QueryValue("kernel").value_or("");
    if (kernel.empty()) return ErrorFor(InvalidArgumentError("kernel is required (its mangled or display name)"));
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    auto profile = PcProfile(req, &context);
    if (!profile.ok()) return ErrorFor(profile.status());
    std::vector<query::KernelCubin> cubins;
    for (std::string& hash : query::KernelCubinHashes(*profile, kernel)) {
      auto found = store_->FindCubin(hash);
      if (!found.ok() && found.status().code() != StatusCode::kInvalidArgument) return ErrorFor(found.status());
      const bool stored = found.ok() && found->has_value();
      cubins.push_back({std::move(hash), stored, stored ? (*found)->bytes : 0});
    }
    auto json = query::RenderKernelSourceJson(*profile, kernel, cubins);
    if (!json.ok()) return ErrorFor(json.status());
    return WithCaveats(http::HttpResponse::Json(200, *json), context);
  }

  // Per kernel, the shares of its PC samples stalled on memory, compute and
  // synchronisation.
  http::HttpResponse Stalls(const http::HttpRequest& req) const {
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    auto profile = PcProfile(req, &context);
    if (!profile.ok()) return ErrorFor(profile.status());
    nlohmann::json kernels = nlohmann::json::array();
    for (const query::KernelStalls& k : query::KernelStallShares(*profile)) {
      kernels.push_back({{"kernel", k.kernel},
                         {"system_name", k.system_name},
                         {"value", k.value},
                         {"memory", k.memory},
                         {"compute", k.compute},
                         {"sync", k.sync},
                         {"issuing", k.issuing},
                         {"other", k.other}});
    }
    return WithCaveats(http::HttpResponse::Json(200, query::DumpJson({{"unit", "cycles"}, {"kernels", kernels}})),
                       context);
  }

  http::HttpResponse TraceDownload(const http::HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/true);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    // The CPU side: the traced processes' CPU samples per thread. A range
    // whose samples the store cannot answer leaves the GPU side alone.
    StatusOr<storage::StackTimeline> cpu = CpuSamplesOf(*activities, *q);
    if (!cpu.ok()) LOG_WARNING_EVERY_N_SEC(60) << "GPU trace export without CPU samples: " << cpu.status().ToString();
    http::HttpResponse r = http::HttpResponse::Json(
        200, query::RenderChromeTrace(*activities, q->from_ns, q->to_ns, cpu.ok() ? &*cpu : nullptr));
    r.headers.emplace_back("Content-Disposition", "attachment; filename=\"warpscope-gpu-trace-" +
                                                      std::to_string(q->from_ns) + ".json\"");
    return WithCaveats(std::move(r), context);
  }

 private:
  // The CPU samples (type cpu) of the processes in `activities`, per node,
  // pid, comm and thread, over the trace's range widened to whole seconds
  // (the agent's buckets).
  StatusOr<storage::StackTimeline> CpuSamplesOf(const storage::GpuActivities& activities,
                                                const GpuActivityQuery& q) const {
    std::set<std::string> pids, nodes;
    for (const storage::Labels& labels : activities.label_sets) {
      for (const auto& [k, v] : labels) {
        if (k == "pid" && !v.empty() && v.find_first_not_of("0123456789") == std::string::npos) pids.insert(v);
        if (k == "node") nodes.insert(v);
      }
    }
    if (pids.empty()) return storage::StackTimeline{};
    std::string selector = "{pid=~\"";
    for (const std::string& pid : pids) selector += (selector.back() == '"' ? "" : "|") + pid;
    selector += "\"";
    if (nodes.size() == 1 && nodes.begin()->find_first_of("\"\\") == std::string::npos) {
      selector += ", node=\"" + *nodes.begin() + "\"";
    }
    selector += "}";
    ASSIGN_OR_RETURN(Selector parsed, Selector::Parse(selector));
    storage::TimelineQuery tq;
    tq.profile.type = "cpu";
    constexpr int64_t kSecond = 1'000'000'000;
    tq.profile.from_ns = q.from_ns - ((q.from_ns % kSecond) + kSecond) % kSecond;
    tq.profile.to_ns = q.to_ns;
    tq.profile.selector = std::move(parsed);
    tq.profile.context = q.context;
    tq.group_by = {"node", "pid", "comm", "thread"};
    tq.max_points = options_.max_flame_chart_points;
    return store_->SelectStackTimeline(tq);
  }

  StatusOr<storage::MergedProfile> PcProfile(const http::HttpRequest& req, storage::QueryContext* context) const {
    ASSIGN_OR_RETURN(storage::ProfileQuery p, ParseProfileQuery(req, options_.now_ns()));
    p.type = "gpu_pc";
    p.context = context;
    return store_->SelectProfile(p);
  }

  // from/to/selector as every query takes them; the trace's range capped.
  StatusOr<GpuActivityQuery> Parse(const http::HttpRequest& req, bool trace) const {
    ASSIGN_OR_RETURN(storage::ProfileQuery p, ParseProfileQuery(req, options_.now_ns()));
    GpuActivityQuery q;
    q.from_ns = p.from_ns;
    q.to_ns = p.to_ns;
    q.selector = std::move(p.selector);
    q.max_activities = trace ? options_.max_gpu_trace_activities : options_.max_gpu_kernel_activities;
    if (trace && q.to_ns - q.from_ns > options_.max_gpu_trace_range_ns) {
      return InvalidArgumentError("the GPU trace takes ranges up to " +
                                  std::to_string(options_.max_gpu_trace_range_ns / 1'000'000'000) +
                                  " seconds; this one is " + std::to_string((q.to_ns - q.from_ns) / 1'000'000) +
                                  " ms; choose a shorter range");
    }
    return q;
  }

  storage::ProfileStore* store_;
  ApiOptions options_;
};

}  // namespace

void AddGpuRoutes(storage::ProfileStore* store, const ApiOptions& options, http::Routes* routes) {
  auto h = std::make_shared<const GpuHandlers>(store, options);
  auto bind = [h](http::HttpResponse (GpuHandlers::*fn)(const http::HttpRequest&) const) {
    return [h, fn](const http::HttpRequest& req) { return ((*h).*fn)(req); };
  };
  routes->push_back({"GET", "/api/v1/gpu/kernels", bind(&GpuHandlers::Kernels)});
  routes->push_back({"GET", "/api/v1/gpu/ranks", bind(&GpuHandlers::Ranks)});
  routes->push_back({"GET", "/api/v1/gpu/trace", bind(&GpuHandlers::Trace)});
  routes->push_back({"GET", "/api/v1/gpu/trace.json", bind(&GpuHandlers::TraceDownload)});
  routes->push_back({"GET", "/api/v1/gpu/kernel_source", bind(&GpuHandlers::KernelSource)});
  routes->push_back({"GET", "/api/v1/gpu/stalls", bind(&GpuHandlers::Stalls)});
}

}  // namespace warpscope::server
