#include "agent/elf/elf_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace warpscope {
namespace {

std::atomic<uint64_t> g_files_opened{0};

// Must precede the first elf_begin(); a function-local static makes it once
// per process and thread-safe.
Status InitLibelf() {
  static const bool version_ok = elf_version(EV_CURRENT) != EV_NONE;
  return version_ok ? Status::Ok() : InternalError("libelf version mismatch");
}

std::string Hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 0xf]);
  }
  return out;
}

std::string BuildIdFromNotes(Elf_Data* data) {
  if (data == nullptr || data->d_buf == nullptr) return "";
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_off = 0;
  size_t desc_off = 0;
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    const char* base = static_cast<const char*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 && std::memcmp(base + name_off, "GNU", 4) == 0 &&
        nhdr.n_descsz > 0) {
      return Hex(reinterpret_cast<const unsigned char*>(base + desc_off), nhdr.n_descsz);
    }
  }
  return "";
}

std::string ReadBuildIdFrom(Elf* elf) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE) continue;
      Elf_Data* data =
          elf_getdata_rawchunk(elf, phdr.p_offset, phdr.p_filesz, phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
      std::string id = BuildIdFromNotes(data);
      if (!id.empty()) return id;
    }
  }
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) continue;
    std::string id = BuildIdFromNotes(elf_getdata(scn, nullptr));
    if (!id.empty()) return id;
  }
  return "";
}

}  // namespace

StatusOr<std::shared_ptr<ElfFile>> ElfFile::Open(const std::string& path) {
  RETURN_IF_ERROR(InitLibelf());
  std::shared_ptr<ElfFile> file(new ElfFile());
  file->path_ = path;
  // A local user names the path (a process's maps): what is there is looked
  // at through O_PATH first, which opens nothing. A FIFO's open would wait
  // for a writer for ever, and a device's open can act (a watchdog starts
  // counting): only a regular file is then opened for reading, through the
  // O_PATH descriptor, so it is the file that was checked.
  ScopedFd at(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!at.valid()) return ErrnoError(errno, "open " + path);
  if (::fstat(at.get(), &file->stat_) != 0) return ErrnoError(errno, "fstat " + path);
  if (!S_ISREG(file->stat_.st_mode)) return InvalidArgumentError(path + " is not a regular file");
  const std::string reopen = "/proc/self/fd/" + std::to_string(at.get());
  file->fd_ = ScopedFd(::open(reopen.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!file->fd_.valid()) return ErrnoError(errno, "open " + path);
  g_files_opened.fetch_add(1, std::memory_order_relaxed);
  // The agent maps the file itself and hands libelf the memory, so that it
  // knows the mapping it may give back (ReleasePages). Private and writable:
  // libelf may write to memory it is handed (a file of the other byte order
  // converted in place); a write lands in a private copy, never in the file,
  // and ReleasePages leaves the pages of such a file alone.
  if (file->stat_.st_size <= 0) return InvalidArgumentError(path + " is empty");
  const size_t size = static_cast<size_t>(file->stat_.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, file->fd_.get(), 0);
  if (map == MAP_FAILED) return ErrnoError(errno, "mmap " + path);
  file->map_ = static_cast<char*>(map);
  file->map_size_ = size;
  RETURN_IF_ERROR(file->Begin(elf_memory(file->map_, size)));
  return file;
}

StatusOr<std::shared_ptr<ElfFile>> ElfFile::FromMemory(std::string image) {
  RETURN_IF_ERROR(InitLibelf());
  std::shared_ptr<ElfFile> file(new ElfFile());
  file->path_ = "in-memory image";
  file->image_ = std::make_unique<std::string>(std::move(image));
  RETURN_IF_ERROR(file->Begin(elf_memory(file->image_->data(), file->image_->size())));
  return file;
}

uint64_t ElfFile::ReleasePages() {
  if (map_ == nullptr || !native_byte_order_) return 0;
  // libelf reads a file of the host's byte order in place and never writes
  // to it (it converts other files into copies of its own): no page differs
  // from the file, so dropping one loses nothing.
  if (madvise(map_, map_size_, MADV_DONTNEED) != 0) return 0;
  return map_size_;
}

bool ElfFile::ReadMapped(const char* p, size_t size, char* out) const {
  if (map_ == nullptr || p < map_ || size > map_size_ || static_cast<size_t>(p - map_) > map_size_ - size) return false;
  return PreadFully(fd_.get(), out, size, static_cast<uint64_t>(p - map_)) == static_cast<ssize_t>(size);
}

ElfFile::~ElfFile() {
  if (elf_ != nullptr) elf_end(elf_);
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

Status ElfFile::Begin(Elf* elf) {
  elf_ = elf;
  if (elf_ == nullptr) return DataLossError("elf_begin " + path_ + ": " + elf_errmsg(-1));
  if (elf_kind(elf_) != ELF_K_ELF) return InvalidArgumentError(path_ + " is not an ELF file");
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf_, &ehdr) == nullptr) return DataLossError("ELF header of " + path_ + ": " + elf_errmsg(-1));
  native_byte_order_ = ehdr.e_ident[EI_DATA] == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB);
  return Status::Ok();
}

const std::string& ElfFile::BuildId() {
  if (!build_id_read_) {
    build_id_ = ReadBuildIdFrom(elf_);
    build_id_read_ = true;
  }
  return build_id_;
}

uint64_t ElfFilesOpened() { return g_files_opened.load(std::memory_order_relaxed); }

}  // namespace warpscope
