#include "model/formats/pprof_writer.h"

#include <zlib.h>

#include <climits>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/gzip.h"
#include "model/frame_names.h"
#include "proto/pprof/profile.pb.h"

namespace warpscope {

namespace pb = ::perftools::profiles;

namespace {

constexpr char kKernelMappingName[] = "[kernel.kallsyms]";

// pprof stores every string once; index 0 is always "".
class StringTable {
 public:
  explicit StringTable(pb::Profile* out) : out_(out) { Intern(""); }

  int64_t Intern(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int64_t>(out_->string_table_size()));
    if (inserted) out_->add_string_table(s);
    return it->second;
  }

 private:
  pb::Profile* out_;
  std::unordered_map<std::string, int64_t> index_;
};

bool ValidId(uint64_t id, size_t table_size) { return id >= 1 && id <= table_size; }

// Exporters trust ids blindly when indexing, so check them once up front.
Status ValidateIds(const Profile& profile) {
  for (size_t i = 0; i < profile.mappings.size(); ++i) {
    if (profile.mappings[i].id != i + 1) {
      return InvalidArgumentError("mapping #" + std::to_string(i) + " has id " +
                                  std::to_string(profile.mappings[i].id) + ", want " + std::to_string(i + 1));
    }
  }
  for (size_t i = 0; i < profile.functions.size(); ++i) {
    if (profile.functions[i].id != i + 1) {
      return InvalidArgumentError("function #" + std::to_string(i) + " has id " +
                                  std::to_string(profile.functions[i].id));
    }
  }
  for (size_t i = 0; i < profile.locations.size(); ++i) {
    const ProfileLocation& location = profile.locations[i];
    if (location.id != i + 1) {
      return InvalidArgumentError("location #" + std::to_string(i) + " has id " + std::to_string(location.id));
    }
    if (location.mapping_id != 0 && !ValidId(location.mapping_id, profile.mappings.size())) {
      return InvalidArgumentError("location " + std::to_string(location.id) + " refers to unknown mapping " +
                                  std::to_string(location.mapping_id));
    }
    for (const ProfileLine& line : location.lines) {
      if (!ValidId(line.function_id, profile.functions.size())) {
        return InvalidArgumentError("location " + std::to_string(location.id) + " refers to unknown function " +
                                    std::to_string(line.function_id));
      }
    }
  }
  for (const ProfileSample& sample : profile.samples) {
    for (uint64_t id : sample.location_ids) {
      if (!ValidId(id, profile.locations.size())) {
        return InvalidArgumentError("sample refers to unknown location " + std::to_string(id));
      }
    }
  }
  return Status::Ok();
}

struct MappingFacts {
  bool has_filenames = false;
  bool has_line_numbers = false;
  bool has_inline_frames = false;
};

// The has_* flags must be truthful: readers use them to decide whether to
// offer source views or re-symbolize.
std::vector<MappingFacts> CollectMappingFacts(const Profile& profile) {
  std::vector<MappingFacts> facts(profile.mappings.size());
  for (const ProfileLocation& location : profile.locations) {
    if (location.mapping_id == 0) continue;
    MappingFacts& f = facts[location.mapping_id - 1];
    if (location.lines.size() > 1) f.has_inline_frames = true;
    for (const ProfileLine& line : location.lines) {
      if (line.line > 0) f.has_line_numbers = true;
      if (!profile.function(line.function_id).filename.empty()) f.has_filenames = true;
    }
  }
  return facts;
}

void AddStringLabel(pb::Sample* sample, StringTable& strings, const std::string& key, const std::string& value) {
  pb::Label* label = sample->add_label();
  label->set_key(strings.Intern(key));
  label->set_str(strings.Intern(value));
}

void SetValueType(pb::ValueType* vt, StringTable& strings, const std::string& type, const std::string& unit) {
  vt->set_type(strings.Intern(type));
  vt->set_unit(strings.Intern(unit));
}

void FillMappings(const Profile& profile, StringTable& strings, pb::Profile* out) {
  const std::vector<MappingFacts> facts = CollectMappingFacts(profile);
  // Order is kept as interned: pprof treats mapping[0] as the main binary.
  for (const ProfileMapping& mapping : profile.mappings) {
    pb::Mapping* m = out->add_mapping();
    m->set_id(mapping.id);
    m->set_memory_start(mapping.memory_start);
    m->set_memory_limit(mapping.memory_limit);
    m->set_file_offset(mapping.file_offset);
    const std::string& filename =
        mapping.is_kernel && mapping.filename.empty() ? std::string(kKernelMappingName) : mapping.filename;
    m->set_filename(strings.Intern(filename));
    m->set_build_id(strings.Intern(mapping.build_id));
    m->set_has_functions(true);
    const MappingFacts& f = facts[mapping.id - 1];
    m->set_has_filenames(f.has_filenames);
    m->set_has_line_numbers(f.has_line_numbers);
    m->set_has_inline_frames(f.has_inline_frames);
  }
}

void FillFunctionsAndLocations(const Profile& profile, StringTable& strings, pb::Profile* out) {
  for (const ProfileFunction& function : profile.functions) {
    pb::Function* f = out->add_function();
    f->set_id(function.id);
    f->set_name(strings.Intern(function.name.empty() ? function.system_name : function.name));
    f->set_system_name(strings.Intern(function.system_name));
    f->set_filename(strings.Intern(function.filename));
  }
  // Synthetic functions for unsymbolized locations get ids after the real
  // ones, deduplicated by name.
  std::unordered_map<std::string, uint64_t> synthetic_ids;
  for (const ProfileLocation& location : profile.locations) {
    pb::Location* l = out->add_location();
    l->set_id(location.id);
    l->set_mapping_id(location.mapping_id);
    l->set_address(location.address);
    for (const ProfileLine& line : location.lines) {
      pb::Line* pl = l->add_line();
      pl->set_function_id(line.function_id);
      pl->set_line(line.line);
    }
    if (!location.lines.empty()) continue;
    const std::string name = UnsymbolizedFrameName(profile, location);
    auto [it, inserted] = synthetic_ids.try_emplace(name, static_cast<uint64_t>(out->function_size()) + 1);
    if (inserted) {
      pb::Function* f = out->add_function();
      f->set_id(it->second);
      f->set_name(strings.Intern(name));
      f->set_system_name(strings.Intern(name));
    }
    l->add_line()->set_function_id(it->second);
  }
}

void FillSamples(const Profile& profile, StringTable& strings, pb::Profile* out) {
  out->mutable_sample()->Reserve(static_cast<int>(profile.samples.size()));
  for (const ProfileSample& sample : profile.samples) {
    pb::Sample* s = out->add_sample();
    for (uint64_t id : sample.location_ids) s->add_location_id(id);
    s->add_value(sample.count);
    if (profile.sample_types.size() != 1) s->add_value(sample.cpu_nanos);
    // String labels only: Parca and Pyroscope index string labels, not numeric ones.
    if (profile.has_thread_labels) {
      AddStringLabel(s, strings, "pid", std::to_string(sample.labels.pid));
      AddStringLabel(s, strings, "tid", std::to_string(sample.labels.tid));
    }
    if (!sample.labels.comm.empty()) AddStringLabel(s, strings, "comm", sample.labels.comm);
    if (!sample.labels.thread_name.empty()) AddStringLabel(s, strings, "thread_name", sample.labels.thread_name);
    for (const auto& [key, value] : sample.labels.extra) AddStringLabel(s, strings, key, value);
  }
}

}  // namespace

StatusOr<std::string> EncodePprof(const Profile& profile) {
  RETURN_IF_ERROR(ValidateIds(profile));
  pb::Profile out;
  StringTable strings(&out);

  if (profile.sample_types.size() > 2) {
    return InvalidArgumentError("a profile has at most 2 sample types, got " +
                                std::to_string(profile.sample_types.size()));
  }
  const std::vector<SampleValueType> sample_types =
      profile.sample_types.empty()
          ? std::vector<SampleValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}}
          : profile.sample_types;
  for (const SampleValueType& type : sample_types) {
    SetValueType(out.add_sample_type(), strings, type.type, type.unit);
  }
  SetValueType(out.mutable_period_type(), strings, sample_types.back().type, sample_types.back().unit);
  out.set_period(profile.period_nanos);
  out.set_default_sample_type(strings.Intern(sample_types.back().type));
  out.set_time_nanos(profile.time_nanos);
  out.set_duration_nanos(profile.duration_nanos);

  FillMappings(profile, strings, &out);
  FillFunctionsAndLocations(profile, strings, &out);
  FillSamples(profile, strings, &out);

  for (const std::string& comment : profile.comments) out.add_comment(strings.Intern(comment));
  for (const ProfileCounter& counter : profile.counters) {
    out.add_comment(strings.Intern(counter.name + "=" + std::to_string(counter.value)));
  }

  if (out.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    return ResourceExhaustedError("pprof profile exceeds 2 GiB, the protobuf limit");
  }
  std::string bytes;
  if (!out.SerializeToString(&bytes)) return InternalError("serializing the pprof profile failed");
  return bytes;
}

StatusOr<std::string> EncodePprofGzip(const Profile& profile) {
  ASSIGN_OR_RETURN(std::string bytes, EncodePprof(profile));
  return GzipCompress(bytes, Z_DEFAULT_COMPRESSION);
}

}  // namespace warpscope
