#include "agent/symbolize/nvdisasm.h"
#include "agent/symbolize/cubin_test_fixtures.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/scratch_dir.h"

namespace warpscope {
namespace {

const std::string kTestdata = WS_CUBIN_TESTDATA;

using cubin_test::ReadFixture;

void WriteExecutable(const std::string& path, const std::string& contents) {
  std::ofstream(path) << contents;
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0) << path;
}

const NvdisasmSection* SectionNamed(const NvdisasmListing& listing, const std::string& name) {
  for (const NvdisasmSection& s : listing.sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const NvdisasmInstruction* At(const NvdisasmSection& section, uint64_t offset) {
  for (const NvdisasmInstruction& i : section.instructions) {
    if (i.offset == offset) return &i;
  }
  return nullptr;
}

// Real output of `nvdisasm` (no flags) for a cubin of three kernels: the
// code sections' instructions, none of the data sections' lines.
TEST(NvdisasmParseTest, ReadsCodeSectionsOfARealListing) {
  const NvdisasmListing listing = ParseNvdisasmOutput(ReadFixture("sm80_three_kernels.nvdisasm.txt"));
  ASSERT_EQ(listing.sections.size(), 3u);
  struct Expected {
    const char* name;
    size_t count;
    const char* first;
  };
  const Expected expected[] = {
      {".text.write_float_sum", 0x180 / 16, "MOV R1, c[0x0][0x28]"},
      {".text.write_float_value", 0x100 / 16, "IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]"},
      {".text.write_float_ptr", 0x180 / 16, "MOV R1, c[0x0][0x28]"},
  };
  for (const auto& [name, count, first] : expected) {
    const NvdisasmSection* s = SectionNamed(listing, name);
    ASSERT_NE(s, nullptr) << name;
    ASSERT_EQ(s->instructions.size(), count) << name;
    for (size_t i = 0; i < s->instructions.size(); ++i) {
      EXPECT_EQ(s->instructions[i].offset, 16 * i) << name;
      EXPECT_FALSE(s->instructions[i].opcode.empty());
      EXPECT_NE(s->instructions[i].opcode.front(), '.') << name << " " << s->instructions[i].Text();
    }
    EXPECT_EQ(s->instructions.front().Text(), first) << name;
    EXPECT_EQ(s->instructions.back().Text(), "NOP") << name;
  }
}

TEST(NvdisasmParseTest, SplitsPredicateOpcodeAndOperands) {
  const NvdisasmListing listing = ParseNvdisasmOutput(ReadFixture("sm80_subroutine.nvdisasm.txt"));
  ASSERT_EQ(listing.sections.size(), 1u);
  const NvdisasmSection& s = listing.sections[0];
  EXPECT_EQ(s.name, ".text.write_float");
  EXPECT_EQ(s.instructions.size(), 0x1c00u / 16);

  const NvdisasmInstruction* predicated = At(s, 0x1aa0);
  ASSERT_NE(predicated, nullptr);
  EXPECT_EQ(predicated->predicate, "@P0");
  EXPECT_EQ(predicated->opcode, "LOP3.LUT");
  EXPECT_EQ(predicated->operands, "R2, R9, 0x7ff00000, RZ, 0xfc, !PT");
  EXPECT_EQ(predicated->Text(), "@P0 LOP3.LUT R2, R9, 0x7ff00000, RZ, 0xfc, !PT");

  const NvdisasmInstruction* negated = At(s, 0x1ab0);
  ASSERT_NE(negated, nullptr);
  EXPECT_EQ(negated->Text(), "@!P0 IMAD.MOV.U32 R8, RZ, RZ, RZ");

  // The subroutine's first instruction, after its .weak/.type/.size lines and label.
  const NvdisasmInstruction* subroutine = At(s, 0x1670);
  ASSERT_NE(subroutine, nullptr);
  EXPECT_EQ(subroutine->Text(), "IMAD.MOV.U32 R3, RZ, RZ, 0x3ff7d784");

  const NvdisasmInstruction* ret = At(s, 0x1b30);
  ASSERT_NE(ret, nullptr);
  EXPECT_EQ(ret->opcode, "RET.REL.NODEC");
  EXPECT_EQ(ret->operands, "R2 `(write_float)");
  const NvdisasmInstruction* self_branch = At(s, 0x1b40);
  ASSERT_NE(self_branch, nullptr);
  EXPECT_EQ(self_branch->Text(), "BRA `(.L_x_6)");
  const NvdisasmInstruction* nop = At(s, 0x1b50);
  ASSERT_NE(nop, nullptr);
  EXPECT_EQ(nop->opcode, "NOP");
  EXPECT_EQ(nop->operands, "");
}

// The forms the listing takes with --print-code, -g (source lines as
// comments) and -hex (encodings after the instruction and on a line of
// their own).
TEST(NvdisasmParseTest, ReadsLineCommentsAndEncodings) {
  const std::string text =
      "\t.target\tsm_90\n"
      "\t.section\t.text.k,\"ax\",@progbits\n"
      "        .type           k,@function\n"
      "k:\n"
      ".text.k:\n"
      "\t//## File \"/work/k.cu\", line 12 inlined at \"/work/k.cu\", line 30\n"
      "\t//## File \"/work/k.cu\", line 30\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;          /* 0x00000a00ff017b82 */\n"
      "                                                                  /* 0x000e220000000800 */\n"
      "        /*0010*/              @!P0 BRA 0x50 ;                      /* 0x0000002000008947 */\n"
      "                                                                  /* 0x000fea0003800000 */\n"
      ".L_x_0:\n"
      "        /*0020*/                   BRA `(.L_x_0);\n"
      "\t.section\t.nv.constant0.k,\"a\",@progbits\n"
      "        /*0000*/ \t.byte\t0x00, 0x01\n";
  const NvdisasmListing listing = ParseNvdisasmOutput(text);
  ASSERT_EQ(listing.sections.size(), 1u);
  const NvdisasmSection& s = listing.sections[0];
  EXPECT_EQ(s.name, ".text.k");
  ASSERT_EQ(s.instructions.size(), 3u);
  EXPECT_EQ(s.instructions[0].Text(), "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(s.instructions[1].Text(), "@!P0 BRA 0x50");
  EXPECT_EQ(s.instructions[2].Text(), "BRA `(.L_x_0)");
}

TEST(NvdisasmParseTest, SkipsWhatItDoesNotKnow) {
  const std::string text =
      "/*0000*/ LDC R1, c[0x0][0x28] ;\n"  // before any section
      "\t.section\t.text.k,\"ax\",@progbits\n"
      "/*zzzz*/ MOV R1, R2 ;\n"
      "/*00000000000000000010*/ MOV R1, R2 ;\n"  // more than 16 digits
      "/*0010*/\n"
      "/*0020*/ ;\n"
      "/*0030*/ @P0\n"
      "/*\n"
      "\t.section\n"
      "\t.section\t,\"ax\"\n"
      "/*0040*/ EXIT ;\n"
      "\t.section\t.text.j,\"ax\n"  // unterminated flags: not code
      "/*0050*/ EXIT ;\n"
      "\t.section\t.text.m,\"ax\",@progbits\n"
      "/*ffffffffffffffff*/ EXIT";
  const NvdisasmListing listing = ParseNvdisasmOutput(text);
  ASSERT_EQ(listing.sections.size(), 2u);
  EXPECT_EQ(listing.sections[0].name, ".text.k");
  ASSERT_EQ(listing.sections[0].instructions.size(), 1u);
  EXPECT_EQ(listing.sections[0].instructions[0].offset, 0x40u);
  EXPECT_EQ(listing.sections[1].name, ".text.m");
  ASSERT_EQ(listing.sections[1].instructions.size(), 1u);
  EXPECT_EQ(listing.sections[1].instructions[0].offset, UINT64_MAX);
}

TEST(FindNvdisasmTest, ExplicitPathMustBeAnExecutable) {
  testing::ScratchDir dir;
  EXPECT_EQ(FindNvdisasm(dir.Path("missing"), "").status().code(), StatusCode::kNotFound);
  std::ofstream(dir.Path("plain")) << "not a program";
  StatusOr<std::string> plain = FindNvdisasm(dir.Path("plain"), "");
  EXPECT_EQ(plain.status().code(), StatusCode::kNotFound);
  EXPECT_NE(plain.status().message().find("is not an executable file"), std::string::npos);
  WriteExecutable(dir.Path("tool"), "#!/bin/sh\n");
  StatusOr<std::string> tool = FindNvdisasm(dir.Path("tool"), "/usr/bin");
  ASSERT_TRUE(tool.ok()) << tool.status().ToString();
  EXPECT_EQ(*tool, dir.Path("tool"));
}

TEST(FindNvdisasmTest, SearchesDirectoriesInOrder) {
  testing::ScratchDir first;
  testing::ScratchDir second;
  WriteExecutable(second.Path("nvdisasm"), "#!/bin/sh\n");
  StatusOr<std::string> found = FindNvdisasm("", "::" + first.path() + ":" + second.path());
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, second.Path("nvdisasm"));

  StatusOr<std::string> none = FindNvdisasm("", first.path());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no nvdisasm in " + first.path()), std::string::npos);
  EXPECT_NE(none.status().message().find("CUDA toolkit"), std::string::npos);
}

// The run's contract with the program: its arguments, a file holding the
// cubin, and the file gone afterwards.
TEST(RunNvdisasmTest, PassesTheCubinInATemporaryFile) {
  testing::ScratchDir dir;
  WriteExecutable(dir.Path("nvdisasm"), "#!/bin/sh\necho \"$1\"\nwc -c < \"$2\"\n");
  NvdisasmRunOptions options;
  options.temp_dir = dir.Path("tmp");
  std::filesystem::create_directory(options.temp_dir);
  StatusOr<std::string> out = RunNvdisasm(dir.Path("nvdisasm"), std::string(1000, 'x'), options);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "--print-code\n1000\n");
  EXPECT_TRUE(std::filesystem::is_empty(options.temp_dir));
}

TEST(RunNvdisasmTest, FailedExitCarriesStderr) {
  testing::ScratchDir dir;
  WriteExecutable(dir.Path("nvdisasm"), "#!/bin/sh\necho 'nvdisasm fatal : bad input' >&2\nexit 3\n");
  NvdisasmRunOptions options;
  options.temp_dir = dir.path();
  StatusOr<std::string> out = RunNvdisasm(dir.Path("nvdisasm"), "cubin", options);
  EXPECT_EQ(out.status().code(), StatusCode::kInternal);
  EXPECT_NE(out.status().message().find("exited with status 3: nvdisasm fatal : bad input"), std::string::npos)
      << out.status().message();
}

TEST(RunNvdisasmTest, StopsAProgramThatDoesNotFinish) {
  testing::ScratchDir dir;
  WriteExecutable(dir.Path("nvdisasm"), "#!/bin/sh\nexec sleep 60\n");
  NvdisasmRunOptions options;
  options.temp_dir = dir.path();
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> out = RunNvdisasm(dir.Path("nvdisasm"), "cubin", options);
  EXPECT_EQ(out.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1) << "temporary file left behind";
}

TEST(RunNvdisasmTest, StopsAProgramThatClosesItsOutputButStays) {
  testing::ScratchDir dir;
  WriteExecutable(dir.Path("nvdisasm"), "#!/bin/sh\nexec >&- 2>&-\nexec sleep 60\n");
  NvdisasmRunOptions options;
  options.temp_dir = dir.path();
  options.timeout = std::chrono::milliseconds(300);
  EXPECT_EQ(RunNvdisasm(dir.Path("nvdisasm"), "cubin", options).status().code(), StatusCode::kDeadlineExceeded);
}

TEST(RunNvdisasmTest, StopsAProgramThatPrintsTooMuch) {
  testing::ScratchDir dir;
  WriteExecutable(dir.Path("nvdisasm"), "#!/bin/sh\nexec yes\n");
  NvdisasmRunOptions options;
  options.temp_dir = dir.path();
  options.max_output_bytes = 1 << 20;
  StatusOr<std::string> out = RunNvdisasm(dir.Path("nvdisasm"), "cubin", options);
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << out.status().ToString();
  EXPECT_NE(out.status().message().find("more than 1048576 bytes"), std::string::npos);
}

TEST(RunNvdisasmTest, ReportsWhatCannotStart) {
  testing::ScratchDir dir;
  NvdisasmRunOptions options;
  options.temp_dir = dir.path();
  EXPECT_FALSE(RunNvdisasm(dir.Path("missing"), "cubin", options).ok());
  options.temp_dir = dir.Path("no-such-dir");
  StatusOr<std::string> out = RunNvdisasm("/bin/true", "cubin", options);
  EXPECT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("temporary file"), std::string::npos);
}

}  // namespace
}  // namespace warpscope
