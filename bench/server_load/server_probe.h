// The server under measurement, seen from outside: its CPU time and peak
// memory from /proc and its data directory's size from the file system.
// Starting and stopping a local server (and its rusage at exit) is
// tests/integration/server_process.h's ServerProcess.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::bench {

// user + system CPU seconds of a running process (all its threads).
StatusOr<double> ReadProcessCpuSeconds(pid_t pid);
// VmHWM (peak resident set) of a running process, in bytes.
StatusOr<int64_t> ReadPeakRssBytes(pid_t pid);

struct DirUsage {
  int64_t apparent_bytes = 0;   // sum of file sizes
  int64_t allocated_bytes = 0;  // blocks on disk
  // Apparent bytes per top-level entry (file or folder), largest first.
  std::vector<std::pair<std::string, int64_t>> entries;
};
StatusOr<DirUsage> MeasureDirectory(const std::string& dir);

}  // namespace warpscope::bench
