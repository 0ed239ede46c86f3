// Turns a window's rows into a serialized, zstd-compressed IngestBatch that
// carries only the dictionary entries those rows reference, each once (as an
// agent does). The fleet's dictionary is built once; per window this is a few
// thousand array lookups.
//
// The protobuf wire format is written by hand (fields in canonical order,
// zero scalars omitted, as the generated serializer does): building ~10k
// message objects per batch cost more CPU than the server under test spends
// on the batch, and the generator shares the machine with it. --describe
// checks the bytes against the generated parser.
//
// Threading: one encoder per client thread; it only reads the FleetModel.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/server_load/fleet_model.h"

namespace warpscope::bench {

struct BatchCounts {
  size_t strings = 0, mappings = 0, functions = 0, locations = 0, stacks = 0, label_sets = 0, samples = 0;
};

class BatchEncoder {
 public:
  BatchEncoder(const FleetModel& fleet, int zstd_level);
  ~BatchEncoder();
  BatchEncoder(const BatchEncoder&) = delete;
  BatchEncoder& operator=(const BatchEncoder&) = delete;

  // Returns the compressed body (valid until the next call).
  const std::string& Encode(int node, const std::string& agent_id, uint64_t sequence, int64_t start_ns,
                            const std::vector<WindowRow>& rows);
  const std::string& raw() const { return raw_; }  // the uncompressed protobuf of the last batch
  const BatchCounts& counts() const { return counts_; }

 private:
  // Maps fleet-wide ids to batch indices; an id is in this batch when its
  // epoch entry equals epoch_, so nothing is cleared between batches.
  struct Remap {
    std::vector<uint32_t> epoch, local;
    explicit Remap(size_t n = 0) : epoch(n, 0), local(n, 0) {}
  };
  uint32_t String(uint32_t id);
  uint32_t Mapping(uint32_t id);  // 1-based both sides, 0 = none
  uint32_t Function(uint32_t id);
  uint32_t Location(uint32_t id);
  uint32_t Stack(uint32_t id);
  uint32_t LabelSet(int node, uint32_t series);

  const FleetModel& fleet_;
  int zstd_level_;
  ZSTD_CCtx* cctx_;
  uint32_t epoch_ = 0;
  Remap strings_, mappings_, functions_, locations_, stacks_, series_;
  BatchCounts counts_;
  // One buffer per repeated field of IngestBatch, concatenated in field order.
  std::string strings_buf_, mappings_buf_, functions_buf_, locations_buf_, stacks_buf_, label_sets_buf_, samples_buf_;
  std::string message_, packed_, raw_, compressed_;
};

}  // namespace warpscope::bench
