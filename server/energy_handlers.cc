#include "server/energy_handlers.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>

#include "query/energy.h"
#include "query/energy_read.h"
#include "server/api_params.h"
#include "server/query_limits.h"

namespace warpscope::server {
namespace {

StatusOr<query::EnergyGrouping> ParseGrouping(const http::HttpRequest& req) {
  const std::string g = req.QueryValue("group_by").value_or("");
  if (g.empty() || g == "node") return query::EnergyGrouping::kNode;
  if (g == "gpu") return query::EnergyGrouping::kGpu;
  if (g == "process" || g == "pid") return query::EnergyGrouping::kProcess;
  if (g == "pod") return query::EnergyGrouping::kPod;
  return InvalidArgumentError("parameter 'group_by': expected node, gpu, process, pid or pod, found \"" + g + "\"");
}

class EnergyHandlers {
 public:
  EnergyHandlers(storage::ProfileStore* store, ApiOptions options) : store_(store), options_(std::move(options)) {}

  http::HttpResponse Energy(const http::HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    auto grouping = ParseGrouping(req);
    if (!grouping.ok()) return ErrorFor(grouping.status());
    auto coefficients = ParseCoefficients(req);
    if (!coefficients.ok()) return ErrorFor(coefficients.status());
    query::EnergyInputs in = query::EnergyGrid(q->from_ns, q->to_ns);
    if (req.QueryValue("step")) {
      auto step = ParseStep(req, TimeRange{q->from_ns, q->to_ns});
      if (!step.ok()) return ErrorFor(step.status());
      in.series_step_ns = std::max(in.step_ns, (*step + in.step_ns - 1) / in.step_ns * in.step_ns);
    }
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    const bool per_process = *grouping == query::EnergyGrouping::kProcess || *grouping == query::EnergyGrouping::kPod;
    std::set<std::pair<std::string, std::string>> selected;
    if (Status s = query::ReadEnergyInputs(store_, *q, {}, &in, per_process ? &selected : nullptr); !s.ok()) {
      return ErrorFor(s);
    }
    const size_t rows = PointsOf(in.gpu_energy) + PointsOf(in.gpu_power) + PointsOf(in.gpu_utilization) +
                        PointsOf(in.process_sm) + PointsOf(in.process_memory) + PointsOf(in.gpu_time) +
                        PointsOf(in.cpu_energy) + PointsOf(in.dram_energy) + PointsOf(in.cpu) + PointsOf(in.node_cpu);
    if (Status s = CheckQueryRows(rows, options_.max_query_rows, options_.limits); !s.ok()) return ErrorFor(s);
    if (per_process && query::SelectsProcesses(q->selector)) in.selected_processes = std::move(selected);
    const query::EnergyAnswer answer = query::ComputeEnergy(in, *grouping, *coefficients, options_.regions);
    return WithCaveats(http::HttpResponse::Json(200, query::RenderEnergyJson(answer)), context);
  }

 private:
  // The server's defaults (ApiOptions::energy), overridden per query.
  StatusOr<query::EnergyCoefficients> ParseCoefficients(const http::HttpRequest& req) const {
    query::EnergyCoefficients c = options_.energy;
    ASSIGN_OR_RETURN(c.pue, ParseNumber(req, "pue", c.pue, 1, 10));
    ASSIGN_OR_RETURN(c.carbon_intensity, ParseNumber(req, "carbon_intensity", c.carbon_intensity, 0, 5000));
    c.pue_given = req.QueryValue("pue").has_value();
    c.carbon_intensity_given = req.QueryValue("carbon_intensity").has_value();
    c.cpu_watts_given = req.QueryValue("cpu_watts_per_core").has_value();
    ASSIGN_OR_RETURN(c.price_per_kwh, ParseNumber(req, "price_per_kwh", c.price_per_kwh, 0, 1e6));
    ASSIGN_OR_RETURN(c.cpu_watts_per_core, ParseNumber(req, "cpu_watts_per_core", c.cpu_watts_per_core, 0, 1000));
    return c;
  }

  storage::ProfileStore* store_;
  ApiOptions options_;
};

}  // namespace

void AddEnergyRoutes(storage::ProfileStore* store, const ApiOptions& options, http::Routes* routes) {
  auto h = std::make_shared<const EnergyHandlers>(store, options);
  routes->push_back({"GET", "/api/v1/energy", [h](const http::HttpRequest& req) { return h->Energy(req); }});
}

}  // namespace warpscope::server
