#include "agent/symbolize/symbol_blocks.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

namespace warpscope {
namespace {

std::atomic<uint64_t> g_block_reads{0};

}  // namespace

uint64_t SymbolBlocks::BlockReads() { return g_block_reads.load(std::memory_order_relaxed); }

const SymbolBlocks::Block* SymbolBlocks::Get(size_t index) const {
  Block* victim = &cache_[0];
  for (Block& b : cache_) {
    if (b.index == index) {
      b.used = ++clock_;
      return &b;
    }
    if (b.used < victim->used) victim = &b;
  }
  const uint64_t begin = fences_[index].offset;
  const uint64_t end = index + 1 < fences_.size() ? fences_[index + 1].offset : file_.size();
  std::string raw(end - begin, '\0');
  if (raw.size() < sizeof(BlockHeader) || !file_.ReadAt(begin, raw.data(), raw.size()).ok()) return nullptr;
  g_block_reads.fetch_add(1, std::memory_order_relaxed);
  if (raw.size() > kCachedBlockBytes) victim = &uncached_;
  BlockHeader h;
  std::memcpy(&h, raw.data(), sizeof(h));
  const size_t entries_bytes = size_t{h.count} * sizeof(Entry);
  if (sizeof(h) + entries_bytes + h.name_bytes != raw.size()) return nullptr;
  victim->entries.resize(h.count);
  std::memcpy(victim->entries.data(), raw.data() + sizeof(h), entries_bytes);
  victim->names.assign(raw, sizeof(h) + entries_bytes, h.name_bytes);
  victim->index = victim == &uncached_ ? SIZE_MAX : index;
  victim->used = ++clock_;
  return victim;
}

std::optional<BlockSymbol> SymbolBlocks::Lookup(uint64_t addr, int steps_back) const {
  auto fence = std::upper_bound(fences_.begin(), fences_.end(), addr,
                                [](uint64_t a, const Fence& f) { return a < f.start; });
  if (fence == fences_.begin()) return std::nullopt;
  size_t index = static_cast<size_t>(fence - fences_.begin()) - 1;
  std::lock_guard<std::mutex> lock(mu_);
  const Block* block = Get(index);
  if (block == nullptr) return std::nullopt;
  size_t at = static_cast<size_t>(std::upper_bound(block->entries.begin(), block->entries.end(), addr,
                                                   [](uint64_t a, const Entry& e) { return a < e.start; }) -
                                  block->entries.begin());
  for (int steps = 0; steps < steps_back; ++steps) {
    if (at == 0) {  // on into the block before
      if (index == 0) break;
      block = Get(--index);
      if (block == nullptr) break;
      at = block->entries.size();
    }
    const Entry& e = block->entries[--at];
    if (addr - e.start < e.size) {
      if (e.name_offset >= block->names.size()) return std::nullopt;
      return BlockSymbol{std::string(block->names.c_str() + e.name_offset), e.start, e.size,
                         index * kBlockSymbols + at};
    }
  }
  return std::nullopt;
}

size_t SymbolBlocks::MemoryBytes() const {
  return sizeof(*this) + fences_.capacity() * sizeof(Fence) + kCachedBlocks * kCachedBlockBytes;
}

StatusOr<SymbolBlocksWriter> SymbolBlocksWriter::Create(const std::string& dir) {
  ASSIGN_OR_RETURN(SpillFile file, SpillFile::Create(dir));
  SymbolBlocksWriter w;
  w.table_ = std::unique_ptr<SymbolBlocks>(new SymbolBlocks());
  w.table_->file_ = std::move(file);
  return w;
}

Status SymbolBlocksWriter::Append(uint64_t start, uint64_t size, std::string_view name) {
  if (names_.size() + name.size() + 1 > std::numeric_limits<uint32_t>::max()) RETURN_IF_ERROR(Flush());
  block_.push_back({start, static_cast<uint32_t>(std::min<uint64_t>(size, std::numeric_limits<uint32_t>::max())),
                    static_cast<uint32_t>(names_.size())});
  names_.append(name);
  names_.push_back('\0');
  return block_.size() == SymbolBlocks::kBlockSymbols ? Flush() : Status::Ok();
}

Status SymbolBlocksWriter::Flush() {
  if (block_.empty()) return Status::Ok();
  const SymbolBlocks::BlockHeader h{static_cast<uint32_t>(block_.size()), static_cast<uint32_t>(names_.size())};
  std::string raw(reinterpret_cast<const char*>(&h), sizeof(h));
  raw.append(reinterpret_cast<const char*>(block_.data()), block_.size() * sizeof(SymbolBlocks::Entry));
  raw.append(names_);
  table_->fences_.push_back({block_.front().start, table_->file_.size()});
  RETURN_IF_ERROR(table_->file_.Append(raw.data(), raw.size()));
  table_->count_ += block_.size();
  block_.clear();
  names_.clear();
  return Status::Ok();
}

StatusOr<std::unique_ptr<SymbolBlocks>> SymbolBlocksWriter::Finish() {
  RETURN_IF_ERROR(Flush());
  table_->fences_.shrink_to_fit();
  return std::move(table_);
}

}  // namespace warpscope
