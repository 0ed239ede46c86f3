/* CPython frames for the shared unwinder (ws_unwind.h): finds the sampled
 * thread's PyThreadState and its innermost interpreter frame; ws_unwind.h
 * then emits those frames where the native walk meets the evaluation loop.
 *
 * Design: user space publishes, per Python process, a ws_py_proc (the
 * _PyRuntime address, the evaluation loop's address ranges and the version's
 * field offsets) in `py_procs`, and sets WS_PROC_PYTHON in the process's
 * proc_info so other processes pay nothing. The thread state is found without
 * relying on the GIL or on TLS layouts: PyThreadState.thread_id holds
 * pthread_self(), which on x86-64 is the thread pointer (the task's fs base),
 * so the interpreters' thread lists are searched for it once per thread and
 * the answer is cached per tid in `py_threads` (checked on every use, dropped
 * when the thread exits). Threads with no Python state are remembered for
 * WS_PY_NEGATIVE_TTL_NS, so native threads of a Python process cost one lookup. */
#ifndef WARPSCOPE_BPF_WS_PYTHON_H_
#define WARPSCOPE_BPF_WS_PYTHON_H_

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "bpf/intf/python.h"
#include "ws_unwind_arch.h"

#define WS_PY_MAX_INTERPRETERS 8
#define WS_PY_MAX_THREAD_STEPS 1024 /* thread-list steps per search, all interpreters together */
#define WS_PY_BOUNDED_THREAD_STEPS 32 /* the same without bpf_loop */
#define WS_PY_NEGATIVE_TTL_NS 250000000ULL

/* Sized by user space (processes); placeholder here. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ws_py_proc);
} py_procs SEC(".maps");

struct ws_py_thread {
  __u64 tstate;     /* 0: the thread had no Python state at checked_ns */
  __u64 checked_ns;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32); /* tid */
  __type(value, struct ws_py_thread);
} py_threads SEC(".maps");

struct ws_py_search {
  __u64 fsbase;
  __u64 interp;
  __u64 tstate; /* the thread state being looked at; 0: move to the next interpreter */
  __u64 found;
  __u32 interp_next;
  __u32 threads_head;
  __u32 tstate_next;
  __u32 tstate_thread_id;
  __u32 interps;
};

static __always_inline __u64 ws_py_read_ptr(__u64 addr) {
  __u64 value = 0;
  if (addr == 0 || bpf_probe_read_user(&value, sizeof(value), (void *)addr) != 0) return 0;
  return value;
}

/* One step of the search: the next thread state, or the next interpreter's
 * first. Returns 1 when the search is over (found, or no interpreter left). */
static __always_inline int ws_py_search_one(struct ws_py_search *s) {
  if (s->tstate == 0) {
    if (s->interps > 0) s->interp = ws_py_read_ptr(s->interp + s->interp_next);
    if (s->interp == 0 || s->interps >= WS_PY_MAX_INTERPRETERS) return 1;
    s->interps++;
    s->tstate = ws_py_read_ptr(s->interp + s->threads_head);
    return 0;
  }
  if (ws_py_read_ptr(s->tstate + s->tstate_thread_id) == s->fsbase) {
    s->found = s->tstate;
    return 1;
  }
  s->tstate = ws_py_read_ptr(s->tstate + s->tstate_next);
  return 0;
}

/* A search in progress, per CPU and per walk slot (ws_unwind.h's slots: a
 * walk interrupted on its CPU has its own). Kept in a map, not on the BPF
 * stack: a verifier before 6.7 checks a bpf_loop callback once, from the
 * state at the call, and would take the fields the callback changes for the
 * constants they start as (`found` stays 0: the answer is pruned away). Map
 * memory is never tracked. */
#define WS_PY_SEARCH_SLOTS 2
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, WS_PY_SEARCH_SLOTS);
  __type(key, __u32);
  __type(value, struct ws_py_search);
} py_search SEC(".maps");

/* bpf_loop's step: `data` holds the slot. */
static long ws_py_search_step(__u32 index, void *data) {
  struct ws_py_search *s = bpf_map_lookup_elem(&py_search, data);
  return s ? ws_py_search_one(s) : 1;
}

/* The current thread's PyThreadState, or 0 when it has none. `bounded`: no
 * bpf_loop (the tail-call driver's kernels lack it): at most
 * WS_PY_BOUNDED_THREAD_STEPS steps, and a search cut short is not remembered
 * as "no state" (the thread is searched again at its next sample). */
static __always_inline __u64 ws_py_thread_state(const struct ws_py_proc *py, bool bounded, __u32 slot) {
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  const __u64 fsbase = ws_arch_thread_pointer(task);
  if (fsbase == 0) return 0;
  struct ws_py_thread *cached = bpf_map_lookup_elem(&py_threads, &tid);
  if (cached && cached->tstate != 0 && ws_py_read_ptr(cached->tstate + py->layout.tstate_thread_id) == fsbase) {
    return cached->tstate; /* the common case: no clock read, one user read */
  }
  const __u64 now = bpf_ktime_get_ns();
  if (cached && cached->tstate == 0 && now - cached->checked_ns < WS_PY_NEGATIVE_TTL_NS) return 0;
  struct ws_py_search *s = bpf_map_lookup_elem(&py_search, &slot);
  if (!s) return 0;
  s->fsbase = fsbase;
  s->interp = ws_py_read_ptr(py->runtime + py->layout.runtime_interp_head);
  s->tstate = 0;
  s->found = 0;
  s->interp_next = py->layout.interp_next;
  s->threads_head = py->layout.interp_threads_head;
  s->tstate_next = py->layout.tstate_next;
  s->tstate_thread_id = py->layout.tstate_thread_id;
  s->interps = 0;
  if (s->interp != 0) {
    if (bounded) {
      int over = 0;
      for (int i = 0; i < WS_PY_BOUNDED_THREAD_STEPS; i++) {
        if (ws_py_search_one(s)) {
          over = 1;
          break;
        }
      }
      if (!over) return 0;
    } else {
      bpf_loop(WS_PY_MAX_THREAD_STEPS, ws_py_search_step, &slot, 0);
    }
  }
  const __u64 found = s->found;
  struct ws_py_thread entry = {.tstate = found, .checked_ns = now};
  bpf_map_update_elem(&py_threads, &tid, &entry, BPF_ANY);
  return found;
}

/* The innermost interpreter frame of the current thread, or 0. */
static __always_inline __u64 ws_py_current_frame(const struct ws_py_proc *py, bool bounded, __u32 slot) {
  const __u64 tstate = ws_py_thread_state(py, bounded, slot);
  if (tstate == 0) return 0;
  __u64 frame = ws_py_read_ptr(tstate + py->layout.tstate_frame);
  if (py->layout.cframe_current_frame >= 0) frame = ws_py_read_ptr(frame + (__u32)py->layout.cframe_current_frame);
  return frame;
}

/* For the exit hook: a thread that exits takes its cached state with it. */
static __always_inline void ws_py_forget_thread(__u32 tid) { bpf_map_delete_elem(&py_threads, &tid); }

#endif /* WARPSCOPE_BPF_WS_PYTHON_H_ */
