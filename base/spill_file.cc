#include "base/spill_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

namespace warpscope {
namespace {

std::mutex g_dir_mu;
std::string g_dir = "/var/tmp";
std::atomic<uint64_t> g_disk_bytes{0};

}  // namespace

void SetSpillDirectory(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_dir_mu);
  g_dir = dir;
}

std::string SpillDirectory() {
  std::lock_guard<std::mutex> lock(g_dir_mu);
  return g_dir;
}

uint64_t SpillDiskBytes() { return g_disk_bytes.load(std::memory_order_relaxed); }

StatusOr<SpillFile> SpillFile::Create(const std::string& dir_or_default) {
  const std::string dir = dir_or_default.empty() ? SpillDirectory() : dir_or_default;
  SpillFile file;
  file.fd_ = ScopedFd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (file.fd_.valid()) return file;
  // Without O_TMPFILE (some file systems): made and unlinked at once.
  std::string path = dir + "/warpscope-spill-XXXXXX";
  file.fd_ = ScopedFd(::mkostemp(path.data(), O_CLOEXEC));
  if (!file.fd_.valid()) return ErrnoError(errno, "create a spill file in " + dir);
  ::unlink(path.c_str());
  return file;
}

SpillFile::SpillFile(SpillFile&& other) noexcept
    : fd_(std::move(other.fd_)),
      size_(std::exchange(other.size_, 0)),
      discarded_(std::exchange(other.discarded_, 0)) {}

SpillFile& SpillFile::operator=(SpillFile&& other) noexcept {
  if (this != &other) {
    g_disk_bytes.fetch_sub(size_ - discarded_, std::memory_order_relaxed);
    fd_ = std::move(other.fd_);
    size_ = std::exchange(other.size_, 0);
    discarded_ = std::exchange(other.discarded_, 0);
  }
  return *this;
}

SpillFile::~SpillFile() { g_disk_bytes.fetch_sub(size_ - discarded_, std::memory_order_relaxed); }

void SpillFile::Discard(uint64_t offset, uint64_t size) {
  if (offset >= size_ || size == 0) return;
  size = std::min(size, size_ - offset);
  (void)::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(size));
  discarded_ += size;
  g_disk_bytes.fetch_sub(size, std::memory_order_relaxed);
}

Status SpillFile::Append(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_.get(), p, size, static_cast<off_t>(size_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError(n < 0 ? errno : ENOSPC, "write a spill file");
    p += n;
    size_ += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
    g_disk_bytes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status SpillFile::ReadAt(uint64_t offset, void* data, size_t size) const {
  const ssize_t n = PreadFully(fd_.get(), data, size, offset);
  if (n != static_cast<ssize_t>(size)) return ErrnoError(n < 0 ? errno : EIO, "read a spill file");
  return Status::Ok();
}

}  // namespace warpscope
