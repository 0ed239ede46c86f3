#include "storage/embedded/wal/wal_format.h"

#include <dirent.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/byte_order.h"
#include "base/crc32.h"

namespace warpscope::wal {
namespace {

constexpr std::string_view kNamePrefix = "wal-";
constexpr std::string_view kNameSuffix = ".log";
constexpr std::string_view kTmpSuffix = ".log.tmp";
constexpr size_t kSeqDigits = 20;

uint32_t SeqCrc(uint64_t seq) {
  char b[8];
  StoreLE64(b, seq);
  return Crc32(0, b, sizeof(b));
}

bool ParseSeqDigits(std::string_view digits, uint64_t* seq) {
  if (digits.size() != kSeqDigits) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *seq = v;
  return true;
}

struct Record {
  uint64_t seq = 0;
  std::string_view payload;
  size_t size = 0;  // header + payload
};

// True when an intact record (both CRCs good, payload inside the data) starts at off.
bool ParseRecordAt(std::string_view data, size_t off, Record* rec) {
  if (data.size() - off < kRecordHeaderSize) return false;
  const char* h = data.data() + off;
  if (LoadLE32(h) != Crc32(0, h + 4, kRecordHeaderSize - 4)) return false;
  const uint32_t length = LoadLE32(h + 4);
  if (length > data.size() - off - kRecordHeaderSize) return false;
  rec->seq = LoadLE64(h + 8);
  rec->payload = data.substr(off + kRecordHeaderSize, length);
  rec->size = kRecordHeaderSize + length;
  return Crc32(SeqCrc(rec->seq), rec->payload.data(), rec->payload.size()) == LoadLE32(h + 16);
}

// The first offset >= from where an intact record with a plausible seq starts,
// or data.size() when there is none. damage_start bounds the plausible seqs:
// every record takes at least kRecordHeaderSize bytes, so the bytes between
// damage_start and p hold at most (p - damage_start) / kRecordHeaderSize lost
// records. The cheap seq test rejects nearly every position before any CRC work.
size_t FindNextRecord(std::string_view data, size_t from, size_t damage_start, uint64_t expected_seq) {
  for (size_t p = from; p + kRecordHeaderSize <= data.size(); ++p) {
    const uint64_t seq = LoadLE64(data.data() + p + 8);
    if (seq < expected_seq || seq - expected_seq > (p - damage_start) / kRecordHeaderSize + 1) continue;
    Record rec;
    if (ParseRecordAt(data, p, &rec)) return p;
  }
  return data.size();
}

Status DecodeFileHeader(const std::string& path, std::string_view data, uint64_t* first_seq) {
  if (data.size() < kFileHeaderSize) {
    return DataLossError(path + ": " + std::to_string(data.size()) + " bytes, shorter than the " +
                         std::to_string(kFileHeaderSize) + "-byte file header");
  }
  const char* h = data.data();
  if (std::memcmp(h, kFileMagic, sizeof(kFileMagic)) != 0) {
    return DataLossError(path + ": not a write-ahead log file (bad magic at offset 0)");
  }
  if (LoadLE32(h + 20) != Crc32(0, h, 20)) return DataLossError(path + ": file header checksum mismatch at offset 0");
  const uint32_t version = LoadLE32(h + 4);
  if (version != kFormatVersion) {
    return FailedPreconditionError(path + ": unsupported write-ahead log format version " + std::to_string(version) +
                                   " (this build reads version " + std::to_string(kFormatVersion) + ")");
  }
  *first_seq = LoadLE64(h + 8);
  return Status::Ok();
}

}  // namespace

std::string WalFileName(uint64_t first_seq) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "wal-%020" PRIu64 ".log", first_seq);
  return buf;
}

bool ParseWalFileName(std::string_view name, uint64_t* first_seq) {
  if (name.size() != kNamePrefix.size() + kSeqDigits + kNameSuffix.size()) return false;
  if (name.substr(0, kNamePrefix.size()) != kNamePrefix) return false;
  if (name.substr(name.size() - kNameSuffix.size()) != kNameSuffix) return false;
  return ParseSeqDigits(name.substr(kNamePrefix.size(), kSeqDigits), first_seq);
}

StatusOr<std::vector<WalFile>> ListWalFiles(const std::string& dir, std::vector<std::string>* tmp_paths) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, "cannot list write-ahead log directory " + dir);
  std::vector<WalFile> files;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    uint64_t seq = 0;
    if (ParseWalFileName(name, &seq)) {
      files.push_back({seq, dir + "/" + std::string(name)});
    } else if (tmp_paths != nullptr && name.size() > kTmpSuffix.size() &&
               name.substr(0, kNamePrefix.size()) == kNamePrefix &&
               name.substr(name.size() - kTmpSuffix.size()) == kTmpSuffix) {
      tmp_paths->push_back(dir + "/" + std::string(name));
    }
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoError(err, "cannot list write-ahead log directory " + dir);
  std::sort(files.begin(), files.end(), [](const WalFile& a, const WalFile& b) { return a.first_seq < b.first_seq; });
  return files;
}

std::string EncodeFileHeader(uint64_t first_seq) {
  std::string h(kFileHeaderSize, '\0');
  std::memcpy(h.data(), kFileMagic, sizeof(kFileMagic));
  StoreLE32(h.data() + 4, kFormatVersion);
  StoreLE64(h.data() + 8, first_seq);
  StoreLE32(h.data() + 16, 0);
  StoreLE32(h.data() + 20, Crc32(0, h.data(), 20));
  return h;
}

uint32_t PayloadCrc(std::string_view payload) { return Crc32(0, payload.data(), payload.size()); }

void EncodeRecordHeader(uint64_t seq, uint32_t length, uint32_t payload_crc, char out[kRecordHeaderSize]) {
  StoreLE32(out + 4, length);
  StoreLE64(out + 8, seq);
  StoreLE32(out + 16, static_cast<uint32_t>(::crc32_combine(SeqCrc(seq), payload_crc, static_cast<z_off_t>(length))));
  StoreLE32(out, Crc32(0, out + 4, kRecordHeaderSize - 4));
}

Status ScanWalFile(const std::string& path, std::string_view data, const WalFileScanOptions& options,
                   const RecordFn& fn, WalFileScan* scan) {
  *scan = WalFileScan{};
  uint64_t first_seq = 0;
  RETURN_IF_ERROR(DecodeFileHeader(path, data, &first_seq));
  if (first_seq != options.name_first_seq) {
    return DataLossError(path + ": file header says first seq " + std::to_string(first_seq) +
                         " but the name says " + std::to_string(options.name_first_seq));
  }
  scan->header_ok = true;
  scan->first_seq = first_seq;
  uint64_t expected = first_seq;
  size_t off = kFileHeaderSize;
  scan->valid_end = off;
  while (off < data.size()) {
    Record rec;
    if (ParseRecordAt(data, off, &rec) && rec.seq >= expected) {
      if (rec.seq > expected) {
        if (!options.skip_corrupt) {
          return DataLossError(path + ": record at offset " + std::to_string(off) + " has seq " +
                               std::to_string(rec.seq) + ", expected " + std::to_string(expected) +
                               " (records are missing)");
        }
        scan->skipped_records += rec.seq - expected;
      }
      if (fn) RETURN_IF_ERROR(fn(rec.seq, rec.payload));
      ++scan->records;
      expected = rec.seq + 1;
      off += rec.size;
      scan->valid_end = off;
      continue;
    }
    // Damage at off (or a stale record whose seq went backwards).
    const size_t next = FindNextRecord(data, off + 1, off, expected);
    if (next == data.size()) {
      if (options.is_newest) {
        // Nothing intact follows: the last append was cut short. Expected after a crash.
        scan->torn_tail_bytes = data.size() - off;
        break;
      }
      if (!options.skip_corrupt) {
        return DataLossError(path + ": corrupt or truncated record at offset " + std::to_string(off) +
                             " running to the end of a file that is not the newest (" +
                             std::to_string(data.size() - off) + " bytes lost after seq " +
                             std::to_string(expected - 1) + ")");
      }
      ++scan->corrupt_regions;
      scan->skipped_bytes += data.size() - off;
      break;
    }
    if (!options.skip_corrupt) {
      return DataLossError(path + ": corrupt record at offset " + std::to_string(off) + " (" +
                           std::to_string(next - off) + " unreadable bytes before the next intact record at offset " +
                           std::to_string(next) + ")");
    }
    ++scan->corrupt_regions;
    scan->skipped_bytes += next - off;
    off = next;
  }
  scan->next_seq = expected;
  return Status::Ok();
}

}  // namespace warpscope::wal
