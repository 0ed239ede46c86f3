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

// FDEs handled between two calls of the release_pages callback.
constexpr size_t kReleaseEvery = 4096;

// Appends rows in pc order, merging a row into its predecessor when the rule is
// the same, and counts their kinds. Past `spill_above` rows they go to a spill
// file a chunk at a time.
class RowSink {
 public:
  RowSink(UnwindTable* table, const UnwindTableOptions& options)
      : table_(table), spill_above_(options.spill_above), dir_(options.spill_dir) {}

  Status Append(uint64_t pc, uint8_t cfa_type, uint16_t cfa_offset, int8_t fp_offset) {
    ++table_->stats.rows_before_merge;
    if (have_last_ && last_.cfa_type == cfa_type && last_.cfa_offset == cfa_offset && last_.fp_offset == fp_offset) {
      return Status::Ok();
    }
    ws_unwind_entry e;
    e.pc = static_cast<uint32_t>(pc - table_->base_vaddr);
    e.cfa_offset = cfa_offset;
    e.cfa_type = cfa_type;
    e.fp_offset = fp_offset;
    last_ = e;
    have_last_ = true;
    CountKind(e);
    table_->entries.push_back(e);
    ++rows_;
    if (table_->entries.size() >= UnwindTable::kRowChunk && (file_ != nullptr || rows_ > spill_above_)) {
      return Flush();
    }
    return Status::Ok();
  }
  Status AppendGap(uint64_t pc) { return Append(pc, WS_CFA_NONE, 0, 0); }

  Status Finish() {
    table_->stats.rows = rows_;
    if (file_ != nullptr) {
      RETURN_IF_ERROR(Flush());
      table_->entries = {};
      table_->spilled_rows = std::move(file_);
    } else {
      table_->entries.shrink_to_fit();
    }
    return Status::Ok();
  }
  bool spill_failed() const { return spill_failed_; }

 private:
  Status Flush() {
    if (file_ == nullptr && !spill_failed_) {
      StatusOr<SpillFile> file = SpillFile::Create(dir_);
      if (file.ok()) {
        file_ = std::make_shared<SpillFile>(std::move(*file));
      } else {
        spill_failed_ = true;  // the rows stay in memory
      }
    }
    if (file_ == nullptr) return Status::Ok();
    std::vector<ws_unwind_entry>& rows = table_->entries;
    RETURN_IF_ERROR(file_->Append(rows.data(), rows.size() * sizeof(ws_unwind_entry)));
    const bool first = file_->size() == rows.size() * sizeof(ws_unwind_entry);
    rows.clear();
    if (first) rows.shrink_to_fit();  // it grew to spill_above before the first chunk went out
    return Status::Ok();
  }
  void CountKind(const ws_unwind_entry& e) {
    UnwindTableStats& s = table_->stats;
    switch (e.cfa_type) {
      case WS_CFA_NONE: ++s.gap_rows; break;
      case WS_CFA_INVALID: ++s.invalid_rows; break;
      case WS_CFA_PLT: ++s.plt_rows; break;
      case WS_CFA_END: ++s.end_rows; break;
      case WS_CFA_SIGNAL: ++s.signal_rows; break;
      default: break;
    }
  }

  UnwindTable* table_;
  const size_t spill_above_;
  const std::string dir_;
  ws_unwind_entry last_{};
  bool have_last_ = false;
  uint64_t rows_ = 0;
  std::shared_ptr<SpillFile> file_;
  bool spill_failed_ = false;
};

struct FdeOrder {
  bool operator()(const FdeInfo& a, const FdeInfo& b) const {
    return a.pc_begin != b.pc_begin ? a.pc_begin < b.pc_begin : a.sequence < b.sequence;
  }
};

}  // namespace

const ws_unwind_entry* UnwindTable::Lookup(uint64_t vaddr) const {
  const uint64_t offset = vaddr - base_vaddr;
  if (vaddr < base_vaddr || offset >= kMaxCoveredRange || entries.empty() || spilled_rows) return nullptr;
  auto it = std::upper_bound(entries.begin(), entries.end(), static_cast<uint32_t>(offset),
                             [](uint32_t pc, const ws_unwind_entry& e) { return pc < e.pc; });
  if (it == entries.begin()) return nullptr;
  return &*(it - 1);
}

Status UnwindTable::ForEachRows(const std::function<Status(std::span<const ws_unwind_entry>)>& take) const {
  if (!spilled_rows) {
    for (size_t at = 0; at < entries.size(); at += kRowChunk) {
      RETURN_IF_ERROR(take(std::span<const ws_unwind_entry>(entries).subspan(at, std::min(kRowChunk, entries.size() - at))));
    }
    return Status::Ok();
  }
  std::vector<ws_unwind_entry> chunk;
  for (uint64_t at = 0; at < stats.rows; at += kRowChunk) {
    chunk.resize(std::min<uint64_t>(kRowChunk, stats.rows - at));
    RETURN_IF_ERROR(spilled_rows->ReadAt(at * sizeof(ws_unwind_entry), chunk.data(),
                                         chunk.size() * sizeof(ws_unwind_entry)));
    RETURN_IF_ERROR(take(chunk));
  }
  return Status::Ok();
}

StatusOr<UnwindTable> BuildUnwindTableFromSections(std::span<const CfiSection> sections,
                                                   std::span<const CodeRange> code_ranges,
                                                   const UnwindTableOptions& options,
                                                   const std::function<void()>& release_pages) {
  UnwindTable table;
  CfiParser parser(sections, options.rows);
  // The FDEs inside the code, sorted by pc (in runs of a spill file past
  // options.spill_above).
  SortedRuns<FdeInfo, FdeOrder> fdes(options.spill_above, UnwindTable::kRowChunk, options.spill_dir);
  Status collected;
  size_t handled = 0;
  auto release = [&] {
    if (release_pages && ++handled % kReleaseEvery == 0) release_pages();
  };
  parser.CollectFdes([&](const FdeInfo& f) {
    release();
    if (!InsideCode(code_ranges, f.pc_begin, f.pc_begin + f.pc_length)) {
      ++table.stats.fdes_outside_code;
      return;
    }
    if (collected.ok()) collected = fdes.Add(f);
  });
  RETURN_IF_ERROR(collected);
  RETURN_IF_ERROR(fdes.Finish());

  std::vector<UnwindRow> rows;  // one FDE's rows, reused
  RowSink sink(&table, options);
  bool any = false;
  uint64_t covered_end = 0;
  auto each = [&](const FdeInfo& fde) -> Status {
    release();
    const uint64_t end = fde.pc_begin + fde.pc_length;
    if (any && fde.pc_begin < covered_end) {
      ++table.stats.fdes_overlapping;
      return Status::Ok();
    }
    rows.clear();
    if (!parser.EvaluateFde(fde, &rows)) return Status::Ok();
    if (!any) {
      table.base_vaddr = fde.pc_begin;
      any = true;
    } else if (fde.pc_begin - covered_end > options.max_padding_gap) {
      RETURN_IF_ERROR(sink.AppendGap(covered_end));
    }
    if (end - table.base_vaddr >= kMaxCoveredRange) {
      return InvalidArgumentError("CFI covers more than 4 GiB of code, from " + Hex(table.base_vaddr) + " to " +
                                  Hex(end));
    }
    for (const UnwindRow& row : rows) RETURN_IF_ERROR(sink.Append(row.pc, row.cfa_type, row.cfa_offset, row.fp_offset));
    covered_end = end;
    return Status::Ok();
  };
  if (fdes.spilled()) {
    RETURN_IF_ERROR(fdes.Merge(each));
  } else {
    for (const FdeInfo& fde : fdes.Sorted()) RETURN_IF_ERROR(each(fde));
  }
  if (any) RETURN_IF_ERROR(sink.AppendGap(covered_end));
  RETURN_IF_ERROR(sink.Finish());
  if (release_pages) release_pages();

  const CfiParseStats& ps = parser.stats();
  table.stats.cies = ps.cies;
  table.stats.fdes = ps.fdes;
  table.stats.fdes_skipped = ps.fdes_skipped;
  table.stats.truncated_sections = ps.truncated_sections;
  return table;
}

StatusOr<UnwindTable> BuildUnwindTable(const std::string& elf_path, const UnwindTableOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::Open(elf_path));
  return BuildUnwindTable(std::move(file), options);
}

StatusOr<UnwindTable> BuildUnwindTable(std::shared_ptr<ElfFile> file, const UnwindTableOptions& options) {
  const std::string path = file->path();
  ElfFile* raw = file.get();
  ASSIGN_OR_RETURN(ElfCfiImage image, ElfCfiImage::FromFile(std::move(file)));
  StatusOr<UnwindTable> table =
      BuildUnwindTableFromSections(image.sections(), image.code_ranges(), options, [raw] { raw->ReleasePages(); });
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
  // One pass over the rows. For page p: `first` is the last row with
  // pc <= p's start (none: the page is before the first row and left out),
  // and its rows end at the first row with pc >= the next page's start.
  UnwindPageIndex index;
  bool started = false;
  uint64_t page = 0;
  uint64_t i = 0;             // the row being looked at
  int64_t first = -1;         // of the current page
  uint8_t first_type = 0;
  uint8_t prev_type = 0;      // of row i - 1
  auto close_page = [&](uint64_t end) -> Status {
    if (first < 0) return Status::Ok();
    const uint64_t count = end - static_cast<uint64_t>(first);
    if (count == 1 && first_type == WS_CFA_NONE) return Status::Ok();
    if (count > kMaxRowsPerPage) {
      return FailedPreconditionError("unwind page " + std::to_string(page) + " needs " + std::to_string(count) +
                                     " rows, more than the BPF search covers");
    }
    index.push_back({static_cast<uint32_t>(page), ws_unwind_page{static_cast<uint32_t>(first),
                                                                  static_cast<uint32_t>(count)}});
    return Status::Ok();
  };
  RETURN_IF_ERROR(table.ForEachRows([&](std::span<const ws_unwind_entry> rows) -> Status {
    for (const ws_unwind_entry& e : rows) {
      if (!started) {
        page = e.pc >> WS_UNWIND_PAGE_BITS;
        started = true;
      }
      while (e.pc >= (page + 1) << WS_UNWIND_PAGE_BITS) {  // row i starts past the current page
        RETURN_IF_ERROR(close_page(i));
        ++page;
        // Row i - 1 (pc below this page's start) is in effect at its start.
        first = i > 0 ? static_cast<int64_t>(i - 1) : -1;
        first_type = prev_type;
      }
      if (e.pc <= page << WS_UNWIND_PAGE_BITS) {  // at (or, for the first page, before) its start
        first = static_cast<int64_t>(i);
        first_type = e.cfa_type;
      }
      prev_type = e.cfa_type;
      ++i;
    }
    return Status::Ok();
  }));
  if (started) RETURN_IF_ERROR(close_page(i));
  return index;
}

}  // namespace warpscope
