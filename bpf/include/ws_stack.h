/* Stack capture shared by every BPF stack source: CPU samples
 * (cpu_sampler.bpf.c) and uprobe stacks (uprobe_stack.bpf.c: CUDA launches).
 *
 * User stacks come from the .eh_frame unwinder (ws_unwind.h) when user space
 * has described the process; ws_get_stack() is the kernel's frame-pointer walk
 * (bpf_get_stack) for those it has not, and for kernel stacks. Stacks are
 * deduplicated by a 64-bit hash of their frames so that callers store a hash in
 * their aggregation keys and the frames once in a stacks map. */
#ifndef WARPSCOPE_BPF_WS_STACK_H_
#define WARPSCOPE_BPF_WS_STACK_H_

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/intf/cpu_sampler.h"
#include "ws_unwind.h"

/* A 64-bit mix over the frames (splitmix-style finalizer per frame). Never
 * returns 0, which callers use for "no stack". Collisions between different
 * stacks are possible in theory (2^-64 per pair); the first stack stored wins. */
static __always_inline __u64 ws_stack_hash(const struct ws_stack *stack, __u64 seed) {
  __u64 h = seed ^ ((__u64)stack->len * 0x9e3779b97f4a7c15ULL);
  for (int i = 0; i < WS_MAX_STACK_FRAMES; i++) {
    if (i >= stack->len) break;
    __u64 x = stack->frames[i] + h;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    h = x ^ (x >> 31);
  }
  return h ? h : 1;
}

/* bpf_get_stack into `stack`: a frame-pointer walk of the user stack
 * (BPF_F_USER_STACK) or the kernel stack. Returns 0 or a negative errno. */
static __always_inline int ws_get_stack(void *ctx, struct ws_stack *stack, __u64 get_flags, __u32 stack_flags) {
  long bytes = bpf_get_stack(ctx, stack->frames, sizeof(stack->frames), get_flags);
  stack->flags = stack_flags;
  if (bytes < 0) {
    stack->len = 0;
    return (int)bytes;
  }
  stack->len = (__u32)(bytes / sizeof(__u64));
  if (stack->len >= WS_MAX_STACK_FRAMES) stack->flags |= WS_STACK_TRUNCATED;
  return 0;
}

/* Fills `stack` with the kernel stack at the sample point, leaf first. An empty
 * stack (the sample hit user mode) is a success with len 0. */
static __always_inline int ws_capture_kernel_stack(void *ctx, struct ws_stack *stack) {
  return ws_get_stack(ctx, stack, 0, WS_STACK_KERNEL);
}

#endif /* WARPSCOPE_BPF_WS_STACK_H_ */
