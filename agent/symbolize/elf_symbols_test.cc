#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "agent/symbolize/demangle.h"
#include "agent/symbolize/elf_symbols.h"
#include "base/spill_file.h"

namespace warpscope {
namespace {

const std::string kFixtureDir = WS_SYMFIXTURE_DIR;
const std::string kFixtureLib = kFixtureDir + "/libwsfixture.so";

// Build id as binutils reports it, for comparison with our own reader.
std::string ReadelfBuildId(const std::string& path) {
  FILE* p = popen(("readelf -n '" + path + "' 2>/dev/null").c_str(), "r");
  if (p == nullptr) return "";
  char line[512];
  std::string id;
  while (fgets(line, sizeof(line), p) != nullptr) {
    std::string s(line);
    const size_t pos = s.find("Build ID: ");
    if (pos != std::string::npos) {
      id = s.substr(pos + 10);
      while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    }
  }
  pclose(p);
  return id;
}

void* LibcGetpid() { return dlsym(RTLD_DEFAULT, "getpid"); }

std::string LibcPath() {
  Dl_info info;
  if (dladdr(LibcGetpid(), &info) == 0) return "";
  return info.dli_fname;
}

TEST(DemangleTest, Names) {
  EXPECT_EQ(Demangle("_ZN9wsfixture7ComputeEi"), "wsfixture::Compute(int)");
  EXPECT_EQ(Demangle("_ZN3foo3barEv@@V1"), "foo::bar()");
  EXPECT_EQ(Demangle("memcpy@@GLIBC_2.14"), "memcpy");
  EXPECT_EQ(Demangle("memcpy@GLIBC_2.2.5"), "memcpy");
  EXPECT_EQ(Demangle("foo@GLIBC"), "foo");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Zbogus"), "_Zbogus");
  EXPECT_EQ(Demangle("_ZN3foo3barEv.cold"), "foo::bar() [clone .cold]");
  EXPECT_EQ(Demangle(""), "");
  EXPECT_EQ(Demangle("@weird"), "@weird");
  EXPECT_EQ(StripSymbolVersion("a@b"), "a");
  // Rust: v0, and legacy without its hash; C++ that merely starts like them is untouched.
  EXPECT_EQ(Demangle("_RNvCs6ygKICNz7jq_17bash_tool_backend4main"), "bash_tool_backend::main");
  EXPECT_EQ(Demangle("_RNvNtCs1234_7mycrate3foo3bar"), "mycrate::foo::bar");
  EXPECT_EQ(Demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar");
  EXPECT_EQ(Demangle("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$"
                     "$GT$17h2f1c4f5b1a2b3c4dE"),
            "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
  EXPECT_EQ(Demangle("_ZN3foo3barE"), "foo::bar");
  EXPECT_EQ(Demangle("_Rbogus"), "_Rbogus");
}

TEST(ElfSymbolsTest, FixtureLibrary) {
  void* handle = dlopen(kFixtureLib.c_str(), RTLD_NOW);
  ASSERT_NE(handle, nullptr) << dlerror();
  StatusOr<std::unique_ptr<ElfSymbols>> elf = ElfSymbols::Load(kFixtureLib);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ((*elf)->build_id(), WS_SYMFIXTURE_BUILD_ID);
  EXPECT_EQ(ElfSymbols::ReadBuildId(kFixtureLib).value(), WS_SYMFIXTURE_BUILD_ID);
  EXPECT_EQ((*elf)->debug_file(), "");  // has its own .symtab
  EXPECT_GT((*elf)->MemoryBytes(), (*elf)->size() * 16);

  auto static_address = reinterpret_cast<void* (*)()>(dlsym(handle, "ws_fixture_static_address"));
  ASSERT_NE(static_address, nullptr);
  const struct {
    void* addr;
    const char* name;
  } cases[] = {
      {dlsym(handle, "ws_fixture_exported"), "ws_fixture_exported"},
      {dlsym(handle, "_ZN9wsfixture7ComputeEi"), "_ZN9wsfixture7ComputeEi"},
      {static_address(), "_ZL17ws_fixture_statici"},  // internal linkage is mangled too
  };
  for (const auto& c : cases) {
    ASSERT_NE(c.addr, nullptr) << c.name;
    Dl_info info;
    ASSERT_NE(dladdr(c.addr, &info), 0);
    // Shared objects: the ELF virtual address is the runtime one minus the load base.
    const uint64_t vaddr = reinterpret_cast<uint64_t>(c.addr) - reinterpret_cast<uint64_t>(info.dli_fbase);
    auto sym = (*elf)->Lookup(vaddr);
    ASSERT_TRUE(sym.has_value()) << c.name;
    EXPECT_EQ(sym->name, c.name);
    EXPECT_EQ(sym->start, vaddr);
    EXPECT_GT(sym->size, 4u);
    auto inside = (*elf)->Lookup(vaddr + sym->size - 1);
    ASSERT_TRUE(inside.has_value());
    EXPECT_EQ(inside->name, c.name);
  }
  EXPECT_FALSE((*elf)->Lookup(0).has_value());
  EXPECT_FALSE((*elf)->Lookup(~uint64_t{0}).has_value());
  dlclose(handle);
}

TEST(ElfSymbolsTest, Errors) {
  EXPECT_EQ(ElfSymbols::Load("/nonexistent/lib.so").status().code(), StatusCode::kNotFound);
  const std::string text = "/tmp/ws_not_elf." + std::to_string(getpid());
  std::ofstream(text) << "definitely not an ELF file";
  StatusOr<std::unique_ptr<ElfSymbols>> elf = ElfSymbols::Load(text);
  EXPECT_FALSE(elf.ok());
  EXPECT_FALSE(ElfSymbols::ReadBuildId(text).ok());
  std::ofstream(text, std::ios::trunc) << "";
  EXPECT_FALSE(ElfSymbols::Load(text).ok());
  std::ofstream(text, std::ios::trunc) << "\x7f" "ELF\x02\x01\x01";  // truncated header
  EXPECT_FALSE(ElfSymbols::Load(text).ok());
  unlink(text.c_str());
  EXPECT_FALSE(ElfSymbols::LoadFromMemory("garbage").ok());
}

TEST(ElfSymbolsTest, SplitDebugFiles) {
  for (const std::string variant : {"bid", "nobid"}) {
    const std::string lib = kFixtureDir + "/split/libwsfixture_split_" + variant + ".so";
    const std::string dbg = kFixtureDir + "/split/.debug/libwsfixture_split_" + variant + ".so.debug";
    StatusOr<std::unique_ptr<ElfSymbols>> elf = ElfSymbols::Load(lib);
    ASSERT_TRUE(elf.ok()) << elf.status().ToString();
    EXPECT_EQ((*elf)->debug_file(), dbg) << variant;
    EXPECT_EQ((*elf)->build_id().empty(), variant == "nobid");
    ElfLoadOptions no_debug;
    no_debug.search_debug_files = false;
    StatusOr<std::unique_ptr<ElfSymbols>> dynsym_only = ElfSymbols::Load(lib, no_debug);
    ASSERT_TRUE(dynsym_only.ok());
    EXPECT_GT((*elf)->size(), (*dynsym_only)->size());  // the static function is only in .debug
  }
  // A debug file that does not match (wrong CRC / build id) is ignored.
  const std::filesystem::path tmp = "/tmp/ws_split_mismatch." + std::to_string(getpid());
  std::filesystem::create_directories(tmp / ".debug");
  for (const std::string variant : {"bid", "nobid"}) {
    const std::string other = variant == "bid" ? "nobid" : "bid";
    std::filesystem::copy_file(kFixtureDir + "/split/libwsfixture_split_" + variant + ".so",
                               tmp / ("libwsfixture_split_" + variant + ".so"));
    std::filesystem::copy_file(kFixtureDir + "/split/.debug/libwsfixture_split_" + other + ".so.debug",
                               tmp / ".debug" / ("libwsfixture_split_" + variant + ".so.debug"));
    StatusOr<std::unique_ptr<ElfSymbols>> elf = ElfSymbols::Load(tmp / ("libwsfixture_split_" + variant + ".so"));
    ASSERT_TRUE(elf.ok());
    EXPECT_EQ((*elf)->debug_file(), "") << variant;
  }
  std::filesystem::remove_all(tmp);
}

TEST(ElfSymbolsTest, LibcBuildIdAndDebugFile) {
  const std::string libc = LibcPath();
  ASSERT_FALSE(libc.empty());
  StatusOr<std::string> id = ElfSymbols::ReadBuildId(libc);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const std::string readelf = ReadelfBuildId(libc);
  if (readelf.empty()) GTEST_SKIP() << "readelf not available";
  EXPECT_EQ(*id, readelf);

  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<ElfSymbols>> elf = ElfSymbols::Load(libc);
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  std::printf("libc: %zu symbols, %zu bytes, debug file '%s', loaded in %.1f ms\n", (*elf)->size(),
              (*elf)->MemoryBytes(), (*elf)->debug_file().c_str(), ms);
  EXPECT_LT(ms, 1000.0);
  const std::string debug = "/usr/lib/debug/.build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug";
  if (std::filesystem::exists(debug)) {
    EXPECT_EQ((*elf)->debug_file(), debug);
  }

  Dl_info info;
  ASSERT_NE(dladdr(LibcGetpid(), &info), 0);
  auto sym = (*elf)->Lookup(reinterpret_cast<uint64_t>(LibcGetpid()) - reinterpret_cast<uint64_t>(info.dli_fbase));
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->name, "getpid");
}


// A table kept in a file answers every lookup as the same table in memory:
// this test binary (thousands of symbols with sizes, aliases and size-0
// labels), spilled above 50 symbols in runs of 37 so that the merge has many
// runs and blocks end at odd places. Every 8th address of its first 32 MB is
// looked up.
TEST(ElfSymbolsTest, SpilledTableAnswersAsTheTableInMemory) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  auto in_memory = ElfSymbols::Load(self);
  ASSERT_TRUE(in_memory.ok()) << in_memory.status().ToString();
  ASSERT_FALSE((*in_memory)->spilled());
  ElfLoadOptions options;
  options.spill_above_symbols = 50;
  options.spill_run_symbols = 37;
  options.spill_dir = testing::TempDir();
  const SymbolSpillStats before = ReadSymbolSpillStats();
  auto spilled = ElfSymbols::Load(self, options);
  ASSERT_TRUE(spilled.ok()) << spilled.status().ToString();
  ASSERT_TRUE((*spilled)->spilled());
  EXPECT_EQ(ReadSymbolSpillStats().tables, before.tables + 1);
  EXPECT_GT(SpillDiskBytes(), 0u);
  ASSERT_GT((*in_memory)->size(), 1000u);
  EXPECT_EQ((*spilled)->size(), (*in_memory)->size());
  EXPECT_LT((*spilled)->MemoryBytes(), (*in_memory)->MemoryBytes() / 2);
  EXPECT_EQ((*spilled)->build_id(), (*in_memory)->build_id());

  uint64_t named = 0, differing = 0;
  for (uint64_t vaddr = 0; vaddr < (uint64_t{32} << 20); vaddr += 8) {  // PIE: its code is in the first MBs
    const std::optional<ElfSymbol> a = (*in_memory)->Lookup(vaddr);
    const std::optional<ElfSymbol> b = (*spilled)->Lookup(vaddr);
    if (a.has_value() != b.has_value() || (a && (a->name != b->name || a->start != b->start || a->size != b->size))) {
      if (++differing <= 5) ADD_FAILURE() << "0x" << std::hex << vaddr << ": " << (a ? a->name : "-") << " vs "
                                          << (b ? b->name : "-");
    }
    named += a.has_value();
  }
  EXPECT_EQ(differing, 0u);
  EXPECT_GT(named, 10000u);
}

// Where no file can be made, the table stays in memory, whole, and the
// failure is counted.
TEST(ElfSymbolsTest, ASpillThatCannotBeMadeKeepsTheTableInMemory) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  ElfLoadOptions options;
  options.spill_above_symbols = 50;
  options.spill_dir = "/nonexistent/warpscope-spill";
  const SymbolSpillStats before = ReadSymbolSpillStats();
  auto table = ElfSymbols::Load(self, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_FALSE((*table)->spilled());
  EXPECT_EQ(ReadSymbolSpillStats().failures, before.failures + 1);
  auto whole = ElfSymbols::Load(self);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*table)->size(), (*whole)->size());
}

}  // namespace
}  // namespace warpscope
