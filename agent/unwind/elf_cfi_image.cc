#include "agent/unwind/elf_cfi_image.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "agent/elf/elf_file.h"

namespace warpscope {

StatusOr<ElfCfiImage> ElfCfiImage::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::Open(path));
  return FromFile(std::move(file));
}

StatusOr<ElfCfiImage> ElfCfiImage::FromMemory(std::string bytes) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::FromMemory(std::move(bytes)));
  return FromFile(std::move(file));
}

StatusOr<ElfCfiImage> ElfCfiImage::FromFile(std::shared_ptr<ElfFile> file) {
  ElfCfiImage image;
  image.file_ = std::move(file);
  image.elf_ = image.file_->elf();
  RETURN_IF_ERROR(image.Begin(image.file_->path()));
  return image;
}

Status ElfCfiImage::Begin(const std::string& what) {
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf_, &ehdr) == nullptr) return DataLossError("ELF header of " + what + ": " + elf_errmsg(-1));
  arch_ = CfiArchOf(ehdr.e_machine);
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB || arch_ == nullptr) {
    return InvalidArgumentError(what + " is not a little-endian x86-64 or AArch64 ELF64 file");
  }
  if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) {
    // Relocatable objects hold unrelocated FDE addresses; core files hold no CFI.
    return InvalidArgumentError(what + " is not an executable or shared object");
  }
  CollectSections();
  CollectCodeRanges();
  return Status::Ok();
}

void ElfCfiImage::CollectSections() {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) != 0) return;  // no section headers: no CFI we can find
  uint64_t text_vaddr = 0;
  struct Found {
    Elf_Scn* scn;
    CfiSectionKind kind;
  };
  std::vector<Found> found;
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf_, shstrndx, shdr.sh_name);
    if (name == nullptr) continue;
    if (std::strcmp(name, ".text") == 0) text_vaddr = shdr.sh_addr;
    if (shdr.sh_type == SHT_NOBITS) continue;  // stripped into a separate debug file
    if (std::strcmp(name, ".eh_frame") == 0) {
      found.push_back({scn, CfiSectionKind::kEhFrame});
    } else if (std::strcmp(name, ".debug_frame") == 0) {
      found.push_back({scn, CfiSectionKind::kDebugFrame});
    } else if (std::strcmp(name, ".zdebug_frame") == 0) {
      ++unreadable_sections_;  // legacy GNU compression; gone from current toolchains
    }
  }
  // .eh_frame first: what the process's own unwinder uses wins ties with .debug_frame.
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.kind < b.kind; });
  for (const Found& f : found) {
    GElf_Shdr shdr;
    if (gelf_getshdr(f.scn, &shdr) == nullptr) continue;
    if ((shdr.sh_flags & SHF_COMPRESSED) != 0 && elf_compress(f.scn, 0, 0) < 0) {
      ++unreadable_sections_;
      continue;
    }
    Elf_Data* data = elf_getdata(f.scn, nullptr);
    if (data == nullptr || (data->d_buf == nullptr && data->d_size != 0)) {
      ++unreadable_sections_;
      continue;
    }
    if (data->d_size == 0) continue;
    sections_.push_back(CfiSection{f.kind, std::string_view(static_cast<const char*>(data->d_buf), data->d_size),
                                   shdr.sh_addr, text_vaddr, arch_});
  }
}

void ElfCfiImage::CollectCodeRanges() {
  size_t phnum = 0;
  if (elf_getphdrnum(elf_, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf_, static_cast<int>(i), &phdr) == nullptr) continue;
      if (phdr.p_type == PT_LOAD) load_segments_.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
      if (phdr.p_type != PT_LOAD || (phdr.p_flags & PF_X) == 0 || phdr.p_memsz == 0) continue;
      if (phdr.p_vaddr + phdr.p_memsz < phdr.p_vaddr) continue;
      code_ranges_.push_back({phdr.p_vaddr, phdr.p_vaddr + phdr.p_memsz});
    }
  }
  if (code_ranges_.empty()) {
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) continue;
      const uint64_t exec_alloc = SHF_EXECINSTR | SHF_ALLOC;
      if ((shdr.sh_flags & exec_alloc) != exec_alloc || shdr.sh_size == 0) continue;
      if (shdr.sh_addr + shdr.sh_size < shdr.sh_addr) continue;
      code_ranges_.push_back({shdr.sh_addr, shdr.sh_addr + shdr.sh_size});
    }
  }
  std::sort(code_ranges_.begin(), code_ranges_.end(),
            [](const CodeRange& a, const CodeRange& b) { return a.begin < b.begin; });
}

}  // namespace warpscope
