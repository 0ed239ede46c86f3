#include "agent/symbolize/cubin_symbols.h"
#include "agent/symbolize/cubin_test_fixtures.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "tests/support/scratch_dir.h"

namespace warpscope {
namespace {

const std::string kTestdata = WS_CUBIN_TESTDATA;
// kernels.cu as nvcc -cubin -arch=sm_90 builds it, with and without -lineinfo.
const std::string kScale = "_ZN4demo5scaleEPfPKffi";
const std::string kSqrtSlowPath = "$__internal_0_$__cuda_sm20_sqrt_rn_f32_slowpath";

using cubin_test::ReadFixture;

// The line of kernels.cu that carries "MARK: <name>".
int Mark(const std::string& name) {
  std::istringstream source(ReadFixture("kernels.cu"));
  std::string text;
  for (int line = 1; std::getline(source, text); ++line) {
    if (text.find("MARK: " + name) != std::string::npos) return line;
  }
  ADD_FAILURE() << "no marker " << name;
  return -1;
}

CubinSymbolsOptions NoSass() {
  CubinSymbolsOptions options;
  options.sass = CubinSymbolsOptions::Sass::kDisabled;
  return options;
}

CubinSymbols ParseFixture(const std::string& name, const CubinSymbolsOptions& options = NoSass()) {
  StatusOr<CubinSymbols> symbols = CubinSymbols::Parse(ReadFixture(name), options);
  EXPECT_TRUE(symbols.ok()) << name << ": " << symbols.status().ToString();
  return std::move(symbols).value();
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A section's place in an ELF image.
using cubin_test::SectionPlace;
SectionPlace Section(const std::string& elf, const std::string& name) {
  const SectionPlace place = cubin_test::FindSection(elf, name);
  if (!place.found) ADD_FAILURE() << "no section " << name;
  return place;
}

void Store64(std::string& bytes, size_t offset, uint64_t v) { std::memcpy(bytes.data() + offset, &v, sizeof(v)); }

TEST(CubinSymbolsTest, FunctionsSizesAndNames) {
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin");
  EXPECT_EQ(symbols.sm(), 90);
  ASSERT_EQ(symbols.functions().size(), 3u);
  const GpuFunction* add_one = symbols.FindFunction("add_one");
  ASSERT_NE(add_one, nullptr);
  EXPECT_EQ(add_one->size, 0x200u);
  EXPECT_TRUE(add_one->entry);
  const GpuFunction* scale = symbols.FindFunction(kScale);
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->size, 0x400u);  // its section, the sqrt slow path included
  EXPECT_TRUE(scale->entry);
  const GpuFunction* slow_path = symbols.FindFunction(kSqrtSlowPath);
  ASSERT_NE(slow_path, nullptr);
  EXPECT_EQ(slow_path->size, 0x200u);
  EXPECT_FALSE(slow_path->entry);

  EXPECT_EQ(symbols.DemangledName(kScale), "demo::scale(float*, float const*, float, int)");
  EXPECT_EQ(symbols.DemangledName("add_one"), "add_one");
  EXPECT_EQ(symbols.DemangledName("no_such_kernel"), "");
  EXPECT_EQ(symbols.FindFunction("no_such_kernel"), nullptr);
}

// Expected lines come from the markers in kernels.cu, and match what
// `readelf --debug-dump=decodedline` prints for the cubin (sequence 1 is
// demo::scale, sequence 2 add_one, by .rela.debug_line).
TEST(CubinSymbolsTest, LinesOfTheKernelsOwnCode) {
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin");
  ASSERT_TRUE(symbols.has_lines()) << symbols.lines_unavailable_reason();
  EXPECT_EQ(symbols.lines_unavailable_reason(), "");
  const std::pair<std::string, std::pair<uint64_t, std::string>> cases[] = {
      {"add_one", {0x10, "add_one_index"}},  {"add_one", {0x40, "add_one_index"}},
      {"add_one", {0x80, "add_one_store"}},  {kScale, {0x10, "scale_index"}},
      {kScale, {0x80, "scale_calls_scale"}}, {kScale, {0x1b0, "scale_calls_scale"}},
  };
  for (const auto& [function, at] : cases) {
    std::optional<GpuInstruction> ins = symbols.Find(function, at.first);
    ASSERT_TRUE(ins.has_value()) << function << "+" << at.first;
    EXPECT_EQ(ins->offset, at.first);
    EXPECT_EQ(ins->line, Mark(at.second)) << function << "+" << at.first;
    EXPECT_TRUE(EndsWith(ins->file, "/testdata/cubin/kernels.cu")) << ins->file;
    EXPECT_TRUE(ins->inlined.empty()) << function << "+" << at.first;
  }
}

TEST(CubinSymbolsTest, InlinedCallsWithTheirCallSites) {
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin");
  // Scale() inlined into demo::scale.
  std::optional<GpuInstruction> mul = symbols.Find(kScale, 0xa0);
  ASSERT_TRUE(mul.has_value());
  EXPECT_EQ(mul->line, Mark("scale_mul"));
  ASSERT_EQ(mul->inlined.size(), 1u);
  EXPECT_EQ(mul->inlined[0].function, "Scale(float, float)");
  EXPECT_EQ(mul->inlined[0].call_line, Mark("scale_calls_scale"));
  EXPECT_EQ(mul->inlined[0].call_file, mul->file);

  // Bias() inlined into Scale(), itself inlined into demo::scale.
  for (uint64_t offset : {0xd0, 0xf0, 0x1c0}) {
    std::optional<GpuInstruction> sqrt = symbols.Find(kScale, offset);
    ASSERT_TRUE(sqrt.has_value());
    EXPECT_EQ(sqrt->line, Mark("bias_sqrt")) << offset;
    ASSERT_EQ(sqrt->inlined.size(), 2u) << offset;
    EXPECT_EQ(sqrt->inlined[0].function, "Bias(float)");
    EXPECT_EQ(sqrt->inlined[0].call_line, Mark("scale_calls_bias"));
    EXPECT_EQ(sqrt->inlined[1].function, "Scale(float, float)");
    EXPECT_EQ(sqrt->inlined[1].call_line, Mark("scale_calls_scale"));
  }
}

// The slow path is a symbol inside demo::scale's section: its offsets are
// its own, and the same instructions are reachable from the kernel.
TEST(CubinSymbolsTest, SubroutineOffsetsCountFromTheSubroutine) {
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin");
  std::optional<GpuInstruction> own = symbols.Find(kSqrtSlowPath, 0x30);
  std::optional<GpuInstruction> via_kernel = symbols.Find(kScale, 0x230);
  ASSERT_TRUE(own.has_value());
  ASSERT_TRUE(via_kernel.has_value());
  EXPECT_EQ(own->offset, 0x30u);
  EXPECT_EQ(own->line, via_kernel->line);
  EXPECT_EQ(own->sass, kSqrtSlowPath + "+0x30");
  EXPECT_EQ(via_kernel->sass, kScale + "+0x230");
  EXPECT_EQ(symbols.Instructions(kSqrtSlowPath).size(), 0x200u / 16);
}

TEST(CubinSymbolsTest, OnlyInstructionsOfKnownFunctionsAreFound) {
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin");
  EXPECT_TRUE(symbols.Find("add_one", 0x1f0).has_value());
  EXPECT_FALSE(symbols.Find("add_one", 0x200).has_value());  // past the end
  EXPECT_FALSE(symbols.Find("add_one", UINT64_MAX).has_value());
  EXPECT_FALSE(symbols.Find("add_one", 0x18).has_value());  // not an instruction boundary
  EXPECT_FALSE(symbols.Find("no_such_kernel", 0).has_value());
  EXPECT_TRUE(symbols.Instructions("no_such_kernel").empty());
}

TEST(CubinSymbolsTest, WithoutLineinfoFunctionsRemain) {
  const CubinSymbols symbols = ParseFixture("kernels_nolineinfo.cubin");
  EXPECT_FALSE(symbols.has_lines());
  EXPECT_NE(symbols.lines_unavailable_reason().find("without -lineinfo"), std::string::npos)
      << symbols.lines_unavailable_reason();
  ASSERT_EQ(symbols.functions().size(), 3u);
  ASSERT_NE(symbols.FindFunction("add_one"), nullptr);
  EXPECT_EQ(symbols.FindFunction("add_one")->size, 0x200u);
  std::optional<GpuInstruction> ins = symbols.Find(kScale, 0x10);
  ASSERT_TRUE(ins.has_value());
  EXPECT_EQ(ins->line, 0);
  EXPECT_EQ(ins->file, "");
  EXPECT_TRUE(ins->inlined.empty());
  EXPECT_EQ(ins->sass, kScale + "+0x10");
}

TEST(CubinSymbolsTest, WithoutNvdisasmInstructionsAreNamedByOffset) {
  testing::ScratchDir empty;
  CubinSymbolsOptions options;
  options.search_dirs = empty.path();
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin", options);
  EXPECT_FALSE(symbols.has_sass());
  EXPECT_NE(symbols.sass_unavailable_reason().find("no nvdisasm in " + empty.path()), std::string::npos)
      << symbols.sass_unavailable_reason();
  std::optional<GpuInstruction> ins = symbols.Find("add_one", 0x40);
  ASSERT_TRUE(ins.has_value());
  EXPECT_EQ(ins->sass, "add_one+0x40");
  EXPECT_EQ(ins->line, Mark("add_one_index"));

  const std::vector<GpuInstruction> all = symbols.Instructions("add_one");
  ASSERT_EQ(all.size(), 0x200u / 16);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].offset, 16 * i);
  EXPECT_EQ(all[8].line, Mark("add_one_store"));

  options.sass = CubinSymbolsOptions::Sass::kPath;
  options.nvdisasm_path = empty.Path("nvdisasm");
  const CubinSymbols explicit_path = ParseFixture("kernels_lineinfo.cubin", options);
  EXPECT_NE(explicit_path.sass_unavailable_reason().find(empty.Path("nvdisasm")), std::string::npos);

  const CubinSymbols disabled = ParseFixture("kernels_lineinfo.cubin");
  EXPECT_FALSE(disabled.has_sass());
  EXPECT_NE(disabled.sass_unavailable_reason().find("turned off"), std::string::npos);
}

// A real sm_80 cubin (a kernel and the double-division slow path it calls)
// with the listing nvdisasm printed for it.
TEST(CubinSymbolsTest, SassFromTheListingOfTheCubin) {
  StatusOr<CubinSymbols> parsed =
      CubinSymbols::ParseWithSass(ReadFixture("sm80_subroutine.cubin"), ReadFixture("sm80_subroutine.nvdisasm.txt"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const CubinSymbols& symbols = *parsed;
  EXPECT_EQ(symbols.sm(), 80);
  ASSERT_TRUE(symbols.has_sass()) << symbols.sass_unavailable_reason();
  EXPECT_FALSE(symbols.has_lines());
  const std::string slow_path = "$__internal_0_$__cuda_sm20_div_rn_f64_full";
  ASSERT_NE(symbols.FindFunction(slow_path), nullptr);
  EXPECT_EQ(symbols.FindFunction(slow_path)->size, 1424u);

  std::optional<GpuInstruction> first = symbols.Find(slow_path, 0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->sass, "IMAD.MOV.U32 R3, RZ, RZ, 0x3ff7d784");
  std::optional<GpuInstruction> same = symbols.Find("write_float", 0x1670);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->sass, first->sass);
  EXPECT_EQ(symbols.Find("write_float", 0x30)->sass, "DADD R4, R4, 1");
  EXPECT_EQ(symbols.Find(slow_path, 0x1aa0 - 0x1670)->sass, "@P0 LOP3.LUT R2, R9, 0x7ff00000, RZ, 0xfc, !PT");

  const std::vector<GpuInstruction> all = symbols.Instructions("write_float");
  ASSERT_EQ(all.size(), 0x1c00u / 16);
  for (const GpuInstruction& ins : all) EXPECT_EQ(ins.sass.find("write_float+"), std::string::npos) << ins.offset;
  EXPECT_EQ(symbols.Instructions(slow_path).size(), 1424u / 16);
}

TEST(CubinSymbolsTest, ListingCoversEveryFunctionOfAThreeKernelCubin) {
  StatusOr<CubinSymbols> parsed = CubinSymbols::ParseWithSass(ReadFixture("sm80_three_kernels.cubin"),
                                                              ReadFixture("sm80_three_kernels.nvdisasm.txt"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->functions().size(), 3u);
  for (const GpuFunction& f : parsed->functions()) {
    const std::vector<GpuInstruction> all = parsed->Instructions(f.name);
    EXPECT_EQ(all.size(), f.size / 16) << f.name;
    EXPECT_TRUE(EndsWith(all.front().sass, "R1, RZ, RZ, c[0x0][0x28]") || all.front().sass == "MOV R1, c[0x0][0x28]")
        << f.name << ": " << all.front().sass;  // the stack pointer, the first thing every kernel sets
  }
  // A listing of another cubin attaches nothing.
  StatusOr<CubinSymbols> other =
      CubinSymbols::ParseWithSass(ReadFixture("sm80_three_kernels.cubin"), ReadFixture("sm80_subroutine.nvdisasm.txt"));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_sass());
  EXPECT_NE(other->sass_unavailable_reason().find("no instructions"), std::string::npos);
}

// Runs NVIDIA's nvdisasm where it is installed (it is not on every build
// machine: it comes with the CUDA toolkit).
TEST(CubinSymbolsTest, RealNvdisasmWhereInstalled) {
  const char* path = std::getenv("PATH");
  StatusOr<std::string> nvdisasm = FindNvdisasm("", std::string(path ? path : "") + ":/usr/local/cuda/bin");
  if (!nvdisasm.ok()) GTEST_SKIP() << nvdisasm.status().message();
  CubinSymbolsOptions options;
  options.sass = CubinSymbolsOptions::Sass::kPath;
  options.nvdisasm_path = *nvdisasm;
  const CubinSymbols symbols = ParseFixture("kernels_lineinfo.cubin", options);
  ASSERT_TRUE(symbols.has_sass()) << symbols.sass_unavailable_reason();
  for (const GpuFunction& f : symbols.functions()) {
    for (const GpuInstruction& ins : symbols.Instructions(f.name)) {
      EXPECT_NE(ins.sass.rfind(f.name + "+0x", 0), 0u) << "no SASS for " << f.name << "+" << ins.offset;
    }
  }
}

TEST(CubinSymbolsMalformedTest, WhatIsNotACubin) {
  const CubinSymbolsOptions options = NoSass();
  EXPECT_EQ(CubinSymbols::Parse("", options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CubinSymbols::Parse("garbage", options).status().code(), StatusCode::kInvalidArgument);
  const std::string host_elf = [] {
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  StatusOr<CubinSymbols> host = CubinSymbols::Parse(host_elf, options);
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(host.status().message().find("not a CUDA cubin"), std::string::npos) << host.status().message();

  CubinSymbolsOptions small = options;
  small.max_cubin_bytes = 4096;
  EXPECT_EQ(CubinSymbols::Parse(ReadFixture("kernels_lineinfo.cubin"), small).status().code(),
            StatusCode::kResourceExhausted);
}

TEST(CubinSymbolsMalformedTest, TruncatedAnywhere) {
  const std::string cubin = ReadFixture("kernels_lineinfo.cubin");
  for (size_t len = 0; len < cubin.size(); len += 7) {
    StatusOr<CubinSymbols> symbols = CubinSymbols::Parse(std::string_view(cubin).substr(0, len), NoSass());
    if (!symbols.ok()) continue;
    for (const GpuFunction& f : symbols->functions()) symbols->Instructions(f.name);
  }
  EXPECT_FALSE(CubinSymbols::Parse(std::string_view(cubin).substr(0, 63), NoSass()).ok());
  EXPECT_TRUE(CubinSymbols::Parse(cubin, NoSass()).ok());
}

// Errors of the line table cost the lines, not the functions.
TEST(CubinSymbolsMalformedTest, BrokenLineTableKeepsFunctions) {
  const std::string cubin = ReadFixture("kernels_lineinfo.cubin");
  const SectionPlace rela = Section(cubin, ".rela.debug_line");
  const SectionPlace line = Section(cubin, ".debug_line");
  ASSERT_EQ(rela.size, 2 * sizeof(Elf64_Rela));

  auto reason_with = [&](const std::function<void(std::string&)>& patch) {
    std::string bytes = cubin;
    patch(bytes);
    StatusOr<CubinSymbols> symbols = CubinSymbols::Parse(bytes, NoSass());
    EXPECT_TRUE(symbols.ok()) << symbols.status().ToString();
    if (!symbols.ok()) return std::string();
    EXPECT_FALSE(symbols->has_lines());
    EXPECT_EQ(symbols->functions().size(), 3u);
    EXPECT_TRUE(symbols->Find("add_one", 0x10).has_value());
    return symbols->lines_unavailable_reason();
  };
  const size_t info = rela.offset + offsetof(Elf64_Rela, r_info);
  EXPECT_NE(reason_with([&](std::string& b) { Store64(b, info, (uint64_t{999} << 32) | 2); }).find("names symbol 999"),
            std::string::npos);
  EXPECT_NE(reason_with([&](std::string& b) { Store64(b, info, (uint64_t{1} << 32) | 2); }).find("holds no code"),
            std::string::npos);
  EXPECT_NE(reason_with([&](std::string& b) { Store64(b, rela.offset, 1 << 30); }).find("past .debug_line"),
            std::string::npos);
  EXPECT_NE(reason_with([&](std::string& b) { b[line.offset + 3] = '\x7f'; }).find("runs past the section"),
            std::string::npos);
  EXPECT_NE(reason_with([&](std::string& b) { b[line.offset + 13] = 0; }).find("line_range 0"), std::string::npos);
  EXPECT_NE(reason_with([&](std::string& b) { b[line.offset + 4] = 9; }).find("version 9"), std::string::npos);
}

// Random corruption of a real cubin: every parse ends, with an error or a
// table whose every lookup works.
TEST(CubinSymbolsMalformedTest, RandomMutationsNeverCrash) {
  const std::string cubin = ReadFixture("kernels_lineinfo.cubin");
  const SectionPlace line = Section(cubin, ".debug_line");
  std::mt19937_64 rng(20240607);
  std::map<StatusCode, int> outcomes;
  for (int round = 0; round < 400; ++round) {
    std::string bytes = cubin;
    // Half the rounds aim at the line table, where most of the parsing is.
    const bool in_lines = round % 2 == 0;
    const size_t base = in_lines ? line.offset : 0;
    const size_t span = in_lines ? line.size : bytes.size();
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) bytes[base + rng() % span] = static_cast<char>(rng());
    StatusOr<CubinSymbols> symbols = CubinSymbols::Parse(bytes, NoSass());
    ++outcomes[symbols.status().code()];
    if (!symbols.ok()) continue;
    for (const GpuFunction& f : symbols->functions()) {
      symbols->Find(f.name, 0);
      symbols->Find(f.name, f.size - 16);
      for (const GpuInstruction& ins : symbols->Instructions(f.name)) EXPECT_LE(ins.inlined.size(), 64u);
    }
  }
  EXPECT_GT(outcomes[StatusCode::kOk], 0);
}

}  // namespace
}  // namespace warpscope
