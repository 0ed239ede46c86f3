// Encoding and decoding of one segment block (layout: segment_format.h).
// A block is self-contained: it decodes without its neighbours, so a reader
// can skip straight to the blocks a query needs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/embedded/column_codec.h"
#include "storage/embedded/segment_file.h"
#include "storage/embedded/segment_format.h"

namespace warpscope::segment {

// Reusable buffers of one writer; owned by the WriteSegment call.
struct BlockEncodeScratch {
  std::string runs, time, stack, value, compressed;
};

// Appends the block encoding of `rows` (already in file order, 1 to
// kMaxRowsPerBlock rows) to *out and fills *entry's row count, bounds and
// prefix size (not its offset, size or CRCs, which the caller computes).
Status EncodeBlock(std::span<const SampleRow> rows, ZSTD_CCtx_s* cctx, int zstd_level,
                   BlockEncodeScratch* scratch, std::string* out, BlockIndexEntry* entry);

// A run of consecutive rows with the same type and series.
struct SeriesRun {
  uint32_t type_id = 0;
  uint64_t series_id = 0;
  uint32_t length = 0;
};

// Decodes blocks in two steps so that a scan can stop after the cheap one:
// DecodeRuns (the block prefix: header and runs chunk), then DecodeColumns
// (time, stack, value). Owns its buffers and zstd context; belongs to one
// thread (one Scan call) and is reused across that call's blocks.
class BlockDecoder {
 public:
  BlockDecoder() : dctx_(NewZstdDecompressor()) {}

  // Errors are DataLoss without file context. DecodeColumns must follow a
  // successful DecodeRuns of the same block.
  Status DecodeRuns(std::string_view prefix, uint32_t expected_rows);
  Status DecodeColumns(std::string_view columns);

  uint32_t row_count() const { return row_count_; }
  const std::vector<SeriesRun>& runs() const { return runs_; }
  // Valid after DecodeColumns, row_count() entries each.
  const std::vector<int64_t>& times() const { return times_; }
  const std::vector<uint64_t>& stacks() const { return stacks_; }
  const std::vector<int64_t>& values() const { return values_; }

 private:
  ZstdDecompressor dctx_;
  uint32_t row_count_ = 0;
  int64_t time_base_ = 0;
  uint64_t time_scale_ = 1;
  std::vector<SeriesRun> runs_;
  std::vector<int64_t> times_;
  std::vector<uint64_t> stacks_;
  std::vector<int64_t> values_;
  std::vector<uint64_t> varints_;  // one column's varints before undoing delta/zigzag
  std::string raw_;                // one decompressed chunk at a time
};

}  // namespace warpscope::segment
