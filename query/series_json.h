// The query API's JSON answers that are not profiles: sample series over
// time, metric series, metric and label names, label values, targets
// (nodes, their processes and GPUs) and profile types, rendered from what
// the store selected (docs/api.md has each shape). Small answers, so built
// as nlohmann::json trees and dumped. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/profile_store.h"

namespace warpscope::query {

// The range every answer repeats: from, to (RFC 3339) and from_ms, to_ms.
struct AnswerRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// /api/v1/series: per group, [t_ms, samples] of every step with samples.
std::string RenderSeriesJson(const std::vector<storage::Series>& series, const AnswerRange& range,
                             const std::string& type, int64_t step_ns);

// /api/v1/metrics: per group and step, [t_ms, min, max, avg]. `infos` (the
// store's MetricNames) give the unit; one name sent in several units lists
// them all, comma-separated.
std::string RenderMetricSeriesJson(const std::vector<storage::MetricSeries>& series, const AnswerRange& range,
                                   const std::string& name, const std::vector<storage::MetricInfo>& infos,
                                   int64_t step_ns);

// /api/v1/metric_names: {"metrics": [{name, unit}]}.
std::string RenderMetricNamesJson(const std::vector<storage::MetricInfo>& infos);

// /api/v1/labels: {"names": [...]}; /api/v1/label_values: {"name", "values"}.
std::string RenderLabelNamesJson(const std::vector<std::string>& names);
std::string RenderLabelValuesJson(const std::string& name, const std::vector<std::string>& values);

// /api/v1/targets: per node (sorted), its series count, its processes (pid,
// comm, exe, container and pod labels; one entry per distinct set) and its
// GPUs (index, uuid, name, PCI bus, ordered by index as a number), from the
// label sets of the range's series. Per-process GPU series may carry only
// some GPU labels: they fill in, never overwrite.
std::string RenderTargetsJson(const std::vector<storage::Labels>& label_sets, const AnswerRange& range);

// /api/v1/types: {"types": [{name, unit, period_nanos}]}.
std::string RenderTypesJson(const std::vector<storage::ProfileTypeInfo>& types);

}  // namespace warpscope::query
