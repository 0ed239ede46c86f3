// What the agent + server integration tests share: `warpscope-agent run` as a
// child process with its stderr in a log file, and JSON answers of the API.
// Header-only: GetApiJson checks the status with gtest's EXPECT.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {

// GET path on the server; a non-200 answer fails the test (and gives null).
inline nlohmann::json GetApiJson(int port, const std::string& path, const std::string& token) {
  HttpResult r = HttpGet(port, path, token);
  EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  return nlohmann::json::parse(r.body, nullptr, false);
}

// The agent's counter `event` (warpscope_agent_events_total{event=...}) from
// its Prometheus endpoint on `metrics_port`; -1 when it is not there (yet).
inline int64_t AgentEventCounter(int metrics_port, const std::string& event) {
  const HttpResult m = HttpGet(metrics_port, "/metrics", "");
  const std::regex line("event=\"" + event + "\"\\} ([0-9]+)");
  std::smatch match;
  return std::regex_search(m.body, match, line) ? std::stoll(match[1]) : -1;
}

// `binary run ARGS...`; Stop() (also on destruction) is SIGTERM, after which
// the agent uploads or spools its last window and exits.
class AgentProcess {
 public:
  AgentProcess(const std::string& binary, const std::vector<std::string>& run_args, std::string log_path)
      : log_path_(std::move(log_path)) {
    std::vector<std::string> argv = {binary, "run"};
    argv.insert(argv.end(), run_args.begin(), run_args.end());
    pid_ = StartProcess(argv, log_path_);
  }
  ~AgentProcess() { Stop(); }
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // The agent's exit code (0 when it was not running).
  int Stop() {
    if (pid_ <= 0) return 0;
    kill(pid_, SIGTERM);
    const int code = WaitProcess(pid_);
    pid_ = -1;
    return code;
  }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    WaitProcess(pid_);
    pid_ = -1;
  }
  std::string Log() const {
    std::ifstream in(log_path_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

}  // namespace warpscope::testing
