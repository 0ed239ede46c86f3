// The DWARF CFA program interpreter for x86-64 and AArch64, reduced to what
// the BPF unwinder of bpf/intf/unwind.h can use: the CFA rule, the rule for
// the frame pointer (rbp, DWARF register 6; x29) and the rule for the
// return-address column (16; x30). Other registers' rules are decoded (to
// stay in step) and dropped.
//
// Each row the program produces is classified straight into a
// ws_unwind_entry (ClassifyRules): the interpreter keeps one fixed-size rule
// state plus a bounded remember_state stack, so running it allocates nothing
// beyond the caller's reusable row vector.
//
// Pure functions over caller-owned bytes; safe on any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/unwind/dwarf_reader.h"
#include "bpf/intf/unwind.h"

namespace warpscope {

inline constexpr uint64_t kDwarfRegRbp = 6;
inline constexpr uint64_t kDwarfRegRsp = 7;
inline constexpr uint64_t kDwarfRegRip = 16;  // the return-address column of every x86-64 CIE

// The registers an architecture's rows are made of, by DWARF number, and how
// its return address is found when no rule saves it.
struct CfiArch {
  uint16_t machine;     // ELF e_machine
  uint64_t sp;
  uint64_t fp;
  uint64_t ra;          // the return-address column
  bool ra_in_register;  // no rule for it: still in the link register (AArch64); else the outermost frame
};
inline constexpr CfiArch kCfiX86_64{62 /* EM_X86_64 */, kDwarfRegRsp, kDwarfRegRbp, kDwarfRegRip, false};
inline constexpr CfiArch kCfiAarch64{183 /* EM_AARCH64 */, 31, 29, 30, true};
// The rules of an ELF machine, or nullptr for one the unwinder does not know.
const CfiArch* CfiArchOf(uint16_t machine);
// DW_CFA_remember_state nesting allowed per FDE; deeper programs are rejected.
inline constexpr int kMaxRememberDepth = 16;

struct RegisterRule {
  enum Kind : uint8_t { kUnset, kUndefined, kSameValue, kOffset, kValOffset, kRegister, kExpression, kValExpression };
  Kind kind = kUnset;
  int64_t value = 0;  // the CFA-relative offset (kOffset, kValOffset) or the register (kRegister)
};

struct CfaRule {
  enum Kind : uint8_t { kUnset, kRegisterOffset, kExpression };
  Kind kind = kUnset;
  uint64_t reg = 0;
  int64_t offset = 0;         // kept across an expression, as GCC and readelf do
  int8_t plt_threshold = -1;  // kExpression: N of the binutils PLT expression (`lit N; ge`), -1 otherwise
};

struct FrameRules {
  CfaRule cfa;
  RegisterRule rbp;  // the frame pointer's (x29 on AArch64)
  RegisterRule ra;
};

// Where the BPF side leaves a choice in how rules become rows.
struct RowEncodingOptions {
  // bpf/include/ws_unwind.h applies WS_CFA_PLT with the lazy-PLT threshold 11
  // hardcoded; binutils also emits thresholds 9 (IBT PLT), 10 (IBT+BND) and 5
  // (BND). PLT rows always carry their threshold in cfa_offset. False: only
  // threshold 11 becomes WS_CFA_PLT, others WS_CFA_INVALID (never a wrong
  // CFA). True: every threshold becomes WS_CFA_PLT, for a BPF side that reads
  // the threshold from cfa_offset.
  bool plt_threshold_in_cfa_offset = false;
};

// One row, in ELF virtual addresses; becomes a ws_unwind_entry once the table's
// base is known.
struct UnwindRow {
  uint64_t pc;
  uint16_t cfa_offset;
  uint8_t cfa_type;  // enum ws_cfa_type
  int8_t fp_offset;

  bool SameRule(const UnwindRow& o) const {
    return cfa_type == o.cfa_type && cfa_offset == o.cfa_offset && fp_offset == o.fp_offset;
  }
};

// What a program needs from its CIE.
struct CfaProgramContext {
  const CfiArch* arch = &kCfiX86_64;
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_column = kDwarfRegRip;
  bool signal_frame = false;      // 'S' augmentation
  bool eh_frame = true;           // DW_CFA_set_loc operand: FDE encoding (.eh_frame) or address_size (.debug_frame)
  uint8_t fde_encoding = dwarf::kPeAbsptr;
  uint8_t address_size = 8;
  dwarf::PointerBase pointer_base;
  const FrameRules* initial = nullptr;  // the CIE's rules, for DW_CFA_restore; nullptr inside the CIE itself
};

enum class CfaProgramStatus {
  kOk,
  kMalformed,    // truncated operand, restore_state without remember_state, pc going backwards
  kUnsupported,  // unknown opcode, location ops in a CIE, remember_state deeper than kMaxRememberDepth
};

// Runs a CIE's initial instructions into *rules (which the caller zeroes).
CfaProgramStatus RunCieProgram(dwarf::ByteReader program, const CfaProgramContext& ctx, FrameRules* rules);

// Runs an FDE program over [pc_begin, pc_end), starting from *ctx.initial, and
// appends one classified row per location to *rows: the first at pc_begin,
// strictly increasing, all < pc_end. On failure *rows is truncated back to its
// size at entry.
CfaProgramStatus RunFdeProgram(dwarf::ByteReader program, const CfaProgramContext& ctx, uint64_t pc_begin,
                               uint64_t pc_end, const RowEncodingOptions& options, std::vector<UnwindRow>* rows);

// The row for one rule state. Choices the contract leaves to us:
//  - rbp unset, DW_CFA_undefined or DW_CFA_same_value: fp_offset 0 ("rbp
//    unchanged"; an undefined rbp has no better answer, and readelf shows
//    never-touched registers the same way);
//  - rbp saved at CFA+N with N a non-zero multiple of 8 in s8*8: fp_offset N/8;
//    any other rbp rule (register, expression, val_offset, odd offsets): the
//    caller's rbp is unrecoverable, so WS_CFA_INVALID rather than a walk that
//    continues with a wrong rbp;
//  - x86-64: return address anything but "saved at CFA-8": WS_CFA_INVALID;
//    undefined (or never set): WS_CFA_END;
//  - AArch64 (the return-address rule in cfa_type's high nibble,
//    intf/unwind.h): never set or same value: still in x30 (WS_RA_IN_LR);
//    saved right above a saved x29: WS_RA_FRAME_RECORD; saved at CFA-8k
//    with k in 1..14: rule k+1; undefined: WS_CFA_END; anything else:
//    WS_CFA_INVALID;
//  - CFA register other than sp/fp, offset outside [0, 65535], any
//    expression except x86-64's PLT one: WS_CFA_INVALID.
UnwindRow ClassifyRules(const FrameRules& rules, const CfaProgramContext& ctx, const RowEncodingOptions& options,
                        uint64_t pc);

// N when `expr` is exactly the binutils PLT CFA expression
// breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus — else -1.
int PltExpressionThreshold(const uint8_t* expr, uint64_t size);

}  // namespace warpscope
