#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

namespace warpscope {

StatusOr<std::string> ReadFileToString(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open " + path);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

namespace {
std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoError(errno, "cannot create " + tmp);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoError(errno, "write " + tmp);
      ::unlink(tmp.c_str());
      return s;
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) {
    Status s = ErrnoError(errno, "fsync " + tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  fd.Reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoError(errno, "rename " + tmp + " to " + path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Status FsyncDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open " + dir);
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "fsync " + dir);
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return InvalidArgumentError("output path " + path + " is a directory");
    if (::access(path.c_str(), W_OK) != 0) return ErrnoError(errno, "output path " + path + " is not writable");
    return Status::Ok();
  }
  const std::string dir = DirName(path);
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError(errno, "output directory " + dir);
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("output directory " + dir + " is not a directory");
  // access(2) says yes to root even on read-only mounts; a real create tells the truth.
  const std::string probe = path + ".probe." + std::to_string(::getpid());
  ScopedFd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoError(errno, "cannot write to " + dir);
  ::unlink(probe.c_str());
  return Status::Ok();
}

ssize_t PreadFully(int fd, void* out, size_t len, uint64_t offset) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, static_cast<char*>(out) + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace warpscope
