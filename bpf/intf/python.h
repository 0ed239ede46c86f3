/* Kernel <-> user contract of the CPython frame walker (bpf/include/ws_python.h).
 *
 * User space detects a process's CPython version and hands BPF the addresses
 * (the _PyRuntime global, the evaluation loop's code) and a ws_py_layout of
 * field offsets for that version (agent/unwind/python/python_layouts.cc holds
 * the one table). BPF finds the sampled thread's PyThreadState, walks its
 * interpreter frames and emits each Python frame into the native stack as two
 * slots:
 *   slot 0: WS_PY_FRAME_TAG | address of the code object
 *   slot 1: (fingerprint << 32) | instruction index (code units from co_code start)
 * The fingerprint (a few immutable code-object fields) lets user space tell a
 * code object from a later one at the same address. Fixed-width types only. */
#ifndef WARPSCOPE_BPF_INTF_PYTHON_H_
#define WARPSCOPE_BPF_INTF_PYTHON_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* User-space pointers are below 2^47 (2^56 with 5-level paging), so bit 63 never
 * appears in a real return address. */
#define WS_PY_FRAME_TAG 0x8000000000000000ULL
#define WS_PY_ADDR_MASK 0x00ffffffffffffffULL

/* How the interpreter frames of one evaluation-loop call are delimited. */
enum ws_py_walk {
  WS_PY_WALK_ONE_PER_CALL = 1, /* 3.10: one PyFrameObject per _PyEval_EvalFrameDefault call, f_back chain */
  WS_PY_WALK_IS_ENTRY = 2,     /* 3.11: _PyInterpreterFrame.is_entry marks a call's first frame */
  WS_PY_WALK_CSTACK_SHIM = 3,  /* 3.12+: each call pushes a shim frame owned by FRAME_OWNED_BY_CSTACK */
};

/* Offsets in bytes. "Window" reads: one bpf_probe_read_user of
 * WS_PY_FRAME_WINDOW bytes at frame + frame_window, fields at *_rel offsets
 * inside it (and likewise for the code object), so one Python frame costs two
 * reads of user memory. */
#define WS_PY_FRAME_WINDOW 80
#define WS_PY_CODE_WINDOW 32

struct ws_py_layout {
  __u32 walk;                 /* enum ws_py_walk */
  __u32 runtime_interp_head;  /* _PyRuntimeState.interpreters.head */
  __u32 interp_next;          /* PyInterpreterState.next */
  __u32 interp_threads_head;  /* PyInterpreterState.threads.head (tstate_head in 3.10) */
  __u32 tstate_next;          /* PyThreadState.next */
  __u32 tstate_thread_id;     /* PyThreadState.thread_id: pthread_self(), the thread pointer (fs base) */
  __u32 tstate_frame;         /* PyThreadState.frame (3.10) / .cframe (3.11, 3.12) / .current_frame (3.13) */
  __s32 cframe_current_frame; /* _PyCFrame.current_frame; -1 when tstate_frame is the frame itself */
  __u32 frame_window;         /* start of the frame window */
  __u32 frame_code_rel;       /* f_code / f_executable */
  __u32 frame_previous_rel;   /* previous / f_back */
  __u32 frame_instr_rel;      /* prev_instr / instr_ptr (pointer), or f_lasti (int, 3.10) */
  __u32 frame_owner_rel;      /* owner (3.12+) or is_entry (3.11); unused in 3.10 */
  __u32 owner_cstack;         /* FRAME_OWNED_BY_CSTACK */
  __u32 instr_is_pointer;     /* 1: frame_instr_rel holds a pointer into co_code_adaptive */
  __u32 code_adaptive;        /* PyCodeObject.co_code_adaptive (when instr_is_pointer) */
  __u32 code_window;          /* start of the code window */
  __u32 code_argcount_rel;
  __u32 code_flags_rel;
  __u32 code_firstlineno_rel;
  __u32 frames_contiguous;    /* 1: a thread's frames sit next to each other, callers below (3.11+ data stack) */
  __u32 pad;
};

struct ws_py_proc {
  __u64 runtime;        /* address of _PyRuntime */
  __u64 eval_start[2];  /* _PyEval_EvalFrameDefault and its .cold part, [start, end) */
  __u64 eval_end[2];
  struct ws_py_layout layout;
};

/* Code-object fingerprint: fields that never change after creation. */
static inline __u32 ws_py_fingerprint(__u32 argcount, __u32 flags, __u32 firstlineno) {
  __u32 h = firstlineno * 0x9e3779b1u;
  h ^= (argcount + 1) * 0x85ebca77u;
  h ^= (flags + 7) * 0xc2b2ae3du;
  h ^= h >> 15;
  return h ? h : 1;
}

#ifdef __cplusplus
static_assert(sizeof(struct ws_py_layout) == 88, "ws_py_layout layout");
static_assert(sizeof(struct ws_py_proc) == 128, "ws_py_proc layout");
#else
_Static_assert(sizeof(struct ws_py_layout) == 88, "ws_py_layout layout");
_Static_assert(sizeof(struct ws_py_proc) == 128, "ws_py_proc layout");
#endif

#endif /* WARPSCOPE_BPF_INTF_PYTHON_H_ */
