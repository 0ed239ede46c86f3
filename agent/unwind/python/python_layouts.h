// The one place that knows CPython's internal layouts: for each supported
// minor version (3.10 to 3.13, x86-64, default GIL build), the field offsets
// the BPF frame walker needs (ws_py_layout, bpf/intf/python.h) and those user
// space needs to read a code object's names and line table.
//
// The numbers were produced with offsetof() against each version's own
// headers (internal ones included) by scripts/python_offsets.c; run
// scripts/python_offsets.sh on a machine with those headers to check them.
// Offsets are stable within a minor version (CPython keeps these structs
// fixed across patch releases).
#pragma once

#include <cstdint>
#include <string>

#include "bpf/intf/python.h"

namespace warpscope {

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = 0;
  std::string ToString() const;
};

enum class PythonLineTableFormat : uint8_t {
  kLnotab310,     // 3.10: (bytecode delta, signed line delta) byte pairs
  kLocations311,  // 3.11+: PEP 657 location table (Objects/locations.md)
};

struct PythonCodeLayout {
  uint32_t argcount = 0;
  uint32_t flags = 0;
  uint32_t firstlineno = 0;
  uint32_t name = 0;
  int32_t qualname = -1;  // -1: none (3.10 has only co_name)
  uint32_t filename = 0;
  uint32_t linetable = 0;
  PythonLineTableFormat linetable_format = PythonLineTableFormat::kLocations311;
};

// Object headers used to read str and bytes objects.
struct PythonObjectLayout {
  uint32_t bytes_size = 16;  // PyVarObject.ob_size
  uint32_t bytes_data = 32;  // PyBytesObject.ob_sval
  uint32_t str_length = 16;  // PyASCIIObject.length
  uint32_t str_state = 32;   // PyASCIIObject.state bit field: kind bits 2-4, compact bit 5, ascii bit 6
  uint32_t ascii_data = 0;   // sizeof(PyASCIIObject): compact ASCII data follows the header
  uint32_t compact_data = 0; // sizeof(PyCompactUnicodeObject): compact non-ASCII data
};

struct PythonLayout {
  int minor = 0;  // of 3.x
  ws_py_layout bpf{};
  PythonCodeLayout code;
  PythonObjectLayout object;
};

// The layout of 3.minor, or nullptr for an unsupported version.
const PythonLayout* FindPythonLayout(const PythonVersion& version);
// "3.10, 3.11, 3.12, 3.13" for messages.
std::string SupportedPythonVersions();

}  // namespace warpscope
