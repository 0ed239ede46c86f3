#include "agent/symbolize/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>

#include "agent/elf/elf_file.h"
#include "base/file_util.h"
#include "base/spill_file.h"

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
// the file's mapping, so the file outlives the candidates (also while they
// wait in a spill run: the view is written out and read back as it is).
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

bool Before(const Candidate& a, const Candidate& b) {
  return a.start != b.start ? a.start < b.start : BetterAlias(a, b);
}

// Symbols read between two ReleasePages of the file being read.
constexpr size_t kReleaseEvery = 8192;

std::atomic<uint64_t> g_spill_tables{0};
std::atomic<uint64_t> g_spill_failures{0};

struct CandidateBefore {
  bool operator()(const Candidate& a, const Candidate& b) const { return Before(a, b); }
};
using CandidateRuns = SortedRuns<Candidate, CandidateBefore>;

CandidateRuns MakeCandidateRuns(const ElfLoadOptions& options) {
  return CandidateRuns(options.spill_above_symbols, options.spill_run_symbols, options.spill_dir);
}

// Appends the function symbols of .symtab and .dynsym. Returns whether a
// non-empty .symtab was present. Gives the file's pages back as it goes.
StatusOr<bool> CollectSymbols(ElfFile& file, CandidateRuns* out) {
  Elf* elf = file.elf();
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
  size_t since_release = 0;
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
      if (++since_release == kReleaseEvery) {
        file.ReleasePages();
        since_release = 0;
      }
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
      RETURN_IF_ERROR(out->Add(Candidate{sym.st_value, sym.st_size, in_section ? section.addr + section.size : 0,
                                         name, rank, bind == STB_WEAK}));
    }
  }
  file.ReleasePages();
  return has_symtab;
}

// Candidates in order in; one symbol per address out: aliases lend the best
// one their size and section, and a size-0 symbol reaches the next symbol (but
// not past the end of its own section).
class SymbolStream {
 public:
  using Emit = std::function<Status(uint64_t start, uint32_t size, std::string_view name)>;
  explicit SymbolStream(Emit emit) : emit_(std::move(emit)) {}

  Status Push(const Candidate& c) {
    if (pending_ && pending_->start == c.start) {
      pending_->size = std::max(pending_->size, c.size);
      pending_->section_end = std::max(pending_->section_end, c.section_end);
      return Status::Ok();
    }
    if (pending_) RETURN_IF_ERROR(EmitPending(c.start));
    pending_ = c;
    return Status::Ok();
  }
  Status Finish() { return pending_ ? EmitPending(std::numeric_limits<uint64_t>::max()) : Status::Ok(); }

 private:
  Status EmitPending(uint64_t next_start) {
    const Candidate& c = *pending_;
    uint64_t size = c.size;
    if (size == 0) {
      uint64_t end = next_start;
      if (c.section_end > c.start) end = std::min(end, c.section_end);
      size = end == std::numeric_limits<uint64_t>::max() ? 1 : end - c.start;
    }
    return emit_(c.start, static_cast<uint32_t>(std::min<uint64_t>(size, std::numeric_limits<uint32_t>::max())),
                 c.name);
  }

  Emit emit_;
  std::optional<Candidate> pending_;
};

}  // namespace

// Turns collected candidates and headers into the compact, immutable table.
class ElfSymbolsBuilder {
 public:
  static StatusOr<std::unique_ptr<ElfSymbols>> Build(ElfFile& file, ElfFile* debug_file, CandidateRuns& candidates,
                                                     const std::string& dir, std::string build_id,
                                                     std::string debug_path) {
    std::unique_ptr<ElfSymbols> out(new ElfSymbols());
    out->build_id_ = std::move(build_id);
    out->debug_file_ = std::move(debug_path);
    Elf* elf = file.elf();
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) == 0) {
      for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD) continue;
        out->segments_.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, (phdr.p_flags & PF_X) != 0});
      }
    }
    RETURN_IF_ERROR(candidates.Finish());
    if (candidates.spill_failed()) g_spill_failures.fetch_add(1);
    if (!candidates.spilled()) {
      std::vector<Candidate>& sorted = candidates.Sorted();
      SymbolStream stream([&](uint64_t start, uint32_t size, std::string_view name) {
        out->symbols_.push_back({start, size, static_cast<uint32_t>(out->names_.size())});
        out->names_.append(name);
        out->names_.push_back('\0');
        return Status::Ok();
      });
      for (const Candidate& c : sorted) RETURN_IF_ERROR(stream.Push(c));
      RETURN_IF_ERROR(stream.Finish());
      out->symbols_.shrink_to_fit();
      out->names_.shrink_to_fit();
      return out;
    }
    // Spilled: the merged runs become a SymbolBlocks file. Names come out in
    // address order, which is not the string table's: read through the
    // mapping, each would fault in 64 KiB of it. They are read with pread
    // from whichever file holds them (the binary or its debug file).
    ASSIGN_OR_RETURN(SymbolBlocksWriter writer, SymbolBlocksWriter::Create(dir));
    std::string name_buffer;
    size_t since_release = 0;
    SymbolStream stream([&](uint64_t start, uint32_t size, std::string_view name) -> Status {
      name_buffer.resize(name.size());
      if (!file.ReadMapped(name.data(), name.size(), name_buffer.data()) &&
          (debug_file == nullptr || !debug_file->ReadMapped(name.data(), name.size(), name_buffer.data()))) {
        name_buffer.assign(name);  // an image in memory
      }
      if (++since_release == kReleaseEvery) {
        file.ReleasePages();  // what the merge's comparisons of aliases touched
        if (debug_file != nullptr) debug_file->ReleasePages();
        since_release = 0;
      }
      return writer.Append(start, size, name_buffer);
    });
    RETURN_IF_ERROR(candidates.Merge([&](const Candidate& c) { return stream.Push(c); }));
    RETURN_IF_ERROR(stream.Finish());
    file.ReleasePages();
    ASSIGN_OR_RETURN(out->spill_, writer.Finish());
    g_spill_tables.fetch_add(1);
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
  CandidateRuns candidates = MakeCandidateRuns(options);
  ASSIGN_OR_RETURN(const bool has_symtab, CollectSymbols(file, &candidates));
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
    if (debug_elf) RETURN_IF_ERROR(CollectSymbols(*debug_elf, &candidates).status());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ElfSymbols> table,
                   ElfSymbolsBuilder::Build(file, debug_elf.get(), candidates, options.spill_dir,
                                            std::move(build_id), std::move(debug_path)));
  if (debug_elf) debug_elf->ReleasePages();
  return table;
}

StatusOr<std::unique_ptr<ElfSymbols>> ElfSymbols::LoadFromMemory(std::string image) {
  ASSIGN_OR_RETURN(std::shared_ptr<ElfFile> file, ElfFile::FromMemory(std::move(image)));
  CandidateRuns candidates = MakeCandidateRuns(ElfLoadOptions{});
  RETURN_IF_ERROR(CollectSymbols(*file, &candidates).status());
  std::string build_id = file->BuildId();
  return ElfSymbolsBuilder::Build(*file, nullptr, candidates, "", std::move(build_id), "");
}

ElfSymbols::~ElfSymbols() = default;

size_t ElfSymbols::size() const { return spill_ ? spill_->size() : symbols_.size(); }

std::optional<ElfSymbol> ElfSymbols::Lookup(uint64_t vaddr) const {
  // A few steps back cover a sized function that encloses a smaller symbol
  // (local labels, nested asm entry points).
  constexpr int kStepsBack = 4;
  if (spill_ == nullptr) {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                               [](uint64_t a, const Symbol& s) { return a < s.start; });
    for (int steps = 0; it != symbols_.begin() && steps < kStepsBack; ++steps) {
      --it;
      if (vaddr - it->start < it->size) return ElfSymbol{std::string(names_.data() + it->name_offset), it->start, it->size};
    }
    return std::nullopt;
  }
  std::optional<BlockSymbol> found = spill_->Lookup(vaddr, kStepsBack);
  if (!found) return std::nullopt;
  return ElfSymbol{std::move(found->name), found->start, found->size};
}

std::optional<uint64_t> ElfSymbols::FileOffsetToVaddr(uint64_t file_offset) const {
  // Mappings start on page boundaries while segments need not: also accept
  // the page-rounded start of an executable segment (the system's page: 64
  // KiB on the arm64 kernels NVIDIA recommends for Grace).
  static const uint64_t kPageMask = ~(static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) - 1);
  for (int pass = 0; pass < 3; ++pass) {
    for (const Segment& s : segments_) {
      if (pass < 2 && !s.executable) continue;
      const uint64_t lo = pass == 1 ? s.offset & kPageMask : s.offset;
      if (file_offset >= lo && file_offset < s.offset + s.filesz) return file_offset - s.offset + s.vaddr;
    }
  }
  return std::nullopt;
}

size_t ElfSymbols::MemoryBytes() const {
  size_t bytes = sizeof(*this) + symbols_.capacity() * sizeof(Symbol) + names_.capacity() +
                 segments_.capacity() * sizeof(Segment) + build_id_.capacity() + debug_file_.capacity();
  // A spilled table's block cache is counted at its bound, so that the
  // figure does not change while the table is in use.
  if (spill_ != nullptr) bytes += spill_->MemoryBytes();
  return bytes;
}

SymbolSpillStats ReadSymbolSpillStats() {
  SymbolSpillStats s;
  s.tables = g_spill_tables.load();
  s.failures = g_spill_failures.load();
  s.block_reads = SymbolBlocks::BlockReads();
  return s;
}

}  // namespace warpscope
