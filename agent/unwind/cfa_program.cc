#include "agent/unwind/cfa_program.h"

#include <limits>

namespace warpscope {
namespace {

using dwarf::ByteReader;

// DW_CFA_* opcodes. The top two bits select the three compact forms.
enum : uint8_t {
  kCfaAdvanceLoc = 0x40,
  kCfaOffset = 0x80,
  kCfaRestore = 0xc0,
  kCfaNop = 0x00,
  kCfaSetLoc = 0x01,
  kCfaAdvanceLoc1 = 0x02,
  kCfaAdvanceLoc2 = 0x03,
  kCfaAdvanceLoc4 = 0x04,
  kCfaOffsetExtended = 0x05,
  kCfaRestoreExtended = 0x06,
  kCfaUndefined = 0x07,
  kCfaSameValue = 0x08,
  kCfaRegister = 0x09,
  kCfaRememberState = 0x0a,
  kCfaRestoreState = 0x0b,
  kCfaDefCfa = 0x0c,
  kCfaDefCfaRegister = 0x0d,
  kCfaDefCfaOffset = 0x0e,
  kCfaDefCfaExpression = 0x0f,
  kCfaExpression = 0x10,
  kCfaOffsetExtendedSf = 0x11,
  kCfaDefCfaSf = 0x12,
  kCfaDefCfaOffsetSf = 0x13,
  kCfaValOffset = 0x14,
  kCfaValOffsetSf = 0x15,
  kCfaValExpression = 0x16,
  kCfaMipsAdvanceLoc8 = 0x1d,
  kCfaGnuWindowSave = 0x2d,
  kCfaGnuArgsSize = 0x2e,
  kCfaGnuNegativeOffsetExtended = 0x2f,
};

constexpr CfaProgramStatus kOk = CfaProgramStatus::kOk;

// DWARF arithmetic on untrusted operands wraps instead of overflowing (UB);
// absurd results are classified as WS_CFA_INVALID later.
int64_t Factored(uint64_t value, int64_t factor) {
  return static_cast<int64_t>(value * static_cast<uint64_t>(factor));
}
int64_t Factored(int64_t value, int64_t factor) { return Factored(static_cast<uint64_t>(value), factor); }

// Runs one program. Rows are emitted only in FDE mode (rows != nullptr).
class Interpreter {
 public:
  Interpreter(const CfaProgramContext& ctx, const RowEncodingOptions& options, FrameRules* rules,
              std::vector<UnwindRow>* rows, uint64_t pc_begin, uint64_t pc_end)
      : ctx_(ctx), options_(options), rules_(rules), rows_(rows), loc_(pc_begin), pc_end_(pc_end) {
    if (rows_ != nullptr) first_row_ = rows_->size();
  }

  CfaProgramStatus Run(ByteReader r) {
    while (!r.at_end()) {
      const uint8_t op = r.U8();
      CfaProgramStatus status = Step(op, &r);
      if (status != CfaProgramStatus::kOk) return status;
      if (!r.ok()) return CfaProgramStatus::kMalformed;
      if (done_) return CfaProgramStatus::kOk;
    }
    if (rows_ != nullptr && loc_ < pc_end_) Emit();
    return CfaProgramStatus::kOk;
  }

 private:
  RegisterRule* RuleFor(uint64_t reg) {
    if (reg == ctx_.ra_column) return &rules_->ra;
    if (reg == ctx_.arch->fp) return &rules_->rbp;
    return nullptr;
  }
  void SetRule(uint64_t reg, RegisterRule::Kind kind, int64_t value) {
    if (RegisterRule* rule = RuleFor(reg)) *rule = RegisterRule{kind, value};
  }
  void Restore(uint64_t reg) {
    RegisterRule* rule = RuleFor(reg);
    if (rule == nullptr) return;
    if (ctx_.initial == nullptr) {
      *rule = RegisterRule{};
    } else {
      *rule = reg == ctx_.ra_column ? ctx_.initial->ra : ctx_.initial->rbp;
    }
  }

  void Emit() {
    const UnwindRow row = ClassifyRules(*rules_, ctx_, options_, loc_);
    if (rows_->size() > first_row_ && rows_->back().pc == loc_) {
      rows_->back() = row;  // several rule changes at one location: the last state wins
    } else {
      rows_->push_back(row);
    }
  }

  // A location op: the current state becomes the row at the old location.
  CfaProgramStatus AdvanceTo(uint64_t new_loc) {
    if (rows_ == nullptr) return CfaProgramStatus::kUnsupported;  // location ops in a CIE
    if (new_loc < loc_) return CfaProgramStatus::kMalformed;
    if (loc_ < pc_end_) Emit();
    loc_ = new_loc;
    if (loc_ >= pc_end_) done_ = true;  // later ops describe pcs outside the FDE
    return CfaProgramStatus::kOk;
  }
  CfaProgramStatus AdvanceBy(uint64_t delta) {
    uint64_t bytes = 0;
    uint64_t new_loc = 0;
    if (__builtin_mul_overflow(delta, ctx_.code_align, &bytes) || __builtin_add_overflow(loc_, bytes, &new_loc)) {
      return CfaProgramStatus::kMalformed;
    }
    return AdvanceTo(new_loc);
  }

  void DefineCfaExpression(ByteReader* r) {
    const uint64_t size = r->Uleb();
    const uint8_t* expr = r->pos();
    r->Skip(size);
    if (!r->ok()) return;
    rules_->cfa.kind = CfaRule::kExpression;
    rules_->cfa.plt_threshold = static_cast<int8_t>(PltExpressionThreshold(expr, size));
  }
  void DefineCfa(uint64_t reg, int64_t offset) {
    rules_->cfa.kind = CfaRule::kRegisterOffset;
    rules_->cfa.reg = reg;
    rules_->cfa.offset = offset;
  }

  CfaProgramStatus Step(uint8_t op, ByteReader* r) {
    switch (op & 0xc0) {
      case kCfaAdvanceLoc: return AdvanceBy(op & 0x3f);
      case kCfaOffset: SetRule(op & 0x3f, RegisterRule::kOffset, Factored(r->Uleb(), ctx_.data_align)); return kOk;
      case kCfaRestore: Restore(op & 0x3f); return kOk;
      default: break;
    }
    switch (op) {
      case kCfaNop: return kOk;
      case kCfaSetLoc: {
        uint64_t new_loc = 0;
        if (ctx_.eh_frame) {
          if (dwarf::ReadEncodedPointer(r, ctx_.fde_encoding, ctx_.pointer_base, &new_loc) !=
              dwarf::PointerStatus::kOk) {
            return CfaProgramStatus::kMalformed;
          }
        } else {
          new_loc = ctx_.address_size == 4 ? r->U32() : r->U64();
        }
        if (!r->ok()) return CfaProgramStatus::kMalformed;
        return AdvanceTo(new_loc);
      }
      case kCfaAdvanceLoc1: return AdvanceBy(r->U8());
      case kCfaAdvanceLoc2: return AdvanceBy(r->U16());
      case kCfaAdvanceLoc4: return AdvanceBy(r->U32());
      case kCfaMipsAdvanceLoc8: return AdvanceBy(r->U64());
      case kCfaOffsetExtended: {
        const uint64_t reg = r->Uleb();
        SetRule(reg, RegisterRule::kOffset, Factored(r->Uleb(), ctx_.data_align));
        return kOk;
      }
      case kCfaOffsetExtendedSf: {
        const uint64_t reg = r->Uleb();
        SetRule(reg, RegisterRule::kOffset, Factored(r->Sleb(), ctx_.data_align));
        return kOk;
      }
      case kCfaGnuNegativeOffsetExtended: {
        const uint64_t reg = r->Uleb();
        SetRule(reg, RegisterRule::kOffset, Factored(0 - r->Uleb(), ctx_.data_align));
        return kOk;
      }
      case kCfaValOffset: {
        const uint64_t reg = r->Uleb();
        SetRule(reg, RegisterRule::kValOffset, Factored(r->Uleb(), ctx_.data_align));
        return kOk;
      }
      case kCfaValOffsetSf: {
        const uint64_t reg = r->Uleb();
        SetRule(reg, RegisterRule::kValOffset, Factored(r->Sleb(), ctx_.data_align));
        return kOk;
      }
      case kCfaRestoreExtended: Restore(r->Uleb()); return kOk;
      case kCfaUndefined: SetRule(r->Uleb(), RegisterRule::kUndefined, 0); return kOk;
      case kCfaSameValue: SetRule(r->Uleb(), RegisterRule::kSameValue, 0); return kOk;
      case kCfaRegister: {
        const uint64_t reg = r->Uleb();
        SetRule(reg, RegisterRule::kRegister, static_cast<int64_t>(r->Uleb()));
        return kOk;
      }
      case kCfaExpression:
      case kCfaValExpression: {
        const uint64_t reg = r->Uleb();
        r->Skip(r->Uleb());
        SetRule(reg, op == kCfaExpression ? RegisterRule::kExpression : RegisterRule::kValExpression, 0);
        return kOk;
      }
      case kCfaRememberState:
        // Saves the CFA too: GCC's unwinder does, and GCC's epilogues rely on it.
        if (depth_ >= kMaxRememberDepth) return CfaProgramStatus::kUnsupported;
        stack_[depth_++] = *rules_;
        return kOk;
      case kCfaRestoreState:
        if (depth_ == 0) return CfaProgramStatus::kMalformed;
        *rules_ = stack_[--depth_];
        return kOk;
      case kCfaDefCfa: {
        const uint64_t reg = r->Uleb();
        DefineCfa(reg, static_cast<int64_t>(r->Uleb()));
        return kOk;
      }
      case kCfaDefCfaSf: {
        const uint64_t reg = r->Uleb();
        DefineCfa(reg, Factored(r->Sleb(), ctx_.data_align));
        return kOk;
      }
      case kCfaDefCfaRegister:
        // Keeps the offset (and turns an expression CFA back into reg+offset), as GCC does.
        DefineCfa(r->Uleb(), rules_->cfa.offset);
        return kOk;
      case kCfaDefCfaOffset:
        // An expression CFA stays an expression (GCC, readelf); only the offset changes.
        rules_->cfa.offset = static_cast<int64_t>(r->Uleb());
        return kOk;
      case kCfaDefCfaOffsetSf: rules_->cfa.offset = Factored(r->Sleb(), ctx_.data_align); return kOk;
      case kCfaDefCfaExpression: DefineCfaExpression(r); return kOk;
      case kCfaGnuArgsSize: r->Uleb(); return kOk;
      case kCfaGnuWindowSave:
        // AArch64's DW_CFA_AARCH64_negate_ra_state: the saved return address
        // is signed from here on, which the BPF side strips anyway.
        if (ctx_.arch->machine == kCfiAarch64.machine) return kOk;
        return CfaProgramStatus::kUnsupported;  // SPARC's register window
      default: return CfaProgramStatus::kUnsupported;
    }
  }

  const CfaProgramContext& ctx_;
  const RowEncodingOptions& options_;
  FrameRules* rules_;
  std::vector<UnwindRow>* rows_;
  size_t first_row_ = 0;
  uint64_t loc_;
  uint64_t pc_end_;
  bool done_ = false;
  int depth_ = 0;
  FrameRules stack_[kMaxRememberDepth];
};

}  // namespace

CfaProgramStatus RunCieProgram(ByteReader program, const CfaProgramContext& ctx, FrameRules* rules) {
  const RowEncodingOptions options;
  Interpreter interpreter(ctx, options, rules, nullptr, 0, 0);
  return interpreter.Run(program);
}

CfaProgramStatus RunFdeProgram(ByteReader program, const CfaProgramContext& ctx, uint64_t pc_begin, uint64_t pc_end,
                               const RowEncodingOptions& options, std::vector<UnwindRow>* rows) {
  const size_t size_at_entry = rows->size();
  FrameRules rules = ctx.initial != nullptr ? *ctx.initial : FrameRules{};
  Interpreter interpreter(ctx, options, &rules, rows, pc_begin, pc_end);
  const CfaProgramStatus status = interpreter.Run(program);
  if (status != CfaProgramStatus::kOk) rows->resize(size_at_entry);
  return status;
}

UnwindRow ClassifyRules(const FrameRules& rules, const CfaProgramContext& ctx, const RowEncodingOptions& options,
                        uint64_t pc) {
  UnwindRow row{pc, 0, WS_CFA_INVALID, 0};
  if (ctx.signal_frame) {
    row.cfa_type = WS_CFA_SIGNAL;
    return row;
  }
  uint8_t ra_rule = 0;  // x86-64: always at CFA-8 (below)
  if (ctx.arch->ra_in_register) {
    switch (rules.ra.kind) {
      case RegisterRule::kUndefined: row.cfa_type = WS_CFA_END; return row;
      case RegisterRule::kUnset:
      case RegisterRule::kSameValue: ra_rule = WS_RA_IN_LR; break;
      case RegisterRule::kOffset: {
        const int64_t v = rules.ra.value;
        if (rules.rbp.kind == RegisterRule::kOffset && v == rules.rbp.value + 8) {
          ra_rule = WS_RA_FRAME_RECORD;
        } else if (v < 0 && v % 8 == 0 && -v / 8 <= 14) {
          ra_rule = static_cast<uint8_t>(-v / 8 + 1);
        } else {
          return row;
        }
        break;
      }
      default: return row;
    }
  } else {
    if (rules.ra.kind == RegisterRule::kUnset || rules.ra.kind == RegisterRule::kUndefined) {
      row.cfa_type = WS_CFA_END;
      return row;
    }
    if (rules.ra.kind != RegisterRule::kOffset || rules.ra.value != -8) return row;
  }

  int8_t fp_offset = 0;
  switch (rules.rbp.kind) {
    case RegisterRule::kUnset:
    case RegisterRule::kUndefined:
    case RegisterRule::kSameValue: break;
    case RegisterRule::kOffset: {
      const int64_t v = rules.rbp.value;
      if (v == 0 || v % 8 != 0 || v < -128 * 8 || v > 127 * 8) return row;
      fp_offset = static_cast<int8_t>(v / 8);
      break;
    }
    default: return row;
  }

  switch (rules.cfa.kind) {
    case CfaRule::kRegisterOffset:
      if (rules.cfa.reg != ctx.arch->sp && rules.cfa.reg != ctx.arch->fp) return row;
      if (rules.cfa.offset < 0 || rules.cfa.offset > std::numeric_limits<uint16_t>::max()) return row;
      row.cfa_type = rules.cfa.reg == ctx.arch->sp ? WS_CFA_SP : WS_CFA_FP;
      row.cfa_offset = static_cast<uint16_t>(rules.cfa.offset);
      break;
    case CfaRule::kExpression: {
      const int threshold = rules.cfa.plt_threshold;
      if (threshold < 0 || (threshold != 11 && !options.plt_threshold_in_cfa_offset)) return row;
      row.cfa_type = WS_CFA_PLT;
      row.cfa_offset = static_cast<uint16_t>(threshold);
      break;
    }
    case CfaRule::kUnset: return row;
  }
  row.cfa_type = static_cast<uint8_t>(row.cfa_type | (ra_rule << WS_RA_RULE_SHIFT));
  row.fp_offset = fp_offset;
  return row;
}

const CfiArch* CfiArchOf(uint16_t machine) {
  if (machine == kCfiX86_64.machine) return &kCfiX86_64;
  if (machine == kCfiAarch64.machine) return &kCfiAarch64;
  return nullptr;
}

int PltExpressionThreshold(const uint8_t* expr, uint64_t size) {
  // DW_OP_breg7 8, DW_OP_breg16 0, DW_OP_lit15, DW_OP_and, DW_OP_lit<N>, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus
  static constexpr uint8_t kPattern[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x30, 0x2a, 0x33, 0x24, 0x22};
  constexpr size_t kLitIndex = 6;
  if (size != sizeof(kPattern)) return -1;
  for (size_t i = 0; i < sizeof(kPattern); ++i) {
    if (i == kLitIndex) {
      if (expr[i] < 0x30 || expr[i] > 0x3f) return -1;
    } else if (expr[i] != kPattern[i]) {
      return -1;
    }
  }
  return expr[kLitIndex] - 0x30;
}

}  // namespace warpscope
