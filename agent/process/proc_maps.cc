#include "agent/process/proc_maps.h"

#include <charconv>

namespace warpscope {
namespace {

// Consumes an unsigned number in `base` from the front of `s`; fails on no digits.
template <typename T>
bool ConsumeNumber(std::string_view& s, int base, T* out) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  if (ec != std::errc() || ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(ptr - s.data()));
  return true;
}

bool ConsumeChar(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// Field separators are single spaces except before the path, which the kernel pads.
bool ConsumeSpaces(std::string_view& s) {
  const size_t n = s.find_first_not_of(' ');
  if (n == 0) return false;
  s.remove_prefix(n == std::string_view::npos ? s.size() : n);
  return true;
}

}  // namespace

bool ParseProcMapsLine(std::string_view s, MemoryMapping* out) {
  MemoryMapping m;
  if (!ConsumeNumber(s, 16, &m.start) || !ConsumeChar(s, '-') || !ConsumeNumber(s, 16, &m.end) ||
      !ConsumeSpaces(s)) {
    return false;
  }
  if (m.end < m.start || s.size() < 4) return false;
  m.readable = s[0] == 'r';
  m.writable = s[1] == 'w';
  m.executable = s[2] == 'x';
  s.remove_prefix(4);
  if (!ConsumeSpaces(s) || !ConsumeNumber(s, 16, &m.offset) || !ConsumeSpaces(s) ||
      !ConsumeNumber(s, 16, &m.dev_major) || !ConsumeChar(s, ':') || !ConsumeNumber(s, 16, &m.dev_minor) ||
      !ConsumeSpaces(s) || !ConsumeNumber(s, 10, &m.inode)) {
    return false;
  }
  if (!s.empty() && !ConsumeSpaces(s)) return false;  // junk glued to the inode
  constexpr std::string_view kDeleted = " (deleted)";
  if (s.ends_with(kDeleted)) {
    s.remove_suffix(kDeleted.size());
    m.deleted = true;
  }
  m.path.assign(s);
  *out = std::move(m);
  return true;
}

std::vector<MemoryMapping> ParseProcMaps(std::string_view text) {
  std::vector<MemoryMapping> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    MemoryMapping m;
    if (ParseProcMapsLine(line, &m)) out.push_back(std::move(m));
  }
  return out;
}

std::string FileIdentity::ToString() const {
  return std::to_string(dev_major) + ":" + std::to_string(dev_minor) + ":" + std::to_string(inode) + ":" +
         std::to_string(size) + ":" + std::to_string(mtime_ns);
}

}  // namespace warpscope
