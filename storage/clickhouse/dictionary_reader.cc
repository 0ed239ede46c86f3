#include "storage/clickhouse/dictionary_reader.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"

namespace warpscope::clickhouse {
namespace {

using storage::ResolvedFrame;

std::vector<uint64_t> Distinct(std::vector<uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string Hex(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

template <typename Map, typename Value>
void PutBounded(Map& map, size_t limit, uint64_t id, Value value) {
  if (map.size() >= limit) map.clear();
  map.emplace(id, std::move(value));
}

}  // namespace

// Cached entries of `ids` are copied out under the lock (shared pointers or
// small values), the distinct misses fetched with no lock held, then cached
// and copied out too: a cache cleared by another thread in between does not
// matter.
template <typename Value, typename Fetch>
StatusOr<std::unordered_map<uint64_t, Value>> DictionaryReader::Lookup(std::unordered_map<uint64_t, Value>& cache,
                                                                       const std::vector<uint64_t>& ids,
                                                                       Fetch fetch) {
  std::unordered_map<uint64_t, Value> out;
  std::vector<uint64_t> missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t id : ids) {
      if (out.contains(id)) continue;
      auto it = cache.find(id);
      if (it != cache.end()) {
        out.emplace(id, it->second);
      } else {
        missing.push_back(id);
      }
    }
  }
  if (missing.empty()) return out;
  ASSIGN_OR_RETURN(auto got, fetch(Distinct(std::move(missing))));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, value] : got) {
    PutBounded(cache, max_cached_, id, value);
    out.emplace(id, std::move(value));
  }
  return out;
}

StatusOr<std::unordered_map<uint64_t, DictionaryReader::Locations>> DictionaryReader::FetchStacks(
    const std::vector<uint64_t>& ids) {
  ASSIGN_OR_RETURN(
      std::string body,
      client_->Execute(ClickHouseRequest::Read("SELECT stack_id, any(location_ids) FROM stacks WHERE stack_id IN ids "
                                               "GROUP BY stack_id FORMAT RowBinary")
                           .With(IdTable("ids", ids))));
  RowBinaryReader r(body);
  std::unordered_map<uint64_t, Locations> got;
  while (!r.done()) {
    const uint64_t id = r.UInt64();
    auto locations = std::make_shared<std::vector<uint64_t>>(r.VarUInt());
    for (uint64_t& l : *locations) l = r.UInt64();
    got.emplace(id, std::move(locations));
  }
  RETURN_IF_ERROR(r.status("stacks"));
  for (uint64_t id : ids) {
    if (!got.contains(id)) return DataLossError("stack " + Hex(id) + " is referenced by samples but not in stacks");
  }
  return got;
}

StatusOr<std::unordered_map<uint64_t, DictionaryReader::Frames>> DictionaryReader::FetchLocations(
    const std::vector<uint64_t>& ids) {
  ASSIGN_OR_RETURN(
      std::string body,
      client_->Execute(ClickHouseRequest::Read("SELECT location_id, any(address), any(kind), any(mapping_file), "
                                               "any(build_id), any(lines.function_id), any(lines.line) FROM locations "
                                               "WHERE location_id IN ids GROUP BY location_id FORMAT RowBinary")
                           .With(IdTable("ids", ids))));
  struct Location {
    uint64_t address = 0;
    uint8_t kind = 0;
    std::string mapping_file, build_id;
    std::vector<std::pair<uint64_t, int64_t>> lines;
  };
  std::unordered_map<uint64_t, Location> got;
  std::vector<uint64_t> function_ids;
  RowBinaryReader r(body);
  while (!r.done()) {
    const uint64_t id = r.UInt64();
    Location l;
    l.address = r.UInt64();
    l.kind = r.UInt8();
    l.mapping_file = r.String();
    l.build_id = r.String();
    l.lines.resize(r.VarUInt());
    for (auto& line : l.lines) {
      line.first = r.UInt64();
      function_ids.push_back(line.first);
    }
    if (r.VarUInt() != l.lines.size()) return InternalError("locations: lines.function_id and lines.line differ");
    for (auto& line : l.lines) line.second = r.Int64();
    got.emplace(id, std::move(l));
  }
  RETURN_IF_ERROR(r.status("locations"));
  for (uint64_t id : ids) {
    if (!got.contains(id)) return DataLossError("location " + Hex(id) + " is referenced by a stack but not stored");
  }
  struct Function {
    std::string name, system_name, filename;
  };
  std::unordered_map<uint64_t, Function> functions;
  function_ids = Distinct(std::move(function_ids));
  if (!function_ids.empty()) {
    ASSIGN_OR_RETURN(
        std::string fbody,
        client_->Execute(ClickHouseRequest::Read("SELECT function_id, any(name), any(system_name), any(filename) FROM "
                                                 "functions WHERE function_id IN ids GROUP BY function_id "
                                                 "FORMAT RowBinary")
                             .With(IdTable("ids", function_ids))));
    RowBinaryReader f(fbody);
    while (!f.done()) {
      const uint64_t id = f.UInt64();
      Function fn;
      fn.name = f.String();
      fn.system_name = f.String();
      fn.filename = f.String();
      functions.emplace(id, std::move(fn));
    }
    RETURN_IF_ERROR(f.status("functions"));
  }
  std::unordered_map<uint64_t, Frames> built;
  for (auto& [id, l] : got) {
    auto frames = std::make_shared<std::vector<ResolvedFrame>>();
    ResolvedFrame base;
    base.location_id = id;
    base.address = l.address;
    base.kind = static_cast<warpscope::v1::FrameKind>(l.kind);
    base.mapping_file = l.mapping_file;
    base.build_id = l.build_id;
    if (l.lines.empty()) frames->push_back(base);
    for (size_t i = 0; i < l.lines.size(); ++i) {
      auto fn = functions.find(l.lines[i].first);
      if (fn == functions.end()) {
        return DataLossError("function " + Hex(l.lines[i].first) + " is referenced by location " + Hex(id) +
                             " but not stored");
      }
      ResolvedFrame frame = base;
      frame.function_name = fn->second.name;
      frame.system_name = fn->second.system_name;
      frame.file = fn->second.filename;
      frame.line = l.lines[i].second;
      frame.inlined = i + 1 < l.lines.size();
      frames->push_back(std::move(frame));
    }
    built.emplace(id, std::move(frames));
  }
  return built;
}

StatusOr<ResolvedStackTable> DictionaryReader::ResolveStacks(const std::vector<uint64_t>& stack_ids) {
  // Two rounds at most: stacks, then the locations they use.
  ASSIGN_OR_RETURN(auto stacks, Lookup(stacks_, stack_ids, [&](const auto& ids) { return FetchStacks(ids); }));
  std::vector<uint64_t> location_ids;
  for (const auto& [id, ls] : stacks) location_ids.insert(location_ids.end(), ls->begin(), ls->end());
  ASSIGN_OR_RETURN(auto locations,
                   Lookup(locations_, location_ids, [&](const auto& ids) { return FetchLocations(ids); }));
  ResolvedStackTable out;
  std::unordered_map<uint64_t, uint32_t> first_frame;  // location -> its first frame's index
  out.stacks.reserve(stack_ids.size());
  for (uint64_t id : stack_ids) {
    std::vector<uint32_t> frames;
    for (uint64_t l : *stacks.at(id)) {
      const std::vector<ResolvedFrame>& lf = *locations.at(l);
      auto [it, inserted] = first_frame.try_emplace(l, static_cast<uint32_t>(out.frames.size()));
      if (inserted) out.frames.insert(out.frames.end(), lf.begin(), lf.end());
      for (uint32_t i = 0; i < lf.size(); ++i) frames.push_back(it->second + i);
    }
    out.stacks.push_back(std::move(frames));
  }
  return out;
}

StatusOr<std::unordered_map<uint64_t, storage::Labels>> DictionaryReader::LabelSets(
    const std::vector<uint64_t>& series_ids) {
  return Lookup(labels_, series_ids, [&](const std::vector<uint64_t>& missing)
                                         -> StatusOr<std::unordered_map<uint64_t, storage::Labels>> {
    ASSIGN_OR_RETURN(std::string body,
                     client_->Execute(ClickHouseRequest::Read("SELECT series_id, any(labels.name), any(labels.value) "
                                                              "FROM label_sets WHERE series_id IN ids GROUP BY "
                                                              "series_id FORMAT RowBinary")
                                          .With(IdTable("ids", missing))));
    RowBinaryReader r(body);
    std::unordered_map<uint64_t, storage::Labels> got;
    while (!r.done()) {
      const uint64_t id = r.UInt64();
      storage::Labels labels(r.VarUInt());
      for (auto& l : labels) l.first = r.String();
      if (r.VarUInt() != labels.size()) return InternalError("label_sets: names and values differ in length");
      for (auto& l : labels) l.second = r.String();
      got.emplace(id, std::move(labels));
    }
    RETURN_IF_ERROR(r.status("label_sets"));
    if (got.size() != missing.size()) {
      return DataLossError(std::to_string(missing.size() - got.size()) +
                           " series referenced by rows are not in label_sets");
    }
    return got;
  });
}

StatusOr<std::unordered_map<uint64_t, std::string>> DictionaryReader::Strings(const std::vector<uint64_t>& string_ids) {
  return Lookup(strings_, string_ids, [&](const std::vector<uint64_t>& missing)
                                          -> StatusOr<std::unordered_map<uint64_t, std::string>> {
    ASSIGN_OR_RETURN(std::string body,
                     client_->Execute(ClickHouseRequest::Read("SELECT string_id, any(value) FROM strings WHERE "
                                                              "string_id IN ids GROUP BY string_id FORMAT RowBinary")
                                          .With(IdTable("ids", missing))));
    RowBinaryReader r(body);
    std::unordered_map<uint64_t, std::string> got;
    while (!r.done()) {
      const uint64_t id = r.UInt64();
      got.emplace(id, r.String());
    }
    RETURN_IF_ERROR(r.status("strings"));
    if (got.size() != missing.size()) {
      return DataLossError(std::to_string(missing.size() - got.size()) +
                           " strings referenced by GPU activities are missing");
    }
    return got;
  });
}

}  // namespace warpscope::clickhouse
