// Segment files: the embedded store's immutable, compressed, columnar files of
// profile sample rows. A segment is written once by WriteSegment (from a
// flushed write-ahead log or a compaction) and then only read. The byte layout
// is described in segment_format.h.
//
// Row order inside a file is (type_id, 5-minute time window, series_id,
// time_ns, stack_id); see SegmentWriteOptions::time_window_ns for why.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"
#include "storage/embedded/gpu_activity_row.h"
#include "storage/embedded/segment_format.h"

namespace warpscope {

// One aggregated sample: `value` (a sample count, or nanoseconds) of stack
// `stack_id` in series `series_id` during the time bucket starting at
// `time_ns` (unix nanoseconds), for the profile type `type_id` (cpu,
// gpu_time, ...). Series and stack ids point into dictionaries kept elsewhere.
struct SampleRow {
  int64_t time_ns = 0;
  uint64_t series_id = 0;
  uint64_t stack_id = 0;
  int64_t value = 0;
  uint32_t type_id = 0;

  friend bool operator==(const SampleRow&, const SampleRow&) = default;
};

struct SegmentWriteOptions {
  // Rows per block: the unit of compression, CRC and skipping. Bigger blocks
  // compress a little better; smaller ones skip more precisely. 1..2^20.
  uint32_t rows_per_block = 65536;
  // zstd level for every column chunk.
  int zstd_level = 3;
  // Rows are sorted by (type_id, floor(time_ns / time_window_ns), series_id,
  // time_ns, stack_id). Queries filter by time range and by series, and this
  // order lets the block index skip for both:
  //  - inside a window each series is one contiguous run, so series ids are
  //    stored once per run, times grow one bucket at a time, and a scan for a
  //    few series decodes only the blocks whose runs pass the filter (one or
  //    two per window), where time-major order would decode every block;
  //  - the window prefix keeps every block inside one short time span, so a
  //    "last 5 minutes" query on an hour-long segment decodes 1/12 of it,
  //    where pure series-major order would decode all of it.
  // Size hardly depends on the order: segment_bench --sweep measured 1.86 to
  // 1.89 bytes/row for series-major, 5 min, 15 min and time-major on an hour
  // of fleet data, while a one-series scan was ~20x slower time-major and a
  // last-5-minutes scan ~10x slower series-major than with 5 min windows.
  // 0 means no window (pure series-major order).
  int64_t time_window_ns = 5 * 60 * 1'000'000'000LL;
};

// Sorts `rows` into file order, merges rows with the same (type_id,
// series_id, time_ns, stack_id) by summing their values (saturating at the
// int64 limits: a merge never fails), and writes them as a
// segment file at `path`, replacing any file there. The file is written under
// a temporary name, fsynced, renamed into place and its directory fsynced: on
// OK it is durable and complete; on error no partial file is left at `path`.
Status WriteSegment(const std::string& path, std::vector<SampleRow> rows,
                    const SegmentWriteOptions& options = SegmentWriteOptions());
// The same with GPU activities and coverage rows in the file's GPU section
// (segment_gpu_section.h), never merged, and the marks of the dictionary the
// rows' ids belong to in the footer (none: store_id 0).
Status WriteSegment(const std::string& path, std::vector<SampleRow> rows, GpuRows gpu,
                    const SegmentWriteOptions& options);
Status WriteSegment(const std::string& path, std::vector<SampleRow> rows, GpuRows gpu, const DictionaryMarks& marks,
                    const SegmentWriteOptions& options);

// A part of a segment a scan could not read: its bytes fail their CRC or do
// not decode.
struct DamagedBlock {
  std::string part;      // "block 3", "GPU block 0", "GPU coverage"
  int64_t min_time = 0;  // the time range of its rows, from the index (inclusive)
  int64_t max_time = 0;
  Status status;         // DataLoss naming the file and the part
};

// What a scan does besides visiting rows; both may be empty. Called on the
// scanning thread.
struct ScanHooks {
  // Before each block is read; an error stops the scan and is returned (a
  // query past its deadline).
  std::function<Status()> before_block;
  // For a damaged block, instead of failing: OK skips the block (none of its
  // rows were visited) and the scan goes on; an error stops the scan and is
  // returned. Empty: the scan fails with the block's DataLoss.
  std::function<Status(const DamagedBlock&)> on_damaged_block;
};

// Reads one segment file.
//
// Threading: immutable after Open. Scan and Verify keep all their state on the
// calling thread's stack (pread on a shared fd, their own zstd context and
// buffers), so any number of threads may call them on one reader at once.
class SegmentReader {
 public:
  // Reads and checks the header, trailer and footer (magic, version, CRC,
  // block index consistency). Corrupt or truncated files give DataLoss and a
  // file written by a newer format version FailedPrecondition, both naming
  // the file. Block contents are checked lazily, when Scan decodes them.
  static StatusOr<std::unique_ptr<SegmentReader>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  // Smallest and largest time_ns in the file (both inclusive); 0 when the
  // file has no rows.
  int64_t min_time() const { return footer_.min_time; }
  int64_t max_time() const { return footer_.max_time; }
  uint64_t row_count() const { return footer_.row_count; }
  size_t block_count() const { return footer_.blocks.size(); }
  int64_t file_size() const { return file_size_; }
  uint16_t format_version() const { return footer_.version; }
  // The dictionary the file was written with (store_id 0 before version 3).
  const DictionaryMarks& dictionary_marks() const { return footer_.marks; }

  // The GPU section (empty in version 1 files).
  uint64_t gpu_activity_count() const { return footer_.gpu.activity_count; }
  uint64_t gpu_coverage_count() const { return footer_.gpu.coverage.row_count; }
  // Rows of every kind (samples, GPU activities, coverage rows).
  uint64_t total_rows() const { return row_count() + gpu_activity_count() + gpu_coverage_count(); }
  // The time span of everything in the file: sample times, activity starts,
  // coverage seconds (inclusive). Meaningful only when total_rows() > 0.
  int64_t data_min_time() const;
  int64_t data_max_time() const;

  // Visits the activities with from_ns <= start_ns < to_ns whose series
  // passes series_filter (null: all), in file order (by start). Blocks
  // outside the range are skipped by the index. DataLoss naming the file and
  // block for a corrupt block (unless `hooks` skip it). Any thread, like Scan.
  Status ScanGpuActivities(int64_t from_ns, int64_t to_ns, const std::function<bool(uint64_t series_id)>& series_filter,
                           const std::function<void(const GpuActivityRow&)>& visit,
                           const ScanHooks& hooks = ScanHooks()) const;
  // Coverage rows with from_ns <= second_ns < to_ns, likewise.
  Status ScanGpuCoverage(int64_t from_ns, int64_t to_ns, const std::function<bool(uint64_t series_id)>& series_filter,
                         const std::function<void(const GpuCoverageRow&)>& visit,
                         const ScanHooks& hooks = ScanHooks()) const;

  // Calls `visit` for every row of type `type_id` with from_ns <= time_ns <
  // to_ns and, if series_filter is not null, series_filter(series_id) true,
  // in file order. Blocks outside the range or type are skipped by the
  // footer index; a block is read and decompressed only as far as needed
  // (its prefix with the series runs first, the columns only if some run
  // passes the filter), and each part's CRC is checked before it is decoded.
  // series_filter is called once per run of equal series, not per row, on the
  // calling thread, as is visit. A corrupt block gives DataLoss naming the
  // file and block (unless hooks.on_damaged_block skips it); rows of earlier
  // blocks may already have been visited.
  Status Scan(int64_t from_ns, int64_t to_ns, const std::function<bool(uint64_t series_id)>& series_filter,
              uint32_t type_id, const std::function<void(const SampleRow&)>& visit,
              const ScanHooks& hooks = ScanHooks()) const;

  // Decodes every block and checks its CRC and contents against the index
  // (offline checks, tests). Returns the first problem found.
  Status Verify() const;

 private:
  SegmentReader(std::string path, ScopedFd fd, int64_t file_size, segment::Footer footer)
      : path_(std::move(path)), fd_(std::move(fd)), file_size_(file_size), footer_(std::move(footer)) {}

  std::string path_;
  ScopedFd fd_;  // read with pread only, so the offset is never shared state
  int64_t file_size_;
  segment::Footer footer_;
};

}  // namespace warpscope
