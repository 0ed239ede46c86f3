// GPU metrics through the whole pipeline, without a GPU: the real agent
// (`warpscope-agent run`, BPF, root) loads the scripted fake NVML
// (tests/fakes/fake_nvml) through its real dlopen path and streams to a real
// warpscope-server on loopback; the test reads the stored series, the
// downsampled query, the targets, and the agent's Prometheus endpoint as
// Prometheus' own parser reads it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <vector>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"
#include "tests/support/loopback_client.h"
#include "tests/support/prometheus_parse.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "gpu-metrics-token";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class GpuMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
    // A real process for the per-process readings to name.
    process_ = StartProcess({"/bin/sleep", "120"});
    for (int i = 0; i < 200; ++i) {
      std::string comm;
      std::ifstream("/proc/" + std::to_string(process_) + "/comm") >> comm;
      if (comm == "sleep") break;
      std::this_thread::sleep_for(10ms);
    }
  }
  void TearDown() override {
    StopAgent();
    kill(process_, SIGKILL);
    WaitProcess(process_);
    server_.reset();
    unsetenv("WS_FAKE_NVML_SCRIPT");
    RunProcess({"rm", "-rf", dir_});
  }
  void WriteScript(int utilization) {
    const std::string tmp = dir_ + "/nvml.script.tmp";
    std::ofstream(tmp) << "devices 2\n"
                       << "device 0 name \"NVIDIA H200\" uuid GPU-0000aaaa pci 00000000:19:00.0 gpm 1\n"
                       << "device 1 name \"NVIDIA H200\" uuid GPU-1111bbbb pci 00000000:3b:00.0\n"
                       << "set 0 utilization_gpu " << utilization << "\n"
                       << "set 0 power_mw 312000\n"
                       << "set 0 memory_used 10737418240\n"
                       << "set 0 gpm_sm_util 50\n"
                       << "set 1 utilization_gpu 5\n"
                       << "error 1 nvmlDeviceGetPowerUsage NOT_SUPPORTED\n"
                       << "process 0 " << process_ << " sm 30 mem 10 used 1073741824\n";
    ASSERT_EQ(rename(tmp.c_str(), (dir_ + "/nvml.script").c_str()), 0);
  }
  void StartAgent(const std::string& nvml_library, const std::string& pids = "",
                  const std::vector<std::string>& more = {}) {
    setenv("WS_FAKE_NVML_SCRIPT", (dir_ + "/nvml.script").c_str(), 1);
    metrics_port_ = FreePort();
    std::vector<std::string> args = {"--server", server_->url(), "--token", kToken, "--upload-interval", "2s",
                                     "--state-dir", dir_ + "/agent", "--node-name", "gpu-node", "--nvml-library",
                                     nvml_library, "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port_),
                                     "--pid", pids.empty() ? std::to_string(process_) : pids};
    args.insert(args.end(), more.begin(), more.end());
    agent_ = std::make_unique<AgentProcess>(WS_AGENT_BIN, args, dir_ + "/agent.log");
    ASSERT_TRUE(agent_->started());
  }
  int StopAgent() { return agent_ ? agent_->Stop() : 0; }
  std::string AgentLog() { return agent_ ? agent_->Log() : ""; }
  json GetJson(const std::string& path) { return GetApiJson(server_->port(), path, kToken); }
  json Metric(const std::string& name, const std::string& group_by) {
    return GetJson("/api/v1/metrics?name=" + name + "&from=" + std::to_string(start_ms_) + "&to=now&step=1h" +
                   "&group_by=" + group_by);
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  pid_t process_ = -1;
  std::unique_ptr<AgentProcess> agent_;
  int metrics_port_ = 0;
  int64_t start_ms_ = NowMs() - 60'000;
};

// Points of a one-step answer: [t, min, max, avg] of the series with `label`=`value`.
json StepOf(const json& answer, const std::string& label, const std::string& value) {
  for (const json& s : answer["series"]) {
    if (s["labels"].value(label, "") == value && !s["points"].empty()) return s["points"][0];
  }
  return json();
}

TEST_F(GpuMetricsTest, ScriptedNvmlReachesTheStoreTheQueryAndPrometheus) {
  WriteScript(45);
  StartAgent(WS_FAKE_NVML_PATH);
  // The first readings, then a change the downsampled query must show as min/max.
  auto wait_for = [&](auto pred, int seconds) {
    for (int i = 0; i < seconds * 4 && !pred(); ++i) std::this_thread::sleep_for(250ms);
    return pred();
  };
  ASSERT_TRUE(wait_for([&] { return !StepOf(Metric("gpu_utilization", "gpu"), "gpu", "0").is_null(); }, 30))
      << AgentLog();
  WriteScript(85);
  ASSERT_TRUE(wait_for([&] {
    json p = StepOf(Metric("gpu_utilization", "gpu"), "gpu", "0");
    return !p.is_null() && p[2].get<double>() == 85;
  }, 30)) << AgentLog();

  json util = Metric("gpu_utilization", "gpu");
  EXPECT_EQ(util["unit"], "percent");
  json gpu0 = StepOf(util, "gpu", "0");
  EXPECT_EQ(gpu0[1].get<double>(), 45) << "min";
  EXPECT_EQ(gpu0[2].get<double>(), 85) << "max";
  EXPECT_GT(gpu0[3].get<double>(), 45);
  EXPECT_LT(gpu0[3].get<double>(), 85) << "avg of both";
  EXPECT_EQ(StepOf(util, "gpu", "1")[3].get<double>(), 5);

  // Power: unsupported on GPU 1 only; the other metrics of GPU 1 keep coming.
  json power = Metric("gpu_power", "gpu");
  EXPECT_EQ(power["unit"], "watts");
  EXPECT_EQ(StepOf(power, "gpu", "0")[3].get<double>(), 312);
  EXPECT_TRUE(StepOf(power, "gpu", "1").is_null()) << power.dump();
  EXPECT_EQ(StepOf(Metric("gpu_memory_used", "gpu"), "gpu", "0")[1].get<double>(), 10737418240.0) << "exact";
  EXPECT_EQ(StepOf(Metric("gpu_sm_activity", "gpu"), "gpu", "0")[3].get<double>(), 50) << "GPM";

  // Per process: the real pid, its comm from /proc.
  json proc = Metric("gpu_process_sm_utilization", "pid,comm,gpu");
  json p = StepOf(proc, "pid", std::to_string(process_));
  ASSERT_FALSE(p.is_null()) << proc.dump();
  EXPECT_EQ(p[3].get<double>(), 30);
  for (const json& s : proc["series"]) EXPECT_EQ(s["labels"]["comm"], "sleep");
  EXPECT_FALSE(StepOf(Metric("gpu_process_memory_used", "pid"), "pid", std::to_string(process_)).is_null());

  // Targets list the node's GPUs.
  json targets = GetJson("/api/v1/targets?from=" + std::to_string(start_ms_) + "&to=now");
  bool found = false;
  for (const json& node : targets["nodes"]) {
    if (node["node"] != "gpu-node") continue;
    found = true;
    ASSERT_EQ(node["gpus"].size(), 2u) << node.dump();
    EXPECT_EQ(node["gpus"][0]["uuid"], "GPU-0000aaaa");
    EXPECT_EQ(node["gpus"][1]["pci_bus_id"], "00000000:3b:00.0");
  }
  EXPECT_TRUE(found) << targets.dump();

  // The Prometheus endpoint, parsed by Prometheus' client library.
  HttpResult r = HttpGet(metrics_port_, "/metrics");
  ASSERT_EQ(r.status, 200);
  json parsed = ParsePrometheusText(r.body);
  ASSERT_FALSE(parsed.contains("error")) << parsed.dump() << "\n" << r.body;
  auto families = PrometheusFamilies(parsed);
  auto sample = [&](const std::string& family, const std::string& gpu) -> json {
    for (const json& s : families[family]["samples"]) {
      if (s["labels"].value("gpu", "") == gpu) return s;
    }
    return json();
  };
  EXPECT_EQ(sample("DCGM_FI_DEV_GPU_UTIL", "0")["value"], 85.0);
  EXPECT_EQ(sample("DCGM_FI_DEV_GPU_UTIL", "0")["labels"]["UUID"], "GPU-0000aaaa");
  EXPECT_EQ(sample("DCGM_FI_DEV_GPU_UTIL", "0")["labels"]["Hostname"], "gpu-node");
  EXPECT_EQ(sample("DCGM_FI_DEV_POWER_USAGE", "0")["value"], 312.0);
  EXPECT_TRUE(sample("DCGM_FI_DEV_POWER_USAGE", "1").is_null());
  EXPECT_EQ(sample("DCGM_FI_DEV_FB_USED", "0")["value"], 10240.0);
  EXPECT_EQ(sample("warpscope_gpu_process_sm_utilization_percent", "0")["labels"]["pid"], std::to_string(process_));
  bool power_off = false;
  for (const json& s : families["warpscope_agent_gpu_metric_disabled"]["samples"]) {
    power_off |= s["labels"]["gpu"] == "1" && s["labels"]["metric"] == "gpu_power";
  }
  EXPECT_TRUE(power_off) << r.body;
  EXPECT_EQ(families["warpscope_agent_gpu_metrics_enabled"]["samples"][0]["value"], 1.0);

  EXPECT_EQ(StopAgent(), 0) << AgentLog();
  EXPECT_EQ(AgentLog().find("GPU metrics off"), std::string::npos) << AgentLog();
}

// No driver: the agent says once why GPU metrics are off and keeps profiling.
TEST_F(GpuMetricsTest, NoNvmlLibraryKeepsProfilingCpus) {
  StartAgent(dir_ + "/no/libnvidia-ml.so.1");
  bool uploaded = false;
  for (int i = 0; i < 60 && !uploaded; ++i) {
    std::this_thread::sleep_for(250ms);
    uploaded = GetJson("/api/v1/status")["ingested_batches"].get<int64_t>() >= 2;
  }
  EXPECT_TRUE(uploaded) << AgentLog();
  HttpResult r = HttpGet(metrics_port_, "/metrics");
  ASSERT_EQ(r.status, 200);
  auto families = PrometheusFamilies(ParsePrometheusText(r.body));
  EXPECT_EQ(families["warpscope_agent_gpu_metrics_enabled"]["samples"][0]["value"], 0.0);
  EXPECT_EQ(families.count("DCGM_FI_DEV_GPU_UTIL"), 0u);
  EXPECT_EQ(StopAgent(), 0);
  const std::string log = AgentLog();
  const size_t first = log.find("GPU metrics off");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("GPU metrics off", first + 1), std::string::npos) << "said once\n" << log;
  EXPECT_TRUE(Metric("gpu_utilization", "gpu")["series"].empty());
}

// The agent's /metrics (two workers, often on every interface) used to grow
// the root agent by 170 MB under a header flood and go silent under two
// slow clients. Heads are bounded and read off its workers now.
TEST_F(GpuMetricsTest, MetricsEndpointHoldsUpAgainstFloodsAndSlowClients) {
  StartAgent(dir_ + "/no/libnvidia-ml.so.1");
  for (int i = 0; i < 40 && HttpGet(metrics_port_, "/metrics").status != 200; ++i) std::this_thread::sleep_for(250ms);
  const int64_t before = ProcessRssKiB(agent_->pid());
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    const int fd = ConnectLoopback(metrics_port_);
    ASSERT_GE(fd, 0);
    ::send(fd, "GET /metrics HTTP/1.1\r\n", 24, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  const std::string pad = "X-Pad: " + std::string(8000, 'p') + "\r\n";
  for (int round = 0; round < 4; ++round) {
    const int flood = ConnectLoopback(metrics_port_);
    ASSERT_GE(flood, 0);
    ::send(flood, "GET /metrics HTTP/1.1\r\n", 24, MSG_NOSIGNAL);
    for (int i = 0; i < 1000; ++i) {
      if (::send(flood, pad.data(), pad.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) break;
    }
    pollfd p{flood, POLLIN, 0};
    char reply[64] = {};
    ASSERT_GT(poll(&p, 1, 5000), 0);
    ASSERT_GT(recv(flood, reply, sizeof(reply) - 1, 0), 0);
    EXPECT_EQ(std::string(reply).rfind("HTTP/1.1 431", 0), 0u) << reply;
    close(flood);
    for (int fd : slow) ::send(fd, "X-a: b\r\n", 8, MSG_NOSIGNAL);
    EXPECT_EQ(HttpGet(metrics_port_, "/metrics").status, 200) << "round " << round;
  }
  for (int fd : slow) close(fd);
  const int64_t after = ProcessRssKiB(agent_->pid());
  EXPECT_LT(after - before, 16 * 1024) << "agent RSS " << before << " -> " << after << " KiB";
  EXPECT_EQ(StopAgent(), 0);
}

// Insights from NVML and CPU samples alone: a Python process busy on the CPU
// in a known function while its GPU idles is starved (named with its pid and
// that function); another as busy on the CPU but with a busy GPU, and the
// idle sleep process with an idle GPU, are not (no false alarm). A fourth
// GPU, busy and held at 1410 of its 1980 MHz by its power cap (clock event
// reason 0x4), is throttled; the busy GPU 1, whose clock is as low but
// without a reason, is not.
TEST_F(GpuMetricsTest, AStarvedGpuIsAnInsightNamingTheProcessAndItsFunction) {
  const std::vector<std::string> feeder = {"/usr/bin/python3", WS_CPU_BOUND_FEEDER, "40"};
  const pid_t starved = StartProcess(feeder), balanced = StartProcess(feeder);
  const std::string tmp = dir_ + "/nvml.script.tmp";
  std::ofstream(tmp) << "devices 4\n"
                     << "set 0 utilization_gpu 8\nset 1 utilization_gpu 92\nset 2 utilization_gpu 3\n"
                     << "set 1 clock_sm 1410\nset 1 max_clock_sm 1980\nset 1 clock_event_reasons 0\n"
                     << "set 3 utilization_gpu 95\nset 3 clock_sm 1410\nset 3 max_clock_sm 1980\n"
                     << "set 3 clock_event_reasons 4\n"
                     << "process 0 " << starved << " sm 8 used 1073741824\n"
                     << "process 1 " << balanced << " sm 92 used 1073741824\n"
                     << "process 2 " << process_ << " sm 3 used 1073741824\n";
  ASSERT_EQ(rename(tmp.c_str(), (dir_ + "/nvml.script").c_str()), 0);
  const int64_t start = NowMs();
  StartAgent(WS_FAKE_NVML_PATH,
             std::to_string(starved) + "," + std::to_string(balanced) + "," + std::to_string(process_));
  std::this_thread::sleep_for(30s);
  // Two CPU-bound feeders, the agent and the server share this machine's two
  // cores: a feeder's busiest thread gets 0.6-0.95 of a core per step, so
  // the starved threshold is set below the default 0.7 (what is tested is
  // the naming, not the threshold).
  json answer = GetJson("/api/v1/insights?from=" + std::to_string(start) + "&to=now&starved_thread_cores=0.5");
  kill(starved, SIGKILL);
  kill(balanced, SIGKILL);
  WaitProcess(starved);
  WaitProcess(balanced);
  ASSERT_EQ(answer["insights"].size(), 2u) << answer.dump().substr(0, 3000) << AgentLog();
  const json* starved_insight = nullptr;
  const json* throttled = nullptr;
  for (const json& i : answer["insights"]) {
    if (i["kind"] == "gpu_starved_by_cpu") starved_insight = &i;
    if (i["kind"] == "throttled") throttled = &i;
  }
  ASSERT_NE(throttled, nullptr) << answer.dump().substr(0, 3000);
  EXPECT_EQ((*throttled)["target"]["gpu"], "3") << throttled->dump();
  EXPECT_NEAR((*throttled)["numbers"]["sm_clock_share"].get<double>(), 1410.0 / 1980, 1e-9);
  EXPECT_GE((*throttled)["numbers"]["power_capped_seconds"].get<double>(), 10);
  EXPECT_EQ((*throttled)["numbers"]["thermal_seconds"].get<double>(), 0);
  // The busy time the lower clock added: 95 % busy, (1 - 1410/1980) of it.
  EXPECT_NEAR((*throttled)["saving_gpu_seconds"].get<double>() /
                  (*throttled)["numbers"]["busy_gpu_seconds"].get<double>(),
              1 - 1410.0 / 1980, 1e-6);
  ASSERT_NE(starved_insight, nullptr) << answer.dump().substr(0, 3000);
  const json& x = *starved_insight;
  EXPECT_EQ(x["kind"], "gpu_starved_by_cpu");
  EXPECT_EQ(x["target"]["pid"], std::to_string(starved));
  EXPECT_EQ(x["target"]["gpu"], "0");
  EXPECT_EQ(x["target"]["comm"], "python3");
  ASSERT_FALSE(x["functions"].empty());
  // The first function of the process's own code (the kernel's interrupt
  // return, where the timer's samples land, may rank beside it).
  const json* own = nullptr;
  for (const json& f : x["functions"]) {
    if (f["binary"] != "[kernel.kallsyms]") {
      own = &f;
      break;
    }
  }
  ASSERT_NE(own, nullptr) << x["functions"].dump();
  EXPECT_EQ((*own)["name"], "tokenize_batch") << x["functions"].dump();
  EXPECT_GT((*own)["share"].get<double>(), 0.2) << "its self time; the rest is spread over the interpreter's own functions";
  EXPECT_NEAR(x["numbers"]["gpu_utilization_percent"].get<double>(), 8, 1e-9);
  EXPECT_GE(x["numbers"]["starved_seconds"].get<double>(), 10);
  EXPECT_EQ(x["links"][0]["type"], "cpu");
  EXPECT_EQ(StopAgent(), 0);
}

// GPU energy through the real agent: the stand-in NVML's GPU alternates 4 s
// busy at 300 W and 4 s idle at 60 W, its energy counter the exact integral
// (read every 5th collection, as the agent reads it every 10th by default),
// and two processes hold 60 % and 20 % of its SMs. Over two whole cycles
// whose edges lie in idle seconds: 2880 J, 2400 of them busy, shared 3:1.
// The agent's --label region=... gives the node its region's CO₂ figures.
TEST_F(GpuMetricsTest, ScriptedEnergyCounterGivesJoulesBusyIdleAndShares) {
  const pid_t other = StartProcess({"/bin/sleep", "120"});
  const std::string tmp = dir_ + "/nvml.script.tmp";
  std::ofstream(tmp) << "devices 1\n"
                     << "set 0 energy_mj 7000000000\n"
                     << "cycle 0 4 4 300000 60000\n"
                     << "process 0 " << process_ << " sm 60 used 1073741824\n"
                     << "process 0 " << other << " sm 20 used 1073741824\n";
  ASSERT_EQ(rename(tmp.c_str(), (dir_ + "/nvml.script").c_str()), 0);
  StartAgent(WS_FAKE_NVML_PATH, std::to_string(process_) + "," + std::to_string(other),
             {"--gpu-metrics-interval", "500ms", "--label", "region=eu-north-1"});
  // The range: from the middle of an idle phase at least 6 s from now
  // (a counter reading before it), two cycles long.
  constexpr int64_t kCycleMs = 8000;
  const int64_t earliest = NowMs() + 6000;
  int64_t from = earliest / kCycleMs * kCycleMs + 6000;  // idle phase: [4 s, 8 s) of each cycle
  if (from < earliest) from += kCycleMs;
  const int64_t to = from + 2 * kCycleMs;
  // A counter reading after the range, and its upload.
  while (NowMs() < to + 6000) std::this_thread::sleep_for(200ms);
  const std::string range = "from=" + std::to_string(from) + "&to=" + std::to_string(to);
  json j = GetJson("/api/v1/energy?group_by=gpu&" + range);
  kill(other, SIGKILL);
  WaitProcess(other);
  ASSERT_EQ(j["groups"].size(), 1u) << j.dump(2) << AgentLog();
  const json& gpu = j["groups"][0];
  EXPECT_EQ(gpu["gpu_source"], "energy_counter") << gpu.dump();
  // The agent's region label: Cloud Carbon Footprint's AWS Stockholm figures.
  EXPECT_EQ(gpu["region"], "eu-north-1");
  EXPECT_NEAR(gpu["carbon_intensity"].get<double>(), 8.8, 1e-9);
  EXPECT_NEAR(gpu["pue"].get<double>(), 1.135, 1e-12);
  std::cerr << "energy through the agent: " << gpu["gpu_joules"] << " J (2880), busy " << gpu["gpu_busy_joules"]
            << " (2400), idle " << gpu["gpu_idle_joules"] << " (480)\n";
  EXPECT_NEAR(gpu["gpu_joules"].get<double>(), 2880, 2880 * 0.01) << gpu.dump();
  EXPECT_NEAR(gpu["gpu_busy_joules"].get<double>(), 2400, 2400 * 0.01) << gpu.dump();
  EXPECT_NEAR(gpu["gpu_idle_joules"].get<double>(), 480, 2880 * 0.01) << gpu.dump();
  // Per process: the busy joules 3:1 by SM utilization, the idle ones with the GPU.
  j = GetJson("/api/v1/energy?group_by=process&" + range);
  double first = -1, second = -1, idle = -1;
  for (const json& g : j["groups"]) {
    const std::string pid = g["labels"].value("pid", "");
    if (pid == std::to_string(process_)) first = g["gpu_joules"].get<double>();
    if (pid == std::to_string(other)) second = g["gpu_joules"].get<double>();
    if (g["labels"].contains("gpu")) idle = g["gpu_idle_joules"].get<double>();
  }
  EXPECT_NEAR(first, 1800, 2400 * 0.01) << j.dump(2);
  EXPECT_NEAR(second, 600, 2400 * 0.01) << j.dump(2);
  EXPECT_NEAR(idle, 480, 2880 * 0.01) << j.dump(2);
  // CO₂: the total's kWh × the query's PUE × intensity.
  j = GetJson("/api/v1/energy?" + range + "&pue=1.4&carbon_intensity=250");
  EXPECT_NEAR(j["total"]["co2_grams"].get<double>(), j["total"]["total_joules"].get<double>() / 3.6e6 * 1.4 * 250, 1e-9);
  EXPECT_EQ(StopAgent(), 0);
}

// A node with eight GPUs and one process per GPU (as torchrun runs them):
// every GPU has its own series with its own values, each process's
// utilization is on the GPU it uses, and the Targets list has all eight.
TEST_F(GpuMetricsTest, EightGpusEachWithItsSeriesAndItsProcess) {
  constexpr int kGpus = 8;
  std::vector<pid_t> ranks;
  std::string pids;
  for (int i = 0; i < kGpus; ++i) {
    ranks.push_back(StartProcess({"/bin/sleep", "120"}));
    pids += (i ? "," : "") + std::to_string(ranks.back());
  }
  {
    std::ofstream out(dir_ + "/nvml.script.tmp");
    out << "devices " << kGpus << "\n";
    for (int i = 0; i < kGpus; ++i) {
      char uuid[64], pci[64];
      std::snprintf(uuid, sizeof(uuid), "GPU-%08d", i);
      std::snprintf(pci, sizeof(pci), "00000000:%02x:00.0", 0x19 + i * 0x10);
      out << "device " << i << " name \"NVIDIA H200\" uuid " << uuid << " pci " << pci << "\n"
          << "set " << i << " utilization_gpu " << 10 + i * 10 << "\n"
          << "set " << i << " power_mw " << (100 + i * 50) * 1000 << "\n"
          << "process " << i << " " << ranks[i] << " sm " << 5 + i * 10 << " used 1073741824\n";
    }
  }
  ASSERT_EQ(rename((dir_ + "/nvml.script.tmp").c_str(), (dir_ + "/nvml.script").c_str()), 0);
  StartAgent(WS_FAKE_NVML_PATH, pids);
  auto all_there = [&] {
    json proc = Metric("gpu_process_sm_utilization", "pid,gpu");
    for (int i = 0; i < kGpus; ++i) {
      if (StepOf(proc, "pid", std::to_string(ranks[i])).is_null()) return false;
    }
    return true;
  };
  for (int i = 0; i < 120 && !all_there(); ++i) std::this_thread::sleep_for(250ms);
  ASSERT_TRUE(all_there()) << AgentLog();

  json util = Metric("gpu_utilization", "gpu"), power = Metric("gpu_power", "gpu");
  json proc = Metric("gpu_process_sm_utilization", "pid,gpu");
  for (int i = 0; i < kGpus; ++i) {
    SCOPED_TRACE("gpu " + std::to_string(i));
    const std::string gpu = std::to_string(i);
    ASSERT_FALSE(StepOf(util, "gpu", gpu).is_null()) << util.dump();
    EXPECT_EQ(StepOf(util, "gpu", gpu)[3].get<double>(), 10 + i * 10);
    EXPECT_EQ(StepOf(power, "gpu", gpu)[3].get<double>(), 100 + i * 50);
    for (const json& series : proc["series"]) {
      if (series["labels"].value("pid", "") != std::to_string(ranks[i])) continue;
      EXPECT_EQ(series["labels"].value("gpu", ""), gpu) << "the GPU the process uses, on its series";
      EXPECT_EQ(series["points"][0][3].get<double>(), 5 + i * 10);
    }
  }
  EXPECT_EQ(util["series"].size(), static_cast<size_t>(kGpus)) << util.dump();

  json targets = GetJson("/api/v1/targets?from=" + std::to_string(start_ms_) + "&to=now");
  for (const json& node : targets["nodes"]) {
    if (node["node"] != "gpu-node") continue;
    ASSERT_EQ(node["gpus"].size(), static_cast<size_t>(kGpus)) << node.dump();
    for (int i = 0; i < kGpus; ++i) {
      EXPECT_EQ(node["gpus"][i]["gpu"], std::to_string(i)) << "by index";
      char uuid[64];
      std::snprintf(uuid, sizeof(uuid), "GPU-%08d", i);
      EXPECT_EQ(node["gpus"][i]["uuid"], uuid);
    }
  }
  EXPECT_EQ(StopAgent(), 0);
  for (pid_t pid : ranks) {
    kill(pid, SIGKILL);
    WaitProcess(pid);
  }
}

}  // namespace
}  // namespace warpscope::testing
