// The synthetic fleet that server_load uploads: N nodes running the same
// software, so nodes share binaries, functions and most stacks the way a real
// fleet does, plus some stacks only one node has.
//
// Per node: ~10 processes (two Go infrastructure daemons and eight services
// drawn from a fixed catalogue: Python, Java, C++ and Go programs), each with
// 1-4 threads; a series is one (node, pid, comm, exe, thread) label set. Every
// program has a shared pool of stacks of depth 20-40 (root prefix, a walk down
// the program's call tree, a libc or kernel leaf); every process adds a few
// stacks of its own and ranks its pool with a Zipf law. A node keeps
// `busy_cores` CPUs busy at 19 Hz; each 10 s window draws that many samples
// (process by CPU share, thread, stack) and aggregates them into
// (series, stack, count) rows, ~300 per node per window with the defaults.
//
// Everything is a pure function of the seed: the same (node, window) always
// yields the same rows, whichever thread asks.
//
// Threading: FleetModel is immutable after construction and read from every
// client thread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope::bench {

struct FleetOptions {
  int nodes = 20;
  uint64_t seed = 1;
  double stack_zipf_s = 1.35;  // skew of each process's stack distribution
  int hz = 19;
  int64_t window_ns = 10'000'000'000LL;
};

// Walker/Vose alias table: O(1) draws from a fixed discrete distribution.
class AliasTable {
 public:
  AliasTable() = default;
  explicit AliasTable(const std::vector<double>& weights);
  uint32_t Draw(uint64_t random_bits) const;  // uses 64 random bits
  size_t size() const { return prob_.size(); }

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

// One aggregated row of a window.
struct WindowRow {
  uint32_t series = 0;  // node-local series index
  uint32_t stack = 0;   // fleet-wide stack id
  int64_t value = 0;    // samples
};

class FleetModel {
 public:
  explicit FleetModel(const FleetOptions& options);
  ~FleetModel();
  FleetModel(const FleetModel&) = delete;
  FleetModel& operator=(const FleetModel&) = delete;

  const FleetOptions& options() const { return options_; }
  int nodes() const { return options_.nodes; }
  std::string NodeName(int node) const { return "node-" + std::to_string(node); }

  // The rows `node` aggregates in window number `window` (any integer, e.g.
  // the window's start in units of window_ns), sorted by (series, stack).
  void SampleWindow(int node, int64_t window, std::vector<WindowRow>* rows) const;

  // Model statistics for the summary.
  size_t distinct_stacks() const { return stack_offsets_.size() - 1; }
  size_t distinct_locations() const { return locations_.size(); }
  size_t distinct_functions() const { return functions_.size(); }
  size_t total_series() const;
  int busy_cores(int node) const { return nodes_[node].busy_cores; }

  // String ids the encoder needs by name.
  static constexpr uint32_t kCpuString = 1, kSamplesString = 2;

 private:
  friend class BatchEncoder;
  struct Program;
  struct Mapping {
    uint32_t filename = 0;  // string ids
    uint32_t build_id = 0;
  };
  struct Function {
    uint32_t name = 0, system_name = 0, filename = 0;
    uint32_t mapping = 0;  // 1-based fleet mapping id, 0 = none
    uint64_t base_address = 0;
    int64_t first_line = 0;
    v1::FrameKind kind = v1::FRAME_KIND_NATIVE;
  };
  struct Location {
    uint32_t function = 0;
    uint32_t variant = 0;  // call site / sampled address within the function
  };
  struct Series {
    uint32_t values[5] = {};  // string ids of comm, exe, node, pid, thread (sorted key order)
  };
  struct Process {
    uint32_t first_series = 0, series_count = 0;  // node-local series
    AliasTable thread_weights;
    std::vector<uint32_t> stacks;  // fleet-wide stack ids, hottest first
    AliasTable stack_ranks;
  };
  struct Node {
    int busy_cores = 0;
    std::vector<Series> series;
    std::vector<Process> processes;
    AliasTable cpu_share;  // over processes
  };

  uint32_t String(const std::string& s);
  uint32_t AddMapping(const std::string& filename);
  uint32_t AddFunction(uint32_t mapping, const std::string& name, const std::string& file, v1::FrameKind kind);
  uint32_t LocationFor(uint32_t function, uint32_t variant);
  std::vector<uint32_t> MakeStack(const Program& program, uint64_t path_seed, bool node_unique);
  uint32_t InternStack(std::vector<uint32_t> frames_root_first);
  void BuildCatalogue();
  void BuildNode(int node);

  FleetOptions options_;
  std::vector<std::string> strings_;  // [0] = ""
  std::vector<Mapping> mappings_;     // fleet mapping id - 1
  std::vector<Function> functions_;
  std::vector<Location> locations_;
  std::vector<uint32_t> stack_offsets_ = {0};  // stack i: stack_frames_[offsets[i], offsets[i+1]), leaf first
  std::vector<uint32_t> stack_frames_;         // location ids
  std::vector<Program> programs_;
  std::vector<Node> nodes_;
  uint32_t label_keys_[5] = {};

  // Construction-time indexes (dedupe while building).
  std::unordered_map<std::string, uint32_t> string_ids_, stack_ids_;
  std::unordered_map<uint64_t, uint32_t> location_ids_;  // function << 32 | variant
  std::vector<std::vector<uint32_t>> kernel_chains_;     // root first (entry first)
  std::vector<uint32_t> libc_leaves_;
};

}  // namespace warpscope::bench
