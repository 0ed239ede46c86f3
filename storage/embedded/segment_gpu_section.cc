#include "storage/embedded/segment_gpu_section.h"

#include <algorithm>
#include <tuple>

#include "storage/embedded/gpu_activity_codec.h"
#include "storage/embedded/segment_format.h"

namespace warpscope::segment {
namespace {

Status Corrupt(const std::string& what, const std::string& detail) {
  return DataLossError("segment file " + what + " is corrupt: " + detail);
}

// A block's raw encoding is at most ~10 bytes per varint; bounds what a
// corrupt raw size can make a reader allocate.
size_t MaxRawSize(uint32_t rows) { return 64 + static_cast<size_t>(rows) * kGpuActivityColumns * 10; }

}  // namespace

StatusOr<GpuIndex> EncodeGpuSection(GpuRows rows, uint64_t offset, ZSTD_CCtx_s* cctx, int zstd_level,
                                    std::string* out) {
  auto activity_key = [](const GpuActivityRow& r) {
    return std::tie(r.start_ns, r.series_id, r.device, r.stream, r.correlation_id);
  };
  std::stable_sort(rows.activities.begin(), rows.activities.end(),
                   [&](const GpuActivityRow& a, const GpuActivityRow& b) { return activity_key(a) < activity_key(b); });
  std::stable_sort(rows.coverage.begin(), rows.coverage.end(), [](const GpuCoverageRow& a, const GpuCoverageRow& b) {
    return std::tie(a.second_ns, a.series_id) < std::tie(b.second_ns, b.series_id);
  });
  GpuIndex index;
  index.offset = offset;
  index.activity_count = rows.activities.size();
  std::string raw, scratch;
  const std::span<const GpuActivityRow> all(rows.activities);
  for (size_t start = 0; start < all.size(); start += kGpuRowsPerBlock) {
    const auto block = all.subspan(start, std::min<size_t>(kGpuRowsPerBlock, all.size() - start));
    raw.clear();
    EncodeGpuActivities(block, &raw);
    const size_t before = out->size();
    RETURN_IF_ERROR(AppendChunk(cctx, zstd_level, raw, &scratch, out));
    GpuBlockEntry e;
    e.offset = offset;
    e.size = static_cast<uint32_t>(out->size() - before);
    e.crc32 = Crc32(std::string_view(*out).substr(before));
    e.row_count = static_cast<uint32_t>(block.size());
    e.min_start = block.front().start_ns;
    e.max_start = block.back().start_ns;
    e.min_series = e.max_series = block.front().series_id;
    for (const GpuActivityRow& r : block) {
      e.min_series = std::min(e.min_series, r.series_id);
      e.max_series = std::max(e.max_series, r.series_id);
    }
    offset += e.size;
    index.blocks.push_back(e);
  }
  index.coverage.offset = offset;
  if (!rows.coverage.empty()) {
    raw.clear();
    EncodeGpuCoverage(rows.coverage, &raw);
    const size_t before = out->size();
    RETURN_IF_ERROR(AppendChunk(cctx, zstd_level, raw, &scratch, out));
    GpuCoverageEntry& c = index.coverage;
    c.size = static_cast<uint32_t>(out->size() - before);
    c.crc32 = Crc32(std::string_view(*out).substr(before));
    c.row_count = static_cast<uint32_t>(rows.coverage.size());
    c.min_second = rows.coverage.front().second_ns;
    c.max_second = rows.coverage.back().second_ns;
  }
  return index;
}

void AppendGpuIndex(const GpuIndex& index, std::string* out) {
  PutFixed64(out, index.offset);
  PutFixed64(out, index.activity_count);
  PutFixed32(out, static_cast<uint32_t>(index.blocks.size()));
  for (const GpuBlockEntry& b : index.blocks) {
    PutFixed64(out, b.offset);
    PutFixed32(out, b.size);
    PutFixed32(out, b.crc32);
    PutFixed32(out, b.row_count);
    PutFixed32(out, 0);
    PutFixed64(out, static_cast<uint64_t>(b.min_start));
    PutFixed64(out, static_cast<uint64_t>(b.max_start));
    PutFixed64(out, b.min_series);
    PutFixed64(out, b.max_series);
  }
  const GpuCoverageEntry& c = index.coverage;
  PutFixed64(out, c.offset);
  PutFixed32(out, c.size);
  PutFixed32(out, c.crc32);
  PutFixed32(out, c.row_count);
  PutFixed32(out, 0);
  PutFixed64(out, static_cast<uint64_t>(c.min_second));
  PutFixed64(out, static_cast<uint64_t>(c.max_second));
}

StatusOr<GpuIndex> ParseGpuIndex(ByteReader* in, uint64_t footer_offset, const std::string& what) {
  GpuIndex index;
  uint32_t block_count = 0;
  if (!in->GetFixed64(&index.offset) || !in->GetFixed64(&index.activity_count) || !in->GetFixed32(&block_count)) {
    return Corrupt(what, "GPU index is shorter than its fixed part");
  }
  if (in->remaining() != static_cast<uint64_t>(block_count) * kGpuBlockEntrySize + kGpuCoverageEntrySize) {
    return Corrupt(what, "GPU index size does not match its " + std::to_string(block_count) + " blocks");
  }
  if (index.offset < kHeaderSize || index.offset > footer_offset) return Corrupt(what, "GPU section offset out of range");
  uint64_t expected = index.offset, rows = 0;
  auto get_i64 = [&](int64_t* v) {
    uint64_t u = 0;
    in->GetFixed64(&u);
    *v = static_cast<int64_t>(u);
  };
  index.blocks.resize(block_count);
  for (uint32_t i = 0; i < block_count; ++i) {
    GpuBlockEntry& b = index.blocks[i];
    uint32_t reserved = 0;
    in->GetFixed64(&b.offset);
    in->GetFixed32(&b.size);
    in->GetFixed32(&b.crc32);
    in->GetFixed32(&b.row_count);
    in->GetFixed32(&reserved);
    get_i64(&b.min_start);
    get_i64(&b.max_start);
    in->GetFixed64(&b.min_series);
    in->GetFixed64(&b.max_series);
    const std::string where = "GPU block " + std::to_string(i) + " of the index ";
    if (b.offset != expected || b.size == 0 || b.size > footer_offset - b.offset) {
      return Corrupt(what, where + "does not tile the GPU section");
    }
    if (b.row_count == 0 || b.row_count > kGpuRowsPerBlock || reserved != 0 || b.min_start > b.max_start ||
        b.min_series > b.max_series) {
      return Corrupt(what, where + "has inconsistent bounds");
    }
    expected = b.offset + b.size;
    rows += b.row_count;
  }
  GpuCoverageEntry& c = index.coverage;
  uint32_t reserved = 0;
  in->GetFixed64(&c.offset);
  in->GetFixed32(&c.size);
  in->GetFixed32(&c.crc32);
  in->GetFixed32(&c.row_count);
  in->GetFixed32(&reserved);
  get_i64(&c.min_second);
  get_i64(&c.max_second);
  if (c.offset != expected || c.size > footer_offset - c.offset || c.offset + c.size != footer_offset ||
      reserved != 0 || (c.size == 0) != (c.row_count == 0) || c.min_second > c.max_second) {
    return Corrupt(what, "GPU coverage entry does not fit the GPU section");
  }
  if (rows != index.activity_count) return Corrupt(what, "GPU block row counts do not add up");
  return index;
}

Status DecodeGpuBlock(std::string_view bytes, const GpuBlockEntry& entry, ZSTD_DCtx_s* dctx,
                      std::vector<GpuActivityRow>* rows, uint16_t format_version) {
  if (Crc32(bytes) != entry.crc32) return DataLossError("CRC mismatch");
  ByteReader r(bytes);
  std::string raw;
  RETURN_IF_ERROR(ReadChunk(dctx, &r, MaxRawSize(entry.row_count), &raw));
  std::string_view in(raw);
  const size_t before = rows->size();
  const size_t columns = format_version >= 4 ? kGpuActivityColumns : kGpuActivityColumnsBeforeLaunch;
  if (!DecodeGpuActivities(&in, rows, columns) || !in.empty() || rows->size() - before != entry.row_count) {
    return DataLossError("GPU activities do not decode");
  }
  return Status::Ok();
}

Status DecodeGpuCoverageChunk(std::string_view bytes, const GpuCoverageEntry& entry, ZSTD_DCtx_s* dctx,
                              std::vector<GpuCoverageRow>* rows) {
  if (Crc32(bytes) != entry.crc32) return DataLossError("CRC mismatch");
  ByteReader r(bytes);
  std::string raw;
  RETURN_IF_ERROR(ReadChunk(dctx, &r, 64 + static_cast<size_t>(entry.row_count) * 50, &raw));
  std::string_view in(raw);
  const size_t before = rows->size();
  if (!DecodeGpuCoverage(&in, rows) || !in.empty() || rows->size() - before != entry.row_count) {
    return DataLossError("GPU coverage rows do not decode");
  }
  return Status::Ok();
}

}  // namespace warpscope::segment
