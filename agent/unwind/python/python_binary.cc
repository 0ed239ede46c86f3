#include "agent/unwind/python/python_binary.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <regex>

#include "base/file_util.h"

namespace warpscope {
namespace {

struct ElfHandle {
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
  }
};

bool LibelfReady() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;  // once per process, thread-safe
  return ok;
}

}  // namespace

std::optional<uint64_t> PythonBinary::LoadBias(uint64_t map_start, uint64_t map_offset) const {
  for (const Segment& s : segments) {
    if (map_offset >= s.file_offset && map_offset < s.file_offset + std::max<uint64_t>(s.file_size, 1)) {
      return map_start - (s.vaddr + (map_offset - s.file_offset));
    }
  }
  return std::nullopt;
}

std::optional<PythonVersion> PythonVersionFromFileName(const std::string& path) {
  static const std::regex kName(R"((?:^|/)(?:lib)?python(\d+)\.(\d+)[a-z]*(?:\.so[.\d]*|$|-))");
  std::smatch m;
  if (!std::regex_search(path, m, kName)) return std::nullopt;
  PythonVersion v;
  v.major = std::stoi(m[1]);
  v.minor = std::stoi(m[2]);
  v.micro = -1;
  return v;
}

StatusOr<PythonBinary> ReadPythonBinary(const std::string& path, const std::string& name_hint) {
  if (!LibelfReady()) return InternalError("libelf: " + std::string(elf_errmsg(-1)));
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "opening " + path);
  ElfHandle h;
  h.elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  if (h.elf == nullptr || elf_kind(h.elf) != ELF_K_ELF) return InvalidArgumentError(path + " is not an ELF file");

  PythonBinary bin;
  size_t phnum = 0;
  if (elf_getphdrnum(h.elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(h.elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        bin.segments.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
      }
    }
  }

  uint64_t py_version_vaddr = 0;
  bool have_runtime = false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(h.elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || sh.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(h.elf, sh.sh_link, sym.st_name);
      if (!name || name[0] == '\0') continue;
      if (std::strcmp(name, "_PyRuntime") == 0) {
        bin.runtime_vaddr = sym.st_value;
        have_runtime = true;
      } else if (std::strcmp(name, "_PyEval_EvalFrameDefault") == 0) {
        bin.eval = {sym.st_value, sym.st_size};
      } else if (std::strcmp(name, "_PyEval_EvalFrameDefault.cold") == 0) {
        bin.eval_cold = PythonBinary::Range{sym.st_value, sym.st_size};
      } else if (std::strcmp(name, "Py_Version") == 0) {
        py_version_vaddr = sym.st_value;
      }
    }
  }
  if (!have_runtime) return NotFoundError(path + " has no CPython runtime");
  if (bin.eval.size == 0) return NotFoundError(path + " has _PyRuntime but no _PyEval_EvalFrameDefault");

  if (py_version_vaddr != 0) {
    // const unsigned long Py_Version = PY_VERSION_HEX, in .rodata: read it from the file.
    for (const PythonBinary::Segment& s : bin.segments) {
      if (py_version_vaddr >= s.vaddr && py_version_vaddr + 4 <= s.vaddr + s.file_size) {
        uint32_t hex = 0;
        if (pread(fd.get(), &hex, sizeof(hex), static_cast<off_t>(s.file_offset + (py_version_vaddr - s.vaddr))) ==
            sizeof(hex)) {
          PythonVersion v;
          v.major = static_cast<int>((hex >> 24) & 0xff);
          v.minor = static_cast<int>((hex >> 16) & 0xff);
          v.micro = static_cast<int>((hex >> 8) & 0xff);
          if (v.major == 3) bin.version = v;
        }
        break;
      }
    }
  }
  if (!bin.version) bin.version = PythonVersionFromFileName(name_hint);
  return bin;
}

}  // namespace warpscope
