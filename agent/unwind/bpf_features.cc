#include "agent/unwind/bpf_features.h"

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstdlib>

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

bool IsUnwinderDriverName(std::string_view name) {
  return name == "auto" || name == "bpf_loop" || name == "tail_call";
}

UnwinderDriverChoice ChooseUnwinderDriver(const BpfFeatures& f, std::string_view forced) {
  UnwinderDriverChoice c;
  if (!f.probed) {
    c.why = "the kernel's BPF features could not be probed";
    return c;
  }
  std::string missing;
  auto need = [&](bool have, const char* what) {
    if (!have) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  // Both drivers: the programs, the process-event and uprobe ring buffers,
  // and the program arrays every caller's begin part calls its walk through.
  need(f.perf_event_programs, "perf_event programs");
  need(f.ringbuf, "the BPF ring buffer");
  need(f.prog_array, "BPF program arrays (tail calls)");
  if (!missing.empty()) {
    c.why = "this kernel lacks " + missing;
    return c;
  }
  const bool auto_choice = forced.empty() || forced == "auto";
  if (!auto_choice && !IsUnwinderDriverName(forced)) {
    c.why = "unknown unwinder driver '" + std::string(forced) + "' (auto, bpf_loop or tail_call)";
    return c;
  }
  if (forced == "bpf_loop" || (auto_choice && f.bpf_loop)) {
    if (!f.bpf_loop) {
      c.why = "the bpf_loop driver was asked for, and this kernel lacks bpf_loop";
      return c;
    }
    c.driver = UnwinderDriver::kBpfLoop;
    c.name = "bpf_loop";
    c.why = auto_choice ? "the kernel has bpf_loop" : "forced";
    return c;
  }
  c.driver = UnwinderDriver::kTailCall;
  c.name = "tail_call";
  c.why = auto_choice ? "the kernel lacks bpf_loop" : "forced";
  return c;
}

namespace {

std::string& DriverOverride() {
  static std::string name;
  return name;
}

}  // namespace

Status SetUnwinderDriverOverride(std::string_view name) {
  if (!name.empty() && !IsUnwinderDriverName(name)) {
    return InvalidArgumentError("unknown unwinder driver '" + std::string(name) +
                                "' (auto, bpf_loop or tail_call)");
  }
  DriverOverride() = std::string(name);
  return Status::Ok();
}

const ActiveUnwinder& ActiveUnwinderDriver() {
  static const ActiveUnwinder active = [] {
    ActiveUnwinder a;
    a.features = ProbeBpfFeatures();
    std::string forced = DriverOverride();
    if (forced.empty() || forced == "auto") {
      if (const char* env = getenv("WARPSCOPE_UNWINDER_DRIVER"); env != nullptr && *env != '\0') forced = env;
    }
    a.choice = ChooseUnwinderDriver(a.features, forced);
    return a;
  }();
  return active;
}

Status CheckUnwinderDriver() {
  const ActiveUnwinder& active = ActiveUnwinderDriver();
  if (!active.features.probed) return Status::Ok();
  if (active.choice.driver == UnwinderDriver::kNone) {
    return FailedPreconditionError("the stack unwinder cannot run here: " + active.choice.why +
                                   "; `warpscope-agent doctor` lists what was probed");
  }
  LOG_INFO() << "unwinder driver " << active.choice.name << " (" << active.choice.why
             << "; probed: " << DescribeBpfFeatures(active.features) << ")";
  return Status::Ok();
}

void SelectWalkProgram(bpf_program* loop, bpf_program* tail) {
  const bool use_tail = ActiveUnwinderDriver().choice.driver == UnwinderDriver::kTailCall;
  bpf_program__set_autoload(loop, !use_tail);
  bpf_program__set_autoload(tail, use_tail);
}

int InstallWalkProgram(bpf_map* progs, bpf_program* loop, bpf_program* tail) {
  const bool use_tail = ActiveUnwinderDriver().choice.driver == UnwinderDriver::kTailCall;
  const int fd = bpf_program__fd(use_tail ? tail : loop);
  if (fd < 0) return -EBADF;
  const uint32_t slot = 0;  // WS_UNWIND_PROG_WALK
  if (bpf_map__update_elem(progs, &slot, sizeof(slot), &fd, sizeof(fd), BPF_ANY) != 0) return -errno;
  return 0;
}

}  // namespace warpscope
