#include "agent/unwind/python/python_binary.h"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <regex>

#include "agent/elf/elf_file.h"

namespace warpscope {

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
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::Open(path));
  return ReadPythonBinary(*file, name_hint);
}

StatusOr<PythonBinary> ReadPythonBinary(ElfFile& file, const std::string& name_hint) {
  Elf* elf = file.elf();
  const std::string& path = file.path();
  PythonBinary bin;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        bin.segments.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
      }
    }
  }

  uint64_t py_version_vaddr = 0;
  bool have_runtime = false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || sh.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    const size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      if (i % 8192 == 8191) file.ReleasePages();  // a large symtab does not stay resident
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
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
  file.ReleasePages();
  if (!have_runtime) return NotFoundError(path + " has no CPython runtime");
  if (bin.eval.size == 0) return NotFoundError(path + " has _PyRuntime but no _PyEval_EvalFrameDefault");

  if (py_version_vaddr != 0) {
    // const unsigned long Py_Version = PY_VERSION_HEX, in .rodata: read it from the file.
    for (const PythonBinary::Segment& s : bin.segments) {
      if (py_version_vaddr >= s.vaddr && py_version_vaddr + 4 <= s.vaddr + s.file_size) {
        uint32_t hex = 0;
        if (pread(file.fd(), &hex, sizeof(hex), static_cast<off_t>(s.file_offset + (py_version_vaddr - s.vaddr))) ==
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
