// CIE/FDE framing, pointer encodings, augmentations and the table rules (gaps,
// overlaps, merging, code ranges) on synthetic sections.
#include <gtest/gtest.h>

#include "tests/support/cfi_builder.h"
#include "agent/unwind/unwind_table.h"

namespace warpscope::testing {
namespace {

using namespace dwarf;  // NOLINT: the kPe* encoding names

constexpr uint8_t kSp = WS_CFA_SP;
constexpr uint8_t kNone = WS_CFA_NONE;

// A table from whole sections, expected to build.
UnwindTable Build(std::vector<CfiSection> sections, std::vector<CodeRange> code = {}) {
  StatusOr<UnwindTable> t = BuildUnwindTableFromSections(sections, code);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : UnwindTable{};
}

// One CIE (spec) and one FDE over [0x2000, 0x2010) that raises the CFA to 16 at +4.
UnwindTable OneFde(CfiSectionKind kind, const CieSpec& cie, uint8_t encoding_override = 0, bool fde_dwarf64 = false) {
  CfiBuilder b(kind);
  const uint64_t c = b.AddCie(cie);
  FdeSpec fde;
  fde.pc_length = 0x10;
  fde.program = Bytes{0x44, 0x0e, 0x10};
  fde.encoding_override = encoding_override;
  fde.dwarf64 = fde_dwarf64;
  b.AddFde(c, cie, fde);
  return Build({b.section()});
}

const std::vector<Row> kOneFdeRows{{0, kSp, 8}, {4, kSp, 16}, {0x10, kNone}};

TEST(CfiParser, PointerEncodings) {
  for (uint8_t enc : {kPeAbsptr, kPeUdata2, kPeUdata4, kPeUdata8, kPeSdata2, kPeSdata4, kPeSdata8, kPeUleb128,
                      kPeSleb128, kPeSigned, uint8_t(kPePcrel | kPeSdata4), uint8_t(kPePcrel | kPeSdata8),
                      uint8_t(kPePcrel | kPeSleb128), uint8_t(kPeTextrel | kPeUdata4),
                      uint8_t(kPeAligned)}) {
    CieSpec cie;
    cie.fde_encoding = enc;
    UnwindTable t = OneFde(CfiSectionKind::kEhFrame, cie);
    EXPECT_EQ(t.base_vaddr, 0x2000u) << "encoding 0x" << std::hex << int{enc};
    EXPECT_EQ(RowsOf(t), kOneFdeRows) << "encoding 0x" << std::hex << int{enc};
    EXPECT_EQ(t.stats.fdes_skipped, 0u);
  }
}

TEST(CfiParser, EncodingsNeedingRuntimeStateAreSkipped) {
  for (uint8_t enc : {uint8_t(kPeDatarel | kPeSdata4), uint8_t(kPeFuncrel | kPeSdata4),
                      uint8_t(kPeIndirect | kPePcrel | kPeSdata4), kPeOmit, uint8_t(0x0f), uint8_t(0x70 | kPeSdata4)}) {
    CieSpec cie;
    cie.fde_encoding = enc;
    UnwindTable t = OneFde(CfiSectionKind::kEhFrame, cie);
    EXPECT_TRUE(t.entries.empty()) << "encoding 0x" << std::hex << int{enc};
    EXPECT_EQ(t.stats.fdes_skipped, 1u) << "encoding 0x" << std::hex << int{enc};
  }
}

TEST(CfiParser, TextrelNeedsTheTextAddress) {
  CfiBuilder b(CfiSectionKind::kEhFrame, 0x10000, /*text_vaddr=*/0);
  CieSpec cie;
  cie.fde_encoding = kPeTextrel | kPeUdata4;
  const uint64_t c = b.AddCie(cie);
  b.AddFde(c, cie, FdeSpec{});
  EXPECT_EQ(Build({b.section()}).stats.fdes_skipped, 1u);
}

TEST(CfiParser, Augmentations) {
  for (const char* aug : {"zR", "zPLR", "zRPL", "zLR", "zRB", "zRX", "zR", ""}) {
    CieSpec cie;
    cie.augmentation = aug;
    if (cie.augmentation.find('R') == std::string::npos) cie.fde_encoding = kPeAbsptr;
    UnwindTable t = OneFde(CfiSectionKind::kEhFrame, cie);
    EXPECT_EQ(RowsOf(t), kOneFdeRows) << "augmentation \"" << aug << "\"";
  }
  CieSpec legacy;
  legacy.augmentation = "eh";
  legacy.fde_encoding = kPeAbsptr;
  EXPECT_EQ(RowsOf(OneFde(CfiSectionKind::kEhFrame, legacy)), kOneFdeRows);
  // Unknown augmentation without 'z': the data cannot be skipped.
  CieSpec unknown;
  unknown.augmentation = "X";
  unknown.fde_encoding = kPeAbsptr;
  UnwindTable t = OneFde(CfiSectionKind::kEhFrame, unknown);
  EXPECT_TRUE(t.entries.empty());
  EXPECT_EQ(t.stats.fdes_skipped, 1u);
}

TEST(CfiParser, DebugFrameVersionsAndAddressSizes) {
  for (uint8_t version : {1, 3, 4}) {
    for (uint8_t address_size : {4, 8}) {
      if (version != 4 && address_size != 8) continue;
      CieSpec cie;
      cie.version = version;
      cie.augmentation = "";
      cie.address_size = address_size;
      EXPECT_EQ(RowsOf(OneFde(CfiSectionKind::kDebugFrame, cie)), kOneFdeRows)
          << "version " << int{version} << " address size " << int{address_size};
    }
  }
  CieSpec bad;
  bad.version = 2;
  bad.augmentation = "";
  EXPECT_EQ(OneFde(CfiSectionKind::kDebugFrame, bad).stats.fdes_skipped, 1u);
  bad.version = 4;
  bad.address_size = 2;
  EXPECT_EQ(OneFde(CfiSectionKind::kDebugFrame, bad).stats.fdes_skipped, 1u);
}

TEST(CfiParser, SegmentSelectorsAreUnsupported) {
  CfiBuilder b(CfiSectionKind::kDebugFrame);
  Bytes cie;
  cie.U32(0xffffffffu).U8(4).Str("").U8(8).U8(2).Uleb(1).Sleb(-8).Uleb(16).Add(Bytes{0x0c, 0x07, 0x08, 0x90, 0x01});
  b.AddRaw(cie);
  Bytes fde;
  fde.U32(0).U64(0x2000).U64(0x10);
  b.AddRaw(fde);
  EXPECT_EQ(Build({b.section()}).stats.fdes_skipped, 1u);
}

TEST(CfiParser, Dwarf64Entries) {
  CieSpec cie;
  cie.dwarf64 = true;
  EXPECT_EQ(RowsOf(OneFde(CfiSectionKind::kEhFrame, cie, 0, /*fde_dwarf64=*/true)), kOneFdeRows);
  cie.augmentation = "";
  cie.version = 3;
  EXPECT_EQ(RowsOf(OneFde(CfiSectionKind::kDebugFrame, cie, 0, true)), kOneFdeRows);
  // A 32-bit FDE may point at a 64-bit CIE and the other way round.
  EXPECT_EQ(RowsOf(OneFde(CfiSectionKind::kDebugFrame, cie, 0, false)), kOneFdeRows);
}

TEST(CfiParser, CieAfterItsFdeInDebugFrame) {
  CfiBuilder b(CfiSectionKind::kDebugFrame);
  CieSpec cie;
  cie.version = 3;
  cie.augmentation = "";
  FdeSpec fde;
  fde.pc_length = 0x10;
  // The FDE is 4 + 4 + 16 bytes long; the CIE follows it.
  b.AddFde(24, cie, fde);
  EXPECT_EQ(b.AddCie(cie), 24u);
  UnwindTable t = Build({b.section()});
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, {0x10, kNone}}));
  EXPECT_EQ(t.stats.cies, 1u);
}

TEST(CfiParser, Framing) {
  CfiBuilder b(CfiSectionKind::kEhFrame);
  CieSpec cie;
  const uint64_t c = b.AddCie(cie);
  FdeSpec fde;
  fde.pc_length = 0x10;
  b.AddFde(c, cie, fde);
  b.AddTerminator();  // readelf walks past zero-length entries; so do we
  fde.pc_begin = 0x2010;
  b.AddFde(c, cie, fde);
  fde.pc_begin = 0x2020;
  fde.pc_length = 0;  // covers nothing: dropped, not an error
  b.AddFde(c, cie, fde);
  b.AddRaw(Bytes{}.U32(4).U8(0));  // an FDE whose CIE pointer lands inside an FDE
  b.AddRaw(Bytes{}.U32(0x100000).U64(0));  // a CIE pointer before the section
  b.AddRaw(Bytes{0x01, 0x02});             // too short for an id
  b.data().append("\0\0", 2);              // alignment padding
  UnwindTable t = Build({b.section()});
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, {0x20, kNone}}));
  EXPECT_EQ(t.stats.fdes, 6u);
  EXPECT_EQ(t.stats.fdes_skipped, 3u);
  EXPECT_EQ(t.stats.truncated_sections, 0u);
}

TEST(CfiParser, BrokenLengthKeepsWhatCameBefore) {
  for (uint32_t bad_length : {0x7fffffffu, 0xfffffff0u, 0xfffffffeu}) {
    CfiBuilder b(CfiSectionKind::kEhFrame);
    CieSpec cie;
    const uint64_t c = b.AddCie(cie);
    b.AddFde(c, cie, FdeSpec{});
    b.data().append(reinterpret_cast<const char*>(&bad_length), 4);
    b.data().append(16, '\x01');
    UnwindTable t = Build({b.section()});
    EXPECT_EQ(t.entries.size(), 2u);
    EXPECT_EQ(t.stats.truncated_sections, 1u);
  }
  // A 64-bit length cut short, and a stray 3-byte tail.
  for (const std::string& tail : {std::string("\xff\xff\xff\xff\x01", 5), std::string("\x01\x02\x03", 3)}) {
    CfiBuilder b(CfiSectionKind::kEhFrame);
    CieSpec cie;
    b.AddFde(b.AddCie(cie), cie, FdeSpec{});
    b.data() += tail;
    EXPECT_EQ(Build({b.section()}).stats.truncated_sections, 1u);
  }
}

TEST(CfiParser, HugeRangesAreMalformed) {
  CfiBuilder b(CfiSectionKind::kDebugFrame);
  CieSpec cie;
  cie.version = 3;
  cie.augmentation = "";
  const uint64_t c = b.AddCie(cie);
  FdeSpec fde;
  fde.pc_length = uint64_t{1} << 32;
  b.AddFde(c, cie, fde);
  fde.pc_begin = ~uint64_t{0} - 4;  // a tombstone whose end wraps
  fde.pc_length = 0x10;
  b.AddFde(c, cie, fde);
  UnwindTable t = Build({b.section()});
  EXPECT_TRUE(t.entries.empty());
  EXPECT_EQ(t.stats.fdes_skipped, 2u);
}

// Two FDEs of one CIE over the given ranges, programs raising the CFA at +1.
CfiBuilder TwoFdes(CfiSectionKind kind, uint64_t a_begin, uint64_t a_len, uint64_t b_begin, uint64_t b_len,
                   Bytes b_program = Bytes{0x41, 0x0e, 0x10}) {
  CfiBuilder b(kind);
  CieSpec cie;
  if (kind == CfiSectionKind::kDebugFrame) {
    cie.version = 3;
    cie.augmentation = "";
  }
  const uint64_t c = b.AddCie(cie);
  FdeSpec fde;
  fde.pc_begin = a_begin;
  fde.pc_length = a_len;
  fde.program = Bytes{0x41, 0x0e, 0x10};
  b.AddFde(c, cie, fde);
  fde.pc_begin = b_begin;
  fde.pc_length = b_len;
  fde.program = b_program;
  b.AddFde(c, cie, fde);
  return b;
}

TEST(UnwindTableRules, GapsGetNoneRows) {
  CfiBuilder b = TwoFdes(CfiSectionKind::kEhFrame, 0x3000, 0x10, 0x3020, 0x10);
  UnwindTable t = Build({b.section()});
  EXPECT_EQ(t.base_vaddr, 0x3000u);
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, {0x10, kNone}, {0x20, kSp, 8}, {0x21, kSp, 16},
                                          {0x30, kNone}}));
  EXPECT_EQ(t.stats.gap_rows, 2u);
  ASSERT_NE(t.Lookup(0x3015), nullptr);
  EXPECT_EQ(t.Lookup(0x3015)->cfa_type, kNone);
  EXPECT_EQ(t.Lookup(0x3021)->cfa_offset, 16);
  EXPECT_EQ(t.Lookup(0x2fff), nullptr);
  EXPECT_EQ(t.Lookup(0x3000 + (uint64_t{1} << 32)), nullptr);
}

TEST(UnwindTableRules, PaddingGapsCanKeepThePreviousRow) {
  // 0x3000..0x3010 ends with rsp+16, the next FDE starts 8 bytes later with rsp+16.
  CfiBuilder b = TwoFdes(CfiSectionKind::kEhFrame, 0x3000, 0x10, 0x3018, 0x10, Bytes{0x0e, 0x10});
  UnwindTableOptions options;
  options.max_padding_gap = 15;
  const CfiSection s = b.section();
  StatusOr<UnwindTable> t = BuildUnwindTableFromSections({&s, 1}, {}, options);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(RowsOf(*t), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, {0x28, kNone}}));
  options.max_padding_gap = 7;
  t = BuildUnwindTableFromSections({&s, 1}, {}, options);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(RowsOf(*t), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, {0x10, kNone}, {0x18, kSp, 16}, {0x28, kNone}}));
}

TEST(UnwindTableRules, AdjacentFdesMergeIdenticalRows) {
  // The first FDE ends with CFA rsp+16 and the second starts with it.
  CfiBuilder b = TwoFdes(CfiSectionKind::kEhFrame, 0x3000, 0x10, 0x3010, 0x10, Bytes{0x0e, 0x10});
  UnwindTable t = Build({b.section()});
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, {0x20, kNone}}));
  EXPECT_EQ(t.stats.rows_before_merge, 4u);
  EXPECT_EQ(t.stats.rows, 3u);
}

TEST(UnwindTableRules, OverlapsKeepTheEarlierStart) {
  // Listed out of order: sorting puts 0x3000 first and drops 0x3008.
  CfiBuilder b = TwoFdes(CfiSectionKind::kEhFrame, 0x3008, 0x20, 0x3000, 0x10);
  UnwindTable t = Build({b.section()});
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, {0x10, kNone}}));
  EXPECT_EQ(t.stats.fdes_overlapping, 1u);
}

TEST(UnwindTableRules, EhFrameWinsTiesWithDebugFrame) {
  CfiBuilder eh = TwoFdes(CfiSectionKind::kEhFrame, 0x3000, 0x10, 0x3010, 0x10);
  CfiBuilder debug = TwoFdes(CfiSectionKind::kDebugFrame, 0x3000, 0x10, 0x3020, 0x10, Bytes{0x0e, 0x20});
  UnwindTable t = Build({eh.section(), debug.section()});
  EXPECT_EQ(RowsOf(t), (std::vector<Row>{{0, kSp, 8}, {1, kSp, 16}, {0x10, kSp, 8}, {0x11, kSp, 16},
                                          {0x20, kSp, 32}, {0x30, kNone}}));
  EXPECT_EQ(t.stats.fdes_overlapping, 1u);
  EXPECT_EQ(t.stats.fdes, 4u);
}

TEST(UnwindTableRules, FdesOutsideCodeAreDropped) {
  // .debug_frame keeps FDEs of discarded functions at address 0.
  CfiBuilder b = TwoFdes(CfiSectionKind::kDebugFrame, 0x0, 0x10, 0x3000, 0x10);
  UnwindTable t = Build({b.section()}, {{0x2000, 0x4000}});
  EXPECT_EQ(t.base_vaddr, 0x3000u);
  EXPECT_EQ(t.stats.fdes_outside_code, 1u);
  // A range straddling the end of the code is dropped too.
  CfiBuilder straddle = TwoFdes(CfiSectionKind::kEhFrame, 0x3ff0, 0x20, 0x3000, 0x10);
  EXPECT_EQ(Build({straddle.section()}, {{0x2000, 0x4000}}).stats.fdes_outside_code, 1u);
}

TEST(UnwindTableRules, MoreThanFourGiBIsAnError) {
  CfiBuilder b = TwoFdes(CfiSectionKind::kDebugFrame, 0x1000, 0x10, 0x1000 + (uint64_t{1} << 32) - 8, 0x10);
  const CfiSection s = b.section();
  StatusOr<UnwindTable> t = BuildUnwindTableFromSections({&s, 1}, {});
  EXPECT_FALSE(t.ok());
  // Just under: the final NONE row sits at 2^32 - 1.
  CfiBuilder fits = TwoFdes(CfiSectionKind::kDebugFrame, 0x1000, 0x10, 0x1000 + (uint64_t{1} << 32) - 0x11, 0x10);
  const CfiSection s2 = fits.section();
  StatusOr<UnwindTable> t2 = BuildUnwindTableFromSections({&s2, 1}, {});
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->entries.back().pc, 0xffffffffu);
}

TEST(UnwindTableRules, EmptyInputGivesEmptyTable) {
  UnwindTable t = Build({});
  EXPECT_TRUE(t.entries.empty());
  StatusOr<UnwindPageIndex> index = BuildPageIndex(t);
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->empty());
}

}  // namespace
}  // namespace warpscope::testing
