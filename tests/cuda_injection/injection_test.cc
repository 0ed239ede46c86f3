// libwarpscope_cuda.so end to end, without a GPU: the library runs inside a
// helper process (cuda_injection_host) with the fake CUPTI
// (tests/fakes/fake_cupti), and this test is its agent, with the real
// CudaSocketServer on a temporary socket.
#include "tests/cuda_injection/injection_harness.h"

namespace warpscope {
namespace {

using namespace cuda_injection_test;  // the harness, shared by the injection tests

TEST(CudaInjection, WithoutCuptiStaysInertAndSaysOneLine) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, FastConfig());
  HostProcess host({"WARPSCOPE_CUPTI_PATH=/nonexistent/libcupti.so.13", "WARPSCOPE_AGENT_SOCKET=" + socket_path,
                    "WARPSCOPE_CUDA_RETRY_MS=100"});
  EXPECT_EQ(host.Command("init"), "ok 1");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(host.Command("ping"), "ok");
  EXPECT_EQ(host.Quit(), 0);
  const std::vector<std::string> lines = host.StderrLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("warpscope-cuda: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("libcupti"), std::string::npos) << lines[0];
  EXPECT_EQ(agent.server_->counters().connections_accepted, 0u);  // it never tried
}

// The real libcupti of the toolkit (when installed) with no GPU driver: the
// library connects, CUPTI refuses, the library says one line and stays off.
// With a driver (a GPU machine) it simply works; either way the process is
// unaffected.
TEST(CudaInjection, RealCuptiWithoutDriverLeavesTheProcessAlone) {
  const char* cupti = "/usr/local/cuda/lib64/libcupti.so.13";
  if (access(cupti, R_OK) != 0) GTEST_SKIP() << cupti << " not installed";
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, FastConfig());
  HostProcess host({std::string("WARPSCOPE_CUPTI_PATH=") + cupti, "WARPSCOPE_AGENT_SOCKET=" + socket_path,
                    "WARPSCOPE_CUDA_RETRY_MS=100"});
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_TRUE(agent.WaitFor([&] { return agent.connected >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(host.Command("ping"), "ok");
  EXPECT_EQ(host.Quit(), 0);
  const std::vector<std::string> lines = host.StderrLines();
  ASSERT_LE(lines.size(), 1u);
  if (!lines.empty()) {
    EXPECT_EQ(lines[0].rfind("warpscope-cuda: ", 0), 0u) << lines[0];
  }
}

TEST(CudaInjection, ExportsOnlyItsEntryPoints) {
  HostProcess host({"WARPSCOPE_CUDA_DISABLE=1"});
  EXPECT_EQ(host.Command("init"), "ok 1");
  EXPECT_EQ(host.Command("probe"), "ok 1");
  EXPECT_EQ(host.Quit(), 0);
  FILE* nm = popen("nm -D --defined-only " WS_CUDA_LIBRARY_PATH, "r");
  ASSERT_NE(nm, nullptr);
  std::set<std::string> symbols;
  char line[512];
  while (fgets(line, sizeof(line), nm) != nullptr) {
    std::istringstream in(line);
    std::string address, type, name;
    if (in >> address >> type >> name) symbols.insert(name);
  }
  pclose(nm);
  EXPECT_EQ(symbols, (std::set<std::string>{"InitializeInjection", "warpscope_cuda_launch_probe"}));
}

TEST(CudaInjection, DormantWithoutAgentMakesNoCuptiCall) {
  const std::string socket_path = TempDir() + "/cuda.sock";  // nobody listens
  HostProcess host(FakeEnv(socket_path));
  EXPECT_EQ(host.Command("init"), "ok 1");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // ~25 connection attempts
  EXPECT_EQ(host.Number("calls"), 0u);
  // Launches in a dormant process reach no callback either.
  EXPECT_EQ(host.Numbers(LaunchCommand(1, 100, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "k", 10))[1], 0u);
  EXPECT_EQ(host.Number("calls"), 0u);
  EXPECT_EQ(host.Quit(), 0);
  EXPECT_TRUE(host.StderrLines().empty());
}

TEST(CudaInjection, KernelsLaunchesAndStatsReachTheAgent) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, FastConfig());
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_TRUE(agent.WaitFor([&] { return agent.connected == 1; }));
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  ASSERT_TRUE(agent.WaitFor([&] { return !agent.stats.empty(); }));  // the baseline
  {
    std::lock_guard<std::mutex> lock(agent.mu_);
    EXPECT_EQ(agent.peer_pid, host.pid());
    EXPECT_EQ(agent.hello.pid, static_cast<uint32_t>(host.pid()));
    EXPECT_EQ(agent.hello.cupti_version, static_cast<uint32_t>(CUPTI_API_VERSION));
    EXPECT_EQ(agent.hello.connection_seq, 1u);
    const ws_cuda_clock_pair& c = agent.hello.clock;
    ASSERT_LE(c.host_before_ns, c.host_after_ns);
    const int64_t offset = static_cast<int64_t>(c.cupti_ns - (c.host_before_ns + c.host_after_ns) / 2);
    EXPECT_NEAR(static_cast<double>(offset), static_cast<double>(kWsFakeCuptiClockOffsetNs), 1e6);
  }
  EXPECT_EQ(host.Number("enabled " + std::to_string(kKernelActivity)), 1u);

  // 2000 runtime launches, each nesting a driver launch: counted once each.
  const std::vector<uint64_t> r =
      host.Numbers(LaunchCommand(1, 2000, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z7kernelAv", 5000));
  ASSERT_EQ(r.size(), 2u);
  const double elapsed_s = static_cast<double>(r[0]) * 1e-9;
  EXPECT_EQ(r[1], 2000u);
  // 100 driver-only launches, and a graph launch.
  host.Numbers(LaunchCommand(1, 100, 0, kDriverDomain, kCuLaunchKernel, 0, "_Z7kernelBv", 7000));
  host.Numbers(LaunchCommand(1, 1, 0, kRuntimeDomain, kCudaGraphLaunch, kCuGraphLaunch, "_Z7kernelGv", 100));
  host.Command("memcpy 4096 300");

  ASSERT_TRUE(agent.WaitFor([&] {
    return agent.kernels.size() == 2101 && !agent.memops.empty() && !agent.stats.empty() &&
           agent.stats.back().launches_seen == 2101 && agent.stats.back().kernel_records == 2101;
  })) << "kernels " << agent.kernels.size() << " seen " << agent.LastStats().launches_seen;
  // Let the last launch records arrive (they follow the kernels).
  const ws_cuda_stats stats = agent.LastStats();
  ASSERT_TRUE(agent.WaitFor([&] { return agent.launches.size() == stats.launches_sampled; }));

  std::lock_guard<std::mutex> lock(agent.mu_);
  std::map<uint32_t, const CudaKernel*> by_correlation;
  std::map<std::string, int> per_name;
  for (const CudaKernel& k : agent.kernels) {
    EXPECT_TRUE(by_correlation.emplace(k.record.correlation_id, &k).second) << "duplicate correlation id";
    per_name[k.name->text.system_name]++;
    const uint64_t duration = k.record.end_ns - k.record.start_ns;
    if (k.name->text.system_name == "_Z7kernelAv") {
      EXPECT_EQ(duration, 5000u);
    } else if (k.name->text.system_name == "_Z7kernelBv") {
      EXPECT_EQ(duration, 7000u);
    }
    EXPECT_EQ(k.record.block_x, 256);
    EXPECT_EQ(k.record.registers_per_thread, 32);
    EXPECT_EQ(k.record.dynamic_shared_memory, 2048);
    // Every kernel carries its launch call, sampled or not: before the
    // kernel's start (the fake starts it at the call's exit), on a thread.
    EXPECT_NE(k.record.launch_host_ns, 0u) << k.record.correlation_id;
    EXPECT_LE(k.record.launch_host_ns + k.record.launch_duration_ns,
              k.record.start_ns - kWsFakeCuptiClockOffsetNs + 1'000'000);
    EXPECT_GT(k.record.launch_duration_ns, 0u);
    EXPECT_NE(k.record.launch_tid, 0u);
    const std::string& name = k.name->text.system_name;
    EXPECT_EQ(k.record.launch_kind, name == "_Z7kernelGv" ? WS_CUDA_LAUNCH_GRAPH : WS_CUDA_LAUNCH_KERNEL) << name;
    EXPECT_EQ((k.record.launch_flags & WS_CUDA_LAUNCH_FLAG_DRIVER_API) != 0, name == "_Z7kernelBv") << name;
  }
  // The sampled launches' records say the same time and thread as their kernels'.
  for (const ws_cuda_launch& l : agent.launches) {
    const auto it = by_correlation.find(l.inner_correlation_id != 0 ? l.inner_correlation_id : l.correlation_id);
    if (it == by_correlation.end()) continue;
    EXPECT_EQ(it->second->record.launch_host_ns, l.host_time_ns);
    EXPECT_EQ(it->second->record.launch_tid, l.tid);
  }
  EXPECT_EQ(per_name["_Z7kernelAv"], 2000);
  EXPECT_EQ(per_name["_Z7kernelBv"], 100);
  EXPECT_EQ(per_name["_Z7kernelGv"], 1);
  ASSERT_EQ(agent.memops.size(), 1u);
  EXPECT_EQ(agent.memops[0].bytes, 4096u);
  EXPECT_EQ(agent.memops[0].op, WS_CUDA_MEMOP_MEMCPY);

  // Rate limit, per thread: a burst of 20, then 100/s. Each launch command
  // runs on a new thread, with a full bucket.
  std::map<uint32_t, int> sampled_per_tid;
  int sampled_a = 0;
  for (const ws_cuda_launch& l : agent.launches) {
    sampled_per_tid[l.tid]++;
    if (by_correlation.count(l.inner_correlation_id) &&
        by_correlation[l.inner_correlation_id]->name->text.system_name == "_Z7kernelAv") {
      sampled_a++;
    }
  }
  EXPECT_EQ(sampled_per_tid.size(), 3u);
  EXPECT_GE(sampled_a, 20);
  EXPECT_LE(sampled_a, 20 + 100 * elapsed_s + 1) << "elapsed " << elapsed_s;
  EXPECT_EQ(stats.launches_sampled, agent.launches.size());
  EXPECT_EQ(stats.launches_seen_activity_on, 2101u);
  EXPECT_EQ(stats.launches_seen_activity_off, 0u);
  EXPECT_EQ(stats.launch_records_dropped, 0u);
  EXPECT_EQ(stats.wire_records_dropped, 0u);

  // Every sampled launch joins a kernel record: runtime launches through the
  // nested driver call's id, driver-only launches through their own.
  bool saw_graph = false;
  for (const ws_cuda_launch& l : agent.launches) {
    const uint32_t join = l.inner_correlation_id != 0 ? l.inner_correlation_id : l.correlation_id;
    auto it = by_correlation.find(join);
    ASSERT_NE(it, by_correlation.end()) << "launch " << l.correlation_id << " joins nothing";
    EXPECT_EQ(l.tid != 0, true);
    if (it->second->name->text.system_name == "_Z7kernelAv") {
      EXPECT_EQ(l.inner_correlation_id, l.correlation_id + 1);
      EXPECT_EQ(l.flags & WS_CUDA_LAUNCH_FLAG_DRIVER_API, 0);
      EXPECT_EQ(l.launch_kind, WS_CUDA_LAUNCH_KERNEL);
    }
    if (l.launch_kind == WS_CUDA_LAUNCH_GRAPH) {
      saw_graph = true;
      EXPECT_EQ(l.graph_exec_id, 0x5000u);  // the fake's cuptiGetGraphExecId
    }
  }
  EXPECT_TRUE(saw_graph);
  EXPECT_EQ(host.Quit(), 0);
}

ws_cuda_config PcSamplingConfig() {
  ws_cuda_config c = FastConfig();
  c.flags |= WS_CUDA_CONFIG_PC_SAMPLING;
  c.pc_sampling_period_log2 = 18;
  c.pc_sampling_max_pcs = 64;  // more PCs than that per context take several reads
  return c;
}

// PC sampling in continuous mode: the library enables it on the contexts of
// launches and of context creation (configured with the agent's period),
// reads every PC with its stall reasons by CUPTI's names, sends each cubin
// once (in chunks), and counts; a context being destroyed is read first.
TEST(CudaInjection, PcSamplesAndCubinsReachTheAgent) {
  const std::string dir = TempDir();
  Agent agent(dir + "/agent.sock", PcSamplingConfig());
  HostProcess host(FakeEnv(dir + "/agent.sock"));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 10000"), "ok");
  // Device 0's context is noted by a launch; device 1's by its creation.
  host.Number(LaunchCommand(1, 1, 0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
                            "_Z4gemmv", 1000));
  ASSERT_EQ(host.Command("device 1"), "ok");
  ASSERT_EQ(host.Command("context_created"), "ok");
  ASSERT_TRUE(WaitForNumber(host, "pc_period 0", 18));
  ASSERT_TRUE(WaitForNumber(host, "pc_period 1", 18));
  // A 150 000-byte cubin loaded twice (sent once) and a small one.
  const uint64_t big = host.Number("module 150000 7");
  EXPECT_EQ(host.Number("module 150000 7"), big);
  const uint64_t small = host.Number("module 3000 8");
  // Device 1: 100 PCs of softmax (several reads of 64), two stall reasons each.
  uint64_t scripted = 0;
  for (int pc = 0; pc < 100; ++pc) {
    EXPECT_EQ(host.Number("pc _Z7softmaxv " + std::to_string(small) + " " + std::to_string(pc * 16) + " 5 3"), 1u);
    EXPECT_EQ(host.Number("pc _Z7softmaxv " + std::to_string(small) + " " + std::to_string(pc * 16) + " 9 1"), 1u);
    scripted += 4;
  }
  ASSERT_EQ(host.Command("device 0"), "ok");
  EXPECT_EQ(host.Number("pc _Z4gemmv " + std::to_string(big) + " 256 2 40"), 1u);
  EXPECT_EQ(host.Number("pc _Z4gemmv " + std::to_string(big) + " 512 14 60"), 1u);
  scripted += 100;
  // 50 samples in long scoreboard, 30 of them with nothing issued: sent as
  // 20 and 30, so that the records partition the samples.
  EXPECT_EQ(host.Number("pc _Z4gemmv " + std::to_string(big) + " 768 5 50"), 1u);
  EXPECT_EQ(host.Number("pc _Z4gemmv " + std::to_string(big) + " 768 6 30"), 1u);
  scripted += 50;
  // Device 1's context goes: its samples are read before it does.
  ASSERT_EQ(host.Command("device 1"), "ok");
  EXPECT_EQ(host.Number("pc _Z7softmaxv " + std::to_string(small) + " 4096 14 5"), 1u);
  scripted += 5;
  ASSERT_EQ(host.Command("context_destroying"), "ok");
  EXPECT_EQ(host.Number("pc_period 1"), 0u);

  ASSERT_TRUE(agent.WaitFor([&] {
    uint64_t n = 0;
    for (const CudaPcSample& p : agent.pc_samples) n += p.record.samples;
    return n >= scripted && agent.cubins.size() >= 2;
  })) << "samples and cubins";
  std::map<std::tuple<std::string, uint64_t, std::string>, uint64_t> got;  // (function, pc, stall) -> samples
  std::map<std::string, std::set<uint32_t>> devices;
  {
    std::lock_guard<std::mutex> lock(agent.mu_);
    for (const CudaPcSample& p : agent.pc_samples) {
      got[{p.function->text.system_name, p.record.pc_offset, p.stall_reason->text.system_name}] += p.record.samples;
      devices[p.function->text.system_name].insert(p.record.device_id);
      EXPECT_EQ(p.record.cubin_crc, p.function->text.system_name == "_Z4gemmv" ? big : small);
    }
    ASSERT_EQ(agent.cubins.size(), 2u) << "each cubin once";
    EXPECT_EQ(agent.cubins[0].crc, big);
    EXPECT_EQ(*agent.cubins[0].bytes, WsFakeCuptiMadeUpCubin(150000, 7));
    EXPECT_EQ(agent.cubins[1].crc, small);
    EXPECT_EQ(*agent.cubins[1].bytes, WsFakeCuptiMadeUpCubin(3000, 8));
  }
  EXPECT_EQ((got[{"_Z4gemmv", 256, "smsp__pcsamp_warps_issue_stalled_barrier"}]), 40u);
  EXPECT_EQ((got[{"_Z4gemmv", 512, "smsp__pcsamp_warps_issue_stalled_selected"}]), 60u);
  EXPECT_EQ((got[{"_Z4gemmv", 768, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}]), 20u);
  EXPECT_EQ((got[{"_Z4gemmv", 768, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"}]), 30u);
  EXPECT_EQ((got[{"_Z7softmaxv", 0, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}]), 3u);
  EXPECT_EQ((got[{"_Z7softmaxv", 99 * 16, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"}]), 1u);
  EXPECT_EQ((got[{"_Z7softmaxv", 4096, "smsp__pcsamp_warps_issue_stalled_selected"}]), 5u) << "read before the context went";
  uint64_t total = 0;
  for (const auto& [key, n] : got) total += n;
  EXPECT_EQ(total, scripted);
  EXPECT_EQ(devices["_Z4gemmv"], std::set<uint32_t>{0});
  EXPECT_EQ(devices["_Z7softmaxv"], std::set<uint32_t>{1});
  ASSERT_TRUE(agent.WaitFor([&] { return !agent.stats.empty() && agent.stats.back().pc_samples == scripted; }));
  const ws_cuda_stats st = agent.LastStats();
  EXPECT_EQ(st.pc_sampling_state, static_cast<uint32_t>(WS_CUDA_PC_SAMPLING_ON));
  EXPECT_EQ(st.cubins_sent, 2u);
  EXPECT_EQ(st.cubins_dropped, 0u);
  EXPECT_EQ(st.pc_records_dropped, 0u);
  EXPECT_EQ(st.pc_samples_dropped, 0u);
  EXPECT_EQ(st.pc_samples_total, scripted) << "CUPTI's totalSamples: each sample once";
  EXPECT_EQ(host.Quit(), 0);
}

// A driver that restricts profiling to admin users: one line says PC
// sampling is off and why, it is never tried again, and GPU time goes on.
TEST(CudaInjection, PcSamplingRefusedKeepsGpuTimeAndSaysSoOnce) {
  const std::string dir = TempDir();
  Agent agent(dir + "/agent.sock", PcSamplingConfig());
  HostProcess host(FakeEnv(dir + "/agent.sock"));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("fail cuptiPCSamplingEnable " + std::to_string(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)), "ok");
  ASSERT_EQ(host.Command("wait_subscribed 1 10000"), "ok");
  const std::string launch = LaunchCommand(1, 50, 200, CUPTI_CB_DOMAIN_RUNTIME_API,
                                           CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, "_Z4gemmv", 1000);
  host.Numbers(launch);
  ASSERT_TRUE(WaitForNumber(host, "calls cuptiPCSamplingEnable", 1));
  ASSERT_EQ(host.Command("device 1"), "ok");
  ASSERT_EQ(host.Command("context_created"), "ok");
  host.Numbers(launch);
  ASSERT_EQ(host.Command("flush"), "ok");
  ASSERT_TRUE(agent.WaitFor([&] { return agent.kernels.size() >= 100; })) << "GPU time goes on";
  ASSERT_TRUE(agent.WaitFor([&] {
    return !agent.stats.empty() && agent.stats.back().pc_sampling_state == WS_CUDA_PC_SAMPLING_NO_PERMISSION;
  }));
  EXPECT_EQ(agent.LastStats().pc_sampling_error, static_cast<uint32_t>(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(host.Number("calls cuptiPCSamplingEnable"), 1u) << "tried once";
  EXPECT_EQ(host.Number("pc_period 0"), 0u);
  EXPECT_EQ(host.Quit(), 0);
  int lines = 0;
  for (const std::string& line : host.StderrLines()) {
    if (line.find("warpscope-cuda: PC sampling is off: the driver allows GPU profiling to admin users only") == 0) {
      lines++;
    } else {
      ADD_FAILURE() << "unexpected: " << line;
    }
  }
  EXPECT_EQ(lines, 1);
}

TEST(CudaInjection, RateLimitIsPerThread) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.launch_samples_per_sec = 10;
  config.launch_sample_burst = 5;
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  const std::vector<uint64_t> r =
      host.Numbers(LaunchCommand(4, 500, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z1kv", 100));
  const double elapsed_s = static_cast<double>(r[0]) * 1e-9;
  ASSERT_TRUE(agent.WaitFor([&] { return !agent.stats.empty() && agent.stats.back().launches_seen == 2000; }));
  const ws_cuda_stats stats = agent.LastStats();
  EXPECT_GE(stats.launches_sampled, 4u * 5);
  EXPECT_LE(stats.launches_sampled, 4 * (5 + 10 * elapsed_s + 1));
  EXPECT_EQ(host.Quit(), 0);
}

TEST(CudaInjection, ConfigChangesApplyWhileConnected) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.mode = WS_CUDA_MODE_OFF;
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_TRUE(agent.WaitFor([&] { return agent.connected == 1 && !agent.stats.empty(); }));
  EXPECT_EQ(host.Number("subscribed"), 0u);  // connected, but told to stay off
  EXPECT_EQ(host.Number("enabled " + std::to_string(kKernelActivity)), 0u);

  config.mode = WS_CUDA_MODE_EXACT;
  agent.server_->PostConfig(config);
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  EXPECT_EQ(host.Number("enabled " + std::to_string(kKernelActivity)), 1u);
  host.Numbers(LaunchCommand(1, 10, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z2onv", 1));
  ASSERT_TRUE(agent.WaitFor([&] { return agent.kernels.size() == 10; }));

  config.mode = WS_CUDA_MODE_OFF;
  agent.server_->PostConfig(config);
  // Off: activity disabled and CUPTI left (unsubscribed) at once; never
  // torn down with cuptiFinalize.
  ASSERT_TRUE(WaitForNumber(host, "enabled " + std::to_string(kKernelActivity), 0));
  ASSERT_EQ(host.Command("wait_subscribed 0 5000"), "ok");
  EXPECT_EQ(host.Number("calls cuptiFinalize"), 0u);
  EXPECT_EQ(agent.server_->counters().connections_accepted, 1u);  // one connection throughout
  EXPECT_EQ(host.Quit(), 0);
}

TEST(CudaInjection, DutyModeTogglesKernelActivity) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.mode = WS_CUDA_MODE_DUTY;
  config.duty_on_ms = 100;
  config.duty_period_ms = 300;
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  // ~1 s of launches, one every 2 ms: some fall in "on" windows, most in "off".
  host.Numbers(LaunchCommand(1, 400, 2000, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z1dv", 100));
  EXPECT_GE(host.Number("enables " + std::to_string(kKernelActivity)), 3u);
  ASSERT_TRUE(agent.WaitFor([&] { return !agent.stats.empty() && agent.stats.back().launches_seen == 400; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the last flush
  const ws_cuda_stats stats = agent.LastStats();
  EXPECT_EQ(stats.launches_seen_activity_on + stats.launches_seen_activity_off, 400u);
  EXPECT_GT(stats.launches_seen_activity_on, 40u);
  EXPECT_GT(stats.launches_seen_activity_off, 100u);
  EXPECT_GT(stats.activity_on_ns, 0u);
  EXPECT_LT(stats.launches_sampled, stats.launches_seen_activity_on + 1);  // sampled only while on
  std::lock_guard<std::mutex> lock(agent.mu_);
  // Kernel records exist for the "on" launches (± the few at window edges).
  EXPECT_NEAR(static_cast<double>(agent.kernels.size()), static_cast<double>(stats.launches_seen_activity_on), 10);
}

// WS_CUDA_CONFIG_DUTY_CALLBACKS: outside the windows not even the launch
// callbacks run (on the H200 they alone cost ~15% of a 100k launches/s loop),
// so off-window launches are neither seen nor counted; the agent scales by
// activity_on_ns instead.
TEST(CudaInjection, DutyCallbacksModeRunsNoCallbackOutsideTheWindows) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.mode = WS_CUDA_MODE_DUTY;
  config.flags |= WS_CUDA_CONFIG_DUTY_CALLBACKS;
  config.duty_on_ms = 100;
  config.duty_period_ms = 300;
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  const uint64_t enable_calls_before = host.Number("calls cuptiEnableCallback");
  host.Numbers(LaunchCommand(1, 400, 2000, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z1dv", 100));
  // Turned on and off with every window (~3 windows in ~1 s).
  EXPECT_GE(host.Number("calls cuptiEnableCallback") - enable_calls_before, 4u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // stats and the last flush
  const ws_cuda_stats stats = agent.LastStats();
  EXPECT_EQ(stats.launches_seen_activity_off, 0u);
  EXPECT_GT(stats.launches_seen_activity_on, 40u);
  EXPECT_LT(stats.launches_seen, 300u) << "off-window launches are not seen";
  EXPECT_GT(stats.activity_on_ns, 0u);
  std::lock_guard<std::mutex> lock(agent.mu_);
  EXPECT_NEAR(static_cast<double>(agent.kernels.size()), static_cast<double>(stats.launches_seen_activity_on), 10);
}

// Windows with CUPTI left between them (WS_CUDA_CONFIG_DUTY_DETACH, and
// adaptive mode): the library unsubscribes between windows, never tears
// CUPTI down (cuptiFinalize), registers its buffers once, and makes no
// subscription until the next window; each window's records come before
// the WINDOW message that closes it.
TEST(CudaInjection, WindowsLeaveCuptiBetweenThemWithoutTearingItDown) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  Agent agent(socket_path, LeavingWindows(100, 400));
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  // ~1.6 s of launches, one every 2 ms: four windows.
  host.Numbers(LaunchCommand(1, 800, 2000, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z1wv", 100));
  EXPECT_EQ(host.Number("calls cuptiFinalize"), 0u);
  EXPECT_GE(host.Number("calls cuptiUnsubscribe"), 2u);
  EXPECT_EQ(host.Number("calls cuptiActivityRegisterCallbacks"), 1u) << "our buffers stay registered";
  // Out for the off time (period - window - drain), not less.
  EXPECT_GE(host.Number("min_detached_ms"), 200u);
  ASSERT_TRUE(agent.WaitFor([&] { return agent.windows.size() >= 3; }));
  std::lock_guard<std::mutex> lock(agent.mu_);
  uint64_t launches_in_windows = 0;
  for (size_t i = 0; i < agent.windows.size(); ++i) {
    const ws_cuda_window& w = agent.windows[i];
    EXPECT_NEAR(static_cast<double>(w.on_end_ns - w.on_start_ns) / 1e6, 100, 30) << i;
    EXPECT_NEAR(static_cast<double>(w.covers_until_ns - w.on_start_ns) / 1e6, 400, 1) << i;
    if (i > 0) EXPECT_GE(w.on_start_ns, agent.windows[i - 1].covers_until_ns) << i;
    launches_in_windows += w.launches_seen;
  }
  // The kernels before the last WINDOW message are exactly those its windows saw launched.
  EXPECT_NEAR(static_cast<double>(agent.kernels_at_window.back()), static_cast<double>(launches_in_windows),
              2.0 * static_cast<double>(agent.windows.size()));
  EXPECT_GT(launches_in_windows, 100u);
  EXPECT_LT(launches_in_windows, 500u);
}

// Adaptive mode: a process that launches rarely is recorded all the time
// (windows of weight 1, CUPTI never detached).
TEST(CudaInjection, AdaptiveModeRecordsARarelyLaunchingProcessAllTheTime) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.mode = WS_CUDA_MODE_ADAPTIVE;
  config.duty_on_ms = 100;
  config.duty_period_ms = 2000;
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  host.Numbers(LaunchCommand(1, 40, 20000, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z4rarev", 100));
  ASSERT_TRUE(agent.WaitFor([&] { return agent.windows.size() >= 5 && agent.kernels.size() == 40; }));
  EXPECT_EQ(host.Number("calls cuptiFinalize"), 0u);
  std::lock_guard<std::mutex> lock(agent.mu_);
  for (const ws_cuda_window& w : agent.windows) EXPECT_EQ(w.covers_until_ns, w.on_end_ns);
}

TEST(CudaInjection, AgentLossMakesItDormantAndReconnectWorks) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  HostProcess host(FakeEnv(socket_path));
  {
    Agent agent(socket_path, FastConfig());
    ASSERT_EQ(host.Command("init"), "ok 1");
    ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
    EXPECT_EQ(host.Number("enabled " + std::to_string(kKernelActivity)), 1u);
  }  // the agent goes away
  // Everything is disabled and CUPTI left at once, so that it costs the
  // application nothing more.
  ASSERT_TRUE(WaitForNumber(host, "enabled " + std::to_string(kKernelActivity), 0));
  EXPECT_EQ(host.Number("enabled " + std::to_string(CUPTI_ACTIVITY_KIND_MEMCPY)), 0u);
  EXPECT_EQ(host.Command("wait_subscribed 0 5000"), "ok");
  EXPECT_EQ(host.Number("calls cuptiFinalize"), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const uint64_t calls = host.Number("calls");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(host.Number("calls"), calls);  // dormant again: no CUPTI calls
  EXPECT_EQ(host.Numbers(LaunchCommand(1, 10, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "k", 1))[1], 0u);

  Agent again(socket_path, FastConfig());
  ASSERT_TRUE(again.WaitFor([&] { return again.connected == 1; }));
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  {
    std::lock_guard<std::mutex> lock(again.mu_);
    EXPECT_EQ(again.hello.connection_seq, 2u);
  }
  host.Numbers(LaunchCommand(1, 10, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z5againv", 1));
  ASSERT_TRUE(again.WaitFor([&] { return again.kernels.size() == 10; }));
  std::lock_guard<std::mutex> lock(again.mu_);
  EXPECT_EQ(again.kernels[0].name->text.system_name, "_Z5againv");  // the dictionary starts over
  EXPECT_EQ(again.kernels[0].record.name_id, 1u);
}

TEST(CudaInjection, ExitSendsTheLastRecords) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.flush_interval_ms = 60000;  // nothing would leave before exit
  config.stats_interval_ms = 60000;
  Agent agent(socket_path, config);
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
  host.Numbers(LaunchCommand(1, 50, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z4lastv", 10));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(host.Quit(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_TRUE(agent.WaitFor([&] {
    return agent.kernels.size() == 50 && !agent.stats.empty() && agent.stats.back().launches_seen == 50;
  })) << "kernels " << agent.kernels.size();
  std::lock_guard<std::mutex> lock(agent.mu_);
  EXPECT_EQ(agent.launches.size(), agent.stats.back().launches_sampled);
  EXPECT_TRUE(host.StderrLines().empty());
}

// A socket that accepts, answers HELLO with `config`, and then never reads.
class StalledAgent {
 public:
  StalledAgent(const std::string& path, const ws_cuda_config& config) : path_(path), config_(config) {
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 4), 0);
  }
  ~StalledAgent() {
    if (fd_ >= 0) close(fd_);
    close(listen_fd_);
    unlink(path_.c_str());
  }
  bool AcceptAndConfigure() {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return false;
    fd_ = accept(listen_fd_, nullptr, nullptr);
    std::vector<uint8_t> hello(WS_CUDA_WIRE_MAX_MESSAGE);
    if (recv(fd_, hello.data(), hello.size(), 0) <= 0) return false;
    const std::vector<uint8_t> config = EncodeCudaConfig(config_);
    return send(fd_, config.data(), config.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(config.size());
  }
  // True once the library has closed its end.
  bool PeerClosed(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<uint8_t> sink(WS_CUDA_WIRE_MAX_MESSAGE);
    // Reading drains the queue; the library has already given up on it.
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        if (p.revents & POLLHUP) {
          while (recv(fd_, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
          }
          return true;
        }
      }
    }
    return false;
  }

 private:
  std::string path_;
  ws_cuda_config config_;
  int listen_fd_ = -1, fd_ = -1;
};

TEST(CudaInjection, StalledAgentNeverBlocksLaunchesAndDropsAreCounted) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  ws_cuda_config config = FastConfig();
  config.flush_interval_ms = 10;
  config.activity_buffer_bytes = 64 << 10;
  config.activity_buffer_count = 2;
  config.outbox_bytes = 256 << 10;
  config.stall_timeout_ms = 1500;
  HostProcess host(FakeEnv(socket_path));
  {
    StalledAgent stalled(socket_path, config);
    ASSERT_EQ(host.Command("init"), "ok 1");
    ASSERT_TRUE(stalled.AcceptAndConfigure());
    ASSERT_EQ(host.Command("wait_subscribed 1 5000"), "ok");
    const std::vector<uint64_t> r =
        host.Numbers(LaunchCommand(1, 100000, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "_Z1sv", 10));
    EXPECT_LT(r[0], 5'000'000'000ull) << "100k launches took " << r[0] << " ns";
    // The library gives up on an agent that does not read.
    EXPECT_TRUE(stalled.PeerClosed(10000));
    // Left at once.
    ASSERT_TRUE(WaitForNumber(host, "enabled " + std::to_string(kKernelActivity), 0));
    EXPECT_EQ(host.Command("wait_subscribed 0 5000"), "ok");
  }
  // The next agent sees what was lost (the counters are per process).
  Agent agent(socket_path, FastConfig());
  ASSERT_TRUE(agent.WaitFor([&] { return !agent.stats.empty(); }));
  const ws_cuda_stats stats = agent.LastStats();
  EXPECT_EQ(stats.launches_seen, 100000u);
  EXPECT_GT(stats.wire_records_dropped + stats.buffers_denied + stats.cupti_dropped_records, 0u);
  EXPECT_GT(stats.wire_messages_dropped, 0u);
  EXPECT_EQ(host.Quit(), 0);
}

TEST(CudaInjection, CuptiFailureTurnsItOffWithOneLine) {
  const std::string socket_path = TempDir() + "/cuda.sock";
  HostProcess host(FakeEnv(socket_path));
  ASSERT_EQ(host.Command("init"), "ok 1");
  EXPECT_EQ(host.Command("fail cuptiSubscribe_v2 1"), "ok");
  Agent agent(socket_path, FastConfig());
  ASSERT_TRUE(agent.WaitFor([&] { return agent.disconnected == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // would reconnect 5 times
  EXPECT_EQ(agent.server_->counters().connections_accepted, 1u);
  EXPECT_EQ(host.Number("subscribed"), 0u);
  EXPECT_EQ(host.Numbers(LaunchCommand(1, 10, 0, kRuntimeDomain, kCudaLaunchKernel, kCuLaunchKernel, "k", 1))[1], 0u);
  EXPECT_EQ(host.Quit(), 0);
  const std::vector<std::string> lines = host.StderrLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("warpscope-cuda: cuptiSubscribe_v2 failed: FAKE_CUPTI_ERROR_1; GPU profiling off", 0), 0u)
      << lines[0];
}

}  // namespace
}  // namespace warpscope
