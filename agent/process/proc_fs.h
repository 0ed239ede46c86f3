// ProcFs: the one seam between the agent and /proc (CONTRIBUTING.md, "Tests"). Tests
// point it at a fixture directory laid out like /proc; production uses "/proc".
// Stateless apart from the root path, so copies are cheap and any thread may
// use its own copy.
#pragma once

#include <cstdint>
#include <string>

#include "agent/process/proc_maps.h"
#include "base/status.h"

namespace warpscope {

class ProcFs {
 public:
  explicit ProcFs(std::string root = "/proc");

  // A vanished process reads as a NotFound status; callers treat that as an
  // ordinary outcome.
  StatusOr<std::string> ReadMaps(uint32_t pid) const;
  // The thread-group leader's comm, without the trailing newline.
  StatusOr<std::string> ReadComm(uint32_t pid) const;
  // One thread's comm (root/PID/task/TID/comm), without the trailing newline.
  // Threads are renamed at run time (pthread_setname_np), so callers re-read
  // rather than cache forever.
  StatusOr<std::string> ReadThreadComm(uint32_t pid, uint32_t tid) const;
  // Raw text of /proc/PID/cgroup; ParseCgroupFile (container_labels.h) turns
  // it into container and pod labels.
  StatusOr<std::string> ReadCgroup(uint32_t pid) const;
  // Target of /proc/PID/exe, without a " (deleted)" suffix.
  StatusOr<std::string> ReadExeLink(uint32_t pid) const;
  // Reads len bytes of the process's memory at addr through /proc/PID/mem
  // (needs ptrace access, i.e. root). Used for the [vdso] image.
  StatusOr<std::string> ReadMemory(uint32_t pid, uint64_t addr, size_t len) const;
  bool Exists(uint32_t pid) const;

  // root + "/PID/root" + path: reaches files of processes in other mount
  // namespaces (containers). `path` should start with '/' (or be empty).
  std::string RootPath(uint32_t pid, const std::string& path) const;
  // root + "/PID/map_files/<start>-<end>" in lowercase hex without 0x, as the
  // kernel names them; opens the mapped file even after it was deleted.
  std::string MapFilesPath(uint32_t pid, uint64_t start, uint64_t end) const;

  // Size and modification time of the file behind a file-backed mapping:
  // through map_files (deleted files, other mount namespaces), else through
  // the process's root when that file still has the mapping's inode. False
  // when neither can be read (the process exited).
  bool StatMappedFile(uint32_t pid, const MemoryMapping& m, uint64_t* size, int64_t* mtime_ns) const;

  const std::string& root() const { return root_; }

 private:
  std::string PidPath(uint32_t pid) const;

  std::string root_;
};

}  // namespace warpscope
