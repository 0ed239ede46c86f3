// A minute of hostile CUDA-socket traffic against the real agent, from an
// unprivileged user (the socket accepts every local user): record streams
// with times, durations, clock pairs and windows at and past every bound the
// agent checks (agent/collectors/gpu_time/socket/cuda_record_bounds.h), name
// ids defined and not, garbage and reconnects, on several connections at
// once. Meanwhile a root process sends good kernels. The agent's RSS must stay
// flat, its uploads to a real server on loopback must go on, the good
// process's kernels must be stored, and SIGTERM must stop it within 10 s.
// Before the record bounds, one 2^62 ns kernel grew the agent by ~200 MB/s
// and stopped its uploads (it ignored SIGTERM).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "agent/collectors/gpu_time/socket/cuda_wire_decoder.h"
#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kToken[] = "cuda-fuzz-token";
constexpr uid_t kNobody = 65534;
constexpr int kFuzzSeconds = 60;
constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kDay = 86'400 * kSec;
constexpr uint64_t kCuptiBase = uint64_t{1} << 60;  // the fuzzed CUPTI clock: monotonic + this

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kSec + static_cast<uint64_t>(ts.tv_nsec);
}

int ConnectTo(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendMessage(int fd, const std::vector<uint8_t>& m) {
  return send(fd, m.data(), m.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(m.size());
}

std::vector<uint8_t> Hello(const ws_cuda_clock_pair& clock) {
  ws_cuda_hello hello{};
  hello.pid = static_cast<uint32_t>(getpid());
  hello.connection_seq = 1;
  hello.clock = clock;
  return EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1);
}

std::vector<uint8_t> Names(uint32_t first_id, int count, std::mt19937_64& rng) {
  std::vector<uint8_t> body;
  for (int i = 0; i < count; ++i) {
    std::string name = "_Z" + std::to_string(rng() % 1000) + "fuzz";
    name.resize(8 + rng() % 200, 'k');
    ws_cuda_name_entry e{first_id + static_cast<uint32_t>(i), static_cast<uint16_t>(name.size()), 0};
    const size_t at = body.size();
    body.resize(at + sizeof(e) + ((name.size() + 7) & ~size_t{7}));
    std::memcpy(body.data() + at, &e, sizeof(e));
    std::memcpy(body.data() + at + sizeof(e), name.data(), name.size());
  }
  // One body of `count` entries: encoded as one record, then the count set.
  std::vector<uint8_t> m = EncodeCudaMessage(WS_CUDA_MSG_NAMES, body.data(), body.size(), 1);
  const uint32_t n = static_cast<uint32_t>(count);
  std::memcpy(m.data() + offsetof(ws_cuda_msg_header, count), &n, sizeof(n));
  return m;
}

// The unprivileged user's side: runs until `deadline` (monotonic).
[[noreturn]] void FuzzAsNobody(const std::string& socket_path, uint64_t deadline, uint64_t seed, int alive_fd) {
  const int null = open("/dev/null", O_RDWR);
  dup2(null, 1);
  dup2(null, 2);
  if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
  std::mt19937_64 rng(seed);
  // Values at and past every bound.
  const std::vector<uint64_t> durations = {0, 1, 1000, kDay - 1, kDay, kDay + 1, 2 * kDay, 30 * kDay,
                                           uint64_t{1} << 62, ~uint64_t{0}};
  const std::vector<int64_t> offsets = {0,
                                        static_cast<int64_t>(9 * 60 * kSec),
                                        -static_cast<int64_t>(9 * 60 * kSec),
                                        static_cast<int64_t>(11 * 60 * kSec),
                                        -static_cast<int64_t>(11 * 60 * kSec),
                                        static_cast<int64_t>(100 * 365 * kDay),
                                        -static_cast<int64_t>(100 * 365 * kDay)};
  const std::vector<int64_t> clock_steps = {0, 1'000'000, 999'000'000, 1'001'000'000, -1'001'000'000,
                                            static_cast<int64_t>(365 * kDay), -static_cast<int64_t>(100 * 365 * kDay)};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  struct Conn {
    int fd = -1;
    uint32_t names = 0;
    int64_t clock_offset = 0;  // the CUPTI clock's offset as this connection tells it
  };
  std::vector<Conn> conns(8);
  while (MonotonicNs() < deadline) {
    pollfd alive{alive_fd, POLLIN, 0};
    if (poll(&alive, 1, 0) != 0) _exit(0);  // the test ended
    Conn& c = conns[rng() % conns.size()];
    if (c.fd < 0 || rng() % 500 == 0) {
      if (c.fd >= 0) close(c.fd);
      c = Conn{};
      c.fd = ConnectTo(socket_path);
      if (c.fd < 0) {
        usleep(10'000);
        continue;
      }
      const uint64_t now = MonotonicNs();
      c.clock_offset = rng() % 4 == 0 ? pick(offsets) : 0;
      SendMessage(c.fd, Hello({now, kCuptiBase + now + static_cast<uint64_t>(c.clock_offset), now + 100}));
      char config[256];
      pollfd p{c.fd, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0) (void)!recv(c.fd, config, sizeof(config), 0);
      SendMessage(c.fd, Names(1, 16, rng));
      c.names = 16;
    }
    const uint64_t now = MonotonicNs();
    const uint64_t cupti_now = kCuptiBase + now + static_cast<uint64_t>(c.clock_offset);
    bool ok = true;
    switch (rng() % 9) {
      case 0:
      case 1:
      case 2: {  // kernels
        std::vector<ws_cuda_kernel> ks(1 + rng() % 200);
        for (ws_cuda_kernel& k : ks) {
          k = ws_cuda_kernel{};
          k.start_ns = cupti_now + static_cast<uint64_t>(rng() % 3 == 0 ? pick(offsets) : 0) - rng() % kSec;
          const uint64_t d = rng() % 2 ? pick(durations) : rng() % 100'000;
          k.end_ns = rng() % 50 == 0 ? k.start_ns - 1 : k.start_ns + d;
          k.correlation_id = static_cast<uint32_t>(rng());
          k.name_id = static_cast<uint32_t>(rng() % (c.names + 1));
          k.device_id = static_cast<uint32_t>(rng() % 3 == 0 ? rng() : rng() % 4);
          k.stream_id = static_cast<uint32_t>(rng() % 8);
          k.flags = rng() % 20 == 0 ? WS_CUDA_RECORD_FLAG_NO_TIME : 0;
          k.launch_host_ns = rng() % 2 ? now + static_cast<uint64_t>(rng() % 3 == 0 ? pick(offsets) : 0) : 0;
          k.launch_duration_ns = static_cast<uint32_t>(rng());
          k.launch_kind = static_cast<uint16_t>(rng() % 3);
        }
        ok = SendMessage(c.fd, EncodeCudaMessage(WS_CUDA_MSG_KERNELS, ks.data(), sizeof(ws_cuda_kernel),
                                                 static_cast<uint32_t>(ks.size())));
        break;
      }
      case 3: {  // a clock pair: steps and brackets at and past the bounds
        ws_cuda_clock_pair p{now, 0, now + (rng() % 10 == 0 ? 2 * kSec : 100)};
        c.clock_offset += rng() % 2 ? pick(clock_steps) : 0;
        p.cupti_ns = kCuptiBase + now + static_cast<uint64_t>(c.clock_offset);
        if (rng() % 10 == 0) p.host_before_ns += static_cast<uint64_t>(pick(offsets));
        ok = SendMessage(c.fd, EncodeCudaMessage(WS_CUDA_MSG_CLOCK, &p, sizeof(p), 1));
        break;
      }
      case 4: {  // a window
        ws_cuda_window w{};
        w.on_start_ns = now + static_cast<uint64_t>(rng() % 3 == 0 ? pick(offsets) : 0) - 200'000'000;
        w.on_end_ns = w.on_start_ns + (rng() % 2 ? 200'000'000 : pick(durations));
        w.covers_until_ns = w.on_end_ns + (rng() % 2 ? 10 * kSec : pick(durations));  // in order, or a protocol error
        ok = SendMessage(c.fd, EncodeCudaMessage(WS_CUDA_MSG_WINDOW, &w, sizeof(w), 1));
        break;
      }
      case 5: {  // copies and waits
        ws_cuda_memop m{};
        m.start_ns = cupti_now + static_cast<uint64_t>(rng() % 3 == 0 ? pick(offsets) : 0);
        m.end_ns = m.start_ns + pick(durations);
        m.op = WS_CUDA_MEMOP_MEMCPY;
        m.kind = 1;
        m.bytes = rng();
        ok = SendMessage(c.fd, EncodeCudaMessage(WS_CUDA_MSG_MEMOPS, &m, sizeof(m), 1));
        ws_cuda_wait w{};
        w.start_ns = m.start_ns;
        w.end_ns = m.end_ns;
        w.api = WS_CUDA_WAIT_DEVICE_SYNCHRONIZE;
        ok = ok && SendMessage(c.fd, EncodeCudaMessage(WS_CUDA_MSG_WAITS, &w, sizeof(w), 1));
        break;
      }
      case 6: {  // launches
        std::vector<ws_cuda_launch> ls(1 + rng() % 50);
        for (ws_cuda_launch& l : ls) {
          l = ws_cuda_launch{};
          l.host_time_ns = now + static_cast<uint64_t>(rng() % 3 == 0 ? pick(offsets) : 0);
          l.correlation_id = static_cast<uint32_t>(rng());
          l.launch_kind = WS_CUDA_LAUNCH_KERNEL;
        }
        ok = SendMessage(c.fd, EncodeCudaMessage(WS_CUDA_MSG_LAUNCHES, ls.data(), sizeof(ws_cuda_launch),
                                                 static_cast<uint32_t>(ls.size())));
        break;
      }
      case 7:  // more names
        if (c.names < 4000) {
          ok = SendMessage(c.fd, Names(c.names + 1, 8, rng));
          c.names += 8;
        }
        break;
      case 8: {  // garbage: a protocol error closes the connection
        if (rng() % 200 == 0) {
          std::vector<uint8_t> junk(16 + rng() % 512);
          for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
          ok = SendMessage(c.fd, junk);
        }
        break;
      }
    }
    if (!ok) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        usleep(1000);  // the agent reads at its pace
      } else {
        close(c.fd);
        c.fd = -1;
      }
    }
  }
  _exit(0);
}

// The state letter of /proc/PID/stat ('Z' once exited and not yet reaped).
char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

TEST(CudaSocketFuzz, AMinuteOfHostileRecordsLeavesTheAgentFlatUploadingAndStoppable) {
  if (geteuid() != 0) GTEST_SKIP() << "the agent needs root";
  const std::string dir = MakeTempDir();
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);  // the unprivileged user reaches the socket
  auto server = ServerProcess::Start(WS_SERVER_BIN, dir + "/data", {"--token", kToken});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string socket_path = dir + "/cuda/cuda.sock";
  const int metrics_port = FreePort();
  AgentProcess agent(WS_AGENT_BIN,
                     {"--server", (*server)->url(), "--token", kToken, "--upload-interval", "1s", "--state-dir",
                      dir + "/agent", "--node-name", "fuzz-node", "--no-gpu-metrics", "--cuda-socket", socket_path,
                      "--gpu-time-mode", "exact", "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)},
                     dir + "/agent.log");
  ASSERT_TRUE(agent.started());
  struct stat st {};
  for (int i = 0; i < 400 && stat(socket_path.c_str(), &st) != 0; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_EQ(stat(socket_path.c_str(), &st), 0) << agent.Log();
  auto counter = [&](const std::string& event) -> int64_t {
    return AgentEventCounter(metrics_port, event);
  };

  const uint64_t seed = std::random_device{}();
  std::cerr << "fuzz seed " << seed << "\n";
  int alive[2];
  ASSERT_EQ(pipe2(alive, O_CLOEXEC), 0);
  const char* seconds = getenv("WS_CUDA_FUZZ_SECONDS");  // shorter by hand; CI runs the minute
  const uint64_t deadline = MonotonicNs() + (seconds != nullptr ? std::stoull(seconds) : kFuzzSeconds) * kSec;
  std::vector<pid_t> fuzzers;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(alive[1]);
      FuzzAsNobody(socket_path, deadline, seed + static_cast<uint64_t>(i), alive[0]);
    }
    fuzzers.push_back(pid);
  }
  close(alive[0]);
  struct Reaper {
    std::vector<pid_t>* pids;
    int alive;
    ~Reaper() {
      close(alive);
      for (pid_t p : *pids) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
      }
    }
  } reaper{&fuzzers, alive[1]};

  // A root process beside them, with good kernels.
  const int good = ConnectTo(socket_path);
  ASSERT_GE(good, 0);
  uint64_t t = MonotonicNs();
  ASSERT_TRUE(SendMessage(good, Hello({t, kCuptiBase + t, t + 100})));
  std::vector<int64_t> rss;
  std::vector<int64_t> uploads;
  uint32_t correlation = 0;
  while (MonotonicNs() < deadline) {
    t = MonotonicNs();
    std::vector<ws_cuda_kernel> ks(20);
    for (ws_cuda_kernel& k : ks) {
      k = ws_cuda_kernel{};
      k.start_ns = kCuptiBase + t - 500'000 + correlation % 20 * 10'000;
      k.end_ns = k.start_ns + 5'000;
      k.correlation_id = ++correlation;
    }
    SendMessage(good, EncodeCudaMessage(WS_CUDA_MSG_KERNELS, ks.data(), sizeof(ws_cuda_kernel), 20));
    if (correlation % 100 == 0) {
      ws_cuda_clock_pair p{t, kCuptiBase + t, t + 100};
      SendMessage(good, EncodeCudaMessage(WS_CUDA_MSG_CLOCK, &p, sizeof(p), 1));
    }
    if (correlation % 1000 == 0) {
      rss.push_back(ProcStatusKb(agent.pid(), "VmRSS"));
      uploads.push_back(counter("upload_batches_sent"));
    }
    if (correlation % 100 == 0 && ProcStatusKb(agent.pid(), "VmRSS") > 2 * 1024 * 1024) {
      agent.Kill();  // a watchdog on a shared machine: the agent grew without bound
      FAIL() << "the agent passed 2 GB of RSS";
    }
    std::this_thread::sleep_for(100ms);
  }
  rss.push_back(ProcStatusKb(agent.pid(), "VmRSS"));
  uploads.push_back(counter("upload_batches_sent"));
  close(good);
  std::string trace;
  for (size_t i = 0; i < rss.size(); ++i) {
    trace += std::to_string(rss[i] / 1024) + " MB/" + std::to_string(uploads[i]) + " ";
  }
  std::cerr << "agent RSS / batches sent every ~5 s: " << trace << "\n";
  ASSERT_GE(rss.size(), 8u) << trace;
  // Flat: the second half's peak is at most 64 MB above the first half's
  // (the bounded tables fill early; batches in flight come and go), and
  // never past 400 MB.
  int64_t first = 0, second = 0;
  for (size_t i = 0; i < rss.size(); ++i) {
    int64_t& half = i < rss.size() / 2 ? first : second;
    half = std::max(half, rss[i]);
  }
  EXPECT_LE(second, first + 64 * 1024) << trace;
  EXPECT_LE(second, 400 * 1024) << trace;
  // Uploads went on: a batch acknowledged in every ~5 s stretch.
  for (size_t i = 1; i < uploads.size(); ++i) EXPECT_GT(uploads[i], uploads[i - 1]) << trace;
  EXPECT_GT(counter("cuda_records_rejected_kernels"), 0);
  EXPECT_GT(counter("cuda_records_rejected_clock_pairs"), 0);
  std::cerr << "rejected kernels " << counter("cuda_records_rejected_kernels") << ", clock pairs "
            << counter("cuda_records_rejected_clock_pairs") << ", windows " << counter("cuda_records_rejected_windows")
            << ", analysis spans capped " << counter("gpu_analysis_spans_capped") << ", protocol errors "
            << counter("cuda_protocol_errors") << "\n";

  // SIGTERM within the grace period; past it the agent is killed (the test
  // fails, and never hangs on an agent that ignores it).
  const auto stop_start = std::chrono::steady_clock::now();
  kill(agent.pid(), SIGTERM);
  bool exited = false;
  while (!exited && std::chrono::steady_clock::now() - stop_start < 10s) {
    exited = ProcessState(agent.pid()) == 'Z';  // not reaped yet: Stop() does
    if (!exited) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(exited) << "SIGTERM did not stop the agent within 10 s";
  if (exited) {
    EXPECT_EQ(agent.Stop(), 0) << agent.Log().substr(0, 4000);
  } else {
    agent.Kill();
  }
  // The root process's kernels reached the server, the fuzzers' bad ones did not stop them.
  const nlohmann::json kernels =
      GetApiJson((*server)->port(),
                 "/api/v1/gpu/kernels?from=now-10m&to=now&selector=" +
                     std::string("%7Bpid%3D%22") + std::to_string(getpid()) + "%22%7D",
                 kToken);
  EXPECT_GT(kernels.value("activities", 0), 0) << kernels.dump().substr(0, 2000);
  server->reset();
  RunProcess({"rm", "-rf", dir});
}

}  // namespace
}  // namespace warpscope::testing
