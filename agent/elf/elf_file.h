// ElfFile: one ELF file opened once (its fd and a libelf handle on the
// agent's mmap of it), so that everything the agent reads from a binary (build id, symbols,
// call-frame information, CPython detection) is read in one pass instead of
// opening and mapping the file once per reader. Unmapping a file costs the
// agent a TLB shootdown on every CPU its threads ran on, so opens are counted
// (ElfFilesOpened) and kept to one per binary.
//
// Not thread-safe: libelf loads section data lazily into the handle. One
// thread uses a file at a time; different files may be used on different
// threads.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "base/status.h"

typedef struct Elf Elf;  // libelf's opaque handle; <libelf.h> stays out of this header

namespace warpscope {

class ElfFile {
 public:
  // InvalidArgument for files that are not ELF; errno errors for unreadable ones.
  static StatusOr<std::shared_ptr<ElfFile>> Open(const std::string& path);
  // An image already in memory (the [vdso] read out of a process).
  static StatusOr<std::shared_ptr<ElfFile>> FromMemory(std::string image);

  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile();

  Elf* elf() const { return elf_; }
  int fd() const { return fd_.get(); }  // -1 for an in-memory image
  const std::string& path() const { return path_; }  // "in-memory image" for FromMemory
  // fstat of the open file (zeros for an in-memory image).
  const struct stat& file_stat() const { return stat_; }
  // The GNU build id in lowercase hex, "" when the file has none; read from
  // the PT_NOTE segments first (they survive `strip` of section headers),
  // then SHT_NOTE sections. Read once.
  const std::string& BuildId();
  // Gives back the pages of the file's mapping that readers have touched so
  // far (madvise MADV_DONTNEED: they stay in the page cache, and a later read
  // faults them in again). A reader walking a large section calls it every
  // few MB, so that the agent's resident memory does not grow with the size
  // of the binaries it reads. Views into the mapping stay valid. A no-op for
  // an in-memory image. Returns the bytes of the mapping it covered.
  uint64_t ReleasePages();
  // Reads `size` bytes at `p`, a pointer into the file's mapping, with pread
  // instead of through the mapping (where the reads jump about the file, the
  // mapping would fault in 64 KiB around each); false when `p` is not in the
  // mapping or the read fails.
  bool ReadMapped(const char* p, size_t size, char* out) const;

 private:
  ElfFile() = default;
  Status Begin(Elf* elf);

  std::string path_;
  std::unique_ptr<std::string> image_;  // FromMemory: pinned, libelf points into it
  char* map_ = nullptr;                 // Open: the file's mapping, libelf points into it
  size_t map_size_ = 0;
  bool native_byte_order_ = false;
  ScopedFd fd_;
  Elf* elf_ = nullptr;
  struct stat stat_ {};
  bool build_id_read_ = false;
  std::string build_id_;
};

// ELF files opened from disk by this process so far (ElfFile::Open calls that
// reached open(2)), across all threads.
uint64_t ElfFilesOpened();

}  // namespace warpscope
