// CubinDirectory: the embedded store's cubins (storage/cubin_store.h), one
// file each, <data_dir>/cubins/<hash>, whose mtime is the cubin's last use.
//
// A new cubin is written to <hash>.tmp.<pid>, fsynced, given its mtime,
// renamed to <hash>, and the directory fsynced, all before Put answers
// kStored: an acknowledged cubin survives kill -9 and power loss. A crash
// before the rename leaves a .tmp file, which Open deletes. Uses update the
// mtime without an fsync (a crash may lose the latest, which the next batch
// naming the cubin repeats).
//
// The index (hash -> size, last use) is read from the directory at Open and
// kept in memory, a hundred bytes or so a cubin; files are read only by Read.
//
// Threading: every method from any thread. Put and RemoveUnusedBefore take
// write_mu_ (cubins arrive once each, so one write at a time costs nothing);
// the index is guarded by mu_, which is held across no file's reads or
// writes (only across the mtime updates of uses).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "storage/cubin_store.h"

namespace warpscope::embedded {

struct CubinDirectoryState {
  uint64_t cubins = 0;  // held now (in the index)
  uint64_t bytes = 0;   // their sizes together
  uint64_t charged_bytes = 0;  // what they count against the limit (storage::CubinChargedBytes)
};

class CubinDirectory {
 public:
  // Creates `dir` if needed, deletes the .tmp files a crash left and indexes
  // the cubins. `now_ns`: the store's clock (Unix nanoseconds).
  static StatusOr<std::unique_ptr<CubinDirectory>> Open(std::string dir, storage::CubinLimits limits,
                                                        std::function<int64_t()> now_ns);

  // storage::ProfileStore::PutCubin.
  StatusOr<storage::CubinPutResult> Put(const std::string& hash, const std::string& bytes);
  // The cubin when held and used at or after `cutoff_ns` (INT64_MIN: any).
  StatusOr<std::optional<storage::CubinInfo>> Find(const std::string& hash, int64_t cutoff_ns) const;
  StatusOr<std::optional<std::string>> Read(const std::string& hash, int64_t cutoff_ns) const;
  // Marks the held ones among `hashes` used now.
  void NoteUses(const std::vector<std::string>& hashes);
  // Deletes every cubin last used before `cutoff_ns`; returns how many went.
  StatusOr<uint64_t> RemoveUnusedBefore(int64_t cutoff_ns);

  CubinDirectoryState state() const;

 private:
  struct Entry {
    uint64_t bytes = 0;
    int64_t last_use_ns = 0;
  };

  CubinDirectory(std::string dir, storage::CubinLimits limits, std::function<int64_t()> now_ns);
  Status Load();
  std::string PathOf(const std::string& hash) const { return dir_ + "/" + hash; }
  // The index entry when held and used at or after `cutoff_ns`.
  std::optional<Entry> Visible(const std::string& hash, int64_t cutoff_ns) const;
  // Sets the file's mtime and the entry's last use to `now_ns`; mu_ held.
  void TouchLocked(const std::string& hash, Entry& entry, int64_t now_ns);

  const std::string dir_;
  const storage::CubinLimits limits_;
  const std::function<int64_t()> now_ns_;
  std::mutex write_mu_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> index_;  // guarded by mu_
  uint64_t bytes_ = 0;                            // guarded by mu_: of index_
  uint64_t charged_bytes_ = 0;                    // guarded by mu_: of index_
};

}  // namespace warpscope::embedded
