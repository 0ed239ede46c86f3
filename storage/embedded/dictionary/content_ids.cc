#include "storage/embedded/dictionary/content_ids.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace warpscope::dictionary {
namespace {

constexpr size_t kInitialSlots = 1024;

}  // namespace

ContentIds::ContentIds() : slots_(kInitialSlots) {}

uint64_t ContentIds::Hash(std::string_view key) {
  // libstdc++'s hash of bytes (64-bit Murmur-style) is mixed in every bit, so
  // the low bits pick the slot and the high half is the tag.
  return std::hash<std::string_view>{}(key);
}

uint64_t ContentIds::Find(std::string_view key) const {
  const uint64_t hash = Hash(key);
  const auto tag = static_cast<uint32_t>(hash >> 32);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.entry_plus_one == 0) return 0;
    if (slot.hash_tag != tag) continue;
    const Entry& e = entries_[slot.entry_plus_one - 1];
    if (e.size == key.size() && std::memcmp(bytes_.data() + e.offset, key.data(), key.size()) == 0) return e.id;
  }
}

void ContentIds::Place(uint32_t entry_index, uint64_t hash) {
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].entry_plus_one != 0) i = (i + 1) & mask;
  slots_[i] = Slot{entry_index + 1, static_cast<uint32_t>(hash >> 32)};
}

void ContentIds::Rehash(size_t slot_count) {
  slots_.assign(slot_count, Slot{});
  for (uint32_t i = 0; i < entries_.size(); ++i) Place(i, entries_[i].hash);
}

void ContentIds::Insert(std::string_view key, uint64_t id) {
  if ((entries_.size() + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
  const uint64_t hash = Hash(key);
  entries_.push_back(Entry{id, bytes_.size(), hash, static_cast<uint32_t>(key.size())});
  bytes_.append(key);
  Place(static_cast<uint32_t>(entries_.size() - 1), hash);
}

uint64_t ContentIds::Add(std::string_view key) {
  const uint64_t id = next_id_++;
  Insert(key, id);
  return id;
}

void ContentIds::Load(std::string_view key, uint64_t id) {
  Insert(key, id);
  next_id_ = std::max(next_id_, id + 1);
  committed_entries_ = entries_.size();
}

void ContentIds::Rollback() {
  if (committed_entries_ == entries_.size()) return;
  // Staged entries are the newest, holding the highest ids (Add hands them out in order).
  next_id_ -= entries_.size() - committed_entries_;
  bytes_.resize(entries_[committed_entries_].offset);
  entries_.resize(committed_entries_);
  Rehash(slots_.size());
}

}  // namespace warpscope::dictionary
