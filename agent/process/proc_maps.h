// Parsing of /proc/PID/maps text into MemoryMapping values. Pure functions,
// no I/O; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope {

struct MemoryMapping {
  uint64_t start = 0;
  uint64_t end = 0;     // exclusive
  uint64_t offset = 0;  // file offset of `start`
  bool readable = false;
  bool writable = false;
  bool executable = false;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  // As the process saw it, with a " (deleted)" suffix removed (see `deleted`).
  // Pseudo mappings keep their bracketed name: "[vdso]", "[stack]", "[anon:x]".
  // Empty for plain anonymous memory.
  std::string path;
  bool deleted = false;  // the file was unlinked (or replaced) after mapping

  bool IsFileBacked() const { return inode != 0 && !path.empty() && path[0] == '/'; }
  // "[vdso]", "[vsyscall]", "[heap]"...; not "[anon:name]", which is anonymous.
  bool IsPseudo() const { return inode == 0 && path.starts_with('[') && !path.starts_with("[anon:"); }
  bool Contains(uint64_t addr) const { return addr >= start && addr < end; }
};

// Skips malformed lines rather than failing: /proc text is kernel-made and a
// single odd line must not cost the whole process its symbols.
std::vector<MemoryMapping> ParseProcMaps(std::string_view text);

// One line; false when it is malformed.
bool ParseProcMapsLine(std::string_view line, MemoryMapping* out);

}  // namespace warpscope
