#include "storage/embedded/segment_format.h"

#include <algorithm>
#include <cstring>

#include "base/crc32.h"
#include "storage/embedded/column_codec.h"

namespace warpscope::segment {

namespace {

Status Corrupt(const std::string& what, const std::string& detail) {
  return DataLossError("segment file " + what + " is corrupt: " + detail);
}

Status CheckMagicAndVersion(const char* magic, uint16_t version, const std::string& what, const char* where) {
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return DataLossError("segment file " + what + " has no WSSEG magic in its " + where +
                         " (not a segment file, or truncated)");
  }
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return FailedPreconditionError("segment file " + what + " has format version " + std::to_string(version) +
                                   "; this build reads versions " + std::to_string(kOldestFormatVersion) + " to " +
                                   std::to_string(kFormatVersion));
  }
  return Status::Ok();
}

}  // namespace

uint32_t Crc32(std::string_view bytes) { return warpscope::Crc32(0, bytes.data(), bytes.size()); }

void AppendHeader(std::string* out) {
  out->append(kMagic, sizeof(kMagic));
  PutFixed16(out, kFormatVersion);
}

Status CheckHeader(std::string_view header, const std::string& what, uint16_t* version_out) {
  if (header.size() < kHeaderSize) return Corrupt(what, "shorter than its header");
  ByteReader r(header.substr(sizeof(kMagic)));
  uint16_t version = 0;
  r.GetFixed16(&version);
  if (version_out != nullptr) *version_out = version;
  return CheckMagicAndVersion(header.data(), version, what, "header");
}

void AppendTrailer(const Trailer& trailer, std::string* out) {
  PutFixed64(out, trailer.footer_offset);
  PutFixed32(out, trailer.footer_size);
  PutFixed32(out, trailer.footer_crc32);
  out->append(kMagic, sizeof(kMagic));
  PutFixed16(out, trailer.version);
}

StatusOr<Trailer> ParseTrailer(std::string_view bytes, uint64_t file_size, const std::string& what) {
  if (bytes.size() != kTrailerSize) return Corrupt(what, "trailer has the wrong size");
  Trailer t;
  ByteReader r(bytes);
  std::string_view magic;
  r.GetFixed64(&t.footer_offset);
  r.GetFixed32(&t.footer_size);
  r.GetFixed32(&t.footer_crc32);
  r.GetBytes(sizeof(kMagic), &magic);
  r.GetFixed16(&t.version);
  RETURN_IF_ERROR(CheckMagicAndVersion(magic.data(), t.version, what, "trailer"));
  // Written as a sum so that no corrupt value can overflow.
  if (t.footer_offset < kHeaderSize || t.footer_offset > file_size ||
      file_size - t.footer_offset < kTrailerSize ||
      file_size - t.footer_offset - kTrailerSize != t.footer_size) {
    return Corrupt(what, "footer offset " + std::to_string(t.footer_offset) + " and size " +
                             std::to_string(t.footer_size) + " do not fit a file of " +
                             std::to_string(file_size) + " bytes (truncated?)");
  }
  return t;
}

void AppendFooter(const Footer& footer, std::string* out) {
  PutFixed64(out, footer.row_count);
  PutFixed64(out, static_cast<uint64_t>(footer.min_time));
  PutFixed64(out, static_cast<uint64_t>(footer.max_time));
  PutFixed64(out, static_cast<uint64_t>(footer.time_window_ns));
  PutFixed32(out, static_cast<uint32_t>(footer.blocks.size()));
  for (const BlockIndexEntry& b : footer.blocks) {
    PutFixed64(out, b.offset);
    PutFixed32(out, b.size);
    PutFixed32(out, b.prefix_size);
    PutFixed32(out, b.prefix_crc32);
    PutFixed32(out, b.columns_crc32);
    PutFixed32(out, b.row_count);
    PutFixed32(out, b.min_type);
    PutFixed32(out, b.max_type);
    PutFixed32(out, 0);
    PutFixed64(out, static_cast<uint64_t>(b.min_time));
    PutFixed64(out, static_cast<uint64_t>(b.max_time));
    PutFixed64(out, b.min_series);
    PutFixed64(out, b.max_series);
  }
  if (footer.version >= 3) {
    PutFixed64(out, footer.marks.store_id);
    PutFixed64(out, footer.marks.max_series_id);
    PutFixed64(out, footer.marks.max_stack_id);
    PutFixed64(out, footer.marks.max_string_id);
    PutFixed64(out, footer.marks.max_type_id);
  }
  if (footer.version >= 2) AppendGpuIndex(footer.gpu, out);
}

StatusOr<Footer> ParseFooter(std::string_view bytes, uint64_t footer_offset, const std::string& what,
                             uint16_t version) {
  ByteReader r(bytes);
  Footer f;
  f.version = version;
  uint64_t min_time = 0, max_time = 0, window = 0;
  uint32_t block_count = 0;
  if (!r.GetFixed64(&f.row_count) || !r.GetFixed64(&min_time) || !r.GetFixed64(&max_time) ||
      !r.GetFixed64(&window) || !r.GetFixed32(&block_count)) {
    return Corrupt(what, "footer is shorter than its fixed part");
  }
  f.min_time = static_cast<int64_t>(min_time);
  f.max_time = static_cast<int64_t>(max_time);
  f.time_window_ns = static_cast<int64_t>(window);
  const uint64_t index_size =
      static_cast<uint64_t>(block_count) * kBlockIndexEntrySize + (version >= 3 ? kDictionaryMarksSize : 0);
  if (version >= 2 ? r.remaining() < index_size : r.remaining() != index_size) {
    return Corrupt(what, "footer size does not match its " + std::to_string(block_count) + " blocks");
  }
  f.blocks.resize(block_count);
  uint64_t expected_offset = kHeaderSize;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < block_count; ++i) {
    BlockIndexEntry& b = f.blocks[i];
    uint32_t reserved = 0;
    uint64_t bmin = 0, bmax = 0;
    r.GetFixed64(&b.offset);
    r.GetFixed32(&b.size);
    r.GetFixed32(&b.prefix_size);
    r.GetFixed32(&b.prefix_crc32);
    r.GetFixed32(&b.columns_crc32);
    r.GetFixed32(&b.row_count);
    r.GetFixed32(&b.min_type);
    r.GetFixed32(&b.max_type);
    r.GetFixed32(&reserved);
    r.GetFixed64(&bmin);
    r.GetFixed64(&bmax);
    r.GetFixed64(&b.min_series);
    r.GetFixed64(&b.max_series);
    b.min_time = static_cast<int64_t>(bmin);
    b.max_time = static_cast<int64_t>(bmax);
    const std::string where = "block " + std::to_string(i) + " of the index ";
    if (b.offset != expected_offset) return Corrupt(what, where + "does not start where the previous one ends");
    if (b.size == 0 || b.size > footer_offset - b.offset) return Corrupt(what, where + "runs past the footer");
    if (b.prefix_size == 0 || b.prefix_size >= b.size) return Corrupt(what, where + "has an impossible prefix size");
    if (b.row_count == 0 || b.row_count > kMaxRowsPerBlock) {
      return Corrupt(what, where + "has an impossible row count " + std::to_string(b.row_count));
    }
    if (b.min_type > b.max_type || b.min_time > b.max_time || b.min_series > b.max_series || reserved != 0) {
      return Corrupt(what, where + "has inconsistent bounds");
    }
    expected_offset = b.offset + b.size;
    rows += b.row_count;
  }
  if (version >= 3) {
    r.GetFixed64(&f.marks.store_id);
    r.GetFixed64(&f.marks.max_series_id);
    r.GetFixed64(&f.marks.max_stack_id);
    r.GetFixed64(&f.marks.max_string_id);
    r.GetFixed64(&f.marks.max_type_id);
  }
  uint64_t samples_end = footer_offset;
  if (version >= 2) {
    ASSIGN_OR_RETURN(f.gpu, ParseGpuIndex(&r, footer_offset, what));
    samples_end = f.gpu.offset;
  }
  if (expected_offset != samples_end) {
    return Corrupt(what, version >= 2 ? "blocks do not end where the GPU section starts"
                                      : "blocks do not end where the footer starts");
  }
  if (rows != f.row_count) return Corrupt(what, "block row counts do not add up to the file's");
  if (block_count == 0 && (f.min_time != 0 || f.max_time != 0)) {
    return Corrupt(what, "an empty file has a time range");
  }
  if (block_count > 0) {
    int64_t lo = f.blocks[0].min_time, hi = f.blocks[0].max_time;
    for (const BlockIndexEntry& b : f.blocks) {
      lo = std::min(lo, b.min_time);
      hi = std::max(hi, b.max_time);
    }
    if (lo != f.min_time || hi != f.max_time) return Corrupt(what, "file time range does not match its blocks");
  }
  return f;
}

}  // namespace warpscope::segment
