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
  // The mapped file's size and modification time (ns since the epoch), from a
  // stat through /proc/PID/map_files (ProcessTable); 0 when it could not be
  // read. Not part of /proc/PID/maps: ParseProcMaps leaves them 0.
  uint64_t file_size = 0;
  int64_t file_mtime_ns = 0;

  bool IsFileBacked() const { return inode != 0 && !path.empty() && path[0] == '/'; }
  // "[vdso]", "[vsyscall]", "[heap]"...; not "[anon:name]", which is anonymous.
  bool IsPseudo() const { return inode == 0 && path.starts_with('[') && !path.starts_with("[anon:"); }
  bool Contains(uint64_t addr) const { return addr >= start && addr < end; }
};

// A file as the agent caches what it read from it: the device and inode the
// mapping names, plus the file's size and modification time, so that a file
// rewritten in place, or an inode number reused after a delete, is another
// file.
struct FileIdentity {
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
  std::string ToString() const;  // "major:minor:inode:size:mtime", a map key
};
struct FileIdentityHash {
  size_t operator()(const FileIdentity& k) const {
    uint64_t h = k.inode * 0x9e3779b97f4a7c15ull ^ (uint64_t{k.dev_major} << 32 | k.dev_minor);
    h ^= (k.size + static_cast<uint64_t>(k.mtime_ns)) * 0xc2b2ae3d27d4eb4full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
inline FileIdentity IdentityOf(const MemoryMapping& m) {
  return FileIdentity{m.dev_major, m.dev_minor, m.inode, m.file_size, m.file_mtime_ns};
}

// Skips malformed lines rather than failing: /proc text is kernel-made and a
// single odd line must not cost the whole process its symbols.
std::vector<MemoryMapping> ParseProcMaps(std::string_view text);

// One line; false when it is malformed.
bool ParseProcMapsLine(std::string_view line, MemoryMapping* out);

}  // namespace warpscope
