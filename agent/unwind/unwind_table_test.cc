// Page index invariants, merge effectiveness and build time on real binaries.
#include "agent/unwind/unwind_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

namespace warpscope {
namespace {

constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

bool Exists(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0;
}

ws_unwind_entry Entry(uint32_t pc, uint8_t type) { return ws_unwind_entry{pc, 8, type, 0}; }

TEST(PageIndex, Layout) {
  UnwindTable t;
  t.entries = {Entry(0, WS_CFA_SP),       Entry(0x100, WS_CFA_FP),   Entry(0x10000, WS_CFA_SP),
               Entry(0x18000, WS_CFA_SP), Entry(0x30000, WS_CFA_NONE), Entry(0x50000, WS_CFA_SP),
               Entry(0x50010, WS_CFA_NONE)};
  StatusOr<UnwindPageIndex> index = BuildPageIndex(t);
  ASSERT_TRUE(index.ok());
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> got;
  for (const auto& [page, p] : *index) got.emplace_back(page, p.first, p.count);
  // Pages 3 and 4 only hold the gap row: left out.
  EXPECT_EQ(got, (std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{
                     {0, 0, 2}, {1, 2, 2}, {2, 3, 1}, {5, 5, 2}}));
}

TEST(PageIndex, FullPageFitsTheSearchBound) {
  // A row in effect from the previous page plus 65535 rows: the most a page can hold.
  UnwindTable t;
  t.entries.push_back(Entry(0, WS_CFA_SP));
  for (uint32_t pc = 0x10001; pc < 0x20000; ++pc) t.entries.push_back(Entry(pc, pc % 2 ? WS_CFA_FP : WS_CFA_SP));
  t.entries.push_back(Entry(0x20000, WS_CFA_NONE));
  StatusOr<UnwindPageIndex> index = BuildPageIndex(t);
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->size(), 2u);
  EXPECT_EQ((*index)[1].second.count, 1u << 16);
  // Duplicate pcs (never built, but the bound is checked, not assumed).
  t.entries.insert(t.entries.begin() + 2, Entry(0x10001, WS_CFA_SP));
  EXPECT_FALSE(BuildPageIndex(t).ok());
}

// ws_find_row() of bpf/include/ws_unwind.h, step for step, over the index.
const ws_unwind_entry* BpfFindRow(const UnwindTable& t, const std::map<uint32_t, ws_unwind_page>& pages,
                                  uint64_t offset) {
  if (offset >> 32) return nullptr;
  auto it = pages.find(static_cast<uint32_t>(offset >> WS_UNWIND_PAGE_BITS));
  if (it == pages.end()) return nullptr;
  uint32_t lo = it->second.first, n = it->second.count;
  if (n == 0) return nullptr;
  const uint32_t pc = static_cast<uint32_t>(offset);
  for (int i = 0; i < WS_UNWIND_MAX_SEARCH_STEPS + 1; i++) {
    if (n <= 1) break;
    const uint32_t half = n / 2;
    const uint32_t mid = lo + half;
    if (t.entries[mid].pc <= pc) {
      lo = mid;
      n -= half;
    } else {
      n = half;
    }
  }
  const ws_unwind_entry* e = &t.entries[lo];
  return e->pc > pc ? nullptr : e;
}

TEST(PageIndex, LibcInvariantsAndBpfSearchAgree) {
  if (!Exists(kLibc)) GTEST_SKIP() << kLibc << " missing";
  StatusOr<UnwindTable> table = BuildUnwindTable(kLibc);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const UnwindTable& t = *table;
  // The load segments travel with the table (the agent derives load biases from them).
  ASSERT_FALSE(t.load_segments.empty());
  EXPECT_TRUE(std::any_of(t.load_segments.begin(), t.load_segments.end(),
                          [&](const LoadSegment& s) { return s.vaddr <= t.base_vaddr && s.file_size > 0; }));
  StatusOr<UnwindPageIndex> index = BuildPageIndex(t);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  std::map<uint32_t, ws_unwind_page> pages;
  uint32_t previous_page = 0;
  for (size_t i = 0; i < index->size(); ++i) {
    const auto& [page, p] = (*index)[i];
    if (i > 0) {
      ASSERT_GT(page, previous_page);
    }
    previous_page = page;
    const uint64_t start = uint64_t{page} << WS_UNWIND_PAGE_BITS;
    ASSERT_GE(p.count, 1u);
    ASSERT_LE(p.count, 1u << 16);
    ASSERT_LE(uint64_t{p.first} + p.count, t.entries.size());
    EXPECT_LE(t.entries[p.first].pc, start) << "page " << page;
    if (p.first + 1 < t.entries.size()) {
      EXPECT_GT(t.entries[p.first + 1].pc, start) << "page " << page;
    }
    for (uint32_t j = p.first + 1; j < p.first + p.count; ++j) {
      EXPECT_EQ(t.entries[j].pc >> WS_UNWIND_PAGE_BITS, page);
    }
    if (p.first + p.count < t.entries.size()) {
      EXPECT_GT(t.entries[p.first + p.count].pc >> WS_UNWIND_PAGE_BITS, page);
    }
    pages[page] = p;
  }
  // Every row that is not a gap row is reachable through its page.
  for (size_t i = 0; i < t.entries.size(); ++i) {
    if (t.entries[i].cfa_type == WS_CFA_NONE) continue;
    auto it = pages.find(t.entries[i].pc >> WS_UNWIND_PAGE_BITS);
    ASSERT_NE(it, pages.end()) << "row " << i;
    EXPECT_GE(i, it->second.first);
    EXPECT_LT(i, uint64_t{it->second.first} + it->second.count);
  }
  // The BPF search over the index finds what a plain binary search finds.
  std::mt19937_64 rng(7);
  const uint64_t span = uint64_t{t.entries.back().pc} + 0x20000;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t offset = rng() % span;
    const ws_unwind_entry* want = t.Lookup(t.base_vaddr + offset);
    const ws_unwind_entry* got = BpfFindRow(t, pages, offset);
    const uint8_t want_type = want == nullptr ? uint8_t{WS_CFA_NONE} : want->cfa_type;
    const uint8_t got_type = got == nullptr ? uint8_t{WS_CFA_NONE} : got->cfa_type;
    ASSERT_EQ(got_type, want_type) << "offset 0x" << std::hex << offset;
    if (got != nullptr && got_type != WS_CFA_NONE) {
      ASSERT_EQ(got, want);
    }
  }
  std::printf("libc: %zu rows, %zu index pages\n", t.entries.size(), index->size());
}

void LogTable(const char* path, const UnwindTable& t, size_t pages, double ms) {
  const UnwindTableStats& s = t.stats;
  std::printf(
      "%s: %.1f ms; %lu FDEs (%lu skipped, %lu overlapping, %lu outside code), %lu CIEs; rows %lu before merge -> "
      "%lu (%.1f%%); invalid %lu, plt %lu, end %lu, signal %lu, gap %lu; %zu pages; %zu bytes "
      "(entries*8 + pages*16)\n",
      path, ms, s.fdes, s.fdes_skipped, s.fdes_overlapping, s.fdes_outside_code, s.cies, s.rows_before_merge, s.rows,
      100.0 * static_cast<double>(s.rows) / static_cast<double>(std::max<uint64_t>(s.rows_before_merge, 1)),
      s.invalid_rows, s.plt_rows, s.end_rows, s.signal_rows, s.gap_rows, pages, t.entries.size() * 8 + pages * 16);
}

TEST(UnwindTable, LibcMergesRowsAndFindsSpecialFrames) {
  if (!Exists(kLibc)) GTEST_SKIP() << kLibc << " missing";
  StatusOr<UnwindTable> t = BuildUnwindTable(kLibc);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  StatusOr<UnwindPageIndex> index = BuildPageIndex(*t);
  ASSERT_TRUE(index.ok());
  LogTable(kLibc, *t, index->size(), 0);
  EXPECT_LT(t->stats.rows, t->stats.rows_before_merge);
  EXPECT_GT(t->stats.signal_rows, 0u);  // __restore_rt
  EXPECT_GT(t->stats.end_rows, 0u);     // clone, clone3
  EXPECT_EQ(t->stats.fdes_skipped, 0u);
  EXPECT_EQ(t->entries.front().pc, 0u);
  EXPECT_EQ(t->entries.back().cfa_type, WS_CFA_NONE);
  for (size_t i = 1; i < t->entries.size(); ++i) {
    ASSERT_LT(t->entries[i - 1].pc, t->entries[i].pc);
    const ws_unwind_entry& a = t->entries[i - 1];
    const ws_unwind_entry& b = t->entries[i];
    ASSERT_FALSE(a.cfa_type == b.cfa_type && a.cfa_offset == b.cfa_offset && a.fp_offset == b.fp_offset);
  }
}

// Build time and size on the biggest binaries around (libtorch_cuda.so is not
// installed here; libLLVM is the largest .eh_frame on this machine).
TEST(UnwindTable, BigBinariesBuildFast) {
  int built = 0;
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1", "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
                           "/usr/lib/x86_64-linux-gnu/libclang-14.so.14.0.6", "/usr/bin/python3.11", kLibc}) {
    if (!Exists(path)) continue;
    const auto start = std::chrono::steady_clock::now();
    StatusOr<UnwindTable> t = BuildUnwindTable(path);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    StatusOr<UnwindPageIndex> index = BuildPageIndex(*t);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(index.ok());
    LogTable(path, *t, index->size(), ms);
    EXPECT_LT(ms, 5000.0) << path;
    ++built;
    UnwindTableOptions padded;
    padded.max_padding_gap = 15;
    StatusOr<UnwindTable> compact = BuildUnwindTable(path, padded);
    ASSERT_TRUE(compact.ok());
    std::printf("  with max_padding_gap=15: %lu rows\n", compact->stats.rows);
  }
  if (built == 0) GTEST_SKIP() << "no big binaries installed";
}

// Built past the spill bound (FDEs sorted in runs of a spill file, rows
// written to another), a table has the same rows, page index and counts as
// built in memory: libc and python3 (with their .eh_frame), and the
// .debug_frame fixture, spilled above 1000 FDEs or rows.
TEST(UnwindTable, SpilledTablesMatchTablesBuiltInMemory) {
  int compared = 0;
  for (const char* path : {kLibc, "/usr/bin/python3.11", WS_UNWIND_FIXTURE_DEBUG_FRAME}) {
    if (!Exists(path)) continue;
    SCOPED_TRACE(path);
    UnwindTableOptions options;
    options.max_padding_gap = 15;
    StatusOr<UnwindTable> memory = BuildUnwindTable(path, options);
    ASSERT_TRUE(memory.ok()) << memory.status().ToString();
    options.spill_above = 1000;
    options.spill_dir = testing::TempDir();
    StatusOr<UnwindTable> spilled = BuildUnwindTable(path, options);
    ASSERT_TRUE(spilled.ok()) << spilled.status().ToString();
    EXPECT_EQ(spilled->spilled_rows != nullptr, memory->row_count() > 1000);
    EXPECT_TRUE(spilled->entries.empty() || spilled->spilled_rows == nullptr);
    std::vector<ws_unwind_entry> rows;
    ASSERT_TRUE(spilled->ForEachRows([&](std::span<const ws_unwind_entry> chunk) {
                          rows.insert(rows.end(), chunk.begin(), chunk.end());
                          return Status::Ok();
                        }).ok());
    ASSERT_EQ(rows.size(), memory->entries.size());
    EXPECT_EQ(std::memcmp(rows.data(), memory->entries.data(), rows.size() * sizeof(ws_unwind_entry)), 0);
    EXPECT_EQ(spilled->base_vaddr, memory->base_vaddr);
    EXPECT_EQ(spilled->stats.rows, memory->stats.rows);
    EXPECT_EQ(spilled->stats.rows_before_merge, memory->stats.rows_before_merge);
    EXPECT_EQ(spilled->stats.gap_rows, memory->stats.gap_rows);
    EXPECT_EQ(spilled->stats.fdes_overlapping, memory->stats.fdes_overlapping);
    EXPECT_EQ(spilled->stats.fdes_outside_code, memory->stats.fdes_outside_code);
    StatusOr<UnwindPageIndex> a = BuildPageIndex(*memory);
    StatusOr<UnwindPageIndex> b = BuildPageIndex(*spilled);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_EQ((*a)[i].first, (*b)[i].first);
      EXPECT_EQ((*a)[i].second.first, (*b)[i].second.first);
      EXPECT_EQ((*a)[i].second.count, (*b)[i].second.count);
    }
    ++compared;
  }
  EXPECT_GE(compared, 2);
}

TEST(UnwindTable, CompressedDebugFrame) {
  StatusOr<UnwindTable> plain = BuildUnwindTable(WS_UNWIND_FIXTURE_DEBUG_FRAME);
  StatusOr<UnwindTable> compressed = BuildUnwindTable(WS_UNWIND_FIXTURE_DEBUG_FRAME_GZ);
  ASSERT_TRUE(plain.ok() && compressed.ok());
  EXPECT_EQ(compressed->stats.unreadable_sections, 0u);
  EXPECT_EQ(compressed->base_vaddr, plain->base_vaddr);
  ASSERT_EQ(compressed->entries.size(), plain->entries.size());
  EXPECT_EQ(0, std::memcmp(compressed->entries.data(), plain->entries.data(), plain->entries.size() * 8));
  EXPECT_GT(compressed->stats.fdes, 6u);  // the fixture's own functions come from .debug_frame
}

TEST(UnwindTable, NonElfAndMissingFiles) {
  EXPECT_FALSE(BuildUnwindTable("/nonexistent/file").ok());
  StatusOr<UnwindTable> passwd = BuildUnwindTable("/etc/passwd");
  ASSERT_FALSE(passwd.ok());
  EXPECT_EQ(passwd.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(BuildUnwindTableFromMemory("").ok());
  EXPECT_FALSE(BuildUnwindTableFromMemory("\x7f" "ELF").ok());
  EXPECT_FALSE(BuildUnwindTableFromMemory(std::string(4096, '\0')).ok());
}

}  // namespace
}  // namespace warpscope
