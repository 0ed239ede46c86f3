// KernelSymbols: the kernel's text symbols from /proc/kallsyms, sorted for
// address lookup. Immutable after construction, so safe to read from any
// thread; built once at startup (reading kallsyms takes ~100 ms on big kernels).
//
// The ~200,000 symbols of a distribution kernel (~8 MB as a table) are kept
// in a SymbolBlocks spill file; in memory stay its block index, the modules
// and which symbols belong to which. kallsyms is read a line at a time. Where
// no spill file can be made, the table is kept in memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/symbolize/symbol_blocks.h"
#include "base/status.h"

namespace warpscope {

// Address range of the core kernel or of one module, as seen through its
// symbols: [lowest symbol, highest symbol + 1).
struct KernelTextRange {
  uint64_t start = 0;
  uint64_t limit = 0;
};

struct KernelSymbol {
  std::string name;
  std::string_view module;  // empty for the core kernel, "nvidia", "bpf", ...; a view into the KernelSymbols
  uint64_t start = 0;
  KernelTextRange module_range;  // of `module` (or the core kernel)
};

class KernelSymbols {
 public:
  KernelSymbols() = default;

  // Fails with FailedPrecondition when the addresses are hidden (kptr_restrict).
  // `spill_dir` empty: SpillDirectory().
  static StatusOr<KernelSymbols> Load(const std::string& path = "/proc/kallsyms", const std::string& spill_dir = "");
  // Never fails; malformed lines are skipped. Check addresses_hidden().
  static KernelSymbols Parse(std::string_view text, const std::string& spill_dir = "");

  // The symbol whose range holds addr. A symbol extends to the next symbol of
  // the same module; the last one of a module extends at most kMaxLastSymbolSize.
  std::optional<KernelSymbol> Lookup(uint64_t addr) const;
  // Range of the core kernel (module "") or a module; zeros when unknown.
  KernelTextRange Range(std::string_view module) const;

  // Every symbol line read had address 0: kernel.kptr_restrict hides them.
  bool addresses_hidden() const { return addresses_hidden_; }
  size_t size() const;
  bool spilled() const { return blocks_ != nullptr; }
  size_t MemoryBytes() const;

  static constexpr uint64_t kMaxLastSymbolSize = 64 * 1024;

 private:
  friend class KernelSymbolsBuilder;
  struct Symbol {
    uint64_t start;
    uint64_t end;
    uint32_t name_offset;  // into names_, NUL-terminated
    uint32_t module;       // index into modules_; 0 is the core kernel
  };
  struct Module {
    std::string name;
    KernelTextRange range;
  };

  std::vector<Symbol> symbols_;  // sorted by start, one per address (empty when in blocks_)
  std::string names_;
  std::unique_ptr<SymbolBlocks> blocks_;
  // (first symbol index, module): the module of every symbol, a run at a time.
  std::vector<std::pair<size_t, uint32_t>> module_runs_;
  std::vector<Module> modules_;
  bool addresses_hidden_ = false;
};

}  // namespace warpscope
