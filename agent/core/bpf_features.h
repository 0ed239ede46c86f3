// BpfFeatures: what this kernel's BPF offers the agent's programs, probed at
// load by loading tiny programs (libbpf's probes), never read off a version
// string: distribution kernels backport features (RHEL 8's 4.18) and leave
// others out. The unwinder's driver is chosen from it.
//
// Drivers: `bpf_loop` (5.17+) walks a stack in one program; the tail-call
// driver that reaches 5.10 kernels is not in this build yet, so a kernel
// without bpf_loop gets no driver, and says why.
#pragma once

#include <string>

#include "base/status.h"

namespace warpscope {

struct BpfFeatures {
  bool probed = false;      // false: no perf_event program loads (no BPF privilege): nothing is known
  bool bpf_loop = false;    // bpf_loop helper (5.17)
  bool current_task_btf = false;  // bpf_get_current_task_btf (5.11)
  bool task_pt_regs = false;      // bpf_task_pt_regs (5.15)
  bool ringbuf = false;           // BPF_MAP_TYPE_RINGBUF (5.8)
  bool prog_array = false;        // tail calls
  bool perf_event_programs = false;
};

// Loads the probe programs (needs CAP_BPF and CAP_PERFMON, or root; `probed`
// false without).
BpfFeatures ProbeBpfFeatures();
// "bpf_loop yes, get_current_task_btf yes, task_pt_regs no, ..."
std::string DescribeBpfFeatures(const BpfFeatures& f);

enum class UnwinderDriver { kNone, kBpfLoop };
struct UnwinderDriverChoice {
  UnwinderDriver driver = UnwinderDriver::kNone;
  std::string name;  // "bpf_loop"; "" for none
  std::string why;   // for kNone: what the kernel lacks
};
UnwinderDriverChoice ChooseUnwinderDriver(const BpfFeatures& f);

// `run` and `record` before they load anything: FailedPrecondition, naming
// what the kernel lacks, when no driver fits (rather than the verifier's
// "number of funcs in func_info doesn't match number of subprogs" on 5.10);
// OK when one does or when the probes could not run (loading then says why).
Status CheckUnwinderDriver();

}  // namespace warpscope
