#include "server/insight_handlers.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/selector.h"
#include "query/gpu_kernel_source.h"
#include "query/insights.h"
#include "server/api_params.h"
#include "server/query_limits.h"

namespace warpscope::server {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
// The step: at least 5 s (NVML's per-process utilization comes every 5 s),
// at most 720 steps over the range, whole seconds.
constexpr int64_t kMinStep = 5 * kSecond;
constexpr int64_t kMaxSteps = 720;
// Evidence profiles read per insight: its longest ranges.
constexpr size_t kEvidenceRanges = 5;

class InsightHandlers {
 public:
  InsightHandlers(storage::ProfileStore* store, ApiOptions options) : store_(store), options_(std::move(options)) {}

  http::HttpResponse Insights(const http::HttpRequest& req) const {
    auto q = ParseProfileQuery(req, options_.now_ns());
    if (!q.ok()) return ErrorFor(q.status());
    auto o = ParseOptions(req);
    if (!o.ok()) return ErrorFor(o.status());
    query::InsightInputs in;
    in.from_ns = q->from_ns;
    in.to_ns = q->to_ns;
    if (req.QueryValue("step")) {
      auto step = ParseStep(req, TimeRange{q->from_ns, q->to_ns});
      if (!step.ok()) return ErrorFor(step.status());
      in.step_ns = *step;
    } else {
      const int64_t span = q->to_ns - q->from_ns;
      in.step_ns = std::max(kMinStep, (span / kMaxSteps + kSecond - 1) / kSecond * kSecond);
    }
    storage::QueryContext context = storage::QueryContext::WithTimeout(options_.query_timeout);
    q->context = &context;
    if (Status s = Read(*q, &in); !s.ok()) return ErrorFor(s);
    if (Status s = CheckQueryRows(InputRows(in), options_.max_query_rows, options_.limits); !s.ok()) {
      return ErrorFor(s);
    }
    std::vector<query::Insight> insights = query::FindGpuStarvedByCpu(in, *o);
    for (query::Insight& x : insights) {
      auto profiles = Evidence(*q, x, /*whole_range=*/false);
      if (!profiles.ok()) return ErrorFor(profiles.status());
      query::AddTopFunctions(*profiles, o->top, &x);
      query::AddHostWaitEvidence(in, &x);
    }
    std::vector<query::Insight> sync = query::FindSyncHeavy(in, *o);
    for (query::Insight& x : sync) {
      auto profiles = Evidence(*q, x, /*whole_range=*/true);
      if (!profiles.ok()) return ErrorFor(profiles.status());
      query::AddWaitCallSites(*profiles, o->top, static_cast<double>(in.to_ns - in.from_ns) / 1e9, &x);
      insights.push_back(std::move(x));
    }
    for (auto* find : {&query::FindLaunchBound, &query::FindFusionCandidates, &query::FindTransferBound}) {
      for (query::Insight& x : find(in, *o)) {
        // The call sites of the GPU time over the evidence's ranges (of the
        // sequence's kernels for a fusion candidate).
        auto profiles = Evidence(*q, x, /*whole_range=*/x.kind == "fusion_candidate");
        if (!profiles.ok()) return ErrorFor(profiles.status());
        query::AddLaunchCallSites(*profiles, x.sequence, o->top, &x);
        insights.push_back(std::move(x));
      }
    }
    for (query::Insight& x : query::FindThrottled(in, *o)) insights.push_back(std::move(x));
    for (query::Insight& x : query::FindMemoryBound(in, *o)) insights.push_back(std::move(x));
    // From PC samples inside kernels, where agents sample them.
    if (in.has_gpu_pc) {
      storage::ProfileQuery p = *q;
      p.type = "gpu_pc";
      auto pc = store_->SelectProfile(p);
      if (!pc.ok()) return ErrorFor(pc.status());
      for (query::Insight& x :
           query::FindMemoryBoundKernels(*pc, in, *o, req.QueryValue("selector").value_or("{}"))) {
        insights.push_back(std::move(x));
      }
    }
    query::DropExplainedStarvation(&insights);
    return WithCaveats(http::HttpResponse::Json(200, query::RenderInsightsJson(std::move(insights), in, *o)), context);
  }

 private:
  // Every threshold has a range in which it means something: a minimum
  // above 0 where 0 would flag every step (a share or rate "at least 0"), or
  // no step (a percent "below 0"), so a query can never ask a finder to
  // judge what the threshold cannot tell apart.
  StatusOr<query::InsightOptions> ParseOptions(const http::HttpRequest& req) const {
    query::InsightOptions o;
    ASSIGN_OR_RETURN(o.starved_gpu_percent, ParseNumber(req, "starved_gpu_percent", o.starved_gpu_percent, 1, 100));
    ASSIGN_OR_RETURN(o.starved_thread_cores,
                     ParseNumber(req, "starved_thread_cores", o.starved_thread_cores, 0.01, 1024));
    ASSIGN_OR_RETURN(o.min_share, ParseNumber(req, "min_share", o.min_share, 0, 1));
    ASSIGN_OR_RETURN(const double min_duration_ms,
                     ParseNumber(req, "min_duration_ms", static_cast<double>(o.min_duration_ns / 1'000'000), 0, 1e9));
    o.min_duration_ns = static_cast<int64_t>(min_duration_ms * 1e6);
    ASSIGN_OR_RETURN(o.sync_share, ParseNumber(req, "sync_share", o.sync_share, 0.01, 1));
    ASSIGN_OR_RETURN(const double min_wait_ms,
                     ParseNumber(req, "min_wait_ms", static_cast<double>(o.min_wait_ns / 1'000'000), 1, 1e9));
    o.min_wait_ns = static_cast<int64_t>(min_wait_ms * 1e6);
    ASSIGN_OR_RETURN(o.short_kernel_share, ParseNumber(req, "short_kernel_share", o.short_kernel_share, 0.01, 1));
    ASSIGN_OR_RETURN(o.min_launch_rate, ParseNumber(req, "min_launch_rate", o.min_launch_rate, 1, 1e9));
    ASSIGN_OR_RETURN(o.launch_idle_share, ParseNumber(req, "launch_idle_share", o.launch_idle_share, 0.01, 1));
    ASSIGN_OR_RETURN(o.min_sequence_rate, ParseNumber(req, "min_sequence_rate", o.min_sequence_rate, 0.01, 1e9));
    ASSIGN_OR_RETURN(o.busy_gpu_percent, ParseNumber(req, "busy_gpu_percent", o.busy_gpu_percent, 1, 100));
    ASSIGN_OR_RETURN(o.throttle_share, ParseNumber(req, "throttle_share", o.throttle_share, 0.01, 1));
    ASSIGN_OR_RETURN(o.transfer_share, ParseNumber(req, "transfer_share", o.transfer_share, 0.01, 1));
    ASSIGN_OR_RETURN(o.memory_bound_dram_percent,
                     ParseNumber(req, "memory_bound_dram_percent", o.memory_bound_dram_percent, 1, 100));
    ASSIGN_OR_RETURN(o.memory_bound_stall_share,
                     ParseNumber(req, "memory_bound_stall_share", o.memory_bound_stall_share, 0.01, 1));
    ASSIGN_OR_RETURN(o.memory_bound_kernel_share,
                     ParseNumber(req, "memory_bound_kernel_share", o.memory_bound_kernel_share, 0.001, 1));
    // "at most" a tensor activity: 0 (tensor cores never active) is a real ask.
    ASSIGN_OR_RETURN(o.memory_bound_tensor_percent,
                     ParseNumber(req, "memory_bound_tensor_percent", o.memory_bound_tensor_percent, 0, 100));
    ASSIGN_OR_RETURN(const uint64_t top, ParseUnsigned(req, "top", o.top, 50));
    if (top < 1) return InvalidArgumentError("parameter 'top': at least 1, found 0");
    o.top = top;
    return o;
  }

  static size_t InputRows(const query::InsightInputs& in) {
    size_t rows = PointsOf(in.cpu_threads) + PointsOf(in.wait_threads);
    for (const auto* metric :
         {&in.process_sm, &in.process_memory, &in.device_utilization, &in.busy, &in.idle, &in.kernels,
          &in.kernels_launch_known, &in.short_kernels, &in.kernel_seconds, &in.launch_call_seconds,
          &in.memcpy_seconds, &in.memcpy_bytes, &in.sequence_count, &in.sequence_gpu_seconds,
          &in.sequence_gap_seconds, &in.throttled, &in.sm_clock, &in.sm_clock_max, &in.dram_bandwidth,
          &in.tensor_activity}) {
      rows += PointsOf(*metric);
    }
    return rows;
  }

  // Every series the finders read, over the request's range and selector.
  Status Read(const storage::ProfileQuery& q, query::InsightInputs* in) const {
    auto metric = [&](const std::string& name, std::vector<std::string> group_by,
                      std::vector<storage::MetricSeries>* out) -> Status {
      storage::MetricQuery mq;
      mq.name = name;
      mq.from_ns = q.from_ns;
      mq.to_ns = q.to_ns;
      mq.selector = q.selector;
      mq.step_ns = in->step_ns;
      mq.group_by = std::move(group_by);
      mq.context = q.context;
      ASSIGN_OR_RETURN(*out, store_->SelectMetricSeries(mq));
      return Status::Ok();
    };
    RETURN_IF_ERROR(metric("gpu_process_sm_utilization", {"node", "pid", "comm", "gpu"}, &in->process_sm));
    RETURN_IF_ERROR(metric("gpu_process_memory_used", {"node", "pid", "comm", "gpu"}, &in->process_memory));
    RETURN_IF_ERROR(metric("gpu_utilization", {"node", "gpu"}, &in->device_utilization));
    const std::vector<std::string> device = {"node", "pid", "comm", "device"};
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> keys = device;
      keys.insert(keys.end(), more.begin(), more.end());
      return keys;
    };
    RETURN_IF_ERROR(metric("cuda_gpu_busy_seconds", with({"category"}), &in->busy));
    RETURN_IF_ERROR(metric("cuda_gpu_idle_seconds", with({"reason"}), &in->idle));
    RETURN_IF_ERROR(metric("cuda_kernels", device, &in->kernels));
    RETURN_IF_ERROR(metric("cuda_kernels_launch_known", device, &in->kernels_launch_known));
    RETURN_IF_ERROR(metric("cuda_short_kernels", device, &in->short_kernels));
    RETURN_IF_ERROR(metric("cuda_kernel_seconds", device, &in->kernel_seconds));
    RETURN_IF_ERROR(metric("cuda_launch_call_seconds", device, &in->launch_call_seconds));
    RETURN_IF_ERROR(metric("cuda_memcpy_seconds", with({"copy", "memory"}), &in->memcpy_seconds));
    RETURN_IF_ERROR(metric("cuda_memcpy_bytes", with({"copy", "memory"}), &in->memcpy_bytes));
    const std::vector<std::string> sequence = {"node", "pid", "comm", "sequence"};
    RETURN_IF_ERROR(metric("cuda_kernel_sequence_count", sequence, &in->sequence_count));
    RETURN_IF_ERROR(metric("cuda_kernel_sequence_gpu_seconds", sequence, &in->sequence_gpu_seconds));
    RETURN_IF_ERROR(metric("cuda_kernel_sequence_gap_seconds", sequence, &in->sequence_gap_seconds));
    RETURN_IF_ERROR(metric("gpu_clocks_throttled", {"node", "gpu", "reason"}, &in->throttled));
    RETURN_IF_ERROR(metric("gpu_sm_clock", {"node", "gpu"}, &in->sm_clock));
    RETURN_IF_ERROR(metric("gpu_sm_clock_max", {"node", "gpu"}, &in->sm_clock_max));
    RETURN_IF_ERROR(metric("gpu_dram_bandwidth", {"node", "gpu"}, &in->dram_bandwidth));
    RETURN_IF_ERROR(metric("gpu_tensor_activity", {"node", "gpu"}, &in->tensor_activity));
    ASSIGN_OR_RETURN(std::vector<storage::ProfileTypeInfo> types, store_->ProfileTypes());
    auto series = [&](const std::string& type, std::vector<storage::Series>* out) -> Status {
      const bool stored = std::any_of(types.begin(), types.end(), [&](const auto& t) { return t.name == type; });
      if (!stored) return Status::Ok();
      storage::SeriesQuery sq;
      sq.profile = q;
      sq.profile.type = type;
      sq.step_ns = in->step_ns;
      sq.group_by = {"node", "pid", "comm", "thread"};
      storage::ProfileTypeInfo unit;
      sq.answer_type = &unit;
      ASSIGN_OR_RETURN(*out, store_->SelectSeries(sq));
      // CPU samples are counts of one period, or nanoseconds when agents
      // with different periods were summed.
      if (type == "cpu") in->cpu_period_ns = unit.sample_unit == "samples" && unit.period_nanos > 0 ? unit.period_nanos : 1;
      return Status::Ok();
    };
    RETURN_IF_ERROR(series("cpu", &in->cpu_threads));
    RETURN_IF_ERROR(series("gpu_wait", &in->wait_threads));
    in->has_gpu_pc = std::any_of(types.begin(), types.end(), [](const auto& t) { return t.name == "gpu_pc"; });
    return Status::Ok();
  }

  // The evidence profile of `x` over each of its longest ranges (or the
  // whole range), with its selector within the request's.
  StatusOr<std::vector<storage::MergedProfile>> Evidence(const storage::ProfileQuery& q, const query::Insight& x,
                                                         bool whole_range) const {
    ASSIGN_OR_RETURN(Selector narrowed, Selector::Parse(x.evidence_selector));
    std::vector<query::InsightRange> ranges = x.ranges;
    if (whole_range) ranges = {{q.from_ns, q.to_ns}};
    if (ranges.size() > kEvidenceRanges) ranges.resize(kEvidenceRanges);
    std::vector<storage::MergedProfile> out;
    for (const query::InsightRange& r : ranges) {
      storage::ProfileQuery p = q;
      p.type = x.evidence_type;
      p.from_ns = r.from_ns;
      p.to_ns = r.to_ns;
      p.selector = narrowed;
      ASSIGN_OR_RETURN(storage::MergedProfile profile, store_->SelectProfile(p));
      out.push_back(std::move(profile));
    }
    return out;
  }

  storage::ProfileStore* store_;
  ApiOptions options_;
};

}  // namespace

void AddInsightRoutes(storage::ProfileStore* store, const ApiOptions& options, http::Routes* routes) {
  auto h = std::make_shared<const InsightHandlers>(store, options);
  routes->push_back({"GET", "/api/v1/insights", [h](const http::HttpRequest& req) { return h->Insights(req); }});
}

}  // namespace warpscope::server
