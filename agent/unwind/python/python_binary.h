// PythonBinary: what one ELF file (a python executable, static or not, or a
// libpython shared library) tells about the CPython inside it: where the
// _PyRuntime global and the evaluation loop are, and which version it is.
//
// Read once per distinct file (the detector caches by device and inode), from
// .dynsym (always present: extension modules link against these symbols) and
// .symtab when the file has one (it adds the loop's ".cold" part).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/unwind/python/python_layouts.h"
#include "base/status.h"

namespace warpscope {

class ElfFile;

struct PythonBinary {
  struct Range {
    uint64_t vaddr = 0;  // ELF virtual address
    uint64_t size = 0;
  };
  struct Segment {
    uint64_t file_offset = 0;
    uint64_t vaddr = 0;
    uint64_t file_size = 0;
  };
  uint64_t runtime_vaddr = 0;           // _PyRuntime
  Range eval;                           // _PyEval_EvalFrameDefault
  std::optional<Range> eval_cold;       // _PyEval_EvalFrameDefault.cold, when .symtab shows it
  std::optional<PythonVersion> version; // from Py_Version (3.11+) or the file name (python3.X, libpython3.X)
  std::vector<Segment> segments;        // PT_LOAD

  // The load bias of a process mapping of this file that starts at
  // `map_start` with file offset `map_offset`; nullopt if no segment holds it.
  std::optional<uint64_t> LoadBias(uint64_t map_start, uint64_t map_offset) const;
};

// NotFound when the file is ELF but has no CPython runtime (the common case:
// any non-Python executable), other errors for unreadable or non-ELF files.
// `name_hint`: the path the process saw, for the version-from-name fallback.
StatusOr<PythonBinary> ReadPythonBinary(const std::string& path, const std::string& name_hint);
// The same from a file already open (its other readers share the open).
StatusOr<PythonBinary> ReadPythonBinary(ElfFile& file, const std::string& name_hint);

// "python3.12", "libpython3.10.so.1.0", "libpython3.13t.so" -> 3.x (micro unknown: -1).
std::optional<PythonVersion> PythonVersionFromFileName(const std::string& path);

}  // namespace warpscope
