#include "agent/core/bpf_features.h"

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "base/logging.h"

namespace warpscope {
namespace {

// libbpf: 1 supported, 0 not, negative when the probe itself failed.
bool Helper(enum bpf_func_id id, int* errors) {
  const int r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, id, nullptr);
  if (r < 0) ++*errors;
  return r == 1;
}

}  // namespace

BpfFeatures ProbeBpfFeatures() {
  BpfFeatures f;
  int errors = 0;
  // Without BPF privilege every load fails and the helper probes (which read
  // the verifier's log) would say yes to everything: the perf_event program
  // the agent needs must load before anything else is believed.
  if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, nullptr) != 1) return f;
  f.perf_event_programs = true;
  f.bpf_loop = Helper(BPF_FUNC_loop, &errors);
  f.current_task_btf = Helper(BPF_FUNC_get_current_task_btf, &errors);
  f.task_pt_regs = Helper(BPF_FUNC_task_pt_regs, &errors);
  f.ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr) == 1;
  f.prog_array = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_PROG_ARRAY, nullptr) == 1;
  f.probed = errors == 0;
  return f;
}

std::string DescribeBpfFeatures(const BpfFeatures& f) {
  if (!f.probed) return "not probed: a perf_event program could not be loaded (no BPF privilege, or none in this kernel)";
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  return std::string("bpf_loop ") + yes(f.bpf_loop) + ", get_current_task_btf " + yes(f.current_task_btf) +
         ", task_pt_regs " + yes(f.task_pt_regs) + ", ring buffer " + yes(f.ringbuf) + ", tail calls " +
         yes(f.prog_array) + ", perf_event programs " + yes(f.perf_event_programs);
}

UnwinderDriverChoice ChooseUnwinderDriver(const BpfFeatures& f) {
  UnwinderDriverChoice c;
  if (!f.probed) {
    c.why = "the kernel's BPF features could not be probed";
    return c;
  }
  std::string missing;
  auto need = [&](bool have, const char* what) {
    if (!have) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  need(f.perf_event_programs, "perf_event programs");
  need(f.bpf_loop, "bpf_loop");
  need(f.current_task_btf, "bpf_get_current_task_btf");
  need(f.task_pt_regs, "bpf_task_pt_regs");
  need(f.ringbuf, "the BPF ring buffer");
  if (!missing.empty()) {
    c.why = "this kernel lacks " + missing + " (the unwinder's tail-call driver for such kernels is not in this build)";
    return c;
  }
  c.driver = UnwinderDriver::kBpfLoop;
  c.name = "bpf_loop";
  return c;
}

Status CheckUnwinderDriver() {
  const BpfFeatures features = ProbeBpfFeatures();
  const UnwinderDriverChoice driver = ChooseUnwinderDriver(features);
  if (!features.probed) return Status::Ok();
  if (driver.driver == UnwinderDriver::kNone) {
    return FailedPreconditionError("the stack unwinder cannot run here: " + driver.why +
                                   "; `warpscope-agent doctor` lists what was probed");
  }
  LOG_INFO() << "unwinder driver " << driver.name << " (probed: " << DescribeBpfFeatures(features) << ")";
  return Status::Ok();
}

}  // namespace warpscope
