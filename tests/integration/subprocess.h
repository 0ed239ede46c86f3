// Test helper: start programs and collect their exit status and output.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace warpscope::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after timeout_s), capturing stdout and stderr.
ProcessResult RunProcess(const std::vector<std::string>& argv, int timeout_s = 120);

// Starts argv in the background with stdout/stderr sent to /dev/null.
pid_t StartProcess(const std::vector<std::string>& argv);
// The same with stderr written to `stderr_path` (created or truncated).
pid_t StartProcess(const std::vector<std::string>& argv, const std::string& stderr_path);
// The same with stdout written to `stdout_path` too.
pid_t StartProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                   const std::string& stdout_path);
// Waits until the file at `path` contains `text`; false after timeout_s.
bool WaitForFileText(const std::string& path, const std::string& text, int timeout_s);
// Waits for a background process; returns its exit code (-1 on signal).
int WaitProcess(pid_t pid);

std::string MakeTempDir();

// A kB field of /proc/PID/status ("VmRSS", "VmHWM"); -1 when absent.
int64_t ProcStatusKb(pid_t pid, const std::string& field);

// A loopback TCP port that was free a moment ago (for a process that cannot
// be told to pick its own).
int FreePort();

}  // namespace warpscope::testing
