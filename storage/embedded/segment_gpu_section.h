// The GPU section of a segment file (format version 2, segment_format.h):
// the segment's GPU activities in zstd blocks sorted by start time, and its
// trace coverage rows in one chunk, each covered by a CRC in the footer's GPU
// index. Version 1 files have no GPU section (an empty index).
//
//   GpuSection  := GpuBlock* CoverageChunk?
//   GpuBlock    := Chunk(Activities)        (gpu_activity_codec.h; Chunk: column_codec.h)
//   CoverageChunk := Chunk(Coverage)
//   GpuIndex (at the end of a version 2 footer) :=
//       gpu_offset:fixed64  activity_count:fixed64  block_count:fixed32
//       GpuBlockEntry*block_count  CoverageEntry
//   GpuBlockEntry (56 bytes) := offset:fixed64  size:fixed32  crc32:fixed32  row_count:fixed32
//       reserved:fixed32 (0)  min_start:fixed64  max_start:fixed64  min_series:fixed64  max_series:fixed64
//   CoverageEntry (40 bytes) := offset:fixed64  size:fixed32 (0: none)  crc32:fixed32  row_count:fixed32
//       reserved:fixed32 (0)  min_second:fixed64  max_second:fixed64
// The section tiles [gpu_offset, footer_offset) exactly: blocks back to back,
// then the coverage chunk.
//
// Stateless functions; any thread (each call brings its own zstd context).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/embedded/column_codec.h"
#include "storage/embedded/gpu_activity_row.h"

namespace warpscope::segment {

inline constexpr size_t kGpuBlockEntrySize = 56;
inline constexpr size_t kGpuCoverageEntrySize = 40;
inline constexpr uint32_t kGpuRowsPerBlock = 16384;

struct GpuBlockEntry {
  uint64_t offset = 0;
  uint32_t size = 0;
  uint32_t crc32 = 0;
  uint32_t row_count = 0;
  int64_t min_start = 0;
  int64_t max_start = 0;
  uint64_t min_series = 0;
  uint64_t max_series = 0;
};

struct GpuCoverageEntry {
  uint64_t offset = 0;
  uint32_t size = 0;  // 0: no coverage rows
  uint32_t crc32 = 0;
  uint32_t row_count = 0;
  int64_t min_second = 0;
  int64_t max_second = 0;
};

struct GpuIndex {
  uint64_t offset = 0;  // where the section starts (= where sample blocks end)
  uint64_t activity_count = 0;
  std::vector<GpuBlockEntry> blocks;
  GpuCoverageEntry coverage;
  bool empty() const { return activity_count == 0 && coverage.row_count == 0; }
};

// Sorts `rows` into file order (activities by start, series, device, stream,
// correlation id; coverage by second, series) and appends the section's bytes,
// which start at file offset `offset`, to *out. Returns its index.
StatusOr<GpuIndex> EncodeGpuSection(GpuRows rows, uint64_t offset, ZSTD_CCtx_s* cctx, int zstd_level,
                                    std::string* out);

void AppendGpuIndex(const GpuIndex& index, std::string* out);
// Reads the index from the rest of a version 2 footer and checks it against
// itself and the file: entries tile [offset, footer_offset), counts add up.
StatusOr<GpuIndex> ParseGpuIndex(ByteReader* in, uint64_t footer_offset, const std::string& what);

// Decode the bytes of one block (or the coverage chunk) as read from the
// file, after checking its CRC; rows are appended. DataLoss without file context.
// `format_version`: the file's (before 4, activities have no launch columns).
Status DecodeGpuBlock(std::string_view bytes, const GpuBlockEntry& entry, ZSTD_DCtx_s* dctx,
                      std::vector<GpuActivityRow>* rows, uint16_t format_version);
Status DecodeGpuCoverageChunk(std::string_view bytes, const GpuCoverageEntry& entry, ZSTD_DCtx_s* dctx,
                              std::vector<GpuCoverageRow>* rows);

}  // namespace warpscope::segment
