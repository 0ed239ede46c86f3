// ProcessTable: what the agent knows about each profiled process's executable
// mappings. Single-thread owned (the recorder's drain thread); not thread-safe.
//
// Lifetime rules the recorder relies on: maps are read while a process is
// alive (OnProcessSeen/OnExec) and kept after it exits until CollectExited(),
// so samples still queued for an exited process resolve against its last maps.
// Pointers returned by any method stay valid until the next non-const call.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/process/proc_fs.h"
#include "agent/process/proc_maps.h"

namespace warpscope {

struct ProcessInfo {
  uint32_t pid = 0;
  std::vector<MemoryMapping> mappings;  // executable ones, sorted by start, non-overlapping
  bool exited = false;
  // Table-wide counter bumped on every (re)read of maps, so a consumer can tell
  // "same maps as before" from "new maps" (exec, dlopen, pid reuse) cheaply.
  uint64_t generation = 0;
  std::string exe_path;  // /proc/PID/exe target; empty if unreadable
};

class ProcessTable {
 public:
  explicit ProcessTable(ProcFs procfs);

  // Reads maps now if the pid is unknown. A process that already vanished is
  // an ordinary outcome: nullptr, remembered as gone for the current epoch.
  const ProcessInfo* OnProcessSeen(uint32_t pid);
  // Drops the old image's maps and reads the new ones.
  void OnExec(uint32_t pid);
  // Reads the maps of a known, live process again (it has dlopen'ed
  // libraries since: a CUDA process connecting after loading the injection
  // library and CUPTI), or reads them first when the pid is unknown; a new
  // generation either way. Null when the process is gone.
  const ProcessInfo* OnMapsChanged(uint32_t pid);
  // Marks exited; maps are kept until CollectExited().
  void OnExit(uint32_t pid);
  // Binary search. On a miss while the process is alive, maps are re-read at
  // most once per epoch (libraries dlopen'ed after the first read). Unknown
  // pids are read on first use.
  const MemoryMapping* FindMapping(uint32_t pid, uint64_t addr);
  const ProcessInfo* Find(uint32_t pid) const;
  // Every process known now (exited ones until CollectExited()).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [pid, entry] : processes_) fn(entry.info);
  }

  void BeginEpoch();
  // Forgets exited processes and pids remembered as gone.
  void CollectExited();

  const ProcFs& procfs() const { return procfs_; }
  size_t size() const { return processes_.size(); }

 private:
  struct Entry {
    ProcessInfo info;
    uint64_t miss_reread_epoch = 0;  // epoch of the last re-read caused by a lookup miss
  };

  // Re-reads maps into `entry`; on failure (process gone) marks it exited and
  // keeps what it had. Returns whether the read worked.
  bool ReadMaps(Entry& entry);
  Entry* Load(uint32_t pid);
  // The size and mtime of the file `m` maps, through a short-lived cache: a
  // node that keeps starting processes of the same binaries would otherwise
  // stat each of their files for every process.
  void StatFile(uint32_t pid, MemoryMapping& m);

  struct FileKey {
    uint32_t dev_major, dev_minor;
    uint64_t inode;
    bool operator==(const FileKey&) const = default;
  };
  struct FileKeyHash {
    size_t operator()(const FileKey& k) const {
      return std::hash<uint64_t>()(k.inode) ^ (size_t{k.dev_major} << 40) ^ (size_t{k.dev_minor} << 20);
    }
  };
  struct FileStat {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::chrono::steady_clock::time_point at;
  };

  ProcFs procfs_;
  std::unordered_map<uint32_t, Entry> processes_;
  std::unordered_map<uint32_t, uint64_t> gone_;  // pid -> epoch in which its maps could not be read
  uint64_t epoch_ = 1;
  uint64_t next_generation_ = 1;
  std::unordered_map<FileKey, FileStat, FileKeyHash> file_stats_;
};

}  // namespace warpscope
