// The harness of the injection library's end-to-end tests (injection_test.cc,
// cupti_sharing_test.cc): the "application" (cuda_injection_host, the
// library inside it driven through the fake CUPTI) and this test as its
// agent, with the real CudaSocketServer on a temporary socket.
#pragma once

#include <cupti.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"
#include "tests/support/cuda_test_dirs.h"
#include "tests/fakes/fake_cupti/fake_cupti_hooks.h"

extern char** environ;

namespace warpscope::cuda_injection_test {

inline constexpr int kDriverDomain = CUPTI_CB_DOMAIN_DRIVER_API;
inline constexpr int kRuntimeDomain = CUPTI_CB_DOMAIN_RUNTIME_API;
inline constexpr uint32_t kCudaLaunchKernel = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
inline constexpr uint32_t kCudaGraphLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
inline constexpr uint32_t kCuLaunchKernel = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
inline constexpr uint32_t kCuGraphLaunch = CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
inline constexpr int kKernelActivity = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;


inline std::string TempDir() { return warpscope::testing::CudaTestDirs::Make(); }

// The application process: cuda_injection_host with a chosen environment.
class HostProcess;
bool WaitForNumber(HostProcess& host, const std::string& command, uint64_t want);
class HostProcess {
 public:
  explicit HostProcess(const std::vector<std::string>& env) {
    stderr_path_ = TempDir() + "/stderr";
    int in[2], out[2];
    EXPECT_EQ(pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    const int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err, 2);
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "WARPSCOPE_", 10) != 0 && std::strncmp(*e, "CUDA_", 5) != 0) environment.push_back(*e);
    }
    for (const std::string& e : env) environment.push_back(e);
    std::vector<char*> envp;
    for (std::string& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string host = WS_CUDA_HOST_PATH, library = WS_CUDA_LIBRARY_PATH;
    char* argv[] = {host.data(), library.data(), nullptr};
    EXPECT_EQ(posix_spawn(&pid_, host.c_str(), &actions, nullptr, argv, envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    close(err);
    to_host_ = in[1];
    from_host_ = out[0];
  }

  ~HostProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(to_host_);
    close(from_host_);
  }

  // Sends one command; returns the reply line ("" on timeout or exit).
  std::string Command(const std::string& line, int timeout_ms = 30000) {
    const std::string text = line + "\n";
    if (write(to_host_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return "";
    for (;;) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string reply = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return reply;
      }
      pollfd p{from_host_, POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return "";
      char chunk[4096];
      const ssize_t n = read(from_host_, chunk, sizeof(chunk));
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // The numbers after "ok".
  std::vector<uint64_t> Numbers(const std::string& line) {
    const std::string reply = Command(line);
    EXPECT_EQ(reply.rfind("ok", 0), 0u) << line << " -> " << reply;
    std::istringstream in(reply.size() > 2 ? reply.substr(2) : "");
    std::vector<uint64_t> out;
    uint64_t v;
    while (in >> v) out.push_back(v);
    return out;
  }
  uint64_t Number(const std::string& line) {
    const std::vector<uint64_t> n = Numbers(line);
    return n.empty() ? ~0ull : n[0];
  }

  // Exit status after "quit".
  int Quit() {
    EXPECT_EQ(Command("quit"), "ok");
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::vector<std::string> StderrLines() const {
    std::ifstream in(stderr_path_);
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int to_host_ = -1, from_host_ = -1;
  std::string buffer_;
  std::string stderr_path_;
};

inline std::string LaunchCommand(int threads, int count, int pace_us, int domain, uint32_t cbid, uint32_t nested,
                          const std::string& name, uint64_t duration_ns) {
  std::ostringstream s;
  s << "launch " << threads << " " << count << " " << pace_us << " " << domain << " " << cbid << " " << nested << " "
    << name << " " << duration_ns;
  return s.str();
}

// What the test agent has received, across connections.
inline bool WaitForNumber(HostProcess& host, const std::string& command, uint64_t want) {
  for (int i = 0; i < 500; ++i) {
    if (host.Number(command) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class Agent {
 public:
  explicit Agent(const std::string& socket_path, const ws_cuda_config& config) {
    CudaSocketServerOptions options;
    options.socket_path = socket_path;
    options.config = config;
    auto server = CudaSocketServer::Start(options, [this](CudaProcessEvent&& e) { OnEvent(std::move(e)); });
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (server.ok()) server_ = std::move(server).value();
  }

  template <typename Pred>
  bool WaitFor(Pred pred, int seconds = 10) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return pred(); });
  }

  // Guarded by mu_; tests read them inside WaitFor's predicate or after it.
  std::mutex mu_;
  std::condition_variable cv_;
  int connected = 0, disconnected = 0;
  ws_cuda_hello hello{};
  int32_t peer_pid = 0;
  std::vector<CudaKernel> kernels;
  std::vector<ws_cuda_memop> memops;
  std::vector<ws_cuda_launch> launches;
  std::vector<ws_cuda_stats> stats;
  std::vector<ws_cuda_window> windows;
  std::vector<size_t> kernels_at_window;  // kernels.size() when each window closed
  std::vector<CudaPcSample> pc_samples;
  std::vector<CudaCubin> cubins;
  std::unique_ptr<CudaSocketServer> server_;

  // Records the library left out of its windows (launched before one
  // opened or after it closed), from the WINDOW messages. Guarded by mu_:
  // call it inside WaitFor's predicate or with mu_ held.
  uint64_t KernelsOutsideWindows() const {
    uint64_t n = 0;
    for (const ws_cuda_window& w : windows) n += w.kernels_before_window;
    return n;
  }

  ws_cuda_stats LastStats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats.empty() ? ws_cuda_stats{} : stats.back();
  }

 private:
  void OnEvent(CudaProcessEvent&& e) {
    std::lock_guard<std::mutex> lock(mu_);
    switch (e.kind) {
      case CudaProcessEvent::Kind::kConnected:
        connected++;
        hello = e.hello;
        peer_pid = e.pid;
        break;
      case CudaProcessEvent::Kind::kDisconnected:
        disconnected++;
        break;
      case CudaProcessEvent::Kind::kRecords:
        for (auto& k : e.kernels) kernels.push_back(std::move(k));
        memops.insert(memops.end(), e.memops.begin(), e.memops.end());
        launches.insert(launches.end(), e.launches.begin(), e.launches.end());
        for (auto& p : e.pc_samples) pc_samples.push_back(std::move(p));
        if (e.cubin) cubins.push_back(*e.cubin);
        if (e.stats) stats.push_back(*e.stats);
        if (e.window) {
          windows.push_back(*e.window);
          kernels_at_window.push_back(kernels.size());
        }
        break;
    }
    cv_.notify_all();
  }
};

inline ws_cuda_config FastConfig() {
  ws_cuda_config c{};
  c.mode = WS_CUDA_MODE_EXACT;
  c.flags = WS_CUDA_CONFIG_MEMCPY;
  c.launch_samples_per_sec = 100;
  c.launch_sample_burst = 20;
  c.flush_interval_ms = 50;
  c.stats_interval_ms = 50;
  return c;
}

// Windows that leave CUPTI between them (what `--gpu-time-mode duty` sends).
inline ws_cuda_config LeavingWindows(uint32_t on_ms, uint32_t period_ms) {
  ws_cuda_config c = FastConfig();
  c.mode = WS_CUDA_MODE_DUTY;
  c.flags |= WS_CUDA_CONFIG_DUTY_DETACH;
  c.duty_on_ms = on_ms;
  c.duty_period_ms = period_ms;
  return c;
}

inline std::vector<std::string> FakeEnv(const std::string& socket_path) {
  return {"WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH, "WARPSCOPE_AGENT_SOCKET=" + socket_path,
          "WARPSCOPE_CUDA_RETRY_MS=100"};
}

}  // namespace warpscope::cuda_injection_test
