// SpillFile and SortedRuns: how the agent builds tables whose size follows
// the binaries it reads (symbols, unwind rows) without holding them in memory.
//
// A SpillFile is a file nobody else sees (O_TMPFILE, or made and unlinked at
// once), in the spill directory: written once, then read back by offset with
// pread, never mapped, so what it holds is page cache the kernel may write out
// and reclaim, not the agent's resident memory, and nothing is left behind
// when the agent dies. Bytes in spill files are counted process-wide
// (SpillDiskBytes).
//
// SortedRuns<T> sorts any number of trivially copyable items in bounded
// memory: up to `keep_in_memory` items stay in memory and are sorted there;
// past that they go to a SpillFile in sorted runs of `run_size`, which Merge
// reads back in order with a small buffer per run. When no spill file can be
// made (no directory, no room), the items stay in memory and spill_failed()
// says so: slower to the node, never lost.
//
// Not thread-safe: one builder per object.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"

namespace warpscope {

// The directory spill files are made in, for the whole process ("/var/tmp"
// until set; the agent's `run` sets a directory under its state directory).
void SetSpillDirectory(const std::string& dir);
std::string SpillDirectory();
// Bytes in all spill files open now.
uint64_t SpillDiskBytes();

class SpillFile {
 public:
  // In `dir`, or SpillDirectory() when empty.
  static StatusOr<SpillFile> Create(const std::string& dir = "");

  SpillFile() = default;
  SpillFile(SpillFile&& other) noexcept;
  SpillFile& operator=(SpillFile&& other) noexcept;
  ~SpillFile();

  bool valid() const { return fd_.valid(); }
  Status Append(const void* data, size_t size);
  Status ReadAt(uint64_t offset, void* data, size_t size) const;
  // The bytes [offset, offset + size) are no longer needed: their disk
  // blocks are given back (a hole is punched; the file keeps its length) and
  // they no longer count in SpillDiskBytes.
  void Discard(uint64_t offset, uint64_t size);
  uint64_t size() const { return size_; }

 private:
  ScopedFd fd_;
  uint64_t size_ = 0;
  uint64_t discarded_ = 0;
};

template <typename T, typename Less>
class SortedRuns {
  static_assert(std::is_trivially_copyable_v<T>, "items are written to a file as they are");

 public:
  SortedRuns(size_t keep_in_memory, size_t run_size, std::string dir = "", Less less = Less())
      : keep_in_memory_(keep_in_memory), run_size_(std::max<size_t>(run_size, 1)), dir_(std::move(dir)), less_(less) {}

  Status Add(const T& item) {
    chunk_.push_back(item);
    if (chunk_.size() >= run_size_ && (spilled_ || chunk_.size() > keep_in_memory_)) return FlushRun();
    return Status::Ok();
  }
  // After the last Add: everything is in runs (then Merge) or in memory (then Sorted).
  Status Finish() {
    if (spilled_ || chunk_.size() > keep_in_memory_) return FlushRun();
    return Status::Ok();
  }
  bool spilled() const { return spilled_; }
  bool spill_failed() const { return spill_failed_; }
  size_t in_memory() const { return chunk_.size(); }
  // Not spilled: the items, sorted.
  std::vector<T>& Sorted() {
    std::stable_sort(chunk_.begin(), chunk_.end(), less_);
    return chunk_;
  }
  // Spilled: every item, in order (ties in the order they were added within
  // a run; across runs, by run).
  Status Merge(const std::function<Status(const T&)>& take) const;

 private:
  Status FlushRun() {
    if (chunk_.empty() || spill_failed_) return Status::Ok();
    if (!file_.valid()) {
      StatusOr<SpillFile> file = SpillFile::Create(dir_);
      if (!file.ok()) {
        spill_failed_ = true;  // kept in memory, as a small set is
        return Status::Ok();
      }
      file_ = std::move(*file);
    }
    std::stable_sort(chunk_.begin(), chunk_.end(), less_);
    const uint64_t offset = file_.size();
    RETURN_IF_ERROR(file_.Append(chunk_.data(), chunk_.size() * sizeof(T)));
    runs_.emplace_back(offset, chunk_.size());
    chunk_.clear();
    if (!spilled_) chunk_.shrink_to_fit();  // the first run may have been a large in-memory set
    spilled_ = true;
    return Status::Ok();
  }

  const size_t keep_in_memory_;
  const size_t run_size_;
  const std::string dir_;
  Less less_;
  std::vector<T> chunk_;
  SpillFile file_;
  std::vector<std::pair<uint64_t, size_t>> runs_;  // offset, count
  bool spilled_ = false;
  bool spill_failed_ = false;
};

template <typename T, typename Less>
Status SortedRuns<T, Less>::Merge(const std::function<Status(const T&)>& take) const {
  constexpr size_t kBuffer = 256;  // items read from a run at a time
  struct Reader {
    uint64_t offset;
    size_t left;
    size_t run;
    std::vector<T> buffer;
    size_t at = 0;
  };
  std::vector<Reader> readers;
  for (size_t i = 0; i < runs_.size(); ++i) readers.push_back({runs_[i].first, runs_[i].second, i, {}, 0});
  auto refill = [&](Reader& r) -> Status {
    const size_t n = std::min(kBuffer, r.left);
    r.buffer.resize(n);
    r.at = 0;
    if (n == 0) return Status::Ok();
    RETURN_IF_ERROR(file_.ReadAt(r.offset, r.buffer.data(), n * sizeof(T)));
    r.offset += n * sizeof(T);
    r.left -= n;
    return Status::Ok();
  };
  // A max-heap on "comes later": the front is the next item (ties: earlier run).
  auto later = [&](size_t a, size_t b) {
    const T& x = readers[a].buffer[readers[a].at];
    const T& y = readers[b].buffer[readers[b].at];
    if (less_(y, x)) return true;
    if (less_(x, y)) return false;
    return readers[a].run > readers[b].run;
  };
  std::vector<size_t> heap;
  for (size_t i = 0; i < readers.size(); ++i) {
    RETURN_IF_ERROR(refill(readers[i]));
    if (!readers[i].buffer.empty()) heap.push_back(i);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Reader& r = readers[heap.back()];
    RETURN_IF_ERROR(take(r.buffer[r.at]));
    if (++r.at == r.buffer.size()) RETURN_IF_ERROR(refill(r));
    if (r.buffer.empty()) {
      heap.pop_back();
    } else {
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  return Status::Ok();
}

}  // namespace warpscope
