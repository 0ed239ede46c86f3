#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>

#include "agent/symbolize/kernel_symbols.h"

namespace warpscope {
namespace {

constexpr char kKallsyms[] =
    "0000000000000000 A fixed_percpu_data\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81000000 t startup_64\n"
    "ffffffff81000100 T __x64_sys_read\n"
    "ffffffff81000100 T ksys_read\n"
    "ffffffff81000200 t helper_local\n"
    "ffffffff81000300 D some_data\n"
    "ffffffff81000400 W weak_fn\n"
    "garbage line\n"
    "ffffffff81000500 T _etext\n"
    "ffffffffc0a01000 t nv_open\t[nvidia]\n"
    "ffffffffc0a01100 T nv_ioctl\t[nvidia]\n"
    "ffffffffc0a01200 r nv_table\t[nvidia]\n"
    "ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n";

TEST(KernelSymbolsTest, ParsesFixture) {
  KernelSymbols k = KernelSymbols::Parse(kKallsyms);
  EXPECT_FALSE(k.addresses_hidden());
  EXPECT_EQ(k.size(), 8u);  // aliases merged, data and absolute symbols dropped

  auto sym = k.Lookup(0xffffffff81000010);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->name, "_stext");  // global before local, then by name
  EXPECT_EQ(sym->module, "");
  EXPECT_EQ(sym->start, 0xffffffff81000000u);

  sym = k.Lookup(0xffffffff81000150);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->name, "ksys_read");  // fewer leading underscores
  EXPECT_EQ(k.Lookup(0xffffffff81000350)->name, "helper_local");  // data symbols do not end text ones
  EXPECT_EQ(k.Lookup(0xffffffff81000400)->name, "weak_fn");
  EXPECT_FALSE(k.Lookup(0xffffffff80000000).has_value());

  sym = k.Lookup(0xffffffffc0a01180);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->name, "nv_ioctl");
  EXPECT_EQ(sym->module, "nvidia");
  EXPECT_EQ(sym->module_range.start, 0xffffffffc0a01000u);
  EXPECT_EQ(sym->module_range.limit, 0xffffffffc0a01101u);

  sym = k.Lookup(0xffffffffc0b00010);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->module, "bpf");

  // The last symbol of a module does not swallow the gap to the next module.
  EXPECT_FALSE(k.Lookup(0xffffffffc0a01100 + KernelSymbols::kMaxLastSymbolSize + 1).has_value());
  // ...nor does the kernel's last symbol reach into modules.
  EXPECT_FALSE(k.Lookup(0xffffffffc0000000).has_value());

  const KernelTextRange core = k.Range("");
  EXPECT_EQ(core.start, 0xffffffff81000000u);
  EXPECT_EQ(core.limit, 0xffffffff81000501u);
  EXPECT_EQ(k.Range("nope").limit, 0u);
  EXPECT_GT(k.MemoryBytes(), 0u);
}

TEST(KernelSymbolsTest, HiddenAddresses) {
  constexpr char kHidden[] =
      "0000000000000000 T _stext\n"
      "0000000000000000 t startup_64\n"
      "0000000000000000 t nv_open\t[nvidia]\n";
  KernelSymbols k = KernelSymbols::Parse(kHidden);
  EXPECT_TRUE(k.addresses_hidden());
  EXPECT_EQ(k.size(), 0u);
  EXPECT_FALSE(KernelSymbols::Parse("").addresses_hidden());

  char path[] = "/tmp/ws_kallsyms.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << kHidden;
  StatusOr<KernelSymbols> loaded = KernelSymbols::Load(path);
  unlink(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(loaded.status().message().find("kptr_restrict"), std::string::npos);

  EXPECT_EQ(KernelSymbols::Load("/nonexistent/kallsyms").status().code(), StatusCode::kNotFound);
}

TEST(KernelSymbolsTest, RealKallsyms) {
  StatusOr<KernelSymbols> k = KernelSymbols::Load();
  if (!k.ok() && k.status().code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << k.status().ToString();
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_GT(k->size(), 1000u);
  const KernelTextRange core = k->Range("");
  EXPECT_LT(core.start, core.limit);
  auto sym = k->Lookup(core.start);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->module, "");

  // Kept in a spill file, the table answers as the same table in memory (no
  // spill file can be made there), for every 64th byte of the kernel's text
  // and of every module, and holds a fraction of its memory.
  StatusOr<KernelSymbols> spilled = KernelSymbols::Load("/proc/kallsyms", testing::TempDir());
  StatusOr<KernelSymbols> memory = KernelSymbols::Load("/proc/kallsyms", "/nonexistent/warpscope-spill");
  ASSERT_TRUE(spilled.ok() && memory.ok());
  ASSERT_TRUE(spilled->spilled());
  ASSERT_FALSE(memory->spilled());
  EXPECT_EQ(spilled->size(), memory->size());
  EXPECT_LT(spilled->MemoryBytes() * 4, memory->MemoryBytes());
  uint64_t compared = 0;
  for (uint64_t addr = core.start; addr < core.limit + 4096 && compared < 2'000'000; addr += 64, ++compared) {
    const auto a = spilled->Lookup(addr);
    const auto b = memory->Lookup(addr);
    ASSERT_EQ(a.has_value(), b.has_value()) << std::hex << addr;
    if (!a) continue;
    ASSERT_EQ(a->name, b->name) << std::hex << addr;
    ASSERT_EQ(a->start, b->start);
    ASSERT_EQ(a->module, b->module);
    ASSERT_EQ(a->module_range.start, b->module_range.start);
  }
  EXPECT_GT(compared, 1000u);
}

}  // namespace
}  // namespace warpscope
