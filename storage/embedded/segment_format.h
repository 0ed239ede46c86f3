// On-disk layout of a segment file (format version 4; versions 1 to 3 are read too). All fixed-width
// integers are little-endian; "varint" is unsigned LEB128; "zz" is zigzag.
//
//   File    := Header Block* GpuSection Footer Trailer   (version 1: no GpuSection)
//   Header  := "WSSEG\0" (6 bytes)  version:fixed16                       8 bytes
//   Block   := Prefix Columns
//   Prefix  := row_count:varint  time_base:fixed64  time_scale:varint  Chunk(runs)
//   Columns := Chunk(time) Chunk(stack) Chunk(value)
//   Chunk   := codec:fixed8 (0 stored, 1 zstd)  raw_size:varint  stored_size:varint  payload
//     runs  : per run of rows with equal (type_id, series_id):
//             type_id:varint  zz(series_id - previous run's series_id):varint  length:varint
//     time  : per row, q = (time_ns - time_base) / time_scale (time_scale is the GCD
//             of the block's offsets, e.g. 10 s for 10 s buckets): zz(q - previous q):varint
//     stack : per row: zz(stack_id - previous row's stack_id):varint
//     value : per row: zz(value):varint
//     ("previous" starts at 0 in every block, so blocks decode independently.)
//   Footer  := row_count:fixed64  min_time:fixed64  max_time:fixed64
//              time_window_ns:fixed64  block_count:fixed32  BlockIndexEntry*block_count
//   BlockIndexEntry (72 bytes) := offset:fixed64  size:fixed32  prefix_size:fixed32
//              prefix_crc32:fixed32  columns_crc32:fixed32  row_count:fixed32
//              min_type:fixed32  max_type:fixed32  reserved:fixed32 (0)
//              min_time:fixed64  max_time:fixed64  min_series:fixed64  max_series:fixed64
//              (version 3:) DictionaryMarks
//              (version 2:) GpuIndex (segment_gpu_section.h), which also says where the
//              sample blocks end and the GpuSection begins
//   DictionaryMarks (40 bytes) := store_id:fixed64  max_series_id:fixed64  max_stack_id:fixed64
//              max_string_id:fixed64  max_type_id:fixed64  (dictionary_marks.h; store_id 0: none)
//   Trailer := footer_offset:fixed64  footer_size:fixed32  footer_crc32:fixed32
//              "WSSEG\0"  version:fixed16                                  24 bytes
//
// Every byte of a file is covered by a check: the header and trailer by their
// magic, version and the offsets that must tile the file exactly, each block by
// two CRC-32s (zlib's) in the index, the footer by the CRC in the trailer.
// Blocks are contiguous from offset 8 to the GPU section (version 1: to footer_offset).
// Header and trailer carry the same version.
//
// A block's CRC is split at the prefix so that a scan with a series filter can
// read and check only the prefix (tens of bytes) and its series runs, and skip
// the block's columns when no run passes the filter.
//
// Version 2 (GPU activities) added the GPU section and the footer's
// GpuIndex; everything else is as in version 1. Version 3 added the
// footer's DictionaryMarks, before the GpuIndex: the dictionary the file's ids
// belong to and how far they reach, checked against dictionary.sqlite when
// the store opens. Version 4 added four columns to the GPU activities (the
// launch call's time, duration, thread and API; gpu_activity_codec.h);
// nothing else changed. A later version must keep reading version 1 to 4
// files (CONTRIBUTING.md, "Formats"; segment_compat_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/embedded/dictionary_marks.h"
#include "storage/embedded/segment_gpu_section.h"

namespace warpscope::segment {

inline constexpr char kMagic[6] = {'W', 'S', 'S', 'E', 'G', '\0'};
inline constexpr uint16_t kFormatVersion = 4;
inline constexpr uint16_t kOldestFormatVersion = 1;
inline constexpr size_t kHeaderSize = 8;
inline constexpr size_t kTrailerSize = 24;
inline constexpr size_t kBlockIndexEntrySize = 72;
inline constexpr size_t kDictionaryMarksSize = 40;
// Upper bound on rows in one block, so a corrupt count cannot make a reader
// allocate without limit.
inline constexpr uint32_t kMaxRowsPerBlock = 1u << 20;

struct BlockIndexEntry {
  uint64_t offset = 0;
  uint32_t size = 0;          // whole block
  uint32_t prefix_size = 0;   // header and runs chunk; the columns follow
  uint32_t prefix_crc32 = 0;  // of bytes [0, prefix_size)
  uint32_t columns_crc32 = 0; // of bytes [prefix_size, size)
  uint32_t row_count = 0;
  uint32_t min_type = 0;
  uint32_t max_type = 0;
  int64_t min_time = 0;
  int64_t max_time = 0;
  uint64_t min_series = 0;
  uint64_t max_series = 0;
};

struct Footer {
  uint64_t row_count = 0;
  int64_t min_time = 0;
  int64_t max_time = 0;
  int64_t time_window_ns = 0;  // the writer's sort window; informational
  std::vector<BlockIndexEntry> blocks;
  uint16_t version = kFormatVersion;  // of the file; not stored in the footer itself
  DictionaryMarks marks;              // zero (store_id 0) in version 1 and 2 files
  GpuIndex gpu;                       // empty in version 1 files
};

struct Trailer {
  uint64_t footer_offset = 0;
  uint32_t footer_size = 0;
  uint32_t footer_crc32 = 0;
  uint16_t version = 0;
};

uint32_t Crc32(std::string_view bytes);

void AppendHeader(std::string* out);
// Checks the header's magic and version (one this build reads) and stores
// the version. `what` names the file in errors.
Status CheckHeader(std::string_view header, const std::string& what, uint16_t* version = nullptr);

void AppendTrailer(const Trailer& trailer, std::string* out);
// Parses the last kTrailerSize bytes of a file of `file_size` bytes and checks
// magic, version and that the footer lies between header and trailer.
StatusOr<Trailer> ParseTrailer(std::string_view bytes, uint64_t file_size, const std::string& what);

// Writes footer.version's layout (version 3 appends footer.marks, version 2
// and later footer.gpu).
void AppendFooter(const Footer& footer, std::string* out);
// Parses a footer whose CRC has been checked, and checks the index against
// itself and the file: blocks tile [kHeaderSize, footer_offset), row counts add
// up, min <= max everywhere, file-wide min/max match the blocks'. `version`
// is the file's (header and trailer).
StatusOr<Footer> ParseFooter(std::string_view bytes, uint64_t footer_offset, const std::string& what,
                             uint16_t version = kFormatVersion);

}  // namespace warpscope::segment
