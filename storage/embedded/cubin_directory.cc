#include "storage/embedded/cubin_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::embedded {
namespace {

// A use is written to the file's mtime at most this often per cubin: every
// batch of a busy GPU names its cubins, and retention counts in hours.
constexpr int64_t kTouchEveryNs = int64_t{60} * 1'000'000'000;

timespec TimespecOf(int64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

Status SetMtime(const std::string& path, int64_t ns) {
  const timespec times[2] = {TimespecOf(ns), TimespecOf(ns)};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) return ErrnoError(errno, "setting the mtime of " + path);
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<CubinDirectory>> CubinDirectory::Open(std::string dir, storage::CubinLimits limits,
                                                               std::function<int64_t()> now_ns) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError(errno, "creating " + dir);
  std::unique_ptr<CubinDirectory> d(new CubinDirectory(std::move(dir), limits, std::move(now_ns)));
  RETURN_IF_ERROR(d->Load());
  return d;
}

CubinDirectory::CubinDirectory(std::string dir, storage::CubinLimits limits, std::function<int64_t()> now_ns)
    : dir_(std::move(dir)), limits_(limits), now_ns_(std::move(now_ns)) {}

Status CubinDirectory::Load() {
  DIR* listing = ::opendir(dir_.c_str());
  if (listing == nullptr) return ErrnoError(errno, "listing " + dir_);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(listing)) names.emplace_back(e->d_name);
  ::closedir(listing);
  size_t leftovers = 0;
  for (const std::string& name : names) {
    const std::string path = dir_ + "/" + name;
    if (name.find(".tmp.") != std::string::npos) {
      // A write a crash cut short: never acknowledged.
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "deleting " + path);
      ++leftovers;
      continue;
    }
    if (!IsCubinHash(name)) continue;  // not ours ("." and "..", or put there by hand)
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + path);
    if (!S_ISREG(st.st_mode)) continue;
    index_[name] = Entry{static_cast<uint64_t>(st.st_size), MtimeNs(st)};
    bytes_ += static_cast<uint64_t>(st.st_size);
    charged_bytes_ += storage::CubinChargedBytes(static_cast<uint64_t>(st.st_size));
  }
  if (leftovers > 0) LOG_INFO() << dir_ << ": deleted " << leftovers << " cubin files a crash left half written";
  return Status::Ok();
}

StatusOr<storage::CubinPutResult> CubinDirectory::Put(const std::string& hash, const std::string& bytes) {
  ASSIGN_OR_RETURN(std::optional<storage::CubinPutOutcome> refused, storage::CheckCubinPut(hash, bytes, limits_));
  if (refused) return storage::CubinPutResult{*refused, bytes.size()};
  std::lock_guard<std::mutex> write(write_mu_);
  const int64_t now = now_ns_();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(hash); it != index_.end()) {
      // Past retention but not removed yet counts too: the repeat revives it.
      TouchLocked(hash, it->second, now);
      return storage::CubinPutResult{storage::CubinPutOutcome::kAlreadyStored, it->second.bytes};
    }
    // Writers are serialized by write_mu_: the totals cannot grow meanwhile.
    if (charged_bytes_ + storage::CubinChargedBytes(bytes.size()) > limits_.max_store_bytes ||
        index_.size() >= limits_.max_cubins) {
      return storage::CubinPutResult{storage::CubinPutOutcome::kStoreFull, bytes.size()};
    }
  }
  const std::string path = PathOf(hash);
  RETURN_IF_ERROR(WriteFileAtomically(path, bytes).WithContext("storing cubin " + hash));
  RETURN_IF_ERROR(SetMtime(path, now));
  RETURN_IF_ERROR(FsyncDir(dir_).WithContext("storing cubin " + hash));
  std::lock_guard<std::mutex> lock(mu_);
  index_[hash] = Entry{bytes.size(), now};
  bytes_ += bytes.size();
  charged_bytes_ += storage::CubinChargedBytes(bytes.size());
  return storage::CubinPutResult{storage::CubinPutOutcome::kStored, bytes.size()};
}

std::optional<CubinDirectory::Entry> CubinDirectory::Visible(const std::string& hash, int64_t cutoff_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(hash);
  if (it == index_.end() || it->second.last_use_ns < cutoff_ns) return std::nullopt;
  return it->second;
}

StatusOr<std::optional<storage::CubinInfo>> CubinDirectory::Find(const std::string& hash, int64_t cutoff_ns) const {
  RETURN_IF_ERROR(storage::CheckCubinHash(hash));
  const std::optional<Entry> entry = Visible(hash, cutoff_ns);
  if (!entry) return std::optional<storage::CubinInfo>();
  return std::optional<storage::CubinInfo>(storage::CubinInfo{entry->bytes});
}

StatusOr<std::optional<std::string>> CubinDirectory::Read(const std::string& hash, int64_t cutoff_ns) const {
  RETURN_IF_ERROR(storage::CheckCubinHash(hash));
  if (!Visible(hash, cutoff_ns)) return std::optional<std::string>();
  StatusOr<std::string> bytes = ReadFileToString(PathOf(hash));
  // Removed by retention since the look at the index.
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
  RETURN_IF_ERROR(bytes.status());
  return std::optional<std::string>(std::move(bytes).value());
}

void CubinDirectory::TouchLocked(const std::string& hash, Entry& entry, int64_t now_ns) {
  if (now_ns - entry.last_use_ns < kTouchEveryNs) return;
  entry.last_use_ns = now_ns;
  // A failure only makes the cubin look older after a restart.
  if (Status s = SetMtime(PathOf(hash), now_ns); !s.ok()) LOG_WARNING_EVERY_N_SEC(60) << s.ToString();
}

void CubinDirectory::NoteUses(const std::vector<std::string>& hashes) {
  const int64_t now = now_ns_();
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& hash : hashes) {
    if (auto it = index_.find(hash); it != index_.end()) TouchLocked(hash, it->second, now);
  }
}

StatusOr<uint64_t> CubinDirectory::RemoveUnusedBefore(int64_t cutoff_ns) {
  std::lock_guard<std::mutex> write(write_mu_);
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [hash, entry] : index_) {
      if (entry.last_use_ns < cutoff_ns) expired.push_back(hash);
    }
  }
  uint64_t removed = 0;
  for (const std::string& hash : expired) {
    {
      // Out of the index first (a batch may have used it since the look
      // above): a Read that found it before gets "not held" from the file.
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(hash);
      if (it == index_.end() || it->second.last_use_ns >= cutoff_ns) continue;
      bytes_ -= it->second.bytes;
      charged_bytes_ -= storage::CubinChargedBytes(it->second.bytes);
      index_.erase(it);
    }
    const std::string path = PathOf(hash);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "deleting " + path);
    ++removed;
  }
  if (removed > 0) RETURN_IF_ERROR(FsyncDir(dir_));
  return removed;
}

CubinDirectoryState CubinDirectory::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return CubinDirectoryState{index_.size(), bytes_, charged_bytes_};
}

}  // namespace warpscope::embedded
