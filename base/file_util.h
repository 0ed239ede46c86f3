// File and fd helpers shared by the agent's /proc readers and writers.
#pragma once

#include <unistd.h>

#include <string>
#include <utility>

#include "base/status.h"

namespace warpscope {

// Owns a file descriptor; closes it on destruction. Movable, not copyable.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() { Reset(); }
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Reads a whole file (works for /proc files whose size reads as 0).
StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes data to path atomically: a temporary file in the same directory,
// fsync, then rename. The error names the path and the reason.
Status WriteFileAtomically(const std::string& path, const std::string& data);

// fsyncs a directory, so that the names created, renamed or deleted in it
// are durable.
Status FsyncDir(const std::string& dir);

// pread until `len` bytes are in `out` or the file ends (EINTR retried):
// the bytes read (fewer than `len` at the end of the file), or -1 with errno.
ssize_t PreadFully(int fd, void* out, size_t len, uint64_t offset);

// Checks that path can be created/overwritten, without leaving a file behind
// if it did not exist. Used to fail fast before a long recording.
Status CheckWritable(const std::string& path);

}  // namespace warpscope
