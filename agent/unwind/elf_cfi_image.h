// ElfCfiImage: the call-frame sections (.eh_frame, then .debug_frame) of one
// x86-64 ELF file or in-memory image, read through libelf on an mmap of the
// file (an ElfFile), plus the address ranges that hold code (executable PT_LOAD segments,
// or SHF_EXECINSTR sections when there are no program headers).
//
// The CfiSection views point into the mapping (or into a decompressed copy
// libelf owns) and stay valid as long as the image. Movable, single-threaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/unwind/cfi_parser.h"
#include "base/status.h"

typedef struct Elf Elf;  // libelf's opaque handle; <libelf.h> stays out of this header

namespace warpscope {

class ElfFile;

struct CodeRange {
  uint64_t begin;  // ELF virtual addresses, [begin, end)
  uint64_t end;
};

// A PT_LOAD segment: how file offsets map to ELF virtual addresses, which the
// agent needs to place a table under a process's mapping (its load bias).
struct LoadSegment {
  uint64_t file_offset;
  uint64_t vaddr;
  uint64_t file_size;
};

class ElfCfiImage {
 public:
  // InvalidArgument for non-ELF input and for ELF files other than
  // little-endian 64-bit x86-64 executables and shared objects.
  static StatusOr<ElfCfiImage> Open(const std::string& path);
  static StatusOr<ElfCfiImage> FromMemory(std::string image);
  // A file already open (its other readers share the open); the image keeps it open.
  static StatusOr<ElfCfiImage> FromFile(std::shared_ptr<ElfFile> file);

  ElfCfiImage(ElfCfiImage&& other) noexcept = default;
  ElfCfiImage& operator=(ElfCfiImage&&) = delete;

  const std::vector<CfiSection>& sections() const { return sections_; }
  const std::vector<CodeRange>& code_ranges() const { return code_ranges_; }  // sorted by begin
  const std::vector<LoadSegment>& load_segments() const { return load_segments_; }  // all PT_LOAD, file order
  // CFI sections present but unreadable (compressed with an unknown scheme, bad offsets).
  uint64_t unreadable_sections() const { return unreadable_sections_; }

 private:
  ElfCfiImage() = default;
  Status Begin(const std::string& what);
  void CollectSections();
  void CollectCodeRanges();

  std::shared_ptr<ElfFile> file_;
  const CfiArch* arch_ = &kCfiX86_64;  // by the ELF header's machine
  Elf* elf_ = nullptr;  // file_'s
  std::vector<CfiSection> sections_;
  std::vector<CodeRange> code_ranges_;
  std::vector<LoadSegment> load_segments_;
  uint64_t unreadable_sections_ = 0;
};

}  // namespace warpscope
