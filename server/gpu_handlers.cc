#include "server/gpu_handlers.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "query/chrome_trace.h"
#include "query/gpu_kernel_table.h"
#include "query/gpu_stream_timeline.h"
#include "server/api_params.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using storage::GpuActivities;
using storage::GpuActivityQuery;

class GpuHandlers {
 public:
  GpuHandlers(storage::ProfileStore* store, ApiOptions options) : store_(store), options_(std::move(options)) {}

  HttpResponse Kernels(const HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/false);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    const query::KernelTable table = query::BuildKernelTable(*activities);
    uint64_t recorded = 0, sent = 0;
    for (const storage::GpuTraceCoverage& c : activities->coverage) {
      recorded += c.recorded;
      sent += c.sent;
    }
    json kernels = json::array();
    for (const query::KernelStats& k : table.kernels) {
      kernels.push_back({{"kind", query::GpuActivityKindName(k.kind)},
                         {"name", k.name},
                         {"system_name", k.system_name},
                         {"launches", k.launches},
                         {"total_ns", k.total_ns},
                         {"mean_ns", k.mean_ns},
                         {"p50_ns", k.p50_ns},
                         {"p95_ns", k.p95_ns},
                         {"max_ns", k.max_ns},
                         {"grid", k.grid},
                         {"block", k.block},
                         {"configs", k.configs},
                         {"share", k.share}});
    }
    return WithCaveats(JsonOk({{"from_ns", q->from_ns},
                   {"to_ns", q->to_ns},
                   {"activities", table.activities},
                   {"recorded", recorded},
                   {"sent", sent},
                   {"total_ns", table.total_ns},
                   {"kernels", std::move(kernels)}}),
                       context);
  }

  HttpResponse Trace(const HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/true);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    return WithCaveats(HttpResponse::Json(200, query::RenderGpuTraceJson(*activities, q->from_ns, q->to_ns)),
                       context);
  }

  HttpResponse TraceDownload(const HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/true);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    HttpResponse r = HttpResponse::Json(200, query::RenderChromeTrace(*activities, q->from_ns, q->to_ns));
    r.headers.emplace_back("Content-Disposition", "attachment; filename=\"warpscope-gpu-trace-" +
                                                      std::to_string(q->from_ns) + ".json\"");
    return WithCaveats(std::move(r), context);
  }

 private:
  // from/to/selector as every query takes them; the trace's range capped.
  StatusOr<GpuActivityQuery> Parse(const HttpRequest& req, bool trace) const {
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

void AddGpuRoutes(storage::ProfileStore* store, const ApiOptions& options, Routes* routes) {
  auto h = std::make_shared<const GpuHandlers>(store, options);
  auto bind = [h](HttpResponse (GpuHandlers::*fn)(const HttpRequest&) const) {
    return [h, fn](const HttpRequest& req) { return ((*h).*fn)(req); };
  };
  routes->push_back({"GET", "/api/v1/gpu/kernels", bind(&GpuHandlers::Kernels)});
  routes->push_back({"GET", "/api/v1/gpu/trace", bind(&GpuHandlers::Trace)});
  routes->push_back({"GET", "/api/v1/gpu/trace.json", bind(&GpuHandlers::TraceDownload)});
}

}  // namespace warpscope::server
