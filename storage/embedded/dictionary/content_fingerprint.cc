#include "storage/embedded/dictionary/content_fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace warpscope::dictionary {
namespace {

constexpr size_t kInitialSlots = 1024;

}  // namespace

Fingerprint FingerprintOf(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return Fingerprint{h.low64, h.high64};
}

FingerprintIds::FingerprintIds(size_t max_entries) : max_entries_(max_entries), slots_(kInitialSlots) {}

uint64_t FingerprintIds::Find(const Fingerprint& f) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = f.low & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id == 0) return 0;
    if (slot.fingerprint == f) return slot.id;
  }
}

void FingerprintIds::Insert(const Fingerprint& f, uint64_t id) {
  if (size_ >= max_entries_) Clear();
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = f.low & mask;
  while (slots_[i].id != 0) {
    if (slots_[i].fingerprint == f) {
      slots_[i].id = id;
      return;
    }
    i = (i + 1) & mask;
  }
  slots_[i] = Slot{f, id};
  ++size_;
}

void FingerprintIds::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  size_ = 0;
  for (const Slot& s : old) {
    if (s.id != 0) Insert(s.fingerprint, s.id);
  }
}

void FingerprintIds::Clear() {
  slots_.assign(kInitialSlots, Slot{});
  size_ = 0;
}

}  // namespace warpscope::dictionary
