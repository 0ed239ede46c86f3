// The server under measurement, seen from outside: start and stop a
// warpscope-server binary (so its pid is known), and read its CPU time and
// peak memory from /proc and its data directory's size from the file system.
//
// Threading: a LocalServer belongs to the thread that started it; its stderr
// reader thread only appends to the log under mu_.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// What a stopped server used over its whole life (wait4's rusage).
struct ExitUsage {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that ended it, if any
  double cpu_seconds = 0;
  int64_t peak_rss_bytes = 0;
  double stop_seconds = 0;  // SIGTERM to exit (the final flush)
};

class LocalServer {
 public:
  // Runs `binary --listen 127.0.0.1:<port> --data-dir DIR --token T [extra...]`
  // and waits (up to 120 s: a restart may replay a WAL) for "serving on".
  static StatusOr<std::unique_ptr<LocalServer>> Start(const std::string& binary, const std::string& data_dir,
                                                      const std::string& token,
                                                      const std::vector<std::string>& extra_args, int port = 0);
  ~LocalServer();  // SIGKILLs the process if still running

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  double start_seconds() const { return start_seconds_; }
  std::string log() const;

  // SIGTERM and wait up to timeout_s (then SIGKILL).
  ExitUsage Stop(int timeout_s = 600);

 private:
  LocalServer() = default;

  pid_t pid_ = -1;
  int port_ = 0;
  int stderr_fd_ = -1;
  double start_seconds_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::string log_;  // guarded by mu_; the server's stderr
};

}  // namespace warpscope::bench
