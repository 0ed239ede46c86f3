#include "storage/embedded/dictionary/batch_validator.h"

#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>

namespace warpscope::dictionary {
namespace {

using warpscope::v1::IngestBatch;

std::string Field(const char* list, int i, const char* member) {
  return std::string(list) + "[" + std::to_string(i) + "]." + member;
}

// `index` must be < `size` (the length of the batch's list `what`). The field
// name is built only on failure: a 30k-frame batch checks ~40k indices, and
// formatting each name up front cost more than all the interning (6 ms).
template <typename FieldFn>
Status CheckIndex(FieldFn field, uint64_t index, int size, const char* what) {
  if (index >= static_cast<uint64_t>(size)) [[unlikely]] {
    return InvalidArgumentError(field() + ": index " + std::to_string(index) + " out of range, batch has " +
                                std::to_string(size) + " " + what);
  }
  return Status::Ok();
}

}  // namespace

Status ValidateBatch(const IngestBatch& batch, const BatchLimits& limits) {
  if (batch.schema_version() != 1) {
    return InvalidArgumentError("schema_version: " + std::to_string(batch.schema_version()) +
                                " not supported (want 1)");
  }
  if (batch.agent_id().empty()) return InvalidArgumentError("agent_id: empty");
  if (batch.agent_id().size() > limits.max_string_bytes) {
    return InvalidArgumentError("agent_id: " + std::to_string(batch.agent_id().size()) + " bytes, limit " +
                                std::to_string(limits.max_string_bytes));
  }
  const int n_strings = batch.strings_size();
  for (int i = 0; i < n_strings; ++i) {
    if (batch.strings(i).size() > limits.max_string_bytes) {
      return InvalidArgumentError("strings[" + std::to_string(i) + "]: " + std::to_string(batch.strings(i).size()) +
                                  " bytes, limit " + std::to_string(limits.max_string_bytes));
    }
  }
  for (int i = 0; i < batch.mappings_size(); ++i) {
    const auto& m = batch.mappings(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("mappings", i, "filename"); }, m.filename(), n_strings, "strings"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("mappings", i, "build_id"); }, m.build_id(), n_strings, "strings"));
  }
  for (int i = 0; i < batch.functions_size(); ++i) {
    const auto& f = batch.functions(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("functions", i, "name"); }, f.name(), n_strings, "strings"));
    RETURN_IF_ERROR(
        CheckIndex([&] { return Field("functions", i, "system_name"); }, f.system_name(), n_strings, "strings"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("functions", i, "filename"); }, f.filename(), n_strings, "strings"));
  }
  for (int i = 0; i < batch.locations_size(); ++i) {
    const auto& loc = batch.locations(i);
    // mapping is 1-based with 0 = none, so mappings_size() itself is valid.
    RETURN_IF_ERROR(CheckIndex([&] { return Field("locations", i, "mapping"); }, loc.mapping(),
                               batch.mappings_size() + 1, "mappings (+1, 1-based)"));
    if (!warpscope::v1::FrameKind_IsValid(loc.kind())) {
      return InvalidArgumentError(Field("locations", i, "kind") + ": unknown frame kind " + std::to_string(loc.kind()));
    }
    if (static_cast<size_t>(loc.lines_size()) > limits.max_lines_per_location) {
      return InvalidArgumentError(Field("locations", i, "lines") + ": " + std::to_string(loc.lines_size()) +
                                  " lines, limit " + std::to_string(limits.max_lines_per_location));
    }
    for (int j = 0; j < loc.lines_size(); ++j) {
      RETURN_IF_ERROR(CheckIndex(
          [&] { return std::string("locations[" + std::to_string(i) + "].lines[" + std::to_string(j) + "].function"); },
          loc.lines(j).function(), batch.functions_size(), "functions"));
    }
  }
  for (int i = 0; i < batch.stacks_size(); ++i) {
    const auto& s = batch.stacks(i);
    if (static_cast<size_t>(s.locations_size()) > limits.max_stack_depth) {
      return InvalidArgumentError(Field("stacks", i, "locations") + ": depth " + std::to_string(s.locations_size()) +
                                  ", limit " + std::to_string(limits.max_stack_depth));
    }
    for (int j = 0; j < s.locations_size(); ++j) {
      RETURN_IF_ERROR(CheckIndex(
          [&] { return std::string("stacks[" + std::to_string(i) + "].locations[" + std::to_string(j) + "]"); },
          s.locations(j), batch.locations_size(), "locations"));
    }
  }
  for (int i = 0; i < batch.label_sets_size(); ++i) {
    const auto& set = batch.label_sets(i);
    if (static_cast<size_t>(set.labels_size()) > limits.max_labels_per_set) {
      return InvalidArgumentError(Field("label_sets", i, "labels") + ": " + std::to_string(set.labels_size()) +
                                  " labels, limit " + std::to_string(limits.max_labels_per_set));
    }
    // Keys compared by content: two indices may carry the same string.
    std::unordered_set<std::string_view> keys;
    for (int j = 0; j < set.labels_size(); ++j) {
      std::string prefix = "label_sets[" + std::to_string(i) + "].labels[" + std::to_string(j) + "]";
      RETURN_IF_ERROR(CheckIndex([&] { return prefix + ".key"; }, set.labels(j).key(), n_strings, "strings"));
      RETURN_IF_ERROR(CheckIndex([&] { return prefix + ".value"; }, set.labels(j).value(), n_strings, "strings"));
      const std::string& key = batch.strings(static_cast<int>(set.labels(j).key()));
      if (key.empty()) return InvalidArgumentError(prefix + ".key: empty label name");
      if (!keys.insert(key).second) {
        return InvalidArgumentError(prefix + ".key: duplicate label name \"" + key + "\"");
      }
    }
  }
  for (int i = 0; i < batch.types_size(); ++i) {
    const auto& t = batch.types(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("types", i, "name"); }, t.name(), n_strings, "strings"));
    RETURN_IF_ERROR(
        CheckIndex([&] { return Field("types", i, "sample_unit"); }, t.sample_unit(), n_strings, "strings"));
    if (t.period_nanos() < 0) {
      return InvalidArgumentError(Field("types", i, "period_nanos") + ": negative (" +
                                  std::to_string(t.period_nanos()) + ")");
    }
    if (t.period_nanos() != 0 &&
        (t.period_nanos() < limits.min_period_nanos || t.period_nanos() > limits.max_period_nanos)) {
      return InvalidArgumentError(Field("types", i, "period_nanos") + ": " + std::to_string(t.period_nanos()) +
                                  " is outside 0 or [" + std::to_string(limits.min_period_nanos) + ", " +
                                  std::to_string(limits.max_period_nanos) + "] ns");
    }
  }
  for (int i = 0; i < batch.samples_size(); ++i) {
    const auto& s = batch.samples(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("samples", i, "type"); }, s.type(), batch.types_size(), "types"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("samples", i, "label_set"); }, s.label_set(), batch.label_sets_size(),
                               "label_sets"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("samples", i, "stack"); }, s.stack(), batch.stacks_size(), "stacks"));
    if (s.value() < 1 || s.value() > limits.max_sample_value) [[unlikely]] {
      return InvalidArgumentError(Field("samples", i, "value") + ": " + std::to_string(s.value()) +
                                  " is outside [1, " + std::to_string(limits.max_sample_value) + "]");
    }
    // A count of samples stands for count x period nanoseconds, which is
    // what an answer mixing periods adds up: bounded the same way.
    const int64_t period = batch.types(static_cast<int>(s.type())).period_nanos();
    if (period > 1 && s.value() > limits.max_sample_value / period) [[unlikely]] {
      return InvalidArgumentError(Field("samples", i, "value") + ": " + std::to_string(s.value()) +
                                  " samples of period " + std::to_string(period) + " ns are more than " +
                                  std::to_string(limits.max_sample_value) + " ns");
    }
  }
  if (static_cast<size_t>(batch.metric_types_size()) > limits.max_metric_types) {
    return InvalidArgumentError("metric_types: " + std::to_string(batch.metric_types_size()) + " types, limit " +
                                std::to_string(limits.max_metric_types));
  }
  for (int i = 0; i < batch.metric_types_size(); ++i) {
    const auto& m = batch.metric_types(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("metric_types", i, "name"); }, m.name(), n_strings, "strings"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("metric_types", i, "unit"); }, m.unit(), n_strings, "strings"));
    if (batch.strings(static_cast<int>(m.name())).empty()) {
      return InvalidArgumentError(Field("metric_types", i, "name") + ": empty metric name");
    }
  }
  for (int i = 0; i < batch.metric_points_size(); ++i) {
    const auto& p = batch.metric_points(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("metric_points", i, "metric"); }, p.metric(),
                               batch.metric_types_size(), "metric_types"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("metric_points", i, "label_set"); }, p.label_set(),
                               batch.label_sets_size(), "label_sets"));
    if (!std::isfinite(p.value())) [[unlikely]] {
      return InvalidArgumentError(Field("metric_points", i, "value") + ": " +
                                  (std::isnan(p.value()) ? "NaN" : p.value() > 0 ? "+inf" : "-inf") +
                                  " is not a finite number");
    }
  }
  for (int i = 0; i < batch.gpu_activities_size(); ++i) {
    const auto& a = batch.gpu_activities(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("gpu_activities", i, "label_set"); }, a.label_set(),
                               batch.label_sets_size(), "label_sets"));
    RETURN_IF_ERROR(CheckIndex([&] { return Field("gpu_activities", i, "name"); }, a.name(), n_strings, "strings"));
    RETURN_IF_ERROR(
        CheckIndex([&] { return Field("gpu_activities", i, "system_name"); }, a.system_name(), n_strings, "strings"));
    // stack is 1-based with 0 = not sampled, so stacks_size() itself is valid.
    RETURN_IF_ERROR(CheckIndex([&] { return Field("gpu_activities", i, "stack"); }, a.stack(),
                               batch.stacks_size() + 1, "stacks (+1, 1-based)"));
    if (!warpscope::v1::GpuActivityKind_IsValid(a.kind())) {
      return InvalidArgumentError(Field("gpu_activities", i, "kind") + ": unknown GPU activity kind " +
                                  std::to_string(a.kind()));
    }
    if (a.duration_nanos() < 0) {
      return InvalidArgumentError(Field("gpu_activities", i, "duration_nanos") + ": negative (" +
                                  std::to_string(a.duration_nanos()) + ")");
    }
    if (a.duration_nanos() > limits.max_gpu_duration_nanos) {
      return InvalidArgumentError(Field("gpu_activities", i, "duration_nanos") + ": " +
                                  std::to_string(a.duration_nanos()) + " is more than the limit of " +
                                  std::to_string(limits.max_gpu_duration_nanos));
    }
    if (!warpscope::v1::GpuLaunchApi_IsValid(a.launch_api())) {
      return InvalidArgumentError(Field("gpu_activities", i, "launch_api") + ": unknown launch API " +
                                  std::to_string(a.launch_api()));
    }
    if (a.launch_duration_nanos() < 0 || a.launch_duration_nanos() > limits.max_gpu_duration_nanos) {
      return InvalidArgumentError(Field("gpu_activities", i, "launch_duration_nanos") + ": " +
                                  std::to_string(a.launch_duration_nanos()) + " is negative or more than the limit of " +
                                  std::to_string(limits.max_gpu_duration_nanos));
    }
    // The launch precedes its kernel: one more than a day before or after it is not a clock skew.
    constexpr int64_t kDayNanos = 86'400'000'000'000;
    const __int128 gap = static_cast<__int128>(a.launch_start_unix_nanos()) - a.start_unix_nanos();
    if (a.launch_start_unix_nanos() != 0 && (gap < -kDayNanos || gap > kDayNanos)) {
      return InvalidArgumentError(Field("gpu_activities", i, "launch_start_unix_nanos") + ": " +
                                  std::to_string(a.launch_start_unix_nanos()) + " is more than a day from the start " +
                                  std::to_string(a.start_unix_nanos()));
    }
  }
  for (int i = 0; i < batch.gpu_trace_coverage_size(); ++i) {
    const auto& c = batch.gpu_trace_coverage(i);
    RETURN_IF_ERROR(CheckIndex([&] { return Field("gpu_trace_coverage", i, "label_set"); }, c.label_set(),
                               batch.label_sets_size(), "label_sets"));
    if (c.sent() > c.recorded()) {
      return InvalidArgumentError(Field("gpu_trace_coverage", i, "sent") + ": " + std::to_string(c.sent()) +
                                  " is more than recorded (" + std::to_string(c.recorded()) + ")");
    }
  }
  for (int i = 0; i < batch.counters_size(); ++i) {
    RETURN_IF_ERROR(
        CheckIndex([&] { return Field("counters", i, "name"); }, batch.counters(i).name(), n_strings, "strings"));
  }
  return Status::Ok();
}

}  // namespace warpscope::dictionary
