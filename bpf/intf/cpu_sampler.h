/* Kernel <-> user contract of bpf/cpu_sampler.bpf.c.
 *
 * Included by the BPF program (with vmlinux.h types) and by the agent (with
 * linux/types.h). Only fixed-width types; sizes are checked at compile time on
 * both sides so a layout change cannot go unnoticed. */
#ifndef WARPSCOPE_BPF_INTF_CPU_SAMPLER_H_
#define WARPSCOPE_BPF_INTF_CPU_SAMPLER_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define WS_MAX_STACK_FRAMES 128 /* bpf_get_stack stops at the kernel's perf_event_max_stack (127 by default) */
#define WS_COMM_LEN 16

/* Aggregation key: one entry per (thread, user stack, kernel stack). */
struct ws_sample_key {
  __u32 pid; /* thread-group id (what users call the pid) */
  __u32 tid;
  __u64 user_stack_hash;   /* key into the stacks map; 0 = no user stack */
  __u64 kernel_stack_hash; /* key into the stacks map; 0 = no kernel stack */
  char comm[WS_COMM_LEN];        /* the sampled thread's name */
  char process_comm[WS_COMM_LEN]; /* the thread-group leader's name */
};

/* ws_stack.flags */
#define WS_STACK_KERNEL 0x1u    /* frames are kernel addresses */
#define WS_STACK_TRUNCATED 0x2u /* the walk hit WS_MAX_STACK_FRAMES */
#define WS_STACK_PYTHON 0x4u    /* holds Python frames (two slots each, bpf/intf/python.h) */
#define WS_STACK_PY_TAIL 0x8u   /* Python frames left over when the native walk stopped were appended at the root end */

/* Why a user stack walk ended, in bits 8..15 of ws_stack.flags. */
enum ws_stack_end {
  WS_END_KERNEL_FP = 0,    /* walked by the kernel's frame-pointer walker: the end is not known */
  WS_END_ROOT = 1,         /* reached the outermost frame (_start / thread entry): a whole stack */
  WS_END_TRUNCATED = 2,    /* more than WS_MAX_STACK_FRAMES frames */
  WS_END_NO_MAPPING = 3,   /* a pc in no executable mapping we know */
  WS_END_ANON = 4,         /* a pc in anonymous executable memory (JIT code) */
  WS_END_INVALID_RULE = 5, /* CFI we cannot follow */
  WS_END_READ_ERROR = 6,   /* reading the user stack failed (bad frame pointer, paged out) */
  WS_END_MAX = 7,
};
#define WS_STACK_END_SHIFT 8
#define WS_STACK_END_MASK 0xff00u
static inline __u32 ws_stack_set_end(__u32 flags, __u32 end) {
  return (flags & ~WS_STACK_END_MASK) | ((end << WS_STACK_END_SHIFT) & WS_STACK_END_MASK);
}
static inline __u32 ws_stack_end(__u32 flags) { return (flags & WS_STACK_END_MASK) >> WS_STACK_END_SHIFT; }

/* Value of the stacks map. Frames are leaf first; frames[0] is the sampled IP. */
struct ws_stack {
  __u32 len;
  __u32 flags;
  __u64 frames[WS_MAX_STACK_FRAMES];
};

/* Indexes of the per-CPU `stats` array. Every place that can lose data has one. */
enum ws_cpu_sampler_stat {
  WS_STAT_SAMPLES = 0,        /* perf events handled */
  WS_STAT_IDLE,               /* samples of the idle task (not recorded) */
  WS_STAT_FILTERED,           /* samples of processes outside the pid filter */
  WS_STAT_RECORDED,           /* samples counted in the counts map */
  WS_STAT_DROP_COUNTS_FULL,   /* counts map full: the sample is lost */
  WS_STAT_DROP_STACKS_FULL,   /* stacks map full: the sample is recorded without that stack */
  WS_STAT_USER_STACK_ERROR,   /* bpf_get_stack failed for the user stack */
  WS_STAT_KERNEL_STACK_ERROR, /* bpf_get_stack failed for the kernel stack */
  WS_STAT_USER_TRUNCATED,     /* user stack deeper than WS_MAX_STACK_FRAMES */
  WS_STAT_DROP_PROC_EVENTS,   /* process-event ring buffer full */
  WS_STAT_NEW_PROCESSES,      /* process-seen events emitted */
  /* Off-CPU time (off_cpu = true). Every blocking switch is counted; one in
   * off_cpu_sample_every is timed, re-weighted by that number. */
  WS_STAT_OFFCPU_SWITCHES,      /* a thread of a profiled process blocked (switched out, not runnable) */
  WS_STAT_OFFCPU_TIMED,         /* of those, chosen to be timed */
  WS_STAT_OFFCPU_RATE_LIMITED,  /* chosen, but over the per-CPU bound on timed waits: not counted */
  WS_STAT_OFFCPU_PENDING_FULL,  /* chosen, but the map of waits in progress was full: not counted */
  WS_STAT_OFFCPU_SHORT,         /* timed, shorter than off_cpu_min_ns: not counted (by design) */
  WS_STAT_OFFCPU_RECORDED,      /* timed waits added to the off-CPU counts */
  WS_STAT_OFFCPU_DROP_COUNTS_FULL, /* off-CPU counts map full: the wait is lost */
  WS_STAT_OFFCPU_NOT_SYSCALL,   /* the thread ran on without leaving a system call it blocked in (a page fault): not counted */
  WS_STAT_UNWIND_NO_WALK,       /* the walk program could not be called: the kernel's frame-pointer walk stood in */
  WS_STAT_MAX,
};

/* Process lifecycle events sent to user space so it reads /proc/PID/maps while
 * the process is alive (a process that exits before the drain still gets symbols). */
enum ws_proc_event_type {
  WS_PROC_SEEN = 1, /* first sample of this pid (since start or since its exec) */
  WS_PROC_EXEC = 2, /* the process replaced its image */
  WS_PROC_EXIT = 3, /* the last thread of the process exited */
  WS_PROC_PY_STACK = 4, /* a new stack with Python frames: read its code objects while the process lives */
};

/* A timed wait in progress, per thread id: from the switch-out (its start
 * and kernel stack) through the switch-in (its end) to the exit of the
 * system call it blocked in (its user stack, unwound then). */
#define WS_OFFCPU_KERNEL_FRAMES 32
struct ws_off_cpu_pending {
  __u64 start_ns; /* bpf_ktime_get_ns() at the switch-out */
  __u64 end_ns;   /* at the switch-in; 0 while blocked */
  __u64 user_ip;  /* the user instruction pointer at the switch-out */
  __u32 weight;   /* off_cpu_sample_every then: the wait stands for this many */
  __u32 kernel_len;
  __u64 kernel_frames[WS_OFFCPU_KERNEL_FRAMES];
};

struct ws_proc_event {
  __u32 type;
  __u32 pid;
  __u64 stack_hash; /* WS_PROC_PY_STACK: key in stacks_<buffer> */
  __u32 buffer;
  __u32 pad;
};

#ifdef __cplusplus
static_assert(sizeof(struct ws_sample_key) == 56, "ws_sample_key layout");
static_assert(sizeof(struct ws_stack) == 8 + 8 * WS_MAX_STACK_FRAMES, "ws_stack layout");
static_assert(sizeof(struct ws_proc_event) == 24, "ws_proc_event layout");
static_assert(sizeof(struct ws_off_cpu_pending) == 32 + 8 * WS_OFFCPU_KERNEL_FRAMES, "ws_off_cpu_pending layout");
#else
_Static_assert(sizeof(struct ws_sample_key) == 56, "ws_sample_key layout");
_Static_assert(sizeof(struct ws_stack) == 8 + 8 * WS_MAX_STACK_FRAMES, "ws_stack layout");
_Static_assert(sizeof(struct ws_proc_event) == 24, "ws_proc_event layout");
_Static_assert(sizeof(struct ws_off_cpu_pending) == 32 + 8 * WS_OFFCPU_KERNEL_FRAMES, "ws_off_cpu_pending layout");
#endif

#endif /* WARPSCOPE_BPF_INTF_CPU_SAMPLER_H_ */
