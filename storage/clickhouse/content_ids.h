// Content-addressed dictionary ids (docs/design/clickhouse.md §4): every id is
// XXH3-64 (seed 0) of a canonical encoding of the content, computed by
// whichever server replica ingests it, so replicas agree without talking and
// a re-insert of a dictionary row is a no-op after ReplacingMergeTree merges.
//
// Encoding: one tag byte, then the fields in order; strings as ULEB128 length
// + bytes, integers as 8 bytes little-endian. Id 0 is reserved for "none"
// (a hash of 0 becomes 1).
//
//   string_id   = H('S' s)                          type_id   = H('T' kind name unit period)
//   function_id = H('F' name system_name filename)  series_id = H('L' (name value)*, sorted by name)
//   location_id = H('O' mapping_file build_id address kind (function_id line)*)
//   stack_id    = H('K' location_id*)               batch_id  = H('B' agent_id sequence)
//
// Changing any of this changes every id: it is part of the on-disk format
// (schema_migrations.h); a new encoding needs a new schema version. Schema 1
// used SipHash-2-4 (equal to ClickHouse's sipHash64); schema 2 uses XXH3,
// 8x faster on these keys, where hashing was the largest share of the
// server's ingest CPU (docs/benchmarks.md, "Server ingest and query:
// embedded store and ClickHouse side by side").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/store_types.h"

namespace warpscope::clickhouse {

enum class TypeKind : uint8_t { kProfile = 0, kMetric = 1 };

class ContentKey {
 public:
  explicit ContentKey(char tag) { bytes_.push_back(tag); }
  // Starts a new key in the same buffer (no allocation once it is grown).
  ContentKey& Reset(char tag) {
    bytes_.clear();
    bytes_.push_back(tag);
    return *this;
  }
  ContentKey& Str(std::string_view s);
  ContentKey& U64(uint64_t v);
  ContentKey& I64(int64_t v) { return U64(static_cast<uint64_t>(v)); }
  uint64_t Id() const;
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

uint64_t StringId(std::string_view s);
uint64_t FunctionId(std::string_view name, std::string_view system_name, std::string_view filename);
// lines: (function_id, line), innermost first.
uint64_t LocationId(std::string_view mapping_file, std::string_view build_id, uint64_t address, uint8_t kind,
                    const std::vector<std::pair<uint64_t, int64_t>>& lines);
uint64_t StackId(const std::vector<uint64_t>& location_ids);
// `labels` must be sorted by name (storage::Labels' order).
uint64_t SeriesId(const storage::Labels& labels);
uint64_t TypeId(TypeKind kind, std::string_view name, std::string_view unit, int64_t period_nanos);
uint64_t BatchId(std::string_view agent_id, uint64_t sequence);

// The same ids as the functions above, built in one reused buffer: ingest
// hashes thousands of functions and locations per batch, and a fresh buffer
// per id was a measurable share of the server's CPU. One thread at a time.
class IdHasher {
 public:
  uint64_t Function(std::string_view name, std::string_view system_name, std::string_view filename);
  // Location's lines are added one by one (innermost first) between Begin and End.
  void BeginLocation(std::string_view mapping_file, std::string_view build_id, uint64_t address, uint8_t kind);
  void LocationLine(uint64_t function_id, int64_t line) { key_.U64(function_id).I64(line); }
  uint64_t EndLocation() const { return key_.Id(); }
  uint64_t Stack(const uint64_t* location_ids, size_t n);

 private:
  ContentKey key_{'\0'};
};

}  // namespace warpscope::clickhouse
