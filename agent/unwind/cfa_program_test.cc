// Every CFA opcode, on synthetic FDEs over [0x2000, 0x2100): the rows are
// relative to 0x2000 and the table always ends with a WS_CFA_NONE row at 0x100.
#include <gtest/gtest.h>

#include "agent/unwind/cfa_program.h"
#include "tests/support/cfi_builder.h"

namespace warpscope::testing {
namespace {

constexpr uint8_t kSp = WS_CFA_SP;
constexpr uint8_t kFp = WS_CFA_FP;
constexpr uint8_t kPlt = WS_CFA_PLT;
constexpr uint8_t kEnd = WS_CFA_END;
constexpr uint8_t kSignal = WS_CFA_SIGNAL;
constexpr uint8_t kNone = WS_CFA_NONE;
constexpr uint8_t kInvalid = WS_CFA_INVALID;

// Opcodes with operands in the low six bits.
constexpr uint8_t AdvanceLoc(uint8_t delta) { return 0x40 | delta; }
constexpr uint8_t Offset(uint8_t reg) { return 0x80 | reg; }
constexpr uint8_t Restore(uint8_t reg) { return 0xc0 | reg; }

const Row kTail{0x100, kNone};

TEST(CfaProgram, CieRowOnly) {
  UnwindTable t = SingleFdeTable({});
  EXPECT_EQ(t.base_vaddr, 0x2000u);
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, kTail}));
  EXPECT_EQ(t.stats.fdes, 1u);
  EXPECT_EQ(t.stats.cies, 1u);
}

TEST(CfaProgram, AdvanceLocForms) {
  Bytes p;
  p.U8(0x0e).Uleb(16);                    // def_cfa_offset 16 (at loc 0: replaces the CIE row)
  p.U8(AdvanceLoc(1)).U8(0x0e).Uleb(24);  // advance_loc 1
  p.U8(0x02).U8(0x10).U8(0x0e).Uleb(32);  // advance_loc1 16
  p.U8(0x03).U16(0x20).U8(0x0e).Uleb(40);  // advance_loc2 32
  p.U8(0x04).U32(0x30).U8(0x0e).Uleb(48);  // advance_loc4 48
  p.U8(0x1d).U64(0x10).U8(0x0e).Uleb(56);  // MIPS_advance_loc8 16
  EXPECT_EQ(RowsOf(SingleFdeTable(p)), (std::vector<Row>{{0, kSp, 16},
                                                          {0x1, kSp, 24},
                                                          {0x11, kSp, 32},
                                                          {0x31, kSp, 40},
                                                          {0x61, kSp, 48},
                                                          {0x71, kSp, 56},
                                                          kTail}));
}

TEST(CfaProgram, CodeAlignmentFactorScalesAdvances) {
  CieSpec cie;
  cie.code_align = 4;
  Bytes p;
  p.U8(AdvanceLoc(2)).U8(0x0e).Uleb(16).U8(0x02).U8(3).U8(0x0e).Uleb(24);
  EXPECT_EQ(RowsOf(SingleFdeTable(p, cie)), (std::vector<Row>{{0, kSp, 8}, {8, kSp, 16}, {20, kSp, 24}, kTail}));
}

TEST(CfaProgram, SetLocEhFrameUsesFdeEncoding) {
  CfiBuilder b(CfiSectionKind::kEhFrame);
  CieSpec cie;
  const uint64_t c = b.AddCie(cie);
  FdeSpec fde;
  // The set_loc operand sits at FDE offset 4 (length) + 4 (CIE ptr) + 8 (pc, range) + 1 (aug size) + 1 (opcode).
  const uint64_t operand_at = b.data().size() + 4 + 4 + 8 + 1 + 1;
  fde.program.U8(0x01).Add(b.EncodePointer(cie.fde_encoding, 0x2040, operand_at)).U8(0x0e).Uleb(16);
  b.AddFde(c, cie, fde);
  const CfiSection s = b.section();
  StatusOr<UnwindTable> t = BuildUnwindTableFromSections({&s, 1}, {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(RowsOf(*t), (std::vector<Row>{{0, kSp, 8}, {0x40, kSp, 16}, kTail}));
}

TEST(CfaProgram, SetLocDebugFrameIsAbsolute) {
  CieSpec cie;
  cie.version = 3;
  cie.augmentation = "";
  Bytes p;
  p.U8(0x01).U64(0x2040).U8(0x0e).Uleb(16);
  EXPECT_EQ(RowsOf(SingleFdeTable(p, cie, {}, CfiSectionKind::kDebugFrame)),
            (std::vector<Row>{{0, kSp, 8}, {0x40, kSp, 16}, kTail}));
}

TEST(CfaProgram, SetLocBackwardsSkipsTheFde) {
  CieSpec cie;
  cie.version = 3;
  cie.augmentation = "";
  Bytes p;
  p.U8(AdvanceLoc(0x10)).U8(0x01).U64(0x2008);
  UnwindTable t = SingleFdeTable(p, cie, {}, CfiSectionKind::kDebugFrame);
  EXPECT_TRUE(t.entries.empty());
  EXPECT_EQ(t.stats.fdes_skipped, 1u);
}

TEST(CfaProgram, DefCfaVariants) {
  Bytes p;
  p.U8(0x0c).Uleb(6).Uleb(16);                      // def_cfa rbp+16
  p.U8(AdvanceLoc(1)).U8(0x12).Uleb(7).Sleb(-3);    // def_cfa_sf rsp + (-3 * -8)
  p.U8(AdvanceLoc(1)).U8(0x0d).Uleb(6);             // def_cfa_register rbp (keeps 24)
  p.U8(AdvanceLoc(1)).U8(0x13).Sleb(-4);            // def_cfa_offset_sf -4 * -8
  p.U8(AdvanceLoc(1)).U8(0x0c).Uleb(10).Uleb(0);    // def_cfa r10+0: not expressible
  p.U8(AdvanceLoc(1)).U8(0x0c).Uleb(7).Uleb(65535);  // the largest offset a row holds
  p.U8(AdvanceLoc(1)).U8(0x0e).Uleb(65536);
  p.U8(AdvanceLoc(1)).U8(0x13).Sleb(1);  // 1 * -8: negative
  EXPECT_EQ(RowsOf(SingleFdeTable(p)), (std::vector<Row>{{0, kFp, 16},
                                                          {1, kSp, 24},
                                                          {2, kFp, 24},
                                                          {3, kFp, 32},
                                                          {4, kInvalid},
                                                          {5, kSp, 65535},
                                                          {6, kInvalid},
                                                          kTail}));
}

TEST(CfaProgram, RbpRules) {
  Bytes p;
  p.U8(Offset(6)).Uleb(2);                               // rbp at cfa-16
  p.U8(AdvanceLoc(1)).U8(0x05).Uleb(6).Uleb(3);          // offset_extended: cfa-24
  p.U8(AdvanceLoc(1)).U8(0x11).Uleb(6).Sleb(-4);         // offset_extended_sf: cfa+32
  p.U8(AdvanceLoc(1)).U8(0x2f).Uleb(6).Uleb(5);          // GNU_negative_offset_extended: cfa+40
  p.U8(AdvanceLoc(1)).U8(Restore(6));                    // the CIE has no rule: unchanged
  p.U8(AdvanceLoc(1)).U8(Offset(6)).Uleb(2);
  p.U8(AdvanceLoc(1)).U8(0x06).Uleb(6);                  // restore_extended
  p.U8(AdvanceLoc(1)).U8(Offset(6)).Uleb(2).U8(0x08).Uleb(6);  // same_value
  p.U8(AdvanceLoc(1)).U8(Offset(6)).Uleb(2).U8(0x07).Uleb(6);  // undefined: also 0 (documented)
  p.U8(AdvanceLoc(1)).U8(0x09).Uleb(6).Uleb(3);          // register rbx: unrecoverable
  p.U8(AdvanceLoc(1)).U8(0x14).Uleb(6).Uleb(2);          // val_offset
  p.U8(AdvanceLoc(1)).U8(0x15).Uleb(6).Sleb(2);          // val_offset_sf
  p.U8(AdvanceLoc(1)).U8(0x10).Uleb(6).Uleb(2).U8(0x76).U8(0x00);  // expression (breg6 0)
  p.U8(AdvanceLoc(1)).U8(0x16).Uleb(6).Uleb(2).U8(0x76).U8(0x00);  // val_expression
  p.U8(AdvanceLoc(1)).U8(Restore(6)).U8(0x07).Uleb(3);   // other registers do not matter
  // Rows 7 and 8 (same_value, undefined) and 10-13 merge into their predecessors.
  EXPECT_EQ(RowsOf(SingleFdeTable(p)), (std::vector<Row>{{0, kSp, 8, -2},
                                                          {1, kSp, 8, -3},
                                                          {2, kSp, 8, 4},
                                                          {3, kSp, 8, 5},
                                                          {4, kSp, 8, 0},
                                                          {5, kSp, 8, -2},
                                                          {6, kSp, 8, 0},
                                                          {9, kInvalid},
                                                          {14, kSp, 8, 0},
                                                          kTail}));
}

TEST(CfaProgram, RbpOffsetRange) {
  CieSpec cie;
  cie.data_align = -1;
  cie.program = Bytes{0x0c, 0x07, 0x08, 0x90, 0x08};  // rip at cfa-8 with the unit factor
  Bytes p;
  p.U8(Offset(6)).Uleb(12);                          // cfa-12: not a multiple of 8
  p.U8(AdvanceLoc(1)).U8(Offset(6)).Uleb(1024);      // cfa-1024: -128 slots, the s8 minimum
  p.U8(AdvanceLoc(1)).U8(Offset(6)).Uleb(1032);      // one slot further
  p.U8(AdvanceLoc(1)).U8(0x11).Uleb(6).Sleb(-1016);  // cfa+1016: 127 slots
  p.U8(AdvanceLoc(1)).U8(0x11).Uleb(6).Sleb(-1024);  // cfa+1024
  p.U8(AdvanceLoc(1)).U8(Offset(6)).Uleb(0);         // cfa+0 cannot be told from "unchanged"
  EXPECT_EQ(RowsOf(SingleFdeTable(p, cie)), (std::vector<Row>{{0, kInvalid},
                                                               {1, kSp, 8, -128},
                                                               {2, kInvalid},
                                                               {3, kSp, 8, 127},
                                                               {4, kInvalid},
                                                               kTail}));
}

TEST(CfaProgram, ReturnAddressRules) {
  Bytes p;
  p.U8(0x07).Uleb(16);                            // undefined: outermost frame
  p.U8(AdvanceLoc(1)).U8(Restore(16));            // back to the CIE's cfa-8
  p.U8(AdvanceLoc(1)).U8(Offset(16)).Uleb(2);     // cfa-16: the BPF side assumes cfa-8
  p.U8(AdvanceLoc(1)).U8(0x08).Uleb(16);          // same_value
  p.U8(AdvanceLoc(1)).U8(0x06).Uleb(16);          // restore_extended
  EXPECT_EQ(RowsOf(SingleFdeTable(p)),
            (std::vector<Row>{{0, kEnd}, {1, kSp, 8}, {2, kInvalid}, {4, kSp, 8}, kTail}));
}

// AArch64: code alignment 4, the return address in x30 (column 30) until a
// prologue saves it, x29 the frame pointer; the rule rides in the row's
// cfa_type high nibble (bpf/intf/unwind.h).
CieSpec Aarch64Cie() {
  CieSpec cie;
  cie.arch = &kCfiAarch64;
  cie.code_align = 4;
  cie.ra_column = 30;
  cie.program = Bytes{0x0c, 31, 0x00};  // def_cfa sp+0
  return cie;
}
constexpr uint8_t Ra(uint8_t type, uint8_t rule) { return static_cast<uint8_t>(type | (rule << WS_RA_RULE_SHIFT)); }

TEST(CfaProgram, Aarch64FrameRecordLeafAndSavedReturnAddress) {
  Bytes p;
  p.U8(AdvanceLoc(1)).U8(0x0e).Uleb(32);                             // stp x29, x30, [sp, #-32]!
  p.U8(Offset(29)).Uleb(4).U8(Offset(30)).Uleb(3);                   // x29 at cfa-32, x30 at cfa-24
  p.U8(AdvanceLoc(1)).U8(0x0d).Uleb(29);                             // mov x29, sp: cfa = x29+32
  p.U8(AdvanceLoc(2)).U8(Restore(29)).U8(0x0c).Uleb(31).Uleb(48);    // x29 restored; cfa sp+48
  p.U8(AdvanceLoc(1)).U8(0x0e).Uleb(0).U8(Restore(30));              // back to the entry state
  p.U8(AdvanceLoc(1)).U8(Offset(30)).Uleb(2);                        // x30 alone at cfa-16
  p.U8(AdvanceLoc(1)).U8(0x2d);                                      // negate_ra_state (PAC): accepted
  p.U8(AdvanceLoc(1)).U8(0x07).Uleb(30);                             // x30 undefined: outermost
  EXPECT_EQ(RowsOf(SingleFdeTable(p, Aarch64Cie())),
            (std::vector<Row>{{0, Ra(kSp, WS_RA_IN_LR)},
                              {4, Ra(kSp, WS_RA_FRAME_RECORD), 32, -4},
                              {8, Ra(kFp, WS_RA_FRAME_RECORD), 32, -4},
                              {16, Ra(kSp, 4), 48},
                              {20, Ra(kSp, WS_RA_IN_LR)},
                              {24, Ra(kSp, 3)},
                              {32, kEnd},
                              kTail}));
}

TEST(CfaProgram, Aarch64ReturnAddressesTheRowCannotHoldAreInvalid) {
  Bytes p;
  p.U8(Offset(30)).Uleb(16);                                   // cfa-128: past the nibble's reach
  p.U8(AdvanceLoc(1)).U8(0x14).Uleb(30).Uleb(1);               // val_offset: not a saved slot
  p.U8(AdvanceLoc(1)).U8(0x09).Uleb(30).Uleb(19);              // in x19
  EXPECT_EQ(RowsOf(SingleFdeTable(p, Aarch64Cie())), (std::vector<Row>{{0, kInvalid}, kTail}));
}

TEST(CfaProgram, CieWithUndefinedReturnAddressGivesEndRows) {
  CieSpec cie;
  cie.program = Bytes{0x0c, 0x07, 0x08, 0x07, 0x10};  // def_cfa rsp+8; undefined rip (glibc's _start)
  EXPECT_EQ(RowsOf(SingleFdeTable({}, cie)), (std::vector<Row>{{0, kEnd}, kTail}));
  EXPECT_EQ(SingleFdeTable({}, cie).stats.end_rows, 1u);
}

TEST(CfaProgram, SignalFrameCie) {
  CieSpec cie;
  cie.augmentation = "zRS";
  Bytes p;
  p.U8(0x0f).Uleb(3).U8(0x77).U8(0xa0).U8(0x01);  // def_cfa_expression: whatever __restore_rt says
  p.U8(AdvanceLoc(4)).U8(0x10).Uleb(6).Uleb(2).U8(0x77).U8(0x78);
  UnwindTable t = SingleFdeTable(p, cie);
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSignal}, kTail}));
  EXPECT_EQ(t.stats.signal_rows, 1u);
  EXPECT_EQ(t.stats.rows_before_merge, 3u);
}

TEST(CfaProgram, RememberAndRestoreStateIncludesTheCfa) {
  Bytes p;
  p.U8(Offset(6)).Uleb(2).U8(0x0e).Uleb(16);  // push rbp
  p.U8(0x0a);                                  // remember_state
  p.U8(AdvanceLoc(1)).U8(0x0e).Uleb(8).U8(Restore(6));  // pop rbp; ret
  p.U8(AdvanceLoc(1)).U8(0x0b);                // restore_state
  EXPECT_EQ(RowsOf(SingleFdeTable(p)),
            (std::vector<Row>{{0, kSp, 16, -2}, {1, kSp, 8, 0}, {2, kSp, 16, -2}, kTail}));
}

TEST(CfaProgram, RememberStateDepthIsBounded) {
  Bytes ok;
  for (int i = 0; i < kMaxRememberDepth; ++i) ok.U8(0x0a);
  EXPECT_EQ(SingleFdeTable(ok).stats.fdes_skipped, 0u);
  Bytes deep = ok;
  deep.U8(0x0a);
  UnwindTable t = SingleFdeTable(deep);
  EXPECT_EQ(t.stats.fdes_skipped, 1u);
  EXPECT_TRUE(t.entries.empty());
}

TEST(CfaProgram, RestoreStateWithoutRememberSkipsTheFde) {
  EXPECT_EQ(SingleFdeTable(Bytes{0x0b}).stats.fdes_skipped, 1u);
}

Bytes PltExpression(uint8_t lit) {
  Bytes p;
  p.U8(0x0f).Uleb(11).Add(Bytes{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, lit, 0x2a, 0x33, 0x24, 0x22});
  return p;
}

TEST(CfaProgram, PltExpression) {
  EXPECT_EQ(RowsOf(SingleFdeTable(PltExpression(0x3b))), (std::vector<Row>{{0, kPlt, 11}, kTail}));
  // Other thresholds (IBT PLTs) only when the BPF side reads cfa_offset.
  EXPECT_EQ(RowsOf(SingleFdeTable(PltExpression(0x3a))), (std::vector<Row>{{0, kInvalid}, kTail}));
  RowEncodingOptions options;
  options.plt_threshold_in_cfa_offset = true;
  EXPECT_EQ(RowsOf(SingleFdeTable(PltExpression(0x3a), {}, options)), (std::vector<Row>{{0, kPlt, 10}, kTail}));
  EXPECT_EQ(RowsOf(SingleFdeTable(PltExpression(0x39), {}, options)), (std::vector<Row>{{0, kPlt, 9}, kTail}));
  EXPECT_EQ(SingleFdeTable(PltExpression(0x3b)).stats.plt_rows, 1u);
}

TEST(CfaProgram, OtherCfaExpressionsAreInvalid) {
  Bytes p;
  p.U8(0x0f).Uleb(3).U8(0x76).U8(0x78).U8(0x06);  // breg6 -8; deref (stack realignment)
  p.U8(AdvanceLoc(1)).U8(0x0e).Uleb(16);           // def_cfa_offset keeps the expression
  p.U8(AdvanceLoc(1)).U8(0x0d).Uleb(7);            // def_cfa_register leaves it: rsp+16
  Bytes plt_like = PltExpression(0x3b);
  plt_like.U8(AdvanceLoc(4)).U8(0x0f).Uleb(11).Add(Bytes{0x77, 0x10, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33,
                                                          0x24, 0x22});  // breg7 16: not the PLT form
  EXPECT_EQ(RowsOf(SingleFdeTable(p)), (std::vector<Row>{{0, kInvalid}, {2, kSp, 16}, kTail}));
  EXPECT_EQ(RowsOf(SingleFdeTable(plt_like)), (std::vector<Row>{{0, kPlt, 11}, {4, kInvalid}, kTail}));
  EXPECT_EQ(PltExpressionThreshold(nullptr, 0), -1);
}

TEST(CfaProgram, NopsAndArgsSize) {
  Bytes p;
  p.U8(0x00).U8(0x2e).Uleb(32).U8(AdvanceLoc(1)).U8(0x0e).Uleb(16).U8(0x00).U8(0x00);
  EXPECT_EQ(RowsOf(SingleFdeTable(p)), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, kTail}));
}

TEST(CfaProgram, UnknownOrTruncatedOpcodesSkipTheFde) {
  for (const Bytes& p : {Bytes{0x2d}, Bytes{0x3c}, Bytes{0x17}, Bytes{0x0e, 0x80}, Bytes{0x0c, 0x07},
                         Bytes{0x0f, 0x05, 0x77}, Bytes{0x03, 0x01}, Bytes{0x04, 0x01, 0x00}}) {
    UnwindTable t = SingleFdeTable(p);
    EXPECT_EQ(t.stats.fdes_skipped, 1u) << "first opcode " << int{p.bytes()[0]};
    EXPECT_TRUE(t.entries.empty());
  }
}

TEST(CfaProgram, OpsPastTheFdeEndAreIgnored) {
  Bytes p;
  p.U8(0x0e).Uleb(16).U8(0x03).U16(0x100).U8(0x0e).Uleb(24).U8(0xff).U8(0x2d);
  EXPECT_EQ(RowsOf(SingleFdeTable(p)), (std::vector<Row>{{0, kSp, 16}, kTail}));
}

TEST(CfaProgram, LocationOpsInACieMakeItUnusable) {
  CieSpec cie;
  cie.program = Bytes{0x0c, 0x07, 0x08, 0x90, 0x01, 0x41};
  UnwindTable t = SingleFdeTable({}, cie);
  EXPECT_EQ(t.stats.fdes_skipped, 1u);
  EXPECT_TRUE(t.entries.empty());
}

TEST(CfaProgram, ReturnAddressColumnFromTheCie) {
  CieSpec cie;
  cie.version = 3;
  cie.ra_column = 30;
  cie.program = Bytes{0x0c, 0x07, 0x08, 0x9e, 0x01};  // offset r30 at cfa-8
  Bytes p;
  p.U8(AdvanceLoc(1)).U8(0x07).Uleb(30);
  EXPECT_EQ(RowsOf(SingleFdeTable(p, cie)), (std::vector<Row>{{0, kSp, 8}, {1, kEnd}, kTail}));
}

}  // namespace
}  // namespace warpscope::testing
