#include "storage/clickhouse/written_ids.h"

namespace warpscope::clickhouse {

std::vector<uint32_t> WrittenDictionaryIds::Unwritten(DictionaryTable table, const std::vector<uint64_t>& ids) const {
  const Table& t = tables_[static_cast<size_t>(table)];
  std::vector<uint32_t> out;
  std::lock_guard<std::mutex> lock(t.mu);
  // Each lookup is a likely cache miss in a large table: fetch a few ahead.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + kAhead < ids.size()) t.ids.prefetch(ids[i + kAhead]);
    if (!t.ids.contains(ids[i])) out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

bool WrittenDictionaryIds::Contains(DictionaryTable table, uint64_t id) const {
  const Table& t = tables_[static_cast<size_t>(table)];
  std::lock_guard<std::mutex> lock(t.mu);
  return t.ids.contains(id);
}

void WrittenDictionaryIds::Add(DictionaryTable table, const std::vector<uint64_t>& ids) {
  Table& t = tables_[static_cast<size_t>(table)];
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.ids.size() + ids.size() > max_ids_per_table_) t.ids.clear();
  for (uint64_t id : ids) t.ids.insert(id);
}

void WrittenDictionaryIds::Clear() {
  for (Table& t : tables_) {
    std::lock_guard<std::mutex> lock(t.mu);
    t.ids.clear();
  }
}

bool WrittenDictionaryIds::IdSet::contains(uint64_t id) const {
  if (slots_.empty() || id == 0) return false;
  const size_t mask = slots_.size() - 1;
  for (size_t i = id & mask;; i = (i + 1) & mask) {
    if (slots_[i] == id) return true;
    if (slots_[i] == 0) return false;
  }
}

void WrittenDictionaryIds::IdSet::prefetch(uint64_t id) const {
  if (!slots_.empty()) __builtin_prefetch(&slots_[id & (slots_.size() - 1)]);
}

void WrittenDictionaryIds::IdSet::insert(uint64_t id) {
  if (id == 0) return;
  if ((size_ + 1) * 2 > slots_.size()) {
    std::vector<uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, 0);
    size_ = 0;
    for (uint64_t o : old) {
      if (o != 0) insert(o);
    }
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = id & mask;; i = (i + 1) & mask) {
    if (slots_[i] == id) return;
    if (slots_[i] == 0) {
      slots_[i] = id;
      ++size_;
      return;
    }
  }
}

void WrittenDictionaryIds::IdSet::clear() {
  slots_.clear();
  size_ = 0;
}

}  // namespace warpscope::clickhouse
