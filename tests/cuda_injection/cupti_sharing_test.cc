// libwarpscope_cuda.so sharing the process with what else is there: the
// application's own CUPTI clients (seen through the client guard, or not),
// CUDA graphs replayed across the windows that leave CUPTI, native threads
// launching beside the main thread, and who the library talks to.
#include "tests/cuda_injection/injection_harness.h"

namespace warpscope {
namespace {

using namespace cuda_injection_test;  // the harness, shared by the injection tests

// A client that took CUPTI before us, unseen by the guard (the fake's
// "occupy": like one that reached CUPTI through dlsym): the library says so
// once, stays connected without recording, reports itself aside, and
// records once the client is done.
TEST(CudaInjection, AnUnseenCuptiClientIsNamedAndWaitedFor) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  EXPECT_EQ(host.Command("occupy kineto"), "ok");
  ws_cuda_config config = FastConfig();
  config.duty_period_ms = 200;  // how often an exact-mode library tries again
  Agent agent(socket_path, config);
  ASSERT_TRUE(agent.WaitFor([&] { return agent.stats.size() >= 3; }));
  EXPECT_EQ(host.Number("enabled " + std::to_string(kKernelActivity)), 0u);
  EXPECT_EQ(host.Numbers(LaunchCommand(1, 10, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "k", 1))[1], 0u);
  {
    const ws_cuda_stats stats = agent.LastStats();
    EXPECT_EQ(stats.cupti_state, static_cast<uint32_t>(WS_CUDA_CUPTI_ASIDE));
    EXPECT_GE(stats.cupti_taken, 1u);
  }
  EXPECT_EQ(host.Command("occupy "), "ok");  // the client is done
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  host.Numbers(LaunchCommand(1, 10, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z5laterv", 1));
  ASSERT_TRUE(agent.WaitFor([&] { return agent.kernels.size() == 10; }));
  ASSERT_TRUE(agent.WaitFor([&] { return agent.stats.back().cupti_state == WS_CUDA_CUPTI_IN; }));
  EXPECT_GT(agent.LastStats().cupti_aside_ns, 0u);
  EXPECT_EQ(agent.disconnected, 0);
  EXPECT_EQ(host.Quit(), 0);
  const std::vector<std::string> lines = host.StderrLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "warpscope-cuda: another CUPTI client is active (CUPTI for kineto); GPU profiling of this process "
            "waits until it is done");
}

// torch.profiler (Kineto) inside an injected process: a client linked
// against CUPTI starts while the library records. It must get CUPTI exactly
// as without the library (its subscribe succeeds, it gets every kernel
// record of its launches), nothing of it reaches the agent, and the library
// records again after the client stops. Before the client guard, the
// client's subscribe was refused (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
// and it recorded nothing.
void ClientGetsCuptiAndRecordingResumes(const ws_cuda_config& config, bool client_finalizes) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("client_load " WS_FAKE_CUPTI_CLIENT_PATH), "ok");  // loaded before cuInit, like torch
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  host.Numbers(LaunchCommand(1, 100, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z6beforev", 1));
  ASSERT_TRUE(agent.WaitFor([&] { return agent.kernels.size() == 100; }));

  EXPECT_EQ(host.Command("client_start"), "ok 0") << "the client's own subscribe succeeds";
  host.Numbers(LaunchCommand(2, 100, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z6duringv", 1));
  EXPECT_EQ(host.Command("client_stop " + std::string(client_finalizes ? "1" : "0")), "ok 0");
  EXPECT_EQ(host.Number("client_records"), 200u) << "every kernel of its launches";
  EXPECT_EQ(host.Number("client_callbacks"), 200u);
  {
    std::lock_guard<std::mutex> lock(agent.mu_);
    EXPECT_EQ(agent.kernels.size(), 100u) << "nothing of the client's session reaches the agent";
  }
  ASSERT_TRUE(agent.WaitFor([&] { return agent.stats.back().cupti_yields == 1; }));

  // Recording resumes once the client is done.
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  host.Numbers(LaunchCommand(1, 100, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z5afterv", 1));
  ASSERT_TRUE(agent.WaitFor([&] { return agent.kernels.size() == 200; })) << agent.kernels.size();
  {
    std::lock_guard<std::mutex> lock(agent.mu_);
    EXPECT_EQ(agent.kernels.back().name->text.system_name, "_Z5afterv");
    EXPECT_EQ(agent.disconnected, 0);
  }
  ASSERT_TRUE(agent.WaitFor([&] { return agent.stats.back().cupti_state == WS_CUDA_CUPTI_IN; }));
  const ws_cuda_stats stats = agent.LastStats();
  EXPECT_GT(stats.cupti_aside_ns, 0u);
  EXPECT_NE(stats.cupti_flags & WS_CUDA_CUPTI_FLAG_GUARD, 0u);
  EXPECT_EQ(host.Number("calls cuptiFinalize"), client_finalizes ? 1u : 0u) << "only the client's own";
  EXPECT_EQ(host.Quit(), 0);
  EXPECT_TRUE(host.StderrLines().empty());
}

TEST(CudaInjection, AnotherClientInTheProcessGetsCuptiAndExactRecordingResumes) {
  ClientGetsCuptiAndRecordingResumes(FastConfig(), false);
}

TEST(CudaInjection, AnotherClientThatTearsCuptiDownGetsItAndRecordingResumes) {
  ClientGetsCuptiAndRecordingResumes(FastConfig(), true);
}

// Every launching thread counted: a main thread and a busier native thread
// (PyTorch's autograd engine thread launches the backward pass) launch at
// once through windows that leave CUPTI between them. Each thread's kernels
// keep arriving in every window, in proportion to its launches. The fake
// drops the thread that tore CUPTI down inside a callback (fake_cupti.cc
// says why); the design that finalized at a launch's exit lost the busier
// thread that way.
TEST(CudaInjection, EveryLaunchingThreadIsRecordedInEveryWindow) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, LeavingWindows(50, 150));
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  // ~1.8 s: the worker launches three times as often as the main thread.
  const std::vector<uint64_t> r = host.Numbers("launch_pair 300 6000 _Z4mainv 900 2000 _Z8backwardv");
  ASSERT_EQ(r.size(), 2u);
  const uint64_t main_recorded = r[0], worker_recorded = r[1];
  EXPECT_GT(main_recorded, 20u);
  EXPECT_GT(worker_recorded, 2 * main_recorded) << "the worker's kernels are recorded like the main thread's";
  // Every record reaches the agent, but those of launches made while a
  // closed window drained (kernel activity still on), which the library
  // leaves out and counts in the WINDOW message.
  ASSERT_TRUE(agent.WaitFor(
      [&] { return agent.kernels.size() + agent.KernelsOutsideWindows() == main_recorded + worker_recorded; }));
  // Both threads in the last windows too, not only in the first.
  std::lock_guard<std::mutex> lock(agent.mu_);
  ASSERT_GE(agent.windows.size(), 4u);
  const ws_cuda_window& last = agent.windows[agent.windows.size() - 2];
  uint64_t main_late = 0, worker_late = 0;
  for (const CudaKernel& k : agent.kernels) {
    if (k.record.start_ns - kWsFakeCuptiClockOffsetNs < last.on_start_ns) continue;
    (k.name->text.system_name == "_Z4mainv" ? main_late : worker_late)++;
  }
  EXPECT_GT(main_late, 0u);
  EXPECT_GT(worker_late, main_late) << "the busier thread is still recorded after several leaves";
  EXPECT_EQ(host.Quit(), 0);
}

// CUDA graphs replayed while the library records in windows and leaves
// CUPTI between them. The fake models what a real CUPTI does to a graph it
// instrumented when it is torn down: the next replay crashes the
// application (SIGSEGV). The library must never tear CUPTI down, so the
// application survives every window, and each replay's kernel nodes arrive
// as records of their graph.
TEST(CudaInjection, GraphReplaysAcrossWindowsNeverCrashTheApplication) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, LeavingWindows(50, 150));
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  // ~1.2 s of replays of one graph of 8 kernels: eight windows and the
  // leaves between them.
  const std::string replies = host.Command("graph 600 2000 4242 8 _Z9graphnodev 1000");
  ASSERT_EQ(replies.rfind("ok ", 0), 0u) << replies << " (the application died)";
  const uint64_t queued = std::stoull(replies.substr(3));
  EXPECT_GT(queued, 0u);
  EXPECT_EQ(queued % 8, 0u) << "all of a replay's nodes, or none";
  EXPECT_EQ(host.Command("ping"), "ok");
  ASSERT_TRUE(agent.WaitFor([&] {
    return agent.windows.size() >= 4 && agent.kernels.size() + agent.KernelsOutsideWindows() == queued;
  })) << agent.kernels.size() << " + " << agent.KernelsOutsideWindows() << " of " << queued;
  {
    std::lock_guard<std::mutex> lock(agent.mu_);
    for (const CudaKernel& k : agent.kernels) {
      EXPECT_EQ(k.record.graph_id, 4242u);
      EXPECT_NE(k.record.graph_node_id, 0u);
    }
  }
  EXPECT_GE(agent.LastStats().graph_launches, 100u);
  EXPECT_EQ(host.Number("calls cuptiFinalize"), 0u);
  EXPECT_EQ(host.Quit(), 0);
}

// A socket another user listens on (WARPSCOPE_AGENT_SOCKET in a directory
// others can write to) is not the agent: the library checks the listener's
// SO_PEERCRED and sends it nothing (no HELLO, so no kernel names, no cubins,
// and no CONFIG obeyed), says so once and stays dormant (no CUPTI call).
// Before the check it connected, sent its HELLO and followed that peer's
// CONFIG. Needs root, to run the listener as an unprivileged uid.
TEST(CudaInjection, ASocketOfAnotherUserIsNotTalkedTo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to listen as another uid";
  constexpr uid_t kNobody = 65534;
  const std::string dir = TempDir();
  const std::string other = dir + "/other";
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(other.c_str(), 0755), 0);
  ASSERT_EQ(chown(other.c_str(), kNobody, kNobody), 0);
  const std::string socket_path = other + "/cuda.sock";
  int ready[2], heard[2], alive[2];
  ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(alive, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(heard, O_CLOEXEC | O_NONBLOCK), 0);
  const pid_t listener = fork();
  ASSERT_GE(listener, 0);
  if (listener == 0) {
    // The other user's "agent": answers nothing, reports every byte it gets.
    // It ends with the test (`alive` closes, however the test ends) and holds
    // none of the test's output open.
    close(alive[1]);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    dup2(null, 2);
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, socket_path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0) _exit(3);
    (void)!write(ready[1], "r", 1);
    for (;;) {
      pollfd both[2] = {{fd, POLLIN, 0}, {alive[0], POLLIN, 0}};
      if (poll(both, 2, -1) < 0) continue;
      if (both[1].revents != 0) _exit(0);
      const int c = accept(fd, nullptr, nullptr);
      if (c < 0) continue;
      pollfd p{c, POLLIN, 0};
      char buffer[256];
      if (poll(&p, 1, 500) > 0 && recv(c, buffer, sizeof(buffer), 0) > 0) (void)!write(heard[1], "h", 1);
      close(c);
    }
  }
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{listener};
  close(alive[0]);
  close(ready[1]);
  close(heard[1]);
  char byte = 0;
  pollfd p{ready[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the listener did not start";
  {
    HostProcess host(FakeEnv(socket_path));
    EXPECT_EQ(host.Command("init"), "ok 1");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // ~15 connection attempts
    EXPECT_EQ(host.Number("calls"), 0u) << "dormant: no CUPTI call";
    EXPECT_EQ(read(heard[0], &byte, 1), -1) << "the other user's socket got a message";
    EXPECT_EQ(host.Quit(), 0);
    const std::vector<std::string> lines = host.StderrLines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("belongs to uid 65534"), std::string::npos) << lines[0];
  }
  close(ready[0]);
  close(heard[0]);
  close(alive[1]);
}

}  // namespace
}  // namespace warpscope
