#include "storage/embedded/segment_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <span>

#include "base/saturating.h"
#include "storage/embedded/column_codec.h"
#include "storage/embedded/segment_block.h"

namespace warpscope {

namespace {

using segment::BlockIndexEntry;
using segment::Footer;

int64_t FloorDiv(int64_t t, int64_t w) { return t >= 0 ? t / w : -((-(t + 1)) / w) - 1; }

// File order; see SegmentWriteOptions::time_window_ns. window_ns 0 = none.
struct RowOrder {
  int64_t window_ns;
  int64_t Window(int64_t t) const { return window_ns > 0 ? FloorDiv(t, window_ns) : 0; }
  // <0, 0, >0 like memcmp, on (type, window, series, time, stack).
  int Compare(const SampleRow& a, const SampleRow& b) const {
    if (a.type_id != b.type_id) return a.type_id < b.type_id ? -1 : 1;
    if (window_ns > 0) {
      const int64_t wa = Window(a.time_ns), wb = Window(b.time_ns);
      if (wa != wb) return wa < wb ? -1 : 1;
    }
    if (a.series_id != b.series_id) return a.series_id < b.series_id ? -1 : 1;
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns ? -1 : 1;
    if (a.stack_id != b.stack_id) return a.stack_id < b.stack_id ? -1 : 1;
    return 0;
  }
};

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write " + what);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Reads exactly `size` bytes at `offset`; a short read means the file shrank
// under us, which for an immutable segment is data loss.
Status PreadFully(int fd, uint64_t offset, size_t size, char* out, const std::string& what) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read " + what);
    }
    if (n == 0) return DataLossError("segment file " + what + " ended early (truncated while open?)");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status PreadFully(int fd, uint64_t offset, size_t size, std::string* out, const std::string& what) {
  out->resize(size);
  return PreadFully(fd, offset, size, out->data(), what);
}

// Unlinks the temporary file unless the write got as far as the rename.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  ~TempFileGuard() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

bool SeriesTimeStackLess(const SampleRow& a, const SampleRow& b) {
  if (a.type_id != b.type_id) return a.type_id < b.type_id;
  if (a.series_id != b.series_id) return a.series_id < b.series_id;
  if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
  return a.stack_id < b.stack_id;
}

// Sorts into file order in two passes so that no comparator divides: (type,
// time) groups the windows (input from the write-ahead log is usually in time
// order already, making this pass a linear check), then each (type, window)
// range is sorted by (series, time, stack).
void SortRows(std::vector<SampleRow>& rows, const RowOrder& order) {
  if (order.window_ns == 0) {
    std::sort(rows.begin(), rows.end(), SeriesTimeStackLess);
    return;
  }
  auto type_time = [](const SampleRow& a, const SampleRow& b) {
    return a.type_id != b.type_id ? a.type_id < b.type_id : a.time_ns < b.time_ns;
  };
  if (!std::is_sorted(rows.begin(), rows.end(), type_time)) std::sort(rows.begin(), rows.end(), type_time);
  for (size_t start = 0; start < rows.size();) {
    const uint32_t type = rows[start].type_id;
    const int64_t window = order.Window(rows[start].time_ns);
    size_t end = start + 1;
    while (end < rows.size() && rows[end].type_id == type && order.Window(rows[end].time_ns) == window) ++end;
    std::sort(rows.begin() + static_cast<ptrdiff_t>(start), rows.begin() + static_cast<ptrdiff_t>(end),
              SeriesTimeStackLess);
    start = end;
  }
}

bool SameKey(const SampleRow& a, const SampleRow& b) {
  return a.type_id == b.type_id && a.series_id == b.series_id && a.time_ns == b.time_ns && a.stack_id == b.stack_id;
}

// Sorts rows into file order and merges equal keys in place. Sums saturate:
// rows already acknowledged (or on disk) must never make a flush or a
// compaction fail, or it would fail the same way on every retry.
void SortAndMerge(std::vector<SampleRow>& rows, const RowOrder& order) {
  SortRows(rows, order);
  size_t out = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (out > 0 && SameKey(rows[out - 1], rows[i])) {
      SaturatingAddTo(rows[out - 1].value, rows[i].value);
    } else {
      rows[out++] = rows[i];
    }
  }
  rows.resize(out);
}

Status WriteSegmentFile(const std::string& path, std::span<const SampleRow> rows, GpuRows gpu,
                        const DictionaryMarks& marks, const SegmentWriteOptions& options) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int raw_fd = ::mkstemp(tmp.data());
  if (raw_fd < 0) return ErrnoError(errno, "create temporary file for " + path);
  ScopedFd fd(raw_fd);
  TempFileGuard guard(tmp);
  if (::fchmod(fd.get(), 0644) != 0) return ErrnoError(errno, "chmod " + tmp);

  segment::ZstdCompressor cctx = segment::NewZstdCompressor();
  if (!cctx) return ResourceExhaustedError("cannot create a zstd context");
  segment::BlockEncodeScratch scratch;
  std::string buf;
  segment::AppendHeader(&buf);
  RETURN_IF_ERROR(WriteAll(fd.get(), buf, tmp));
  uint64_t offset = buf.size();

  Footer footer;
  footer.marks = marks;
  footer.row_count = rows.size();
  footer.time_window_ns = options.time_window_ns;
  for (size_t start = 0; start < rows.size(); start += options.rows_per_block) {
    const size_t n = std::min<size_t>(options.rows_per_block, rows.size() - start);
    BlockIndexEntry entry;
    buf.clear();
    RETURN_IF_ERROR(
        segment::EncodeBlock(rows.subspan(start, n), cctx.get(), options.zstd_level, &scratch, &buf, &entry));
    if (buf.size() > UINT32_MAX) return InternalError("block of " + std::to_string(n) + " rows exceeds 4 GiB");
    entry.offset = offset;
    entry.size = static_cast<uint32_t>(buf.size());
    const std::string_view block(buf);
    entry.prefix_crc32 = segment::Crc32(block.substr(0, entry.prefix_size));
    entry.columns_crc32 = segment::Crc32(block.substr(entry.prefix_size));
    if (footer.blocks.empty() || entry.min_time < footer.min_time) footer.min_time = entry.min_time;
    if (footer.blocks.empty() || entry.max_time > footer.max_time) footer.max_time = entry.max_time;
    footer.blocks.push_back(entry);
    RETURN_IF_ERROR(WriteAll(fd.get(), buf, tmp));
    offset += buf.size();
  }

  buf.clear();
  ASSIGN_OR_RETURN(footer.gpu, segment::EncodeGpuSection(std::move(gpu), offset, cctx.get(), options.zstd_level, &buf));
  RETURN_IF_ERROR(WriteAll(fd.get(), buf, tmp));
  offset += buf.size();

  buf.clear();
  segment::AppendFooter(footer, &buf);
  if (buf.size() > UINT32_MAX) {
    return InternalError("footer of " + std::to_string(footer.blocks.size()) + " blocks exceeds 4 GiB");
  }
  segment::Trailer trailer;
  trailer.footer_offset = offset;
  trailer.footer_size = static_cast<uint32_t>(buf.size());
  trailer.footer_crc32 = segment::Crc32(buf);
  trailer.version = segment::kFormatVersion;
  segment::AppendTrailer(trailer, &buf);
  RETURN_IF_ERROR(WriteAll(fd.get(), buf, tmp));

  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "fsync " + tmp);
  if (::close(fd.Release()) != 0) return ErrnoError(errno, "close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError(errno, "rename " + tmp + " to " + path);
  guard.Release();
  // The rename is durable only once the directory entry is on disk.
  const std::string dir = DirName(path);
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return ErrnoError(errno, "open directory " + dir);
  if (::fsync(dir_fd.get()) != 0) return ErrnoError(errno, "fsync directory " + dir);
  return Status::Ok();
}

}  // namespace

Status WriteSegment(const std::string& path, std::vector<SampleRow> rows, const SegmentWriteOptions& options) {
  return WriteSegment(path, std::move(rows), GpuRows{}, options);
}

Status WriteSegment(const std::string& path, std::vector<SampleRow> rows, GpuRows gpu,
                    const SegmentWriteOptions& options) {
  return WriteSegment(path, std::move(rows), std::move(gpu), DictionaryMarks{}, options);
}

Status WriteSegment(const std::string& path, std::vector<SampleRow> rows, GpuRows gpu, const DictionaryMarks& marks,
                    const SegmentWriteOptions& options) {
  if (options.rows_per_block == 0 || options.rows_per_block > segment::kMaxRowsPerBlock) {
    return InvalidArgumentError("rows_per_block must be 1.." + std::to_string(segment::kMaxRowsPerBlock));
  }
  if (!segment::IsValidZstdLevel(options.zstd_level)) {
    return InvalidArgumentError("invalid zstd level " + std::to_string(options.zstd_level));
  }
  if (options.time_window_ns < 0) return InvalidArgumentError("time_window_ns must not be negative");
  const RowOrder order{options.time_window_ns};
  const std::string context = "writing segment " + path;
  SortAndMerge(rows, order);
  return WriteSegmentFile(path, rows, std::move(gpu), marks, options).WithContext(context);
}

StatusOr<std::unique_ptr<SegmentReader>> SegmentReader::Open(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open segment file " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat " + path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < segment::kHeaderSize + segment::kTrailerSize) {
    return DataLossError("segment file " + path + " is " + std::to_string(size) +
                         " bytes, too short to be a segment (truncated?)");
  }
  std::string bytes;
  RETURN_IF_ERROR(PreadFully(fd.get(), 0, segment::kHeaderSize, &bytes, path));
  uint16_t version = 0;
  RETURN_IF_ERROR(segment::CheckHeader(bytes, path, &version));
  RETURN_IF_ERROR(PreadFully(fd.get(), size - segment::kTrailerSize, segment::kTrailerSize, &bytes, path));
  ASSIGN_OR_RETURN(const segment::Trailer trailer, segment::ParseTrailer(bytes, size, path));
  if (trailer.version != version) {
    return DataLossError("segment file " + path + " is corrupt: header version " + std::to_string(version) +
                         " but trailer version " + std::to_string(trailer.version));
  }
  RETURN_IF_ERROR(PreadFully(fd.get(), trailer.footer_offset, trailer.footer_size, &bytes, path));
  if (segment::Crc32(bytes) != trailer.footer_crc32) {
    return DataLossError("segment file " + path + " is corrupt: footer CRC mismatch");
  }
  ASSIGN_OR_RETURN(Footer footer, segment::ParseFooter(bytes, trailer.footer_offset, path, version));
  return std::unique_ptr<SegmentReader>(
      new SegmentReader(path, std::move(fd), static_cast<int64_t>(size), std::move(footer)));
}

namespace {

// Reads and decodes one block in the two steps of BlockDecoder, checking each
// part's CRC before decoding it. Belongs to one Scan or Verify call.
class BlockLoader {
 public:
  BlockLoader(int fd, const std::string& path) : fd_(fd), path_(path) {}

  // Reads the prefix (or, when the caller expects to need the columns
  // anyway, the whole block in one read) and decodes the series runs.
  Status LoadRuns(const BlockIndexEntry& entry, size_t index, bool whole_block) {
    entry_ = &entry;
    where_ = "segment file " + path_ + " block " + std::to_string(index);
    RETURN_IF_ERROR(PreadFully(fd_, entry.offset, whole_block ? entry.size : entry.prefix_size, &bytes_, path_));
    const std::string_view prefix = std::string_view(bytes_).substr(0, entry.prefix_size);
    if (segment::Crc32(prefix) != entry.prefix_crc32) return DataLossError(where_ + " is corrupt: CRC mismatch");
    return decoder_.DecodeRuns(prefix, entry.row_count).WithContext(where_ + " is corrupt");
  }

  Status LoadColumns() {
    const BlockIndexEntry& entry = *entry_;
    if (bytes_.size() < entry.size) {
      bytes_.resize(entry.size);
      RETURN_IF_ERROR(PreadFully(fd_, entry.offset + entry.prefix_size, entry.size - entry.prefix_size,
                                 bytes_.data() + entry.prefix_size, path_));
    }
    const std::string_view columns = std::string_view(bytes_).substr(entry.prefix_size);
    if (segment::Crc32(columns) != entry.columns_crc32) return DataLossError(where_ + " is corrupt: CRC mismatch");
    return decoder_.DecodeColumns(columns).WithContext(where_ + " is corrupt");
  }

  const segment::BlockDecoder& decoder() const { return decoder_; }
  const std::string& where() const { return where_; }

 private:
  const int fd_;
  const std::string& path_;
  const BlockIndexEntry* entry_ = nullptr;
  std::string where_;
  std::string bytes_;
  segment::BlockDecoder decoder_;
};

// The outcome of reading a part of the file: its own status, or, for a
// damaged part the hooks skip, OK with *skip set.
Status Damaged(const ScanHooks& hooks, Status status, std::string part, int64_t min_time, int64_t max_time,
               bool* skip) {
  *skip = false;
  if (status.ok() || status.code() != StatusCode::kDataLoss || !hooks.on_damaged_block) return status;
  RETURN_IF_ERROR(hooks.on_damaged_block(
      DamagedBlock{.part = std::move(part), .min_time = min_time, .max_time = max_time, .status = std::move(status)}));
  *skip = true;
  return Status::Ok();
}

}  // namespace

Status SegmentReader::Scan(int64_t from_ns, int64_t to_ns, const std::function<bool(uint64_t)>& series_filter,
                           uint32_t type_id, const std::function<void(const SampleRow&)>& visit,
                           const ScanHooks& hooks) const {
  if (from_ns >= to_ns) return Status::Ok();
  BlockLoader loader(fd_.get(), path_);
  const segment::BlockDecoder& decoder = loader.decoder();
  std::vector<uint8_t> selected;  // per run of the current block
  for (size_t b = 0; b < footer_.blocks.size(); ++b) {
    const BlockIndexEntry& entry = footer_.blocks[b];
    if (type_id < entry.min_type || type_id > entry.max_type) continue;
    if (entry.max_time < from_ns || entry.min_time >= to_ns) continue;
    if (hooks.before_block) RETURN_IF_ERROR(hooks.before_block());
    // Without a filter, a single-type block is needed whole: read it at once.
    const bool whole_block = !series_filter && entry.min_type == entry.max_type;
    bool skip = false;
    RETURN_IF_ERROR(Damaged(hooks, loader.LoadRuns(entry, b, whole_block), "block " + std::to_string(b),
                            entry.min_time, entry.max_time, &skip));
    if (skip) continue;
    const std::vector<segment::SeriesRun>& runs = decoder.runs();
    selected.assign(runs.size(), 0);
    bool any = false;
    for (size_t r = 0; r < runs.size(); ++r) {
      selected[r] = runs[r].type_id == type_id && (!series_filter || series_filter(runs[r].series_id));
      any |= selected[r] != 0;
    }
    if (!any) continue;
    RETURN_IF_ERROR(Damaged(hooks, loader.LoadColumns(), "block " + std::to_string(b), entry.min_time,
                            entry.max_time, &skip));
    if (skip) continue;
    const int64_t* times = decoder.times().data();
    const uint64_t* stacks = decoder.stacks().data();
    const int64_t* values = decoder.values().data();
    size_t row = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      const size_t end = row + runs[r].length;
      if (selected[r]) {
        SampleRow out;
        out.series_id = runs[r].series_id;
        out.type_id = runs[r].type_id;
        for (size_t i = row; i < end; ++i) {
          if (times[i] < from_ns || times[i] >= to_ns) continue;
          out.time_ns = times[i];
          out.stack_id = stacks[i];
          out.value = values[i];
          visit(out);
        }
      }
      row = end;
    }
  }
  return Status::Ok();
}

Status SegmentReader::Verify() const {
  BlockLoader loader(fd_.get(), path_);
  const segment::BlockDecoder& decoder = loader.decoder();
  const RowOrder order{footer_.time_window_ns};
  for (size_t b = 0; b < footer_.blocks.size(); ++b) {
    const BlockIndexEntry& entry = footer_.blocks[b];
    RETURN_IF_ERROR(loader.LoadRuns(entry, b, /*whole_block=*/true));
    RETURN_IF_ERROR(loader.LoadColumns());
    const std::string& where = loader.where();
    SampleRow prev;
    size_t row = 0;
    for (const segment::SeriesRun& run : decoder.runs()) {
      for (size_t i = row; i < row + run.length; ++i) {
        const SampleRow cur{decoder.times()[i], run.series_id, decoder.stacks()[i], decoder.values()[i], run.type_id};
        if (cur.type_id < entry.min_type || cur.type_id > entry.max_type || cur.time_ns < entry.min_time ||
            cur.time_ns > entry.max_time || cur.series_id < entry.min_series || cur.series_id > entry.max_series) {
          return DataLossError(where + " has a row outside the bounds in its index entry");
        }
        if (i > 0 && order.Compare(prev, cur) >= 0) return DataLossError(where + " has rows out of order");
        prev = cur;
      }
      row += run.length;
    }
  }
  RETURN_IF_ERROR(ScanGpuActivities(INT64_MIN, INT64_MAX, nullptr, [](const GpuActivityRow&) {}));
  return ScanGpuCoverage(INT64_MIN, INT64_MAX, nullptr, [](const GpuCoverageRow&) {});
}

int64_t SegmentReader::data_min_time() const {
  int64_t t = INT64_MAX;
  if (row_count() > 0) t = min_time();
  if (!footer_.gpu.blocks.empty()) t = std::min(t, footer_.gpu.blocks.front().min_start);
  if (gpu_coverage_count() > 0) t = std::min(t, footer_.gpu.coverage.min_second);
  return t == INT64_MAX ? 0 : t;
}

int64_t SegmentReader::data_max_time() const {
  int64_t t = INT64_MIN;
  if (row_count() > 0) t = max_time();
  for (const segment::GpuBlockEntry& b : footer_.gpu.blocks) t = std::max(t, b.max_start);
  if (gpu_coverage_count() > 0) t = std::max(t, footer_.gpu.coverage.max_second);
  return t == INT64_MIN ? 0 : t;
}

Status SegmentReader::ScanGpuActivities(int64_t from_ns, int64_t to_ns,
                                        const std::function<bool(uint64_t)>& series_filter,
                                        const std::function<void(const GpuActivityRow&)>& visit,
                                        const ScanHooks& hooks) const {
  if (from_ns >= to_ns) return Status::Ok();
  segment::ZstdDecompressor dctx = segment::NewZstdDecompressor();
  std::string bytes;
  std::vector<GpuActivityRow> rows;
  for (size_t b = 0; b < footer_.gpu.blocks.size(); ++b) {
    const segment::GpuBlockEntry& entry = footer_.gpu.blocks[b];
    if (entry.max_start < from_ns || entry.min_start >= to_ns) continue;
    if (hooks.before_block) RETURN_IF_ERROR(hooks.before_block());
    rows.clear();
    Status read = PreadFully(fd_.get(), entry.offset, entry.size, &bytes, path_);
    if (read.ok()) {
      read = segment::DecodeGpuBlock(bytes, entry, dctx.get(), &rows, footer_.version)
                 .WithContext("segment file " + path_ + " GPU block " + std::to_string(b) + " is corrupt");
    }
    bool skip = false;
    RETURN_IF_ERROR(
        Damaged(hooks, std::move(read), "GPU block " + std::to_string(b), entry.min_start, entry.max_start, &skip));
    if (skip) continue;
    for (const GpuActivityRow& row : rows) {
      if (row.start_ns < from_ns || row.start_ns >= to_ns) continue;
      if (series_filter && !series_filter(row.series_id)) continue;
      visit(row);
    }
  }
  return Status::Ok();
}

Status SegmentReader::ScanGpuCoverage(int64_t from_ns, int64_t to_ns, const std::function<bool(uint64_t)>& series_filter,
                                      const std::function<void(const GpuCoverageRow&)>& visit,
                                      const ScanHooks& hooks) const {
  const segment::GpuCoverageEntry& entry = footer_.gpu.coverage;
  if (from_ns >= to_ns || entry.row_count == 0 || entry.max_second < from_ns || entry.min_second >= to_ns) {
    return Status::Ok();
  }
  if (hooks.before_block) RETURN_IF_ERROR(hooks.before_block());
  segment::ZstdDecompressor dctx = segment::NewZstdDecompressor();
  std::string bytes;
  std::vector<GpuCoverageRow> rows;
  Status read = PreadFully(fd_.get(), entry.offset, entry.size, &bytes, path_);
  if (read.ok()) {
    read = segment::DecodeGpuCoverageChunk(bytes, entry, dctx.get(), &rows)
               .WithContext("segment file " + path_ + " GPU coverage is corrupt");
  }
  bool skip = false;
  RETURN_IF_ERROR(Damaged(hooks, std::move(read), "GPU coverage", entry.min_second, entry.max_second, &skip));
  if (skip) return Status::Ok();
  for (const GpuCoverageRow& row : rows) {
    if (row.second_ns < from_ns || row.second_ns >= to_ns) continue;
    if (series_filter && !series_filter(row.series_id)) continue;
    visit(row);
  }
  return Status::Ok();
}

}  // namespace warpscope
