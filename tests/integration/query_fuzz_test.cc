// A bounded, seeded fuzz of the query options and of the MCP endpoint, on the
// real warpscope-server on loopback (CONTRIBUTING.md, "Tests"), beside the
// ingest fuzz (ingest_fuzz_test.cc), over data that holds what the finders
// find hardest: GPU-only processes (NVML per-process utilization with no
// CPU samples: a process blocked in the GPU, or an agent run with --pid), a
// CPU-bound feeder, waits, the agent's CUDA analyses, throttling, GPM and
// NCCL kernels on two ranks.
//
// Cases: GET insights, energy and the GPU views with every option drawn from
// edge values (0, -0, NaN, inf, 1e400, hex, the bounds and just past them,
// garbage) and odd ranges and steps; POST /mcp with tool calls, bodies
// nested from 60 to 1,000,000 levels (in params, in arguments, at the top),
// wide and large bodies up to and past the size limit, and malformed ones.
//
// Checks: no answer is a 5xx; every request is answered; the process stays
// up and /healthz answers within 2 s; the RSS floor after the fuzz is within
// kRssGrowthBound of the floor after its warm-up; an MCP range of the API's
// longest span (now-31d) is taken; /api/v1/status counts what was refused.
//
// Knobs: WS_FUZZ_SEEDS=a,b (default: one fixed, one from the clock);
// WS_FUZZ_SECONDS (default 40, shared by the seeds). A failure names its
// case as seed:index.
//
// Threading: the test's one thread sends and checks every case.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/batch_factory.h"
#include "tests/integration/ingest_fuzz_cases.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using fuzz::CaseRng;
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr char kToken[] = "query-fuzz-token";
constexpr int64_t kSec = 1'000'000'000;
constexpr uint64_t kFixedSeed = 0x9e7f2026;
constexpr uint64_t kLivenessEvery = 100;
constexpr double kWarmupShare = 0.25;
constexpr double kRssWindowShare = 0.125;
// A leak of a parsed MCP body or of a query's working set per case (a few
// thousand cases follow the warm-up) passes this; the queries' transient
// peaks do not count, since the check compares floors.
constexpr int64_t kRssGrowthBound = 32 << 20;

double NowS() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t RssOf(pid_t pid, bool* alive) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  int64_t rss = 0;
  *alive = false;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0) *alive = line.find('Z') == std::string::npos;
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atoll(line.c_str() + 6) * 1024;
  }
  return rss;
}

// Ten minutes up to now, in 5 s steps (NVML's per-process cadence).
void Seed(int port) {
  const int64_t now = WallNs() / kSec * kSec;
  const int64_t from = now - 600 * kSec;
  BatchFactory f("query-fuzz", 1, from, now);
  const Labels gpu_only = {{"node", "n0"}, {"pid", "500"}, {"comm", "gpu_only"}, {"gpu", "0"}};
  const Labels feeder = {{"node", "n0"}, {"pid", "600"}, {"comm", "feeder"}, {"gpu", "1"}};
  for (int64_t t = from, i = 0; t < now; t += 5 * kSec, ++i) {
    // The GPU-only process: low utilization, memory held, no CPU samples.
    f.AddMetric("gpu_process_sm_utilization", "percent", gpu_only, 5 + (i % 3), t);
    f.AddMetric("gpu_process_memory_used", "bytes", gpu_only, 1e9, t);
    f.AddMetric("gpu_process_sm_utilization", "percent", feeder, i % 4 == 0 ? 90 : 10, t);
    f.AddMetric("gpu_process_memory_used", "bytes", feeder, 2e9, t);
    for (const char* gpu : {"0", "1"}) {
      const Labels device = {{"node", "n0"}, {"gpu", gpu}};
      f.AddMetric("gpu_utilization", "percent", device, 70, t);
      f.AddMetric("gpu_power", "watts", device, 300, t);
      f.AddMetric("gpu_energy", "joules", device, 300.0 * static_cast<double>(i) * 5, t);
      f.AddMetric("gpu_sm_clock", "megahertz", device, 1200, t);
      f.AddMetric("gpu_sm_clock_max", "megahertz", device, 1980, t);
      f.AddMetric("gpu_dram_bandwidth", "percent", device, 80, t);
      f.AddMetric("gpu_tensor_activity", "percent", device, 5, t);
      f.AddMetric("gpu_clocks_throttled", "ratio", {{"node", "n0"}, {"gpu", gpu}, {"reason", "power"}}, 0.6, t);
    }
    // The feeder's busy thread, and a thread waiting in CUDA synchronisation.
    f.Add("main@feeder;tokenize@feeder", {{"node", "n0"}, {"pid", "600"}, {"comm", "feeder"}, {"thread", "feeder"}},
          90, t);
    f.Add("py:step@train.py:10;cudaDeviceSynchronize@libcudart.so",
          {{"node", "n0"}, {"pid", "600"}, {"comm", "feeder"}, {"thread", "sync"}}, 4 * kSec, t, "gpu_wait");
    const Labels cuda = {{"node", "n0"}, {"pid", "600"}, {"comm", "feeder"}, {"device", "1"}};
    Labels busy = cuda, idle = cuda;
    busy.push_back({"category", "compute"});
    idle.push_back({"reason", "host_wait"});
    f.AddMetric("cuda_gpu_busy_seconds", "seconds", busy, 1.0, t);
    f.AddMetric("cuda_gpu_idle_seconds", "seconds", idle, 4.0, t);
    f.AddMetric("cuda_kernels", "count", cuda, 20000, t);
    f.AddMetric("cuda_kernels_launch_known", "count", cuda, 20000, t);
    f.AddMetric("cuda_short_kernels", "count", cuda, 15000, t);
    f.AddMetric("cuda_kernel_seconds", "seconds", cuda, 0.1, t);
    f.AddMetric("cuda_launch_call_seconds", "seconds", cuda, 0.2, t);
  }
  // NCCL kernels on two ranks, and some compute, over the last 5 seconds.
  for (int64_t k = 0; k < 200; ++k) {
    const int64_t t = now - 5 * kSec + k * 20'000'000;
    for (int rank = 0; rank < 2; ++rank) {
      const Labels process = {{"node", "n0"}, {"pid", std::to_string(700 + rank)}, {"comm", "rank"}};
      f.AddGpuKernel("ncclAllReduceKernel", process, t + rank * 1'000'000, 5'000'000, static_cast<uint32_t>(rank), 7,
                     static_cast<uint64_t>(k * 2 + 1));
      f.AddGpuKernel("gemm", process, t + 6'000'000, 2'000'000, static_cast<uint32_t>(rank), 7,
                     static_cast<uint64_t>(k * 2 + 2));
    }
  }
  HttpResult r = PostBatch(port, f.batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
}

// Edge values for a numeric option.
std::string OddNumber(CaseRng& r) {
  if (r.Chance(0.3)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(r.Below(2'000'000)) / 1000.0);
    return buf;
  }
  return r.Pick(std::vector<std::string>{"0", "-0", "0.0", "1e-300", "0.001", "0.01", "0.5", "1", "50", "99.9",
                                         "100", "100.1", "1024", "1025", "1e9", "1e10", "1e400", "-1e400", "-1",
                                         "nan", "NaN", "inf", "-inf", "0x10", "0x0", "", "abc", " 1", "1 ",
                                         "\xd9\xa3", "9223372036854775807", "18446744073709551616", "1e", "+0"});
}

std::string OddRange(CaseRng& r, bool from) {
  if (r.Chance(0.75)) {
    return from ? r.Pick(std::vector<std::string>{"now-10m", "now-15m", "now-1h", "now-30s", "now-5s"})
                : r.Pick(std::vector<std::string>{"now", "now+1m"});
  }
  return r.Pick(std::vector<std::string>{"now-31d", "now-32d", "0", "-1", "now", "now-1ms", "9223372036854775807",
                                         "2262-04-11T23:47:16.854775807Z", "1970-01-01T00:00:00Z", "now-", ""});
}

struct Case {
  std::string what;
  std::string path;  // GET path and query, or empty for a POST /mcp
  std::string body;  // the MCP body
  // A body past the request size limit: the server may answer 413 and close
  // before it has read the rest, which a client can see as a broken write.
  bool may_go_unanswered = false;
};

Case QueryCase(CaseRng& r) {
  struct Route {
    const char* path;
    std::vector<const char*> options;
  };
  static const std::vector<Route> routes = {
      {"/api/v1/insights",
       {"starved_gpu_percent", "starved_thread_cores", "min_share", "min_duration_ms", "sync_share", "min_wait_ms",
        "short_kernel_share", "min_launch_rate", "launch_idle_share", "min_sequence_rate", "busy_gpu_percent",
        "throttle_share", "transfer_share", "memory_bound_dram_percent", "memory_bound_tensor_percent",
        "memory_bound_stall_share", "memory_bound_kernel_share", "top", "step"}},
      {"/api/v1/energy", {"pue", "carbon_intensity", "price_per_kwh", "cpu_watts_per_core", "step", "group_by"}},
      {"/api/v1/gpu/kernels", {}},
      {"/api/v1/gpu/ranks", {"step_tolerance_us", "kernels"}},
      {"/api/v1/gpu/stalls", {}},
      {"/api/v1/gpu/kernel_source", {"kernel"}},
      {"/api/v1/gpu/trace", {}},
  };
  const Route& route = routes[r.Below(routes.size())];
  std::string query = "?from=" + UrlEncode(OddRange(r, true)) + "&to=" + UrlEncode(OddRange(r, false));
  if (r.Chance(0.2)) {
    query += "&selector=" + UrlEncode(r.Pick(std::vector<std::string>{
                                "{pid=\"500\"}", "{pid=\"600\"}", "{node=\"n0\"}", "{gpu=\"0\"}", "{comm=~\"gpu.*\"}",
                                "{pid=\"nope\"}", "{"}));
  }
  for (const char* option : route.options) {
    if (!r.Chance(0.35)) continue;
    std::string value = OddNumber(r);
    if (std::string(option) == "step") {
      value = r.Pick(std::vector<std::string>{"1ms", "1s", "5s", "10s", "1m", "0s", "-1s", "1d", "abc", ""});
    } else if (std::string(option) == "group_by") {
      value = r.Pick(std::vector<std::string>{"node", "gpu", "process", "pid", "pod", "", "nope"});
    } else if (std::string(option) == "kernel") {
      value = r.Pick(std::vector<std::string>{"gemm", "ncclAllReduceKernel", "", std::string(5000, 'k')});
    }
    query += std::string("&") + option + "=" + UrlEncode(value);
  }
  return {route.path + query, route.path + query, ""};
}

// `levels` arrays one inside the other.
std::string Nested(size_t levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }

Case McpCase(CaseRng& r) {
  const std::string head = "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(r.Below(1000)) + ",";
  switch (r.Below(6)) {
    case 0: {  // deep, in params, in arguments or at the top
      const size_t levels = r.Pick(std::vector<size_t>{30, 62, 63, 64, 1000, 150'000, 1'000'000});
      switch (r.Below(3)) {
        case 0:
          return {"deep params " + std::to_string(levels), "",
                  head + "\"method\":\"ping\",\"params\":{\"x\":" + Nested(levels) + "}}"};
        case 1:
          return {"deep arguments " + std::to_string(levels), "",
                  head + "\"method\":\"tools/call\",\"params\":{\"name\":\"get_insights\",\"arguments\":{\"from\":" +
                      Nested(levels) + "}}}"};
        default:
          return {"deep unclosed " + std::to_string(levels), "", std::string(levels, r.Chance(0.5) ? '[' : '{')};
      }
    }
    case 1: {  // wide: up to past the request size limit
      const size_t bytes = r.Pick(std::vector<size_t>{1000, 1 << 20, 15 << 20, 17 << 20});
      std::string wide = "[";
      while (wide.size() < bytes) wide += "1234567,";
      wide += "1]";
      return {"wide " + std::to_string(bytes), "", head + "\"method\":\"ping\",\"params\":{\"x\":" + wide + "}}",
              bytes > (16u << 20)};
    }
    case 2:
      return {"malformed", "",
              r.Pick(std::vector<std::string>{"", "{", "[]", "null", "{\"jsonrpc\":\"2.0\"}", head + "\"method\":5}",
                                              head + "\"method\":\"ping\"} trailing", "\xff\xfe",
                                              head + "\"method\":\"tools/call\",\"params\":[]}"})};
    default: {  // a tool call with odd arguments
      const std::string tool = r.Pick(std::vector<std::string>{"get_insights", "top_functions", "flame_graph_summary",
                                                               "gpu_kernels", "gpu_metrics_summary", "list_targets",
                                                               "list_profile_types", "nope"});
      json args = json::object();
      if (r.Chance(0.8)) args["from"] = OddRange(r, true);
      if (r.Chance(0.3)) args["to"] = OddRange(r, false);
      if (r.Chance(0.2)) args["selector"] = r.Pick(std::vector<std::string>{"{pid=\"500\"}", "{", "{gpu=\"0\"}"});
      if (r.Chance(0.3)) {
        const std::string key = r.Pick(std::vector<std::string>{"top", "limit", "depth", "min_share", "max_lines"});
        args[key] = r.Pick(std::vector<json>{0, -1, 1, 50, 65, 501, 0.0005, 1e18, "1", true, nullptr});
      }
      const json m = {{"jsonrpc", "2.0"},
                      {"id", r.Below(1000)},
                      {"method", "tools/call"},
                      {"params", {{"name", tool}, {"arguments", args}}}};
      return {"tools/call " + m["params"].dump().substr(0, 200), "", m.dump()};
    }
  }
}

struct Answer {
  int status = 0;
  std::string body;
  std::string error;
};

Answer Send(int port, const Case& c) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(60, 0);
  client.set_write_timeout(60, 0);
  httplib::Headers headers = {{"Authorization", std::string("Bearer ") + kToken}};
  httplib::Result res = c.path.empty() ? client.Post("/mcp", headers, c.body, "application/json")
                                       : client.Get(c.path.c_str(), headers);
  Answer a;
  if (!res) {
    a.error = httplib::to_string(res.error());
    return a;
  }
  a.status = res->status;
  a.body = std::move(res->body);
  return a;
}

std::vector<uint64_t> Seeds() {
  std::vector<uint64_t> seeds;
  if (const char* s = getenv("WS_FUZZ_SEEDS"); s && *s) {
    for (std::string rest = s; !rest.empty();) {
      const size_t comma = rest.find(',');
      seeds.push_back(std::strtoull(rest.substr(0, comma).c_str(), nullptr, 0));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
    return seeds;
  }
  return {kFixedSeed, static_cast<uint64_t>(WallNs())};
}

class QueryFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    // As in the ingest fuzz: the allocator gives freed memory back, so RSS
    // follows the live heap and a floor that rises is a leak.
    setenv("MALLOC_ARENA_MAX", "2", 1);
    setenv("MALLOC_MMAP_THRESHOLD_", "262144", 1);
    setenv("MALLOC_TRIM_THRESHOLD_", "1048576", 1);
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken});
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

// The exact requests that took the server down, before the fuzz.
TEST_F(QueryFuzzTest, KnownCrashesAreRefused) {
  const int port = server_->port();
  Seed(port);
  for (const char* value : {"0", "-0"}) {
    HttpResult r = HttpGet(port, std::string("/api/v1/insights?from=now-10m&starved_thread_cores=") + value, kToken);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("starved_thread_cores"), std::string::npos) << r.body;
  }
  HttpResult r = HttpGet(port, "/api/v1/insights?from=now-10m&selector=" + UrlEncode("{pid=\"500\"}"), kToken);
  EXPECT_EQ(r.status, 200) << r.body;
  Case deep{"", "", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":" + Nested(150'000) + "}}"};
  Answer a = Send(port, deep);
  EXPECT_EQ(a.status, 400) << a.error << a.body;
  // The API's longest range through MCP.
  a = Send(port, {"", "", json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                               {"params", {{"name", "list_targets"}, {"arguments", {{"from", "now-31d"}}}}}}
                              .dump()});
  ASSERT_EQ(a.status, 200) << a.error;
  EXPECT_EQ(json::parse(a.body, nullptr, false).value("result", json::object()).value("isError", true), false)
      << a.body;
  bool alive = false;
  RssOf(server_->pid(), &alive);
  EXPECT_TRUE(alive);
  r = HttpGet(port, "/api/v1/status", kToken);
  ASSERT_EQ(r.status, 200);
  const json status = json::parse(r.body);
  EXPECT_EQ(status["queries"]["bad_parameters"], 2);
  EXPECT_EQ(status["queries"]["mcp_too_deep"], 1);
  EXPECT_EQ(status["queries"]["mcp_rejected"], 1);
}

TEST_F(QueryFuzzTest, OptionsAndMcpBodiesNeverBreakTheServer) {
  const int port = server_->port();
  Seed(port);
  const std::vector<uint64_t> seeds = Seeds();
  double budget_s = 40;
  if (const char* s = getenv("WS_FUZZ_SECONDS"); s && *s) budget_s = std::atof(s);
  std::fprintf(stderr, "query fuzz seeds:");
  for (uint64_t s : seeds) std::fprintf(stderr, " %" PRIu64, s);
  std::fprintf(stderr, " (WS_FUZZ_SEEDS to repeat), %.0f s\n", budget_s);
  const double begin = NowS();
  std::vector<std::pair<double, int64_t>> rss;
  std::map<int, uint64_t> statuses;
  uint64_t cases = 0, failures = 0;
  auto fail = [&](const std::string& id, const Case& c, const std::string& why) {
    if (++failures <= 20) ADD_FAILURE() << "case " << id << " [" << c.what.substr(0, 300) << "] -> " << why;
  };
  bool alive = true;
  for (size_t p = 0; p < seeds.size() && alive; ++p) {
    const double until = begin + budget_s * static_cast<double>(p + 1) / static_cast<double>(seeds.size());
    for (uint64_t index = 0; NowS() < until && alive; ++index) {
      CaseRng r(seeds[p], index);
      const Case c = r.Chance(0.6) ? QueryCase(r) : McpCase(r);
      const std::string id = std::to_string(seeds[p]) + ":" + std::to_string(index);
      const Answer a = Send(port, c);
      ++cases;
      ++statuses[a.status];
      if (!a.error.empty() && !c.may_go_unanswered) fail(id, c, "no answer: " + a.error);
      if (a.status >= 500) fail(id, c, "answered " + std::to_string(a.status) + ": " + a.body.substr(0, 400));
      if (cases % kLivenessEvery == 0 || !a.error.empty()) {
        const int64_t now_rss = RssOf(server_->pid(), &alive);
        if (!alive) {
          fail(id, c, "the server is gone; log tail: " + server_->log().substr(server_->log().size() > 2000 ? server_->log().size() - 2000 : 0));
          break;
        }
        rss.emplace_back(NowS(), now_rss);
        httplib::Client health("127.0.0.1", port);
        health.set_read_timeout(2, 0);
        const double asked = NowS();
        auto h = health.Get("/healthz");
        if (!h || h->status != 200 || NowS() - asked > 2) fail(id, c, "/healthz did not answer 200 within 2 s");
      }
    }
  }
  const double end = NowS();
  std::fprintf(stderr, "%" PRIu64 " cases in %.1f s; statuses:", cases, end - begin);
  for (const auto& [s, n] : statuses) std::fprintf(stderr, " %d x %" PRIu64, s, n);
  std::fprintf(stderr, "\n");
  ASSERT_TRUE(alive) << "the server died";
  EXPECT_GT(cases, 200u) << "too few cases to mean anything";
  auto floor = [&](double from, double to) {
    int64_t f = 0;
    for (const auto& [t, v] : rss) {
      if (t >= from && t <= to && (f == 0 || v < f)) f = v;
    }
    return f;
  };
  const double warmup_end = begin + budget_s * kWarmupShare, window = budget_s * kRssWindowShare;
  const int64_t warmup_rss = floor(warmup_end - window, warmup_end), end_rss = floor(end - window, end);
  std::fprintf(stderr, "RSS floor after the warm-up %" PRId64 " KiB, at the end %" PRId64 " KiB\n", warmup_rss / 1024,
               end_rss / 1024);
  if (warmup_rss > 0 && end_rss > 0) EXPECT_LE(end_rss - warmup_rss, kRssGrowthBound);
  // Every refusal is counted.
  HttpResult r = HttpGet(port, "/api/v1/status", kToken);
  ASSERT_EQ(r.status, 200);
  const json q = json::parse(r.body)["queries"];
  std::fprintf(stderr, "status queries: %s\n", q.dump().c_str());
  EXPECT_GT(q["bad_parameters"].get<uint64_t>(), 0u);
  EXPECT_GT(q["mcp_rejected"].get<uint64_t>(), 0u);
  EXPECT_GT(q["mcp_too_deep"].get<uint64_t>(), 0u);
  const ServerExit exit = server_->Stop(60);
  EXPECT_EQ(exit.exit_code, 0) << "signal " << exit.signal;
}

}  // namespace
}  // namespace warpscope::testing
