#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/cuda_test_dirs.h"
#include "cuda/wire_outbox.h"

namespace warpscope {
namespace {

// Collects the server's events; the test thread waits on it.
class EventLog {
 public:
  CudaSocketServer::Consumer consumer() {
    return [this](CudaProcessEvent&& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(e));
      cv_.notify_all();
    };
  }
  // Waits until `pred(events)` holds; false after 5 s.
  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return pred(events_); });
  }
  std::vector<CudaProcessEvent> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(events_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CudaProcessEvent> events_;
};

size_t Count(const std::vector<CudaProcessEvent>& events, CudaProcessEvent::Kind kind) {
  size_t n = 0;
  for (const auto& e : events) n += e.kind == kind;
  return n;
}


CudaSocketServerOptions OptionsFor(const std::string& path) {
  CudaSocketServerOptions o;
  o.socket_path = path;
  o.max_connections = 8;
  return o;
}

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string TempSocketPath() {
  return warpscope::testing::CudaTestDirs::Make() + "/sub/cuda.sock";  // the server creates "sub"
}

int Connect(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << strerror(errno);
  return fd;
}

void Send(int fd, const std::vector<uint8_t>& bytes) {
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

std::vector<uint8_t> Hello() {
  ws_cuda_hello hello{};
  hello.pid = static_cast<uint32_t>(getpid());
  hello.connection_seq = 1;
  return EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1);
}

// Reads one message with a timeout; empty on EOF or timeout.
std::vector<uint8_t> Receive(int fd, int timeout_ms = 5000) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return {};
  std::vector<uint8_t> buffer(WS_CUDA_WIRE_MAX_MESSAGE);
  const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
  if (n <= 0) return {};
  buffer.resize(static_cast<size_t>(n));
  return buffer;
}

bool PeerClosed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 5000) <= 0) return false;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

TEST(CudaSocketServer, HandshakeNamesAndKernels) {
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = TempSocketPath();
  options.config.mode = WS_CUDA_MODE_DUTY;
  options.config.duty_on_ms = 123;
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  const int fd = Connect(options.socket_path);
  Send(fd, Hello());
  StatusOr<CudaWireMessage> config = [&] {
    const std::vector<uint8_t> reply = Receive(fd);
    return DecodeCudaMessage(reply.data(), reply.size());
  }();
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->type, WS_CUDA_MSG_CONFIG);
  EXPECT_EQ(config->config.duty_on_ms, 123u);

  cuda::WireOutbox outbox;
  outbox.Reset({});
  ws_cuda_kernel k{};
  k.correlation_id = 5;
  k.start_ns = 10;
  k.end_ns = 30;
  outbox.AddKernel(k, "_Z4gemmv");
  k.correlation_id = 6;
  outbox.AddKernel(k, "_Z4gemmv");
  outbox.CloseBatches();
  for (const cuda::WireMessage& m : outbox.TakeAllForTest()) Send(fd, m.bytes);

  ASSERT_TRUE(log.WaitFor([](const auto& events) {
    for (const auto& e : events) {
      if (e.kind == CudaProcessEvent::Kind::kRecords && !e.kernels.empty()) return true;
    }
    return false;
  }));
  std::vector<CudaProcessEvent> events = log.Take();
  ASSERT_EQ(events[0].kind, CudaProcessEvent::Kind::kConnected);
  EXPECT_EQ(events[0].pid, getpid());  // SO_PEERCRED
  const CudaProcessEvent& batch = events.back();
  ASSERT_EQ(batch.kernels.size(), 2u);
  EXPECT_EQ(batch.kernels[0].name->text.system_name, "_Z4gemmv");
  EXPECT_EQ(batch.kernels[0].name.get(), batch.kernels[1].name.get());  // one string per name
  EXPECT_EQ(batch.kernels[1].record.correlation_id, 6u);

  // A new config reaches connected processes.
  ws_cuda_config next{};
  next.mode = WS_CUDA_MODE_EXACT;
  (*server)->PostConfig(next);
  const std::vector<uint8_t> reply = Receive(fd);
  StatusOr<CudaWireMessage> posted = DecodeCudaMessage(reply.data(), reply.size());
  ASSERT_TRUE(posted.ok());
  EXPECT_EQ(posted->config.mode, static_cast<uint32_t>(WS_CUDA_MODE_EXACT));

  close(fd);
  ASSERT_TRUE(log.WaitFor([](const auto& e) { return Count(e, CudaProcessEvent::Kind::kDisconnected) == 1; }));
  EXPECT_EQ((*server)->counters().protocol_errors, 0u);
}

// Cubins come in chunks: a whole one is handed over once; one with a chunk
// missing (the library's outbox dropped it) is skipped and counted, and so
// is one that would take the agent past its in-flight bound; a PC sample's
// names resolve through the connection's dictionary.
TEST(CudaSocketServer, CubinsAreReassembledAndGapsOrOversizeAreSkipped) {
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = TempSocketPath();
  options.max_cubin_bytes_in_flight = 100000;
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int fd = Connect(options.socket_path);
  Send(fd, Hello());
  ASSERT_FALSE(Receive(fd).empty());

  cuda::WireOutbox outbox;
  outbox.Reset({});
  std::string bytes(30000, 'x');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  auto chunk = [&](uint64_t crc, uint64_t total, uint64_t offset, uint32_t length) {
    ws_cuda_cubin_chunk c{crc, total, offset, length, offset + length == total ? WS_CUDA_CUBIN_FLAG_LAST : 0u};
    ASSERT_TRUE(outbox.AddCubinChunk(c, reinterpret_cast<const uint8_t*>(bytes.data()) + offset));
  };
  chunk(1, 30000, 0, 10000);  // cubin 1: its middle chunk missing
  chunk(1, 30000, 20000, 10000);
  chunk(2, 30000, 0, 15000);  // cubin 2: whole
  chunk(2, 30000, 15000, 15000);
  chunk(3, 200000, 0, 100);   // cubin 3: past the bound
  ws_cuda_pc_sample sample{2, 0x40, static_cast<uint64_t>(MonotonicNs()), 0, 0, 6, 0};
  ASSERT_TRUE(outbox.AddPcSample(sample, "_Z4gemmv", "smsp__pcsamp_warps_issue_stalled_barrier"));
  outbox.CloseBatches();
  for (const cuda::WireMessage& m : outbox.TakeAllForTest()) Send(fd, m.bytes);

  ASSERT_TRUE(log.WaitFor([](const auto& events) {
    for (const auto& e : events) {
      if (!e.pc_samples.empty()) return true;
    }
    return false;
  }));
  std::vector<CudaCubin> cubins;
  std::vector<CudaPcSample> samples;
  for (CudaProcessEvent& e : log.Take()) {
    if (e.cubin) cubins.push_back(*e.cubin);
    for (auto& p : e.pc_samples) samples.push_back(p);
  }
  ASSERT_EQ(cubins.size(), 1u);
  EXPECT_EQ(cubins[0].crc, 2u);
  EXPECT_EQ(*cubins[0].bytes, bytes);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].function->text.system_name, "_Z4gemmv");
  EXPECT_EQ(samples[0].stall_reason->text.system_name, "smsp__pcsamp_warps_issue_stalled_barrier");
  EXPECT_EQ(samples[0].record.samples, 6u);
  const CudaSocketServerCounters counters = (*server)->counters();
  EXPECT_EQ(counters.cubins_received, 1u);
  EXPECT_EQ(counters.cubins_skipped, 2u);
  EXPECT_EQ(counters.protocol_errors, 0u);
  close(fd);
}

TEST(CudaSocketServer, ClosesConnectionsThatBreakTheProtocol) {
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = TempSocketPath();
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  // Records before HELLO.
  ws_cuda_stats stats{};
  int fd = Connect(options.socket_path);
  Send(fd, EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, sizeof(stats), 1));
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);

  // A kernel whose name id was never defined.
  fd = Connect(options.socket_path);
  Send(fd, Hello());
  ASSERT_FALSE(Receive(fd).empty());
  ws_cuda_kernel k{};
  k.name_id = 9;
  Send(fd, EncodeCudaMessage(WS_CUDA_MSG_KERNELS, &k, sizeof(k), 1));
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);

  // Garbage, and a truncated message.
  fd = Connect(options.socket_path);
  Send(fd, std::vector<uint8_t>(100, 0xab));
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);
  fd = Connect(options.socket_path);
  std::vector<uint8_t> hello = Hello();
  hello.resize(hello.size() - 4);
  Send(fd, hello);
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);

  // A datagram larger than any message.
  fd = Connect(options.socket_path);
  Send(fd, Hello());
  ASSERT_FALSE(Receive(fd).empty());
  int size = 1 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  Send(fd, std::vector<uint8_t>(WS_CUDA_WIRE_MAX_MESSAGE + 100, 0));
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);

  // A second HELLO.
  fd = Connect(options.socket_path);
  Send(fd, Hello());
  ASSERT_FALSE(Receive(fd).empty());
  Send(fd, Hello());
  EXPECT_TRUE(PeerClosed(fd));
  close(fd);

  EXPECT_EQ((*server)->counters().protocol_errors, 6u);
  // Only connections that said HELLO are announced, and all of them are
  // closed again.
  ASSERT_TRUE(log.WaitFor([](const auto& e) { return Count(e, CudaProcessEvent::Kind::kDisconnected) == 3; }));
  EXPECT_EQ(Count(log.Take(), CudaProcessEvent::Kind::kConnected), 3u);
}

TEST(CudaSocketServer, ServesManyProcessesAtOnce) {
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = TempSocketPath();
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    fds.push_back(Connect(options.socket_path));
    Send(fds.back(), Hello());
  }
  for (int fd : fds) ASSERT_FALSE(Receive(fd).empty());
  for (int fd : fds) {
    const uint64_t now = static_cast<uint64_t>(MonotonicNs());
    ws_cuda_clock_pair clock{now, now + 2, now + 3};  // pairs are checked against now
    Send(fd, EncodeCudaMessage(WS_CUDA_MSG_CLOCK, &clock, sizeof(clock), 1));
  }
  ASSERT_TRUE(log.WaitFor([](const auto& events) {
    size_t clocks = 0;
    for (const auto& e : events) clocks += e.clock.has_value();
    return clocks == 20;
  }));
  for (int fd : fds) close(fd);
  ASSERT_TRUE(log.WaitFor([](const auto& e) { return Count(e, CudaProcessEvent::Kind::kDisconnected) == 20; }));
  EXPECT_EQ((*server)->counters().connections_accepted, 20u);
  EXPECT_EQ((*server)->counters().connections_open, 0u);
}

TEST(CudaSocketServer, ReplacesAStaleSocketButNotOtherFiles) {
  const std::string path = TempSocketPath();
  {
    auto first = CudaSocketServer::Start(OptionsFor(path), [](CudaProcessEvent&&) {});
    ASSERT_TRUE(first.ok());
  }
  auto second = CudaSocketServer::Start(OptionsFor(path), [](CudaProcessEvent&&) {});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  second->reset();
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_FALSE(CudaSocketServer::Start(OptionsFor(path), [](CudaProcessEvent&&) {}).ok());
}

// Whoever can write to the socket's directory (or rename it, through a parent)
// can put their own socket in the agent's place: CUDA applications would talk
// to them. Such directories are refused, with the reason.
TEST(CudaSocketServer, RefusesSocketDirectoriesOthersCouldReplaceTheSocketIn) {
  ASSERT_EQ(geteuid(), 0u) << "needs root to give a directory to another user";
  const std::string base = warpscope::testing::CudaTestDirs::Make();
  ASSERT_EQ(chmod(base.c_str(), 0755), 0);
  auto start = [](const std::string& dir) {
    return CudaSocketServer::Start(OptionsFor(dir + "/cuda.sock"), [](CudaProcessEvent&&) {});
  };

  const std::string theirs = base + "/theirs";
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(chown(theirs.c_str(), 4242, 4242), 0);
  auto refused = start(theirs);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("owned by uid 4242"), std::string::npos) << refused.status().message();

  for (mode_t mode : {0777, 0775, 0757, 01777}) {
    const std::string open = base + "/open" + std::to_string(mode);
    ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
    ASSERT_EQ(chmod(open.c_str(), mode), 0);
    auto r = start(open);
    ASSERT_FALSE(r.ok()) << std::oct << mode;
    EXPECT_NE(r.status().message().find("writable"), std::string::npos) << r.status().message();
    struct stat st {};
    EXPECT_NE(lstat((open + "/cuda.sock").c_str(), &st), 0) << "nothing was created there";
  }

  // A root-owned directory inside one another user owns: that user can
  // rename it away and put their own in its place.
  const std::string nested = theirs + "/run";
  ASSERT_EQ(mkdir(nested.c_str(), 0755), 0);
  auto under = start(nested);
  ASSERT_FALSE(under.ok());
  EXPECT_NE(under.status().message().find(theirs), std::string::npos) << under.status().message();

  // The agent's own directory is fine, also behind a symlink it controls; a
  // sticky, world-writable parent (/tmp) cannot take a root-owned directory away.
  const std::string ours = base + "/ours";
  ASSERT_EQ(mkdir(ours.c_str(), 0755), 0);
  ASSERT_EQ(symlink(ours.c_str(), (base + "/link").c_str()), 0);
  auto ok = start(base + "/link");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  struct stat st {};
  ASSERT_EQ(lstat((ours + "/cuda.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

// The socket is made connectable by every user (0666) without a chmod by
// path after bind (which follows a symlink put there in between), and the
// process's umask is left as it was.
TEST(CudaSocketServer, SocketIsConnectableByEveryoneWhateverTheUmask) {
  const mode_t old = umask(077);
  const std::string path = TempSocketPath();
  auto server = CudaSocketServer::Start(OptionsFor(path), [](CudaProcessEvent&&) {});
  const mode_t during = umask(old);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ(during, 077u) << "the process umask is untouched";
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  struct stat dir {};
  ASSERT_EQ(lstat(path.substr(0, path.rfind('/')).c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0755u) << "the directory the server creates";
}

// What a child running as another user saw: how many of its connections got
// the CONFIG answer (were served rather than closed).
struct ChildConnections {
  pid_t pid = -1;
  int result_fd = -1;  // the child writes its count here
  int release_fd = -1; // closing it lets the child exit
};

// Forks a child that becomes `uid`, opens `count` connections one after the
// other (HELLO, then waits for CONFIG), reports how many were served and
// holds them until released. No gtest in the child: exit codes only.
// With `close_each`, each connection is closed once answered (a client that
// connects in a loop).
ChildConnections ConnectAsUser(const std::string& path, uid_t uid, int count, bool close_each = false) {
  int result[2], release[2];
  EXPECT_EQ(pipe(result), 0);
  EXPECT_EQ(pipe(release), 0);
  const std::vector<uint8_t> hello = Hello();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only its own pipe ends: an earlier child's release end inherited here
    // would keep that child waiting.
    for (int fd = 3; fd < 4096; ++fd) {
      if (fd != result[1] && fd != release[0]) close(fd);
    }
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(10);
    int served = 0;
    std::vector<int> fds;
    for (int i = 0; i < count; ++i) {
      const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strcpy(addr.sun_path, path.c_str());
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) _exit(11);
      (void)!send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
      pollfd p{fd, POLLIN, 0};
      uint8_t buffer[512];
      if (poll(&p, 1, 5000) == 1 && recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT) > 0) ++served;
      if (close_each) {
        close(fd);
      } else {
        fds.push_back(fd);
      }
    }
    if (write(result[1], &served, sizeof(served)) != sizeof(served)) _exit(12);
    char c;
    (void)!read(release[0], &c, 1);  // EOF when the parent lets go
    _exit(0);
  }
  close(result[1]);
  close(release[0]);
  return {pid, result[0], release[1]};
}

int ServedCount(const ChildConnections& child) {
  int served = -1;
  pollfd p{child.result_fd, POLLIN, 0};
  if (poll(&p, 1, 60000) == 1 && read(child.result_fd, &served, sizeof(served)) != sizeof(served)) served = -1;
  return served;
}

void Release(const ChildConnections& child) {
  close(child.release_fd);
  close(child.result_fd);
  int status = 0;
  EXPECT_EQ(waitpid(child.pid, &status, 0), child.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// One local user cannot take every connection and lock other users'
// applications out: past max_connections_per_uid (64 by default) that user's
// connections are closed at once and counted; other users and root still
// get in.
TEST(CudaSocketServer, OneUserCannotHoldEveryConnection) {
  ASSERT_EQ(geteuid(), 0u) << "needs root to connect as other users";
  const std::string dir = warpscope::testing::CudaTestDirs::Make();
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);  // other users may reach the socket
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = dir + "/cuda.sock";
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  const ChildConnections greedy = ConnectAsUser(options.socket_path, 4243, 80);
  EXPECT_EQ(ServedCount(greedy), 64);
  const ChildConnections other = ConnectAsUser(options.socket_path, 4244, 3);
  EXPECT_EQ(ServedCount(other), 3) << "another user's applications still connect";
  const int fd = Connect(options.socket_path);
  Send(fd, Hello());
  EXPECT_FALSE(Receive(fd).empty()) << "and root's";
  const CudaSocketServerCounters c = (*server)->counters();
  EXPECT_EQ(c.connections_refused_per_uid, 16u);
  EXPECT_EQ(c.connections_open, 64u + 3u + 1u);

  // Connections closed make room again (the user's new connections come
  // back at --gpu-connections-per-uid's rate, 20 a second).
  Release(greedy);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const ChildConnections again = ConnectAsUser(options.socket_path, 4243, 2);
  EXPECT_EQ(ServedCount(again), 2);
  Release(again);
  Release(other);
  close(fd);
}

// A user who connects and hangs up in a loop (or breaks the protocol at
// once, every time) gets max_connections_per_uid connections at once and then
// 20 a second; the rest are closed at accept and counted. Each connection
// costs the agent a look at the process (/proc, its maps, the probe): the
// CUDA-socket fuzz made 415,000 of them in 25 s, and the agent stopped
// uploading and grew past 500 MB.
TEST(CudaSocketServer, OneUsersNewConnectionsAreRateBounded) {
  ASSERT_EQ(geteuid(), 0u) << "needs root to connect as other users";
  const std::string dir = warpscope::testing::CudaTestDirs::Make();
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = dir + "/cuda.sock";
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto start = std::chrono::steady_clock::now();
  const ChildConnections churn = ConnectAsUser(options.socket_path, 4246, 400, /*close_each=*/true);
  const int served = ServedCount(churn);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(served, 64);
  EXPECT_LE(served, 64 + static_cast<int>(20 * seconds) + 2) << seconds << " s";
  EXPECT_EQ((*server)->counters().connections_refused_rate, static_cast<uint64_t>(400 - served));
  // Root is not bounded so.
  for (int i = 0; i < 100; ++i) {
    const int fd = Connect(options.socket_path);
    Send(fd, Hello());
    EXPECT_FALSE(Receive(fd).empty());
    close(fd);
  }
  Release(churn);
}

// Kernel names are input from any local user. However many connections
// send names (each up to its own cap) and however often they reconnect with
// new ones, what the agent holds stays within one budget: names of closed
// connections are evicted to make room, names past the budget are refused
// (shown as a placeholder, counted) and the connection is kept.
TEST(CudaSocketServer, KernelNamesStayWithinOneBudgetAcrossConnectionsAndReconnects) {
  constexpr size_t kBudget = 4u << 20;
  constexpr size_t kPerConnection = 1u << 20;
  constexpr size_t kNameBytes = 15000;
  auto table = std::make_shared<KernelNameTable>(kBudget);
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = TempSocketPath();
  options.kernel_names = table;
  options.max_name_bytes_per_connection = kPerConnection;
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  // Names that fill one connection's cap: 66 x (15000 + 64) bytes. Each
  // costs the table 2 x 15000 + overhead (its text and display form).
  const uint32_t names_per_connection = kPerConnection / (kNameBytes + kDictionaryEntryBytes);
  const uint64_t names_that_fit = (kBudget - kBudget / 8) / (2 * kNameBytes + KernelNameTable::kNameOverheadBytes);
  auto send_names = [&](int fd, const std::string& prefix, uint32_t count) {
    for (uint32_t id = 1; id <= count; ++id) {
      std::string name = "_Z" + prefix + "_" + std::to_string(id);
      name.resize(kNameBytes, 'x');
      std::vector<uint8_t> body(sizeof(ws_cuda_name_entry) + name.size());
      ws_cuda_name_entry entry{};
      entry.name_id = id;
      entry.length = static_cast<uint16_t>(name.size());
      std::memcpy(body.data(), &entry, sizeof(entry));
      std::memcpy(body.data() + sizeof(entry), name.data(), name.size());
      Send(fd, EncodeCudaMessage(WS_CUDA_MSG_NAMES, body.data(), body.size(), 1));
      ws_cuda_kernel k{};
      k.name_id = id;
      k.correlation_id = id;
      Send(fd, EncodeCudaMessage(WS_CUDA_MSG_KERNELS, &k, sizeof(k), 1));
    }
  };
  // Waits for `expected` kernels; returns how many had their name kept.
  auto kept_of = [&](uint64_t expected) -> uint64_t {
    EXPECT_TRUE(log.WaitFor([&](const auto& events) {
      uint64_t kernels = 0;
      for (const auto& e : events) kernels += e.kernels.size();
      return kernels == expected;
    })) << "every kernel arrives, named or not";
    uint64_t kept = 0;
    for (CudaProcessEvent& e : log.Take()) {
      for (const CudaKernel& k : e.kernels) {
        if (k.name->key != KernelNameTable::kRefusedKey) {
          ++kept;
          EXPECT_EQ(k.name->text.system_name.size(), kNameBytes);
        }
      }
    }
    return kept;
  };
  auto close_all = [&](std::vector<int>* fds) {
    for (int fd : *fds) {
      pollfd p{fd, POLLIN, 0};
      EXPECT_EQ(poll(&p, 1, 0), 0) << "refusing names closes no connection";
      close(fd);
    }
    ASSERT_TRUE(log.WaitFor([&](const auto& e) { return Count(e, CudaProcessEvent::Kind::kDisconnected) == fds->size(); }));
    log.Take();
    fds->clear();
  };

  // Rounds of 8 connections, each sending its cap of new names, then all
  // reconnecting with others: each round asks for twice the budget.
  std::vector<int> fds;
  for (int round = 0; round < 3; ++round) {
    for (int conn = 0; conn < 8; ++conn) {
      fds.push_back(Connect(options.socket_path));
      Send(fds.back(), Hello());
      ASSERT_FALSE(Receive(fds.back()).empty());
      send_names(fds.back(), std::to_string(round) + "_" + std::to_string(conn), names_per_connection);
      EXPECT_LE(table->stats().bytes, kBudget);
    }
    const uint64_t kept = kept_of(8 * names_per_connection);
    EXPECT_GE(kept, names_that_fit - 1) << "round " << round << " still got a budget's worth";
    EXPECT_LE(kept, names_that_fit) << "round " << round;
    close_all(&fds);
  }
  KernelNameTableStats s = table->stats();
  EXPECT_GT(s.refused, 0u);
  EXPECT_LE(s.bytes, kBudget);

  // A process that exited leaves its names warm; the next ones evict them.
  fds.push_back(Connect(options.socket_path));
  Send(fds.back(), Hello());
  ASSERT_FALSE(Receive(fds.back()).empty());
  send_names(fds.back(), "exited", 10);
  EXPECT_EQ(kept_of(10), 10u);
  close_all(&fds);
  for (int conn = 0; conn < 4; ++conn) {
    fds.push_back(Connect(options.socket_path));
    Send(fds.back(), Hello());
    ASSERT_FALSE(Receive(fds.back()).empty());
    send_names(fds.back(), "late_" + std::to_string(conn), names_per_connection);
  }
  EXPECT_GE(kept_of(4 * names_per_connection), names_that_fit - 1);
  close_all(&fds);
  s = table->stats();
  EXPECT_GE(s.evicted, 10u) << "the exited process's names made room";
  EXPECT_LE(s.peak_bytes, kBudget) << "never past the budget";
  EXPECT_EQ((*server)->counters().protocol_errors, 0u);
  EXPECT_EQ((*server)->counters().closed_over_name_budget, 0u);
}

// When even a connection's name ids no longer fit (the budget holds only
// names in use and the ids of refused ones), the connection is closed: not a
// protocol error, counted on its own.
TEST(CudaSocketServer, AConnectionWhoseNameIdsNoLongerFitIsClosedAndCounted) {
  auto table = std::make_shared<KernelNameTable>(64u << 10);
  EventLog log;
  CudaSocketServerOptions options = OptionsFor(TempSocketPath());
  options.kernel_names = table;
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int fd = Connect(options.socket_path);
  Send(fd, Hello());
  ASSERT_FALSE(Receive(fd).empty());
  // 2,000 names of 104 bytes (entries are 8-byte aligned): the first ~180
  // are kept, the next ~120 are refused but their ids charged, then nothing fits.
  bool closed = false;
  for (uint32_t id = 1; id <= 2000 && !closed; ++id) {
    std::string name = "_Z" + std::to_string(id);
    name.resize(104, 'n');
    std::vector<uint8_t> body(sizeof(ws_cuda_name_entry) + name.size());
    ws_cuda_name_entry entry{};
    entry.name_id = id;
    entry.length = static_cast<uint16_t>(name.size());
    std::memcpy(body.data(), &entry, sizeof(entry));
    std::memcpy(body.data() + sizeof(entry), name.data(), name.size());
    const std::vector<uint8_t> message = EncodeCudaMessage(WS_CUDA_MSG_NAMES, body.data(), body.size(), 1);
    closed = send(fd, message.data(), message.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(message.size());
  }
  EXPECT_TRUE(closed || PeerClosed(fd));
  close(fd);
  ASSERT_TRUE(log.WaitFor([](const auto& e) { return Count(e, CudaProcessEvent::Kind::kDisconnected) == 1; }));
  for (const CudaProcessEvent& e : log.Take()) {
    if (e.kind == CudaProcessEvent::Kind::kDisconnected) {
      EXPECT_NE(e.reason.find("budget"), std::string::npos) << e.reason;
    }
  }
  const CudaSocketServerCounters c = (*server)->counters();
  EXPECT_EQ(c.closed_over_name_budget, 1u);
  EXPECT_EQ(c.protocol_errors, 0u);
  const KernelNameTableStats s = table->stats();
  EXPECT_GT(s.refused, 100u);
  EXPECT_LE(s.peak_bytes, 64u << 10);
  EXPECT_EQ(s.bytes, s.names * (2 * 104 + KernelNameTable::kNameOverheadBytes)) << "the ids' charges went back";
}

// Times and durations any local user may send: each record past a bound is
// dropped and counted alone, the rest of its message and the connection kept,
// and another process's records are untouched. Before the bounds, a 2^62 ns
// kernel or a clock pair 100 years off reached the collector, whose analysis
// then filled one map entry per second of the span.
TEST(CudaSocketServer, RecordsPastTheBoundsAreDroppedAndCountedOneByOne) {
  EventLog log;
  CudaSocketServerOptions options;
  options.socket_path = TempSocketPath();
  auto server = CudaSocketServer::Start(options, log.consumer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  constexpr uint64_t kDay = 86'400'000'000'000;
  constexpr uint64_t kCuptiBase = uint64_t{1} << 60;  // CUPTI's clock is any clock: offset from monotonic
  const uint64_t now = static_cast<uint64_t>(MonotonicNs());
  // A hostile connection, and a good one beside it.
  const int bad = Connect(options.socket_path);
  const int good = Connect(options.socket_path);
  for (int fd : {bad, good}) {
    ws_cuda_hello hello{};
    hello.pid = static_cast<uint32_t>(getpid());
    hello.connection_seq = 1;
    hello.clock = {now, kCuptiBase + 5, now + 10};
    Send(fd, EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1));
    ASSERT_FALSE(Receive(fd).empty());
  }
  auto kernel = [&](uint64_t start, uint64_t end, uint32_t correlation, uint32_t device = 0) {
    ws_cuda_kernel k{};
    k.start_ns = start;
    k.end_ns = end;
    k.correlation_id = correlation;
    k.device_id = device;
    return k;
  };
  const uint64_t t = kCuptiBase + 1'000'000;  // now, on the CUPTI clock
  const std::vector<ws_cuda_kernel> kernels = {
      kernel(t, t + 1000, 10, 127),                // the last ordinal the bound allows
      kernel(t, t + 1000, 11, 128),                // past it
      kernel(t, t + 1000, 12, UINT32_MAX),         // unknown: a kernel always knows its device
      kernel(t, t + 1000, 1),                      // fine
      kernel(t, t + (uint64_t{1} << 62), 2),       // 2^62 ns
      kernel(t, t + 30 * kDay, 3),                 // 30 days
      kernel(t, t + kDay + 1, 4),                  // a day and 1 ns: past the server's bound
      kernel(t, t + kDay, 5),                      // a day: the bound itself
      kernel(t + 100 * 365 * kDay, t + 100 * 365 * kDay + 1000, 6),  // 100 years on
      kernel(t + 1000, t, 7),                      // ends before it starts
      kernel(t - 11 * 60 * 1'000'000'000ull, t - 11 * 60 * 1'000'000'000ull + 5, 8),  // 11 minutes ago
      kernel(t + 2000, t + 3000, 9),               // fine
  };
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_KERNELS, kernels.data(), sizeof(ws_cuda_kernel),
                              static_cast<uint32_t>(kernels.size())));
  ws_cuda_memop memop{};
  memop.start_ns = t;
  memop.end_ns = t + 2 * kDay;
  memop.op = WS_CUDA_MEMOP_MEMCPY;
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_MEMOPS, &memop, sizeof(memop), 1));
  memop.end_ns = t + 10;
  memop.device_id = 1u << 31;  // a made-up device ordinal
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_MEMOPS, &memop, sizeof(memop), 1));
  ws_cuda_wait wait{};
  wait.start_ns = t;
  wait.end_ns = t + (uint64_t{1} << 62);
  wait.api = WS_CUDA_WAIT_DEVICE_SYNCHRONIZE;
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_WAITS, &wait, sizeof(wait), 1));
  // A CLOCK moving the CUPTI clock by -100 years, one stepping 2 s, one
  // bracket of 5 s: refused. A pair 1 s later moving it by 1 ms: taken.
  const uint64_t later = static_cast<uint64_t>(MonotonicNs());
  const std::vector<ws_cuda_clock_pair> pairs = {
      {later, kCuptiBase + 5 + (later - now) - 100 * 365 * kDay, later + 10},
      {later, kCuptiBase + 5 + (later - now) + 2'000'000'000, later + 10},
      {later, kCuptiBase + 5 + (later - now), later + 5'000'000'000},
      {later, kCuptiBase + 5 + (later - now) + 1'000'000, later + 10},
  };
  for (const ws_cuda_clock_pair& p : pairs) Send(bad, EncodeCudaMessage(WS_CUDA_MSG_CLOCK, &p, sizeof(p), 1));
  ws_cuda_window window{};
  window.on_start_ns = later;
  window.on_end_ns = later + 200'000'000;
  window.covers_until_ns = later + 365 * kDay;
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_WINDOW, &window, sizeof(window), 1));
  ws_cuda_launch launch{};
  launch.host_time_ns = later + 100 * 365 * kDay;
  launch.launch_kind = WS_CUDA_LAUNCH_KERNEL;
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_LAUNCHES, &launch, sizeof(launch), 1));
  // The good process's kernels, after all that.
  const std::vector<ws_cuda_kernel> fine = {kernel(t, t + 500, 1), kernel(t + 600, t + 700, 2)};
  Send(good, EncodeCudaMessage(WS_CUDA_MSG_KERNELS, fine.data(), sizeof(ws_cuda_kernel), 2));
  ws_cuda_stats stats{};
  Send(bad, EncodeCudaMessage(WS_CUDA_MSG_STATS, &stats, sizeof(stats), 1));  // the last, so all came before it

  ASSERT_TRUE(log.WaitFor([](const auto& events) {
    size_t stats = 0, good_kernels = 0;
    for (const auto& e : events) {
      stats += e.stats.has_value();
      good_kernels += e.connection_id == 2 ? e.kernels.size() : 0;
    }
    return stats == 1 && good_kernels == 2;
  })) << [&] {
    std::string out;
    for (const CudaProcessEvent& e : log.Take()) {
      out += std::to_string(e.connection_id) + ":" + std::to_string(static_cast<int>(e.kind)) + ":" + e.reason + " ";
    }
    return out;
  }();
  std::vector<uint32_t> kept;
  size_t memops = 0, waits = 0, launches = 0, windows = 0, clocks = 0, disconnected = 0;
  for (const CudaProcessEvent& e : log.Take()) {
    if (e.connection_id != 1) continue;
    for (const CudaKernel& k : e.kernels) kept.push_back(k.record.correlation_id);
    memops += e.memops.size();
    waits += e.waits.size();
    launches += e.launches.size();
    windows += e.window.has_value();
    clocks += e.clock.has_value();
    disconnected += e.kind == CudaProcessEvent::Kind::kDisconnected;
  }
  EXPECT_EQ(kept, (std::vector<uint32_t>{10, 1, 5, 9}));
  EXPECT_EQ(memops, 0u);
  EXPECT_EQ(waits, 0u);
  EXPECT_EQ(launches, 0u);
  EXPECT_EQ(windows, 0u);
  EXPECT_EQ(clocks, 1u) << "the 1 ms step is taken";
  EXPECT_EQ(disconnected, 0u) << "bad records are not a protocol error";
  const CudaSocketServerCounters c = (*server)->counters();
  EXPECT_EQ(c.rejected.kernels, 8u);
  EXPECT_EQ(c.rejected.memops, 2u);
  EXPECT_EQ(c.rejected.waits, 1u);
  EXPECT_EQ(c.rejected.clock_pairs, 3u);
  EXPECT_EQ(c.rejected.windows, 1u);
  EXPECT_EQ(c.rejected.launches, 1u);
  EXPECT_EQ(c.protocol_errors, 0u);
  // A HELLO whose pair is 100 years off is served, its pair left out.
  const int third = Connect(options.socket_path);
  ws_cuda_hello hello{};
  hello.pid = static_cast<uint32_t>(getpid());
  hello.connection_seq = 1;
  hello.clock = {now + 100 * 365 * kDay, kCuptiBase, now + 100 * 365 * kDay + 10};
  Send(third, EncodeCudaMessage(WS_CUDA_MSG_HELLO, &hello, sizeof(hello), 1));
  ASSERT_FALSE(Receive(third).empty());
  ASSERT_TRUE(log.WaitFor([](const auto& e) { return Count(e, CudaProcessEvent::Kind::kConnected) >= 1; }));
  for (const CudaProcessEvent& e : log.Take()) {
    if (e.kind == CudaProcessEvent::Kind::kConnected) {
      EXPECT_EQ(e.hello.clock.cupti_ns, 0u);
    }
  }
  EXPECT_EQ((*server)->counters().rejected.clock_pairs, 4u);
  for (int fd : {bad, good, third}) close(fd);
}

}  // namespace
}  // namespace warpscope
