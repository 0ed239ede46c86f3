#include "agent/symbolize/kernel_symbols.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "base/file_util.h"

namespace warpscope {
namespace {

struct Candidate {
  uint64_t addr;
  std::string_view name;
  uint32_t module;
  bool global;
};

// Among aliases at one address: global before local, fewer leading
// underscores ("do_sys_open" over "__do_sys_open"), then by name for stable output.
bool BetterAlias(const Candidate& a, const Candidate& b) {
  if (a.global != b.global) return a.global;
  const size_t ua = a.name.find_first_not_of('_');
  const size_t ub = b.name.find_first_not_of('_');
  if (ua != ub) return ua < ub;
  return a.name < b.name;
}

}  // namespace

StatusOr<KernelSymbols> KernelSymbols::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  KernelSymbols symbols = Parse(text);
  if (symbols.addresses_hidden()) {
    return FailedPreconditionError("kernel symbol addresses are hidden (kernel.kptr_restrict); run as root");
  }
  if (symbols.size() == 0) return NotFoundError("no kernel text symbols in " + path);
  return symbols;
}

KernelSymbols KernelSymbols::Parse(std::string_view text) {
  KernelSymbols out;
  out.modules_.push_back(Module{});
  std::unordered_map<std::string_view, uint32_t> module_index;
  std::vector<Candidate> candidates;
  size_t lines = 0;
  size_t zero_lines = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // "ffffffff81000000 T _text" or "ffffffffc0a01000 t nv_open\t[nvidia]"
    uint64_t addr = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), addr, 16);
    if (ec != std::errc() || ptr == line.data()) continue;
    line.remove_prefix(static_cast<size_t>(ptr - line.data()));
    if (line.size() < 4 || line[0] != ' ' || line[2] != ' ') continue;
    ++lines;
    if (addr == 0) ++zero_lines;
    const char type = line[1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    line.remove_prefix(3);
    std::string_view module;
    if (const size_t tab = line.find_first_of("\t "); tab != std::string_view::npos) {
      std::string_view rest = line.substr(tab + 1);
      line = line.substr(0, tab);
      rest.remove_prefix(std::min(rest.find_first_not_of("\t "), rest.size()));
      if (rest.size() >= 2 && rest.front() == '[' && rest.back() == ']') module = rest.substr(1, rest.size() - 2);
    }
    if (line.empty() || addr == 0) continue;
    uint32_t module_id = 0;
    if (!module.empty()) {
      auto [it, inserted] = module_index.emplace(module, static_cast<uint32_t>(out.modules_.size()));
      if (inserted) out.modules_.push_back(Module{std::string(module), {}});
      module_id = it->second;
    }
    candidates.push_back(Candidate{addr, line, module_id, type == 'T' || type == 'W'});
  }
  out.addresses_hidden_ = lines > 0 && zero_lines == lines;

  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.addr != b.addr ? a.addr < b.addr : BetterAlias(a, b);
  });
  candidates.erase(std::unique(candidates.begin(), candidates.end(),
                               [](const Candidate& a, const Candidate& b) { return a.addr == b.addr; }),
                   candidates.end());
  out.symbols_.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    uint64_t end = c.addr + kMaxLastSymbolSize;
    if (i + 1 < candidates.size() && candidates[i + 1].module == c.module) end = candidates[i + 1].addr;
    if (i + 1 < candidates.size()) end = std::min(end, candidates[i + 1].addr);
    out.symbols_.push_back(Symbol{c.addr, end, static_cast<uint32_t>(out.names_.size()), c.module});
    out.names_.append(c.name);
    out.names_.push_back('\0');
    KernelTextRange& range = out.modules_[c.module].range;
    if (range.limit == 0 || c.addr < range.start) range.start = c.addr;
    range.limit = std::max(range.limit, c.addr + 1);
  }
  out.names_.shrink_to_fit();
  return out;
}

std::optional<KernelSymbol> KernelSymbols::Lookup(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return std::nullopt;
  --it;
  if (addr >= it->end) return std::nullopt;
  const Module& module = modules_[it->module];
  return KernelSymbol{std::string_view(names_.data() + it->name_offset), module.name, it->start, module.range};
}

KernelTextRange KernelSymbols::Range(std::string_view module) const {
  for (const Module& m : modules_) {
    if (m.name == module) return m.range;
  }
  return {};
}

size_t KernelSymbols::MemoryBytes() const {
  size_t bytes = symbols_.capacity() * sizeof(Symbol) + names_.capacity() + modules_.capacity() * sizeof(Module);
  for (const Module& m : modules_) bytes += m.name.capacity();
  return bytes;
}

}  // namespace warpscope
