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
 * probed application must not slow down because the agent is behind.
 *
 * Each probe's BPF cookie is its role (ws_uprobe_role): stacks are sampled,
 * a call's entry and return marks (the autograd probes) are not. The
 * uretprobe program sends only the time of a return, in the same ring
 * buffer, so user space reads a call's entry, the stacks taken during it
 * and its return in the order they were reserved. */
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

static __always_inline __u64 *uprobe_stat(__u32 i) { return bpf_map_lookup_elem(&uprobe_stats, &i); }

/* An event in the ring buffer with the thread and the time, or NULL (the
 * ring buffer is full: counted). */
static __always_inline struct ws_uprobe_stack_event *reserve_event(void) {
  struct ws_uprobe_stack_event *event = bpf_ringbuf_reserve(&uprobe_stacks, sizeof(*event), 0);
  if (!event) {
    __u64 *dropped = uprobe_stat(WS_UPROBE_DROPPED);
    if (dropped) *dropped += 1;
    return NULL;
  }
  const __u64 pid_tgid = bpf_get_current_pid_tgid();
  event->pid = pid_tgid >> 32;
  event->tid = (__u32)pid_tgid;
  event->time_ns = bpf_ktime_get_ns();
  return event;
}

SEC("uprobe")
int ws_uprobe_stack(struct pt_regs *ctx) {
  __u64 *hits = uprobe_stat(WS_UPROBE_HITS);
  if (!hits) return 0;
  *hits += 1;
  const __u64 role = bpf_get_attach_cookie(ctx);
  if (role == WS_UPROBE_ROLE_STACK && sample_every > 1 && (*hits % sample_every) != 0) return 0;
  struct ws_uprobe_stack_event *event = reserve_event();
  if (!event) return 0;
  event->args[0] = PT_REGS_PARM1(ctx);
  event->args[1] = PT_REGS_PARM2(ctx);
  event->args[2] = PT_REGS_PARM3(ctx);
  event->role = role;
  if (ws_unwind_user(ctx, event->pid, &event->stack, python_frames) != 0) {
    __u64 *missing = uprobe_stat(WS_UPROBE_NOT_DESCRIBED);
    if (missing) *missing += 1;
    if (role == WS_UPROBE_ROLE_STACK) {
      bpf_ringbuf_discard(event, 0);
      return 0;
    }
    event->stack.len = 0; /* a mark keeps its time without its stack */
    event->stack.flags = 0;
  }
  __u64 *sampled = uprobe_stat(WS_UPROBE_SAMPLED);
  if (sampled) *sampled += 1;
  bpf_ringbuf_submit(event, 0);
  return 0;
}

/* A return mark: the time a probed call returned, and its return value. */
SEC("uretprobe")
int ws_uretprobe_mark(struct pt_regs *ctx) {
  __u64 *returns = uprobe_stat(WS_UPROBE_RETURNS);
  if (!returns) return 0;
  *returns += 1;
  struct ws_uprobe_stack_event *event = reserve_event();
  if (!event) return 0;
  event->args[0] = PT_REGS_RC(ctx);
  event->args[1] = 0;
  event->args[2] = 0;
  event->role = bpf_get_attach_cookie(ctx);
  event->stack.len = 0;
  event->stack.flags = 0;
  bpf_ringbuf_submit(event, 0);
  return 0;
}
