#include "model/profile.h"

#include <utility>

#include "base/logging.h"

namespace warpscope {

ProfileBuilder::ProfileBuilder(int64_t time_nanos, int64_t period_nanos, uint32_t frequency_hz) {
  profile_.time_nanos = time_nanos;
  profile_.period_nanos = period_nanos;
  profile_.frequency_hz = frequency_hz;
}

uint64_t ProfileBuilder::InternMapping(const ProfileMapping& mapping) {
  auto key = std::make_tuple(mapping.memory_start, mapping.memory_limit, mapping.file_offset,
                             mapping.filename, mapping.build_id, mapping.is_kernel);
  auto [it, inserted] = mapping_ids_.try_emplace(std::move(key), profile_.mappings.size() + 1);
  if (inserted) {
    ProfileMapping& stored = profile_.mappings.emplace_back(mapping);
    stored.id = it->second;
  }
  return it->second;
}

uint64_t ProfileBuilder::InternFunction(const std::string& name, const std::string& system_name,
                                        const std::string& filename) {
  auto [it, inserted] = function_ids_.try_emplace(std::make_tuple(name, system_name, filename),
                                                  profile_.functions.size() + 1);
  if (inserted) {
    profile_.functions.push_back(ProfileFunction{it->second, name, system_name, filename});
  }
  return it->second;
}

uint64_t ProfileBuilder::InternLocation(uint64_t mapping_id, uint64_t address, FrameKind kind,
                                        const std::vector<ProfileLine>& lines) {
  DCHECK(mapping_id <= profile_.mappings.size()) << "unknown mapping id " << mapping_id;
  auto [it, inserted] =
      location_ids_.try_emplace(LocationKey{mapping_id, address, kind}, profile_.locations.size() + 1);
  if (inserted) {
    for (const ProfileLine& line : lines) {
      DCHECK(line.function_id >= 1 && line.function_id <= profile_.functions.size())
          << "unknown function id " << line.function_id;
    }
    profile_.locations.push_back(ProfileLocation{it->second, mapping_id, address, kind, lines});
  }
  return it->second;
}

uint64_t ProfileBuilder::InternSourceLocation(uint64_t function_id, int64_t line, FrameKind kind) {
  DCHECK(function_id >= 1 && function_id <= profile_.functions.size()) << "unknown function id " << function_id;
  auto [it, inserted] =
      source_location_ids_.try_emplace(std::make_tuple(function_id, line, kind), profile_.locations.size() + 1);
  if (inserted) {
    profile_.locations.push_back(ProfileLocation{it->second, 0, 0, kind, {ProfileLine{function_id, line}}});
  }
  return it->second;
}

uint64_t ProfileBuilder::InternFunctionLocation(uint64_t mapping_id, uint64_t address, FrameKind kind,
                                                uint64_t function_id) {
  DCHECK(mapping_id <= profile_.mappings.size()) << "unknown mapping id " << mapping_id;
  DCHECK(function_id >= 1 && function_id <= profile_.functions.size()) << "unknown function id " << function_id;
  auto [it, inserted] = function_location_ids_.try_emplace(std::make_tuple(mapping_id, address, kind, function_id),
                                                           profile_.locations.size() + 1);
  if (inserted) {
    profile_.locations.push_back(ProfileLocation{it->second, mapping_id, address, kind, {ProfileLine{function_id, 0}}});
  }
  return it->second;
}

bool ProfileBuilder::HasLocation(uint64_t mapping_id, uint64_t address, FrameKind kind) const {
  return location_ids_.count(LocationKey{mapping_id, address, kind}) != 0;
}

void ProfileBuilder::AddSample(const std::vector<uint64_t>& location_ids_leaf_first, int64_t count,
                               const SampleLabels& labels) {
  DCHECK(count >= 0) << "negative sample count " << count;
  if (count <= 0) return;
  AddValues(location_ids_leaf_first, count, count * profile_.period_nanos, labels);
}

std::vector<uint64_t> ProfileBuilder::InternStack(const Profile& from, const std::vector<uint64_t>& location_ids) {
  std::vector<uint64_t> out;
  out.reserve(location_ids.size());
  for (uint64_t id : location_ids) {
    const ProfileLocation& loc = from.location(id);
    std::vector<ProfileLine> lines;
    for (const ProfileLine& line : loc.lines) {
      const ProfileFunction& f = from.function(line.function_id);
      lines.push_back({InternFunction(f.name, f.system_name, f.filename), line.line});
    }
    if ((loc.kind == FrameKind::kPython || loc.kind == FrameKind::kCudaKernel || loc.kind == FrameKind::kGpuLine ||
         loc.kind == FrameKind::kGpuStall) &&
        !lines.empty()) {
      out.push_back(InternSourceLocation(lines.front().function_id, lines.front().line, loc.kind));
      continue;
    }
    const uint64_t mapping = loc.mapping_id == 0 ? 0 : InternMapping(from.mapping(loc.mapping_id));
    if (loc.kind == FrameKind::kGpuInstruction && !lines.empty()) {
      out.push_back(InternFunctionLocation(mapping, loc.address, loc.kind, lines.front().function_id));
      continue;
    }
    out.push_back(InternLocation(mapping, loc.address, loc.kind, lines));
  }
  return out;
}

void ProfileBuilder::AddValues(const std::vector<uint64_t>& location_ids_leaf_first, int64_t count,
                               int64_t cpu_nanos, const SampleLabels& labels) {
  if (count <= 0 && cpu_nanos <= 0) return;
  for (uint64_t id : location_ids_leaf_first) {
    DCHECK(id >= 1 && id <= profile_.locations.size()) << "unknown location id " << id;
  }
  auto [it, inserted] = sample_index_.try_emplace(std::make_tuple(location_ids_leaf_first, labels, sample_time_nanos_),
                                                  profile_.samples.size());
  if (!inserted) {
    ProfileSample& existing = profile_.samples[it->second];
    existing.count += count;
    existing.cpu_nanos += cpu_nanos;
    return;
  }
  profile_.samples.push_back(ProfileSample{location_ids_leaf_first, count, cpu_nanos, labels, sample_time_nanos_});
}

void SetCounter(std::vector<ProfileCounter>* counters, const std::string& name, uint64_t value) {
  // Few counters (drops, truncations): a linear scan keeps insertion order for output.
  for (ProfileCounter& counter : *counters) {
    if (counter.name == name) {
      counter.value = value;
      return;
    }
  }
  counters->push_back(ProfileCounter{name, value});
}

void ProfileBuilder::SetCounter(const std::string& name, uint64_t value) {
  warpscope::SetCounter(&profile_.counters, name, value);
}

void ProfileBuilder::AddComment(std::string comment) { profile_.comments.push_back(std::move(comment)); }

Profile ProfileBuilder::Finish(int64_t duration_nanos) {
  profile_.duration_nanos = duration_nanos;
  mapping_ids_.clear();
  function_ids_.clear();
  location_ids_.clear();
  sample_index_.clear();
  return std::move(profile_);
}

}  // namespace warpscope
