// BinaryFiles: opens the file behind a process's executable mapping for each
// reader that needs it (the symbolizer, the unwind-table builder, CPython
// detection), once per description of a process: while a Scope is open, a
// file one reader opened is handed to the next, and the scope's end closes
// them all. Each reader keeps what it learnt by FileIdentity, so a binary
// that is already known costs no open at all.
//
// Paths, in order: /proc/PID/map_files/<range> (reaches deleted files and
// other mount namespaces), /proc/PID/root/<path> and <path>. A deleted file's
// path may now name another file, so only map_files is used for it.
//
// Single-thread owned (the agent loop), like the readers it serves.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agent/elf/elf_file.h"
#include "agent/process/proc_fs.h"
#include "agent/process/proc_maps.h"
#include "base/status.h"

namespace warpscope {

struct BinaryFilesStats {
  uint64_t opened = 0;  // files opened for a reader (the cache misses)
  uint64_t shared = 0;  // opens saved: a file already open in the scope handed to another reader
  uint64_t known = 0;   // file mappings of described processes that no reader had to open (the hits)
  uint64_t vdso_reads = 0;  // whole [vdso] images read (once per distinct image, unless the set overflowed)
};

class BinaryFiles {
 public:
  explicit BinaryFiles(ProcFs procfs) : procfs_(std::move(procfs)) {}

  // Files opened while a scope is alive stay open until it ends. Scopes nest;
  // the outermost one closes.
  class Scope {
   public:
    explicit Scope(BinaryFiles* files) : files_(files) { ++files_->depth_; }
    ~Scope() {
      if (--files_->depth_ == 0) {
        files_->open_.clear();
        files_->opened_in_scope_.clear();
      }
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    BinaryFiles* files_;
  };

  // The mapping's file, opened (or handed over from the current scope).
  StatusOr<std::shared_ptr<ElfFile>> Open(uint32_t pid, const MemoryMapping& m) { return Open(pid, m, true); }
  // Opened for one reader alone (one that hands it to another thread): never
  // shared through the scope.
  StatusOr<std::shared_ptr<ElfFile>> OpenUnshared(uint32_t pid, const MemoryMapping& m) { return Open(pid, m, false); }

  // The [vdso] image that process `pid` maps at `m`; null when it cannot be
  // read (the process is gone). Every process of one ABI on a running kernel
  // maps the same image, and the ELF headers of the images of different ABIs
  // differ (class, machine): an image whose header (64 bytes) and size match
  // one read before is handed back after reading the header alone.
  std::shared_ptr<const std::string> VdsoImage(uint32_t pid, const MemoryMapping& m);

  // Called in a scope after every reader has seen a described process's
  // mappings: its files that none of them had to open count as known.
  void CountKnown(const std::vector<MemoryMapping>& mappings);

  const BinaryFilesStats& stats() const { return stats_; }
  const ProcFs& procfs() const { return procfs_; }

 private:
  StatusOr<std::shared_ptr<ElfFile>> Open(uint32_t pid, const MemoryMapping& m, bool share);

  ProcFs procfs_;
  int depth_ = 0;
  std::unordered_map<FileIdentity, std::shared_ptr<ElfFile>, FileIdentityHash> open_;  // in the current scope
  std::unordered_set<FileIdentity, FileIdentityHash> opened_in_scope_;  // shared or not
  // By ELF header and size; one or two per host (bounded all the same).
  std::unordered_map<std::string, std::shared_ptr<const std::string>> vdso_by_header_;
  BinaryFilesStats stats_;
};

}  // namespace warpscope
