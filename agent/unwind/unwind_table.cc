#include "agent/unwind/unwind_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "agent/elf/elf_file.h"

namespace warpscope {
namespace {

constexpr uint64_t kMaxCoveredRange = uint64_t{1} << 32;
constexpr uint64_t kMaxRowsPerPage = uint64_t{1} << WS_UNWIND_MAX_SEARCH_STEPS;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

bool InsideCode(std::span<const CodeRange> ranges, uint64_t begin, uint64_t end) {
  if (ranges.empty()) return true;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                             [](uint64_t pc, const CodeRange& r) { return pc < r.begin; });
  if (it == ranges.begin()) return false;
  --it;
  return begin >= it->begin && end <= it->end;
}

// Appends rows in pc order, merging a row into its predecessor when the rule is
// the same.
class RowSink {
 public:
  explicit RowSink(UnwindTable* table) : table_(table) {}

  void Append(uint64_t pc, uint8_t cfa_type, uint16_t cfa_offset, int8_t fp_offset) {
    ++table_->stats.rows_before_merge;
    std::vector<ws_unwind_entry>& entries = table_->entries;
    if (!entries.empty()) {
      const ws_unwind_entry& last = entries.back();
      if (last.cfa_type == cfa_type && last.cfa_offset == cfa_offset && last.fp_offset == fp_offset) return;
    }
    ws_unwind_entry e;
    e.pc = static_cast<uint32_t>(pc - table_->base_vaddr);
    e.cfa_offset = cfa_offset;
    e.cfa_type = cfa_type;
    e.fp_offset = fp_offset;
    entries.push_back(e);
  }
  void AppendGap(uint64_t pc) { Append(pc, WS_CFA_NONE, 0, 0); }

 private:
  UnwindTable* table_;
};

void CountRowKinds(UnwindTable* table) {
  UnwindTableStats& s = table->stats;
  s.rows = table->entries.size();
  for (const ws_unwind_entry& e : table->entries) {
    switch (e.cfa_type) {
      case WS_CFA_NONE: ++s.gap_rows; break;
      case WS_CFA_INVALID: ++s.invalid_rows; break;
      case WS_CFA_PLT: ++s.plt_rows; break;
      case WS_CFA_END: ++s.end_rows; break;
      case WS_CFA_SIGNAL: ++s.signal_rows; break;
      default: break;
    }
  }
}

}  // namespace

const ws_unwind_entry* UnwindTable::Lookup(uint64_t vaddr) const {
  const uint64_t offset = vaddr - base_vaddr;
  if (vaddr < base_vaddr || offset >= kMaxCoveredRange || entries.empty()) return nullptr;
  auto it = std::upper_bound(entries.begin(), entries.end(), static_cast<uint32_t>(offset),
                             [](uint32_t pc, const ws_unwind_entry& e) { return pc < e.pc; });
  if (it == entries.begin()) return nullptr;
  return &*(it - 1);
}

StatusOr<UnwindTable> BuildUnwindTableFromSections(std::span<const CfiSection> sections,
                                                   std::span<const CodeRange> code_ranges,
                                                   const UnwindTableOptions& options) {
  UnwindTable table;
  CfiParser parser(sections, options.rows);
  std::vector<FdeInfo> fdes;
  parser.CollectFdes(&fdes);

  auto outside = std::remove_if(fdes.begin(), fdes.end(), [&](const FdeInfo& f) {
    return !InsideCode(code_ranges, f.pc_begin, f.pc_begin + f.pc_length);
  });
  table.stats.fdes_outside_code = static_cast<uint64_t>(fdes.end() - outside);
  fdes.erase(outside, fdes.end());
  std::sort(fdes.begin(), fdes.end(), [](const FdeInfo& a, const FdeInfo& b) {
    return a.pc_begin != b.pc_begin ? a.pc_begin < b.pc_begin : a.sequence < b.sequence;
  });

  // GCC output averages 6-10 rows per FDE; start there and let the vector grow.
  table.entries.reserve(fdes.size() * 6 + 1);
  std::vector<UnwindRow> rows;  // one FDE's rows, reused
  RowSink sink(&table);
  bool any = false;
  uint64_t covered_end = 0;
  for (const FdeInfo& fde : fdes) {
    const uint64_t end = fde.pc_begin + fde.pc_length;
    if (any && fde.pc_begin < covered_end) {
      ++table.stats.fdes_overlapping;
      continue;
    }
    rows.clear();
    if (!parser.EvaluateFde(fde, &rows)) continue;
    if (!any) {
      table.base_vaddr = fde.pc_begin;
      any = true;
    } else if (fde.pc_begin - covered_end > options.max_padding_gap) {
      sink.AppendGap(covered_end);
    }
    if (end - table.base_vaddr >= kMaxCoveredRange) {
      return InvalidArgumentError("CFI covers more than 4 GiB of code, from " + Hex(table.base_vaddr) + " to " +
                                  Hex(end));
    }
    for (const UnwindRow& row : rows) sink.Append(row.pc, row.cfa_type, row.cfa_offset, row.fp_offset);
    covered_end = end;
  }
  if (any) sink.AppendGap(covered_end);
  table.entries.shrink_to_fit();

  const CfiParseStats& ps = parser.stats();
  table.stats.cies = ps.cies;
  table.stats.fdes = ps.fdes;
  table.stats.fdes_skipped = ps.fdes_skipped;
  table.stats.truncated_sections = ps.truncated_sections;
  CountRowKinds(&table);
  return table;
}

StatusOr<UnwindTable> BuildUnwindTable(const std::string& elf_path, const UnwindTableOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::Open(elf_path));
  return BuildUnwindTable(std::move(file), options);
}

StatusOr<UnwindTable> BuildUnwindTable(std::shared_ptr<ElfFile> file, const UnwindTableOptions& options) {
  const std::string path = file->path();
  ASSIGN_OR_RETURN(ElfCfiImage image, ElfCfiImage::FromFile(std::move(file)));
  StatusOr<UnwindTable> table = BuildUnwindTableFromSections(image.sections(), image.code_ranges(), options);
  if (!table.ok()) return table.status().WithContext(path);
  table->stats.unreadable_sections = image.unreadable_sections();
  table->load_segments = image.load_segments();
  return table;
}

StatusOr<UnwindTable> BuildUnwindTableFromMemory(std::string bytes, const UnwindTableOptions& options) {
  ASSIGN_OR_RETURN(ElfCfiImage image, ElfCfiImage::FromMemory(std::move(bytes)));
  ASSIGN_OR_RETURN(UnwindTable table, BuildUnwindTableFromSections(image.sections(), image.code_ranges(), options));
  table.stats.unreadable_sections = image.unreadable_sections();
  table.load_segments = image.load_segments();
  return table;
}

StatusOr<UnwindPageIndex> BuildPageIndex(const UnwindTable& table) {
  UnwindPageIndex index;
  const std::vector<ws_unwind_entry>& entries = table.entries;
  if (entries.empty()) return index;
  const uint32_t last_page = entries.back().pc >> WS_UNWIND_PAGE_BITS;
  size_t first = 0;  // the row in effect at the current page's start
  for (uint64_t page = entries.front().pc >> WS_UNWIND_PAGE_BITS; page <= last_page; ++page) {
    const uint64_t page_start = page << WS_UNWIND_PAGE_BITS;
    const uint64_t next_start = page_start + (uint64_t{1} << WS_UNWIND_PAGE_BITS);
    while (first + 1 < entries.size() && entries[first + 1].pc <= page_start) ++first;
    if (entries[first].pc > page_start) continue;  // before the first row (a base that is not page-aligned)
    size_t end = first + 1;
    while (end < entries.size() && entries[end].pc < next_start) ++end;
    const uint64_t count = end - first;
    if (count == 1 && entries[first].cfa_type == WS_CFA_NONE) continue;
    if (count > kMaxRowsPerPage) {
      return FailedPreconditionError("unwind page " + std::to_string(page) + " needs " + std::to_string(count) +
                                     " rows, more than the BPF search covers");
    }
    index.push_back({static_cast<uint32_t>(page), ws_unwind_page{static_cast<uint32_t>(first),
                                                                  static_cast<uint32_t>(count)}});
  }
  return index;
}

}  // namespace warpscope
