// UnwindTableLoader describes processes to the BPF unwinder: it builds (or
// reuses) the unwind table of every executable mapping, uploads rows and page
// index into the shared BPF maps, and publishes each process's sorted mapping
// slice. Tables are shared by build id (or, without one, by device and inode)
// across processes and freed when the last process using them goes away.
//
// Threading: single-thread owned (the agent loop, the same thread that owns
// the Symbolizer). Table builds run on that thread; a very large binary
// delays the loop by its build time (measured in bench/, logged).
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
#include <unordered_map>
#include <vector>

#include "agent/process/proc_fs.h"
#include "agent/process/process_table.h"
#include "agent/unwind/range_allocator.h"
#include "agent/unwind/unwind_table.h"
#include "agent/unwind/unwind_map_sizing.h"
#include "base/status.h"
#include "bpf/intf/unwind.h"

namespace warpscope {

// The table options the agent builds with (also used by `warpscope-agent unwind-table`).
UnwindTableOptions AgentUnwindTableOptions();

struct UnwindMapFds {
  int entries = -1;
  int pages = -1;
  int exec_mappings = -1;
  int proc_info = -1;
  int py_procs = -1;  // ws_python.h: written by PythonProcesses
};

struct UnwindLoaderStats {
  uint64_t processes_described = 0;
  uint64_t tables_built = 0;
  uint64_t tables_failed = 0;     // binaries whose CFI could not be read (frame-pointer fallback)
  uint64_t tables_no_space = 0;   // tables that did not fit in the row budget
  uint64_t tables_live = 0;
  uint64_t tables_freed = 0;
  uint64_t rows_used = 0;
  uint64_t rows_capacity = 0;
  uint64_t pages_used = 0;
  double build_ms_total = 0;
  double build_ms_max = 0;
  std::string slowest_binary;
};

class UnwindTableLoader {
 public:
  UnwindTableLoader(UnwindMapFds fds, const UnwindMapSizes& sizes, ProcFs procfs);

  // Publishes the process's executable mappings; a no-op when this generation
  // of its maps was already published. Errors are about the BPF maps; a
  // binary without usable CFI is not an error (its frames use frame pointers).
  // `flags` (WS_PROC_*) go into the process's proc_info entry.
  Status Describe(const ProcessInfo& info, uint32_t flags = 0);
  // Removes the process (it exited or exec'ed) and frees tables no longer used.
  void Forget(uint32_t pid);

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
  };
  struct Process {
    uint64_t generation = 0;
    uint32_t flags = 0;
    uint32_t first = 0;
    uint32_t count = 0;
    std::vector<uint32_t> tables;  // ids referenced (with repetition: one ref each)
  };

  // Returns the table id for a file mapping, building it if needed; WS_TABLE_NONE when unusable.
  uint32_t TableFor(uint32_t pid, const MemoryMapping& m, uint64_t* table_base);
  // Builds and uploads a table from a file (`path`) or, when `image` is not
  // empty, from an in-memory ELF image (the [vdso]).
  StatusOr<uint32_t> Upload(const std::string& key, const std::string& path, std::string image = "");
  uint32_t VdsoTableFor(uint32_t pid, const MemoryMapping& m, uint64_t* table_base);
  uint32_t Ref(Table& table, const MemoryMapping& m, uint64_t* table_base);
  void Unref(uint32_t id);

  UnwindMapFds fds_;
  UnwindMapSizes sizes_;
  ProcFs procfs_;
  RangeAllocator rows_;
  RangeAllocator mapping_slots_;
  std::vector<std::unique_ptr<Table>> tables_;  // index = table id; null = free id
  std::unordered_map<std::string, uint32_t> table_by_key_;  // build id or dev:inode
  std::unordered_map<std::string, std::string> key_by_file_;  // "dev:inode" -> table key ("" = unusable)
  std::unordered_map<std::string, std::string> vdso_key_by_image_;  // one or two distinct vdsos per host
  std::unordered_map<uint32_t, Process> processes_;
  UnwindLoaderStats stats_;
};

}  // namespace warpscope
