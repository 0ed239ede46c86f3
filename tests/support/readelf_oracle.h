// Test-only: the frame tables binutils prints with
// `readelf --debug-dump=frames-interp`, parsed into rows, and the section
// list of `readelf -SW`. The independent oracle the unwind-table tests compare
// against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::testing {

struct ReadelfRow {
  uint64_t loc = 0;
  std::string cfa;  // "rsp+8", "rbp+16", "exp", "r10+0"
  std::string rbp;  // "" (column absent), "u", "s", "c-16", "exp", a register name
  std::string ra;   // "c-8", "u", ...
};

struct ReadelfFde {
  std::string section;  // ".eh_frame" or ".debug_frame"
  uint64_t offset = 0;  // of the entry in its section
  uint64_t begin = 0;
  uint64_t end = 0;
  bool signal_frame = false;  // the CIE's augmentation has 'S'
  // One row per location, the last printed state when readelf prints several.
  // FDEs whose program is all nops get the CIE's row (readelf prints none).
  std::vector<ReadelfRow> rows;
};

struct ReadelfFrames {
  std::vector<ReadelfFde> fdes;
  uint64_t unparsed_rows = 0;  // rows whose columns did not match the header
};

StatusOr<ReadelfFrames> ReadelfFrameTables(const std::string& path);

struct ReadelfSection {
  std::string name;
  uint64_t addr = 0;
  uint64_t size = 0;
};

StatusOr<std::vector<ReadelfSection>> ReadelfSections(const std::string& path);

// Runs a shell command and returns its stdout; an error only when it fails with no output.
StatusOr<std::string> RunCommand(const std::string& command);

}  // namespace warpscope::testing
