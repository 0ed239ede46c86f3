// Cubins on the server (docs/design/gpu_pc.md, "Cubins on the server"): the
// CUDA binaries that the gpu_pc profile's instruction frames point at, kept
// by every ProfileStore beside the profiles, each under its content hash
// (model/cubin_hash.h). What the backends share: the limits, what a PUT can
// come to, the checks every PUT passes before a backend looks at what it
// holds, and the counters of StoreStats.
//
// A cubin's last use is its last PUT (new or a repeat) or the last batch
// whose instruction frames name it (ProfileStore::NoteCubinUses). One unused
// for longer than the store's retention is removed by the pass that drops
// old data, and answers ignore it from then on, as they ignore rows older
// than retention. A full store refuses a new cubin (kStoreFull) instead of
// evicting one that stored profiles may still point at: the agent keeps the
// cubin and tries again later, and retention makes room.
//
// Threading: plain values and functions; CubinCounters from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "model/cubin_hash.h"

namespace warpscope::storage {

struct CubinLimits {
  // One cubin; the injection library sends none larger either.
  uint64_t max_cubin_bytes = uint64_t{32} << 20;
  // Every cubin held together, as CubinChargedBytes counts them.
  uint64_t max_store_bytes = uint64_t{1} << 30;
  // Cubins held at once, whatever their size: each is a file (an inode and a
  // directory entry) in the embedded store and an index entry in memory.
  uint64_t max_cubins = 100'000;
};

// What a cubin costs against max_store_bytes: never less than a filesystem
// block (an 8-byte cubin still takes a 4 KiB block), plus what every entry
// costs beside its bytes (inode, directory entry, index entry, use rows).
// Without the floor, 8-byte cubins would fill 512 times the disk they are
// counted for.
inline constexpr uint64_t kCubinMinChargeBytes = 4096;
inline constexpr uint64_t kCubinEntryChargeBytes = 512;
inline uint64_t CubinChargedBytes(uint64_t size) {
  return (size > kCubinMinChargeBytes ? size : kCubinMinChargeBytes) + kCubinEntryChargeBytes;
}

// A cubin is an ELF file (64-bit): anything shorter than its header, or not
// starting with the ELF magic, is refused before it costs a file.
inline constexpr size_t kCubinMinBytes = 64;

enum class CubinPutOutcome {
  kStored,         // new, and durable
  kAlreadyStored,  // held already: nothing written, and it counts as used now
  kTooLarge,       // over max_cubin_bytes: nothing stored
  kStoreFull,      // it would take the store past max_store_bytes or max_cubins: nothing stored
};

struct CubinPutResult {
  CubinPutOutcome outcome = CubinPutOutcome::kStored;
  uint64_t bytes = 0;  // the cubin's
};

struct CubinInfo {
  uint64_t bytes = 0;
};

// InvalidArgument naming the hash when it is not 32 lowercase hex digits.
inline Status CheckCubinHash(const std::string& hash) {
  if (IsCubinHash(hash)) return Status::Ok();
  return InvalidArgumentError("cubin hash \"" + hash.substr(0, 64) +
                              "\" is malformed: expected the XXH3-128 of the cubin as 32 lowercase hex digits");
}

// The checks of every PutCubin, cheapest first: the hash's form, the size,
// the ELF header's size and magic, then the bytes against the hash
// (InvalidArgument naming both hashes). kTooLarge, or nullopt when the cubin
// may be stored.
inline StatusOr<std::optional<CubinPutOutcome>> CheckCubinPut(const std::string& hash, const std::string& bytes,
                                                              const CubinLimits& limits) {
  RETURN_IF_ERROR(CheckCubinHash(hash));
  if (bytes.size() > limits.max_cubin_bytes) return std::optional<CubinPutOutcome>(CubinPutOutcome::kTooLarge);
  if (bytes.empty()) return InvalidArgumentError("cubin " + hash + ": the body is empty");
  if (bytes.size() < kCubinMinBytes) {
    return InvalidArgumentError("cubin " + hash + ": " + std::to_string(bytes.size()) +
                                " bytes is shorter than an ELF header (" + std::to_string(kCubinMinBytes) +
                                "): not a cubin");
  }
  if (bytes.compare(0, 4, "\x7f" "ELF") != 0) {
    return InvalidArgumentError("cubin " + hash + ": the body does not start with the ELF magic (7f 45 4c 46): "
                                "not a cubin");
  }
  if (const std::string actual = CubinHash(bytes); actual != hash) {
    return InvalidArgumentError("cubin " + hash + ": the body's XXH3-128 is " + actual +
                                "; the hash in the path must be the hash of the bytes sent");
  }
  return std::optional<CubinPutOutcome>();
}

// What a store counted of its cubins since start (StoreStats::cubins).
struct CubinStats {
  uint64_t stored = 0;          // new cubins stored
  uint64_t already_stored = 0;  // PUTs of a cubin held already
  uint64_t too_large = 0;       // refused: over max_cubin_bytes
  uint64_t refused_full = 0;    // refused: the store was full (bytes or count)
  uint64_t refused_invalid = 0;  // refused: a malformed hash, bytes not of the hash, or not an ELF file
  uint64_t expired = 0;         // removed by retention
};

class CubinCounters {
 public:
  CubinPutResult Count(CubinPutResult result) {
    switch (result.outcome) {
      case CubinPutOutcome::kStored: ++stored_; break;
      case CubinPutOutcome::kAlreadyStored: ++already_stored_; break;
      case CubinPutOutcome::kTooLarge: ++too_large_; break;
      case CubinPutOutcome::kStoreFull: ++refused_full_; break;
    }
    return result;
  }
  // A put CheckCubinPut (or the backend) refused as invalid: counted, and
  // `status` handed back.
  Status Invalid(Status status) {
    if (status.code() == StatusCode::kInvalidArgument) ++refused_invalid_;
    return status;
  }
  void Expired(uint64_t n) { expired_ += n; }
  CubinStats Stats() const {
    return CubinStats{.stored = stored_.load(),
                      .already_stored = already_stored_.load(),
                      .too_large = too_large_.load(),
                      .refused_full = refused_full_.load(),
                      .refused_invalid = refused_invalid_.load(),
                      .expired = expired_.load()};
  }

 private:
  std::atomic<uint64_t> stored_{0}, already_stored_{0}, too_large_{0}, refused_full_{0}, refused_invalid_{0},
      expired_{0};
};

}  // namespace warpscope::storage
