// The server under measurement, seen from outside: its CPU time and peak
// memory from /proc, its data directory's size from the file system, and
// with the ClickHouse store, ClickHouse's share of the disk.
// Starting and stopping a local server (and its rusage at exit) is
// tests/integration/server_process.h's ServerProcess.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/testing/clickhouse_instance.h"

namespace warpscope::bench {

// user + system CPU seconds of a running process (all its threads).
StatusOr<double> ReadProcessCpuSeconds(pid_t pid);
// VmHWM (peak resident set) of a running process, in bytes.
StatusOr<int64_t> ReadPeakRssBytes(pid_t pid);
// A child of this process whose executable's path contains `exe_part` (the
// ClickHouse that a ClickHouseInstance forked, which does not say its pid).
StatusOr<pid_t> FindChildProcess(const std::string& exe_part);

struct DirUsage {
  int64_t apparent_bytes = 0;   // sum of file sizes
  int64_t allocated_bytes = 0;  // blocks on disk
  // Apparent bytes per top-level entry (file or folder), largest first.
  std::vector<std::pair<std::string, int64_t>> entries;
};
StatusOr<DirUsage> MeasureDirectory(const std::string& dir);

// What the ClickHouse store keeps on disk: system.parts' bytes_on_disk of
// the database's active parts, per table.
struct ClickHouseUsage {
  int64_t fact_bytes = 0;        // samples and the other per-row tables, their rollups
  int64_t dictionary_bytes = 0;  // stacks, locations, functions, strings, label sets, types, sequences
  int64_t parts = 0;
  std::vector<std::pair<std::string, int64_t>> tables;  // largest first
};
StatusOr<ClickHouseUsage> MeasureClickHouse(const clickhouse::testing::ClickHouseInstance& ch, const std::string& db);

}  // namespace warpscope::bench
