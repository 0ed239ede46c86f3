// Test support for the CPython readers: finding the real interpreters that
// serve as the oracle, running scripts in them, and small parsing helpers.
// Test-only; single-threaded use from a test body.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/unwind/python/python_layouts.h"
#include "base/status.h"

namespace warpscope::testing {

struct TestPython {
  std::string path;
  PythonVersion version;
};

// /usr/bin/python3 (an error when it is missing or broken), then pyenv's
// 3.10-3.13 under /root/.pyenv/versions when present, then the entries of
// WS_TEST_PYTHONS (colon-separated paths). Each is run once for its version;
// duplicates (by resolved path) are dropped.
StatusOr<std::vector<TestPython>> FindTestPythons();

// "3.11.2 (/usr/bin/python3)" for traces and the closing summary.
std::string Describe(const TestPython& python);

// A child with stdin and stdout on pipes and stderr shared with the test (so
// a Python traceback shows in the test log). SIGKILLed and reaped when destroyed.
class ChildProcess {
 public:
  static StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // One line of stdout without its newline; an error at EOF or after timeout_ms.
  StatusOr<std::string> ReadLine(int timeout_ms);
  // Closes stdin, reads stdout to EOF and reaps the child: the output, or an
  // error unless it exited with status 0.
  StatusOr<std::string> Finish(int timeout_ms);

 private:
  ChildProcess(pid_t pid, int stdin_fd, int stdout_fd) : pid_(pid), stdin_fd_(stdin_fd), stdout_fd_(stdout_fd) {}
  // Appends what is readable within timeout_ms; false at EOF or timeout.
  bool Fill(int timeout_ms);

  pid_t pid_;
  int stdin_fd_;
  int stdout_fd_;
  std::string buffered_;
  bool reaped_ = false;
};

// Runs `python script` to completion and returns its stdout.
StatusOr<std::string> RunPythonScript(const std::string& python, const std::string& script, int timeout_ms = 60000);

// A fresh directory under $TMPDIR (or /tmp), removed with its files on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes name (a plain file name) inside the directory; returns its path.
  StatusOr<std::string> WriteFile(const std::string& name, std::string_view data);

 private:
  std::string path_;
};

// bytes.hex() back to bytes; an error on odd length or a non-hex digit.
StatusOr<std::string> FromHex(std::string_view hex);

// One line of json.dumps() of a flat dict whose values are str or int:
// key -> value (a str decoded to UTF-8, an int as its decimal text).
StatusOr<std::map<std::string, std::string>> ParseFlatJson(std::string_view line);

// Bytes placed so that they end exactly where an inaccessible page starts:
// a reader that runs past the end faults instead of reading garbage.
class GuardedBytes {
 public:
  explicit GuardedBytes(std::string_view data);
  ~GuardedBytes();
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  std::string_view view() const { return {start_, size_}; }

 private:
  char* map_ = nullptr;
  size_t map_len_ = 0;
  const char* start_ = nullptr;
  size_t size_ = 0;
};

}  // namespace warpscope::testing
