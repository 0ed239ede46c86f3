// Reading CPython code objects out of another process's memory, and mapping
// an instruction index (what the BPF frame walker reports, bpf/intf/python.h)
// to a source line with the code object's own line table.
//
// Everything here works on a snapshot read through a ReadMemoryFn: the target
// keeps running, so any field may be stale or garbage by the time we read it.
// Readers therefore bound every length and check what they read; a corrupt
// object is an error value, never a crash or an unbounded read.
//
// Threading: free functions without shared state. A ReadMemoryFn from
// ProcessMemoryReader holds no state and may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "agent/unwind/python/python_layouts.h"
#include "base/status.h"

namespace warpscope {

// Copies len bytes at addr in the target into out: all of them, or an error.
// The seam between these readers and a live process, so tests can use fakes.
using ReadMemoryFn = std::function<Status(uint64_t addr, void* out, size_t len)>;

// Reads pid's memory with process_vm_readv, falling back to /proc/PID/mem
// where that call is filtered (EPERM, as seccomp profiles of some container
// runtimes do) or missing (ENOSYS). A process that has exited reads as
// NotFoundError; an unmapped address as DataLossError.
ReadMemoryFn ProcessMemoryReader(uint32_t pid);

// A str object's text as UTF-8. Only compact strings (all code-object names
// and file names are) are supported; others are FailedPreconditionError.
// Lengths are in code points; a negative one or one over max_chars is an error.
StatusOr<std::string> ReadPythonString(const ReadMemoryFn& read, const PythonObjectLayout& layout, uint64_t addr,
                                       size_t max_chars = 4096);

// Appends code point cp as UTF-8; lone surrogates become U+FFFD. False (and
// nothing appended) for values past U+10FFFF.
bool AppendUtf8(uint32_t cp, std::string* out);

// A bytes object's contents; a size that is negative or over max_len is an error.
StatusOr<std::string> ReadPythonBytes(const ReadMemoryFn& read, const PythonObjectLayout& layout, uint64_t addr,
                                      size_t max_len = 1 << 20);

struct PythonCodeInfo {
  std::string name;  // co_qualname when the version has it (3.11+), else co_name
  std::string filename;
  int32_t firstlineno = 0;
  uint32_t fingerprint = 0;  // ws_py_fingerprint(co_argcount, co_flags, co_firstlineno)
  std::string linetable;     // co_linetable's bytes, in linetable_format
  PythonLineTableFormat linetable_format = PythonLineTableFormat::kLocations311;
};

// Reads the code object at code_addr. The fields are checked (non-null,
// aligned object pointers, firstlineno >= 0, readable strings) so that an
// address that no longer holds a code object is an error, not garbage.
StatusOr<PythonCodeInfo> ReadCodeObject(const ReadMemoryFn& read, const PythonLayout& layout, uint64_t code_addr);

// The source line of the instruction instr_index code units (2 bytes each)
// from the start of the code, as CPython's PyCode_Addr2Line computes it for
// that format. firstlineno when the table gives the instruction no line or
// the index is past the table's end. Never reads outside linetable.
int32_t PythonLineForInstruction(PythonLineTableFormat format, std::string_view linetable, int32_t firstlineno,
                                 uint32_t instr_index);

}  // namespace warpscope
