// Symbolizer: turns sampled user and kernel addresses into named frames for
// the profile. The facade the recorder calls; single-thread owned (the
// recorder's drain thread), not thread-safe.
//
// Naming conventions — addresses are never dropped, every frame gets a name:
//   symbol found                     name = demangled symbol, system_name = raw symbol
//   file mapping, no symbol          "<basename>+0x<ELF virtual address>"; when the ELF
//                                    cannot be read: "<basename>+0x<file offset>"
//   [vdso] (or other [pseudo]) map   vdso symbol if readable, else "[vdso]+0x<offset in mapping>"
//   anonymous executable memory      has_mapping false, "[anon]+0x<address>" (JIT code, [anon:name])
//   in no executable mapping         has_mapping false, "[unknown]+0x<address>" (exited before
//                                    its maps were read, corrupt unwind)
//   kernel, not in kallsyms          "[kernel]+0x<address>"
// Hex is lowercase without leading zeros; the address shown is the sampled one
// even when the lookup used address-1.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/profile.h"
#include "agent/process/proc_fs.h"
#include "agent/process/process_table.h"
#include "agent/symbolize/binary_files.h"
#include "agent/symbolize/elf_symbols.h"
#include "agent/symbolize/kernel_symbols.h"
#include "base/status.h"

namespace warpscope {

struct SymbolizedFunction {
  std::string name;
  std::string system_name;
  std::string filename;
  int64_t line = 0;
};

struct SymbolizedFrame {
  // false: the address is in no known file mapping (anon memory, JIT, exited before we read maps).
  bool has_mapping = false;
  // id left 0; memory_start/limit/file_offset are the process's mapping; filename is the path the
  // process saw ("[vdso]", "[kernel.kallsyms]", "[<module>]" for pseudo files); build_id; is_kernel.
  ProfileMapping mapping;
  uint64_t address = 0;      // the sampled address (unchanged)
  std::vector<SymbolizedFunction> functions;  // innermost first; ALWAYS at least one entry
};

struct SymbolizerStats {
  uint64_t user_frames = 0;
  uint64_t user_symbolized = 0;
  uint64_t user_no_mapping = 0;
  uint64_t user_no_symbol = 0;
  uint64_t kernel_frames = 0;
  uint64_t kernel_symbolized = 0;
  uint64_t elf_load_errors = 0;  // distinct binaries that could not be read (each counted once)
  uint64_t binaries_loaded = 0;  // distinct symbol tables read (shared ones counted once)
  uint64_t binaries_evicted = 0;  // tables dropped to stay within the cache budget
  size_t symbol_bytes = 0;       // memory held by all symbol tables, kernel included
  size_t demangled_bytes = 0;    // the demangled-name cache
  uint64_t demangled_resets = 0;  // times it was full and emptied
};

// The demangled-name cache's budget (names of the frames seen lately).
inline constexpr size_t kDemangledCacheBytes = size_t{1} << 20;

// Symbol tables of binaries that no known process maps are kept, most
// recently used first, while all binaries' tables together fit this budget;
// beyond it they are dropped (and read again if the binary turns up again).
// Tables of binaries mapped by a known process are never dropped, so the
// budget bounds what the past leaves behind, not what the present needs.
inline constexpr size_t kDefaultSymbolCacheBytes = size_t{256} << 20;

class Symbolizer {
 public:
  explicit Symbolizer(ProcFs procfs, std::string kallsyms_path = "/proc/kallsyms",
                      size_t cache_bytes = kDefaultSymbolCacheBytes);

  // Loads kernel symbols. A kptr_restrict failure is returned so the caller can
  // warn once and continue; kernel frames are then named "[kernel]+0x...".
  Status Init();

  // Reads maps and loads (or finds cached) the symbols of every executable
  // file mapping now, while the process is alive, so that samples of processes
  // that exit later still get symbols. Cheap when nothing changed.
  void OnProcessSeen(uint32_t pid);
  // The process's maps read again (libraries dlopen'ed since it was seen).
  void OnMapsChanged(uint32_t pid);
  void OnExec(uint32_t pid);
  void OnExit(uint32_t pid);
  void BeginEpoch();  // forwards to ProcessTable
  // Forgets exited processes; when binaries' tables exceed the cache budget
  // and some were read since the last look, drops tables no process maps.
  void EndEpoch();

  // is_return_address: true for every frame except the leaf of a stack; the
  // lookup then uses address-1 so the call site, not the next line, is named.
  SymbolizedFrame SymbolizeUser(uint32_t pid, uint64_t address, bool is_return_address);
  SymbolizedFrame SymbolizeKernel(uint64_t address, bool is_return_address);

  // The mapping of the process's main executable (its lowest executable
  // mapping of /proc/PID/exe), shaped exactly like SymbolizeUser's mappings so
  // a profile can list it first (pprof tools treat mapping 1 as the main binary).
  std::optional<ProfileMapping> MainExecutableMapping(uint32_t pid);

  // Deferred loading: OnProcessSeen, OnMapsChanged and OnExec no longer read
  // the symbols of files they do not know; the caller reads them elsewhere
  // (ReadSymbolsFor, on a worker) and hands them over with Adopt. A lookup
  // that needs a file not handed over yet asks `fetch`, which may wait for
  // that read, and reads the file itself when `fetch` has nothing.
  using SymbolFetch =
      std::function<std::optional<StatusOr<std::shared_ptr<const ElfSymbols>>>(uint32_t pid, const MemoryMapping& m)>;
  void DeferLoads(SymbolFetch fetch) { fetch_ = std::move(fetch); }
  bool Knows(const MemoryMapping& m) const { return by_file_.contains(IdentityOf(m)); }
  // The symbols read for the file behind `m`, or why they could not be.
  void Adopt(uint32_t pid, const MemoryMapping& m, StatusOr<std::shared_ptr<const ElfSymbols>> symbols);

  SymbolizerStats stats() const { return stats_; }
  const ProcessTable& processes() const { return processes_; }
  // Opens binaries for the symbolizer and, shared, for the other readers of a
  // process's files (unwind tables, CPython detection).
  BinaryFiles& files() { return files_; }
  const BinaryFiles& files() const { return files_; }

 private:
  struct FileEntry {
    std::shared_ptr<const ElfSymbols> table;  // null: the binary could not be read
    uint64_t last_used_epoch = 0;
    uint64_t mapped_in_sweep = 0;  // the last sweep that found a process mapping it
  };
  struct ProcessState {
    uint64_t warmed_generation = 0;
    bool vdso_read = false;
    std::shared_ptr<const ElfSymbols> vdso;
  };

  void Warm(const ProcessInfo& info);
  const ElfSymbols* BinaryFor(uint32_t pid, const MemoryMapping& m);
  std::shared_ptr<const ElfSymbols> LoadBinary(uint32_t pid, const MemoryMapping& m);
  // Registers what was read for `m`'s file (sharing a table of the same build
  // already held); null when it could not be read.
  std::shared_ptr<const ElfSymbols> Install(uint32_t pid, const MemoryMapping& m,
                                            StatusOr<std::shared_ptr<const ElfSymbols>> read);
  const ElfSymbols* VdsoFor(uint32_t pid, const MemoryMapping& m);
  void AddTable(const std::shared_ptr<const ElfSymbols>& table);
  // EndEpoch's budget check: drops least recently used tables of binaries no
  // known process maps until the binaries' tables fit the budget.
  void EvictUnmapped();
  void SetSymbolName(SymbolizedFrame& frame, std::string raw);  // the symbol's raw name, moved in

  ProcessTable processes_;
  BinaryFiles files_;
  std::string kallsyms_path_;
  KernelSymbols kernel_;
  // A table lives while a file entry holds it (see kDefaultSymbolCacheBytes);
  // a null entry remembers a binary that could not be read. by_build_id_
  // finds a table already read for another file of the same build.
  std::unordered_map<FileIdentity, FileEntry, FileIdentityHash> by_file_;
  std::unordered_map<std::string, std::weak_ptr<const ElfSymbols>> by_build_id_;
  size_t cache_bytes_;
  size_t file_table_bytes_ = 0;  // tables held by by_file_, each counted once
  bool loaded_since_sweep_ = false;
  uint64_t epoch_ = 1;
  uint64_t sweeps_ = 0;
  // Keyed by the whole image (a few KiB): there are one or two distinct vdsos per host.
  std::unordered_map<std::string, std::shared_ptr<const ElfSymbols>> vdso_by_image_;
  std::unordered_map<uint32_t, ProcessState> process_state_;
  // Demangling costs microseconds per call: raw name -> demangled, up to
  // kDemangledCacheBytes (then emptied and filled again; counted).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> demangled_;
  size_t demangled_bytes_ = 0;
  SymbolFetch fetch_;  // set: loads are deferred
  SymbolizerStats stats_;
};

// The symbols of `file`, the file behind `m` in process `pid` (for debug
// files looked up in the process's root). Any thread.
StatusOr<std::shared_ptr<const ElfSymbols>> ReadSymbolsFor(ElfFile& file, uint32_t pid, const MemoryMapping& m,
                                                           const ProcFs& procfs);

// `frame` as a location of `builder` (its mapping and lines interned too).
uint64_t InternSymbolizedFrame(ProfileBuilder* builder, const SymbolizedFrame& frame, FrameKind kind);

}  // namespace warpscope
