// BpfFeatures: what this kernel's BPF offers the agent's programs, probed at
// load by loading tiny programs (libbpf's probes), never read off a version
// string: distribution kernels backport features (RHEL 8's 4.18) and leave
// others out. The unwinder's driver is chosen from it.
//
// Drivers (bpf/include/ws_unwind.h): `bpf_loop` (5.17+) walks a stack in one
// program; `tail_call` (5.10+) walks it in a chain of programs that
// tail-call each other. Each caller (CPU samples, off-CPU time, uprobe
// stacks) has a walk program of each kind; the chosen one is loaded and put
// in the caller's program array, the other is never loaded.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

struct bpf_map;
struct bpf_program;

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

enum class UnwinderDriver { kNone, kBpfLoop, kTailCall };
struct UnwinderDriverChoice {
  UnwinderDriver driver = UnwinderDriver::kNone;
  std::string name;  // "bpf_loop", "tail_call"; "" for none
  std::string why;   // for kNone: what the kernel lacks; else why this one ("forced" when forced)
};
// bpf_loop where the kernel has it, else the tail-call driver; `forced`
// ("bpf_loop" or "tail_call"; "" or "auto": choose) takes that one when the
// kernel allows it, and none otherwise.
UnwinderDriverChoice ChooseUnwinderDriver(const BpfFeatures& f, std::string_view forced = "");

// auto, bpf_loop or tail_call: the names a driver may be asked for by.
bool IsUnwinderDriverName(std::string_view name);

// The process-wide driver: the flag `--unwinder-driver` (or the environment's
// WARPSCOPE_UNWINDER_DRIVER, for tests) forces one; InvalidArgument for a name
// that is none of auto, bpf_loop and tail_call. Call before any BPF program
// is loaded.
Status SetUnwinderDriverOverride(std::string_view name);

// What every BPF object that walks stacks uses: probed once per process.
struct ActiveUnwinder {
  BpfFeatures features;
  UnwinderDriverChoice choice;
};
const ActiveUnwinder& ActiveUnwinderDriver();

// `run` and `record` before they load anything: FailedPrecondition, naming
// what the kernel lacks, when no driver fits (or the forced one does not);
// OK when one does or when the probes could not run (loading then says why).
Status CheckUnwinderDriver();

// For each BPF object with walk programs, before load: autoload only the
// active driver's (with no driver, the bpf_loop one: loading then fails with
// the kernel's reason).
void SelectWalkProgram(bpf_program* loop, bpf_program* tail);
// After load: the loaded walk program into slot 0 of the caller's program
// array (WS_UNWIND_PROG_WALK). 0 or a negative errno.
int InstallWalkProgram(bpf_map* progs, bpf_program* loop, bpf_program* tail);

}  // namespace warpscope
