// PythonProcesses: the user-space half of the CPython unwinder. It finds
// CPython in each described process (the executable or a libpython mapping),
// publishes the process's ws_py_proc to the BPF map `py_procs`, and turns the
// Python frames of drained stacks (code object address, fingerprint,
// instruction index) into qualified name, file and line.
//
// Threading: single-thread owned (the agent loop, with the Symbolizer and the
// UnwindTableLoader).
//
// Code objects are read from the process's memory, so they must be read
// while it lives: Prefetch() reads the code objects of a stack as soon as BPF
// reports it new, and Resolve() at drain time reads what is still missing.
// Cache entries are keyed by (pid, address, fingerprint): a code object freed
// and replaced by another at the same address has another fingerprint and is
// read afresh; one that is gone for good resolves to a placeholder, never to a
// wrong name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "agent/process/proc_fs.h"
#include "agent/process/process_table.h"
#include "agent/symbolize/binary_files.h"
#include "agent/unwind/python/code_object.h"
#include "agent/unwind/python/python_binary.h"
#include "agent/unwind/python/python_layouts.h"

namespace warpscope {

struct PythonFrame {
  std::string name;      // qualified name (co_qualname; co_name before 3.11)
  std::string filename;  // co_filename
  int32_t line = 0;      // 0 when unknown
  bool resolved = false;
};

struct PythonStats {
  uint64_t processes = 0;              // processes with a supported CPython
  uint64_t unsupported_processes = 0;  // CPython found, version not supported
  uint64_t code_objects_read = 0;
  uint64_t code_objects_shared = 0;    // taken from another process of the same binary (static code objects)
  uint64_t code_object_errors = 0;     // unreadable, or its fingerprint no longer matched
  uint64_t frames_resolved = 0;
  uint64_t frames_unresolved = 0;
  uint64_t code_bytes = 0;             // the processes' code-object caches now (kept per process)
  uint64_t static_code_bytes = 0;      // the code objects shared by processes of one binary
  uint64_t code_cache_evictions = 0;   // a process's cache given up (over the budget, or its churn bound)
};

// The processes' code-object caches together hold at most this many bytes.
inline constexpr size_t kDefaultPythonCodeCacheBytes = size_t{16} << 20;

class PythonProcesses {
 public:
  // `py_procs_fd`: the BPF map (-1 in tests that only resolve).
  // Detection results are cached per binary file; past `max_binaries` files,
  // EndEpoch forgets those no described process runs (a host that keeps
  // running new executables, such as a build machine, would grow otherwise).
  // Binaries are opened through `files` (shared with the other readers of a
  // process's files), or through a BinaryFiles of its own when null.
  // The code objects read from processes are cached per process, all
  // processes together within `max_code_bytes` (past it, the process holding
  // the most gives its cache up).
  PythonProcesses(int py_procs_fd, ProcFs procfs, size_t max_binaries = 4096, BinaryFiles* files = nullptr,
                  size_t max_code_bytes = kDefaultPythonCodeCacheBytes);

  // Detects CPython in `info` (once per binary file) and publishes or
  // withdraws the process's entry. Returns the WS_PROC_* flags for proc_info.
  uint32_t Describe(const ProcessInfo& info);
  // Deferred reads: Describe no longer reads files it has not checked for
  // CPython; the caller checks them elsewhere (ReadPythonBinary, on a worker),
  // hands the answer over with Adopt and describes the process again.
  void DeferReads() { defer_reads_ = true; }
  // Whether Describe would read `m`'s file (the executable or a libpython).
  static bool IsCandidate(const ProcessInfo& info, const MemoryMapping& m);
  bool Knows(const MemoryMapping& m) const { return binaries_.contains(IdentityOf(m)); }
  // The answer for `m`'s file, read from the open file: remembered either way
  // (an error means no usable CPython in it).
  void Adopt(const MemoryMapping& m, StatusOr<PythonBinary> binary);

  // The process exec'ed: its old code objects mean nothing now.
  void OnExec(uint32_t pid);
  // The process exited: its entry goes now, its cache after EndEpoch().
  void OnExit(uint32_t pid);
  // Drops caches of processes that exited before this epoch's drain.
  void EndEpoch();

  // Reads now the code objects of a stack's Python frames not cached yet.
  void Prefetch(uint32_t pid, const uint64_t* frames, size_t count);
  PythonFrame Resolve(uint32_t pid, uint64_t code_addr, uint32_t fingerprint, uint32_t instr_index);
  // The same for a frame as BPF stores it: its two stack slots (bpf/intf/python.h).
  PythonFrame ResolveSlots(uint32_t pid, uint64_t slot0, uint64_t slot1) {
    return Resolve(pid, slot0 & WS_PY_ADDR_MASK, static_cast<uint32_t>(slot1 >> 32), static_cast<uint32_t>(slot1));
  }

  // The CPython version found in the process, if any (for messages and tests).
  const PythonVersion* VersionOf(uint32_t pid) const;
  const PythonStats& stats() const { return stats_; }
  size_t binaries_cached() const { return binaries_.size(); }

 private:
  struct Process {
    uint64_t generation = 0;  // of the maps last described
    const PythonLayout* layout = nullptr;
    PythonVersion version;
    FileIdentity binary_key;  // its entry in binaries_
    uint64_t bias = 0;        // the load bias of that binary
    // Where the binary's initialized data lies in the process: code objects
    // there (CPython's deep-frozen modules) are the same in every process of
    // the binary.
    std::vector<std::pair<uint64_t, uint64_t>> static_ranges;
    std::map<std::pair<uint64_t, uint32_t>, std::shared_ptr<const PythonCodeInfo>> code;  // (addr, fingerprint)
    size_t code_bytes = 0;
  };
  static size_t CodeBytes(const PythonCodeInfo* info);
  void AddCode(Process& p, const std::pair<uint64_t, uint32_t>& key, std::shared_ptr<const PythonCodeInfo> info);
  void ClearCode(Process& p);
  bool EraseProcess(uint32_t pid);  // false when it was not described
  // Per file: the binary when it holds CPython; null when it does not.
  const PythonBinary* BinaryFor(uint32_t pid, const MemoryMapping& m);
  std::shared_ptr<const PythonCodeInfo> Lookup(uint32_t pid, Process& p, uint64_t code_addr, uint32_t fingerprint);

  int py_procs_fd_;
  ProcFs procfs_;
  std::unique_ptr<BinaryFiles> own_files_;
  BinaryFiles* files_;
  size_t max_binaries_;
  size_t max_code_bytes_;
  std::unordered_map<FileIdentity, std::unique_ptr<PythonBinary>, FileIdentityHash> binaries_;
  std::unordered_set<std::string> warned_;  // binaries whose version was reported unsupported
  std::unordered_map<uint32_t, Process> processes_;
  // Static code objects by (binary, address less the load bias, fingerprint).
  struct StaticCodeKey {
    FileIdentity binary;
    uint64_t vaddr;
    uint32_t fingerprint;
    bool operator==(const StaticCodeKey&) const = default;
  };
  struct StaticCodeKeyHash {
    size_t operator()(const StaticCodeKey& k) const {
      return FileIdentityHash()(k.binary) ^ std::hash<uint64_t>()(k.vaddr * 31 + k.fingerprint);
    }
  };
  std::unordered_map<StaticCodeKey, std::shared_ptr<const PythonCodeInfo>, StaticCodeKeyHash> static_code_;
  std::unordered_set<uint32_t> exited_;
  bool defer_reads_ = false;
  PythonStats stats_;
};

}  // namespace warpscope
