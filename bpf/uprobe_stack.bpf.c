// SPDX-License-Identifier: GPL-2.0-only
/* uprobe_stack: user stacks captured at a function entry (a uprobe), through
 * the same .eh_frame unwinder as CPU samples (ws_unwind.h). It captures the
 * launch stacks of GPU time (agent/collectors/gpu_time/, on the injection
 * library's probe function) and backs `warpscope-agent probe-stack`
 * (checking which code calls a function, e.g. cuLaunchKernel).
 *
 * Design: every `sample_every`-th hit per CPU is unwound from the uprobe's own
 * registers (ctx is the user pt_regs) and sent whole through a ring buffer;
 * the rest only count. A full ring buffer is counted, never waited on: the
 * probed application must not slow down because the agent is behind. The
 * entry program begins the walk, the walk program of the chosen driver
 * (ws_unwind.h) ends it and sends the event: the event is reserved only
 * then, so no ring-buffer slot is held across the walk.
 *
 * Each role (ws_uprobe_role) has its own program, attached by user space as
 * the role needs (no BPF cookie: 5.10 has none): stacks are sampled, a call's
 * entry and return marks (the autograd probes) are not. The uretprobe
 * program sends only the time of a return, in the same ring buffer, so user
 * space reads a call's entry, the stacks taken during it and its return in
 * the order they were reserved. */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/intf/uprobe_stack.h"
#include "ws_unwind.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 sample_every = 1;
/* Interleave CPython frames into the stacks (ws_python.h). */
const volatile bool python_frames = true;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, WS_UPROBE_STAT_MAX);
  __type(key, __u32);
  __type(value, __u64);
} uprobe_stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} uprobe_stacks SEC(".maps");

/* The walk program (ws_unwind.h): user space puts the driver it chose at
 * WS_UNWIND_PROG_WALK. */
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} uprobe_progs SEC(".maps");

#define WS_SLOT_UPROBE 0
/* What the entry program keeps for the finish part, in the state's `caller`. */
enum { WS_CALLER_ARG0 = 0, WS_CALLER_ARG1 = 1, WS_CALLER_ARG2 = 2, WS_CALLER_TIME = 3, WS_CALLER_ROLE = 4 };

static __always_inline __u64 *uprobe_stat(__u32 i) { return bpf_map_lookup_elem(&uprobe_stats, &i); }

static __always_inline void uprobe_stat_inc(__u32 i) {
  __u64 *v = uprobe_stat(i);
  if (v) *v += 1; /* per-CPU: no atomics needed */
}

/* An event in the ring buffer with the thread, or NULL (the ring buffer is
 * full: counted). */
static __always_inline struct ws_uprobe_stack_event *reserve_event(void) {
  struct ws_uprobe_stack_event *event = bpf_ringbuf_reserve(&uprobe_stacks, sizeof(*event), 0);
  if (!event) {
    uprobe_stat_inc(WS_UPROBE_DROPPED);
    return NULL;
  }
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  event->pid = pid_tgid >> 32;
  event->tid = (__u32)pid_tgid;
  return event;
}

/* The finish part: the event with the entry's arguments, time and role and
 * the stack walked in `st`. A stack probe whose process was not described
 * sends nothing; a mark keeps its time without its stack. */
static __always_inline int send_stack(struct ws_unwind_state *st) {
  const __u64 role = st->caller[WS_CALLER_ROLE];
  if (!st->described) {
    uprobe_stat_inc(WS_UPROBE_NOT_DESCRIBED);
    if (role == WS_UPROBE_ROLE_STACK) return 0;
    st->stack.len = 0;
    st->stack.flags = 0;
  }
  struct ws_uprobe_stack_event *event = reserve_event();
  if (!event) return 0;
  event->time_ns = st->caller[WS_CALLER_TIME];
  event->args[0] = st->caller[WS_CALLER_ARG0];
  event->args[1] = st->caller[WS_CALLER_ARG1];
  event->args[2] = st->caller[WS_CALLER_ARG2];
  event->role = role;
  const __u32 len = st->stack.len;
  event->stack.len = len;
  event->stack.flags = st->stack.flags;
  for (int i = 0; i < WS_MAX_STACK_FRAMES; i++) {
    if (i >= len) break;
    event->stack.frames[i] = st->stack.frames[i];
  }
  uprobe_stat_inc(WS_UPROBE_SAMPLED);
  bpf_ringbuf_submit(event, 0);
  return 0;
}

/* The begin part of every entry probe. */
static __always_inline int uprobe_entry(struct pt_regs *ctx, __u64 role) {
  __u64 *hits = uprobe_stat(WS_UPROBE_HITS);
  if (!hits) return 0;
  *hits += 1;
  if (role == WS_UPROBE_ROLE_STACK && sample_every > 1 && (*hits % sample_every) != 0) return 0;
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_UPROBE);
  if (!st) return 0;
  st->caller[WS_CALLER_ARG0] = PT_REGS_PARM1(ctx);
  st->caller[WS_CALLER_ARG1] = PT_REGS_PARM2(ctx);
  st->caller[WS_CALLER_ARG2] = PT_REGS_PARM3(ctx);
  st->caller[WS_CALLER_TIME] = bpf_ktime_get_ns();
  st->caller[WS_CALLER_ROLE] = role;
  struct ws_user_regs user;
  ws_arch_user_regs(ctx, &user);
  if (ws_unwind_begin(st, &user, bpf_get_current_pid_tgid() >> 32, python_frames) == 0) {
    bpf_tail_call(ctx, &uprobe_progs, WS_UNWIND_PROG_WALK);
    uprobe_stat_inc(WS_UPROBE_NO_WALK);
    if (role == WS_UPROBE_ROLE_STACK) return 0;
    st->stack.len = 0; /* a mark keeps its time without its stack */
    st->stack.flags = 0;
  }
  return send_stack(st);
}

/* A stack probe (the launch probe, probe-stack): sampled. */
SEC("uprobe")
int ws_uprobe_stack(struct pt_regs *ctx) { return uprobe_entry(ctx, WS_UPROBE_ROLE_STACK); }

/* The autograd engine entered: the caller's stack, never sampled away. */
SEC("uprobe")
int ws_uprobe_autograd_entry(struct pt_regs *ctx) { return uprobe_entry(ctx, WS_UPROBE_ROLE_AUTOGRAD_ENTRY); }

/* The walk programs: one per driver, user space loads one. */
SEC("uprobe")
int ws_uprobe_walk_loop(struct pt_regs *ctx) {
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_UPROBE);
  if (!st) return 0;
  ws_unwind_walk_loop(st, WS_SLOT_UPROBE);
  return send_stack(st);
}

SEC("uprobe")
int ws_uprobe_walk_tail(struct pt_regs *ctx) {
  struct ws_unwind_state *st = ws_unwind_state_of(WS_SLOT_UPROBE);
  if (!st) return 0;
  ws_unwind_walk_tail(ctx, st, WS_SLOT_UPROBE, &uprobe_progs);
  return send_stack(st);
}

/* A return mark: the time a probed call returned, and its return value. */
SEC("uretprobe")
int ws_uretprobe_mark(struct pt_regs *ctx) {
  __u64 *returns = uprobe_stat(WS_UPROBE_RETURNS);
  if (!returns) return 0;
  *returns += 1;
  struct ws_uprobe_stack_event *event = reserve_event();
  if (!event) return 0;
  event->time_ns = bpf_ktime_get_ns();
  event->args[0] = PT_REGS_RC(ctx);
  event->args[1] = 0;
  event->args[2] = 0;
  event->role = WS_UPROBE_ROLE_AUTOGRAD_RETURN;
  event->stack.len = 0;
  event->stack.flags = 0;
  bpf_ringbuf_submit(event, 0);
  return 0;
}
