#include "storage/conformance/test_batches.h"

namespace warpscope::storage::testing {

BatchBuilder::BatchBuilder(std::string agent_id, uint64_t sequence) {
  batch_.set_schema_version(1);
  batch_.set_agent_id(std::move(agent_id));
  batch_.set_sequence(sequence);
  Str("");
}

uint32_t BatchBuilder::Str(const std::string& s) {
  auto [it, inserted] = strings_.try_emplace(s, batch_.strings_size());
  if (inserted) batch_.add_strings(s);
  return it->second;
}

uint32_t BatchBuilder::Mapping(const std::string& file, const std::string& build_id) {
  auto* m = batch_.add_mappings();
  m->set_filename(Str(file));
  m->set_build_id(Str(build_id));
  return batch_.mappings_size();
}

uint32_t BatchBuilder::Function(const std::string& name, const std::string& system_name, const std::string& file) {
  auto* f = batch_.add_functions();
  f->set_name(Str(name));
  f->set_system_name(Str(system_name));
  f->set_filename(Str(file));
  return batch_.functions_size() - 1;
}

uint32_t BatchBuilder::Location(uint32_t mapping, uint64_t address, v1::FrameKind kind,
                                const std::vector<std::pair<uint32_t, int64_t>>& lines) {
  auto* l = batch_.add_locations();
  l->set_mapping(mapping);
  l->set_address(address);
  l->set_kind(kind);
  for (const auto& [function, line] : lines) {
    auto* ln = l->add_lines();
    ln->set_function(function);
    ln->set_line(line);
  }
  return batch_.locations_size() - 1;
}

uint32_t BatchBuilder::Stack(const std::vector<uint32_t>& locations) {
  auto* s = batch_.add_stacks();
  for (uint32_t l : locations) s->add_locations(l);
  return batch_.stacks_size() - 1;
}

v1::GpuActivity& BatchBuilder::GpuKernel(int64_t start, int64_t duration, uint32_t label_set, const std::string& name,
                                         uint32_t stream, uint64_t correlation_id) {
  auto* a = batch_.add_gpu_activities();
  a->set_start_unix_nanos(start);
  a->set_duration_nanos(duration);
  a->set_label_set(label_set);
  a->set_kind(v1::GPU_ACTIVITY_KERNEL);
  a->set_name(Str(name));
  a->set_system_name(Str("_Z" + name));
  a->set_stream(stream);
  a->set_correlation_id(correlation_id);
  a->set_grid_x(1);
  a->set_grid_y(1);
  a->set_grid_z(1);
  a->set_block_x(128);
  a->set_block_y(1);
  a->set_block_z(1);
  return *a;
}

void BatchBuilder::GpuCoverage(int64_t second, uint32_t label_set, uint64_t recorded, uint64_t sent,
                               int64_t complete_until) {
  auto* c = batch_.add_gpu_trace_coverage();
  c->set_second_unix_nanos(second);
  c->set_label_set(label_set);
  c->set_recorded(recorded);
  c->set_sent(sent);
  c->set_complete_until_unix_nanos(complete_until);
}

uint32_t BatchBuilder::LabelSet(const Labels& labels) {
  auto* set = batch_.add_label_sets();
  for (const auto& [k, v] : labels) {
    auto* l = set->add_labels();
    l->set_key(Str(k));
    l->set_value(Str(v));
  }
  return batch_.label_sets_size() - 1;
}

uint32_t BatchBuilder::Type(const std::string& name, const std::string& unit, int64_t period) {
  auto* t = batch_.add_types();
  t->set_name(Str(name));
  t->set_sample_unit(Str(unit));
  t->set_period_nanos(period);
  return batch_.types_size() - 1;
}

void BatchBuilder::Sample(int64_t time, uint32_t type, uint32_t label_set, uint32_t stack, int64_t value) {
  auto* s = batch_.add_samples();
  s->set_time_unix_nanos(time);
  s->set_type(type);
  s->set_label_set(label_set);
  s->set_stack(stack);
  s->set_value(value);
}

uint32_t BatchBuilder::MetricType(const std::string& name, const std::string& unit) {
  auto* m = batch_.add_metric_types();
  m->set_name(Str(name));
  m->set_unit(Str(unit));
  return batch_.metric_types_size() - 1;
}

void BatchBuilder::MetricPoint(int64_t time, uint32_t metric, uint32_t label_set, double value) {
  auto* p = batch_.add_metric_points();
  p->set_time_unix_nanos(time);
  p->set_metric(metric);
  p->set_label_set(label_set);
  p->set_value(value);
}

uint32_t BatchBuilder::SimpleFrame(const std::string& fn) {
  if (auto it = simple_frames_.find(fn); it != simple_frames_.end()) return it->second;
  if (app_mapping_ == 0) app_mapping_ = Mapping("/bin/app", "abc123");
  uint32_t f = Function(fn, "_Z" + fn, "app.cc");
  uint32_t loc = Location(app_mapping_, 0x1000 + 16 * simple_frames_.size(), v1::FRAME_KIND_NATIVE, {{f, 10}});
  simple_frames_.emplace(fn, loc);
  return loc;
}

uint32_t BatchBuilder::SimpleStack(const std::vector<std::string>& functions) {
  std::vector<uint32_t> locations;
  for (const std::string& fn : functions) locations.push_back(SimpleFrame(fn));
  return Stack(locations);
}

v1::IngestBatch NodeBatch(const std::string& node, uint64_t sequence, int64_t time_ns, int stacks, int depth,
                          int processes) {
  BatchBuilder b("agent-" + node, sequence);
  uint32_t cpu = b.Cpu();
  std::vector<uint32_t> sets;
  for (int p = 0; p < processes; ++p) {
    sets.push_back(b.LabelSet({{"comm", "proc" + std::to_string(p)}, {"node", node}}));
  }
  for (int s = 0; s < stacks; ++s) {
    std::vector<std::string> frames;
    for (int d = 0; d < depth; ++d) frames.push_back(node + "_f" + std::to_string((s * 7 + d * 13) % (stacks + depth)));
    frames.push_back("s" + std::to_string(s));  // keeps every stack distinct
    uint32_t stack = b.SimpleStack(frames);
    b.Sample(time_ns, cpu, sets[s % processes], stack, 1 + s % 5);
  }
  return b.batch();
}

v1::IngestBatch OneSample(const std::string& agent, uint64_t sequence, int64_t time_ns, int64_t value,
                          const std::string& node, const std::string& fn) {
  BatchBuilder b(agent, sequence);
  uint32_t cpu = b.Cpu();
  uint32_t set = b.LabelSet({{"node", node}});
  uint32_t stack = b.SimpleStack({fn});
  b.Sample(time_ns, cpu, set, stack, value);
  return b.batch();
}

}  // namespace warpscope::storage::testing
