// UnwindTableLoader describes processes to the BPF unwinder: it builds (or
// reuses) the unwind table of every executable mapping, uploads rows and page
// index into the shared BPF maps, and publishes each process's sorted mapping
// slice. Tables are shared by build id (or, without one, by file identity)
// across processes. A table whose last process went away stays loaded, idle,
// for kIdleTableGrace: the next process of the same binary (a probe, a cron
// job, a shell command) takes it back without reading the file. Idle tables
// give way, oldest first, when a new table needs their rows or pages.
//
// Threading: single-thread owned (the agent loop, the same thread that owns
// the Symbolizer). Tables are built on that thread, unless builds are
// deferred (DeferBuilds): then a file without a table yet is left out of the
// process's description (its frames use frame pointers), the caller builds
// the table elsewhere (BuildLoaderTable, on a worker) and hands it over with
// AdoptTable, and the next Describe of the process publishes it whole.
//
// Ordering with the BPF readers: rows and pages are written before the slice
// that references them, and a process's proc_info entry is switched to its new
// slice in one map update; only then is the old slice freed. A sample racing
// with a table being freed can read rows of a newer table and stop early; it
// never reads outside the maps.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agent/process/proc_fs.h"
#include "agent/process/process_table.h"
#include "agent/symbolize/binary_files.h"
#include "agent/unwind/range_allocator.h"
#include "agent/unwind/unwind_table.h"
#include "agent/unwind/unwind_map_sizing.h"
#include "base/status.h"
#include "bpf/intf/unwind.h"

namespace warpscope {

// The table options the agent builds with (also used by `warpscope-agent unwind-table`).
UnwindTableOptions AgentUnwindTableOptions();

// A table built off the loop thread, ready for AdoptTable.
struct BuiltLoaderTable {
  UnwindTable table;
  UnwindPageIndex index;
  double build_ms = 0;
};
StatusOr<BuiltLoaderTable> BuildLoaderTable(std::shared_ptr<ElfFile> file);

struct UnwindMapFds {
  int entries = -1;
  int pages = -1;
  int exec_mappings = -1;
  int proc_info = -1;
  int py_procs = -1;  // ws_python.h: written by PythonProcesses
};

// How long a table no process uses stays loaded (unless its space is needed).
inline constexpr std::chrono::seconds kIdleTableGrace{600};

struct UnwindLoaderStats {
  uint64_t processes_described = 0;
  uint64_t tables_built = 0;
  uint64_t tables_rebuilt = 0;    // built again after being freed (counted in tables_built too)
  uint64_t tables_reused = 0;     // idle tables a new process took back
  uint64_t tables_idle = 0;       // loaded, used by no process (counted in tables_live too)
  uint64_t tables_failed = 0;     // binaries whose CFI could not be read (frame-pointer fallback)
  uint64_t tables_no_space = 0;   // tables that did not fit in the row budget
  uint64_t tables_live = 0;
  uint64_t tables_freed = 0;      // idle tables unloaded: their grace ran out or their space was needed
  uint64_t rows_used = 0;
  uint64_t rows_capacity = 0;
  uint64_t pages_used = 0;
  double build_ms_total = 0;
  double build_ms_max = 0;
  std::string slowest_binary;
};

class UnwindTableLoader {
 public:
  using Clock = std::chrono::steady_clock;

  // Binaries are opened through `files` (shared with the other readers of a
  // process's files), or through a BinaryFiles of its own when null.
  UnwindTableLoader(UnwindMapFds fds, const UnwindMapSizes& sizes, ProcFs procfs, BinaryFiles* files = nullptr);

  // Publishes the process's executable mappings; a no-op when this generation
  // of its maps was already published. Errors are about the BPF maps; a
  // binary without usable CFI is not an error (its frames use frame pointers).
  // `flags` (WS_PROC_*) go into the process's proc_info entry.
  Status Describe(const ProcessInfo& info, uint32_t flags = 0);
  // From now on, files without a table are not read by Describe (see above).
  void DeferBuilds() { defer_builds_ = true; }
  // Whether the file has a table (or is known to have none usable).
  bool Knows(const MemoryMapping& m) const { return key_by_file_.contains(IdentityOf(m)); }
  // A table built elsewhere for the file behind `m` (whose build id is
  // `build_id`, "" when none), or why it could not be built.
  void AdoptTable(const MemoryMapping& m, const std::string& build_id, StatusOr<BuiltLoaderTable> built);
  // Whether the process was described without some of its tables (deferred).
  bool Incomplete(uint32_t pid) const;

  // Removes the process (it exited or exec'ed); tables no longer used go idle.
  void Forget(uint32_t pid);
  // Unloads idle tables older than kIdleTableGrace (the loader also does so
  // on each Describe and Forget).
  void ExpireIdle(Clock::time_point now);

  const UnwindLoaderStats& stats() const { return stats_; }

 private:
  struct Table {
    uint32_t id = 0;
    uint32_t first = 0;  // first row in the entries map
    uint32_t count = 0;
    uint64_t base_vaddr = 0;
    std::vector<LoadSegment> segments;  // PT_LOAD, to turn a mapping's file offset into a vaddr (from the build)
    std::vector<uint32_t> pages;
    std::string key;
    int refs = 0;
    Clock::time_point idle_since{};  // refs == 0 since then
  };
  struct Process {
    uint64_t generation = 0;
    uint32_t flags = 0;
    uint32_t first = 0;
    uint32_t count = 0;
    bool incomplete = false;  // some files were left out for their deferred tables
    std::vector<uint32_t> tables;  // ids referenced (with repetition: one ref each)
  };

  // Returns the table id for a file mapping, building it if needed; WS_TABLE_NONE when unusable.
  uint32_t TableFor(uint32_t pid, const MemoryMapping& m, uint64_t* table_base);
  // Builds and uploads a table from a file (`path`) or, when `image` is not
  // empty, from an in-memory ELF image (the [vdso]).
  StatusOr<uint32_t> Upload(const std::string& key, BuiltLoaderTable built, const std::string& name);
  using KeyByFile = std::unordered_map<FileIdentity, std::string, FileIdentityHash>;
  // Uploads `built` under `key`; returns the key, or "" (none usable) when
  // it could not be built or uploaded.
  std::string UploadOrUnusable(std::string key, StatusOr<BuiltLoaderTable> built, const std::string& name);
  // Remembers which table the file uses (key "" = none usable).
  KeyByFile::iterator Remember(const FileIdentity& identity, std::string key);
  uint32_t VdsoTableFor(uint32_t pid, const MemoryMapping& m, uint64_t* table_base);
  uint32_t Ref(Table& table, const MemoryMapping& m, uint64_t* table_base);
  void Unref(uint32_t id);
  // Unloads the oldest idle table; false when none is idle.
  bool FreeOldestIdle();
  void Free(uint32_t id);

  UnwindMapFds fds_;
  UnwindMapSizes sizes_;
  ProcFs procfs_;
  std::unique_ptr<BinaryFiles> own_files_;
  BinaryFiles* files_;
  RangeAllocator rows_;
  RangeAllocator mapping_slots_;
  std::vector<std::unique_ptr<Table>> tables_;  // index = table id; null = free id
  std::unordered_map<std::string, uint32_t> table_by_key_;  // build id or dev:inode
  KeyByFile key_by_file_;  // -> table key ("" = unusable)
  std::map<std::pair<Clock::time_point, uint32_t>, uint32_t> idle_;  // (idle since, id) -> id, oldest first
  std::unordered_set<std::string> freed_keys_;  // keys of tables freed so far (bounded), to count rebuilds
  std::unordered_map<std::string, std::string> vdso_key_by_image_;  // one or two distinct vdsos per host
  std::unordered_map<uint32_t, Process> processes_;
  bool defer_builds_ = false;
  UnwindLoaderStats stats_;
};

}  // namespace warpscope
