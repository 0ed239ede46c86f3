/* The .eh_frame unwinder, shared by every BPF stack source (CPU samples now,
 * uprobe-captured CUDA launch stacks later): include this header, call
 * ws_unwind_user() with the user registers, get frames leaf first.
 *
 * Design: user space (agent/unwind) turns each binary's CFI into sorted
 * ws_unwind_entry rows in `unwind_entries`, indexed per 64 KiB page in
 * `unwind_pages`, and publishes each process's executable mappings as a sorted
 * slice of `exec_mappings` found through `proc_info`. One frame step: find the
 * mapping (binary search, <= WS_MAPPING_SEARCH_STEPS), find the page and the
 * row (binary search, <= WS_UNWIND_MAX_SEARCH_STEPS), compute the CFA, read
 * the return address at CFA-8 and the saved rbp if the row says so. Binaries
 * without CFI fall back to frame pointers; processes user space has not
 * described yet use the kernel's frame-pointer walk.
 *
 * A walk is split the same way for every caller (CPU samples, off-CPU time,
 * uprobe stacks): the caller's begin program fills a per-CPU ws_unwind_state
 * (ws_unwind_begin) and tail-calls slot WS_UNWIND_PROG_WALK of its program
 * array; the walk program steps frames (ws_unwind_one, one frame or one
 * interpreter frame per step) and then runs the caller's finish part, which
 * reads the stack from the state. User space puts one of two walk programs in
 * that slot, chosen by probing the kernel (agent/unwind/bpf_features.h):
 *   - the bpf_loop driver (5.17+): every step in one bpf_loop, so the
 *     verifier checks one step, not 258 (ws_unwind_walk_loop);
 *   - the tail-call driver (5.10+): WS_UNWIND_TAIL_STEPS steps per program,
 *     which then tail-calls itself with the state kept in the map, up to the
 *     kernel's 32 tail calls (ws_unwind_walk_tail).
 * The program not chosen is never loaded: a 5.10 verifier refuses a bpf_loop
 * callback even where it is never called.
 *
 * Python: for a process flagged WS_PROC_PYTHON, the walk starts from the
 * thread's innermost interpreter frame (ws_python.h). When a native frame's
 * pc is in the evaluation loop, the interpreter frames that call of the loop
 * runs are emitted in its place (two slots each, bpf/intf/python.h), so
 * native -> Python -> native (C extension) -> Python comes out in true order.
 * Interpreter frames left when the native walk stops early are appended.
 *
 * Pending uretprobes: while a function with a uretprobe runs (the agent's
 * autograd probe on THPEngine_run_backward, docs/design/gpu_time.md), the
 * kernel has replaced its return address on the stack with the uprobe
 * trampoline's. A return address equal to the trampoline is the original of
 * the task's next pending return instance (innermost first), as the kernel's
 * own stack walker fixes it; otherwise the walk would stop there.
 *
 * The maps are defined here, so every BPF object that includes this header
 * has its own copy; the agent creates them once and shares them between
 * objects with bpf_map__reuse_fd. */
#ifndef WARPSCOPE_BPF_WS_UNWIND_H_
#define WARPSCOPE_BPF_WS_UNWIND_H_

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "bpf/intf/cpu_sampler.h"
#include "bpf/intf/unwind.h"
#include "ws_python.h"
#include "ws_unwind_arch.h" /* the architecture's rules: bpf/include/<arch>/ */

#define WS_PY_STACK_WINDOW 1024 /* a power of two */

/* Sizes are set by user space (agent/unwind/unwind_map_sizing.h); placeholders here. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ws_unwind_entry);
} unwind_entries SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, struct ws_unwind_page_key);
  __type(value, struct ws_unwind_page);
} unwind_pages SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ws_exec_mapping);
} exec_mappings SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct ws_proc_info);
} proc_info SEC(".maps");

/* Steps a walk may take: native frames, two slots per Python frame, one step
 * per shim frame. */
#define WS_UNWIND_MAX_STEPS (2 * WS_MAX_STACK_FRAMES + 2)
/* The tail-call driver's steps per program: 32 programs (the kernel's tail
 * call limit, the begin program's own call included) cover the same
 * WS_UNWIND_MAX_STEPS as one bpf_loop. */
#define WS_UNWIND_TAIL_STEPS 9
/* The slot of a caller's program array that holds the walk program. */
#define WS_UNWIND_PROG_WALK 0
/* Walks in progress per CPU: one per caller that can interrupt another on the
 * same CPU (a CPU sample arrives in the middle of an off-CPU walk). */
#define WS_UNWIND_SLOTS WS_PY_SEARCH_SLOTS

/* Consecutive frames are often in the same mapping and the same 64 KiB page:
 * the last ones found are kept to skip their searches. Page entries are keyed
 * by global table ids, and the mapping by pid. */
struct ws_unwind_cache {
  __u64 start;
  __u64 end; /* 0: no mapping cached */
  __u64 table_base;
  __u32 table_id;
  __u32 page_table;
  __u32 page;
  __u32 page_first;
  __u32 page_count; /* 0: no page cached */
  __u32 pid;        /* whose mapping is cached */
  __u32 py_pid;     /* whose ws_py_proc is in `py` */
  struct ws_py_proc py;
  /* Interpreter frames of 3.11+ sit next to each other on the thread's data
   * stack, callers below callees: one read of WS_PY_STACK_WINDOW bytes ending
   * at a frame usually holds its callers too. [win_lo, win_hi) is what the
   * buffer holds (reset per walk), stack_buf[a - win_base] the byte at a. */
  __u64 win_base;
  __u64 win_lo;
  __u64 win_hi;
  /* Sized so that an offset masked to the window's power of two plus a field
   * offset masked to 127 stays inside. */
  __u8 stack_buf[WS_PY_STACK_WINDOW + 136];
  __u8 code_buf[40];
  /* Pending uretprobes of the walked task (set per walk). */
  __u64 tramp;        /* the uretprobe trampoline's address; 0: none pending */
  __u64 ret_instance; /* the next pending return instance (struct return_instance *) */
};

/* Where the walk is: native frames, the interpreter frames of one call of the
 * evaluation loop, or (the native walk over) the remaining interpreter frames. */
enum ws_walk_mode { WS_WALK_NATIVE = 0, WS_WALK_PY_CALL = 1, WS_WALK_PY_TAIL = 2 };

struct ws_unwind_walk {
  __u64 pc;
  __u64 sp;
  __u64 bp;
  __u64 lr;           /* the link register (arm64), where a row says the return address still is */
  __u64 py_frame; /* next interpreter frame to emit; 0: none left */
  __u32 pid;
  __u32 proc_first;   /* the process's mappings: exec_mappings[proc_first, +proc_count) */
  __u32 proc_count;
  __u32 end;          /* WS_END_* once the walk stops */
  __u32 mode;         /* enum ws_walk_mode */
  __u32 native_count; /* native frames stepped over so far */
  __u32 pc_emitted;   /* the current native frame is already represented (by its Python frames) */
  __u32 steps;        /* steps taken */
  __u32 python;       /* interleave interpreter frames (the process is a described Python process) */
  __u32 started;      /* the first walk program has looked up the interpreter frames */
  __u32 lr_valid;     /* lr holds the current frame's value: the walk's first frame, or one a signal interrupted */
};

/* One walk in progress: where it is, its caches, the stack so far, and what
 * the caller's finish part needs from its begin part (`caller`, its own
 * layout). Kept in a map, not on the BPF stack: it lives across tail calls,
 * and values read from a map stay imprecise for the verifier, so the steps'
 * states converge. */
struct ws_unwind_state {
  struct ws_unwind_walk w;
  struct ws_unwind_cache cache;
  struct ws_stack stack;
  __u64 caller[6];
  __u32 described; /* 0: user space has not described the process: the caller walks frame pointers */
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, WS_UNWIND_SLOTS);
  __type(key, __u32);
  __type(value, struct ws_unwind_state);
} unwind_state SEC(".maps");

static __always_inline struct ws_unwind_state *ws_unwind_state_of(__u32 slot) {
  return bpf_map_lookup_elem(&unwind_state, &slot);
}

static __always_inline const struct ws_exec_mapping *ws_find_mapping(__u32 first, __u32 count, __u64 pc) {
  __u32 lo = first, n = count;
  if (n == 0 || n > WS_MAX_PROC_MAPPINGS) return NULL;
  /* Invariant: the answer, if any, is in [lo, lo + n). Find the last mapping with start <= pc. */
  for (int i = 0; i < WS_MAPPING_SEARCH_STEPS; i++) {
    if (n <= 1) break;
    __u32 half = n / 2;
    __u32 mid = lo + half;
    const struct ws_exec_mapping *m = bpf_map_lookup_elem(&exec_mappings, &mid);
    if (!m) return NULL;
    if (m->start <= pc) {
      lo = mid;
      n -= half;
    } else {
      n = half;
    }
  }
  const struct ws_exec_mapping *m = bpf_map_lookup_elem(&exec_mappings, &lo);
  if (!m || pc < m->start || pc >= m->end) return NULL;
  return m;
}

static __always_inline const struct ws_unwind_entry *ws_find_row(struct ws_unwind_cache *cache, __u32 table_id,
                                                                 __u64 offset) {
  if (offset >> 32) return NULL;
  const __u32 page_no = (__u32)(offset >> WS_UNWIND_PAGE_BITS);
  if (cache->page_count == 0 || cache->page_table != table_id || cache->page != page_no) {
    struct ws_unwind_page_key key = {.table_id = table_id, .page = page_no};
    const struct ws_unwind_page *page = bpf_map_lookup_elem(&unwind_pages, &key);
    if (!page) return NULL;
    cache->page_table = table_id;
    cache->page = page_no;
    cache->page_first = page->first;
    cache->page_count = page->count;
  }
  __u32 lo = cache->page_first, n = cache->page_count;
  if (n == 0) return NULL;
  const __u32 pc = (__u32)offset;
  for (int i = 0; i < WS_UNWIND_MAX_SEARCH_STEPS + 1; i++) {
    if (n <= 1) break;
    __u32 half = n / 2;
    __u32 mid = lo + half;
    const struct ws_unwind_entry *e = bpf_map_lookup_elem(&unwind_entries, &mid);
    if (!e) return NULL;
    if (e->pc <= pc) {
      lo = mid;
      n -= half;
    } else {
      n = half;
    }
  }
  const struct ws_unwind_entry *e = bpf_map_lookup_elem(&unwind_entries, &lo);
  if (!e || e->pc > pc) return NULL;
  return e;
}

/* Ends the native walk with `reason`; Python frames still pending are then
 * appended by the following steps. Returns 1 to stop, 0 to go on. */
static __always_inline long ws_native_stop(struct ws_unwind_walk *c, __u32 reason) {
  c->end = reason;
  if (c->py_frame != 0 && reason != WS_END_TRUNCATED) {
    c->mode = WS_WALK_PY_TAIL;
    return 0;
  }
  return 1;
}

static __always_inline __u64 ws_buf_u64(const __u8 *buf, __u32 rel) { return *(const __u64 *)(buf + (rel & 127)); }
static __always_inline __u32 ws_buf_u32(const __u8 *buf, __u32 rel) { return *(const __u32 *)(buf + (rel & 127)); }
static __always_inline __u32 ws_code_u32(const __u8 *buf, __u32 rel) { return *(const __u32 *)(buf + (rel & 31)); }

/* Emits the interpreter frame at c->py_frame (unless it is a call's shim
 * frame) and moves to its caller. Returns 1 when that frame was the first of
 * its evaluation-loop call, 0 when the call has more frames, -1 when the
 * frame could not be read or the stack is full (no Python frames are left). */
static __always_inline int ws_py_emit(struct ws_unwind_state *st) {
  struct ws_unwind_walk *c = &st->w;
  struct ws_unwind_cache *cache = &st->cache;
  const struct ws_py_layout *l = &cache->py.layout;
  const __u64 at = c->py_frame + l->frame_window;
  if (cache->py_pid != c->pid) {
    c->py_frame = 0;
    return -1;
  }
  if (at < cache->win_lo || at + WS_PY_FRAME_WINDOW > cache->win_hi) {
    /* Not buffered: read the window that ends with this frame, or the frame
     * alone (3.10's heap frames; near an unmapped page: the start of a stack
     * chunk, a frame on the C stack). */
    const __u64 base = at + WS_PY_FRAME_WINDOW - WS_PY_STACK_WINDOW;
    cache->win_base = base;
    if (l->frames_contiguous && bpf_probe_read_user(cache->stack_buf, WS_PY_STACK_WINDOW, (void *)base) == 0) {
      cache->win_lo = base;
    } else if (bpf_probe_read_user(cache->stack_buf + (WS_PY_STACK_WINDOW - WS_PY_FRAME_WINDOW), WS_PY_FRAME_WINDOW,
                                   (void *)at) == 0) {
      cache->win_lo = at;
    } else {
      cache->win_lo = cache->win_hi = 0;
      c->py_frame = 0;
      return -1;
    }
    cache->win_hi = at + WS_PY_FRAME_WINDOW;
  }
  const __u8 *fb = cache->stack_buf + ((at - cache->win_base) & (WS_PY_STACK_WINDOW - 1));
  const __u64 code = ws_buf_u64(fb, l->frame_code_rel);
  c->py_frame = ws_buf_u64(fb, l->frame_previous_rel);
  int first_of_call = 0;
  const __u8 marker = fb[l->frame_owner_rel & 127];
  if (l->walk == WS_PY_WALK_ONE_PER_CALL) {
    first_of_call = 1;
  } else if (l->walk == WS_PY_WALK_IS_ENTRY) {
    first_of_call = marker != 0;
  } else if (marker == l->owner_cstack) {
    return 1; /* the shim frame a call of the loop pushes first: not a Python function */
  }
  if (code == 0) return first_of_call;
  __u32 index = 0;
  if (l->instr_is_pointer) {
    const __s64 delta = (__s64)(ws_buf_u64(fb, l->frame_instr_rel) - (code + l->code_adaptive));
    if (delta > 0 && delta < 0x100000000LL) index = (__u32)((__u64)delta >> 1);
  } else {
    const __s32 lasti = (__s32)ws_buf_u32(fb, l->frame_instr_rel);
    if (lasti > 0) index = (__u32)lasti;
  }
  __u32 fingerprint = 0;
  if (bpf_probe_read_user(cache->code_buf, WS_PY_CODE_WINDOW, (void *)(code + l->code_window)) == 0) {
    fingerprint = ws_py_fingerprint(ws_code_u32(cache->code_buf, l->code_argcount_rel),
                                    ws_code_u32(cache->code_buf, l->code_flags_rel),
                                    ws_code_u32(cache->code_buf, l->code_firstlineno_rel));
  }
  struct ws_stack *stack = &st->stack;
  const __u32 len = stack->len;
  if (len >= WS_MAX_STACK_FRAMES - 1) {
    c->py_frame = 0;
    c->end = WS_END_TRUNCATED;
    return -1;
  }
  stack->frames[len] = WS_PY_FRAME_TAG | (code & WS_PY_ADDR_MASK);
  stack->frames[len + 1] = ((__u64)fingerprint << 32) | index;
  stack->len = len + 2;
  stack->flags |= WS_STACK_PYTHON;
  return first_of_call;
}

static __always_inline int ws_in_eval_loop(const struct ws_unwind_cache *cache, __u64 pc) {
  return (pc >= cache->py.eval_start[0] && pc < cache->py.eval_end[0]) ||
         (pc >= cache->py.eval_start[1] && pc < cache->py.eval_end[1]);
}

/* Frame-pointer step (the architecture's rule). */
static __always_inline int ws_fp_step(struct ws_unwind_walk *c) {
  c->lr_valid = 0;
  return ws_arch_fp_step(&c->pc, &c->sp, &c->bp);
}

/* One step: a native frame (record pc, then compute the caller's registers)
 * or one interpreter frame. Returns 1 to stop. */
static __always_inline long ws_unwind_one(struct ws_unwind_state *st) {
  struct ws_unwind_walk *c = &st->w;
  struct ws_unwind_cache *cache = &st->cache;
  struct ws_stack *stack = &st->stack;
  if (c->mode == WS_WALK_PY_TAIL) {
    if (c->py_frame == 0) return 1;
    stack->flags |= WS_STACK_PY_TAIL;
    return ws_py_emit(st) < 0 ? 1 : 0;
  }
  if (c->mode == WS_WALK_PY_CALL) {
    const int r = ws_py_emit(st);
    if (r != 0 || c->py_frame == 0) {
      if (r < 0 && c->end == WS_END_TRUNCATED) return 1;
      c->mode = WS_WALK_NATIVE; /* next: the evaluation loop's own caller */
    }
    return 0;
  }

  /* Return addresses point after the call; look up the call instruction's row. */
  const __u64 lookup = c->native_count > 0 ? c->pc - 1 : c->pc;
  if (!c->pc_emitted) {
    if (c->py_frame != 0 && ws_in_eval_loop(cache, lookup)) {
      c->pc_emitted = 1;
      c->mode = WS_WALK_PY_CALL;
      return 0;
    }
    __u32 len = stack->len;
    if (len >= WS_MAX_STACK_FRAMES) {
      c->end = WS_END_TRUNCATED;
      return 1;
    }
    stack->frames[len] = c->pc;
    stack->len = len + 1;
  }
  c->pc_emitted = 0;
  c->native_count++;
  if (cache->end == 0 || cache->pid != c->pid || lookup < cache->start || lookup >= cache->end) {
    const struct ws_exec_mapping *m = ws_find_mapping(c->proc_first, c->proc_count, lookup);
    if (!m) {
      return ws_native_stop(c, WS_END_NO_MAPPING);
    }
    cache->start = m->start;
    cache->end = m->end;
    cache->table_base = m->table_base;
    cache->table_id = m->table_id;
    cache->pid = c->pid;
  }
  const __u32 table_id = cache->table_id;
  if (table_id == WS_MAPPING_ANON) {
    return ws_native_stop(c, WS_END_ANON);
  }
  __u8 type = WS_CFA_NONE;
  __u8 ra_rule = 0;
  __u16 cfa_offset = 0;
  __s8 fp_offset = 0;
  if (table_id != WS_TABLE_NONE) {
    const struct ws_unwind_entry *e = ws_find_row(cache, table_id, lookup - cache->table_base);
    if (e) {
      type = e->cfa_type & WS_CFA_TYPE_MASK;
      ra_rule = e->cfa_type >> WS_RA_RULE_SHIFT;
      cfa_offset = e->cfa_offset;
      fp_offset = e->fp_offset;
    }
  }
  __u64 cfa;
  switch (type) {
    case WS_CFA_SP: cfa = c->sp + cfa_offset; break;
    case WS_CFA_FP: cfa = c->bp + cfa_offset; break;
    case WS_CFA_PLT: cfa = ws_arch_plt_cfa(c->pc, c->sp, cfa_offset); break;
    case WS_CFA_END: return ws_native_stop(c, WS_END_ROOT);
    case WS_CFA_SIGNAL: {
      /* The signal frame holds the interrupted registers. */
      struct ws_user_regs r;
      if (ws_arch_sigframe(c->sp, &r) != 0) return ws_native_stop(c, WS_END_READ_ERROR);
      c->pc = r.pc;
      c->sp = r.sp;
      c->bp = r.fp;
      c->lr = r.lr;
      c->lr_valid = 1; /* the interrupted frame may be a leaf */
      return 0;
    }
    case WS_CFA_NONE:
      if (ws_fp_step(c) != 0) {
        return ws_native_stop(c, WS_END_READ_ERROR);
      }
      goto next;
    default: return ws_native_stop(c, WS_END_INVALID_RULE);
  }
  {
    __u64 ra;
    const int got = ws_arch_return_address(cfa, fp_offset, ra_rule, c->lr, c->lr_valid, &ra);
    if (got != 0) return ws_native_stop(c, got == -2 ? WS_END_INVALID_RULE : WS_END_READ_ERROR);
    c->lr_valid = 0;
    if (fp_offset != 0) {
      __u64 bp;
      if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)fp_offset * 8)) != 0) {
        return ws_native_stop(c, WS_END_READ_ERROR);
      }
      c->bp = bp;
    }
    c->sp = cfa;
    c->pc = ra;
  }
next:
  if (cache->ret_instance != 0 && c->pc == cache->tramp) {
    const struct return_instance *ri = (const struct return_instance *)cache->ret_instance;
    c->pc = BPF_CORE_READ(ri, orig_ret_vaddr);
    cache->ret_instance = (__u64)BPF_CORE_READ(ri, next);
  }
  if (c->pc == 0) return ws_native_stop(c, WS_END_ROOT); /* a zero return address ends the chain (thread entry points) */
  return 0;
}

/* The bpf_loop driver's step: `data` holds the state's slot. */
static long ws_unwind_loop_step(__u32 index, void *data) {
  struct ws_unwind_state *st = ws_unwind_state_of(*(__u32 *)data);
  if (!st) return 1;
  return ws_unwind_one(st);
}

/* A caller's begin part: prepares the walk of the current task's user stack
 * from its user-mode registers (ws_user_regs: ws_arch_user_regs of the
 * task's saved registers, the uprobe's ctx or sys_exit's regs; or a perf
 * sample's own when it hit user mode). `python`: walk
 * interpreter frames of processes flagged WS_PROC_PYTHON. Returns 1 when the
 * process has no unwind description yet (st->described is 0: the caller then
 * uses the kernel's frame-pointer walk instead of the walk program), else 0. */
static __always_inline int ws_unwind_begin(struct ws_unwind_state *st, const struct ws_user_regs *regs, __u32 pid,
                                           bool python) {
  st->described = 0;
  st->stack.len = 0;
  st->stack.flags = 0;
  const struct ws_proc_info *proc = bpf_map_lookup_elem(&proc_info, &pid);
  if (!proc) return 1;
  struct ws_unwind_walk *c = &st->w;
  c->pc = regs->pc;
  c->sp = regs->sp;
  c->bp = regs->fp;
  c->lr = regs->lr;
  c->lr_valid = 1;
  c->py_frame = 0;
  c->pid = pid;
  c->proc_first = proc->first;
  c->proc_count = proc->count;
  c->end = WS_END_TRUNCATED;
  c->mode = WS_WALK_NATIVE;
  c->native_count = 0;
  c->pc_emitted = 0;
  c->steps = 0;
  c->python = python && (proc->flags & WS_PROC_PYTHON);
  c->started = 0;
  struct ws_unwind_cache *cache = &st->cache;
  cache->end = 0; /* the cache is per walk: another process's mappings differ */
  cache->page_count = 0;
  cache->py_pid = 0;
  cache->win_lo = cache->win_hi = 0; /* memory changes between samples */
  cache->ret_instance = 0;
  cache->tramp = 0;
  if (bpf_core_field_exists(struct task_struct, utask)) { /* a kernel without uprobes has no return instances */
    struct task_struct *task = (struct task_struct *)bpf_get_current_task();
    const struct uprobe_task *utask = BPF_CORE_READ(task, utask);
    cache->ret_instance = utask ? (__u64)BPF_CORE_READ(utask, return_instances) : 0;
    if (cache->ret_instance != 0) cache->tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
  }
  st->described = 1;
  return 0;
}

/* The walk program's first step: the thread's innermost interpreter frame.
 * `bounded`: without bpf_loop (ws_python.h). */
static __always_inline void ws_unwind_start(struct ws_unwind_state *st, bool bounded, __u32 slot) {
  st->w.started = 1;
  if (!st->w.python) return;
  const __u32 pid = st->w.pid;
  const struct ws_py_proc *py = bpf_map_lookup_elem(&py_procs, &pid);
  if (!py) return;
  st->cache.py = *py;
  st->cache.py_pid = pid;
  st->w.py_frame = ws_py_current_frame(py, bounded, slot);
}

/* The end of a walk: the WS_END_* reason into the stack's flags. */
static __always_inline void ws_unwind_finish(struct ws_unwind_state *st) {
  st->stack.flags = ws_stack_set_end(st->stack.flags, st->w.end);
  if (st->w.end == WS_END_TRUNCATED) st->stack.flags |= WS_STACK_TRUNCATED;
}

/* The bpf_loop driver: the whole walk of the state in `slot`. */
static __always_inline void ws_unwind_walk_loop(struct ws_unwind_state *st, __u32 slot) {
  ws_unwind_start(st, false, slot);
  bpf_loop(WS_UNWIND_MAX_STEPS, ws_unwind_loop_step, &slot, 0);
  ws_unwind_finish(st);
}

/* The tail-call driver: WS_UNWIND_TAIL_STEPS steps, then the next program of
 * the chain (`progs`' walk slot: this same program). Returns only when the
 * walk is over (1), or when the kernel refused the next tail call (the chain
 * is at its limit: the stack is cut there, counted as truncated). */
static __always_inline void ws_unwind_walk_tail(void *ctx, struct ws_unwind_state *st, __u32 slot, void *progs) {
  if (!st->w.started) ws_unwind_start(st, true, slot);
  for (int i = 0; i < WS_UNWIND_TAIL_STEPS; i++) {
    if (st->w.steps >= WS_UNWIND_MAX_STEPS || ws_unwind_one(st)) {
      ws_unwind_finish(st);
      return;
    }
    st->w.steps++;
  }
  bpf_tail_call(ctx, progs, WS_UNWIND_PROG_WALK);
  st->w.end = WS_END_TRUNCATED;
  ws_unwind_finish(st);
}

#endif /* WARPSCOPE_BPF_WS_UNWIND_H_ */
