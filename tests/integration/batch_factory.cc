#include "tests/integration/batch_factory.h"

#include <algorithm>

namespace warpscope::testing {

BatchFactory::BatchFactory(std::string agent_id, uint64_t sequence, int64_t start_ns, int64_t end_ns) {
  batch_.set_schema_version(1);
  batch_.set_agent_id(std::move(agent_id));
  batch_.set_sequence(sequence);
  batch_.set_start_unix_nanos(start_ns);
  batch_.set_end_unix_nanos(end_ns);
  String("");
}

uint32_t BatchFactory::String(const std::string& s) {
  auto [it, inserted] = strings_.emplace(s, batch_.strings_size());
  if (inserted) batch_.add_strings(s);
  return it->second;
}

uint32_t BatchFactory::Location(const std::string& frame) {
  auto it = locations_.find(frame);
  if (it != locations_.end()) return it->second;
  std::string name = frame, binary, file;
  int64_t line = 0;
  auto kind = warpscope::v1::FRAME_KIND_NATIVE;
  if (name.rfind("py:", 0) == 0) {
    kind = warpscope::v1::FRAME_KIND_PYTHON;
    name = name.substr(3);
    const size_t at = name.find('@');
    if (at != std::string::npos) {
      file = name.substr(at + 1);
      name = name.substr(0, at);
      const size_t colon = file.rfind(':');
      if (colon != std::string::npos) {
        line = std::stoll(file.substr(colon + 1));
        file = file.substr(0, colon);
      }
    }
  } else {
    if (name.rfind("k:", 0) == 0) {
      kind = warpscope::v1::FRAME_KIND_KERNEL;
      name = name.substr(2);
      binary = "[kernel.kallsyms]";
    }
    const size_t at = name.find('@');
    if (at != std::string::npos) {
      binary = name.substr(at + 1);
      name = name.substr(0, at);
    }
  }
  auto* loc = batch_.add_locations();
  loc->set_kind(kind);
  if (!binary.empty()) {
    auto [m, inserted] = mappings_.emplace(binary, batch_.mappings_size() + 1);
    if (inserted) batch_.add_mappings()->set_filename(String(binary));
    loc->set_mapping(m->second);
    loc->set_address(0x1000 + 16 * locations_.size());
  }
  auto* fn = batch_.add_functions();
  fn->set_name(String(name));
  fn->set_system_name(String(name));
  fn->set_filename(String(file));
  auto* l = loc->add_lines();
  l->set_function(batch_.functions_size() - 1);
  l->set_line(line);
  const uint32_t index = batch_.locations_size() - 1;
  locations_.emplace(frame, index);
  return index;
}

uint32_t BatchFactory::Stack(const std::string& stack) {
  auto it = stacks_.find(stack);
  if (it != stacks_.end()) return it->second;
  std::vector<std::string> frames;
  size_t start = 0;
  while (start <= stack.size()) {
    const size_t semi = std::min(stack.find(';', start), stack.size());
    frames.push_back(stack.substr(start, semi - start));
    start = semi + 1;
  }
  auto* s = batch_.add_stacks();
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) s->add_locations(Location(*f));  // leaf first
  const uint32_t index = batch_.stacks_size() - 1;
  stacks_.emplace(stack, index);
  return index;
}

uint32_t BatchFactory::LabelSet(std::vector<std::pair<std::string, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  std::string key;
  for (const auto& [k, v] : labels) key += k + "\x01" + v + "\x02";
  auto it = label_sets_.find(key);
  if (it != label_sets_.end()) return it->second;
  auto* set = batch_.add_label_sets();
  for (const auto& [k, v] : labels) {
    auto* l = set->add_labels();
    l->set_key(String(k));
    l->set_value(String(v));
  }
  const uint32_t index = batch_.label_sets_size() - 1;
  label_sets_.emplace(key, index);
  return index;
}

uint32_t BatchFactory::Type(const std::string& type) {
  auto it = types_.find(type);
  if (it != types_.end()) return it->second;
  auto* t = batch_.add_types();
  t->set_name(String(type));
  t->set_sample_unit(String(type == "cpu" ? "samples" : type == "gpu_pc" ? "cycles" : "nanoseconds"));
  t->set_period_nanos(type == "cpu" ? 1'000'000'000 / 19 : 0);
  const uint32_t index = batch_.types_size() - 1;
  types_.emplace(type, index);
  return index;
}

void BatchFactory::Add(const std::string& stack, const std::vector<std::pair<std::string, std::string>>& labels,
                       int64_t value, int64_t time_ns, const std::string& type) {
  auto* s = batch_.add_samples();
  s->set_time_unix_nanos(time_ns);
  s->set_type(Type(type));
  s->set_label_set(LabelSet(labels));
  s->set_stack(Stack(stack));
  s->set_value(value);
}

uint32_t BatchFactory::MetricType(const std::string& name, const std::string& unit) {
  auto it = metric_types_.find({name, unit});
  if (it != metric_types_.end()) return it->second;
  auto* m = batch_.add_metric_types();
  m->set_name(String(name));
  m->set_unit(String(unit));
  const uint32_t index = batch_.metric_types_size() - 1;
  metric_types_.emplace(std::make_pair(name, unit), index);
  return index;
}

void BatchFactory::AddMetric(const std::string& name, const std::string& unit,
                             const std::vector<std::pair<std::string, std::string>>& labels, double value,
                             int64_t time_ns) {
  auto* p = batch_.add_metric_points();
  p->set_time_unix_nanos(time_ns);
  p->set_metric(MetricType(name, unit));
  p->set_label_set(LabelSet(labels));
  p->set_value(value);
}

warpscope::v1::GpuActivity& BatchFactory::AddGpuKernel(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels, int64_t start_ns,
    int64_t duration_ns, uint32_t device, uint32_t stream, uint64_t correlation_id) {
  auto* a = batch_.add_gpu_activities();
  a->set_start_unix_nanos(start_ns);
  a->set_duration_nanos(duration_ns);
  a->set_label_set(LabelSet(labels));
  a->set_kind(warpscope::v1::GPU_ACTIVITY_KERNEL);
  a->set_name(String(name));
  a->set_system_name(String(name.empty() ? "" : "_Z" + name));
  a->set_device(device);
  a->set_stream(stream);
  a->set_correlation_id(correlation_id);
  return *a;
}

void BatchFactory::AddGpuCoverage(const std::vector<std::pair<std::string, std::string>>& labels, int64_t second_ns,
                                  uint64_t recorded, uint64_t sent, int64_t complete_until_ns) {
  auto* c = batch_.add_gpu_trace_coverage();
  c->set_second_unix_nanos(second_ns);
  c->set_label_set(LabelSet(labels));
  c->set_recorded(recorded);
  c->set_sent(sent);
  c->set_complete_until_unix_nanos(complete_until_ns);
}

void BatchFactory::AddCounter(const std::string& name, uint64_t value) {
  auto* c = batch_.add_counters();
  c->set_name(String(name));
  c->set_value(value);
}

}  // namespace warpscope::testing
