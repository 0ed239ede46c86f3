// Content fingerprints: 128-bit XXH3 hashes of dictionary content built
// bottom-up from a batch's own strings (a function's from its strings' ones, a
// location's from its mapping's and functions', a stack's from its
// locations'), so a stack can be recognized as already stored without looking
// up any of its strings, functions or locations.
//
// Why: an agent's batch carries every string, function and location its
// stacks use (idempotent, self-contained uploads), and resolving all of them
// to ids was most of the server's ingest CPU, though in steady state nearly
// every stack of a window is already known. With fingerprints, a batch costs
// one hash per string and one lookup per stack; only stacks that miss take
// the exact content-key path (content_key.h) and their fingerprints are then
// remembered.
//
// A fingerprint stands for content only in this in-memory cache (never on
// disk). Two different contents sharing one is a 2^-128 event per pair (about
// 10^-23 for 10^8 stacks); agents are authenticated, so crafted collisions
// are out of scope.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope::dictionary {

struct Fingerprint {
  uint64_t low = 0, high = 0;
  bool operator==(const Fingerprint&) const = default;
};

Fingerprint FingerprintOf(std::string_view bytes);

// Builds a fingerprint from parts; `kind` keeps a function's and a
// location's fingerprints of equal parts apart.
class FingerprintBuilder {
 public:
  explicit FingerprintBuilder(char kind) { bytes_.push_back(kind); }
  void Reset(char kind) {
    bytes_.clear();
    bytes_.push_back(kind);
  }
  void Add(const Fingerprint& f) {
    AddU64(f.low);
    AddU64(f.high);
  }
  void AddU64(uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  Fingerprint Finish() const { return FingerprintOf(bytes_); }

 private:
  std::string bytes_;
};

// Fingerprint -> id, open addressing. A cache: Clear() forgets everything,
// and at `max_entries` it clears itself, so its memory is bounded
// (48 bytes per entry at most). Belongs to the DictionaryWriter's thread.
class FingerprintIds {
 public:
  explicit FingerprintIds(size_t max_entries);
  uint64_t Find(const Fingerprint& f) const;  // 0 when absent
  void Insert(const Fingerprint& f, uint64_t id);
  void Clear();
  size_t size() const { return size_; }

 private:
  struct Slot {
    Fingerprint fingerprint;
    uint64_t id = 0;  // 0: empty
  };
  void Grow();

  size_t max_entries_;
  size_t size_ = 0;
  std::vector<Slot> slots_;  // power of two, at most half full
};

}  // namespace warpscope::dictionary
