#include "agent/process/proc_fs.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/file_util.h"

namespace warpscope {

ProcFs::ProcFs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string ProcFs::PidPath(uint32_t pid) const { return root_ + "/" + std::to_string(pid); }

StatusOr<std::string> ProcFs::ReadMaps(uint32_t pid) const { return ReadFileToString(PidPath(pid) + "/maps"); }

namespace {

StatusOr<std::string> ReadCommFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string comm, ReadFileToString(path));
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
  return comm;
}

}  // namespace

StatusOr<std::string> ProcFs::ReadComm(uint32_t pid) const { return ReadCommFile(PidPath(pid) + "/comm"); }

StatusOr<std::string> ProcFs::ReadThreadComm(uint32_t pid, uint32_t tid) const {
  return ReadCommFile(PidPath(pid) + "/task/" + std::to_string(tid) + "/comm");
}

StatusOr<std::string> ProcFs::ReadCgroup(uint32_t pid) const { return ReadFileToString(PidPath(pid) + "/cgroup"); }

StatusOr<std::string> ProcFs::ReadExeLink(uint32_t pid) const {
  const std::string link = PidPath(pid) + "/exe";
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf));
  if (n < 0) return ErrnoError(errno, "readlink " + link);
  std::string target(buf, static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  if (target.size() > kDeleted.size() && target.ends_with(kDeleted)) target.resize(target.size() - kDeleted.size());
  return target;
}

StatusOr<std::string> ProcFs::ReadMemory(uint32_t pid, uint64_t addr, size_t len) const {
  const std::string path = PidPath(pid) + "/mem";
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open " + path);
  std::string out(len, '\0');
  const ssize_t n = PreadFully(fd.get(), out.data(), len, addr);
  if (n < 0) return ErrnoError(errno, "pread " + path);
  if (static_cast<size_t>(n) < len) return DataLossError("short read of " + path);
  return out;
}

bool ProcFs::Exists(uint32_t pid) const {
  struct stat st;
  return ::stat(PidPath(pid).c_str(), &st) == 0;
}

std::string ProcFs::RootPath(uint32_t pid, const std::string& path) const { return PidPath(pid) + "/root" + path; }

std::string ProcFs::MapFilesPath(uint32_t pid, uint64_t start, uint64_t end) const {
  char range[40];
  std::snprintf(range, sizeof(range), "%llx-%llx", static_cast<unsigned long long>(start),
                static_cast<unsigned long long>(end));
  return PidPath(pid) + "/map_files/" + range;
}

bool ProcFs::StatMappedFile(uint32_t pid, const MemoryMapping& m, uint64_t* size, int64_t* mtime_ns) const {
  struct stat st;
  bool ok = ::stat(MapFilesPath(pid, m.start, m.end).c_str(), &st) == 0;
  if (!ok && !m.deleted) ok = ::stat(RootPath(pid, m.path).c_str(), &st) == 0 && st.st_ino == m.inode;
  if (!ok) return false;
  *size = static_cast<uint64_t>(st.st_size);
  *mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  return true;
}

}  // namespace warpscope
