#include "bench/server_load/batch_encoder.h"

#include <algorithm>

#include "base/logging.h"

namespace warpscope::bench {
namespace {

// IngestBatch field numbers (proto/warpscope/v1/ingest.proto).
enum BatchField : uint32_t {
  kSchemaVersion = 1,
  kAgentId = 2,
  kSequence = 3,
  kStart = 4,
  kEnd = 5,
  kStrings = 6,
  kMappings = 7,
  kFunctions = 8,
  kLocations = 9,
  kStacks = 10,
  kLabelSets = 11,
  kTypes = 12,
  kSamples = 13,
};
constexpr uint32_t kVarint = 0, kLengthDelimited = 2;

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A varint field; proto3 omits zeros.
void PutField(uint32_t field, uint64_t v, std::string* out) {
  if (v == 0) return;
  PutVarint(field << 3 | kVarint, out);
  PutVarint(v, out);
}

void PutBytes(uint32_t field, const std::string& bytes, std::string* out) {
  PutVarint(field << 3 | kLengthDelimited, out);
  PutVarint(bytes.size(), out);
  out->append(bytes);
}

}  // namespace

BatchEncoder::BatchEncoder(const FleetModel& fleet, int zstd_level)
    : fleet_(fleet),
      zstd_level_(zstd_level),
      cctx_(ZSTD_createCCtx()),
      strings_(fleet.strings_.size()),
      mappings_(fleet.mappings_.size() + 1),
      functions_(fleet.functions_.size()),
      locations_(fleet.locations_.size()),
      stacks_(fleet.distinct_stacks()) {
  size_t max_series = 0;
  for (const auto& node : fleet.nodes_) max_series = std::max(max_series, node.series.size());
  series_ = Remap(max_series);
}

BatchEncoder::~BatchEncoder() { ZSTD_freeCCtx(cctx_); }

// Each lookup: already in this batch -> its index; else append it (and what it references).
uint32_t BatchEncoder::String(uint32_t id) {
  if (strings_.epoch[id] == epoch_) return strings_.local[id];
  strings_.epoch[id] = epoch_;
  strings_.local[id] = static_cast<uint32_t>(counts_.strings++);
  PutBytes(kStrings, fleet_.strings_[id], &strings_buf_);
  return strings_.local[id];
}

uint32_t BatchEncoder::Mapping(uint32_t id) {
  if (id == 0) return 0;
  if (mappings_.epoch[id] == epoch_) return mappings_.local[id];
  const FleetModel::Mapping& m = fleet_.mappings_[id - 1];
  message_.clear();
  PutField(1, String(m.filename), &message_);
  PutField(2, String(m.build_id), &message_);
  PutBytes(kMappings, message_, &mappings_buf_);
  mappings_.epoch[id] = epoch_;
  mappings_.local[id] = static_cast<uint32_t>(++counts_.mappings);  // 1-based
  return mappings_.local[id];
}

uint32_t BatchEncoder::Function(uint32_t id) {
  if (functions_.epoch[id] == epoch_) return functions_.local[id];
  const FleetModel::Function& f = fleet_.functions_[id];
  message_.clear();
  PutField(1, String(f.name), &message_);
  PutField(2, String(f.system_name), &message_);
  PutField(3, String(f.filename), &message_);
  PutBytes(kFunctions, message_, &functions_buf_);
  functions_.epoch[id] = epoch_;
  functions_.local[id] = static_cast<uint32_t>(counts_.functions++);
  return functions_.local[id];
}

uint32_t BatchEncoder::Location(uint32_t id) {
  if (locations_.epoch[id] == epoch_) return locations_.local[id];
  const FleetModel::Location& loc = fleet_.locations_[id];
  const FleetModel::Function& f = fleet_.functions_[loc.function];
  const uint32_t mapping = Mapping(f.mapping);
  const uint32_t function = Function(loc.function);
  std::string line;
  PutField(1, function, &line);
  PutField(2, static_cast<uint64_t>(f.first_line > 0 ? f.first_line + 3 * loc.variant : 0), &line);
  message_.clear();
  PutField(1, mapping, &message_);
  if (f.kind != v1::FRAME_KIND_PYTHON) PutField(2, f.base_address + 0x10 * loc.variant + 5, &message_);
  PutField(3, static_cast<uint64_t>(f.kind), &message_);
  PutBytes(4, line, &message_);
  PutBytes(kLocations, message_, &locations_buf_);
  locations_.epoch[id] = epoch_;
  locations_.local[id] = static_cast<uint32_t>(counts_.locations++);
  return locations_.local[id];
}

uint32_t BatchEncoder::Stack(uint32_t id) {
  if (stacks_.epoch[id] == epoch_) return stacks_.local[id];
  packed_.clear();  // Stack.locations, packed varints
  for (uint32_t i = fleet_.stack_offsets_[id]; i < fleet_.stack_offsets_[id + 1]; ++i) {
    PutVarint(Location(fleet_.stack_frames_[i]), &packed_);
  }
  message_.clear();
  PutBytes(1, packed_, &message_);
  PutBytes(kStacks, message_, &stacks_buf_);
  stacks_.epoch[id] = epoch_;
  stacks_.local[id] = static_cast<uint32_t>(counts_.stacks++);
  return stacks_.local[id];
}

uint32_t BatchEncoder::LabelSet(int node, uint32_t series) {
  if (series_.epoch[series] == epoch_) return series_.local[series];
  const FleetModel::Series& s = fleet_.nodes_[node].series[series];
  message_.clear();
  for (int k = 0; k < 5; ++k) {  // keys in sorted order, as the schema requires
    std::string label;
    PutField(1, String(fleet_.label_keys_[k]), &label);
    PutField(2, String(s.values[k]), &label);
    PutBytes(1, label, &message_);
  }
  PutBytes(kLabelSets, message_, &label_sets_buf_);
  series_.epoch[series] = epoch_;
  series_.local[series] = static_cast<uint32_t>(counts_.label_sets++);
  return series_.local[series];
}

const std::string& BatchEncoder::Encode(int node, const std::string& agent_id, uint64_t sequence, int64_t start_ns,
                                        const std::vector<WindowRow>& rows) {
  ++epoch_;  // 2^32 batches per encoder before ids could alias: far beyond any run
  counts_ = {};
  for (std::string* b : {&strings_buf_, &mappings_buf_, &functions_buf_, &locations_buf_, &stacks_buf_,
                         &label_sets_buf_, &samples_buf_}) {
    b->clear();
  }
  String(0);  // strings[0] is always ""
  const uint32_t cpu = String(FleetModel::kCpuString), samples = String(FleetModel::kSamplesString);
  std::string sample;
  for (const WindowRow& row : rows) {
    const uint32_t label_set = LabelSet(node, row.series);
    const uint32_t stack = Stack(row.stack);
    sample.clear();
    PutField(1, static_cast<uint64_t>(start_ns), &sample);
    // field 2 (type) is 0: the batch's only type
    PutField(3, label_set, &sample);
    PutField(4, stack, &sample);
    PutField(5, static_cast<uint64_t>(row.value), &sample);
    PutBytes(kSamples, sample, &samples_buf_);
    ++counts_.samples;
  }

  raw_.clear();
  PutField(kSchemaVersion, 1, &raw_);
  PutBytes(kAgentId, agent_id, &raw_);
  PutField(kSequence, sequence, &raw_);
  PutField(kStart, static_cast<uint64_t>(start_ns), &raw_);
  PutField(kEnd, static_cast<uint64_t>(start_ns + fleet_.options().window_ns), &raw_);
  for (const std::string* b :
       {&strings_buf_, &mappings_buf_, &functions_buf_, &locations_buf_, &stacks_buf_, &label_sets_buf_}) {
    raw_.append(*b);
  }
  message_.clear();
  PutField(1, cpu, &message_);
  PutField(2, samples, &message_);
  PutField(3, static_cast<uint64_t>(1'000'000'000LL / fleet_.options().hz), &message_);
  PutBytes(kTypes, message_, &raw_);
  raw_.append(samples_buf_);

  compressed_.resize(ZSTD_compressBound(raw_.size()));
  const size_t n =
      ZSTD_compressCCtx(cctx_, compressed_.data(), compressed_.size(), raw_.data(), raw_.size(), zstd_level_);
  CHECK(!ZSTD_isError(n));
  compressed_.resize(n);
  return compressed_;
}

}  // namespace warpscope::bench
