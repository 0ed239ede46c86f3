#include "agent/symbolize/symbolizer.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "agent/symbolize/demangle.h"
#include "base/logging.h"

namespace warpscope {
namespace {

std::string OffsetName(std::string_view base, uint64_t value) {
  char hex[24];
  std::snprintf(hex, sizeof(hex), "+0x%llx", static_cast<unsigned long long>(value));
  std::string out(base);
  out += hex;
  return out;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

void SetSynthesizedName(SymbolizedFrame& frame, std::string name) {
  frame.functions.push_back(SymbolizedFunction{name, name, "", 0});
}

}  // namespace

Symbolizer::Symbolizer(ProcFs procfs, std::string kallsyms_path, size_t cache_bytes)
    : processes_(procfs), files_(procfs), kallsyms_path_(std::move(kallsyms_path)), cache_bytes_(cache_bytes) {}

void Symbolizer::SetSymbolName(SymbolizedFrame& frame, std::string raw) {
  auto it = demangled_.find(raw);
  if (it == demangled_.end()) {
    std::string name = Demangle(raw);
    const size_t bytes = raw.size() + name.size() + 64;  // both strings and the node, roughly
    if (demangled_bytes_ + bytes > kDemangledCacheBytes) {
      demangled_.clear();
      demangled_bytes_ = 0;
      ++stats_.demangled_resets;
    }
    demangled_bytes_ += bytes;
    stats_.demangled_bytes = demangled_bytes_;
    it = demangled_.emplace(std::string(raw), std::move(name)).first;
  }
  frame.functions.push_back(SymbolizedFunction{it->second, std::move(raw), "", 0});
}

Status Symbolizer::Init() {
  StatusOr<KernelSymbols> kernel = KernelSymbols::Load(kallsyms_path_);
  if (!kernel.ok()) return kernel.status();
  kernel_ = std::move(*kernel);
  stats_.symbol_bytes += kernel_.MemoryBytes();
  return Status::Ok();
}

void Symbolizer::OnProcessSeen(uint32_t pid) {
  const ProcessInfo* info = processes_.OnProcessSeen(pid);
  if (info != nullptr) Warm(*info);
}

void Symbolizer::OnMapsChanged(uint32_t pid) {
  const ProcessInfo* info = processes_.OnMapsChanged(pid);
  if (info != nullptr) Warm(*info);
}

void Symbolizer::OnExec(uint32_t pid) {
  process_state_.erase(pid);
  processes_.OnExec(pid);
  if (const ProcessInfo* info = processes_.Find(pid); info != nullptr && !info->exited) Warm(*info);
}

void Symbolizer::OnExit(uint32_t pid) { processes_.OnExit(pid); }

void Symbolizer::BeginEpoch() {
  ++epoch_;
  processes_.BeginEpoch();
}

void Symbolizer::EndEpoch() {
  processes_.CollectExited();
  std::erase_if(process_state_, [this](const auto& kv) { return processes_.Find(kv.first) == nullptr; });
  if (loaded_since_sweep_ && file_table_bytes_ > cache_bytes_) EvictUnmapped();
}

void Symbolizer::EvictUnmapped() {
  loaded_since_sweep_ = false;
  ++sweeps_;
  processes_.ForEach([this](const ProcessInfo& info) {
    for (const MemoryMapping& m : info.mappings) {
      if (!m.IsFileBacked()) continue;
      if (auto it = by_file_.find(IdentityOf(m)); it != by_file_.end()) {
        it->second.mapped_in_sweep = sweeps_;
      }
    }
  });
  // Unmapped binaries, least recently used first; unreadable ones simply go.
  std::vector<std::pair<uint64_t, FileIdentity>> unmapped;
  std::erase_if(by_file_, [&](const auto& kv) {
    if (kv.second.mapped_in_sweep == sweeps_) return false;
    if (kv.second.table == nullptr) return true;
    unmapped.emplace_back(kv.second.last_used_epoch, kv.first);
    return false;
  });
  std::sort(unmapped.begin(), unmapped.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [last_used, key] : unmapped) {
    if (file_table_bytes_ <= cache_bytes_) break;
    auto it = by_file_.find(key);
    std::shared_ptr<const ElfSymbols> table = std::move(it->second.table);
    by_file_.erase(it);
    if (table.use_count() > 1) continue;  // another file of the same build still holds it
    const size_t bytes = table->MemoryBytes();
    file_table_bytes_ -= bytes;
    stats_.symbol_bytes -= bytes;
    ++stats_.binaries_evicted;
  }
  std::erase_if(by_build_id_, [](const auto& kv) { return kv.second.expired(); });
}

void Symbolizer::Warm(const ProcessInfo& info) {
  ProcessState& state = process_state_[info.pid];
  if (state.warmed_generation == info.generation) return;
  state.warmed_generation = info.generation;
  for (const MemoryMapping& m : info.mappings) {
    if (m.IsFileBacked()) {
      if (fetch_ && !Knows(m)) continue;  // comes through Adopt
      BinaryFor(info.pid, m);
    } else if (m.path == "[vdso]") {
      VdsoFor(info.pid, m);
    }
  }
}

void Symbolizer::AddTable(const std::shared_ptr<const ElfSymbols>& table) {
  ++stats_.binaries_loaded;
  stats_.symbol_bytes += table->MemoryBytes();
}

const ElfSymbols* Symbolizer::BinaryFor(uint32_t pid, const MemoryMapping& m) {
  const FileIdentity key = IdentityOf(m);
  if (auto it = by_file_.find(key); it != by_file_.end()) {
    it->second.last_used_epoch = epoch_;
    return it->second.table.get();
  }
  std::shared_ptr<const ElfSymbols> table;
  std::optional<StatusOr<std::shared_ptr<const ElfSymbols>>> fetched;
  if (fetch_) fetched = fetch_(pid, m);
  table = fetched ? Install(pid, m, std::move(*fetched)) : LoadBinary(pid, m);
  const ElfSymbols* raw = table.get();
  by_file_.emplace(key, FileEntry{std::move(table), epoch_, 0});
  return raw;
}

StatusOr<std::shared_ptr<const ElfSymbols>> ReadSymbolsFor(ElfFile& file, uint32_t pid, const MemoryMapping& m,
                                                           const ProcFs& procfs) {
  ElfLoadOptions options;
  options.logical_path = m.path;
  options.root_prefix = procfs.RootPath(pid, "");
  ASSIGN_OR_RETURN(std::unique_ptr<ElfSymbols> loaded, ElfSymbols::Load(file, options));
  return std::shared_ptr<const ElfSymbols>(std::move(loaded));
}

std::shared_ptr<const ElfSymbols> Symbolizer::LoadBinary(uint32_t pid, const MemoryMapping& m) {
  StatusOr<std::shared_ptr<ElfFile>> file = files_.Open(pid, m);
  if (!file.ok()) return Install(pid, m, file.status());
  const std::string& build_id = (*file)->BuildId();
  if (!build_id.empty()) {
    if (auto it = by_build_id_.find(build_id); it != by_build_id_.end()) {
      if (std::shared_ptr<const ElfSymbols> shared = it->second.lock()) return shared;
    }
  }
  return Install(pid, m, ReadSymbolsFor(**file, pid, m, files_.procfs()));
}

std::shared_ptr<const ElfSymbols> Symbolizer::Install(uint32_t pid, const MemoryMapping& m,
                                                      StatusOr<std::shared_ptr<const ElfSymbols>> read) {
  if (!read.ok()) {
    ++stats_.elf_load_errors;
    LOG_DEBUG() << "no symbols for " << m.path << " (pid " << pid << "): " << read.status().ToString();
    return nullptr;
  }
  std::shared_ptr<const ElfSymbols> table = std::move(*read);
  if (!table->build_id().empty()) {
    auto [it, inserted] = by_build_id_.try_emplace(table->build_id(), table);
    if (!inserted) {
      if (std::shared_ptr<const ElfSymbols> shared = it->second.lock()) return shared;  // another path, same build
      it->second = table;
    }
  }
  AddTable(table);
  file_table_bytes_ += table->MemoryBytes();
  loaded_since_sweep_ = true;
  return table;
}

void Symbolizer::Adopt(uint32_t pid, const MemoryMapping& m, StatusOr<std::shared_ptr<const ElfSymbols>> symbols) {
  const FileIdentity key = IdentityOf(m);
  if (by_file_.contains(key)) return;
  by_file_.emplace(key, FileEntry{Install(pid, m, std::move(symbols)), epoch_, 0});
}

const ElfSymbols* Symbolizer::VdsoFor(uint32_t pid, const MemoryMapping& m) {
  ProcessState& state = process_state_[pid];
  if (state.vdso_read) return state.vdso.get();
  state.vdso_read = true;
  std::shared_ptr<const std::string> image = files_.VdsoImage(pid, m);
  if (!image) return nullptr;
  if (auto it = vdso_by_image_.find(*image); it != vdso_by_image_.end()) {
    state.vdso = it->second;
    return state.vdso.get();
  }
  StatusOr<std::unique_ptr<ElfSymbols>> loaded = ElfSymbols::LoadFromMemory(*image);
  if (!loaded.ok()) return nullptr;
  state.vdso = std::move(*loaded);
  AddTable(state.vdso);
  vdso_by_image_.emplace(*image, state.vdso);
  return state.vdso.get();
}

SymbolizedFrame Symbolizer::SymbolizeUser(uint32_t pid, uint64_t address, bool is_return_address) {
  ++stats_.user_frames;
  SymbolizedFrame frame;
  frame.address = address;
  const uint64_t lookup = is_return_address && address > 0 ? address - 1 : address;
  const MemoryMapping* m = processes_.FindMapping(pid, lookup);
  if (m == nullptr || (!m->IsFileBacked() && !m->IsPseudo())) {
    ++stats_.user_no_mapping;
    SetSynthesizedName(frame, OffsetName(m == nullptr ? "[unknown]" : "[anon]", address));
    return frame;
  }
  frame.has_mapping = true;
  frame.mapping.memory_start = m->start;
  frame.mapping.memory_limit = m->end;
  frame.mapping.file_offset = m->offset;
  frame.mapping.filename = m->path;

  const ElfSymbols* table = nullptr;
  if (m->IsFileBacked()) {
    table = BinaryFor(pid, *m);
  } else if (m->path == "[vdso]") {
    table = VdsoFor(pid, *m);
  }
  const uint64_t file_offset = address - m->start + m->offset;
  std::optional<uint64_t> vaddr;
  if (table != nullptr) {
    frame.mapping.build_id = table->build_id();
    vaddr = table->FileOffsetToVaddr(lookup - m->start + m->offset);
    if (vaddr) {
      if (std::optional<ElfSymbol> sym = table->Lookup(*vaddr)) {
        ++stats_.user_symbolized;
        SetSymbolName(frame, std::move(sym->name));
        return frame;
      }
      *vaddr += address - lookup;  // name the sampled address, not the lookup one
    }
  }
  ++stats_.user_no_symbol;
  if (m->IsPseudo()) {
    SetSynthesizedName(frame, OffsetName(m->path, address - m->start));
  } else {
    SetSynthesizedName(frame, OffsetName(BaseName(m->path), vaddr ? *vaddr : file_offset));
  }
  return frame;
}

std::optional<ProfileMapping> Symbolizer::MainExecutableMapping(uint32_t pid) {
  const ProcessInfo* info = processes_.Find(pid);
  if (info == nullptr || info->exe_path.empty()) return std::nullopt;
  for (const MemoryMapping& m : info->mappings) {  // executable mappings, sorted by start
    if (m.path != info->exe_path || !m.IsFileBacked()) continue;
    ProfileMapping mapping;
    mapping.memory_start = m.start;
    mapping.memory_limit = m.end;
    mapping.file_offset = m.offset;
    mapping.filename = m.path;
    if (const ElfSymbols* table = BinaryFor(pid, m)) mapping.build_id = table->build_id();
    return mapping;
  }
  return std::nullopt;
}

SymbolizedFrame Symbolizer::SymbolizeKernel(uint64_t address, bool is_return_address) {
  ++stats_.kernel_frames;
  SymbolizedFrame frame;
  frame.address = address;
  frame.has_mapping = true;
  frame.mapping.is_kernel = true;
  const uint64_t lookup = is_return_address && address > 0 ? address - 1 : address;
  KernelTextRange range;
  if (std::optional<KernelSymbol> sym = kernel_.Lookup(lookup)) {
    ++stats_.kernel_symbolized;
    frame.mapping.filename = sym->module.empty() ? "[kernel.kallsyms]" : "[" + std::string(sym->module) + "]";
    range = sym->module_range;
    SetSymbolName(frame, std::move(sym->name));
  } else {
    frame.mapping.filename = "[kernel.kallsyms]";
    range = kernel_.Range("");
    SetSynthesizedName(frame, OffsetName("[kernel]", address));
  }
  frame.mapping.memory_start = range.start;
  frame.mapping.memory_limit = range.limit;
  return frame;
}

uint64_t InternSymbolizedFrame(ProfileBuilder* builder, const SymbolizedFrame& frame, FrameKind kind) {
  const uint64_t mapping_id = frame.has_mapping ? builder->InternMapping(frame.mapping) : 0;
  std::vector<ProfileLine> lines;
  lines.reserve(frame.functions.size());
  for (const SymbolizedFunction& fn : frame.functions) {
    lines.push_back({builder->InternFunction(fn.name, fn.system_name, fn.filename), fn.line});
  }
  return builder->InternLocation(mapping_id, frame.address, kind, lines);
}

}  // namespace warpscope
