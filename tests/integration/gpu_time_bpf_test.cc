// GPU time through the whole pipeline, without a GPU: the real agent
// (`warpscope-agent run`: BPF uprobe on the real libwarpscope_cuda.so's
// launch probe, the CUDA socket, the join) and a real warpscope-server on
// loopback. The "CUDA application" (tests/testprogs/cuda_launch_sites.cc)
// drives the real injection library through the fake CUPTI from two known
// call sites with known kernel durations, so the stored gpu_time profile has
// an exact answer: per-kernel totals, and each kernel under its call site.
// tests/testprogs/cuda_activity_scenarios.cc scripts whole GPU timelines on
// the fake CUPTI's simulated stream for the agent's activity analyses and the
// insights built on them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "agent/symbolize/cubin_symbols.h"
#include "model/cubin_hash.h"
#include "tests/integration/agent_process.h"
#include "tests/integration/pprof_reader.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "gpu-time-token";
constexpr int64_t kAlphaNs = 300'000;
constexpr int64_t kBetaNs = 100'000;

class GpuTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    StopAgent();
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  std::string Socket() const { return dir_ + "/cuda.sock"; }
  void StartAgent(const std::string& mode, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--server", server_->url(), "--token", kToken, "--upload-interval", "1s",
                                     "--state-dir", dir_ + "/agent", "--node-name", "gpu-node", "--no-gpu-metrics",
                                     "--cuda-socket", Socket(), "--gpu-time-mode", mode};
    args.insert(args.end(), extra.begin(), extra.end());
    agent_ = std::make_unique<AgentProcess>(WS_AGENT_BIN, args, dir_ + "/agent.log");
    ASSERT_TRUE(agent_->started());
    struct stat st {};
    for (int i = 0; i < 400 && stat(Socket().c_str(), &st) != 0; ++i) std::this_thread::sleep_for(50ms);
    ASSERT_EQ(stat(Socket().c_str(), &st), 0) << AgentLog();
  }
  void StopAgent() {
    if (agent_) agent_->Stop();
  }
  std::string AgentLog() { return agent_ ? agent_->Log() : ""; }
  // Runs the application; returns the launches whose records were queued
  // (with `waits`: the stream and device synchronisations made).
  // `left`: how often the library left CUPTI (unsubscribed) and tore it down (finalized).
  struct Left {
    uint64_t unsubscribed = 0;
    uint64_t finalized = 0;
  };
  std::pair<int64_t, int64_t> RunApplication(int iterations, Left* left = nullptr, bool waits = false) {
    std::vector<std::string> argv = {
        "/usr/bin/env", "WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH, "WARPSCOPE_AGENT_SOCKET=" + Socket(),
        // The agent samples the process, and reads its maps, before CUPTI is
        // loaded: it must read them again when the process connects.
        "WS_SPIN_BEFORE_CUPTI_MS=400", std::string(WS_TESTPROGS_DIR) + "/cuda_launch_sites", WS_CUDA_LIBRARY_PATH,
        std::to_string(iterations)};
    if (waits) argv.insert(argv.end(), {"30", "waits"});
    const ProcessResult r = RunProcess(argv, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::istringstream out(r.out);
    std::string word;
    int64_t alpha = 0, beta = 0;
    while (out >> word) {
      if (word == "recorded" || word == "waited") out >> alpha >> beta;
      if (word == "left" && left != nullptr) out >> left->unsubscribed >> left->finalized;
    }
    return {alpha, beta};
  }
  // Folded stacks of the gpu_time profile: "root;...;leaf" -> nanoseconds.
  // `query`: a URL-encoded selector, e.g. %7Bestimate%3D%22scaled%22%7D.
  std::map<std::string, int64_t> Collapsed(const std::string& query = "", const std::string& type = "gpu_time") {
    HttpResult r = HttpGet(server_->port(),
                           "/api/v1/profile?type=" + type + "&from=now-10m&to=now&format=collapsed" +
                               (query.empty() ? std::string() : "&selector=" + query),
                           kToken);
    EXPECT_EQ(r.status, 200) << r.body;
    std::map<std::string, int64_t> stacks;
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos) continue;
      stacks[line.substr(0, space)] += std::stoll(line.substr(space + 1));
    }
    return stacks;
  }
  static std::string Leaf(const std::string& stack) {
    const size_t semi = stack.rfind(';');
    return semi == std::string::npos ? stack : stack.substr(semi + 1);
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(GpuTimeTest, EveryKernelsTimeIsCountedUnderTheCallSiteThatLaunchedIt) {
  StartAgent("exact");
  const auto [alpha, beta] = RunApplication(3000);
  ASSERT_GT(alpha, 2900) << "the fake CUPTI recorded too few kernels";
  ASSERT_GT(beta, 2900);
  // Exact mode: every recorded kernel's time is in the profile, once.
  const int64_t want_alpha = alpha * kAlphaNs, want_beta = beta * kBetaNs;
  std::map<std::string, int64_t> by_leaf;
  std::map<std::string, int64_t> stacks;
  for (int i = 0; i < 120; ++i) {  // grace period (3 s) + upload windows
    stacks = Collapsed();
    by_leaf.clear();
    for (const auto& [stack, ns] : stacks) by_leaf[Leaf(stack)] += ns;
    if (by_leaf["alphaKernel()"] >= want_alpha && by_leaf["betaKernel()"] >= want_beta) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(by_leaf["alphaKernel()"], want_alpha) << AgentLog();
  EXPECT_EQ(by_leaf["betaKernel()"], want_beta);

  // Attribution: the probe sampled some launches (200 per second per thread),
  // the others' time is spread over the same kernel's sampled stacks; each
  // kernel must sit under its own call site, never the other's.
  int64_t alpha_under_site = 0, beta_under_site = 0, alpha_placeholder = 0;
  for (const auto& [stack, ns] : stacks) {
    const std::string leaf = Leaf(stack);
    if (leaf == "alphaKernel()") {
      EXPECT_EQ(stack.find("SiteBeta"), std::string::npos) << stack;
      if (stack.find("SiteAlpha;") != std::string::npos && stack.find("main;") != std::string::npos) {
        alpha_under_site += ns;
      }
      if (stack.find("[launch not sampled]") != std::string::npos) alpha_placeholder += ns;
    } else if (leaf == "betaKernel()") {
      EXPECT_EQ(stack.find("SiteAlpha"), std::string::npos) << stack;
      if (stack.find("SiteBeta;") != std::string::npos) {
        beta_under_site += ns;
      } else {
        ADD_FAILURE() << "betaKernel outside SiteBeta: " << stack << " " << ns;
      }
    }
  }
  EXPECT_EQ(alpha_placeholder, 0) << "alpha's launches were sampled, so nothing goes to the placeholder";
  EXPECT_EQ(alpha_under_site, want_alpha);
  EXPECT_EQ(beta_under_site, want_beta);

  // The activity trace: the kernel table has every launch (the trace budget,
  // 20,000 per second, is above this application's rate).
  json table = GetApiJson(server_->port(), "/api/v1/gpu/kernels?from=now-10m&to=now", kToken);
  std::map<std::string, json> kernels;
  for (const json& k : table["kernels"]) kernels[k["name"].get<std::string>()] = k;
  ASSERT_TRUE(kernels.count("alphaKernel()")) << table.dump().substr(0, 2000);
  EXPECT_EQ(kernels["alphaKernel()"]["launches"], alpha);
  EXPECT_EQ(kernels["alphaKernel()"]["total_ns"], want_alpha);
  EXPECT_EQ(kernels["alphaKernel()"]["p50_ns"], kAlphaNs);
  EXPECT_EQ(kernels["alphaKernel()"]["system_name"], "_Z11alphaKernelv");
  EXPECT_EQ(kernels["betaKernel()"]["launches"], beta);
  EXPECT_EQ(kernels["betaKernel()"]["total_ns"], want_beta);
  EXPECT_EQ(table["recorded"], table["sent"]) << "nothing thinned";

  // The agent counted what it joined.
  StopAgent();
  const std::string log = AgentLog();
  EXPECT_EQ(log.find("GPU time is off"), std::string::npos) << log;
}

// GPU wait: the application waits in cudaStreamSynchronize (3 ms, while
// gammaKernel runs 2 ms on that stream) and cudaDeviceSynchronize (1 ms,
// while deltaKernel runs 400 us) from two call sites, at 500 waits/s, above
// the library's 200 sampled stacks per second: the unsampled waits are
// spread over the sampled ones of the same call. The fake CUPTI's clock
// makes each wait exactly as long as scripted, so the stored gpu_wait
// profile has an exact answer per call site and per kernel waited for.
// Four ranks of a data-parallel job, one process per GPU: each rank's
// kernels are on its own device in the gpu_time profile and in the
// analyses, NCCL's all-reduce is under its Python call site and counted as
// communication, and the deliberately slow rank 2 shows twice the GPU time
// per step in its GEMM.
TEST_F(GpuTimeTest, RanksOnFourDevicesKeepTheirKernelsApart) {
  constexpr int kRanks = 4, kIterations = 300;
  constexpr int64_t kGemm = 300'000, kAllReduce = 200'000;
  const int64_t start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count() - 1000;
  StartAgent("exact");
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kRanks; ++rank) {
    pids.push_back(StartProcess({"/usr/bin/env", "WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH,
                                 "WARPSCOPE_AGENT_SOCKET=" + Socket(), "/usr/bin/python3", WS_RANKS,
                                 WS_CUDA_LIBRARY_PATH, std::to_string(rank), std::to_string(kIterations),
                                 std::to_string(rank == 2 ? 2 * kGemm : kGemm)},
                                dir_ + "/rank" + std::to_string(rank) + ".err",
                                dir_ + "/rank" + std::to_string(rank) + ".out"));
  }
  std::vector<std::pair<int64_t, int64_t>> recorded(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(WaitProcess(pids[rank]), 0) << rank << AgentLog();
    std::ifstream out(dir_ + "/rank" + std::to_string(rank) + ".out");
    std::string word;
    out >> word >> recorded[rank].first >> recorded[rank].second;
    ASSERT_EQ(word, "recorded");
    ASSERT_GT(recorded[rank].first, kIterations * 9 / 10) << rank;
  }
  auto selector = [&](int rank, int device) {
    return "%7Bpid%3D%22" + std::to_string(pids[rank]) + "%22%2Cdevice%3D%22" + std::to_string(device) + "%22%7D";
  };
  auto total = [](const std::map<std::string, int64_t>& stacks) {
    int64_t n = 0;
    for (const auto& [stack, ns] : stacks) n += ns;
    return n;
  };
  const int64_t want0 = recorded[0].first * kGemm + recorded[0].second * kAllReduce;
  for (int i = 0; i < 80 && total(Collapsed(selector(0, 0))) < want0; ++i) std::this_thread::sleep_for(250ms);
  for (int rank = 0; rank < kRanks; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const int64_t gemm_ns = rank == 2 ? 2 * kGemm : kGemm;
    std::map<std::string, int64_t> own = Collapsed(selector(rank, rank));
    for (int i = 0; i < 40 && total(own) < recorded[rank].first * gemm_ns + recorded[rank].second * kAllReduce; ++i) {
      std::this_thread::sleep_for(250ms);
      own = Collapsed(selector(rank, rank));
    }
    int64_t gemm = 0, reduce = 0;
    for (const auto& [stack, ns] : own) {
      if (Leaf(stack) == "gemm_step" && stack.find("forward;") != std::string::npos) gemm += ns;
      if (Leaf(stack).rfind("ncclDevKernel_AllReduce", 0) == 0 && stack.find("all_reduce;") != std::string::npos) {
        reduce += ns;
      }
    }
    EXPECT_EQ(gemm, recorded[rank].first * gemm_ns) << "its GEMMs under forward, on its device";
    EXPECT_EQ(reduce, recorded[rank].second * kAllReduce) << "NCCL's kernel under all_reduce";
    EXPECT_EQ(total(own), gemm + reduce);
    const int other = (rank + 1) % kRanks;
    EXPECT_EQ(total(Collapsed(selector(rank, other))), 0) << "nothing on another rank's device";
    // The analyses: the all-reduce is communication, on the rank's device
    // (the last seconds come once the process has ended; one reading a
    // second, so 1 s points add up).
    const double want_communication = recorded[rank].second * kAllReduce / 1e9;
    const double want_compute = recorded[rank].first * gemm_ns / 1e9;
    std::map<std::pair<std::string, std::string>, double> seconds;
    json busy;
    for (int i = 0; i < 60; ++i) {
      busy = GetApiJson(server_->port(),
                        "/api/v1/metrics?name=cuda_gpu_busy_seconds&from=" + std::to_string(start_ms) +
                            "&to=now&step=1s&group_by=device,category&selector=%7Bpid%3D%22" +
                            std::to_string(pids[rank]) + "%22%7D",
                        kToken);
      seconds.clear();
      for (const json& series : busy["series"]) {
        for (const json& p : series["points"]) {
          seconds[{series["labels"].value("device", ""), series["labels"].value("category", "")}] +=
              p[3].get<double>();
        }
      }
      if (seconds[{std::to_string(rank), "compute"}] >= want_compute * 0.99 &&
          seconds[{std::to_string(rank), "communication"}] >= want_communication * 0.99) {
        break;
      }
      std::this_thread::sleep_for(250ms);
    }
    EXPECT_NEAR((seconds[{std::to_string(rank), "communication"}]), want_communication, want_communication * 0.01)
        << busy.dump();
    EXPECT_NEAR((seconds[{std::to_string(rank), "compute"}]), want_compute, want_compute * 0.01);
    for (const auto& [key, value] : seconds) {
      if (value > 0) EXPECT_EQ(key.first, std::to_string(rank)) << "device " << key.first;
    }
  }
  // The ranks side by side: each on its device, rank 2's GEMM twice as long.
  json ranks = GetApiJson(server_->port(),
                          "/api/v1/gpu/ranks?from=" + std::to_string(start_ms) + "&to=now&selector=%7Bnode%3D%22gpu-node%22%7D",
                          kToken);
  ASSERT_EQ(ranks["ranks"].size(), static_cast<size_t>(kRanks)) << ranks.dump();
  std::map<std::string, int> index;  // pid -> index in ranks
  for (size_t i = 0; i < ranks["ranks"].size(); ++i) index[ranks["ranks"][i]["pid"]] = static_cast<int>(i);
  json gemm;
  for (const json& k : ranks["kernels"]) {
    if (k["system_name"] == "gemm_step") gemm = k;
  }
  ASSERT_FALSE(gemm.is_null()) << ranks.dump();
  EXPECT_DOUBLE_EQ(gemm["spread"].get<double>(), 2.0);
  for (int rank = 0; rank < kRanks; ++rank) {
    const int i = index.at(std::to_string(pids[rank]));
    EXPECT_EQ(ranks["ranks"][i]["device"], rank);
    for (const json& row : gemm["ranks"]) {
      if (row["rank"] == i) EXPECT_EQ(row["mean_ns"], rank == 2 ? 2 * kGemm : kGemm);
    }
  }
}

// PC sampling through the whole pipeline: a Python application
// (tests/testprogs/python/pc_sites.py) launches demo::scale from site_scale
// and add_one from site_add_one, loads a real cubin built with -lineinfo
// (agent/symbolize/testdata/cubin) and scripts PC samples at known offsets
// with known stall reasons. The stored gpu_pc profile has each
// (kernel, instruction, stall reason)'s samples times 2^period exactly, under
// the kernel's call site, with the source line (inlined functions named) and
// the stall reason in plain words; without nvdisasm (CI) instructions show as
// offsets. Two processes load the cubin: the server's cubin store holds it
// once, and every instruction frame points at it.
TEST_F(GpuTimeTest, PcSamplesLandUnderTheirCallSitesKernelsLinesInstructionsAndStalls) {
  constexpr int kPeriod = 10;
  const int metrics_port = FreePort();
  StartAgent("exact", {"--gpu-pc-sampling", "on", "--gpu-pc-period", std::to_string(kPeriod), "--metrics-listen",
                       "127.0.0.1:" + std::to_string(metrics_port)});
  // Two processes load the same cubin: the agent keeps one copy, uploads it
  // once, and the server stores it once.
  struct Run {
    ProcessResult result;
    int64_t scale = 0, add_one = 0, sampled = 0;
  };
  auto run = [&](int iterations) {
    Run run;
    run.result = RunProcess({"/usr/bin/env", "WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH,
                             "WARPSCOPE_AGENT_SOCKET=" + Socket(), "/usr/bin/python3", WS_PC_SITES,
                             WS_CUDA_LIBRARY_PATH, WS_PC_CUBIN, std::to_string(iterations)},
                            120);
    std::istringstream out(run.result.out);
    std::string word;
    while (out >> word) {
      if (word == "recorded") out >> run.scale >> run.add_one;
      if (word == "sampled") out >> run.sampled;
    }
    return run;
  };
  Run second;
  std::thread other([&] { second = run(300); });
  const Run first = run(1500);
  other.join();
  ASSERT_EQ(first.result.exit_code, 0) << first.result.err << AgentLog();
  ASSERT_EQ(second.result.exit_code, 0) << second.result.err << AgentLog();
  ASSERT_GT(first.scale, 1400);
  ASSERT_GT(second.scale, 280);
  const int64_t sampled = first.sampled + second.sampled;
  ASSERT_EQ(sampled % 6, 0);
  const int64_t iterations = sampled / 6;  // each sampled iteration: 3 + 1 + 2
  ASSERT_GT(iterations, 1680);

  std::map<std::string, int64_t> stacks;
  int64_t total = 0;
  for (int i = 0; i < 160 && total < (sampled << kPeriod); ++i) {  // grace period + windows
    std::this_thread::sleep_for(250ms);
    stacks = Collapsed("", "gpu_pc");
    total = 0;
    for (const auto& [stack, cycles] : stacks) total += cycles;
  }
  ASSERT_EQ(total, sampled << kPeriod) << AgentLog();
  // The library's counters outlive its process in the agent's.
  auto counter = [&](const std::string& event) -> int64_t {
    return AgentEventCounter(metrics_port, event);
  };
  for (int i = 0; i < 40 && counter("cuda_lib_pc_samples") != sampled; ++i) std::this_thread::sleep_for(250ms);
  EXPECT_EQ(counter("cuda_lib_pc_samples"), sampled);
  EXPECT_EQ(counter("cuda_lib_pc_samples_total"), sampled);
  EXPECT_EQ(counter("gpu_pc_samples"), sampled);

  // The lines the cubin gives for the sampled offsets (its own parser, no SASS).
  std::ifstream in(WS_PC_CUBIN, std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CubinSymbolsOptions no_sass;
  no_sass.sass = CubinSymbolsOptions::Sass::kDisabled;
  auto symbols = CubinSymbols::Parse(cubin, no_sass);
  ASSERT_TRUE(symbols.ok()) << symbols.status().ToString();
  struct Want {
    std::string mangled, kernel, site, pc, stall;
    int64_t samples;
  };
  const std::vector<Want> wants = {
      {"_ZN4demo5scaleEPfPKffi", "demo::scale(float*, float const*, float, int)", "site_scale", "0x0040",
       "waiting for global or local memory (long scoreboard)", 3},
      {"_ZN4demo5scaleEPfPKffi", "demo::scale(float*, float const*, float, int)", "site_scale", "0x0080",
       "math pipe busy (compute bound)", 1},
      {"add_one", "add_one", "site_add_one", "0x0030", "waiting for global or local memory (long scoreboard)", 2},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.kernel + " " + w.pc);
    const std::optional<GpuInstruction> inst = symbols->Find(w.mangled, std::stoull(w.pc, nullptr, 16));
    ASSERT_TRUE(inst.has_value());
    ASSERT_GT(inst->line, 0) << "the fixture has line information";
    std::string line = "kernels.cu:" + std::to_string(inst->line);
    if (!inst->inlined.empty()) line += " in " + inst->inlined.front().function;
    // Root first: ... site ... ; kernel ; line ; instruction ; stall reason.
    const std::string inside = ";" + w.kernel + ";" + line + ";" + w.pc + ";" + w.stall;
    int64_t all = 0, under_site = 0;
    for (const auto& [stack, cycles] : stacks) {
      if (stack.size() < inside.size() || stack.compare(stack.size() - inside.size(), inside.size(), inside) != 0) {
        continue;
      }
      all += cycles;
      if (stack.find(w.site) != std::string::npos) under_site += cycles;
    }
    EXPECT_EQ(all, (iterations * w.samples) << kPeriod) << "every sample, as estimated cycles";
    // The first add_one, launched outside the sites to turn sampling on,
    // holds a hundred-thousandth of add_one's GPU time.
    EXPECT_GE(under_site, all * 999 / 1000) << "under the kernel's call site";
  }
  std::string any;
  for (const auto& [stack, cycles] : stacks) any = stack;
  std::cerr << "a gpu_pc stack: " << any << "\n";

  // Inside demo::scale: its two sampled instructions under their lines, the
  // stall reasons by class, and the shares the insights read.
  HttpResult source = HttpGet(server_->port(),
                              "/api/v1/gpu/kernel_source?kernel=_ZN4demo5scaleEPfPKffi&from=now-10m&to=now", kToken);
  ASSERT_EQ(source.status, 200) << source.body;
  const json view = json::parse(source.body);
  EXPECT_EQ(view["kernel"], "demo::scale(float*, float const*, float, int)");
  EXPECT_EQ(view["total"].get<int64_t>(), (iterations * 4) << kPeriod);
  EXPECT_FALSE(view["sass"].get<bool>()) << "no nvdisasm in CI";
  std::map<int64_t, int64_t> by_offset;
  for (const json& line : view["lines"]) {
    EXPECT_EQ(line["file"].get<std::string>().substr(line["file"].get<std::string>().rfind('/') + 1), "kernels.cu");
    for (const json& i : line["instructions"]) by_offset[i["offset"].get<int64_t>()] += i["value"].get<int64_t>();
  }
  EXPECT_EQ(by_offset[0x40], (iterations * 3) << kPeriod);
  EXPECT_EQ(by_offset[0x80], (iterations * 1) << kPeriod);
  EXPECT_NEAR(view["shares"]["memory"].get<double>(), 0.75, 1e-9);
  EXPECT_NEAR(view["shares"]["compute"].get<double>(), 0.25, 1e-9);
  HttpResult stalls = HttpGet(server_->port(), "/api/v1/gpu/stalls?from=now-10m&to=now", kToken);
  ASSERT_EQ(stalls.status, 200) << stalls.body;
  const json kernels = json::parse(stalls.body)["kernels"];
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["system_name"], "_ZN4demo5scaleEPfPKffi") << "the most sampled first";
  EXPECT_NEAR(kernels[1]["memory"].get<double>(), 1.0, 1e-9) << "add_one waits on memory only";
  EXPECT_EQ(HttpGet(server_->port(), "/api/v1/gpu/kernel_source?kernel=nope&from=now-10m&to=now", kToken).status,
            404);
  // Both kernels wait on memory (75 % and 100 % of their cycles): memory_bound
  // insights from the PC samples, demo::scale the larger.
  HttpResult insights = HttpGet(server_->port(), "/api/v1/insights?from=now-10m&to=now", kToken);
  ASSERT_EQ(insights.status, 200) << insights.body;
  std::vector<std::string> memory_bound;
  const json found = json::parse(insights.body);
  for (const json& x : found["insights"]) {
    if (x["kind"] == "memory_bound" && x["target"].contains("kernel")) memory_bound.push_back(x["target"]["kernel"]);
  }
  EXPECT_EQ(memory_bound, (std::vector<std::string>{"demo::scale(float*, float const*, float, int)", "add_one"}))
      << insights.body.substr(0, 2000);

  // The cubin reached the server's store once (the agent's HEAD found
  // nothing, its PUT stored it), byte for byte, and each kernel's source
  // view names it as stored.
  const std::string hash = CubinHash(cubin);
  for (int i = 0; i < 40 && counter("cubin_uploads") != 1; ++i) std::this_thread::sleep_for(250ms);
  EXPECT_EQ(counter("cubin_uploads"), 1);
  EXPECT_EQ(counter("cubin_uploads_already_stored"), 0);
  EXPECT_EQ(counter("cubin_uploads_dropped"), 0);
  const json status = GetApiJson(server_->port(), "/api/v1/status", kToken);
  EXPECT_EQ(status["cubins"]["stored"], 1);
  EXPECT_EQ(status["cubins"]["already_stored"], 0);
  size_t files = 0;
  for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir_ + "/data/cubins")) ++files;
  EXPECT_EQ(files, 1u) << "one stored object";
  const HttpResult stored = HttpGet(server_->port(), "/api/v1/gpu/cubins/" + hash, kToken);
  ASSERT_EQ(stored.status, 200) << stored.body.substr(0, 300);
  EXPECT_TRUE(stored.body == cubin) << "byte-exact with the fixture";
  for (const char* kernel : {"_ZN4demo5scaleEPfPKffi", "add_one"}) {
    source = HttpGet(server_->port(),
                     std::string("/api/v1/gpu/kernel_source?kernel=") + kernel + "&from=now-10m&to=now", kToken);
    ASSERT_EQ(source.status, 200) << source.body;
    EXPECT_EQ(json::parse(source.body)["cubins"],
              json::array({{{"hash", hash}, {"stored", true}, {"bytes", cubin.size()}}}))
        << kernel;
  }
  // Every instruction of the gpu_pc profile, exported as pprof, has the
  // cubin as its mapping (build id its hash) at its PC offset.
  const HttpResult pprof =
      HttpGet(server_->port(), "/api/v1/profile?type=gpu_pc&from=now-10m&to=now&format=pprof", kToken);
  ASSERT_EQ(pprof.status, 200);
  StatusOr<std::string> raw = Gunzip(pprof.body);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  perftools::profiles::Profile exported;
  ASSERT_TRUE(exported.ParseFromString(*raw));
  std::map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : exported.function()) functions[f.id()] = &f;
  std::map<uint64_t, const perftools::profiles::Mapping*> mappings;
  for (const auto& m : exported.mapping()) mappings[m.id()] = &m;
  std::set<std::string> instructions;
  for (const auto& loc : exported.location()) {
    if (loc.line_size() == 0) continue;
    const std::string& system = exported.string_table(functions.at(loc.line(0).function_id())->system_name());
    const size_t plus = system.rfind("+0x");
    const std::string function = system.substr(0, plus);
    if (plus == std::string::npos || (function != "_ZN4demo5scaleEPfPKffi" && function != "add_one")) continue;
    instructions.insert(system);
    ASSERT_TRUE(mappings.count(loc.mapping_id())) << system;
    const perftools::profiles::Mapping& m = *mappings.at(loc.mapping_id());
    EXPECT_EQ(exported.string_table(m.build_id()), hash) << system;
    EXPECT_EQ(exported.string_table(m.filename()), "cubin") << system;
    EXPECT_EQ(loc.address(), std::stoull(system.substr(plus + 1), nullptr, 16)) << system;
  }
  EXPECT_EQ(instructions, (std::set<std::string>{"_ZN4demo5scaleEPfPKffi+0x0040", "_ZN4demo5scaleEPfPKffi+0x0080",
                                                 "add_one+0x0030"}));
}

TEST_F(GpuTimeTest, GpuWaitIsExactUnderEachCallSiteWithTheKernelsItWaitedFor) {
  StartAgent("exact");
  constexpr int64_t kStreamWait = 3'000'000, kGamma = 2'000'000, kDeviceWait = 1'000'000, kDelta = 400'000;
  const auto [stream_calls, device_calls] = RunApplication(400, nullptr, /*waits=*/true);
  ASSERT_EQ(stream_calls, 400);
  ASSERT_EQ(device_calls, 400);
  const int64_t want_total = stream_calls * kStreamWait + device_calls * kDeviceWait;
  std::map<std::string, int64_t> stacks;
  int64_t total = 0;
  for (int i = 0; i < 120; ++i) {  // grace period (3 s) + upload windows
    stacks = Collapsed("", "gpu_wait");
    total = 0;
    for (const auto& [stack, ns] : stacks) total += ns;
    if (total >= want_total) break;
    std::this_thread::sleep_for(250ms);
  }
  ASSERT_EQ(total, want_total) << AgentLog();
  int64_t stream_site = 0, gamma = 0, device_site = 0, delta = 0;
  for (const auto& [stack, ns] : stacks) {
    EXPECT_EQ(stack.find("[wait not sampled]"), std::string::npos) << stack;
    ASSERT_NE(stack.find("main;"), std::string::npos) << stack;
    const std::string leaf = Leaf(stack);
    if (stack.find("SiteStreamWait;") != std::string::npos) {
      stream_site += ns;
      if (leaf == "gammaKernel()") gamma += ns;
      EXPECT_NE(leaf, "deltaKernel()") << "a stream wait shows only its stream's kernels";
    } else if (stack.find("SiteDeviceWait;") != std::string::npos) {
      device_site += ns;
      if (leaf == "deltaKernel()") delta += ns;
      EXPECT_NE(leaf, "gammaKernel()") << "the gamma kernel had ended before the device wait began";
    } else {
      ADD_FAILURE() << "a wait under neither call site: " << stack << " " << ns;
    }
  }
  EXPECT_EQ(stream_site, stream_calls * kStreamWait);
  EXPECT_EQ(gamma, stream_calls * kGamma);
  EXPECT_EQ(device_site, device_calls * kDeviceWait);
  EXPECT_EQ(delta, device_calls * kDelta);
  // The wait_api label names the call.
  const auto stream_only = Collapsed("%7Bwait_api%3D%22cudaStreamSynchronize%22%7D", "gpu_wait");
  ASSERT_FALSE(stream_only.empty());
  for (const auto& [stack, ns] : stream_only) EXPECT_NE(stack.find("SiteStreamWait;"), std::string::npos) << stack;
  json types = GetApiJson(server_->port(), "/api/v1/types", kToken);
  EXPECT_NE(types.dump().find("gpu_wait"), std::string::npos) << types.dump();

  // The insights API names the waiting thread, its call sites and the
  // kernels it waited for (the 1.6 s of waits are most of the thread's time
  // but a small share of these 30 s: the threshold is lowered).
  json insights = GetApiJson(server_->port(),
                             "/api/v1/insights?from=now-30s&to=now&sync_share=0.02&min_wait_ms=1000", kToken);
  const json* sync = nullptr;
  for (const json& x : insights["insights"]) {
    if (x["kind"] == "sync_heavy") sync = &x;
  }
  ASSERT_NE(sync, nullptr) << insights.dump().substr(0, 2000);
  EXPECT_NEAR((*sync)["numbers"]["wait_seconds"].get<double>(), static_cast<double>(want_total) / 1e9, 1e-9);
  std::set<std::string> sites, waited;
  for (const json& f : (*sync)["functions"]) sites.insert(f["name"].get<std::string>());
  for (const json& f : (*sync)["waited_for"]) waited.insert(f["name"].get<std::string>());
  EXPECT_TRUE(sites.count("SiteStreamWait") && sites.count("SiteDeviceWait")) << (*sync)["functions"].dump();
  EXPECT_TRUE(waited.count("gammaKernel()") && waited.count("deltaKernel()")) << (*sync)["waited_for"].dump();
  // The waiting without a kernel under it: 1 ms of each stream wait, 600 us of each device wait.
  EXPECT_NEAR((*sync)["saving_gpu_seconds"].get<double>(),
              (stream_calls * (kStreamWait - kGamma) + device_calls * (kDeviceWait - kDelta)) / 1e9, 1e-9);
}

// PyTorch's backward pass without torch: the device thread of a stand-in
// autograd engine (tests/testprogs/fake_torch/, PyTorch's function names)
// launches MmBackward0's and AccumulateGrad's kernels and waits in DDP's
// hook while the Python thread that called backward
// (tests/testprogs/python/autograd_backward.py) waits in
// THPEngine_run_backward. The device thread's stacks have no Python frame;
// the agent's autograd probes put them under the caller's (train_step ->
// backward -> THPEngine_run_backward), with the node as a frame, in
// gpu_time and gpu_wait; the caller's own launches during the call keep
// their whole stack (the probe's pending return address is read through).
// `torch_python`: the stand-in's file, with THPEngine_run_backward exported
// (older PyTorch) or static (newer PyTorch: found in .symtab).
void ExpectAutogradGrafts(const std::string& socket, int metrics_port, bool exact, const std::string& torch_python,
                          const std::function<std::map<std::string, int64_t>(const std::string& type)>& collapsed,
                          const std::function<std::string()>& agent_log) {
  constexpr int kSteps = 400;
  const ProcessResult r = RunProcess({"/usr/bin/env", "WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH,
                                      "WARPSCOPE_AGENT_SOCKET=" + socket, "/usr/bin/python3", WS_AUTOGRAD_BACKWARD,
                                      WS_CUDA_LIBRARY_PATH, WS_FAKE_TORCH_DIR, std::to_string(kSteps), torch_python},
                                     120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  std::string word;
  int64_t forward = 0, mm = 0, accumulate = 0, to_copy = 0, waits = 0;
  out >> word >> forward >> mm >> accumulate >> to_copy >> waits;
  ASSERT_EQ(word, "recorded") << r.out;
  ASSERT_EQ(waits, kSteps);
  ASSERT_GT(mm, 0);
  // Exact mode has every kernel; adaptive mode scales its windows' kernels.
  const int64_t want_worker = mm * 300'000 + accumulate * 50'000;
  std::map<std::string, int64_t> stacks;
  auto sum = [&](auto pred) {
    int64_t n = 0;
    for (const auto& [stack, ns] : stacks) n += pred(stack) ? ns : 0;
    return n;
  };
  auto leaf_is = [](const std::string& stack, const std::string& leaf) {
    return stack.size() >= leaf.size() && stack.compare(stack.size() - leaf.size(), leaf.size(), leaf) == 0;
  };
  auto worker = [&](const std::string& s) {
    return leaf_is(s, ";mm_backward_kernel") || leaf_is(s, ";accumulate_grad_kernel");
  };
  std::this_thread::sleep_for(exact ? 0s : 4s);  // adaptive: the last windows settle when the process ends
  for (int i = 0; i < 120; ++i) {  // grace period (3 s) + upload windows
    stacks = collapsed("gpu_time");
    if (exact ? sum(worker) >= want_worker : (sum(worker) > 0 && i >= 12)) break;
    std::this_thread::sleep_for(250ms);
  }
  const int64_t worker_ns = sum(worker);
  if (exact) {
    EXPECT_EQ(worker_ns, want_worker) << agent_log();
  } else {
    ASSERT_GT(worker_ns, 0) << agent_log();
  }
  // Under the caller's Python frames (ctypes' frames stand where CPython's
  // calling a C function are) and the node that launched them.
  auto under_caller = [](const std::string& s) {
    const size_t python = s.find(";train_step;backward;_engine_run_backward;");
    return python != std::string::npos && s.find(";THPEngine_run_backward(", python) != std::string::npos;
  };
  const int64_t mm_grafted = sum([&](const std::string& s) {
    return leaf_is(s, ";mm_backward_kernel") && under_caller(s) && s.find(";[autograd] MmBackward0;") != std::string::npos &&
           s.find("MmBackward0::apply") != std::string::npos && s.find("thread_main") == std::string::npos;
  });
  const int64_t accumulate_grafted = sum([&](const std::string& s) {
    return leaf_is(s, ";accumulate_grad_kernel") && under_caller(s) &&
           s.find(";[autograd] AccumulateGrad;") != std::string::npos;
  });
  std::string shown;
  for (const auto& [stack, ns] : stacks) {
    if (worker(stack)) shown += stack + " " + std::to_string(ns) + "\n";
  }
  EXPECT_GE(mm_grafted + accumulate_grafted, worker_ns * 95 / 100) << shown << agent_log();
  EXPECT_GE(mm_grafted, sum([&](const std::string& s) { return leaf_is(s, ";mm_backward_kernel"); }) * 95 / 100);
  // The caller's own launches: whole, not grafted; forward's untouched.
  const int64_t to_copy_ns = sum([&](const std::string& s) { return leaf_is(s, ";to_copy_kernel"); });
  EXPECT_GT(to_copy_ns, 0);
  EXPECT_GE(sum([&](const std::string& s) {
              return leaf_is(s, ";to_copy_kernel") && under_caller(s) && s.find("[autograd]") == std::string::npos &&
                     s.find("ToCopyBackward0::apply") != std::string::npos && s.rfind("_start;", 0) == 0 &&
                     s.find(";ffi_call;") != std::string::npos;
            }),
            to_copy_ns * 95 / 100)
      << "the caller's stack during backward is whole: native frames rootward of THPEngine_run_backward too";
  EXPECT_EQ(sum([](const std::string& s) {
              return s.find("forward_kernel") != std::string::npos && s.find("[autograd]") != std::string::npos;
            }),
            0);
  // gpu_wait: the all-reduce waits of DDP's hook on the device thread.
  std::map<std::string, int64_t> wait_stacks;
  int64_t wait_total = 0;
  for (int i = 0; i < 40; ++i) {
    wait_stacks = collapsed("gpu_wait");
    wait_total = 0;
    for (const auto& [stack, ns] : wait_stacks) wait_total += ns;
    if (exact ? wait_total >= waits * 1'000'000 : wait_total > 0) break;
    std::this_thread::sleep_for(250ms);
  }
  if (exact) {
    EXPECT_EQ(wait_total, waits * 1'000'000);
  }
  ASSERT_GT(wait_total, 0);
  int64_t wait_grafted = 0;
  for (const auto& [stack, ns] : wait_stacks) {
    if (under_caller(stack) && stack.find(";[autograd];") != std::string::npos &&
        stack.find("c10d::Reducer::autograd_hook") != std::string::npos) {
      wait_grafted += ns;
    }
  }
  EXPECT_GE(wait_grafted, wait_total * 95 / 100);
  // The counters.
  auto counter = [&](const std::string& event) -> int64_t {
    return AgentEventCounter(metrics_port, event);
  };
  EXPECT_EQ(counter("gpu_autograd_calls"), kSteps);
  EXPECT_EQ(counter("gpu_autograd_calls_without_stack"), 0);
  EXPECT_GT(counter("gpu_autograd_grafted"), 0);
  EXPECT_EQ(counter("gpu_autograd_ambiguous"), 0);
  EXPECT_EQ(counter("gpu_autograd_unmatched"), 0);
  EXPECT_EQ(counter("gpu_autograd_probe_files_attached"), 1);
}

TEST_F(GpuTimeTest, AutogradThreadsGpuTimeAndWaitsLandUnderTheBackwardCaller) {
  const int metrics_port = FreePort();
  StartAgent("exact", {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  ExpectAutogradGrafts(
      Socket(), metrics_port, /*exact=*/true, "libtorch_python.so", [this](const std::string& type) { return Collapsed("", type); },
      [this] { return AgentLog(); });
}

// With the entry static, as in PyTorch 2.11's libtorch_python.so.
TEST_F(GpuTimeTest, AutogradGraftsInAdaptiveModeWithAStaticEntry) {
  const int metrics_port = FreePort();
  StartAgent("adaptive", {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  ExpectAutogradGrafts(
      Socket(), metrics_port, /*exact=*/false, "libtorch_python_static.so", [this](const std::string& type) { return Collapsed("", type); },
      [this] { return AgentLog(); });
}

// The default, adaptive mode: ~8,000 launches/s is launch-heavy enough that
// the library records in windows with CUPTI detached in between (1% budget);
// the profile's totals are the windows' kernels weighted up to the whole
// time, labelled estimate=scaled, and the call sites keep their shares.
TEST_F(GpuTimeTest, AdaptiveModeScalesWindowsToTheWholeTime) {
  StartAgent("adaptive");
  Left left;
  const int iterations = 12000;
  const auto [alpha, beta] = RunApplication(iterations, &left);
  EXPECT_GE(left.unsubscribed, 2u) << "CUPTI was left between windows";
  EXPECT_EQ(left.finalized, 0u) << "and never torn down";
  EXPECT_LT(alpha, iterations * 3 / 4) << "only part of the launches were recorded";
  EXPECT_GT(alpha, 0);
  const double want_alpha = static_cast<double>(iterations) * kAlphaNs;
  const double want_beta = static_cast<double>(iterations) * kBetaNs;
  // The last windows settle when the process ends; then the grace period and an upload.
  std::this_thread::sleep_for(4s);
  std::map<std::string, int64_t> by_leaf, before;
  for (int i = 0; i < 60; ++i) {
    before = by_leaf;
    by_leaf.clear();
    for (const auto& [stack, ns] : Collapsed()) by_leaf[Leaf(stack)] += ns;
    if (by_leaf["alphaKernel()"] > 0 && by_leaf == before) break;
    std::this_thread::sleep_for(500ms);
  }
  std::printf("adaptive estimate / truth: alpha %.4f beta %.4f (recorded %lld of %d launches, %llu leaves)\n",
              by_leaf["alphaKernel()"] / want_alpha, by_leaf["betaKernel()"] / want_beta,
              static_cast<long long>(alpha), iterations, static_cast<unsigned long long>(left.unsubscribed));
  // A sampled estimate: windows at the start and end of the loop weigh in
  // whole, so it is close, not exact.
  EXPECT_NEAR(by_leaf["alphaKernel()"] / want_alpha, 1.0, 0.25) << AgentLog();
  EXPECT_NEAR(by_leaf["betaKernel()"] / want_beta, 1.0, 0.25);
  const double share = static_cast<double>(by_leaf["alphaKernel()"]) /
                       static_cast<double>(by_leaf["alphaKernel()"] + by_leaf["betaKernel()"]);
  EXPECT_NEAR(share, 0.75, 0.02);
  int64_t scaled = 0;
  for (const auto& [stack, ns] : Collapsed("%7Bestimate%3D%22scaled%22%7D")) scaled += ns;
  EXPECT_GT(scaled, 0) << "scaled time is labelled estimate=scaled";
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What tests/testprogs/cuda_activity_scenarios printed: its GPU timeline,
// classified from its own clock.
struct ScenarioTruth {
  struct Split {
    double busy = 0, host_wait = 0, kernel_wait = 0, other = 0;
  };
  std::string pid;
  int64_t launches = 0, recorded = 0;
  int64_t init_ms = 0, first_launch_ms = 0, last_end_ms = 0;
  Split life;  // first launch to last kernel end
  int64_t range_from_ms = 0, range_to_ms = 0;
  Split range;  // the whole seconds [range_from_ms, range_to_ms)
};

ScenarioTruth RunScenario(const std::string& socket, const std::string& scenario, int seconds) {
  const ProcessResult r = RunProcess(
      {"/usr/bin/env", "WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH, "WARPSCOPE_AGENT_SOCKET=" + socket,
       std::string(WS_TESTPROGS_DIR) + "/cuda_activity_scenarios", WS_CUDA_LIBRARY_PATH, scenario,
       std::to_string(seconds)},
      120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ScenarioTruth t;
  std::istringstream out(r.out);
  std::string word;
  auto split = [&](ScenarioTruth::Split* s) {
    std::string name;
    out >> name >> s->busy >> name >> s->host_wait >> name >> s->kernel_wait >> name >> s->other;
  };
  while (out >> word) {
    if (word == "pid") out >> t.pid;
    if (word == "launches") out >> t.launches >> word >> t.recorded;
    if (word == "init_ms") out >> t.init_ms >> word >> t.first_launch_ms >> word >> t.last_end_ms;
    if (word == "life") split(&t.life);
    if (word == "range") {
      out >> t.range_from_ms >> t.range_to_ms;
      split(&t.range);
    }
  }
  std::printf("%s: %s", scenario.c_str(), r.out.c_str());
  return t;
}

// The GPU activity analyses (agent/collectors/gpu_time/activity_analyzer.h)
// and the insights that read them, through the agent, the injection library
// and the server, against GPU timelines the application scripts on the fake
// CUPTI's simulated stream and classifies itself
// (tests/testprogs/cuda_activity_scenarios.cc), one process each:
//  * gaps: 2 ms kernels 10 ms apart, the GPU waiting for the host between;
//  * launch_bound: three 300 ns elementwise kernels in a loop, each shorter
//    than its 5 us launch call and ~60 us of CPU work apart;
//  * balanced: 2 ms kernels queued ahead, the GPU busy all along.
// The stored busy and idle seconds must match each timeline within 1 % of
// the time compared; the insights must find launch_bound and the
// chain's fusion_candidate (its kernels, in a rotation of their launch
// order, and its call site) and nothing of the kind for the others. Then
//  * graph: the chain's kernels inside replays of a CUDA graph: counted, but
//    in no sequence, so no fusion_candidate.
TEST_F(GpuTimeTest, GpuBusyAndIdleSecondsAndLaunchInsightsMatchScriptedTimelines) {
  StartAgent("exact");
  std::map<std::string, ScenarioTruth> truth;
  for (const char* scenario : {"gaps", "launch_bound", "balanced"}) {
    truth[scenario] = RunScenario(Socket(), scenario, 3);
    ASSERT_FALSE(truth[scenario].pid.empty()) << scenario;
    ASSERT_EQ(truth[scenario].recorded, truth[scenario].launches) << scenario << ": every kernel has its record";
  }
  // Per-second readings: with 1 s steps each step holds one point per
  // series (one device), so the points' averages add up to the totals.
  auto sums = [&](const ScenarioTruth& t, const std::string& name, const std::string& group_by, int64_t from_ms,
                  int64_t to_ms) {
    json answer = GetApiJson(server_->port(),
                             "/api/v1/metrics?name=" + name + "&from=" + std::to_string(from_ms) +
                                 "&to=" + std::to_string(to_ms) + "&step=1s&group_by=" + group_by +
                                 "&selector=%7Bpid%3D%22" + t.pid + "%22%7D",
                             kToken);
    std::map<std::string, double> out;
    for (const json& s : answer["series"]) {
      for (const json& p : s["points"]) out[s["labels"].value(group_by, "")] += p[3].get<double>();
    }
    return out;
  };
  auto life_from = [](const ScenarioTruth& t) { return t.init_ms / 1000 * 1000 - 1000; };
  auto life_to = [](const ScenarioTruth& t) { return (t.last_end_ms / 1000 + 2) * 1000; };
  // Each process's readings are final once it ended (and its last records
  // came): its busy time over its life is then the truth's.
  for (int i = 0; i < 80; ++i) {
    bool all = true;
    for (const auto& [name, t] : truth) {
      const double busy = sums(t, "cuda_gpu_busy_seconds", "category", life_from(t), life_to(t))["compute"];
      all &= std::abs(busy - t.life.busy) < 1e-3;
    }
    if (all) break;
    std::this_thread::sleep_for(250ms);
  }
  for (const auto& [name, t] : truth) {
    SCOPED_TRACE(name);
    // Whole seconds within the activity: the agent's figures cover them exactly.
    const double observed = static_cast<double>(t.range_to_ms - t.range_from_ms) / 1e3;
    ASSERT_GE(observed, 1.0);
    std::map<std::string, double> busy = sums(t, "cuda_gpu_busy_seconds", "category", t.range_from_ms, t.range_to_ms);
    std::map<std::string, double> idle = sums(t, "cuda_gpu_idle_seconds", "reason", t.range_from_ms, t.range_to_ms);
    std::printf("%s over %.0f s: busy %.6f (truth %.6f) host_wait %.6f (%.6f) kernel_wait %.6f (%.6f) other %.6f (%.6f)\n",
                name.c_str(), observed, busy["compute"], t.range.busy, idle["host_wait"], t.range.host_wait,
                idle["kernel_wait"], t.range.kernel_wait, idle["other"], t.range.other);
    EXPECT_NEAR(busy["compute"], t.range.busy, 0.01 * observed) << AgentLog();
    EXPECT_NEAR(idle["host_wait"], t.range.host_wait, 0.01 * observed);
    EXPECT_NEAR(idle["kernel_wait"], t.range.kernel_wait, 0.01 * observed);
    EXPECT_NEAR(idle["other"], t.range.other, 0.01 * observed);
    EXPECT_EQ(busy.size(), 1u) << "compute only";

    // The whole life: the same, except that the agent also counts the time
    // from the connection to the first launch as host wait (the program
    // slept 1 s after the agent answered, and connected after init_ms).
    const double life = static_cast<double>(t.last_end_ms - t.first_launch_ms) / 1e3;
    busy = sums(t, "cuda_gpu_busy_seconds", "category", life_from(t), life_to(t));
    idle = sums(t, "cuda_gpu_idle_seconds", "reason", life_from(t), life_to(t));
    const double before_first = idle["host_wait"] - t.life.host_wait;
    std::printf("%s over its life (%.3f s): busy %.6f (truth %.6f) host_wait %.6f (%.6f + %.3f s before the first "
                "launch) kernel_wait %.6f (%.6f)\n",
                name.c_str(), life, busy["compute"], t.life.busy, idle["host_wait"], t.life.host_wait, before_first,
                idle["kernel_wait"], t.life.kernel_wait);
    EXPECT_NEAR(busy["compute"], t.life.busy, 1e-3);
    EXPECT_NEAR(idle["kernel_wait"], t.life.kernel_wait, 0.01 * life);
    EXPECT_NEAR(idle["other"], t.life.other, 0.01 * life);
    EXPECT_GT(before_first, 0.5);
    EXPECT_LE(before_first, static_cast<double>(t.first_launch_ms - t.init_ms) / 1e3 + 0.01 * life);
    EXPECT_NEAR(sums(t, "cuda_kernels", "pid", life_from(t), life_to(t))[t.pid], static_cast<double>(t.launches),
                0.5);
  }

  // Insights from each process's start to now (1 s steps; its few seconds
  // are enough: min_duration_ms lowered, every other threshold the default).
  const int64_t now_ms = NowMs();
  auto insights = [&](const ScenarioTruth& t) {
    json answer = GetApiJson(server_->port(),
                             "/api/v1/insights?from=" + std::to_string(life_from(t)) + "&to=" +
                                 std::to_string(now_ms) + "&step=1s&min_duration_ms=1000" +
                                 "&selector=%7Bpid%3D%22" + t.pid + "%22%7D",
                             kToken);
    std::map<std::string, json> by_kind;
    for (const json& x : answer["insights"]) {
      if (x["target"].value("pid", "") == t.pid) by_kind[x["kind"].get<std::string>()] = x;
    }
    return by_kind;
  };
  std::map<std::string, json> chain = insights(truth["launch_bound"]);
  ASSERT_TRUE(chain.count("launch_bound")) << AgentLog();
  const json& bound = chain["launch_bound"];
  EXPECT_NEAR(bound["numbers"]["short_kernel_share"].get<double>(), 1.0, 1e-9) << bound.dump();
  EXPECT_GT(bound["numbers"]["launch_wait_share"].get<double>(), 0.9) << bound.dump();
  EXPECT_GT(bound["numbers"]["kernels_per_second"].get<double>(), 1000) << bound.dump();
  ASSERT_FALSE(bound["functions"].empty()) << bound.dump();
  EXPECT_EQ(bound["functions"][0]["name"], "SiteElementwiseChain") << bound["functions"].dump();

  ASSERT_TRUE(chain.count("fusion_candidate")) << AgentLog();
  const json& fusion = chain["fusion_candidate"];
  const std::vector<std::string> kernels = {"at::native::vectorized_elementwise_kernel<4, at::native::add>",
                                            "at::native::vectorized_elementwise_kernel<4, at::native::mul>",
                                            "at::native::vectorized_elementwise_kernel<4, at::native::relu>"};
  ASSERT_EQ(fusion["sequence"].size(), 3u) << fusion.dump();
  // A loop of add, mul, relu runs each rotation equally often: any is right.
  const auto first = std::find(kernels.begin(), kernels.end(), fusion["sequence"][0].get<std::string>());
  ASSERT_NE(first, kernels.end()) << fusion["sequence"].dump();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(fusion["sequence"][i], kernels[(first - kernels.begin() + i) % 3]) << fusion["sequence"].dump();
  }
  ASSERT_FALSE(fusion["functions"].empty()) << fusion.dump();
  EXPECT_EQ(fusion["functions"][0]["name"], "SiteElementwiseChain") << fusion["functions"].dump();
  EXPECT_NEAR(fusion["functions"][0]["share"].get<double>(), 1.0, 1e-9);
  std::set<std::string> fused;
  for (const json& k : fusion["kernels"]) fused.insert(k["name"].get<std::string>());
  EXPECT_EQ(fused.size(), 3u) << fusion["kernels"].dump();
  // Each run of the three: 900 ns of GPU time. One run per loop (runs do not
  // overlap; the loop's rotations are one sequence), less the few split by
  // the agent's classification rounds (one a second).
  const double runs = fusion["numbers"]["runs"].get<double>();
  EXPECT_GE(runs, 0.98 * truth["launch_bound"].launches / 3.0) << fusion.dump();
  EXPECT_LE(runs, truth["launch_bound"].launches / 3.0 + 1);
  EXPECT_NEAR(fusion["numbers"]["gpu_seconds"].get<double>() / runs, 900e-9, 5e-9);

  for (const char* name : {"gaps", "balanced"}) {
    std::map<std::string, json> none = insights(truth[name]);
    for (const char* kind : {"launch_bound", "fusion_candidate", "transfer_bound", "gpu_starved_by_cpu"}) {
      EXPECT_FALSE(none.count(kind)) << name << ": " << none[kind].dump();
    }
  }

  // The same chain inside a CUDA graph: every kernel's record carries the
  // graph's id, and a replay is one launch already, so no sequence and no
  // fusion candidate, though all its kernels are counted.
  const ScenarioTruth graph = RunScenario(Socket(), "graph", 3);
  ASSERT_FALSE(graph.pid.empty());
  ASSERT_EQ(graph.recorded, graph.launches) << "every kernel has its record";
  for (int i = 0; i < 80; ++i) {
    if (sums(graph, "cuda_kernels", "pid", life_from(graph), life_to(graph))[graph.pid] >=
        static_cast<double>(graph.launches) - 0.5) {
      break;
    }
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_NEAR(sums(graph, "cuda_kernels", "pid", life_from(graph), life_to(graph))[graph.pid],
              static_cast<double>(graph.launches), 0.5) << AgentLog();
  EXPECT_TRUE(sums(graph, "cuda_kernel_sequence_count", "sequence", life_from(graph), life_to(graph)).empty());
  json replayed = GetApiJson(server_->port(),
                             "/api/v1/insights?from=" + std::to_string(life_from(graph)) + "&to=" +
                                 std::to_string(NowMs()) + "&step=1s&min_duration_ms=1000" +
                                 "&selector=%7Bpid%3D%22" + graph.pid + "%22%7D",
                             kToken);
  for (const json& x : replayed["insights"]) EXPECT_NE(x["kind"], "fusion_candidate") << x.dump();
}

TEST_F(GpuTimeTest, AnApplicationWithoutAnAgentStaysDormant) {
  // No agent on the socket: the library must not subscribe, and the
  // application runs to its end (its wait for a subscriber times out).
  const ProcessResult r = RunProcess(
      {"/usr/bin/env", "WARPSCOPE_CUPTI_PATH=" WS_FAKE_CUPTI_PATH, "WARPSCOPE_AGENT_SOCKET=" + Socket(),
       std::string(WS_TESTPROGS_DIR) + "/cuda_launch_sites", WS_CUDA_LIBRARY_PATH, "10", "2"},
      60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no agent answered"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace warpscope::testing
