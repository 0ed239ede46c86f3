// Corrupt inputs must give an error or a smaller table: never a crash, a hang
// or an out-of-bounds read (run under ASan to check the last).
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>

#include "agent/unwind/elf_cfi_image.h"
#include "agent/unwind/unwind_table.h"
#include "base/file_util.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// What every table must satisfy, whatever the input.
void CheckTableInvariants(const UnwindTable& t) {
  if (t.entries.empty()) return;
  ASSERT_EQ(t.entries.front().pc, 0u);
  ASSERT_EQ(t.entries.back().cfa_type, WS_CFA_NONE);
  for (size_t i = 1; i < t.entries.size(); ++i) ASSERT_LT(t.entries[i - 1].pc, t.entries[i].pc);
  for (const ws_unwind_entry& e : t.entries) ASSERT_LE(e.cfa_type, WS_CFA_INVALID);
  ASSERT_TRUE(BuildPageIndex(t).ok());
}

// The .eh_frame of a real binary, copied so it can be mutated.
struct EhFrameSample {
  CfiSection original;
  std::string bytes;
  std::vector<CodeRange> code;
};

EhFrameSample LoadEhFrame(const std::string& path) {
  EhFrameSample sample;
  StatusOr<ElfCfiImage> image = ElfCfiImage::Open(path);
  EXPECT_TRUE(image.ok()) << image.status().ToString();
  if (!image.ok()) return sample;
  for (const CfiSection& s : image->sections()) {
    if (s.kind != CfiSectionKind::kEhFrame) continue;
    sample.original = s;
    sample.bytes = std::string(s.data);
    sample.original.data = {};  // points into the image, which goes away here
  }
  sample.code = image->code_ranges();
  return sample;
}

// Builds from mutated bytes; returns the build time.
double BuildMutated(const EhFrameSample& sample, const std::string& bytes, bool with_code_ranges) {
  CfiSection s = sample.original;
  s.data = bytes;
  const auto start = Clock::now();
  StatusOr<UnwindTable> t =
      BuildUnwindTableFromSections({&s, 1}, with_code_ranges ? std::span<const CodeRange>(sample.code)
                                                             : std::span<const CodeRange>());
  const double ms = MsSince(start);
  if (t.ok()) CheckTableInvariants(*t);
  return ms;
}

TEST(CorruptInput, RandomMutationsOfLibcEhFrame) {
  EhFrameSample sample = LoadEhFrame("/usr/lib/x86_64-linux-gnu/libc.so.6");
  if (sample.bytes.empty()) sample = LoadEhFrame(WS_UNWIND_FIXTURE);
  ASSERT_FALSE(sample.bytes.empty());
  std::mt19937_64 rng(20240601);
  double worst_ms = 0;
  const auto start = Clock::now();
  for (int i = 0; i < 2000; ++i) {
    std::string m = sample.bytes;
    const int mutations = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < mutations && !m.empty(); ++k) {
      const size_t pos = rng() % m.size();
      switch (rng() % 6) {
        case 0: m[pos] = static_cast<char>(rng()); break;
        case 1: m[pos] = static_cast<char>(m[pos] ^ (1 << (rng() % 8))); break;
        case 2: m.resize(pos); break;
        case 3: m.replace(pos, std::min<size_t>(4, m.size() - pos), 4, '\xff'); break;
        case 4: m.replace(pos, std::min<size_t>(4, m.size() - pos), 4, '\0'); break;
        case 5: m.replace(pos, std::min<size_t>(2, m.size() - pos), 2, '\x7f'); break;
      }
    }
    worst_ms = std::max(worst_ms, BuildMutated(sample, m, /*with_code_ranges=*/i % 2 == 0));
    if (HasFatalFailure()) return;
  }
  std::printf("2000 mutated .eh_frame builds: %.0f ms total, worst %.1f ms\n", MsSince(start), worst_ms);
  EXPECT_LT(worst_ms, 2000.0);
}

TEST(CorruptInput, EverySingleByteOfTheFixtureEhFrame) {
  EhFrameSample sample = LoadEhFrame(WS_UNWIND_FIXTURE);
  ASSERT_FALSE(sample.bytes.empty());
  for (size_t pos = 0; pos < sample.bytes.size(); ++pos) {
    for (int variant = 0; variant < 4; ++variant) {
      std::string m = sample.bytes;
      const char values[] = {'\0', '\xff', static_cast<char>(m[pos] ^ 0x80), static_cast<char>(m[pos] + 1)};
      m[pos] = values[variant];
      BuildMutated(sample, m, variant % 2 == 0);
      if (HasFatalFailure()) return;
    }
    BuildMutated(sample, sample.bytes.substr(0, pos), true);  // truncated here
    if (HasFatalFailure()) return;
  }
}

TEST(CorruptInput, TruncatedElf) {
  StatusOr<std::string> elf = ReadFileToString(WS_UNWIND_FIXTURE);
  ASSERT_TRUE(elf.ok());
  const size_t size = elf->size();
  int ok = 0;
  for (size_t len = 0; len < size; len += (len < 256 ? 1 : size / 400 + 1)) {
    StatusOr<UnwindTable> t = BuildUnwindTableFromMemory(elf->substr(0, len));
    if (t.ok()) {
      ++ok;
      CheckTableInvariants(*t);
    }
  }
  StatusOr<UnwindTable> whole = BuildUnwindTableFromMemory(*elf);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_FALSE(whole->entries.empty());
  std::printf("truncated fixture ELF: %d prefixes gave a table\n", ok);
}

TEST(CorruptInput, GarbledElfHeaders) {
  StatusOr<std::string> elf = ReadFileToString(WS_UNWIND_FIXTURE);
  ASSERT_TRUE(elf.ok());
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, elf->data(), sizeof(ehdr));
  std::mt19937_64 rng(99);
  for (int i = 0; i < 1000; ++i) {
    std::string m = *elf;
    const int mutations = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < mutations; ++k) {
      // The ELF header and program headers, or the section header table.
      const bool headers = rng() % 2 == 0;
      const size_t base = headers ? 0 : ehdr.e_shoff;
      const size_t span = headers ? 1024 : m.size() - ehdr.e_shoff;
      const size_t pos = base + rng() % span;
      if (pos < m.size()) m[pos] = static_cast<char>(rng());
    }
    StatusOr<UnwindTable> t = BuildUnwindTableFromMemory(std::move(m));
    if (t.ok()) CheckTableInvariants(*t);
    if (HasFatalFailure()) return;
  }
}

TEST(CorruptInput, OtherMachinesAreRejected) {
  StatusOr<std::string> elf = ReadFileToString(WS_UNWIND_FIXTURE);
  ASSERT_TRUE(elf.ok());
  // x86-64 and AArch64 are known; RISC-V is not.
  std::string riscv = *elf;
  const uint16_t machine = EM_RISCV;
  std::memcpy(riscv.data() + offsetof(Elf64_Ehdr, e_machine), &machine, 2);
  StatusOr<UnwindTable> t = BuildUnwindTableFromMemory(riscv);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warpscope
