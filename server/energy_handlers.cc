#include "server/energy_handlers.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "query/energy.h"
#include "server/api_params.h"
#include "storage/series_steps.h"

namespace warpscope::server {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
// The grid is padded by at least this much on each side: NVML's energy
// counter is read every 10 s by default (the agent's slow metrics), so a
// minute holds readings on both sides of the range's edges.
constexpr int64_t kPadding = 60 * kSecond;
constexpr int64_t kMaxPaddingSteps = kPadding / kSecond;

StatusOr<query::EnergyGrouping> ParseGrouping(const http::HttpRequest& req) {
  const std::string g = req.QueryValue("group_by").value_or("");
  if (g.empty() || g == "node") return query::EnergyGrouping::kNode;
  if (g == "gpu") return query::EnergyGrouping::kGpu;
  if (g == "process" || g == "pid") return query::EnergyGrouping::kProcess;
  return InvalidArgumentError("parameter 'group_by': expected node, gpu, process or pid, found \"" + g + "\"");
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
    query::EnergyInputs in;
    in.from_ns = q->from_ns;
    in.to_ns = q->to_ns;
    // Whole seconds (NVML's power and utilization come every second), as
    // fine as the store's step limit allows with the padding.
    const int64_t span = q->to_ns - q->from_ns;
    const int64_t usable = storage::kMaxSeriesSteps - 2 * kMaxPaddingSteps - 4;
    in.step_ns = std::max(kSecond, (span / usable + kSecond) / kSecond * kSecond);
    const int64_t padding = (kPadding + in.step_ns - 1) / in.step_ns * in.step_ns;
    in.read_from_ns = q->from_ns - padding;
    in.read_to_ns = q->from_ns + (span + in.step_ns - 1) / in.step_ns * in.step_ns + padding;
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    if (Status s = Read(*q, &in); !s.ok()) return ErrorFor(s);
    const query::EnergyAnswer answer = query::ComputeEnergy(in, *grouping, *coefficients);
    return WithCaveats(http::HttpResponse::Json(200, query::RenderEnergyJson(answer)), context);
  }

 private:
  // The server's defaults (ApiOptions::energy), overridden per query.
  StatusOr<query::EnergyCoefficients> ParseCoefficients(const http::HttpRequest& req) const {
    query::EnergyCoefficients c = options_.energy;
    ASSIGN_OR_RETURN(c.pue, ParseNumber(req, "pue", c.pue, 1, 10));
    ASSIGN_OR_RETURN(c.carbon_intensity, ParseNumber(req, "carbon_intensity", c.carbon_intensity, 0, 5000));
    ASSIGN_OR_RETURN(c.price_per_kwh, ParseNumber(req, "price_per_kwh", c.price_per_kwh, 0, 1e6));
    ASSIGN_OR_RETURN(c.cpu_watts_per_core, ParseNumber(req, "cpu_watts_per_core", c.cpu_watts_per_core, 0, 1000));
    return c;
  }

  Status Read(const storage::ProfileQuery& q, query::EnergyInputs* in) const {
    auto metric = [&](const std::string& name, std::vector<std::string> group_by,
                      std::vector<storage::MetricSeries>* out) -> Status {
      storage::MetricQuery mq;
      mq.name = name;
      mq.from_ns = in->read_from_ns;
      mq.to_ns = in->read_to_ns;
      mq.selector = q.selector;
      mq.step_ns = in->step_ns;
      mq.group_by = std::move(group_by);
      mq.context = q.context;
      ASSIGN_OR_RETURN(*out, store_->SelectMetricSeries(mq));
      return Status::Ok();
    };
    RETURN_IF_ERROR(metric("gpu_energy", {"node", "gpu"}, &in->gpu_energy));
    RETURN_IF_ERROR(metric("gpu_power", {"node", "gpu"}, &in->gpu_power));
    RETURN_IF_ERROR(metric("gpu_utilization", {"node", "gpu"}, &in->gpu_utilization));
    RETURN_IF_ERROR(metric("gpu_process_sm_utilization", {"node", "pid", "comm", "gpu"}, &in->process_sm));
    ASSIGN_OR_RETURN(std::vector<storage::ProfileTypeInfo> types, store_->ProfileTypes());
    if (std::none_of(types.begin(), types.end(), [](const auto& t) { return t.name == "cpu"; })) return Status::Ok();
    storage::SeriesQuery sq;
    sq.profile = q;
    sq.profile.type = "cpu";
    sq.step_ns = q.to_ns - q.from_ns;  // one step: the range's total
    sq.group_by = {"node", "pid", "comm"};
    storage::ProfileTypeInfo unit;
    sq.answer_type = &unit;
    ASSIGN_OR_RETURN(in->cpu, store_->SelectSeries(sq));
    // Counts of one period, or nanoseconds when agents with different
    // periods were summed.
    in->cpu_period_ns = unit.sample_unit == "samples" && unit.period_nanos > 0 ? unit.period_nanos : 1;
    return Status::Ok();
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
