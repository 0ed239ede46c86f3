// On-disk format of the write-ahead log (wal.h says what the log is for), and
// the one scanner that both the writer (recovering its tail in Open) and
// ReplayWal use, so that the two can never disagree about what is valid.
//
// A log directory holds files named wal-<first_seq as 20 digits>.log, a LOCK
// file and, after a crash during rotation, wal-*.log.tmp leftovers. Each file:
//
//   file header, 24 bytes
//     0   char[4]  magic "WSWL"
//     4   u32      format version (1)
//     8   u64      first_seq: sequence number of the file's first record; equals the name's
//     16  u32      reserved, written as 0
//     20  u32      crc32 of bytes [0, 20)
//   records, back to back, no padding
//     0   u32      header_crc: crc32 of bytes [4, 20) of this record
//     4   u32      payload length
//     8   u64      seq: the file's first_seq for its first record, then +1 for each next one
//     16  u32      data_crc: crc32 of (seq as 8 little-endian bytes, then the payload)
//     20  ...      payload
//
// Integers are little-endian; crc32 is zlib's. Sequence numbers start at 1 and
// are consecutive across the whole log (the next file's first_seq is the
// previous file's last seq + 1), which lets a reader tell exactly how many
// records a damaged region or a missing file lost.
//
// Why a second CRC on the record header: a flipped bit in the length would
// otherwise make a record in the middle look like a torn last record, and the
// reader would silently stop there. With the header checked on its own, the
// reader can also find the next intact record after damage (resync) by testing
// positions, which is what tells a torn tail (nothing valid follows) from
// corruption in the middle (something valid follows).
//
// Stateless; every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::wal {

inline constexpr char kFileMagic[4] = {'W', 'S', 'W', 'L'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kFileHeaderSize = 24;
inline constexpr size_t kRecordHeaderSize = 20;
// The length field is 32 bits wide.
inline constexpr uint64_t kMaxPayloadSize = 0xffffffffu;
inline constexpr std::string_view kLockFileName = "LOCK";

// "wal-00000000000000000001.log" for first_seq 1; zero padding keeps names in seq order.
std::string WalFileName(uint64_t first_seq);
// Inverse of WalFileName; false for any other name (including .tmp leftovers).
bool ParseWalFileName(std::string_view name, uint64_t* first_seq);

struct WalFile {
  uint64_t first_seq = 0;  // from the name
  std::string path;
};

// The log files of dir in seq order. *tmp_paths (if not null) receives the
// leftovers of a rotation that crashed before its rename. NotFound when dir
// does not exist.
StatusOr<std::vector<WalFile>> ListWalFiles(const std::string& dir, std::vector<std::string>* tmp_paths);

std::string EncodeFileHeader(uint64_t first_seq);

// crc32 of the payload alone. The writer computes it before taking its lock and
// folds the seq in afterwards (crc32_combine), keeping the hashing of large
// payloads out of the critical section.
uint32_t PayloadCrc(std::string_view payload);
void EncodeRecordHeader(uint64_t seq, uint32_t length, uint32_t payload_crc, char out[kRecordHeaderSize]);

struct WalFileScanOptions {
  // The newest file may end in a torn record (a crash mid-append): that ends
  // the scan cleanly. In any other file the same bytes are damage.
  bool is_newest = false;
  // Step over damaged regions to the next intact record, counting them, instead
  // of returning DataLoss.
  bool skip_corrupt = false;
  // The seq the file's name promises; a header that disagrees is damage.
  uint64_t name_first_seq = 0;
};

struct WalFileScan {
  bool header_ok = false;
  uint64_t first_seq = 0;
  uint64_t next_seq = 0;   // last intact record's seq + 1 (first_seq when there is none)
  uint64_t valid_end = 0;  // offset just past the last intact record (or the header)
  uint64_t records = 0;    // intact records
  uint64_t torn_tail_bytes = 0;
  uint64_t skipped_records = 0;  // known from the seq gap around a damaged region
  uint64_t skipped_bytes = 0;
  uint64_t corrupt_regions = 0;
};

using RecordFn = std::function<Status(uint64_t seq, std::string_view payload)>;

// Scans one file's bytes (path is for messages), calling fn (may be empty) for
// each intact record in order. Damage is DataLoss naming path and offset unless
// options allow it; an unknown format version is FailedPrecondition. An error
// from fn is returned as is.
Status ScanWalFile(const std::string& path, std::string_view data, const WalFileScanOptions& options,
                   const RecordFn& fn, WalFileScan* scan);

}  // namespace warpscope::wal
