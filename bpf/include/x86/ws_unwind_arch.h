/* x86-64's register and frame rules for the unwinder (ws_unwind.h) and the
 * CPython walker (ws_python.h): which registers a walk starts from, the frame
 * pointer chain, the PLT rule, the signal frame and the thread pointer. The
 * walk itself (mappings, rows, Python frames) is the same on every
 * architecture; an architecture provides these. */
#ifndef WARPSCOPE_BPF_X86_WS_UNWIND_ARCH_H_
#define WARPSCOPE_BPF_X86_WS_UNWIND_ARCH_H_

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "../ws_user_regs.h"

/* The registers a user stack walk starts from: pc, sp and the frame pointer
 * (rbp); x86-64 has no link register. */
static __always_inline void ws_arch_user_regs(struct pt_regs *regs, struct ws_user_regs *r) {
  r->pc = BPF_CORE_READ(regs, ip);
  r->sp = BPF_CORE_READ(regs, sp);
  r->fp = BPF_CORE_READ(regs, bp);
  r->lr = 0;
}

/* The user-mode registers a task saved on entering the kernel, without
 * bpf_task_pt_regs (5.15): they sit at the top of its kernel stack
 * (task_pt_regs(); x86-64 keeps no padding above them). THREAD_SIZE is 16 KiB
 * (32 KiB only in KASAN builds). */
#define WS_ARCH_THREAD_SIZE 16384
static __always_inline struct pt_regs *ws_arch_task_pt_regs(struct task_struct *task) {
  const __u64 stack = (__u64)BPF_CORE_READ(task, stack);
  return stack ? (struct pt_regs *)(stack + WS_ARCH_THREAD_SIZE - bpf_core_type_size(struct pt_regs)) : NULL;
}

/* A perf sample's own registers when it hit user mode (returns 1), read
 * through the context (the verifier rewrites these loads; the context is not
 * memory to read with a helper). 0 when it hit the kernel. */
static __always_inline int ws_arch_sample_user_regs(struct bpf_perf_event_data *ctx, struct ws_user_regs *r) {
  if ((ctx->regs.cs & 3) != 3) return 0;
  r->pc = ctx->regs.ip;
  r->sp = ctx->regs.sp;
  r->fp = ctx->regs.bp;
  r->lr = 0;
  return 1;
}

/* The user pc alone (off-CPU: where a thread blocked). */
static __always_inline __u64 ws_arch_user_pc(struct pt_regs *regs) { return BPF_CORE_READ(regs, ip); }

/* Frame-pointer step: the caller's rbp at [fp], the return address at
 * [fp+8], the caller's sp just above. 0, or -1 when it cannot be read. */
static __always_inline int ws_arch_fp_step(__u64 *pc, __u64 *sp, __u64 *fp) {
  return ws_frame_record_step(pc, sp, fp, ~0ULL);
}

/* The caller's pc: the return address sits just below the CFA, whatever
 * the row's return-address rule (intf/unwind.h: arm64's). 0, or -1 when it
 * cannot be read. */
static __always_inline int ws_arch_return_address(__u64 cfa, __s8 fp_offset, __u8 ra_rule, __u64 lr, int lr_valid,
                                                  __u64 *ra) {
  return bpf_probe_read_user(ra, sizeof(*ra), (void *)(cfa - 8)) != 0 ? -1 : 0;
}

/* The binutils PLT rule: CFA = sp + 8, plus 8 once pc & 15 reaches the
 * entry's threshold (kept in the row's cfa_offset). */
static __always_inline __u64 ws_arch_plt_cfa(__u64 pc, __u64 sp, __u16 threshold) {
  return sp + 8 + (((pc & 15) >= threshold) ? 8 : 0);
}

/* The rt_sigframe at `sp` (the signal trampoline's frame): SP points at the
 * ucontext, whose uc_mcontext starts at offset 40 and holds rbp, rsp, rip at
 * gregs 10, 15, 16. 0, or -1 when it cannot be read. */
static __always_inline int ws_arch_sigframe(__u64 sp, struct ws_user_regs *r) {
  __u64 regs[7];
  if (bpf_probe_read_user(regs, sizeof(regs), (void *)(sp + 40 + 10 * 8)) != 0) return -1;
  r->fp = regs[0];
  r->sp = regs[5];
  r->pc = regs[6];
  r->lr = 0;
  return 0;
}

/* The thread pointer (TLS base) of a task: fs on x86-64. */
static __always_inline __u64 ws_arch_thread_pointer(struct task_struct *task) {
  return BPF_CORE_READ(task, thread.fsbase);
}

#endif /* WARPSCOPE_BPF_X86_WS_UNWIND_ARCH_H_ */
