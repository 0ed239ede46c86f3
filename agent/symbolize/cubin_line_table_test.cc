#include "agent/symbolize/cubin_line_table.h"
#include "agent/symbolize/cubin_test_fixtures.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

namespace warpscope {
namespace {

using cubin_test::ReadFixture;
const std::string kTestdata = WS_CUBIN_TESTDATA;

// The bytes of the section called `name`.
std::string_view SectionOf(std::string_view elf, std::string_view name) {
  const cubin_test::SectionPlace place = cubin_test::FindSection(elf, name);
  return place.found ? elf.substr(place.offset, place.size) : std::string_view();
}

// A line-table unit assembled by hand.
class Unit {
 public:
  Unit& U8(uint8_t v) {
    bytes_.push_back(static_cast<char>(v));
    return *this;
  }
  Unit& U16(uint16_t v) { return U8(v & 0xff).U8(v >> 8); }
  Unit& U32(uint32_t v) { return U16(v & 0xffff).U16(v >> 16); }
  Unit& U64(uint64_t v) { return U32(v & 0xffffffff).U32(v >> 32); }
  Unit& Uleb(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      U8(v != 0 ? b | 0x80 : b);
    } while (v != 0);
    return *this;
  }
  Unit& Sleb(int64_t v) {
    for (;;) {
      uint8_t b = v & 0x7f;
      v >>= 7;
      const bool done = (v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0);
      U8(done ? b : b | 0x80);
      if (done) return *this;
    }
  }
  Unit& Raw(std::string_view s) {
    bytes_.append(s);
    return *this;
  }
  Unit& Str(std::string_view s) { return Raw(s).U8(0); }
  size_t size() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }

  // Opcodes of the program.
  Unit& SetAddress(uint64_t a, size_t* operand_offset = nullptr) {
    U8(0).Uleb(9).U8(2);
    if (operand_offset != nullptr) *operand_offset = size();
    return U64(a);
  }
  Unit& EndSequence() { return U8(0).Uleb(1).U8(1); }
  Unit& Copy() { return U8(1); }
  Unit& AdvancePc(uint64_t n) { return U8(2).Uleb(n); }
  Unit& AdvanceLine(int64_t n) { return U8(3).Sleb(n); }
  Unit& SetFile(uint64_t f) { return U8(4).Uleb(f); }
  Unit& Inlined(uint64_t context, uint64_t function) {
    Unit operands;
    operands.Uleb(context).Uleb(function);
    return U8(0).Uleb(1 + operands.size()).U8(0x90).Raw(operands.bytes());
  }

 private:
  std::string bytes_;
};

// A version 2..4 unit: `program` after a header with directories and files.
std::string UnitV2(int version, const std::vector<std::string>& dirs,
                   const std::vector<std::pair<std::string, int>>& files, const Unit& program) {
  Unit header;
  header.U8(1);                                             // minimum_instruction_length
  if (version >= 4) header.U8(1);                           // maximum_operations_per_instruction
  header.U8(1).U8(static_cast<uint8_t>(-5)).U8(14).U8(10);  // is_stmt, line_base, line_range, opcode_base
  for (uint8_t len : {0, 1, 1, 1, 1, 0, 0, 0, 1}) header.U8(len);
  for (const std::string& d : dirs) header.Str(d);
  header.U8(0);
  for (const auto& [name, dir] : files) header.Str(name).Uleb(dir).Uleb(0).Uleb(0);
  header.U8(0);
  Unit unit;
  unit.U16(static_cast<uint16_t>(version)).U32(static_cast<uint32_t>(header.size()));
  Unit out;
  out.U32(static_cast<uint32_t>(unit.size() + header.size() + program.size()));
  return out.bytes() + unit.bytes() + header.bytes() + program.bytes();
}

CubinLineTableInput InputFor(const std::string& bytes, std::span<const CubinLineRelocation> relocations = {}) {
  CubinLineTableInput in;
  in.debug_line = bytes;
  in.relocations = relocations;
  in.unrelocated_section = 7;
  return in;
}

// Unit offsets inside a whole section: the program starts after the unit
// header, so operand offsets are shifted by the prefix.
TEST(CubinLineTableTest, VersionFourProgramWithDirectoriesAndDefinedFiles) {
  Unit p;
  p.SetAddress(0x100).AdvanceLine(9).Copy();  // line 10 at 0x100
  p.U8(10 + 14 * 2 + 5 + 1);                  // special: address +2, line +1
  Unit define;                                // DW_LNE_define_file: file 3
  define.U8(3).Str("gen.h").Uleb(2).Uleb(0).Uleb(0);
  p.U8(0).Uleb(define.size()).Raw(define.bytes());
  p.SetFile(3).AdvancePc(0x10).AdvanceLine(5).Copy();
  p.SetFile(99).AdvancePc(0x10).Copy();  // no such file: a row without a path
  p.AdvancePc(0x10).EndSequence();
  const std::string bytes = UnitV2(4, {"/src", "/inc"}, {{"a.cu", 1}, {"/abs/b.cu", 2}}, p);
  StatusOr<CubinLineTable> t = ParseCubinLineTable(InputFor(bytes));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows.size(), 5u);
  EXPECT_EQ(t->files[t->rows[0].file], "/src/a.cu");
  EXPECT_EQ(t->rows[0].address, 0x100u);
  EXPECT_EQ(t->rows[0].line, 10u);
  EXPECT_EQ(t->rows[0].section, 7u);
  EXPECT_EQ(t->rows[1].address, 0x102u);
  EXPECT_EQ(t->rows[1].line, 11u);
  EXPECT_EQ(t->files[t->rows[2].file], "/inc/gen.h");
  EXPECT_EQ(t->rows[2].line, 16u);
  EXPECT_EQ(t->files[t->rows[3].file], "");
  EXPECT_EQ(t->rows[4].file, CubinLineTable::kNone);
  EXPECT_EQ(t->rows[3].address, 0x122u);
  EXPECT_EQ(t->rows[4].address, 0x132u);
  EXPECT_EQ(t->sequences, 1u);
}

TEST(CubinLineTableTest, VersionFiveEntryFormats) {
  const std::string line_str = std::string("/comp\0k.cu\0", 11);
  Unit header;
  header.U8(1).U8(1).U8(1).U8(static_cast<uint8_t>(-5)).U8(14).U8(13);
  for (uint8_t len : {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1}) header.U8(len);
  header.U8(1).Uleb(1).Uleb(0x1f);                                        // directories: path as line_strp
  header.Uleb(2).U32(0).U32(0);                                           // "/comp", and "/comp" again (index 1)
  header.U8(3).Uleb(1).Uleb(0x08).Uleb(2).Uleb(0x0b).Uleb(5).Uleb(0x1e);  // path string, dir data1, MD5
  header.Uleb(2);
  header.Str("k.cu").U8(0);
  for (int i = 0; i < 16; ++i) header.U8(0xaa);
  header.Str("/abs/h.h").U8(1);
  for (int i = 0; i < 16; ++i) header.U8(0xbb);
  Unit p;
  p.SetAddress(0).SetFile(0).AdvanceLine(3).Copy().SetFile(1).AdvancePc(16).Copy().U8(11).EndSequence();
  Unit pre;
  pre.U16(5).U8(8).U8(0).U32(static_cast<uint32_t>(header.size()));
  Unit len;
  len.U32(static_cast<uint32_t>(pre.size() + header.size() + p.size()));
  const std::string bytes = len.bytes() + pre.bytes() + header.bytes() + p.bytes();
  CubinLineTableInput in = InputFor(bytes);
  in.debug_line_str = line_str;
  StatusOr<CubinLineTable> t = ParseCubinLineTable(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->files[t->rows[0].file], "/comp/k.cu");  // file 0 exists in version 5
  EXPECT_EQ(t->rows[0].line, 4u);
  EXPECT_EQ(t->files[t->rows[1].file], "/abs/h.h");
  EXPECT_EQ(t->rows[1].address, 16u);
}

TEST(CubinLineTableTest, RelocationsNameTheSectionOfEachSequence) {
  Unit p;
  size_t first = 0;
  size_t second = 0;
  p.SetAddress(0, &first).Copy().AdvancePc(32).EndSequence();
  p.SetAddress(0, &second).AdvanceLine(1).Copy().AdvancePc(16).EndSequence();
  p.SetAddress(0x40).Copy().AdvancePc(16).EndSequence();  // no relocation, several code sections: dropped
  const std::string bytes = UnitV2(2, {}, {{"a.cu", 0}}, p);
  const size_t prefix = bytes.size() - p.size();
  const CubinLineRelocation relocations[] = {{prefix + first, {11, 0x200}}, {prefix + second, {12, 0}}};
  CubinLineTableInput in = InputFor(bytes, relocations);
  in.unrelocated_section = CubinLineTableInput::kNoSection;
  StatusOr<CubinLineTable> t = ParseCubinLineTable(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows.size(), 4u);
  EXPECT_EQ(t->rows[0].section, 11u);
  EXPECT_EQ(t->rows[0].address, 0x200u);
  EXPECT_EQ(t->rows[1].address, 0x220u);
  EXPECT_EQ(t->rows[2].section, 12u);
  EXPECT_EQ(t->rows[2].line, 2u);
  EXPECT_EQ(t->files[t->rows[0].file], "a.cu");  // directory 0: the compilation directory, not named
  EXPECT_EQ(t->sequences, 3u);
  EXPECT_EQ(t->sequences_dropped, 1u);
}

TEST(CubinLineTableTest, InlinedCallsChainThroughEarlierRows) {
  const std::string debug_str = std::string("_Z5outerv\0_Z5innerv\0", 20);
  Unit p;
  p.SetAddress(0).AdvanceLine(19).Copy();                // row 1: line 20, the kernel's own code
  p.Inlined(1, 0).AdvanceLine(-10).Copy();               // row 2: line 10 of outer(), called at row 1
  p.Inlined(2, 10).AdvanceLine(-5).Copy();               // row 3: line 5 of inner(), called at row 2
  p.Inlined(9, 10).AdvancePc(16).Copy();                 // row 4: context names a later row: ignored
  p.Inlined(0, 0).AdvancePc(16).AdvanceLine(15).Copy();  // row 5: back in the kernel
  p.AdvancePc(16).EndSequence();
  const std::string bytes = UnitV2(2, {}, {{"k.cu", 0}}, p);
  CubinLineTableInput in = InputFor(bytes);
  in.debug_str = debug_str;
  StatusOr<CubinLineTable> t = ParseCubinLineTable(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows.size(), 6u);
  EXPECT_EQ(t->rows[0].frame, CubinLineTable::kNone);
  const CubinLineTable::InlineFrame& outer = t->frames[t->rows[1].frame];
  EXPECT_EQ(t->inlined_functions[outer.function], "_Z5outerv");
  EXPECT_EQ(outer.call_line, 20u);
  EXPECT_EQ(outer.parent, CubinLineTable::kNone);
  const CubinLineTable::InlineFrame& inner = t->frames[t->rows[2].frame];
  EXPECT_EQ(t->inlined_functions[inner.function], "_Z5innerv");
  EXPECT_EQ(inner.call_line, 10u);
  EXPECT_EQ(inner.parent, t->rows[1].frame);
  EXPECT_EQ(t->rows[3].frame, CubinLineTable::kNone);
  EXPECT_EQ(t->rows[4].frame, CubinLineTable::kNone);
  EXPECT_EQ(t->rows[4].line, 20u);
}

TEST(CubinLineTableTest, MalformedUnitsAreErrors) {
  Unit p;
  p.SetAddress(0).Copy().EndSequence();
  const std::string good = UnitV2(2, {}, {{"k.cu", 0}}, p);
  auto error_of = [](std::string bytes) { return ParseCubinLineTable(InputFor(bytes)).status(); };
  ASSERT_TRUE(error_of(good).ok());

  std::string too_long = good;
  too_long[0] = '\x7f';
  EXPECT_NE(error_of(too_long).message().find("runs past the section"), std::string::npos);
  std::string version = good;
  version[4] = 7;
  EXPECT_EQ(error_of(version).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(error_of(version).message().find("version 7"), std::string::npos);
  std::string no_range = good;
  no_range[4 + 2 + 4 + 3] = 0;  // line_range
  EXPECT_NE(error_of(no_range).message().find("line_range 0"), std::string::npos);
  std::string no_base = good;
  no_base[4 + 2 + 4 + 4] = 0;  // opcode_base
  EXPECT_NE(error_of(no_base).message().find("opcode_base 0"), std::string::npos);
  EXPECT_FALSE(error_of(good.substr(0, good.size() - 2)).ok());      // truncated
  EXPECT_FALSE(error_of(good + std::string("\0\0\0\0\1", 5)).ok());  // a zero-length unit, then more
  EXPECT_TRUE(error_of(good + std::string(8, '\0')).ok());           // zero padding after the last unit

  Unit endless;
  endless.U8(2);
  for (int i = 0; i < 11; ++i) endless.U8(0x80);  // a ULEB128 of more than 64 bits
  endless.U8(0);
  EXPECT_FALSE(error_of(UnitV2(2, {}, {{"k.cu", 0}}, endless)).ok());
  Unit long_extended;
  long_extended.U8(0).Uleb(1000).U8(2);  // an extended opcode longer than the unit
  EXPECT_NE(error_of(UnitV2(2, {}, {{"k.cu", 0}}, long_extended)).message().find("runs past its unit"),
            std::string::npos);
}

TEST(CubinLineTableTest, RowsAreCapped) {
  Unit p;
  p.SetAddress(0);
  for (int i = 0; i < 100; ++i) p.AdvancePc(16).Copy();
  p.EndSequence();
  const std::string bytes = UnitV2(2, {}, {{"k.cu", 0}}, p);
  CubinLineTableInput in = InputFor(bytes);
  in.max_rows = 10;
  StatusOr<CubinLineTable> t = ParseCubinLineTable(in);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows.size(), 10u);
  EXPECT_TRUE(t->rows_capped);
}

// The rows of ptxas's table against binutils' decoding of the same bytes
// (`readelf --debug-dump=decodedline`, which prints every row's file, line
// and address, and "-" at the end of each sequence).
TEST(CubinLineTableTest, AgreesWithReadelfOnARealCubin) {
  const std::string path = kTestdata + "/kernels_lineinfo.cubin";
  std::unique_ptr<FILE, int (*)(FILE*)> readelf(
      ::popen(("readelf --debug-dump=decodedline " + path + " 2>/dev/null").c_str(), "r"), ::pclose);
  ASSERT_NE(readelf, nullptr);
  std::vector<std::pair<uint64_t, std::string>> expected;  // (address, line or "-")
  char buf[512];
  while (std::fgets(buf, sizeof(buf), readelf.get()) != nullptr) {
    std::istringstream line(buf);
    std::string file, number, address;
    if (!(line >> file >> number >> address) || file != "kernels.cu") continue;
    expected.emplace_back(std::stoull(address, nullptr, 0), number);
  }
  ASSERT_GT(expected.size(), 10u) << "readelf printed no rows";

  const std::string cubin = ReadFixture("kernels_lineinfo.cubin");
  CubinLineTableInput in;
  in.debug_line = SectionOf(cubin, ".debug_line");
  in.debug_str = SectionOf(cubin, ".debug_str");
  in.unrelocated_section = 1;  // the relocations are not this test's subject
  StatusOr<CubinLineTable> t = ParseCubinLineTable(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const CubinLineTable::Row& row = t->rows[i];
    EXPECT_EQ(row.address, expected[i].first) << "row " << i;
    EXPECT_EQ(row.file == CubinLineTable::kNone ? "-" : std::to_string(row.line), expected[i].second) << "row " << i;
  }
  EXPECT_EQ(t->sequences, 2u);
  EXPECT_FALSE(t->frames.empty());
}

}  // namespace
}  // namespace warpscope
