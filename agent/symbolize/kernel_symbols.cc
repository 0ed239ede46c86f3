#include "agent/symbolize/kernel_symbols.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>
#include <unordered_map>
#include <vector>

#include "base/file_util.h"

namespace warpscope {
namespace {

// A text symbol read; its name lives in the builder's pool until the table
// is written.
struct Candidate {
  uint64_t addr;
  uint32_t name_offset;
  uint32_t name_size;
  uint32_t module;
  bool global;
};

}  // namespace

// Reads kallsyms a line at a time and writes the table: into a SymbolBlocks
// spill file (base/spill_file.h), or, where none can be made, in memory.
class KernelSymbolsBuilder {
 public:
  KernelSymbolsBuilder() { out_.modules_.push_back(KernelSymbols::Module{}); }

  void AddLine(std::string_view line) {
    // "ffffffff81000000 T _text" or "ffffffffc0a01000 t nv_open\t[nvidia]"
    uint64_t addr = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), addr, 16);
    if (ec != std::errc() || ptr == line.data()) return;
    line.remove_prefix(static_cast<size_t>(ptr - line.data()));
    if (line.size() < 4 || line[0] != ' ' || line[2] != ' ') return;
    ++lines_;
    if (addr == 0) ++zero_lines_;
    const char type = line[1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') return;
    line.remove_prefix(3);
    std::string_view module;
    if (const size_t tab = line.find_first_of("\t "); tab != std::string_view::npos) {
      std::string_view rest = line.substr(tab + 1);
      line = line.substr(0, tab);
      rest.remove_prefix(std::min(rest.find_first_not_of("\t "), rest.size()));
      if (rest.size() >= 2 && rest.front() == '[' && rest.back() == ']') module = rest.substr(1, rest.size() - 2);
    }
    if (line.empty() || addr == 0 || pool_.size() + line.size() > std::numeric_limits<uint32_t>::max()) return;
    uint32_t module_id = 0;
    if (!module.empty()) {
      auto it = module_index_.find(std::string(module));
      if (it == module_index_.end()) {
        it = module_index_.emplace(std::string(module), static_cast<uint32_t>(out_.modules_.size())).first;
        out_.modules_.push_back(KernelSymbols::Module{std::string(module), {}});
      }
      module_id = it->second;
    }
    candidates_.push_back(Candidate{addr, static_cast<uint32_t>(pool_.size()), static_cast<uint32_t>(line.size()),
                                    module_id, type == 'T' || type == 'W'});
    pool_.append(line);
  }

  KernelSymbols Finish(const std::string& spill_dir) {
    out_.addresses_hidden_ = lines_ > 0 && zero_lines_ == lines_;
    auto name = [&](const Candidate& c) { return std::string_view(pool_).substr(c.name_offset, c.name_size); };
    // Among aliases at one address: global before local, fewer leading
    // underscores ("do_sys_open" over "__do_sys_open"), then by name for
    // stable output.
    std::sort(candidates_.begin(), candidates_.end(), [&](const Candidate& a, const Candidate& b) {
      if (a.addr != b.addr) return a.addr < b.addr;
      if (a.global != b.global) return a.global;
      const std::string_view na = name(a), nb = name(b);
      const size_t ua = na.find_first_not_of('_');
      const size_t ub = nb.find_first_not_of('_');
      if (ua != ub) return ua < ub;
      return na < nb;
    });
    candidates_.erase(std::unique(candidates_.begin(), candidates_.end(),
                                  [](const Candidate& a, const Candidate& b) { return a.addr == b.addr; }),
                      candidates_.end());
    // A symbol extends to the next one, of its module at most
    // kMaxLastSymbolSize.
    auto end_of = [&](size_t i) {
      const Candidate& c = candidates_[i];
      uint64_t end = c.addr + KernelSymbols::kMaxLastSymbolSize;
      if (i + 1 < candidates_.size()) end = std::min(end, candidates_[i + 1].addr);
      return end;
    };
    StatusOr<SymbolBlocksWriter> writer = SymbolBlocksWriter::Create(spill_dir);
    bool in_file = writer.ok();
    for (size_t i = 0; in_file && i < candidates_.size(); ++i) {
      in_file = writer->Append(candidates_[i].addr, end_of(i) - candidates_[i].addr, name(candidates_[i])).ok();
    }
    if (in_file) {
      StatusOr<std::unique_ptr<SymbolBlocks>> blocks = writer->Finish();
      in_file = blocks.ok();
      if (in_file) out_.blocks_ = std::move(*blocks);
    }
    for (size_t i = 0; i < candidates_.size(); ++i) {
      const Candidate& c = candidates_[i];
      if (in_file) {
        if (out_.module_runs_.empty() || out_.module_runs_.back().second != c.module) {
          out_.module_runs_.emplace_back(i, c.module);
        }
      } else {
        out_.symbols_.push_back(
            KernelSymbols::Symbol{c.addr, end_of(i), static_cast<uint32_t>(out_.names_.size()), c.module});
        out_.names_.append(name(c));
        out_.names_.push_back('\0');
      }
      KernelTextRange& range = out_.modules_[c.module].range;
      if (range.limit == 0 || c.addr < range.start) range.start = c.addr;
      range.limit = std::max(range.limit, c.addr + 1);
    }
    out_.names_.shrink_to_fit();
    out_.symbols_.shrink_to_fit();
    out_.module_runs_.shrink_to_fit();
    return std::move(out_);
  }

 private:
  KernelSymbols out_;
  std::unordered_map<std::string, uint32_t> module_index_;
  std::vector<Candidate> candidates_;
  std::string pool_;
  size_t lines_ = 0;
  size_t zero_lines_ = 0;
};

StatusOr<KernelSymbols> KernelSymbols::Load(const std::string& path, const std::string& spill_dir) {
  // A line at a time through a small buffer: kallsyms is ~10 MB on a
  // distribution kernel.
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open " + path);
  KernelSymbolsBuilder builder;
  std::string buffer;
  std::vector<char> chunk(256 << 10);
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, "read " + path);
    if (n == 0) break;
    buffer.append(chunk.data(), static_cast<size_t>(n));
    size_t from = 0;
    for (size_t nl; (nl = buffer.find('\n', from)) != std::string::npos; from = nl + 1) {
      builder.AddLine(std::string_view(buffer).substr(from, nl - from));
    }
    buffer.erase(0, from);
  }
  if (!buffer.empty()) builder.AddLine(buffer);
  KernelSymbols symbols = builder.Finish(spill_dir);
  if (symbols.addresses_hidden()) {
    return FailedPreconditionError("kernel symbol addresses are hidden (kernel.kptr_restrict); run as root");
  }
  if (symbols.size() == 0) return NotFoundError("no kernel text symbols in " + path);
  return symbols;
}

KernelSymbols KernelSymbols::Parse(std::string_view text, const std::string& spill_dir) {
  KernelSymbolsBuilder builder;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    builder.AddLine(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return builder.Finish(spill_dir);
}

size_t KernelSymbols::size() const { return blocks_ ? blocks_->size() : symbols_.size(); }

std::optional<KernelSymbol> KernelSymbols::Lookup(uint64_t addr) const {
  if (blocks_) {
    std::optional<BlockSymbol> found = blocks_->Lookup(addr);
    if (!found) return std::nullopt;
    auto run = std::upper_bound(module_runs_.begin(), module_runs_.end(), found->index,
                                [](size_t i, const std::pair<size_t, uint32_t>& r) { return i < r.first; });
    const Module& module = modules_[run == module_runs_.begin() ? 0 : std::prev(run)->second];
    return KernelSymbol{std::move(found->name), module.name, found->start, module.range};
  }
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return std::nullopt;
  --it;
  if (addr >= it->end) return std::nullopt;
  const Module& module = modules_[it->module];
  return KernelSymbol{std::string(names_.data() + it->name_offset), module.name, it->start, module.range};
}

KernelTextRange KernelSymbols::Range(std::string_view module) const {
  for (const Module& m : modules_) {
    if (m.name == module) return m.range;
  }
  return {};
}

size_t KernelSymbols::MemoryBytes() const {
  size_t bytes = symbols_.capacity() * sizeof(Symbol) + names_.capacity() + modules_.capacity() * sizeof(Module) +
                 module_runs_.capacity() * sizeof(module_runs_[0]);
  for (const Module& m : modules_) bytes += m.name.capacity();
  if (blocks_) bytes += blocks_->MemoryBytes();
  return bytes;
}

}  // namespace warpscope
