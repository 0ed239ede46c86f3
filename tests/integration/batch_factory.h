// Test and benchmark helper: builds warpscope.v1.IngestBatch messages from
// readable stacks ("main;work;hot" root first) and label lists, the way an
// agent would (every string and frame once per batch).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope::testing {

class BatchFactory {
 public:
  BatchFactory(std::string agent_id, uint64_t sequence, int64_t start_ns, int64_t end_ns);

  // Adds `value` samples of the stack (frames root first, ';'-separated;
  // a frame "name@binary" sets the mapping file, "py:name@file:line" makes a
  // Python frame, "k:name" a kernel frame) at time_ns in the series `labels`.
  void Add(const std::string& stack, const std::vector<std::pair<std::string, std::string>>& labels, int64_t value,
           int64_t time_ns, const std::string& type = "cpu");
  void AddCounter(const std::string& name, uint64_t value);
  // Adds one metric point (a GPU metric, say) of metric `name` in `unit` at
  // time_ns in the series `labels`.
  void AddMetric(const std::string& name, const std::string& unit,
                 const std::vector<std::pair<std::string, std::string>>& labels, double value, int64_t time_ns);

  // Adds one CUDA kernel `name` (system name "_Z" + name) that ran in the
  // process `labels`; the returned message takes whatever else a test sets
  // (kind, bytes, grid, ...).
  warpscope::v1::GpuActivity& AddGpuKernel(const std::string& name,
                                           const std::vector<std::pair<std::string, std::string>>& labels,
                                           int64_t start_ns, int64_t duration_ns, uint32_t device, uint32_t stream,
                                           uint64_t correlation_id);
  // Adds one GPU trace coverage row (second, recorded, sent, complete until).
  void AddGpuCoverage(const std::vector<std::pair<std::string, std::string>>& labels, int64_t second_ns,
                      uint64_t recorded, uint64_t sent, int64_t complete_until_ns);

  const warpscope::v1::IngestBatch& batch() const { return batch_; }
  warpscope::v1::IngestBatch& mutable_batch() { return batch_; }

 private:
  uint32_t String(const std::string& s);
  uint32_t Location(const std::string& frame);
  uint32_t Stack(const std::string& stack);
  uint32_t LabelSet(std::vector<std::pair<std::string, std::string>> labels);
  uint32_t Type(const std::string& type);
  uint32_t MetricType(const std::string& name, const std::string& unit);

  warpscope::v1::IngestBatch batch_;
  std::map<std::string, uint32_t> strings_, mappings_, locations_, stacks_, label_sets_, types_;
  std::map<std::pair<std::string, std::string>, uint32_t> metric_types_;
};

}  // namespace warpscope::testing
