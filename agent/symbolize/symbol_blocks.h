// SymbolBlocks: a sorted symbol table kept in a spill file (base/spill_file.h)
// instead of in memory, for the tables whose size follows the binaries the
// agent reads (ElfSymbols of large binaries, the kernel's symbols).
//
// The file holds blocks of kBlockSymbols symbols, each a header, its
// symbols (start, size, name offset within the block) and their names; in
// memory stay the first address of each block (16 bytes per 128 symbols)
// and the last kCachedBlocks blocks read, so a table costs a few hundred KB
// whatever its size. Lookups read a block with one pread.
//
// Built once with SymbolBlocksWriter (symbols in address order), then
// immutable; Lookup is safe from any thread (the block cache takes a lock).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/spill_file.h"
#include "base/status.h"

namespace warpscope {

struct BlockSymbol {
  std::string name;
  uint64_t start = 0;
  uint64_t size = 0;
  size_t index = 0;  // its place in the table (0 = the lowest address)
};

class SymbolBlocks {
 public:
  static constexpr size_t kBlockSymbols = 128;
  // Blocks kept after a lookup, each at most kCachedBlockBytes (a block of
  // longer names is read again when needed).
  static constexpr size_t kCachedBlocks = 4;
  static constexpr size_t kCachedBlockBytes = 32 << 10;

  // The symbol whose [start, start + size) holds `addr`, looking back over at
  // most `steps_back` symbols from the last one starting at or before it (a
  // sized function enclosing smaller symbols); nullopt when none does or the
  // file cannot be read.
  std::optional<BlockSymbol> Lookup(uint64_t addr, int steps_back = 1) const;
  size_t size() const { return count_; }
  // Memory held, counting the block cache at its bound (a stable figure).
  size_t MemoryBytes() const;
  uint64_t DiskBytes() const { return file_.size(); }
  // Blocks read by Lookup so far, all tables together.
  static uint64_t BlockReads();

 private:
  friend class SymbolBlocksWriter;
  struct Entry {
    uint64_t start;
    uint32_t size;
    uint32_t name_offset;
  };
  struct BlockHeader {
    uint32_t count;
    uint32_t name_bytes;
  };
  struct Fence {
    uint64_t start;   // the block's first symbol
    uint64_t offset;  // the block in the file
  };
  struct Block {
    size_t index = SIZE_MAX;
    uint64_t used = 0;
    std::vector<Entry> entries;
    std::string names;
  };
  // The block, read if needed; nullptr when the file cannot be read. mu_ held.
  const Block* Get(size_t index) const;

  SpillFile file_;
  size_t count_ = 0;
  std::vector<Fence> fences_;
  mutable std::mutex mu_;
  mutable std::array<Block, kCachedBlocks> cache_;
  mutable Block uncached_;
  mutable uint64_t clock_ = 0;
};

class SymbolBlocksWriter {
 public:
  // In `dir` (empty: SpillDirectory()).
  static StatusOr<SymbolBlocksWriter> Create(const std::string& dir = "");

  // Symbols in increasing address order, one per address.
  Status Append(uint64_t start, uint64_t size, std::string_view name);
  StatusOr<std::unique_ptr<SymbolBlocks>> Finish();

 private:
  Status Flush();

  std::unique_ptr<SymbolBlocks> table_;
  std::vector<SymbolBlocks::Entry> block_;
  std::string names_;
};

}  // namespace warpscope
