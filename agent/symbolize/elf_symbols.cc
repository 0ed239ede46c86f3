#include "agent/symbolize/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "agent/elf/elf_file.h"
#include "base/file_util.h"

namespace warpscope {
namespace {

struct DebugLink {
  std::string name;
  uint32_t crc = 0;
};

std::optional<DebugLink> ReadDebugLink(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr || std::strcmp(name, ".gnu_debuglink") != 0) continue;
    // Raw bytes: "<file name>\0", padding to 4, then a CRC32 in the file's byte order.
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (data == nullptr || data->d_size < 8) return std::nullopt;
    const char* buf = static_cast<const char*>(data->d_buf);
    const size_t len = strnlen(buf, data->d_size);
    const size_t crc_off = (len + 4) & ~size_t{3};
    if (len == 0 || crc_off + 4 > data->d_size) return std::nullopt;
    DebugLink link{std::string(buf, len), 0};
    unsigned char b[4];
    std::memcpy(b, buf + crc_off, 4);
    const bool big_endian = elf_getident(elf, nullptr)[EI_DATA] == ELFDATA2MSB;
    link.crc = big_endian ? (uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3])
                          : (uint32_t{b[3]} << 24 | uint32_t{b[2]} << 16 | uint32_t{b[1]} << 8 | b[0]);
    return link;
  }
  return std::nullopt;
}

std::optional<uint32_t> FileCrc32(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "" : path.substr(0, slash);
}

// One symbol table entry considered for the final table; `name` points into
// libelf's view of the file, so the handles outlive the candidates.
struct Candidate {
  uint64_t start;
  uint64_t size;
  uint64_t section_end;  // 0 when unknown
  std::string_view name;
  uint8_t rank;  // lower wins among aliases: 0 func exported, 1 func local, 2 notype
  bool weak;
};

// Among aliases at one address: functions before untyped labels, exported
// before local, fewer leading underscores ("getpid" over "__getpid"), global
// before weak, then the shorter and lexically first name for stable output.
bool BetterAlias(const Candidate& a, const Candidate& b) {
  if (a.rank != b.rank) return a.rank < b.rank;
  const size_t ua = a.name.find_first_not_of('_');
  const size_t ub = b.name.find_first_not_of('_');
  if (ua != ub) return ua < ub;
  if (a.weak != b.weak) return !a.weak;
  if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
  return a.name < b.name;
}

// Appends the function symbols of .symtab and .dynsym. Returns whether a
// non-empty .symtab was present.
bool CollectSymbols(Elf* elf, std::vector<Candidate>* out) {
  struct Section {
    uint64_t addr, size;
    bool exec;
  };
  std::vector<Section> sections;
  sections.push_back({0, 0, false});  // SHN_UNDEF
  std::vector<Elf_Scn*> symbol_tables;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) return false;
    sections.push_back({shdr.sh_addr, shdr.sh_size, (shdr.sh_flags & SHF_EXECINSTR) != 0});
    if ((shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM) && shdr.sh_entsize != 0) {
      symbol_tables.push_back(scn);
    }
  }
  bool has_symtab = false;
  for (Elf_Scn* scn : symbol_tables) {
    GElf_Shdr shdr;
    gelf_getshdr(scn, &shdr);
    Elf_Data* data = elf_getdata(scn, nullptr);
    Elf_Scn* str_scn = elf_getscn(elf, shdr.sh_link);
    Elf_Data* strings = str_scn == nullptr ? nullptr : elf_getdata(str_scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr || strings == nullptr || strings->d_buf == nullptr) continue;
    const char* str = static_cast<const char*>(strings->d_buf);
    const size_t count = shdr.sh_size / shdr.sh_entsize;
    if (shdr.sh_type == SHT_SYMTAB && count > 1) has_symtab = true;
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      const int type = GELF_ST_TYPE(sym.st_info);
      const int bind = GELF_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= sections.size() ||
          sym.st_value == 0 || sym.st_name >= strings->d_size) {
        continue;
      }
      const Section& section = sections[sym.st_shndx];
      uint8_t rank;
      if (type == STT_FUNC || type == STT_GNU_IFUNC) {
        rank = bind == STB_LOCAL ? 1 : 0;
      } else if (type == STT_NOTYPE && sym.st_size > 0 && section.exec) {
        rank = 2;
      } else {
        continue;
      }
      const std::string_view name(str + sym.st_name, strnlen(str + sym.st_name, strings->d_size - sym.st_name));
      if (name.empty()) continue;
      const bool in_section = sym.st_value >= section.addr && sym.st_value < section.addr + section.size;
      out->push_back(Candidate{sym.st_value, sym.st_size, in_section ? section.addr + section.size : 0, name, rank,
                               bind == STB_WEAK});
    }
  }
  return has_symtab;
}

}  // namespace

// Turns collected candidates and headers into the compact, immutable table.
class ElfSymbolsBuilder {
 public:
  static std::unique_ptr<ElfSymbols> Build(Elf* elf, std::vector<Candidate> candidates, std::string build_id,
                                           std::string debug_file) {
    std::unique_ptr<ElfSymbols> out(new ElfSymbols());
    out->build_id_ = std::move(build_id);
    out->debug_file_ = std::move(debug_file);
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) == 0) {
      for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD) continue;
        out->segments_.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, (phdr.p_flags & PF_X) != 0});
      }
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.start != b.start ? a.start < b.start : BetterAlias(a, b);
    });
    // One entry per address; aliases lend it their size and section.
    size_t kept = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (kept > 0 && candidates[kept - 1].start == candidates[i].start) {
        Candidate& best = candidates[kept - 1];
        best.size = std::max(best.size, candidates[i].size);
        best.section_end = std::max(best.section_end, candidates[i].section_end);
        continue;
      }
      candidates[kept++] = candidates[i];
    }
    candidates.resize(kept);
    size_t name_bytes = 0;
    for (const Candidate& c : candidates) name_bytes += c.name.size() + 1;
    out->names_.reserve(name_bytes);
    out->symbols_.reserve(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      uint64_t size = c.size;
      if (size == 0) {
        // Up to the next symbol, but not past the end of its own section.
        uint64_t end = i + 1 < candidates.size() ? candidates[i + 1].start : std::numeric_limits<uint64_t>::max();
        if (c.section_end > c.start) end = std::min(end, c.section_end);
        size = end == std::numeric_limits<uint64_t>::max() ? 1 : end - c.start;
      }
      const uint32_t size32 = static_cast<uint32_t>(std::min<uint64_t>(size, std::numeric_limits<uint32_t>::max()));
      out->symbols_.push_back({c.start, size32, static_cast<uint32_t>(out->names_.size())});
      out->names_.append(c.name);
      out->names_.push_back('\0');
    }
    return out;
  }
};

StatusOr<std::string> ElfSymbols::ReadBuildId(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::Open(path));
  return file->BuildId();
}

namespace {

// Debug file candidates, container root first, in the order gdb documents.
std::vector<std::string> DebugFileCandidates(const std::string& build_id, const std::optional<DebugLink>& link,
                                             const std::string& dir, const ElfLoadOptions& options) {
  std::vector<std::string> roots;
  if (!options.root_prefix.empty()) roots.push_back(options.root_prefix);
  roots.push_back("");
  std::vector<std::string> paths;
  for (const std::string& root : roots) {
    if (build_id.size() > 2) {
      paths.push_back(root + options.debug_dir + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) +
                      ".debug");
    }
    if (link) {
      paths.push_back(root + dir + "/.debug/" + link->name);
      paths.push_back(root + options.debug_dir + dir + "/" + link->name);
    }
  }
  return paths;
}

}  // namespace

StatusOr<std::unique_ptr<ElfSymbols>> ElfSymbols::Load(const std::string& path, const ElfLoadOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::Open(path));
  return Load(*file, options);
}

StatusOr<std::unique_ptr<ElfSymbols>> ElfSymbols::Load(ElfFile& file, const ElfLoadOptions& options) {
  std::string build_id = file.BuildId();
  std::vector<Candidate> candidates;
  const bool has_symtab = CollectSymbols(file.elf(), &candidates);
  // Declared here: the debug file's names are referenced by `candidates` until Build().
  std::shared_ptr<ElfFile> debug_elf;
  std::string debug_path;
  if (!has_symtab && options.search_debug_files) {
    const std::optional<DebugLink> link = ReadDebugLink(file.elf());
    const std::string dir = DirName(options.logical_path.empty() ? file.path() : options.logical_path);
    for (const std::string& candidate : DebugFileCandidates(build_id, link, dir, options)) {
      if (!FileExists(candidate)) continue;
      StatusOr<std::shared_ptr<ElfFile>> debug = ElfFile::Open(candidate);
      if (!debug.ok()) continue;
      // A stale debug file would name the wrong functions: insist on a match.
      const std::string& debug_id = (*debug)->BuildId();
      if (!build_id.empty() ? debug_id != build_id : (!link || FileCrc32(candidate) != link->crc)) continue;
      debug_elf = std::move(*debug);
      debug_path = candidate;
      break;
    }
    if (debug_elf) CollectSymbols(debug_elf->elf(), &candidates);
  }
  return ElfSymbolsBuilder::Build(file.elf(), std::move(candidates), std::move(build_id), std::move(debug_path));
}

StatusOr<std::unique_ptr<ElfSymbols>> ElfSymbols::LoadFromMemory(std::string image) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::FromMemory(std::move(image)));
  std::vector<Candidate> candidates;
  CollectSymbols(file->elf(), &candidates);
  std::string build_id = file->BuildId();
  return ElfSymbolsBuilder::Build(file->elf(), std::move(candidates), std::move(build_id), "");
}

std::optional<ElfSymbol> ElfSymbols::Lookup(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  // A few steps back cover a sized function that encloses a smaller symbol
  // (local labels, nested asm entry points).
  for (int steps = 0; it != symbols_.begin() && steps < 4; ++steps) {
    --it;
    if (vaddr - it->start < it->size) {
      return ElfSymbol{std::string_view(names_.data() + it->name_offset), it->start, it->size};
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfSymbols::FileOffsetToVaddr(uint64_t file_offset) const {
  // Mappings start on page boundaries while segments need not: also accept
  // the page-rounded start of an executable segment.
  for (int pass = 0; pass < 3; ++pass) {
    for (const Segment& s : segments_) {
      if (pass < 2 && !s.executable) continue;
      const uint64_t lo = pass == 1 ? s.offset & ~uint64_t{0xfff} : s.offset;
      if (file_offset >= lo && file_offset < s.offset + s.filesz) return file_offset - s.offset + s.vaddr;
    }
  }
  return std::nullopt;
}

size_t ElfSymbols::MemoryBytes() const {
  return sizeof(*this) + symbols_.capacity() * sizeof(Symbol) + names_.capacity() +
         segments_.capacity() * sizeof(Segment) + build_id_.capacity() + debug_file_.capacity();
}

}  // namespace warpscope
