/* Kernel <-> user contract of bpf/uprobe_stack.bpf.c. */
#ifndef WARPSCOPE_BPF_INTF_UPROBE_STACK_H_
#define WARPSCOPE_BPF_INTF_UPROBE_STACK_H_

#include "bpf/intf/cpu_sampler.h"

/* Indexes of the per-CPU uprobe_stats array. */
enum ws_uprobe_stat {
  WS_UPROBE_HITS = 0,         /* uprobe entries */
  WS_UPROBE_SAMPLED,          /* stacks sent to user space */
  WS_UPROBE_DROPPED,          /* ring buffer full: stack lost */
  WS_UPROBE_NOT_DESCRIBED,    /* the process had no unwind description yet */
  WS_UPROBE_RETURNS,          /* uretprobe hits (ws_uretprobe_mark) */
  WS_UPROBE_NO_WALK,          /* the walk program could not be called: sent as not described */
  WS_UPROBE_STAT_MAX,
};

/* What a probe is for: the program user space attaches (one per role),
 * carried in each event. A stack probe (the launch probe, probe-stack) may be sampled; the
 * marks of a call's entry and return are never sampled away, and an entry
 * whose stack cannot be walked (process not described yet) still comes,
 * with an empty stack, so the call's time is known. */
enum ws_uprobe_role {
  WS_UPROBE_ROLE_STACK = 0,
  WS_UPROBE_ROLE_AUTOGRAD_ENTRY = 1,  /* THPEngine_run_backward entered: the caller's stack */
  WS_UPROBE_ROLE_AUTOGRAD_RETURN = 2, /* ... returned (uretprobe): no stack */
};

struct ws_uprobe_stack_event {
  __u32 pid;
  __u32 tid;
  __u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
  /* The probed function's first three integer arguments (x86-64 rdi, rsi,
   * rdx; arm64 x0..x2): for libwarpscope_cuda.so's warpscope_cuda_launch_probe
   * the launch's correlation id, launch kind and graph exec id. */
  __u64 args[3];
  __u64 role; /* enum ws_uprobe_role */
  struct ws_stack stack;
};

#endif /* WARPSCOPE_BPF_INTF_UPROBE_STACK_H_ */
