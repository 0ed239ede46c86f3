// The agent's in-memory profile: a symbolized, deduplicated model shaped like
// pprof (mappings, functions, locations, samples) that every exporter reads
// (pprof, collapsed stacks, the top-functions summary, later the uploader).
//
// Owned by one thread (the recorder's drain thread); not thread-safe.
// Ids are 1-based and dense, as pprof requires.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warpscope {

struct ProfileMapping {
  uint64_t id = 0;
  uint64_t memory_start = 0;
  uint64_t memory_limit = 0;
  uint64_t file_offset = 0;
  std::string filename;  // path as the process saw it, or "[kernel.kallsyms]", "[vdso]"
  std::string build_id;  // lowercase hex; empty when the binary has none
  bool is_kernel = false;
};

struct ProfileFunction {
  uint64_t id = 0;
  std::string name;         // demangled, what people read
  std::string system_name;  // as in the symbol table (mangled)
  std::string filename;     // source file when known, else empty
};

struct ProfileLine {
  uint64_t function_id = 0;
  int64_t line = 0;  // 0 when unknown
};

// kPython: an interpreter frame (function = code object, line from its line
// table); it has no mapping and address 0.
// kCudaKernel: a CUDA kernel (the leaf of GPU-time stacks); no mapping or
// address, function = kernel name.
// Inside a kernel (gpu_pc stacks, leafward of the kernel): kGpuLine, a
// source line (function = "file.cu:42" or "file.cu:42 in inlined_fn",
// filename = the file, line = the line; no mapping or address);
// kGpuInstruction, one SASS instruction (function = its offset and text,
// system_name = kernel+offset, address = the PC offset, mapping = the cubin:
// build_id its content hash, model/cubin_hash.h; none when the agent lacks it);
// kGpuStall, the leaf: why the warps were stalled there (function = plain
// words, system_name = CUPTI's name).
enum class FrameKind : uint8_t {
  kNative = 0,
  kKernel = 1,
  kPython = 2,
  kCudaKernel = 3,
  kGpuLine = 4,
  kGpuInstruction = 5,
  kGpuStall = 6,
};

struct ProfileLocation {
  uint64_t id = 0;
  uint64_t mapping_id = 0;  // 0 when the address is in no known mapping
  uint64_t address = 0;     // the process's virtual address (kernel address for kernel frames)
  FrameKind kind = FrameKind::kNative;
  // Innermost (inlined) function first, as pprof orders Location.line.
  std::vector<ProfileLine> lines;
};

struct SampleLabels {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string comm;         // process name (the thread-group leader's comm)
  std::string thread_name;  // the sampled thread's comm
  // More series labels, sorted by key (GPU time: device, stream, graph_id).
  std::vector<std::pair<std::string, std::string>> extra = {};
  bool operator<(const SampleLabels& o) const {
    return std::tie(pid, tid, comm, thread_name, extra) < std::tie(o.pid, o.tid, o.comm, o.thread_name, o.extra);
  }
};

struct ProfileSample {
  std::vector<uint64_t> location_ids;  // leaf first
  int64_t count = 0;                   // number of samples
  int64_t cpu_nanos = 0;               // count * sampling period
  SampleLabels labels;
  // Start of the time bucket the samples were taken in (Unix epoch), or 0:
  // somewhere in the profile's [time_nanos, + duration_nanos). `run` stamps
  // every drain (1 s) so the server keeps per-second rows (flame chart).
  int64_t time_nanos = 0;
};

// One pprof sample type ("cpu"/"nanoseconds").
struct SampleValueType {
  std::string type;
  std::string unit;
};

// A named counter reported with the profile: drops, truncations, idle samples.
struct ProfileCounter {
  std::string name;
  uint64_t value = 0;
};

// Sets counter `name` in `counters`: a later value replaces an earlier one,
// and new names are appended (output keeps the order they were first set in).
void SetCounter(std::vector<ProfileCounter>* counters, const std::string& name, uint64_t value);

struct Profile {
  int64_t time_nanos = 0;       // start of the recording, Unix epoch
  int64_t duration_nanos = 0;
  int64_t period_nanos = 0;     // one sample stands for this much CPU time
  uint32_t frequency_hz = 0;
  std::vector<ProfileMapping> mappings;    // mappings[i].id == i + 1
  std::vector<ProfileFunction> functions;  // functions[i].id == i + 1
  std::vector<ProfileLocation> locations;  // locations[i].id == i + 1
  std::vector<ProfileSample> samples;
  std::vector<ProfileCounter> counters;
  std::vector<std::string> comments;       // free text kept in the pprof comment field
  // The pprof sample types of ProfileSample::count and ::cpu_nanos. Empty (the
  // agent's recordings) means [samples/count, cpu/nanoseconds]. One entry: only
  // `count` is written. The last entry is the default and the period type.
  // Set by the server's export of merged profiles (query/profile_export.h).
  std::vector<SampleValueType> sample_types;
  // False for merged profiles, whose samples belong to no single thread: the
  // pprof writer then leaves out the "pid" and "tid" labels.
  bool has_thread_labels = true;

  const ProfileMapping& mapping(uint64_t id) const { return mappings.at(id - 1); }
  const ProfileFunction& function(uint64_t id) const { return functions.at(id - 1); }
  const ProfileLocation& location(uint64_t id) const { return locations.at(id - 1); }
};

// Builds a Profile incrementally, deduplicating mappings, functions, locations
// and identical samples (same stack and labels are merged by adding counts).
class ProfileBuilder {
 public:
  ProfileBuilder(int64_t time_nanos, int64_t period_nanos, uint32_t frequency_hz);

  // Dedup key: every field of the mapping except id.
  uint64_t InternMapping(const ProfileMapping& mapping);
  // Dedup key: (name, system_name, filename).
  uint64_t InternFunction(const std::string& name, const std::string& system_name,
                          const std::string& filename = "");
  // Dedup key: (mapping_id, address, kind). `lines` is used only on first insertion.
  uint64_t InternLocation(uint64_t mapping_id, uint64_t address, FrameKind kind,
                          const std::vector<ProfileLine>& lines);
  bool HasLocation(uint64_t mapping_id, uint64_t address, FrameKind kind) const;
  // A location at an address that is relative to its function, so one
  // address of one mapping is several locations: a GPU instruction (PC
  // offsets count from the kernel's start, and a cubin holds many kernels).
  // Dedup key: (mapping_id, address, kind, function_id).
  uint64_t InternFunctionLocation(uint64_t mapping_id, uint64_t address, FrameKind kind, uint64_t function_id);
  // A location with no address (interpreter frames). Dedup key: (function, line, kind).
  uint64_t InternSourceLocation(uint64_t function_id, int64_t line, FrameKind kind);

  // Samples with equal stack, labels and sample time are merged.
  void AddSample(const std::vector<uint64_t>& location_ids_leaf_first, int64_t count,
                 const SampleLabels& labels);
  // Like AddSample, with both values given (ProfileSample::count and
  // ::cpu_nanos): a profile of two sample types other than the CPU's.
  void AddValues(const std::vector<uint64_t>& location_ids_leaf_first, int64_t first, int64_t second,
                 const SampleLabels& labels);
  // The locations of `from`'s stack `location_ids` (leaf first), interned
  // here with their mappings and functions.
  std::vector<uint64_t> InternStack(const Profile& from, const std::vector<uint64_t>& location_ids);
  // The ProfileSample::time_nanos of samples added from now on (0: none).
  void SetSampleTime(int64_t unix_nanos) { sample_time_nanos_ = unix_nanos; }
  void SetCounter(const std::string& name, uint64_t value);
  void AddComment(std::string comment);

  // Finishes the profile; the builder must not be used afterwards.
  Profile Finish(int64_t duration_nanos);

 private:
  struct LocationKey {
    uint64_t mapping_id;
    uint64_t address;
    FrameKind kind;
    bool operator<(const LocationKey& o) const {
      return std::tie(mapping_id, address, kind) < std::tie(o.mapping_id, o.address, o.kind);
    }
  };

  Profile profile_;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t, std::string, std::string, bool>, uint64_t> mapping_ids_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> function_ids_;
  std::map<LocationKey, uint64_t> location_ids_;
  std::map<std::tuple<uint64_t, int64_t, FrameKind>, uint64_t> source_location_ids_;
  std::map<std::tuple<uint64_t, uint64_t, FrameKind, uint64_t>, uint64_t> function_location_ids_;
  std::map<std::tuple<std::vector<uint64_t>, SampleLabels, int64_t>, size_t> sample_index_;
  int64_t sample_time_nanos_ = 0;
};

}  // namespace warpscope
