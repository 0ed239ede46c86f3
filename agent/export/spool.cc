#include "agent/export/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/byte_order.h"
#include "base/crc32.h"
#include "base/logging.h"

namespace warpscope {
namespace {

constexpr char kMagic[8] = {'W', 'S', 'S', 'P', 'O', 'O', 'L', '\0'};
constexpr std::string_view kPrefix = "batch-";
constexpr std::string_view kSuffix = ".wsb";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr std::string_view kLockName = "LOCK";
constexpr size_t kSeqDigits = 20;

// Parses "batch-<20 digits>.wsb"; nullopt for any other name.
std::optional<uint64_t> ParseFileName(std::string_view name) {
  if (name.size() != kPrefix.size() + kSeqDigits + kSuffix.size()) return std::nullopt;
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const std::string_view digits = name.substr(kPrefix.size(), kSeqDigits);
  uint64_t seq = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return seq;
}

Status WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write " + path);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Reads exactly n bytes; false with *short_read set on EOF before n bytes.
Status ReadExact(int fd, char* out, size_t n, const std::string& path, bool* short_read) {
  *short_read = false;
  while (n > 0) {
    ssize_t r = ::read(fd, out, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read " + path);
    }
    if (r == 0) {
      *short_read = true;
      return Status::Ok();
    }
    out += r;
    n -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

// Outcome of reading one spool file back.
struct FileCheck {
  enum Kind { kValid, kCorrupt, kGone } kind = kCorrupt;
  std::string reason;  // for the log line when not valid
  uint64_t file_size = 0;
};

// Validates the file for `sequence`; with `payload` set, also returns the
// batch. I/O errors other than "gone" come back as a Status so the caller can
// decide whether they mean corruption (Open) or a transient failure (Peek).
StatusOr<FileCheck> ReadAndValidate(const std::string& path, uint64_t sequence, std::string* payload) {
  FileCheck check;
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) return FileCheck{FileCheck::kGone, "file vanished", 0};
    if (errno == ELOOP) return FileCheck{FileCheck::kCorrupt, "is a symlink", 0};
    return ErrnoError(errno, "open " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, "fstat " + path);
  if (!S_ISREG(st.st_mode)) return FileCheck{FileCheck::kCorrupt, "not a regular file", 0};
  check.file_size = static_cast<uint64_t>(st.st_size);
  if (check.file_size < kSpoolHeaderSize) {
    check.reason = "truncated header (" + std::to_string(check.file_size) + " bytes)";
    return check;
  }
  char header[kSpoolHeaderSize];
  bool short_read = false;
  RETURN_IF_ERROR(ReadExact(fd.get(), header, sizeof(header), path, &short_read));
  if (short_read) {
    check.reason = "truncated header";
    return check;
  }
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    check.reason = "bad magic";
    return check;
  }
  const uint64_t version = LoadLE16(header + 8);
  const uint64_t header_size = LoadLE16(header + 10);
  if (version != kSpoolFormatVersion || header_size != kSpoolHeaderSize) {
    check.reason = "unsupported version " + std::to_string(version) + " / header size " + std::to_string(header_size);
    return check;
  }
  const uint32_t want_crc = LoadLE32(header + 12);
  const uint64_t file_seq = LoadLE64(header + 16);
  const uint64_t length = LoadLE64(header + 24);
  if (file_seq != sequence) {
    check.reason = "sequence " + std::to_string(file_seq) + " does not match the file name";
    return check;
  }
  if (length != check.file_size - kSpoolHeaderSize) {
    check.reason = "length " + std::to_string(length) + " but file has " +
                   std::to_string(check.file_size - kSpoolHeaderSize) + " payload bytes";
    return check;
  }
  uint32_t crc = Crc32(0, header + 16, kSpoolHeaderSize - 16);
  // Validation without a payload out-param streams the file, so Open does not
  // hold a whole (possibly large) batch in memory per file.
  std::string local;
  std::string* buf = payload != nullptr ? payload : &local;
  const size_t chunk = payload != nullptr ? static_cast<size_t>(length) : std::min<size_t>(length, 1 << 20);
  buf->resize(chunk);
  uint64_t left = length;
  while (left > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk));
    RETURN_IF_ERROR(ReadExact(fd.get(), buf->data(), n, path, &short_read));
    if (short_read) {
      check.reason = "truncated payload";
      return check;
    }
    crc = Crc32(crc, buf->data(), n);
    left -= n;
  }
  if (crc != want_crc) {
    check.reason = "CRC mismatch";
    return check;
  }
  check.kind = FileCheck::kValid;
  return check;
}

}  // namespace

std::string Spool::FileNameFor(uint64_t sequence) {
  char digits[kSeqDigits + 1];
  std::snprintf(digits, sizeof(digits), "%020llu", static_cast<unsigned long long>(sequence));
  return std::string(kPrefix) + digits + std::string(kSuffix);
}

std::string Spool::EncodeFile(uint64_t sequence, std::string_view batch) {
  std::string out(kSpoolHeaderSize, '\0');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  StoreLE16(out.data() + 8, kSpoolFormatVersion);
  StoreLE16(out.data() + 10, static_cast<uint16_t>(kSpoolHeaderSize));
  StoreLE64(out.data() + 16, sequence);
  StoreLE64(out.data() + 24, batch.size());
  uint32_t crc = Crc32(0, out.data() + 16, kSpoolHeaderSize - 16);
  crc = Crc32(crc, batch.data(), batch.size());
  StoreLE32(out.data() + 12, crc);
  out.append(batch);
  return out;
}

Spool::Spool(std::string dir, uint64_t max_bytes, ScopedFd dir_fd, ScopedFd lock_fd)
    : dir_(std::move(dir)), max_bytes_(max_bytes), dir_fd_(std::move(dir_fd)), lock_fd_(std::move(lock_fd)) {}

StatusOr<std::unique_ptr<Spool>> Spool::Open(const std::string& dir, uint64_t max_bytes) {
  if (dir.empty()) return InvalidArgumentError("spool directory is empty");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError(errno, "create spool dir " + dir);
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return ErrnoError(errno, "open spool dir " + dir);
  const std::string lock_path = dir + "/" + std::string(kLockName);
  ScopedFd lock_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock_fd.valid()) return ErrnoError(errno, "create " + lock_path);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return FailedPreconditionError("spool dir " + dir + " is in use by another spool");
    return ErrnoError(errno, "flock " + lock_path);
  }
  std::unique_ptr<Spool> spool(new Spool(dir, max_bytes, std::move(dir_fd), std::move(lock_fd)));
  RETURN_IF_ERROR(spool->Scan());
  spool->EnforceBound(std::nullopt);
  return spool;
}

Status Spool::Scan() {
  DIR* d = ::fdopendir(::dup(dir_fd_.get()));
  if (d == nullptr) return ErrnoError(errno, "list spool dir " + dir_);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name == kLockName) continue;
    names.push_back(std::move(name));
  }
  const int read_errno = errno;
  ::closedir(d);
  if (read_errno != 0) return ErrnoError(read_errno, "list spool dir " + dir_);

  bool removed_any = false;
  for (const std::string& name : names) {
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // raced away; nothing to do
    if (S_ISDIR(st.st_mode)) {
      // Never recurse-delete: a directory here was put by a person, not by us.
      LOG_WARNING() << "spool: ignoring directory " << path;
      continue;
    }
    if (std::string_view(name).ends_with(kTempSuffix)) {
      // A Push interrupted by a crash: the batch was never acknowledged.
      ::unlink(path.c_str());
      removed_any = true;
      continue;
    }
    std::optional<uint64_t> seq = ParseFileName(name);
    std::string reason = "malformed batch file name";
    if (!seq.has_value() && !(std::string_view(name).starts_with("batch-") && std::string_view(name).ends_with(".wsb"))) {
      // Not a name we write: someone else's file (a shared directory, a note
      // left by a person). Never delete what is not ours.
      LOG_WARNING() << "spool: ignoring " << path << " (not a spool file)";
      continue;
    }
    if (seq.has_value()) {
      StatusOr<FileCheck> check = ReadAndValidate(path, *seq, nullptr);
      if (check.ok() && check->kind == FileCheck::kValid) {
        files_[*seq] = check->file_size;
        total_bytes_ += check->file_size;
        continue;
      }
      if (check.ok() && check->kind == FileCheck::kGone) continue;
      // At startup an unreadable file is as good as corrupt: keeping it would
      // only fail the uploader later, and the agent must come up regardless.
      reason = check.ok() ? check->reason : check.status().ToString();
    }
    LOG_WARNING() << "spool: deleting " << path << ": " << reason;
    ::unlink(path.c_str());
    removed_any = true;
    ++stats_.corrupt_dropped;
  }
  if (removed_any) (void)SyncDir();
  return Status::Ok();
}

std::string Spool::PathFor(uint64_t sequence) const { return dir_ + "/" + FileNameFor(sequence); }

std::optional<uint64_t> Spool::newest_sequence() const {
  if (files_.empty()) return std::nullopt;
  return files_.rbegin()->first;
}

Status Spool::SyncDir() {
  if (::fsync(dir_fd_.get()) != 0) return ErrnoError(errno, "fsync spool dir " + dir_);
  return Status::Ok();
}

void Spool::RemoveFile(uint64_t sequence) {
  auto it = files_.find(sequence);
  if (it == files_.end()) return;
  // ENOENT is fine (someone cleaned up for us); other unlink failures leave a
  // file we no longer track: it is counted again by the next Open's scan.
  if (::unlink(PathFor(sequence).c_str()) != 0 && errno != ENOENT) {
    LOG_WARNING() << "spool: unlink " << PathFor(sequence) << ": " << std::strerror(errno);
  }
  total_bytes_ -= it->second;
  files_.erase(it);
}

void Spool::EnforceBound(std::optional<uint64_t> keep) {
  bool removed_any = false;
  while (total_bytes_ > max_bytes_ && !files_.empty()) {
    auto oldest = files_.begin();
    if (keep.has_value() && oldest->first == *keep) break;
    ++stats_.dropped_batches;
    stats_.dropped_bytes += oldest->second;
    RemoveFile(oldest->first);
    removed_any = true;
  }
  // Best effort: an eviction that reappears after a power loss is evicted again.
  if (removed_any) (void)SyncDir();
}

namespace {

// Push's disk errors all mean "not stored now, maybe later": one code, so a
// full disk (ENOSPC, EFBIG: ResourceExhausted from errno) is never taken for
// a batch too large for the spool.
Status DiskError(const Status& s) { return UnavailableError("spool write failed: " + s.message()); }

}  // namespace

Status Spool::Push(uint64_t sequence, std::string_view batch) {
  if (std::optional<uint64_t> newest = newest_sequence(); newest.has_value() && sequence <= *newest) {
    return InvalidArgumentError("spool sequence " + std::to_string(sequence) + " is not after the newest spooled " +
                                std::to_string(*newest));
  }
  const uint64_t file_size = kSpoolHeaderSize + batch.size();
  if (file_size > max_bytes_) {
    ++stats_.dropped_batches;
    stats_.dropped_bytes += file_size;
    return ResourceExhaustedError("batch " + std::to_string(sequence) + " of " + std::to_string(file_size) +
                                  " bytes exceeds the spool bound of " + std::to_string(max_bytes_) + " bytes");
  }
  const std::string path = PathFor(sequence);
  const std::string tmp = path + std::string(kTempSuffix);
  {
    ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return DiskError(ErrnoError(errno, "create " + tmp));
    const std::string image = EncodeFile(sequence, batch);
    Status s = WriteAll(fd.get(), image.data(), image.size(), tmp);
    if (s.ok() && ::fsync(fd.get()) != 0) s = ErrnoError(errno, "fsync " + tmp);
    // close(2) can report deferred write errors on network filesystems.
    if (s.ok() && ::close(fd.Release()) != 0) s = ErrnoError(errno, "close " + tmp);
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return DiskError(s);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoError(errno, "rename " + tmp);
    ::unlink(tmp.c_str());
    return DiskError(s);
  }
  // Without the directory fsync the rename may not survive a power loss; a
  // Push that returns OK promises the batch is durable, so undo it instead.
  if (Status s = SyncDir(); !s.ok()) {
    ::unlink(path.c_str());
    return DiskError(s);
  }
  files_[sequence] = file_size;
  total_bytes_ += file_size;
  ++stats_.pushed;
  EnforceBound(sequence);
  return Status::Ok();
}

StatusOr<std::optional<SpooledBatch>> Spool::Peek() {
  while (!files_.empty()) {
    const uint64_t seq = files_.begin()->first;
    SpooledBatch batch;
    batch.sequence = seq;
    ASSIGN_OR_RETURN(FileCheck check, ReadAndValidate(PathFor(seq), seq, &batch.data));
    if (check.kind == FileCheck::kValid) return std::optional<SpooledBatch>(std::move(batch));
    LOG_WARNING() << "spool: dropping " << PathFor(seq) << ": " << check.reason;
    ++stats_.corrupt_dropped;
    RemoveFile(seq);
  }
  return std::optional<SpooledBatch>();
}

Status Spool::Pop(uint64_t sequence) {
  if (files_.empty()) return InvalidArgumentError("spool is empty; cannot pop " + std::to_string(sequence));
  if (files_.begin()->first != sequence) {
    return InvalidArgumentError("pop of " + std::to_string(sequence) + " but the oldest spooled batch is " +
                                std::to_string(files_.begin()->first));
  }
  RemoveFile(sequence);
  ++stats_.popped;
  // A pop lost to a power cut only means the batch is uploaded again after
  // the restart (at-least-once delivery), so a failed directory fsync is not
  // worth failing the pop for.
  (void)SyncDir();
  return Status::Ok();
}

}  // namespace warpscope
