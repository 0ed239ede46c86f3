// UnwindTable: one binary's CFI as the sorted ws_unwind_entry rows of
// bpf/intf/unwind.h, plus the per-64-KiB page index the BPF binary search
// needs.
//
// Pipeline: ElfCfiImage (sections) -> CfiParser (FDE headers) -> code-range
// filter -> sort by pc -> per FDE, RunFdeProgram (classified rows) -> gaps,
// overlaps and merging here. Rules:
//  - rows hold pcs relative to base_vaddr, the lowest pc any kept FDE covers;
//  - where an FDE ends and the next kept one does not start at once, a
//    WS_CFA_NONE row follows (frame-pointer fallback), so a lookup never uses a
//    row of an unrelated function (but see max_padding_gap); the table always
//    ends with such a row;
//  - FDEs overlapping an earlier-starting kept FDE are dropped (ties: .eh_frame
//    before .debug_frame, then file order);
//  - FDEs outside the executable segments (.debug_frame entries of code the
//    linker discarded: pc 0 or tombstones) are dropped;
//  - consecutive rows with the same rule are merged;
//  - more than 4 GiB of covered pcs is an error (row pcs are 32-bit).
//
// Memory: with UnwindTableOptions::spill_above set (the agent's options set
// it), a binary of more FDEs or rows than that is built in bounded memory:
// its FDEs are sorted in runs of a spill file (base/spill_file.h) and its
// rows are written to another, which ForEachRows reads back in chunks, so a
// 200 MB binary costs the builder a few MB however many rows it has. The
// ELF file's pages are given back as its CFI is read.
//
// Build functions are pure; tables are immutable values, safe to share.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/unwind/cfa_program.h"
#include "agent/unwind/cfi_parser.h"
#include "agent/unwind/elf_cfi_image.h"
#include "base/spill_file.h"
#include "base/status.h"
#include "bpf/intf/unwind.h"

namespace warpscope {

struct UnwindTableStats {
  uint64_t cies = 0;
  uint64_t fdes = 0;                // FDE entries in the sections
  uint64_t fdes_skipped = 0;        // malformed or unsupported (header, CIE, encoding, program)
  uint64_t fdes_overlapping = 0;    // dropped: overlapped an earlier-starting FDE
  uint64_t fdes_outside_code = 0;   // dropped: range not inside an executable segment
  uint64_t truncated_sections = 0;  // CFI sections whose walk stopped at a broken entry
  uint64_t unreadable_sections = 0;
  uint64_t rows_before_merge = 0;  // interpreter rows (one per location) plus gap rows
  uint64_t rows = 0;               // entries.size()
  // Of the final rows:
  uint64_t gap_rows = 0;  // WS_CFA_NONE
  uint64_t invalid_rows = 0;
  uint64_t plt_rows = 0;
  uint64_t end_rows = 0;
  uint64_t signal_rows = 0;
};

struct UnwindTable {
  uint64_t base_vaddr = 0;
  // Sorted by pc, pc relative to base_vaddr; empty when spilled_rows holds them.
  std::vector<ws_unwind_entry> entries;
  std::shared_ptr<const SpillFile> spilled_rows;
  std::vector<LoadSegment> load_segments;  // from the ELF; empty when built from bare sections
  UnwindTableStats stats;

  uint64_t row_count() const { return spilled_rows ? stats.rows : entries.size(); }
  // The rows in order, at most kRowChunk at a time (from memory or read back
  // from the spill file).
  static constexpr size_t kRowChunk = 16384;
  Status ForEachRows(const std::function<Status(std::span<const ws_unwind_entry>)>& take) const;
  // The row in effect at an ELF virtual address (the last row with pc <= it),
  // as the BPF search finds it; nullptr before the first row, >= 4 GiB past
  // the base, or when the rows are spilled.
  const ws_unwind_entry* Lookup(uint64_t vaddr) const;
};

struct UnwindTableOptions {
  RowEncodingOptions rows;
  // Gaps of at most this many bytes between consecutive FDEs (the alignment
  // padding between functions) keep the previous row instead of getting a
  // WS_CFA_NONE row, which also lets the next function's first row merge into
  // it. Padding never executes and return addresses are looked up at pc-1, so
  // 15 is safe in practice; measured savings: libc -17%, python3 -9%, libLLVM
  // -14% rows. 0 keeps the strict rule: every gap gets a WS_CFA_NONE row.
  uint32_t max_padding_gap = 0;
  // FDEs or rows past this many are built in spill files (see above); the
  // default keeps everything in memory.
  size_t spill_above = SIZE_MAX;
  std::string spill_dir;  // empty: SpillDirectory()
};

// The table of an ELF file. A file without CFI gives an empty table.
StatusOr<UnwindTable> BuildUnwindTable(const std::string& elf_path, const UnwindTableOptions& options = {});
// The same from a file already open (its other readers share the open).
StatusOr<UnwindTable> BuildUnwindTable(std::shared_ptr<ElfFile> file, const UnwindTableOptions& options = {});
// The same for an ELF image in memory (tests, [vdso]).
StatusOr<UnwindTable> BuildUnwindTableFromMemory(std::string image, const UnwindTableOptions& options = {});
// The core, for callers that already hold the sections. An empty
// `code_ranges` keeps every FDE. `release_pages`, when set, is called every
// few thousand FDEs (the sections' file gives its pages back).
StatusOr<UnwindTable> BuildUnwindTableFromSections(std::span<const CfiSection> sections,
                                                   std::span<const CodeRange> code_ranges,
                                                   const UnwindTableOptions& options = {},
                                                   const std::function<void()>& release_pages = {});

// (page, {first, count}) for every page of the table that holds rows, sorted
// by page; page = relative pc >> WS_UNWIND_PAGE_BITS, first indexes
// table.entries (the caller adds the table's offset in the global array).
// entries[first] is the row in effect at the page start and count <= 1 << 16.
// Pages whose only row is WS_CFA_NONE are left out: a missing page reads as
// WS_CFA_NONE in BPF. FailedPrecondition if a page would need more rows than
// the BPF search can cover.
using UnwindPageIndex = std::vector<std::pair<uint32_t, ws_unwind_page>>;
StatusOr<UnwindPageIndex> BuildPageIndex(const UnwindTable& table);

}  // namespace warpscope
