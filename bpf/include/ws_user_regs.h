/* What each architecture's ws_unwind_arch.h shares: the user-mode registers
 * a stack walk starts from, as it reads them (pc, sp, the frame pointer, rbp
 * or x29, and the link register: x30 on arm64, where a leaf's return address
 * may still be; 0 on x86-64, which has none), and the frame-record step,
 * the same on both. Include after bpf_helpers.h. */
#ifndef WARPSCOPE_BPF_WS_USER_REGS_H_
#define WARPSCOPE_BPF_WS_USER_REGS_H_

struct ws_user_regs {
  __u64 pc;
  __u64 sp;
  __u64 fp;
  __u64 lr;
};

/* Frame-pointer step over a frame record: the caller's frame pointer at
 * [fp], the return address at [fp+8] (its bits outside `pc_mask` dropped),
 * the caller's sp just above. 0, or -1 when it cannot be read. */
static __always_inline int ws_frame_record_step(__u64 *pc, __u64 *sp, __u64 *fp, __u64 pc_mask) {
  __u64 saved[2];
  if (*fp == 0 || bpf_probe_read_user(saved, sizeof(saved), (void *)*fp) != 0) return -1;
  *sp = *fp + 16;
  *fp = saved[0];
  *pc = saved[1] & pc_mask;
  return 0;
}

#endif /* WARPSCOPE_BPF_WS_USER_REGS_H_ */
