// ReplayWal: reads the log back in seq order (declared in wal.h). Runs on the
// caller's thread; holds nothing between calls.
#include <algorithm>
#include <string>

#include "base/file_util.h"
#include "storage/embedded/wal/wal.h"

namespace warpscope::wal {

Status ReplayWal(const std::string& dir, uint64_t from_seq, const ReplayOptions& options, const RecordFn& fn,
                 ReplayStats* stats) {
  ReplayStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  *stats = ReplayStats{};
  StatusOr<std::vector<WalFile>> listed = ListWalFiles(dir, nullptr);
  if (!listed.ok() && listed.status().code() == StatusCode::kNotFound) return Status::Ok();  // no log yet
  if (!listed.ok()) return listed.status();
  const std::vector<WalFile>& files = *listed;

  // next_seq: the seq the next record must have, once a file has been read.
  bool have_previous = false;
  uint64_t next_seq = 0;
  std::string previous_path;
  // A damaged file's seq range ends where the next file starts, once known.
  bool previous_damaged = false;
  auto close_previous_damage = [&](uint64_t next_first_seq) {
    if (!previous_damaged) return;
    WalDamage& d = stats->damage.back();
    if (next_first_seq > d.end_seq) {
      d.lost_records += next_first_seq - d.end_seq;
      d.end_seq = next_first_seq;
    }
    previous_damaged = false;
  };
  for (size_t i = 0; i < files.size(); ++i) {
    const WalFile& file = files[i];
    const bool newest = i + 1 == files.size();
    // Every record of this file is below the next file's first seq.
    if (!newest && files[i + 1].first_seq <= from_seq) continue;

    // Records below min_seq were already delivered (overlapping files, which
    // only damage can produce) or were not asked for.
    uint64_t min_seq = from_seq;
    if (options.skip_corrupt && have_previous) {
      if (previous_damaged) {
        close_previous_damage(file.first_seq);
      } else if (file.first_seq > next_seq) {
        stats->damage.push_back({.path = "", .first_seq = next_seq, .end_seq = file.first_seq,
                                 .lost_records = file.first_seq - next_seq});  // a missing file
      }
    }
    if (have_previous && file.first_seq != next_seq) {
      const bool gap = file.first_seq > next_seq;
      if (!options.skip_corrupt) {
        return DataLossError(
            gap ? "records " + std::to_string(next_seq) + " to " + std::to_string(file.first_seq - 1) +
                      " are missing: " + previous_path + " ends before seq " + std::to_string(next_seq) + " but " +
                      file.path + " starts at seq " + std::to_string(file.first_seq)
                : file.path + " starts at seq " + std::to_string(file.first_seq) + " but " + previous_path +
                      " already reached seq " + std::to_string(next_seq - 1));
      }
      if (gap) {
        if (file.first_seq > from_seq) {
          stats->skipped_records += file.first_seq - std::max(next_seq, from_seq);
        }
      } else {
        min_seq = std::max(min_seq, next_seq);
      }
    }

    ASSIGN_OR_RETURN(std::string data, ReadFileToString(file.path));
    ++stats->files_read;
    WalFileScanOptions scan_options;
    scan_options.is_newest = newest;
    scan_options.skip_corrupt = options.skip_corrupt;
    scan_options.name_first_seq = file.first_seq;
    WalFileScan scan;
    const RecordFn deliver = [&](uint64_t seq, std::string_view payload) -> Status {
      if (seq < min_seq) {
        if (seq >= from_seq) ++stats->skipped_records;  // a duplicate
        return Status::Ok();
      }
      RETURN_IF_ERROR(fn(seq, payload));
      ++stats->records;
      stats->last_seq = seq;
      return Status::Ok();
    };
    const Status status = ScanWalFile(file.path, data, scan_options, deliver, &scan);
    if (!status.ok()) {
      if (scan.header_ok || !options.skip_corrupt || status.code() != StatusCode::kDataLoss) return status;
      // A damaged header: the file is skipped whole; the next file's first seq
      // tells how many records it held.
      ++stats->corrupt_regions;
      stats->skipped_bytes += data.size();
      stats->damage.push_back({.path = file.path, .first_seq = file.first_seq, .end_seq = file.first_seq,
                               .lost_records = 0, .lost_bytes = data.size()});
      previous_damaged = true;
      if (!have_previous) {
        have_previous = true;
        next_seq = file.first_seq;
      }
      previous_path = file.path;
      continue;
    }
    stats->torn_tail_bytes += scan.torn_tail_bytes;
    stats->corrupt_regions += scan.corrupt_regions;
    stats->skipped_bytes += scan.skipped_bytes;
    if (scan.corrupt_regions > 0) {
      stats->damage.push_back({.path = file.path, .first_seq = file.first_seq, .end_seq = scan.next_seq,
                               .lost_records = scan.next_seq - file.first_seq - scan.records,
                               .lost_bytes = scan.skipped_bytes});
      previous_damaged = true;
    }
    if (scan.next_seq > from_seq) {
      // Records lost to damage inside the file, counted from its seq gaps
      // (approximate when from_seq falls inside a gap).
      stats->skipped_records += scan.skipped_records;
    }
    have_previous = true;
    next_seq = std::max(next_seq, scan.next_seq);
    previous_path = file.path;
  }
  return Status::Ok();
}

}  // namespace warpscope::wal
