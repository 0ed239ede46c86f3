#include "server/gpu_handlers.h"

#include <memory>
#include <string>

#include "query/chrome_trace.h"
#include "query/gpu_kernel_table.h"
#include "query/gpu_stream_timeline.h"
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

  http::HttpResponse TraceDownload(const http::HttpRequest& req) const {
    auto q = Parse(req, /*trace=*/true);
    if (!q.ok()) return ErrorFor(q.status());
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    auto activities = store_->SelectGpuActivities(*q);
    if (!activities.ok()) return ErrorFor(activities.status());
    http::HttpResponse r = http::HttpResponse::Json(200, query::RenderChromeTrace(*activities, q->from_ns, q->to_ns));
    r.headers.emplace_back("Content-Disposition", "attachment; filename=\"warpscope-gpu-trace-" +
                                                      std::to_string(q->from_ns) + ".json\"");
    return WithCaveats(std::move(r), context);
  }

 private:
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
  routes->push_back({"GET", "/api/v1/gpu/trace", bind(&GpuHandlers::Trace)});
  routes->push_back({"GET", "/api/v1/gpu/trace.json", bind(&GpuHandlers::TraceDownload)});
}

}  // namespace warpscope::server
