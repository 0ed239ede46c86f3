#include "storage/clickhouse/content_ids.h"

#include <cstring>

// XXH3 (Debian libxxhash-dev), header-only as in the embedded store.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace warpscope::clickhouse {

ContentKey& ContentKey::Str(std::string_view s) {
  uint64_t n = s.size();
  while (n >= 0x80) {
    bytes_.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  bytes_.push_back(static_cast<char>(n));
  bytes_.append(s.data(), s.size());
  return *this;
}

ContentKey& ContentKey::U64(uint64_t v) {
  const size_t at = bytes_.size();
  bytes_.resize(at + 8);
  std::memcpy(bytes_.data() + at, &v, 8);  // little-endian hosts only (x86-64, arm64), as row_binary.h
  return *this;
}

uint64_t ContentKey::Id() const {
  const uint64_t h = XXH3_64bits(bytes_.data(), bytes_.size());
  return h == 0 ? 1 : h;
}

uint64_t StringId(std::string_view s) { return ContentKey('S').Str(s).Id(); }

uint64_t FunctionId(std::string_view name, std::string_view system_name, std::string_view filename) {
  return IdHasher().Function(name, system_name, filename);
}

uint64_t LocationId(std::string_view mapping_file, std::string_view build_id, uint64_t address, uint8_t kind,
                    const std::vector<std::pair<uint64_t, int64_t>>& lines) {
  IdHasher h;
  h.BeginLocation(mapping_file, build_id, address, kind);
  for (const auto& [function_id, line] : lines) h.LocationLine(function_id, line);
  return h.EndLocation();
}

uint64_t StackId(const std::vector<uint64_t>& location_ids) {
  return IdHasher().Stack(location_ids.data(), location_ids.size());
}

uint64_t SeriesId(const storage::Labels& labels) {
  ContentKey key('L');
  for (const auto& [name, value] : labels) key.Str(name).Str(value);
  return key.Id();
}

uint64_t TypeId(TypeKind kind, std::string_view name, std::string_view unit, int64_t period_nanos) {
  return ContentKey('T').U64(static_cast<uint8_t>(kind)).Str(name).Str(unit).I64(period_nanos).Id();
}

uint64_t BatchId(std::string_view agent_id, uint64_t sequence) {
  return ContentKey('B').Str(agent_id).U64(sequence).Id();
}

uint64_t IdHasher::Function(std::string_view name, std::string_view system_name, std::string_view filename) {
  return key_.Reset('F').Str(name).Str(system_name).Str(filename).Id();
}

void IdHasher::BeginLocation(std::string_view mapping_file, std::string_view build_id, uint64_t address,
                             uint8_t kind) {
  key_.Reset('O').Str(mapping_file).Str(build_id).U64(address).U64(kind);
}

uint64_t IdHasher::Stack(const uint64_t* location_ids, size_t n) {
  key_.Reset('K');
  for (size_t i = 0; i < n; ++i) key_.U64(location_ids[i]);
  return key_.Id();
}

}  // namespace warpscope::clickhouse
