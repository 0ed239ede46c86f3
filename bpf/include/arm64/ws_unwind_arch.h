/* arm64's register and frame rules for the unwinder (ws_unwind.h) and the
 * CPython walker (ws_python.h), the counterpart of x86/ws_unwind_arch.h:
 * which registers a walk starts from, the frame record chain, where a return
 * address is (still in the link register at a leaf), the signal frame and the
 * thread pointer. Return addresses lose their pointer-authentication bits
 * (a function built with -mbranch-protection signs x30 before saving it).
 *
 * What differs from x86-64:
 *   - x29 is the frame pointer and the AArch64 frame record {x29, x30} sits
 *     at it: the caller's x29 at [x29], the return address at [x29 + 8];
 *   - the return address is in x30 until a prologue saves it: a row's
 *     return-address rule (intf/unwind.h) says where it is, and x30 is
 *     trusted only for the walk's first frame (or one a signal interrupted);
 *   - PLT stubs leave sp alone: CFA = sp, the return address in x30;
 *   - the kernel stack is max(16 KiB, the page size) (64 KiB with 64 KiB
 *     pages), so the task's saved registers are found through
 *     ws_arch_thread_size, which user space sets from the page size. */
#ifndef WARPSCOPE_BPF_ARM64_WS_UNWIND_ARCH_H_
#define WARPSCOPE_BPF_ARM64_WS_UNWIND_ARCH_H_

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "../ws_user_regs.h"
#include "bpf/intf/unwind.h"

/* User addresses fit in 48 bits (Debian's arm64 kernels: 48-bit VA); the bits
 * above hold a pointer-authentication code, or a tag (TBI). */
#define WS_ARCH_PC_MASK ((1ULL << 48) - 1)

/* The kernel's THREAD_SIZE: max(16 KiB, page size); set by user space before
 * load (the default fits 4 KiB and 16 KiB pages). */
static volatile const __u64 ws_arch_thread_size = 16384;

/* The registers a user stack walk starts from: pc, sp, x29 and x30. */
static __always_inline void ws_arch_user_regs(struct pt_regs *regs, struct ws_user_regs *r) {
  r->pc = BPF_CORE_READ(regs, pc);
  r->sp = BPF_CORE_READ(regs, sp);
  bpf_core_read(&r->fp, sizeof(r->fp), &regs->regs[29]);
  bpf_core_read(&r->lr, sizeof(r->lr), &regs->regs[30]);
  r->lr &= WS_ARCH_PC_MASK;
}

/* The user-mode registers a task saved on entering the kernel, without
 * bpf_task_pt_regs (5.15): task_pt_regs(), the pt_regs at the top of its
 * kernel stack. */
static __always_inline struct pt_regs *ws_arch_task_pt_regs(struct task_struct *task) {
  const __u64 stack = (__u64)BPF_CORE_READ(task, stack);
  return stack ? (struct pt_regs *)(stack + ws_arch_thread_size - bpf_core_type_size(struct pt_regs)) : NULL;
}

/* A perf sample's own registers when it hit user mode, EL0 (returns 1), read
 * through the context; 0 when it hit the kernel. */
static __always_inline int ws_arch_sample_user_regs(struct bpf_perf_event_data *ctx, struct ws_user_regs *r) {
  if ((ctx->regs.pstate & 0xf) != 0) return 0; /* PSR_MODE_MASK; PSR_MODE_EL0t is 0 */
  r->pc = ctx->regs.pc;
  r->sp = ctx->regs.sp;
  r->fp = ctx->regs.regs[29];
  r->lr = ctx->regs.regs[30] & WS_ARCH_PC_MASK;
  return 1;
}

/* The user pc alone (off-CPU: where a thread blocked). */
static __always_inline __u64 ws_arch_user_pc(struct pt_regs *regs) { return BPF_CORE_READ(regs, pc); }

/* Frame-record step: the caller's x29 at [fp], the return address at
 * [fp+8]. */
static __always_inline int ws_arch_fp_step(__u64 *pc, __u64 *sp, __u64 *fp) {
  return ws_frame_record_step(pc, sp, fp, WS_ARCH_PC_MASK);
}

/* The caller's pc by the row's return-address rule (intf/unwind.h). 0; -1
 * when it cannot be read; -2 when the rule cannot hold here (x30 is not the
 * current frame's past the first frame, or a frame record without x29). */
static __always_inline int ws_arch_return_address(__u64 cfa, __s8 fp_offset, __u8 ra_rule, __u64 lr, int lr_valid,
                                                  __u64 *ra) {
  __u64 at;
  if (ra_rule == WS_RA_IN_LR) {
    if (!lr_valid) return -2;
    *ra = lr & WS_ARCH_PC_MASK;
    return 0;
  }
  if (ra_rule == WS_RA_FRAME_RECORD) {
    if (fp_offset == 0) return -2;
    at = cfa + (__s64)fp_offset * 8 + 8;
  } else {
    at = cfa - (__u64)(ra_rule - 1) * 8;
  }
  if (bpf_probe_read_user(ra, sizeof(*ra), (void *)at) != 0) return -1;
  *ra &= WS_ARCH_PC_MASK;
  return 0;
}

/* PLT stubs leave sp alone. */
static __always_inline __u64 ws_arch_plt_cfa(__u64 pc, __u64 sp, __u16 threshold) { return sp; }

/* The rt_sigframe at `sp` (the signal trampoline's frame: sp points at it):
 * siginfo (128 bytes), then the ucontext, whose uc_mcontext (struct
 * sigcontext) starts at offset 176: fault_address, regs[31], sp, pc. x29,
 * x30, sp and pc are four consecutive words from regs[29]. 0, or -1 when it
 * cannot be read. */
#define WS_ARCH_SIGCONTEXT_OFFSET (128 + 176)
static __always_inline int ws_arch_sigframe(__u64 sp, struct ws_user_regs *r) {
  __u64 regs[4];
  if (bpf_probe_read_user(regs, sizeof(regs), (void *)(sp + WS_ARCH_SIGCONTEXT_OFFSET + 8 + 29 * 8)) != 0) return -1;
  r->fp = regs[0];
  r->lr = regs[1] & WS_ARCH_PC_MASK;
  r->sp = regs[2];
  r->pc = regs[3];
  return 0;
}

/* The thread pointer (TLS base) of a task: TPIDR_EL0, kept in thread.uw. */
static __always_inline __u64 ws_arch_thread_pointer(struct task_struct *task) {
  return BPF_CORE_READ(task, thread.uw.tp_value);
}

#endif /* WARPSCOPE_BPF_ARM64_WS_UNWIND_ARCH_H_ */
