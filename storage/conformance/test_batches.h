// Builders of IngestBatch messages for the conformance suite and backend
// tests: batches the way an agent sends them (every string once, index 0 "").
// Single-threaded; any thread may own a builder.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/store_types.h"

namespace warpscope::storage::testing {

inline constexpr int64_t kSec = 1'000'000'000;
// A fixed, recent-looking base time for test data.
inline constexpr int64_t kT0 = 1'700'000'000 * kSec;

class BatchBuilder {
 public:
  explicit BatchBuilder(std::string agent_id = "agent-1", uint64_t sequence = 1);
  uint32_t Str(const std::string& s);
  // Returns the 1-based index locations use.
  uint32_t Mapping(const std::string& file, const std::string& build_id);
  uint32_t Function(const std::string& name, const std::string& system_name, const std::string& file);
  // lines: (function index, line), innermost first.
  uint32_t Location(uint32_t mapping, uint64_t address, v1::FrameKind kind,
                    const std::vector<std::pair<uint32_t, int64_t>>& lines);
  uint32_t Stack(const std::vector<uint32_t>& locations);
  uint32_t LabelSet(const Labels& labels);
  uint32_t Type(const std::string& name, const std::string& unit, int64_t period);
  void Sample(int64_t time, uint32_t type, uint32_t label_set, uint32_t stack, int64_t value);
  uint32_t MetricType(const std::string& name, const std::string& unit);
  void MetricPoint(int64_t time, uint32_t metric, uint32_t label_set, double value);
  // A kernel named `name` (system name "_Z" + name) on device 0; the caller
  // sets whatever else it needs on the returned message.
  v1::GpuActivity& GpuKernel(int64_t start, int64_t duration, uint32_t label_set, const std::string& name,
                             uint32_t stream = 7, uint64_t correlation_id = 0);
  void GpuCoverage(int64_t second, uint32_t label_set, uint64_t recorded, uint64_t sent, int64_t complete_until);

  // Shortcuts: a native frame "fn" in "/bin/app" (one line), a stack of such
  // frames by name (leaf first), the "cpu" type (samples, 10 ms).
  uint32_t SimpleFrame(const std::string& fn);
  uint32_t SimpleStack(const std::vector<std::string>& functions);
  uint32_t Cpu() { return Type("cpu", "samples", 10'000'000); }

  v1::IngestBatch& batch() { return batch_; }

 private:
  v1::IngestBatch batch_;
  std::map<std::string, uint32_t> strings_;
  std::map<std::string, uint32_t> simple_frames_;
  uint32_t app_mapping_ = 0;
};

// A node's 10 s upload: `stacks` stacks of `depth` frames named after
// `node`, one series per (node, comm), values 1 + (stack % 5). Batches with
// the same node share all content.
v1::IngestBatch NodeBatch(const std::string& node, uint64_t sequence, int64_t time_ns, int stacks, int depth = 8,
                          int processes = 2);

// A one-sample batch: (series {node=<node>}, stack [fn], value) at time_ns.
v1::IngestBatch OneSample(const std::string& agent, uint64_t sequence, int64_t time_ns, int64_t value,
                          const std::string& node = "n1", const std::string& fn = "main");

}  // namespace warpscope::storage::testing
