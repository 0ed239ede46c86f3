// ElfSymbols: the function symbols, GNU build id and load segments of one ELF
// file, read with libelf and stored compactly (16 bytes per symbol plus one
// string pool), because libraries such as libtorch_cuda.so carry hundreds of
// thousands of symbols and a profiler holds many of them at once.
//
// A table of more than ElfLoadOptions::spill_above_symbols symbols is kept
// in a spill file instead (base/spill_file.h: unlinked, never mapped): in memory stay only the first address of every
// block of 128 symbols and the few blocks read last. It is built the same
// way, sorted in runs that are merged, and the binary's pages are given back
// as it is read, so the agent's memory does not grow with the size of the
// binaries it names (a few hundred KB for a 200 MB binary; the file holds
// ~16 bytes plus the name per symbol). When no file can be made there, the
// table is kept in memory and counted (SymbolSpillStats).
//
// Immutable after Load(), so one table may be shared (by build id) and read
// from any thread (a spilled table's block cache takes a lock).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/symbolize/symbol_blocks.h"
#include "base/status.h"

namespace warpscope {

class ElfFile;

struct ElfSymbol {
  std::string name;       // raw (mangled, maybe versioned)
  uint64_t start = 0;     // ELF virtual address
  uint64_t size = 0;      // inferred for size-0 symbols (to the next symbol or section end)
};

struct ElfLoadOptions {
  // Path the process saw, whose directory anchors the .gnu_debuglink search;
  // empty means the path passed to Load(). Differs when the file is opened
  // through /proc/PID/map_files or /proc/PID/root.
  std::string logical_path;
  // Prefix such as "/proc/PID/root" under which debug files are looked for
  // first (containers); the host's own paths are tried after it.
  std::string root_prefix;
  std::string debug_dir = "/usr/lib/debug";
  bool search_debug_files = true;
  // Tables of more symbols than this are kept in a file (see above).
  size_t spill_above_symbols = 16384;
  // Candidates sorted in memory at a time while spilling (48 bytes each).
  size_t spill_run_symbols = 16384;
  // Where spilled tables live; empty: SpillDirectory() (base/spill_file.h).
  std::string spill_dir;
};

struct SymbolSpillStats {
  uint64_t tables = 0;         // tables built into a file
  uint64_t failures = 0;       // tables that should have been, kept in memory (no file could be made)
  uint64_t block_reads = 0;    // blocks read back by lookups
};
// Since the process started, all tables together.
SymbolSpillStats ReadSymbolSpillStats();

class ElfSymbols {
 public:
  // Reads .symtab and .dynsym. When there is no .symtab, a separate debug file
  // is searched, in order: <debug_dir>/.build-id/xx/rest.debug,
  // <dir>/.debug/<debuglink>, <debug_dir>/<dir>/<debuglink>; it is accepted
  // only if its build id (or, lacking one, the debuglink CRC) matches.
  static StatusOr<std::unique_ptr<ElfSymbols>> Load(const std::string& path, const ElfLoadOptions& options = {});
  // The same from a file already open (its other readers share the open).
  static StatusOr<std::unique_ptr<ElfSymbols>> Load(ElfFile& file, const ElfLoadOptions& options = {});
  // An ELF image already in memory (the [vdso] read out of a process).
  static StatusOr<std::unique_ptr<ElfSymbols>> LoadFromMemory(std::string image);
  // Only the build id (lowercase hex, "" when absent): cheap, lets callers
  // share an already loaded table before paying for the symbols.
  static StatusOr<std::string> ReadBuildId(const std::string& path);

  // The symbol whose [start, start + size) holds vaddr.
  std::optional<ElfSymbol> Lookup(uint64_t vaddr) const;
  // vaddr = file_offset - p_offset + p_vaddr of the (executable) PT_LOAD
  // segment holding the offset; nullopt when no segment does.
  std::optional<uint64_t> FileOffsetToVaddr(uint64_t file_offset) const;

  const std::string& build_id() const { return build_id_; }
  // The separate debug file whose .symtab was merged; empty if none.
  const std::string& debug_file() const { return debug_file_; }
  size_t size() const;
  size_t MemoryBytes() const;
  bool spilled() const { return spill_ != nullptr; }

  ElfSymbols(const ElfSymbols&) = delete;
  ElfSymbols& operator=(const ElfSymbols&) = delete;
  ~ElfSymbols();

 private:
  friend class ElfSymbolsBuilder;

  struct Symbol {
    uint64_t start;
    uint32_t size;
    uint32_t name_offset;  // into names_, NUL-terminated
  };
  struct Segment {
    uint64_t offset;
    uint64_t vaddr;
    uint64_t filesz;
    bool executable;
  };

  ElfSymbols() = default;

  std::vector<Symbol> symbols_;  // sorted by start, one per address (empty when spilled)
  std::string names_;
  std::unique_ptr<SymbolBlocks> spill_;
  std::vector<Segment> segments_;
  std::string build_id_;
  std::string debug_file_;
};

}  // namespace warpscope
