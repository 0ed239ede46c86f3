#include "agent/export/ingest_batch_encoder.h"

#include <zstd.h>

#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/http/zstd_body.h"

namespace warpscope {
namespace {

std::string TruncateForIngest(const std::string& s) {
  size_t cut = kIngestMaxStringBytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

// Interns everything the batch refers to by index. Index 0 of strings is "";
// mappings are 1-based in references (0 = none), everything else 0-based.
class BatchTables {
 public:
  explicit BatchTables(v1::IngestBatch* out) : out_(out) { String(""); }

  // Strings over the server's per-string limit (C++ template names of CUDA
  // kernels reach 5 KB) are cut, at a UTF-8 boundary, and end in "...".
  uint32_t String(const std::string& s) {
    if (s.size() > kIngestMaxStringBytes) return String(TruncateForIngest(s));
    auto [it, inserted] = strings_.try_emplace(s, static_cast<uint32_t>(out_->strings_size()));
    if (inserted) out_->add_strings(s);
    return it->second;
  }

  // 1-based. Mappings are keyed by (file name, build id) only: addresses are
  // file offsets, so one mapping stands for the binary in every process.
  uint32_t Mapping(const ProfileMapping& m) {
    const auto key = std::make_pair(String(m.filename), String(m.build_id));
    auto [it, inserted] = mappings_.try_emplace(key, static_cast<uint32_t>(out_->mappings_size() + 1));
    if (inserted) {
      v1::Mapping* pb = out_->add_mappings();
      pb->set_filename(key.first);
      pb->set_build_id(key.second);
    }
    return it->second;
  }

  uint32_t Function(const ProfileFunction& f) {
    const auto key = std::make_tuple(String(f.name), String(f.system_name), String(f.filename));
    auto [it, inserted] = functions_.try_emplace(key, static_cast<uint32_t>(out_->functions_size()));
    if (inserted) {
      v1::Function* pb = out_->add_functions();
      pb->set_name(std::get<0>(key));
      pb->set_system_name(std::get<1>(key));
      pb->set_filename(std::get<2>(key));
    }
    return it->second;
  }

  // Keyed by everything the location says: two processes' frames at the same
  // file offset of the same binary are one location.
  uint32_t Location(uint32_t mapping, uint64_t address, v1::FrameKind kind,
                    const std::vector<std::pair<uint32_t, int64_t>>& lines) {
    auto key = std::make_tuple(mapping, address, static_cast<int>(kind), lines);
    auto [it, inserted] = locations_.try_emplace(std::move(key), static_cast<uint32_t>(out_->locations_size()));
    if (inserted) {
      v1::Location* pb = out_->add_locations();
      pb->set_mapping(mapping);
      pb->set_address(address);
      pb->set_kind(kind);
      for (const auto& [function, line] : lines) {
        v1::Line* l = pb->add_lines();
        l->set_function(function);
        l->set_line(line);
      }
    }
    return it->second;
  }

  uint32_t Stack(std::vector<uint32_t> locations) {
    auto [it, inserted] = stacks_.try_emplace(std::move(locations), static_cast<uint32_t>(out_->stacks_size()));
    if (inserted) {
      v1::Stack* pb = out_->add_stacks();
      for (uint32_t l : it->first) pb->add_locations(l);
    }
    return it->second;
  }

  // `labels` is a std::map, so keys come out sorted and unique.
  uint32_t LabelSet(const std::map<std::string, std::string>& labels) {
    std::vector<std::pair<uint32_t, uint32_t>> key;
    for (const auto& [k, v] : labels) {
      if (!v.empty()) key.emplace_back(String(k), String(v));
    }
    auto [it, inserted] = label_sets_.try_emplace(key, static_cast<uint32_t>(out_->label_sets_size()));
    if (inserted) {
      v1::LabelSet* pb = out_->add_label_sets();
      for (const auto& [k, v] : key) {
        v1::Label* l = pb->add_labels();
        l->set_key(k);
        l->set_value(v);
      }
    }
    return it->second;
  }

 private:
  v1::IngestBatch* out_;
  std::unordered_map<std::string, uint32_t> strings_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> mappings_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> functions_;
  std::map<std::tuple<uint32_t, uint64_t, int, std::vector<std::pair<uint32_t, int64_t>>>, uint32_t> locations_;
  std::map<std::vector<uint32_t>, uint32_t> stacks_;
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, uint32_t> label_sets_;
};

v1::FrameKind ToWire(FrameKind kind) {
  switch (kind) {
    case FrameKind::kKernel: return v1::FRAME_KIND_KERNEL;
    case FrameKind::kPython: return v1::FRAME_KIND_PYTHON;
    case FrameKind::kCudaKernel: return v1::FRAME_KIND_CUDA_KERNEL;
    case FrameKind::kGpuLine: return v1::FRAME_KIND_GPU_LINE;
    case FrameKind::kGpuInstruction: return v1::FRAME_KIND_GPU_INSTRUCTION;
    case FrameKind::kGpuStall: return v1::FRAME_KIND_GPU_STALL;
    case FrameKind::kNative: break;
  }
  return v1::FRAME_KIND_NATIVE;
}

bool ValidId(uint64_t id, size_t size) { return id >= 1 && id <= size; }

// Adds a process's labels from the agent's cache: exe, container ones and
// the pod's Kubernetes names (comm is the BPF sample's for profiles; metric
// readings bring their own).
void AddProcessLabels(const ProcessLabels& p, std::map<std::string, std::string>* series) {
  (*series)["exe"] = p.exe;
  (*series)["container_id"] = p.container.container_id;
  (*series)["container_runtime"] = p.container.runtime;
  (*series)["pod_uid"] = p.container.pod_uid;
  (*series)["qos_class"] = p.container.qos_class;
  (*series)["pod"] = p.kubernetes.pod;
  (*series)["namespace"] = p.kubernetes.namespace_name;
  (*series)["container"] = p.kubernetes.container;
  (*series)["workload"] = p.kubernetes.workload;
  (*series)["workload_kind"] = p.kubernetes.workload_kind;
}

// The agent's own labels, under whatever the series already has.
void AddAgentLabels(const IngestBatchHeader& header, std::map<std::string, std::string>* series) {
  for (const auto& [key, value] : header.labels) series->emplace(key, value);
}

void AddMetricPoints(std::span<const MetricReading> metrics, const IngestBatchHeader& header,
                     const ProcessLabelMap& labels, BatchTables* tables, v1::IngestBatch* batch) {
  std::map<std::pair<std::string, std::string>, uint32_t> types;  // (name, unit) -> index
  for (const MetricReading& m : metrics) {
    if (!std::isfinite(m.value) || m.metric.empty()) continue;
    auto [type, inserted] = types.try_emplace({m.metric, m.unit}, static_cast<uint32_t>(batch->metric_types_size()));
    if (inserted) {
      v1::MetricType* pb = batch->add_metric_types();
      pb->set_name(tables->String(m.metric));
      pb->set_unit(tables->String(m.unit));
    }
    std::map<std::string, std::string> series(m.labels.begin(), m.labels.end());
    series["node"] = header.node;
    if (const std::optional<uint32_t> pid = ReadingPid(m)) {
      if (auto it = labels.find(*pid); it != labels.end()) AddProcessLabels(it->second, &series);
    }
    AddAgentLabels(header, &series);
    v1::MetricPoint* point = batch->add_metric_points();
    point->set_time_unix_nanos(m.time_unix_nanos);
    point->set_metric(type->second);
    point->set_label_set(tables->LabelSet(series));
    point->set_value(m.value);
  }
}

// The series of a process in the GPU trace: like its samples' minus the thread.
uint32_t ProcessLabelSet(uint32_t pid, const GpuTrace* trace, const IngestBatchHeader& header,
                         const ProcessLabelMap& labels, BatchTables* tables) {
  std::map<std::string, std::string> series = {{"node", header.node}, {"pid", std::to_string(pid)}};
  if (trace != nullptr) {
    if (auto it = trace->comms.find(pid); it != trace->comms.end()) series["comm"] = it->second;
  }
  if (auto it = labels.find(pid); it != labels.end()) AddProcessLabels(it->second, &series);
  AddAgentLabels(header, &series);
  return tables->LabelSet(series);
}

void AddGpuTrace(const IngestBatchContent& content, const IngestBatchHeader& header, const ProcessLabelMap& labels,
                 BatchTables* tables, v1::IngestBatch* batch) {
  std::map<uint32_t, uint32_t> label_set_of;  // pid -> label set
  auto label_set = [&](uint32_t pid) {
    auto [it, inserted] = label_set_of.try_emplace(pid, 0);
    if (inserted) it->second = ProcessLabelSet(pid, content.trace, header, labels, tables);
    return it->second;
  };
  batch->mutable_gpu_activities()->Reserve(static_cast<int>(content.activities.size()));
  for (const GpuActivityRecord& a : content.activities) {
    v1::GpuActivity* pb = batch->add_gpu_activities();
    pb->set_start_unix_nanos(a.start_ns);
    pb->set_duration_nanos(a.duration_ns);
    pb->set_label_set(label_set(a.pid));
    pb->set_kind(static_cast<v1::GpuActivityKind>(a.kind));
    if (a.name) {
      pb->set_name(tables->String(a.name->name));
      pb->set_system_name(tables->String(a.name->system_name));
    }
    pb->set_device(a.device);
    pb->set_stream(a.stream);
    pb->set_correlation_id(a.correlation_id);
    pb->set_graph_id(a.graph_id);
    pb->set_grid_x(a.grid[0]);
    pb->set_grid_y(a.grid[1]);
    pb->set_grid_z(a.grid[2]);
    pb->set_block_x(a.block[0]);
    pb->set_block_y(a.block[1]);
    pb->set_block_z(a.block[2]);
    pb->set_registers_per_thread(a.registers_per_thread);
    pb->set_static_shared_bytes(a.static_shared_bytes);
    pb->set_dynamic_shared_bytes(a.dynamic_shared_bytes);
    pb->set_bytes(a.bytes);
    pb->set_copy_kind(a.copy_kind);
    if (a.launch_start_ns != 0) {
      pb->set_launch_start_unix_nanos(a.launch_start_ns);
      pb->set_launch_duration_nanos(a.launch_duration_ns);
      pb->set_launch_tid(a.launch_tid);
      pb->set_launch_api(static_cast<v1::GpuLaunchApi>(a.launch_api));
    }
  }
  for (const GpuTraceCoverageRow& c : content.coverage) {
    v1::GpuTraceCoverage* pb = batch->add_gpu_trace_coverage();
    pb->set_second_unix_nanos(c.second_unix_nanos);
    pb->set_label_set(label_set(c.pid));
    pb->set_recorded(c.recorded);
    pb->set_sent(c.sent);
    pb->set_complete_until_unix_nanos(c.complete_until_unix_nanos);
  }
}

}  // namespace

namespace {

// The profile's wire type: its one sample type when it has exactly one
// (gpu_time/nanoseconds), else the CPU profile's cpu/samples.
uint32_t AddProfileType(const Profile& profile, BatchTables* tables, v1::IngestBatch* batch) {
  v1::ProfileType* type = batch->add_types();
  if (profile.sample_types.size() == 1) {
    type->set_name(tables->String(profile.sample_types[0].type));
    type->set_sample_unit(tables->String(profile.sample_types[0].unit));
  } else {
    type->set_name(tables->String(kIngestCpuTypeName));
    type->set_sample_unit(tables->String(kIngestCpuSampleUnit));
  }
  type->set_period_nanos(profile.period_nanos);
  return static_cast<uint32_t>(batch->types_size() - 1);
}

// Adds `rows` of a profile (ProfileSample::count each) as rows of type `type`.
Status AddProfileSamples(const IngestBatchContent::ProfileRows& rows, uint32_t type, const IngestBatchHeader& header,
                         const ProcessLabelMap& labels, BatchTables& tables, v1::IngestBatch& batch) {
  const Profile& profile = *rows.profile;
  if (rows.begin > rows.end || rows.end > profile.samples.size()) {
    return InvalidArgumentError("samples " + std::to_string(rows.begin) + ".." + std::to_string(rows.end) +
                                " of a profile with " + std::to_string(profile.samples.size()));
  }
  // Profile location id -> batch location index, filled on first use.
  std::vector<int64_t> location_index(profile.locations.size(), -1);
  auto location = [&](uint64_t id) -> StatusOr<uint32_t> {
    if (!ValidId(id, profile.locations.size())) {
      return InvalidArgumentError("sample refers to unknown location " + std::to_string(id));
    }
    if (location_index[id - 1] >= 0) return static_cast<uint32_t>(location_index[id - 1]);
    const ProfileLocation& loc = profile.locations[id - 1];
    uint32_t mapping = 0;
    const bool addressless = loc.kind == FrameKind::kPython || loc.kind == FrameKind::kCudaKernel ||
                             loc.kind == FrameKind::kGpuLine || loc.kind == FrameKind::kGpuStall;
    uint64_t address = addressless ? 0 : loc.address;
    if (loc.mapping_id != 0 && !addressless) {
      if (!ValidId(loc.mapping_id, profile.mappings.size())) {
        return InvalidArgumentError("location " + std::to_string(id) + " refers to unknown mapping " +
                                    std::to_string(loc.mapping_id));
      }
      const ProfileMapping& m = profile.mappings[loc.mapping_id - 1];
      mapping = tables.Mapping(m);
      // Kernel addresses are the same in every process; user addresses are
      // turned into offsets into the mapped file.
      if (loc.kind == FrameKind::kNative && !m.is_kernel && loc.address >= m.memory_start) {
        address = loc.address - m.memory_start + m.file_offset;
      }
    }
    std::vector<std::pair<uint32_t, int64_t>> lines;
    for (const ProfileLine& line : loc.lines) {
      if (!ValidId(line.function_id, profile.functions.size())) {
        return InvalidArgumentError("location " + std::to_string(id) + " refers to unknown function " +
                                    std::to_string(line.function_id));
      }
      lines.emplace_back(tables.Function(profile.functions[line.function_id - 1]), line.line);
    }
    const uint32_t index = tables.Location(mapping, address, ToWire(loc.kind), lines);
    location_index[id - 1] = index;
    return index;
  };

  // (label set, stack, time) -> index into batch.samples, so equal rows merge.
  // Per profile, so per type.
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, int> sample_index;
  std::vector<uint32_t> stack;
  for (size_t i = rows.begin; i < rows.end; ++i) {
    const ProfileSample& sample = profile.samples[i];
    stack.clear();
    for (uint64_t id : sample.location_ids) {
      ASSIGN_OR_RETURN(uint32_t index, location(id));
      stack.push_back(index);
    }
    std::map<std::string, std::string> series = {
        {"node", header.node},
        {"pid", std::to_string(sample.labels.pid)},
        {"comm", sample.labels.comm},
        {"thread", sample.labels.thread_name},
    };
    for (const auto& [key, value] : sample.labels.extra) series[key] = value;
    if (auto it = labels.find(sample.labels.pid); it != labels.end()) AddProcessLabels(it->second, &series);
    AddAgentLabels(header, &series);
    const uint32_t label_set = tables.LabelSet(series);
    const uint32_t stack_index = tables.Stack(stack);
    const int64_t time = sample.time_nanos != 0 ? sample.time_nanos : profile.time_nanos;
    auto [it, inserted] = sample_index.try_emplace({label_set, stack_index, time}, batch.samples_size());
    if (inserted) {
      v1::Sample* pb = batch.add_samples();
      pb->set_time_unix_nanos(time);
      pb->set_type(type);
      pb->set_label_set(label_set);
      pb->set_stack(stack_index);
    }
    v1::Sample* pb = batch.mutable_samples(it->second);
    pb->set_value(pb->value() + sample.count);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<v1::IngestBatch> EncodeIngestBatch(const IngestBatchContent& content, const IngestBatchHeader& header,
                                            const ProcessLabelMap& labels) {
  v1::IngestBatch batch;
  batch.set_schema_version(kIngestSchemaVersion);
  batch.set_agent_id(header.agent_id);
  batch.set_sequence(header.sequence);
  batch.set_start_unix_nanos(content.start_unix_nanos);
  batch.set_end_unix_nanos(content.end_unix_nanos);
  BatchTables tables(&batch);
  for (const IngestBatchContent::ProfileRows& rows : content.profiles) {
    if (rows.profile == nullptr) return InvalidArgumentError("no profile to encode");
    const uint32_t type = AddProfileType(*rows.profile, &tables, &batch);
    RETURN_IF_ERROR(AddProfileSamples(rows, type, header, labels, tables, batch));
  }
  AddMetricPoints(content.metrics, header, labels, &tables, &batch);
  AddGpuTrace(content, header, labels, &tables, &batch);
  if (content.counters != nullptr) {
    for (const ProfileCounter& counter : *content.counters) {
      v1::Counter* pb = batch.add_counters();
      pb->set_name(tables.String(counter.name));
      pb->set_value(counter.value);
    }
  }
  return batch;
}

StatusOr<v1::IngestBatch> EncodeIngestBatch(const std::vector<const Profile*>& profiles,
                                            const IngestBatchHeader& header, const ProcessLabelMap& labels,
                                            const std::vector<MetricReading>& metrics, const GpuTrace* trace) {
  if (profiles.empty() || profiles[0] == nullptr) return InvalidArgumentError("no profile to encode");
  const Profile& first = *profiles[0];
  IngestBatchContent content;
  content.start_unix_nanos = first.time_nanos;
  content.end_unix_nanos = first.time_nanos + first.duration_nanos;
  for (const Profile* p : profiles) {
    if (p != nullptr) content.profiles.push_back({p, 0, p->samples.size()});
  }
  content.counters = &first.counters;
  content.metrics = metrics;
  if (trace != nullptr) {
    content.trace = trace;
    content.activities = trace->activities;
    content.coverage = trace->coverage;
  }
  return EncodeIngestBatch(content, header, labels);
}

StatusOr<v1::IngestBatch> EncodeIngestBatch(const Profile& profile, const IngestBatchHeader& header,
                                            const ProcessLabelMap& labels, const std::vector<MetricReading>& metrics) {
  return EncodeIngestBatch(std::vector<const Profile*>{&profile}, header, labels, metrics);
}

StatusOr<std::string> CompressIngestBatch(const v1::IngestBatch& batch, int zstd_level) {
  std::string raw;
  if (!batch.SerializeToString(&raw)) return InternalError("serializing the ingest batch failed");
  // The checksum makes a batch damaged in the spool a refusal, never some
  // other batch.
  return http::CompressZstd(raw, zstd_level);
}

StatusOr<v1::IngestBatch> DecompressIngestBatch(std::string_view body, size_t max_bytes) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (ctx == nullptr) return InternalError("zstd: out of memory");
  std::string raw;
  ZSTD_inBuffer in{body.data(), body.size(), 0};
  std::string chunk(1 << 16, '\0');
  size_t last = 1;
  while (in.pos < in.size || last != 0) {
    ZSTD_outBuffer out{chunk.data(), chunk.size(), 0};
    last = ZSTD_decompressStream(ctx, &out, &in);
    if (ZSTD_isError(last)) {
      ZSTD_freeDCtx(ctx);
      return InvalidArgumentError(std::string("zstd: ") + ZSTD_getErrorName(last));
    }
    raw.append(chunk.data(), out.pos);
    if (raw.size() > max_bytes) {
      ZSTD_freeDCtx(ctx);
      return ResourceExhaustedError("batch larger than " + std::to_string(max_bytes) + " bytes");
    }
    if (in.pos == in.size && out.pos == 0 && last != 0) {
      ZSTD_freeDCtx(ctx);
      return InvalidArgumentError("zstd: truncated frame");
    }
  }
  ZSTD_freeDCtx(ctx);
  v1::IngestBatch batch;
  if (!batch.ParseFromString(raw)) return InvalidArgumentError("not a warpscope.v1.IngestBatch");
  return batch;
}

}  // namespace warpscope
