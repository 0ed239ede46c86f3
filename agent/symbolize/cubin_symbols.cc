#include "agent/symbolize/cubin_symbols.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <utility>

#include "agent/elf/elf_file.h"
#include "agent/symbolize/cubin_line_table.h"
#include "agent/symbolize/demangle.h"
#include "base/byte_order.h"

namespace warpscope {
namespace {

constexpr uint16_t kEmCuda = 190;
constexpr unsigned char kStoCudaEntry = 0x10;  // st_other of a kernel
// Cubins of EI_ABIVERSION 7 and older keep the SM number in e_flags' low
// byte; later ones (CUDA 13) in bits 8 to 15.
constexpr unsigned char kCudaAbiV1 = 7;
constexpr size_t kMaxInlineDepth = 64;
constexpr uint32_t kNone = CubinLineTable::kNone;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Section {
  std::string name;
  GElf_Shdr shdr{};
  Elf_Scn* scn = nullptr;
};

}  // namespace

// Reads one cubin into a CubinSymbols: ELF structure and functions first
// (their errors fail the parse), then the line table (its errors only
// disable lines). Lives for one Build call.
class CubinSymbolsBuilder {
 public:
  CubinSymbolsBuilder(std::string_view cubin, const CubinSymbolsOptions& options) : cubin_(cubin), options_(options) {}

  StatusOr<CubinSymbols> Build();

 private:
  Status CheckHeader();
  Status ReadSections();
  Status ReadFunctions();
  Status ReadLines();
  StatusOr<std::string_view> Bytes(const Section& s) const;
  StatusOr<std::vector<CubinLineRelocation>> LineRelocations(size_t debug_line, std::string_view line_bytes) const;
  void AddLineTable(CubinLineTable table);

  std::string_view cubin_;
  const CubinSymbolsOptions& options_;
  std::shared_ptr<ElfFile> file_;
  std::vector<Section> elf_sections_;             // by ELF section index
  std::unordered_map<size_t, uint32_t> code_of_;  // ELF section index -> index in out_.sections_
  CubinSymbols out_;
};

StatusOr<CubinSymbols> CubinSymbolsBuilder::Build() {
  RETURN_IF_ERROR(CheckHeader());
  ASSIGN_OR_RETURN(file_, ElfFile::FromMemory(std::string(cubin_)));
  RETURN_IF_ERROR(ReadSections());
  RETURN_IF_ERROR(ReadFunctions());
  Status lines = ReadLines();
  if (!lines.ok()) out_.lines_reason_ = lines.ToString();
  out_.sass_reason_ = "nvdisasm was not run";
  return std::move(out_);
}

Status CubinSymbolsBuilder::CheckHeader() {
  if (cubin_.empty()) return InvalidArgumentError("empty cubin");
  if (cubin_.size() > options_.max_cubin_bytes) {
    return ResourceExhaustedError("cubin of " + std::to_string(cubin_.size()) + " bytes is over the limit of " +
                                  std::to_string(options_.max_cubin_bytes));
  }
  if (cubin_.size() < sizeof(Elf64_Ehdr) || cubin_.substr(0, 4) != std::string_view(ELFMAG, SELFMAG)) {
    return InvalidArgumentError("not an ELF file");
  }
  if (cubin_[EI_CLASS] != ELFCLASS64 || cubin_[EI_DATA] != ELFDATA2LSB) {
    return InvalidArgumentError("not a 64-bit little-endian ELF file, as cubins are");
  }
  const uint16_t machine = LoadLE16(cubin_.data() + offsetof(Elf64_Ehdr, e_machine));
  if (machine != kEmCuda) {
    return InvalidArgumentError("ELF machine " + std::to_string(machine) + " is not a CUDA cubin (machine 190)");
  }
  const uint32_t flags = LoadLE32(cubin_.data() + offsetof(Elf64_Ehdr, e_flags));
  const auto abi = static_cast<unsigned char>(cubin_[EI_ABIVERSION]);
  out_.sm_ = static_cast<int>(abi <= kCudaAbiV1 ? flags & 0xff : (flags >> 8) & 0xff);
  // Volta and later encode every instruction in 16 bytes; earlier GPUs in
  // 8, with scheduling words between them.
  out_.instruction_size_ = out_.sm_ != 0 && out_.sm_ < 70 ? 8 : 16;
  return Status::Ok();
}

Status CubinSymbolsBuilder::ReadSections() {
  Elf* elf = file_->elf();
  size_t count = 0;
  size_t shstrndx = 0;
  if (elf_getshdrnum(elf, &count) != 0 || elf_getshdrstrndx(elf, &shstrndx) != 0) {
    return DataLossError(std::string("section headers: ") + elf_errmsg(-1));
  }
  elf_sections_.resize(count);
  for (size_t i = 1; i < count; ++i) {
    Section& s = elf_sections_[i];
    s.scn = elf_getscn(elf, i);
    if (s.scn == nullptr || gelf_getshdr(s.scn, &s.shdr) == nullptr) {
      return DataLossError("section header " + std::to_string(i) + ": " + elf_errmsg(-1));
    }
    const char* name = elf_strptr(elf, shstrndx, s.shdr.sh_name);
    s.name = name != nullptr ? name : "";
    if (s.shdr.sh_type == SHT_PROGBITS && (s.shdr.sh_flags & SHF_EXECINSTR) != 0) {
      // Code is never read (nvdisasm reads it), but its size bounds every
      // function and every walk over one.
      if (s.shdr.sh_offset > cubin_.size() || s.shdr.sh_size > cubin_.size() - s.shdr.sh_offset) {
        return DataLossError("code section " + s.name + " lies outside the file");
      }
      code_of_[i] = static_cast<uint32_t>(out_.sections_.size());
      CubinSymbols::CodeSection& code = out_.sections_.emplace_back();
      code.name = s.name;
      code.size = s.shdr.sh_size;
    }
  }
  return Status::Ok();
}

StatusOr<std::string_view> CubinSymbolsBuilder::Bytes(const Section& s) const {
  if (s.shdr.sh_type == SHT_NOBITS || s.shdr.sh_size == 0) return std::string_view();
  Elf_Data* data = elf_rawdata(s.scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size != s.shdr.sh_size) {
    return DataLossError("section " + s.name + " lies outside the file");
  }
  return std::string_view(static_cast<const char*>(data->d_buf), data->d_size);
}

Status CubinSymbolsBuilder::ReadFunctions() {
  const Section* symtab = nullptr;
  for (const Section& s : elf_sections_) {
    if (s.shdr.sh_type == SHT_SYMTAB) {
      symtab = &s;
      break;
    }
  }
  if (symtab == nullptr) return DataLossError("the cubin has no symbol table");
  Elf_Data* data = elf_getdata(symtab->scn, nullptr);
  if (data == nullptr) return DataLossError("symbol table: " + std::string(elf_errmsg(-1)));
  const size_t count = data->d_size / sizeof(Elf64_Sym);
  struct Found {
    GpuFunction function;
    CubinSymbols::Placement placement;
  };
  std::vector<Found> found;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
    auto code = code_of_.find(sym.st_shndx);
    if (code == code_of_.end()) continue;
    const uint64_t section_size = out_.sections_[code->second].size;
    if (sym.st_value >= section_size) continue;
    const char* name = elf_strptr(file_->elf(), symtab->shdr.sh_link, sym.st_name);
    if (name == nullptr || *name == '\0') continue;
    Found f;
    f.function.name = name;
    // A symbol without a size runs to its section's end; none runs past it.
    const uint64_t room = section_size - sym.st_value;
    f.function.size = sym.st_size == 0 ? room : std::min<uint64_t>(sym.st_size, room);
    f.function.entry = (sym.st_other & kStoCudaEntry) != 0;
    f.placement = {code->second, sym.st_value};
    found.push_back(std::move(f));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Found& a, const Found& b) { return a.function.name < b.function.name; });
  for (Found& f : found) {
    if (!out_.functions_.empty() && out_.functions_.back().name == f.function.name) continue;  // first wins
    f.function.demangled = Demangle(f.function.name);
    out_.functions_.push_back(std::move(f.function));
    out_.placements_.push_back(f.placement);
  }
  return Status::Ok();
}

StatusOr<std::vector<CubinLineRelocation>> CubinSymbolsBuilder::LineRelocations(size_t debug_line,
                                                                                std::string_view line_bytes) const {
  std::vector<CubinLineRelocation> relocations;
  for (const Section& rel : elf_sections_) {
    const bool rela = rel.shdr.sh_type == SHT_RELA;
    if ((!rela && rel.shdr.sh_type != SHT_REL) || rel.shdr.sh_info != debug_line) continue;
    if (rel.shdr.sh_link == 0 || rel.shdr.sh_link >= elf_sections_.size() ||
        elf_sections_[rel.shdr.sh_link].shdr.sh_type != SHT_SYMTAB) {
      return DataLossError(rel.name + " links to section " + std::to_string(rel.shdr.sh_link) +
                           ", which is not a symbol table");
    }
    Elf_Data* syms = elf_getdata(elf_sections_[rel.shdr.sh_link].scn, nullptr);
    Elf_Data* data = elf_getdata(rel.scn, nullptr);
    if (syms == nullptr || data == nullptr) return DataLossError(rel.name + ": " + elf_errmsg(-1));
    const size_t symbol_count = syms->d_size / sizeof(Elf64_Sym);
    const size_t count = data->d_size / (rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel));
    for (size_t i = 0; i < count; ++i) {
      GElf_Rela r{};
      if (rela) {
        if (gelf_getrela(data, static_cast<int>(i), &r) == nullptr) break;
      } else {
        GElf_Rel plain;
        if (gelf_getrel(data, static_cast<int>(i), &plain) == nullptr) break;
        r.r_offset = plain.r_offset;
        r.r_info = plain.r_info;
        // SHT_REL keeps the addend in the relocated bytes.
        if (plain.r_offset <= line_bytes.size() && line_bytes.size() - plain.r_offset >= 8) {
          r.r_addend = static_cast<int64_t>(LoadLE64(line_bytes.data() + plain.r_offset));
        }
      }
      const std::string entry = rel.name + " entry " + std::to_string(i);
      if (r.r_offset >= line_bytes.size()) {
        return DataLossError(entry + " relocates offset " + Hex(r.r_offset) + ", past .debug_line");
      }
      const uint64_t sym_index = GELF_R_SYM(r.r_info);
      GElf_Sym sym;
      if (sym_index == 0 || sym_index >= symbol_count ||
          gelf_getsym(syms, static_cast<int>(sym_index), &sym) == nullptr) {
        return DataLossError(entry + " names symbol " + std::to_string(sym_index) + " of " +
                             std::to_string(symbol_count));
      }
      auto code = code_of_.find(sym.st_shndx);
      if (code == code_of_.end()) {
        return DataLossError(entry + " names symbol " + std::to_string(sym_index) + " of section " +
                             std::to_string(sym.st_shndx) + ", which holds no code");
      }
      relocations.push_back({r.r_offset, {static_cast<uint32_t>(sym.st_shndx), sym.st_value + r.r_addend}});
    }
  }
  std::stable_sort(
      relocations.begin(), relocations.end(),
      [](const CubinLineRelocation& a, const CubinLineRelocation& b) { return a.operand_offset < b.operand_offset; });
  return relocations;
}

Status CubinSymbolsBuilder::ReadLines() {
  size_t debug_line = 0;
  CubinLineTableInput input;
  input.max_rows = options_.max_line_rows;
  for (size_t i = 1; i < elf_sections_.size(); ++i) {
    const Section& s = elf_sections_[i];
    if (s.name == ".debug_line" && debug_line == 0) {
      debug_line = i;
      ASSIGN_OR_RETURN(input.debug_line, Bytes(s));
    } else if (s.name == ".debug_str") {
      ASSIGN_OR_RETURN(input.debug_str, Bytes(s));
    } else if (s.name == ".debug_line_str") {
      ASSIGN_OR_RETURN(input.debug_line_str, Bytes(s));
    }
  }
  if (debug_line == 0) {
    return NotFoundError("the cubin has no .debug_line: it was built without -lineinfo (or -G)");
  }
  ASSIGN_OR_RETURN(std::vector<CubinLineRelocation> relocations, LineRelocations(debug_line, input.debug_line));
  input.relocations = relocations;
  if (code_of_.size() == 1) input.unrelocated_section = static_cast<uint32_t>(code_of_.begin()->first);
  StatusOr<CubinLineTable> table = ParseCubinLineTable(input);
  if (!table.ok()) return table.status().WithContext(".debug_line");
  AddLineTable(std::move(*table));
  bool any = false;
  for (const CubinSymbols::CodeSection& s : out_.sections_) any = any || !s.rows.empty();
  if (!any) return NotFoundError(".debug_line describes none of the cubin's code");
  return Status::Ok();
}

void CubinSymbolsBuilder::AddLineTable(CubinLineTable table) {
  out_.files_ = std::move(table.files);
  for (const std::string& name : table.inlined_functions) out_.inlined_functions_.push_back(Demangle(name));
  for (const CubinLineTable::InlineFrame& f : table.frames) {
    out_.frames_.push_back({f.function, f.call_file, f.call_line, f.parent});
  }
  for (const CubinLineTable::Row& row : table.rows) {
    auto code = code_of_.find(row.section);
    if (code == code_of_.end()) continue;
    CubinSymbols::CodeSection& s = out_.sections_[code->second];
    const bool end = row.file == kNone;
    if (row.address > s.size || (!end && row.address == s.size)) continue;
    s.rows.push_back({row.address, row.file, row.line, row.frame});
  }
  for (CubinSymbols::CodeSection& s : out_.sections_) {
    // Among rows at one address the last in program order describes the
    // instruction, and a sequence's end must not hide the next one's start.
    std::stable_sort(s.rows.begin(), s.rows.end(), [](const CubinSymbols::LineRow& a, const CubinSymbols::LineRow& b) {
      if (a.address != b.address) return a.address < b.address;
      return a.file == kNone && b.file != kNone;
    });
    s.rows.shrink_to_fit();
  }
}

StatusOr<CubinSymbols> CubinSymbols::Build(std::string_view cubin, const CubinSymbolsOptions& options) {
  return CubinSymbolsBuilder(cubin, options).Build();
}

StatusOr<CubinSymbols> CubinSymbols::Parse(std::string_view cubin, const CubinSymbolsOptions& options) {
  ASSIGN_OR_RETURN(CubinSymbols symbols, Build(cubin, options));
  using Sass = CubinSymbolsOptions::Sass;
  if (options.sass == Sass::kDisabled) {
    symbols.sass_reason_ = "SASS text is turned off (CubinSymbolsOptions::Sass::kDisabled)";
    return symbols;
  }
  if (options.sass == Sass::kPath && options.nvdisasm_path.empty()) {
    symbols.sass_reason_ = "no nvdisasm path was given";
    return symbols;
  }
  std::string dirs = options.search_dirs;
  if (dirs.empty()) {
    const char* path = std::getenv("PATH");
    dirs = std::string(path != nullptr ? path : "") + ":/usr/local/cuda/bin";
  }
  StatusOr<std::string> nvdisasm = FindNvdisasm(options.sass == Sass::kPath ? options.nvdisasm_path : "", dirs);
  if (!nvdisasm.ok()) {
    symbols.sass_reason_ = nvdisasm.status().message();
    return symbols;
  }
  StatusOr<std::string> listing = RunNvdisasm(*nvdisasm, cubin, options.nvdisasm);
  if (!listing.ok()) {
    symbols.sass_reason_ = listing.status().message();
    return symbols;
  }
  symbols.AttachSass(*listing);
  return symbols;
}

StatusOr<CubinSymbols> CubinSymbols::ParseWithSass(std::string_view cubin, std::string_view nvdisasm_output,
                                                   const CubinSymbolsOptions& options) {
  ASSIGN_OR_RETURN(CubinSymbols symbols, Build(cubin, options));
  symbols.AttachSass(nvdisasm_output);
  return symbols;
}

void CubinSymbols::AttachSass(std::string_view nvdisasm_output) {
  NvdisasmListing listing = ParseNvdisasmOutput(nvdisasm_output);
  std::unordered_map<std::string_view, size_t> by_name;
  for (size_t i = 0; i < sections_.size(); ++i) by_name.try_emplace(sections_[i].name, i);
  size_t attached = 0;
  for (const NvdisasmSection& listed : listing.sections) {
    auto it = by_name.find(listed.name);
    if (it == by_name.end()) continue;
    CodeSection& s = sections_[it->second];
    if (!s.sass.empty()) continue;  // a section listed twice: the first listing stands
    for (const NvdisasmInstruction& ins : listed.instructions) {
      const std::string text = ins.Text();
      if (ins.offset >= s.size || sass_text_.size() + text.size() > UINT32_MAX) continue;
      s.sass.push_back({ins.offset, static_cast<uint32_t>(sass_text_.size()), static_cast<uint32_t>(text.size())});
      sass_text_ += text;
    }
    std::stable_sort(s.sass.begin(), s.sass.end(),
                     [](const SassEntry& a, const SassEntry& b) { return a.offset < b.offset; });
    s.sass.erase(std::unique(s.sass.begin(), s.sass.end(),
                             [](const SassEntry& a, const SassEntry& b) { return a.offset == b.offset; }),
                 s.sass.end());
    attached += s.sass.size();
  }
  sass_text_.shrink_to_fit();
  sass_reason_ = attached > 0 ? "" : "nvdisasm listed no instructions of this cubin's code sections";
}

size_t CubinSymbols::FunctionIndex(std::string_view function) const {
  auto it = std::lower_bound(functions_.begin(), functions_.end(), function,
                             [](const GpuFunction& f, std::string_view name) { return f.name < name; });
  if (it == functions_.end() || it->name != function) return SIZE_MAX;
  return static_cast<size_t>(it - functions_.begin());
}

const GpuFunction* CubinSymbols::FindFunction(std::string_view function) const {
  const size_t i = FunctionIndex(function);
  return i == SIZE_MAX ? nullptr : &functions_[i];
}

size_t CubinSymbols::MemoryBytes() const {
  size_t bytes = sizeof(*this) + functions_.capacity() * sizeof(GpuFunction) +
                 placements_.capacity() * sizeof(Placement) + sections_.capacity() * sizeof(CodeSection) +
                 files_.capacity() * sizeof(std::string) + inlined_functions_.capacity() * sizeof(std::string) +
                 frames_.capacity() * sizeof(InlineFrame) + sass_text_.capacity();
  for (const GpuFunction& f : functions_) bytes += f.name.capacity() + f.demangled.capacity();
  for (const CodeSection& c : sections_) {
    bytes += c.name.capacity() + c.rows.capacity() * sizeof(LineRow) + c.sass.capacity() * sizeof(SassEntry);
  }
  for (const std::string& f : files_) bytes += f.capacity();
  for (const std::string& f : inlined_functions_) bytes += f.capacity();
  return bytes;
}

std::string_view CubinSymbols::DemangledName(std::string_view function) const {
  const GpuFunction* f = FindFunction(function);
  return f == nullptr ? std::string_view() : std::string_view(f->demangled);
}

GpuInstruction CubinSymbols::MakeInstruction(size_t function, uint64_t offset) const {
  const Placement& place = placements_[function];
  const CodeSection& s = sections_[place.section];
  const uint64_t address = place.start + offset;
  GpuInstruction ins;
  ins.offset = offset;
  auto sass = std::lower_bound(s.sass.begin(), s.sass.end(), address,
                               [](const SassEntry& e, uint64_t a) { return e.offset < a; });
  if (sass != s.sass.end() && sass->offset == address) {
    ins.sass = sass_text_.substr(sass->begin, sass->length);
  } else {
    ins.sass = functions_[function].name + "+" + Hex(offset);
  }
  auto row = std::upper_bound(s.rows.begin(), s.rows.end(), address,
                              [](uint64_t a, const LineRow& r) { return a < r.address; });
  if (row == s.rows.begin()) return ins;
  --row;
  if (row->file == kNone || row->file >= files_.size()) return ins;
  ins.file = files_[row->file];
  ins.line = static_cast<int>(std::min<uint32_t>(row->line, INT32_MAX));
  for (uint32_t f = row->frame; f < frames_.size() && ins.inlined.size() < kMaxInlineDepth; f = frames_[f].parent) {
    const InlineFrame& frame = frames_[f];
    GpuInlinedCall call;
    if (frame.function < inlined_functions_.size()) call.function = inlined_functions_[frame.function];
    if (frame.call_file < files_.size()) call.call_file = files_[frame.call_file];
    call.call_line = static_cast<int>(std::min<uint32_t>(frame.call_line, INT32_MAX));
    ins.inlined.push_back(std::move(call));
  }
  return ins;
}

std::optional<GpuInstruction> CubinSymbols::Find(std::string_view function, uint64_t pc_offset) const {
  const size_t i = FunctionIndex(function);
  if (i == SIZE_MAX || pc_offset >= functions_[i].size) return std::nullopt;
  if ((placements_[i].start + pc_offset) % instruction_size_ != 0) return std::nullopt;
  return MakeInstruction(i, pc_offset);
}

std::vector<GpuInstruction> CubinSymbols::Instructions(std::string_view function) const {
  std::vector<GpuInstruction> out;
  const size_t i = FunctionIndex(function);
  if (i == SIZE_MAX) return out;
  const Placement& place = placements_[i];
  const uint64_t size = functions_[i].size;
  const CodeSection& s = sections_[place.section];
  if (!s.sass.empty()) {
    // The listing knows where instructions are (on GPUs before Volta,
    // scheduling words sit between them).
    auto it = std::lower_bound(s.sass.begin(), s.sass.end(), place.start,
                               [](const SassEntry& e, uint64_t a) { return e.offset < a; });
    for (; it != s.sass.end() && it->offset - place.start < size; ++it) {
      out.push_back(MakeInstruction(i, it->offset - place.start));
    }
    return out;
  }
  out.reserve(size / instruction_size_);
  for (uint64_t offset = 0; offset < size; offset += instruction_size_) out.push_back(MakeInstruction(i, offset));
  return out;
}

}  // namespace warpscope
