// SPDX-License-Identifier: GPL-2.0-only
/* cpu_sampler: CPU-time sampling of every process on the node.
 *
 * Design: user space opens one perf_event (software cpu-clock, a fixed period)
 * per online CPU and attaches ws_cpu_sample to each. Every sample captures the
 * user stack (through the unwinder in ws_unwind.h: ws_cpu_sample begins the
 * walk, a walk program of the chosen driver ends it and records) and the kernel
 * stack, stores each stack once in a stacks map keyed by a hash of its frames,
 * and counts the sample in a counts map keyed by (pid, tid, names, stack
 * hashes). Aggregating in the kernel keeps user-space work proportional to the
 * number of distinct stacks, not samples.
 *
 * Double buffering: there are two (counts, stacks) pairs. `active_buffer`
 * (.bss, written by user space) selects the one samples go to; user space
 * flips it, waits for in-flight programs to finish, then drains and clears the
 * other pair with no concurrent writer. A stack hash in counts_N always refers
 * to stacks_N, so clearing never orphans a count.
 *
 * Every place that can lose data increments a per-CPU counter in `stats`.
 * Process lifecycle events (first sample of a pid, exec, exit) go to user space
 * through `proc_events` so /proc/PID/maps is read while the process lives.
 *
 * Off-CPU time (off_cpu): ws_sched_switch sees a thread block (switched out
 * and not runnable) and, for one blocking in off_cpu_sample_every, notes the
 * time and the kernel stack in off_cpu_pending; when the thread is switched
 * back in it notes the end. ws_off_cpu_end runs when the thread leaves the
 * system call it blocked in (sys_exit, in its own context: the user stack is
 * still that of the wait): it unwinds the user stack like a CPU sample and
 * adds the blocked nanoseconds times the weight to off_cpu_counts_N, which
 * share stacks_N. Only tracepoints: no kprobe or trampoline is needed. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/intf/cpu_sampler.h"
#include "ws_stack.h"

#define WS_PF_EXITING 0x00000004 /* include/linux/sched.h */
#define WS_PF_KTHREAD 0x00200000
#define WS_USER_STACK_SEED 0x75736572ULL
#define WS_KERNEL_STACK_SEED 0x6b65726eULL

char LICENSE[] SEC("license") = "GPL";

/* Read-only configuration, set by user space before load. */
const volatile bool filter_pids = false;
/* Interleave CPython frames into user stacks (ws_python.h). */
const volatile bool python_frames = true;
/* The kernel has bpf_task_pt_regs (5.15; probed by user space): without it
 * the user registers come from the sample or the task's kernel stack. */
const volatile bool have_task_pt_regs = true;

/* Off-CPU time: the programs below are loaded only with it on. Waits shorter
 * than off_cpu_min_ns are not counted; at most off_cpu_max_per_bucket waits
 * are timed per CPU per 2^27 ns (134 ms). */
const volatile bool off_cpu = false;
const volatile __u64 off_cpu_min_ns = 0;
const volatile __u32 off_cpu_max_per_bucket = 100;

/* Written by user space through the mmaped .bss: which buffer samples go to. */
__u32 active_buffer = 0;
/* Written by user space (.bss): one blocking switch in this many is timed (0
 * and 1: every one). User space raises it when switches come faster than its
 * target rate of timed waits; each timed wait then stands for this many. */
__u32 off_cpu_sample_every = 0;

/* max_entries of every map below is set by user space from ComputeCpuSamplerMapSizes()
 * (agent/collectors/cpu/map_sizing.h); the values here are placeholders. */
struct counts_map {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, struct ws_sample_key);
  __type(value, __u64);
};
struct counts_map counts_0 SEC(".maps");
struct counts_map counts_1 SEC(".maps");

struct counts_map off_cpu_counts_0 SEC(".maps"); /* value: blocked nanoseconds, re-weighted */
struct counts_map off_cpu_counts_1 SEC(".maps");

struct stacks_map {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, struct ws_stack);
};
struct stacks_map stacks_0 SEC(".maps");
struct stacks_map stacks_1 SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8);
} target_pids SEC(".maps");

/* Pids already announced with WS_PROC_SEEN. LRU: a forgotten pid is announced
 * again, which costs one /proc read, never a wrong answer. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} seen_pids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} proc_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, WS_STAT_MAX);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

/* Timed waits in progress by thread id (ws_sched_switch -> ws_off_cpu_end). A
 * thread that exits while one is noted is removed by ws_process_exit. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct ws_off_cpu_pending);
} off_cpu_pending SEC(".maps");

/* Per CPU: a wait being noted (too big for the BPF stack). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ws_off_cpu_pending);
} off_cpu_scratch SEC(".maps");

/* Per CPU: the current 2^27 ns bucket and the waits timed in it. */
struct ws_off_cpu_budget {
  __u64 bucket;
  __u64 used;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ws_off_cpu_budget);
} off_cpu_budget SEC(".maps");

/* Scratch space for the kernel stack of one sample (too big for the BPF
 * stack): slot 0 for CPU samples, 1 for off-CPU time (ws_off_cpu_end runs
 * with interrupts on, so a CPU sample can come in the middle of it). The user
 * stacks are walked in the unwinder's state, in the same slots. */
#define WS_SLOT_SAMPLE 0
#define WS_SLOT_OFF_CPU 1
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, WS_UNWIND_SLOTS);
  __type(key, __u32);
  __type(value, struct ws_stack);
} kernel_scratch SEC(".maps");

/* The walk program of each caller (ws_unwind.h), one array per program type:
 * user space puts the driver it chose at WS_UNWIND_PROG_WALK. */
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} sample_progs SEC(".maps");
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} off_cpu_progs SEC(".maps");

static __always_inline void stat_inc(__u32 index) {
  __u64 *value = bpf_map_lookup_elem(&stats, &index);
  if (value) *value += 1; /* per-CPU: no atomics needed */
}

/* Events that need user space while the process lives (its maps, its code
 * objects) wake the agent at once; an exit can wait for the next poll (at most
 * 100 ms), which saves a wakeup per process. The wakeup is forced: the
 * ring buffer's own heuristic wakes only a consumer that has caught up, and
 * one still holding an unannounced exit has not. */
static __always_inline void emit_proc_event(__u32 type, __u32 pid, __u64 stack_hash, __u32 buffer) {
  const __u64 wakeup = type == WS_PROC_EXIT ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP;
  struct ws_proc_event *event = bpf_ringbuf_reserve(&proc_events, sizeof(*event), 0);
  if (!event) {
    stat_inc(WS_STAT_DROP_PROC_EVENTS);
    return;
  }
  event->type = type;
  event->pid = pid;
  event->stack_hash = stack_hash;
  event->buffer = buffer;
  event->pad = 0;
  bpf_ringbuf_submit(event, wakeup);
}

static __always_inline void note_process(__u32 pid) {
  if (bpf_map_lookup_elem(&seen_pids, &pid)) return;
  __u8 one = 1;
  /* NOEXIST: when two CPUs race on a new pid only one announces it. */
  if (bpf_map_update_elem(&seen_pids, &pid, &one, BPF_NOEXIST) != 0) return;
  stat_inc(WS_STAT_NEW_PROCESSES);
  emit_proc_event(WS_PROC_SEEN, pid, 0, 0);
}

/* Stores `stack` once in `stacks` and returns its hash, or 0 when it could not
 * be stored. A new stack with Python frames is announced to user space, which
 * reads its code objects at once (they may be gone by the next drain). */
static __always_inline __u64 store_stack(void *stacks, struct ws_stack *stack, __u64 seed, __u32 pid,
                                         __u32 buffer) {
  __u64 hash = ws_stack_hash(stack, seed);
  if (bpf_map_lookup_elem(stacks, &hash)) return hash;
  long err = bpf_map_update_elem(stacks, &hash, stack, BPF_NOEXIST);
  if (err == 0 && (stack->flags & WS_STACK_PYTHON)) emit_proc_event(WS_PROC_PY_STACK, pid, hash, buffer);
  if (err != 0 && err != -17 /* EEXIST: another CPU stored it first */) {
    stat_inc(WS_STAT_DROP_STACKS_FULL);
    return 0;
  }
  return hash;
}

/* The finish part of a sample: adds `value` to the current task's key in
 * `counts`, with the user stack walked in `st` (or, for a process user space
 * has not described, the kernel's frame-pointer walk) and the kernel stack: a
 * CPU sample (off_cpu_time false) adds 1 and captures its kernel stack here;
 * off-CPU time adds nanoseconds and finds the kernel stack of the wait already
 * in its scratch slot. ctx: the program's context (perf event or tracepoint),
 * for the stacks. */
static __always_inline int record_sample(void *ctx, struct ws_unwind_state *st, void *counts, void *stacks,
                                         __u32 buffer, bool off_cpu_time) {
  __u32 kernel_slot = off_cpu_time ? WS_SLOT_OFF_CPU : WS_SLOT_SAMPLE;
  struct ws_stack *kernel_stack = bpf_map_lookup_elem(&kernel_scratch, &kernel_slot);
  if (!kernel_stack) return 0;
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  const __u32 pid = pid_tgid >> 32;
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();

  struct ws_sample_key key = {};
  key.pid = pid;
  key.tid = (__u32)pid_tgid;
  bpf_get_current_comm(&key.comm, sizeof(key.comm));
  BPF_CORE_READ_STR_INTO(&key.process_comm, task, group_leader, comm);

  if (!(BPF_CORE_READ(task, flags) & WS_PF_KTHREAD)) {
    struct ws_stack *user_stack = &st->stack;
    if (!st->described && ws_get_stack(ctx, user_stack, BPF_F_USER_STACK, 0) < 0) {
      stat_inc(WS_STAT_USER_STACK_ERROR);
    } else if (user_stack->len > 0) {
      if (user_stack->flags & WS_STACK_TRUNCATED) stat_inc(WS_STAT_USER_TRUNCATED);
      key.user_stack_hash = store_stack(stacks, user_stack, WS_USER_STACK_SEED, pid, buffer);
    }
  }
  if (!off_cpu_time && ws_capture_kernel_stack(ctx, kernel_stack) < 0) {
    stat_inc(WS_STAT_KERNEL_STACK_ERROR);
  } else if (kernel_stack->len > 0) {
    key.kernel_stack_hash = store_stack(stacks, kernel_stack, WS_KERNEL_STACK_SEED, pid, buffer);
  }

  const __u64 value = st->caller[0];
  __u64 *count = bpf_map_lookup_elem(counts, &key);
  if (count) {
    __sync_fetch_and_add(count, value);
  } else {
    long err = bpf_map_update_elem(counts, &key, &value, BPF_NOEXIST);
    if (err == -17 /* EEXIST: inserted by another CPU meanwhile */) {
      count = bpf_map_lookup_elem(counts, &key);
      if (count) __sync_fetch_and_add(count, value);
    } else if (err != 0) {
      stat_inc(off_cpu_time ? WS_STAT_OFFCPU_DROP_COUNTS_FULL : WS_STAT_DROP_COUNTS_FULL);
      return 0;
    }
  }
  stat_inc(off_cpu_time ? WS_STAT_OFFCPU_RECORDED : WS_STAT_RECORDED);
  return 0;
}

/* record_sample into the buffer samples go to now. Each buffer's maps are
 * named at a call site of their own, as the verifier wants map pointers. */
static __always_inline int record_in_active_buffer(void *ctx, struct ws_unwind_state *st, bool off_cpu_time) {
  if (*(volatile __u32 *)&active_buffer & 1) {
    return record_sample(ctx, st, off_cpu_time ? (void *)&off_cpu_counts_1 : (void *)&counts_1, &stacks_1, 1,
                         off_cpu_time);
  }
  return record_sample(ctx, st, off_cpu_time ? (void *)&off_cpu_counts_0 : (void *)&counts_0, &stacks_0, 0,
                       off_cpu_time);
}

/* The begin part's end: the walk program (which records when the walk is
 * over), or, when the process is not described or the walk program cannot be
 * called, the recording now with the kernel's frame-pointer walk. */
static __always_inline int walk_then_record(void *ctx, struct ws_unwind_state *st, void *progs, bool off_cpu_time) {
  if (st->described) {
    bpf_tail_call(ctx, progs, WS_UNWIND_PROG_WALK);
    stat_inc(WS_STAT_UNWIND_NO_WALK);
    st->described = 0;
  }
  return record_in_active_buffer(ctx, st, off_cpu_time);
}

SEC("perf_event")
int ws_cpu_sample(struct bpf_perf_event_data *ctx) {
  stat_inc(WS_STAT_SAMPLES);
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  const __u32 pid = pid_tgid >> 32;
  const __u32 tid = (__u32)pid_tgid;
  if (tid == 0) { /* the idle task */
    stat_inc(WS_STAT_IDLE);
    return 0;
  }
  if (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid)) {
    stat_inc(WS_STAT_FILTERED);
    return 0;
  }
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  const __u32 task_flags = BPF_CORE_READ(task, flags);
  /* An exiting task is not announced: its exit event may already have been
   * sent, and a late "seen" would make user space describe a dead process. */
  if (!(task_flags & (WS_PF_KTHREAD | WS_PF_EXITING))) note_process(pid);

  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_SAMPLE);
  if (!st) return 0;
  st->caller[0] = 1;
  st->described = 0;
  if (!(task_flags & WS_PF_KTHREAD)) {
    /* The user registers: the task's saved ones, or the sample's own when it
     * hit user mode. */
    struct ws_user_regs user = {};
    if (have_task_pt_regs || !ws_arch_sample_user_regs(ctx, &user)) {
      struct pt_regs *regs = have_task_pt_regs ? (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf())
                                               : ws_arch_task_pt_regs(task);
      if (regs) ws_arch_user_regs(regs, &user);
    }
    if (user.pc != 0) ws_unwind_begin(st, &user, pid, python_frames);
  }
  return walk_then_record(ctx, st, &sample_progs, false);
}

/* The walk programs of CPU samples: one per driver, user space loads one. */
SEC("perf_event")
int ws_cpu_sample_walk_loop(struct bpf_perf_event_data *ctx) {
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_SAMPLE);
  if (!st) return 0;
  ws_unwind_walk_loop(st, WS_SLOT_SAMPLE);
  return record_in_active_buffer(ctx, st, false);
}

SEC("perf_event")
int ws_cpu_sample_walk_tail(struct bpf_perf_event_data *ctx) {
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_SAMPLE);
  if (!st) return 0;
  ws_unwind_walk_tail(ctx, st, WS_SLOT_SAMPLE, &sample_progs);
  return record_in_active_buffer(ctx, st, false);
}

/* task_struct.state became __state in 5.14. */
struct task_struct___pre514 {
  long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t) {
  if (bpf_core_field_exists(t->__state)) return BPF_CORE_READ(t, __state);
  return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* Whether this CPU may time one more wait in the current bucket. */
static __always_inline bool off_cpu_budget_allows(__u64 now) {
  __u32 zero = 0;
  struct ws_off_cpu_budget *b = bpf_map_lookup_elem(&off_cpu_budget, &zero);
  if (!b) return false;
  const __u64 bucket = now >> 27;
  if (b->bucket != bucket) {
    b->bucket = bucket;
    b->used = 0;
  }
  if (b->used >= off_cpu_max_per_bucket) return false;
  b->used += 1;
  return true;
}

/* A thread is switched out. Runs in the scheduler with interrupts off, for
 * every context switch on the node: it must stay cheap. Only a thread that
 * blocks (not preempted, not runnable) of a profiled process, and only one in
 * off_cpu_sample_every of those, costs more than a few reads. */
SEC("tp_btf/sched_switch")
int BPF_PROG(ws_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  /* The end of a timed wait: its thread runs again. */
  const __u32 next_tid = BPF_CORE_READ(next, pid);
  if (next_tid != 0) {
    struct ws_off_cpu_pending *ended = bpf_map_lookup_elem(&off_cpu_pending, &next_tid);
    if (ended && ended->end_ns == 0) ended->end_ns = bpf_ktime_get_ns();
  }
  if (preempt || task_state(prev) == 0 /* TASK_RUNNING: it yields, it does not wait */) return 0;
  /* Kernel threads are not profiled off-CPU; an exiting task's last switch is
   * not a wait. */
  if (BPF_CORE_READ(prev, flags) & (WS_PF_KTHREAD | WS_PF_EXITING)) return 0;
  const __u32 tid = BPF_CORE_READ(prev, pid);
  if (tid == 0) return 0;
  if (filter_pids) {
    __u32 pid = BPF_CORE_READ(prev, tgid);
    if (!bpf_map_lookup_elem(&target_pids, &pid)) return 0;
  }
  stat_inc(WS_STAT_OFFCPU_SWITCHES);
  const __u32 every = *(volatile __u32 *)&off_cpu_sample_every;
  /* Random, not every n-th: two threads that take turns on a CPU would
   * otherwise always be the one chosen, or never. */
  if (every > 1 && bpf_get_prandom_u32() % every != 0) return 0;
  stat_inc(WS_STAT_OFFCPU_TIMED);
  const __u64 now = bpf_ktime_get_ns();
  if (!off_cpu_budget_allows(now)) {
    stat_inc(WS_STAT_OFFCPU_RATE_LIMITED);
    return 0;
  }
  /* A wait of this thread that ended without a system call exit (it blocked
   * in a page fault) is replaced, and counted. */
  struct ws_off_cpu_pending *earlier = bpf_map_lookup_elem(&off_cpu_pending, &tid);
  if (earlier && earlier->end_ns != 0) stat_inc(WS_STAT_OFFCPU_NOT_SYSCALL);
  __u32 zero = 0;
  struct ws_off_cpu_pending *pending = bpf_map_lookup_elem(&off_cpu_scratch, &zero);
  if (!pending) return 0;
  pending->start_ns = now;
  pending->end_ns = 0;
  pending->weight = every > 1 ? every : 1;
  struct pt_regs *regs =
      have_task_pt_regs ? (struct pt_regs *)bpf_task_pt_regs(prev) : ws_arch_task_pt_regs((struct task_struct *)prev);
  pending->user_ip = regs ? ws_arch_user_pc(regs) : 0;
  /* prev is the current task here: this is the stack it blocks in. */
  long bytes = bpf_get_stack(ctx, pending->kernel_frames, sizeof(pending->kernel_frames), 0);
  pending->kernel_len = bytes > 0 ? (__u32)(bytes / sizeof(__u64)) : 0;
  if (bpf_map_update_elem(&off_cpu_pending, &tid, pending, BPF_ANY) != 0) stat_inc(WS_STAT_OFFCPU_PENDING_FULL);
  return 0;
}

/* A thread leaves a system call. When it blocked in that call with a timed
 * wait, the wait is recorded: its user stack is unwound now, in the thread's
 * own context, from the same registers it blocked with. */
SEC("tp_btf/sys_exit")
int BPF_PROG(ws_off_cpu_end, struct pt_regs *regs, long ret) {
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  const __u32 tid = (__u32)pid_tgid;
  struct ws_off_cpu_pending *pending = bpf_map_lookup_elem(&off_cpu_pending, &tid);
  if (!pending) return 0;
  const __u64 start = pending->start_ns, end = pending->end_ns, weight = pending->weight;
  /* Not the call it blocked in (it blocked in a page fault and made this call
   * later): its stack now is not the wait's. */
  if (end == 0 || end <= start || ws_arch_user_pc(regs) != pending->user_ip) {
    bpf_map_delete_elem(&off_cpu_pending, &tid);
    stat_inc(WS_STAT_OFFCPU_NOT_SYSCALL);
    return 0;
  }
  const __u64 blocked = end - start;
  if (blocked < off_cpu_min_ns) {
    bpf_map_delete_elem(&off_cpu_pending, &tid);
    stat_inc(WS_STAT_OFFCPU_SHORT);
    return 0;
  }
  /* The wait's kernel stack into the slot record_sample takes it from. */
  __u32 kernel_slot = WS_SLOT_OFF_CPU;
  struct ws_stack *kernel_stack = bpf_map_lookup_elem(&kernel_scratch, &kernel_slot);
  if (!kernel_stack) return 0;
  __u32 len = pending->kernel_len;
  if (len > WS_OFFCPU_KERNEL_FRAMES) len = WS_OFFCPU_KERNEL_FRAMES;
  for (int i = 0; i < WS_OFFCPU_KERNEL_FRAMES; i++) {
    if (i >= len) break;
    kernel_stack->frames[i] = pending->kernel_frames[i];
  }
  kernel_stack->len = len;
  kernel_stack->flags = WS_STACK_KERNEL | (len >= WS_OFFCPU_KERNEL_FRAMES ? WS_STACK_TRUNCATED : 0);
  bpf_map_delete_elem(&off_cpu_pending, &tid);
  const __u32 pid = pid_tgid >> 32;
  note_process(pid);
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_OFF_CPU);
  if (!st) return 0;
  /* Capped at 2^50 ns (13 days) so a long wait times a large weight cannot
   * overflow; the server takes no larger value anyway. */
  const __u64 cap = 1ULL << 50;
  st->caller[0] = blocked > cap / weight ? cap : blocked * weight;
  /* sys_exit's regs are the thread's user registers. */
  struct ws_user_regs user;
  ws_arch_user_regs(regs, &user);
  ws_unwind_begin(st, &user, pid, python_frames);
  return walk_then_record(ctx, st, &off_cpu_progs, true);
}

/* The walk programs of off-CPU time: one per driver, user space loads one.
 * Same attach point as ws_off_cpu_end (a tail call stays within one). */
SEC("tp_btf/sys_exit")
int BPF_PROG(ws_off_cpu_walk_loop, struct pt_regs *regs, long ret) {
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_OFF_CPU);
  if (!st) return 0;
  ws_unwind_walk_loop(st, WS_SLOT_OFF_CPU);
  return record_in_active_buffer(ctx, st, true);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ws_off_cpu_walk_tail, struct pt_regs *regs, long ret) {
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_OFF_CPU);
  if (!st) return 0;
  ws_unwind_walk_tail(ctx, st, WS_SLOT_OFF_CPU, &off_cpu_progs);
  return record_in_active_buffer(ctx, st, true);
}

/* tp_btf programs attach without tracefs, which is often not mounted. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ws_process_exec, struct task_struct *p) {
  __u32 pid = BPF_CORE_READ(p, tgid);
  if (filter_pids && !bpf_map_lookup_elem(&target_pids, &pid)) return 0;
  /* Forget the pid so its next sample announces it again with the new image. */
  if (bpf_map_delete_elem(&seen_pids, &pid) == 0) emit_proc_event(WS_PROC_EXEC, pid, 0, 0);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ws_process_exit, struct task_struct *p) {
  const __u32 tid = BPF_CORE_READ(p, pid);
  ws_py_forget_thread(tid); /* every thread: its cached Python thread state dies with it */
  if (off_cpu) bpf_map_delete_elem(&off_cpu_pending, &tid);
  /* signal->live reaches 0 when the last thread of the group exits (it is
   * decremented before this tracepoint on every kernel we support). */
  if (BPF_CORE_READ(p, signal, live.counter) != 0) return 0;
  __u32 pid = BPF_CORE_READ(p, tgid);
  if (bpf_map_delete_elem(&seen_pids, &pid) == 0) emit_proc_event(WS_PROC_EXIT, pid, 0, 0);
  return 0;
}
