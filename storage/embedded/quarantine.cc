#include "storage/embedded/quarantine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/file_util.h"

namespace warpscope::embedded {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
}

Status FsyncDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open " + dir);
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "fsync " + dir);
  return Status::Ok();
}

// A name in `dir` not yet taken, for `path`'s file.
StatusOr<std::string> FreeName(const std::string& dir, const std::string& path) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError(errno, "create " + dir);
  const std::string base = dir + "/" + BaseName(path);
  std::string target = base;
  struct stat st {};
  for (int n = 1; ::lstat(target.c_str(), &st) == 0; ++n) target = base + "." + std::to_string(n);
  if (errno != ENOENT) return ErrnoError(errno, "stat " + target);
  return target;
}

}  // namespace

StatusOr<std::string> MoveToQuarantine(const std::string& dir, const std::string& path) {
  ASSIGN_OR_RETURN(std::string target, FreeName(dir, path));
  if (::rename(path.c_str(), target.c_str()) != 0) return ErrnoError(errno, "move " + path + " to " + target);
  RETURN_IF_ERROR(FsyncDir(dir));
  RETURN_IF_ERROR(FsyncDir(DirName(path)));
  return target;
}

StatusOr<std::string> CopyToQuarantine(const std::string& dir, const std::string& path) {
  ASSIGN_OR_RETURN(std::string target, FreeName(dir, path));
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  RETURN_IF_ERROR(WriteFileAtomically(target, bytes));
  RETURN_IF_ERROR(FsyncDir(dir));
  return target;
}

}  // namespace warpscope::embedded
