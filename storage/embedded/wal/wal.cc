#include "storage/embedded/wal/wal.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/logging.h"

namespace warpscope::wal {
namespace {

// EFBIG (RLIMIT_FSIZE, or the file system's own size limit) and EDQUOT mean
// "out of space" as much as ENOSPC does; base's ErrnoError files them as Internal.
Status IoError(int err, const std::string& what) {
  if (err == EFBIG || err == EDQUOT) return ResourceExhaustedError(what + ": " + std::strerror(err));
  return ErrnoError(err, what);
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status FsyncDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return IoError(errno, "open directory " + dir);
  if (::fsync(fd.get()) != 0) return IoError(errno, "fsync directory " + dir);
  return Status::Ok();
}

// mkdir -p. Each directory it creates is made durable in its parent, so the
// log's files cannot vanish with their directory after a crash.
Status MakeDirs(const std::string& dir) {
  size_t pos = 0;
  for (;;) {
    const size_t slash = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && prefix.back() != '/') {
      if (::mkdir(prefix.c_str(), 0755) == 0) {
        RETURN_IF_ERROR(FsyncDir(ParentDir(prefix)));
      } else if (errno != EEXIST) {
        return IoError(errno, "create directory " + prefix);
      }
    }
    if (slash == std::string::npos) return Status::Ok();
    pos = slash;
  }
}

// Writes every byte of iov at offset, resuming after short writes (a short
// write is how the kernel reports hitting a size limit mid-buffer; the next
// call then fails with the reason). Modifies iov.
Status PwritevAll(int fd, std::vector<iovec>& iov, uint64_t offset, const std::string& path) {
  size_t i = 0;
  while (i < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - i, IOV_MAX));
    const ssize_t n = ::pwritev(fd, &iov[i], count, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(errno, "write " + path + " at offset " + std::to_string(offset));
    }
    if (n == 0) return InternalError("write " + path + " wrote nothing at offset " + std::to_string(offset));
    offset += static_cast<uint64_t>(n);
    size_t left = static_cast<size_t>(n);
    while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
    if (left > 0) {
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
      iov[i].iov_len -= left;
    }
  }
  return Status::Ok();
}

}  // namespace

WalWriter::WalWriter(std::string dir, const WalOptions& options, ScopedFd dir_fd, ScopedFd lock_fd)
    : dir_(std::move(dir)), options_(options), dir_fd_(std::move(dir_fd)), lock_fd_(std::move(lock_fd)) {}

WalWriter::~WalWriter() = default;

StatusOr<std::unique_ptr<WalWriter>> WalWriter::Open(const std::string& dir, const WalOptions& options) {
  if (options.max_record_size > kMaxPayloadSize) {
    return InvalidArgumentError("max_record_size " + std::to_string(options.max_record_size) +
                                " exceeds the format's limit of " + std::to_string(kMaxPayloadSize) + " bytes");
  }
  if (options.max_file_size <= kFileHeaderSize) {
    return InvalidArgumentError("max_file_size " + std::to_string(options.max_file_size) + " leaves no room for records");
  }
  RETURN_IF_ERROR(MakeDirs(dir));
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return IoError(errno, "open write-ahead log directory " + dir);
  const std::string lock_path = dir + "/" + std::string(kLockFileName);
  ScopedFd lock_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock_fd.valid()) return IoError(errno, "create " + lock_path);
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return UnavailableError(dir + " is in use by another write-ahead log writer");
    return IoError(errno, "lock " + lock_path);
  }

  std::vector<std::string> leftovers;
  ASSIGN_OR_RETURN(std::vector<WalFile> files, ListWalFiles(dir, &leftovers));
  for (const std::string& tmp : leftovers) {
    // A rotation that crashed before its rename: the file never held records.
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return IoError(errno, "remove " + tmp);
  }

  std::unique_ptr<WalWriter> writer(new WalWriter(dir, options, std::move(dir_fd), std::move(lock_fd)));
  // No other thread can see the writer yet, so Open acts as the leader.
  uint64_t next_seq = 1;
  if (files.empty()) {
    RETURN_IF_ERROR(writer->StartNewFile(next_seq));
  } else {
    const WalFile& newest = files.back();
    ASSIGN_OR_RETURN(std::string data, ReadFileToString(newest.path));
    WalFileScanOptions scan_options;
    scan_options.is_newest = true;
    scan_options.skip_corrupt = true;  // damage mid-file is ReplayWal's to report; the writer only needs the end
    scan_options.name_first_seq = newest.first_seq;
    WalFileScan scan;
    RETURN_IF_ERROR(ScanWalFile(newest.path, data, scan_options, nullptr, &scan)
                        .WithContext("cannot continue the write-ahead log"));
    ScopedFd fd(::open(newest.path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return IoError(errno, "open " + newest.path);
    if (scan.torn_tail_bytes > 0) {
      // The torn record was never acknowledged. Cutting it off (durably) keeps
      // every file but the newest free of torn tails, which lets ReplayWal
      // treat a bad tail in an older file as real damage.
      if (::ftruncate(fd.get(), static_cast<off_t>(scan.valid_end)) != 0) {
        return IoError(errno, "truncate the torn tail of " + newest.path);
      }
      if (::fsync(fd.get()) != 0) return IoError(errno, "fsync " + newest.path);
      LOG_INFO() << "write-ahead log " << newest.path << ": dropped a torn tail of " << scan.torn_tail_bytes
                 << " bytes after seq " << scan.next_seq - 1;
    }
    if (scan.corrupt_regions > 0) {
      LOG_WARNING() << "write-ahead log " << newest.path << " has " << scan.corrupt_regions
                    << " damaged region(s) before its end (" << scan.skipped_bytes << " bytes); appending after them";
    }
    writer->fd_ = std::move(fd);
    writer->file_path_ = newest.path;
    writer->file_size_ = scan.valid_end;
    writer->file_records_ = scan.records;
    writer->files_ = std::move(files);
    next_seq = scan.next_seq;
    // A damaged file is left as it is from here on.
    if ((scan.torn_tail_bytes > 0 || scan.corrupt_regions > 0) && scan.records > 0) {
      RETURN_IF_ERROR(writer->StartNewFile(next_seq));
    }
  }
  writer->open_group_ = std::make_shared<CommitGroup>();
  writer->open_group_->first_seq = next_seq;
  return writer;
}

StatusOr<uint64_t> WalWriter::Append(std::string_view payload) {
  if (payload.size() > options_.max_record_size) {
    return InvalidArgumentError("write-ahead log record of " + std::to_string(payload.size()) +
                                " bytes exceeds max_record_size of " + std::to_string(options_.max_record_size) +
                                " bytes");
  }
  const uint32_t payload_crc = PayloadCrc(payload);

  std::unique_lock<std::mutex> lock(mu_);
  if (!broken_.ok()) return broken_;
  const std::shared_ptr<CommitGroup> group = open_group_;
  const size_t index = group->records.size();
  PendingRecord& rec = group->records.emplace_back();
  rec.payload = payload;
  rec.payload_crc = payload_crc;
  EncodeRecordHeader(group->first_seq + index, static_cast<uint32_t>(payload.size()), payload_crc, rec.header);
  group->bytes += kRecordHeaderSize + payload.size();

  while (!group->done) {
    if (open_group_ != group || leader_active_ || leadership_waiters_ > 0) {
      cv_.wait(lock);
      continue;
    }
    // Lead. Before closing the group to newcomers, give the CPU away once:
    // the members of the group that just finished are waking up and about to
    // append again. Without this they always miss the group (its leader cuts
    // it first) and groups hold about half of the appending threads; with it,
    // nearly all (measured with 8 threads: 4.4 -> 7 records per fdatasync).
    leader_active_ = true;
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
    open_group_ = std::make_shared<CommitGroup>();
    open_group_->first_seq = group->first_seq + group->records.size();
    Status status = broken_;
    Status broken;
    if (status.ok()) {
      lock.unlock();
      status = WriteGroup(*group, &broken);
      lock.lock();
    }
    if (!broken.ok()) broken_ = broken;
    if (status.ok()) {
      ++stats_.syncs;
      stats_.appends += group->records.size();
      stats_.bytes_written += group->bytes;
      stats_.max_group_records = std::max<uint64_t>(stats_.max_group_records, group->records.size());
    } else {
      stats_.failed_appends += group->records.size();
      // The failed records are gone from the file, so their seqs are free:
      // records that queued meanwhile move down to keep seqs consecutive.
      Renumber(open_group_.get(), group->first_seq);
    }
    group->status = std::move(status);
    group->done = true;
    ReleaseLeadership();
  }
  if (!group->status.ok()) return group->status;
  return group->first_seq + index;
}

Status WalWriter::WriteGroup(const CommitGroup& group, Status* broken) {
  if (file_records_ > 0 && file_size_ + group.bytes > options_.max_file_size) {
    RETURN_IF_ERROR(StartNewFile(group.first_seq));  // on failure nothing was written
  }
  std::vector<iovec> iov;
  iov.reserve(group.records.size() * 2);
  for (const PendingRecord& r : group.records) {
    iov.push_back({const_cast<char*>(r.header), kRecordHeaderSize});
    if (!r.payload.empty()) iov.push_back({const_cast<char*>(r.payload.data()), r.payload.size()});
  }
  Status status = PwritevAll(fd_.get(), iov, file_size_, file_path_);
  if (status.ok() && ::fdatasync(fd_.get()) != 0) status = IoError(errno, "fdatasync " + file_path_);
  if (status.ok()) {
    file_size_ += group.bytes;
    file_records_ += group.records.size();
    return status;
  }
  const Status undo = UndoPartialWrite();
  if (!undo.ok()) {
    *broken = FailedPreconditionError("write-ahead log " + dir_ + " is unusable until reopened: after \"" +
                                      status.message() + "\", " + undo.message());
  }
  return status;
}

Status WalWriter::UndoPartialWrite() {
  // fsync, not fdatasync: the shrink is a metadata change and must be durable
  // before the failure is reported, or the failed records could come back.
  int rc;
  do {
    rc = ::ftruncate(fd_.get(), static_cast<off_t>(file_size_));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return IoError(errno, "could not truncate the failed write off " + file_path_);
  if (::fsync(fd_.get()) != 0) return IoError(errno, "could not fsync the truncation of " + file_path_);
  return Status::Ok();
}

Status WalWriter::StartNewFile(uint64_t first_seq) {
  // The header goes into a temporary file that is renamed into place, so a
  // log file always has a whole header; a crash leaves at most a .tmp that
  // Open removes.
  const std::string path = dir_ + "/" + WalFileName(first_seq);
  const std::string tmp = path + ".tmp";
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return IoError(errno, "create " + tmp);
  const std::string header = EncodeFileHeader(first_seq);
  std::vector<iovec> iov = {{const_cast<char*>(header.data()), header.size()}};
  Status status = PwritevAll(fd.get(), iov, 0, tmp);
  if (status.ok() && ::fsync(fd.get()) != 0) status = IoError(errno, "fsync " + tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) status = IoError(errno, "rename " + tmp);
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  if (::fsync(dir_fd_.get()) != 0) {
    // Records acked into a file whose name may not survive a crash would be lost.
    status = IoError(errno, "fsync directory " + dir_);
    ::unlink(path.c_str());
    return status;
  }
  fd_ = std::move(fd);
  file_path_ = path;
  file_size_ = kFileHeaderSize;
  file_records_ = 0;
  std::lock_guard<std::mutex> lock(mu_);
  files_.push_back({first_seq, path});
  ++stats_.files_started;
  return Status::Ok();
}

void WalWriter::AcquireLeadership(std::unique_lock<std::mutex>& lock) {
  ++leadership_waiters_;
  cv_.wait(lock, [this] { return !leader_active_; });
  --leadership_waiters_;
  leader_active_ = true;
}

void WalWriter::ReleaseLeadership() {
  leader_active_ = false;
  cv_.notify_all();
}

void WalWriter::Renumber(CommitGroup* group, uint64_t first_seq) {
  group->first_seq = first_seq;
  for (size_t i = 0; i < group->records.size(); ++i) {
    PendingRecord& r = group->records[i];
    EncodeRecordHeader(first_seq + i, static_cast<uint32_t>(r.payload.size()), r.payload_crc, r.header);
  }
}

Status WalWriter::Rotate() {
  std::unique_lock<std::mutex> lock(mu_);
  AcquireLeadership(lock);
  Status status = broken_;
  // With no group being written, the open group starts right after the file's last record.
  const uint64_t first_seq = open_group_->first_seq;
  lock.unlock();
  if (status.ok() && file_records_ > 0) status = StartNewFile(first_seq);
  lock.lock();
  ReleaseLeadership();
  return status;
}

Status WalWriter::TruncateBefore(uint64_t seq) {
  std::vector<WalFile> victims;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // File i holds seqs below files_[i + 1].first_seq; the last file is never a victim.
    for (size_t i = 0; i + 1 < files_.size() && files_[i + 1].first_seq <= seq; ++i) victims.push_back(files_[i]);
  }
  Status status;
  size_t deleted = 0;
  for (const WalFile& f : victims) {
    if (::unlink(f.path.c_str()) != 0 && errno != ENOENT) {
      status = IoError(errno, "delete " + f.path);
      break;
    }
    ++deleted;
  }
  // A crash before this fsync may bring some victims back; harmless, as all
  // their records are below any from_seq a replay would use after this call.
  if (deleted > 0 && ::fsync(dir_fd_.get()) != 0 && status.ok()) status = IoError(errno, "fsync directory " + dir_);
  std::lock_guard<std::mutex> lock(mu_);
  // Only this (owner) thread removes entries; the leader only appends, so the
  // victims are still the first `deleted` entries.
  files_.erase(files_.begin(), files_.begin() + static_cast<ptrdiff_t>(deleted));
  return status;
}

uint64_t WalWriter::next_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_group_->first_seq + open_group_->records.size();
}

WalWriterStats WalWriter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace warpscope::wal
