/* Kernel <-> user contract of the .eh_frame unwinder (bpf/include/ws_unwind.h).
 *
 * User space turns each executable's CFI (.eh_frame / .debug_frame) into a
 * sorted array of ws_unwind_entry rows ("at pc P and after, until the next
 * row: CFA = reg + offset, return address at CFA-8, saved frame pointer at
 * CFA + 8*fp_offset"). Rows of all binaries live in one array map; a per-binary
 * page index bounds every binary search. Fixed-width types only. x86-64 today:
 * the return address is always at CFA-8 there. */
#ifndef WARPSCOPE_BPF_INTF_UNWIND_H_
#define WARPSCOPE_BPF_INTF_UNWIND_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ws_unwind_entry.cfa_type */
enum ws_cfa_type {
  WS_CFA_SP = 0,      /* CFA = SP + cfa_offset */
  WS_CFA_FP = 1,      /* CFA = FP (rbp) + cfa_offset */
  WS_CFA_PLT = 2,     /* PLT stub: CFA = SP + 8, +8 more when (pc & 15) >= cfa_offset (binutils' PLT
                         expression; the threshold is 11, or 10/9/5 with IBT/BND) */
  WS_CFA_END = 3,     /* the return address is undefined: outermost frame (_start, clone) */
  WS_CFA_SIGNAL = 4,  /* signal trampoline (__restore_rt): registers come from the rt_sigframe at SP */
  WS_CFA_NONE = 5,    /* no CFI covers this pc (gap between FDEs): fall back to frame pointers */
  WS_CFA_INVALID = 6, /* CFI we cannot express (DWARF expressions, huge offsets): stop here */
};

/* cfa_type's low four bits are the enum above; its high four bits are the
 * return address's rule where the architecture needs one (arm64; x86-64's
 * return address is always at CFA - 8 and these bits are 0):
 *   0      still in the link register (x30): a leaf, or a prologue before it
 *          saved x30; only the walk's first frame (or one a signal
 *          interrupted) has it;
 *   1      saved right above the caller's frame pointer (x29 at
 *          CFA + 8*fp_offset, x30 at CFA + 8*fp_offset + 8: the AArch64 frame
 *          record, `stp x29, x30`);
 *   2..15  saved at CFA - 8*(rule - 1). */
#define WS_CFA_TYPE_MASK 0x0f
#define WS_RA_RULE_SHIFT 4
#define WS_RA_IN_LR 0
#define WS_RA_FRAME_RECORD 1

struct ws_unwind_entry {
  __u32 pc;         /* offset of the first pc of this row from the table's base vaddr */
  __u16 cfa_offset; /* bytes added to the CFA register (WS_CFA_SP / WS_CFA_FP) */
  __u8 cfa_type;    /* enum ws_cfa_type, and the return address's rule (above) */
  __s8 fp_offset;   /* 0: rbp unchanged; else the caller's rbp is saved at CFA + 8 * fp_offset */
};

/* Page index: rows covering [page << WS_UNWIND_PAGE_BITS, next page) of one
 * table are entries[first .. first + count), and entries[first] is the row in
 * effect at the page start. */
#define WS_UNWIND_PAGE_BITS 16
#define WS_UNWIND_MAX_SEARCH_STEPS 16 /* count per page must be <= 1 << 16 */

struct ws_unwind_page_key {
  __u32 table_id;
  __u32 page; /* (pc offset from the table base) >> WS_UNWIND_PAGE_BITS */
};

struct ws_unwind_page {
  __u32 first; /* index into the entries array */
  __u32 count;
};

/* One executable mapping of a process, as the BPF unwinder sees it. */
#define WS_TABLE_NONE 0xffffffffu /* the mapping has no table: use frame pointers */
#define WS_MAPPING_ANON 0xfffffffeu /* anonymous executable memory (JIT): stop */

struct ws_exec_mapping {
  __u64 start;      /* first address of the mapping */
  __u64 end;        /* one past the last address */
  __u64 table_base; /* addr - table_base is the row pc offset: the mapping's load bias plus the
                       table's base vaddr (computed mod 2^64) */
  __u32 table_id;   /* WS_TABLE_NONE, WS_MAPPING_ANON or a table id */
  __u32 pad;
};

/* A process's executable mappings, sorted by start, live in the global
 * mappings array at [first, first + count); count <= WS_MAX_PROC_MAPPINGS. */
#define WS_MAX_PROC_MAPPINGS 1024
#define WS_MAPPING_SEARCH_STEPS 11

#define WS_PROC_PYTHON 0x1u /* py_procs holds this process's CPython description */

struct ws_proc_info {
  __u32 first;
  __u32 count;
  __u32 flags; /* WS_PROC_* */
  __u32 pad;
};

#ifdef __cplusplus
static_assert(sizeof(struct ws_unwind_entry) == 8, "ws_unwind_entry layout");
static_assert(sizeof(struct ws_exec_mapping) == 32, "ws_exec_mapping layout");
static_assert(sizeof(struct ws_proc_info) == 16, "ws_proc_info layout");
#else
_Static_assert(sizeof(struct ws_unwind_entry) == 8, "ws_unwind_entry layout");
_Static_assert(sizeof(struct ws_exec_mapping) == 32, "ws_exec_mapping layout");
_Static_assert(sizeof(struct ws_proc_info) == 16, "ws_proc_info layout");
#endif

#endif /* WARPSCOPE_BPF_INTF_UNWIND_H_ */
