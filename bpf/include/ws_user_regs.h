/* The user-mode registers a stack walk starts from, as each architecture's
 * ws_unwind_arch.h reads them: pc, sp, the frame pointer (rbp; x29) and the
 * link register (x30 on arm64, where a leaf's return address may still be
 * there; 0 on x86-64, which has none). */
#ifndef WARPSCOPE_BPF_WS_USER_REGS_H_
#define WARPSCOPE_BPF_WS_USER_REGS_H_

struct ws_user_regs {
  __u64 pc;
  __u64 sp;
  __u64 fp;
  __u64 lr;
};

#endif /* WARPSCOPE_BPF_WS_USER_REGS_H_ */
