// warpscope-server end to end, without an agent: a real server process on
// loopback with the embedded store, fed hand-built batches over HTTP.
// Covers the query API's answers, bad input (each rejected with a 4xx and
// nothing stored), the cubin store, and kill -9 during ingest (every
// acknowledged batch is there after a restart, nothing twice).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <thread>

#include "model/cubin_hash.h"
#include "tests/integration/batch_factory.h"
#include "tests/integration/pprof_reader.h"
#include "tests/integration/agent_process.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr char kToken[] = "test-token-123";
// A fixed hour in the past, so answers do not depend on the clock.
constexpr int64_t kT0 = 1'790'000'000'000'000'000;  // 2026-09-21
constexpr int64_t kSec = 1'000'000'000;

std::string Range(int64_t from_ns, int64_t to_ns) {
  return "from=" + std::to_string(from_ns / 1'000'000) + "&to=" + std::to_string(to_ns / 1'000'000);
}
const std::string kHour = Range(kT0, kT0 + 3600 * kSec);

class ServerApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    Restart();
  }
  void TearDown() override {
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  void Restart(int port = 0, const std::vector<std::string>& extra = {}) {
    // --retention 0: the batches are dated in the past (kT0) and must not expire.
    std::vector<std::string> args = {"--token", kToken, "--retention", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", args, port);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  HttpResult Get(const std::string& path) { return HttpGet(server_->port(), path, kToken); }
  json GetJson(const std::string& path) { return GetApiJson(server_->port(), path, kToken); }
  uint64_t StoredSamples() { return GetJson("/api/v1/status").value("samples", uint64_t{0}); }

  // Two processes on node a (hot 3 : cold 1) and one on node b.
  BatchFactory Workload(uint64_t sequence) {
    BatchFactory f("agent-1", sequence, kT0, kT0 + 10 * kSec);
    const Labels app{{"node", "a"}, {"pid", "100"}, {"comm", "app"}, {"exe", "/usr/bin/app"}};
    f.Add("_start@app;main@app;Pipeline.hot@app", app, 300, kT0);
    f.Add("_start@app;main@app;Pipeline.cold@app", app, 100, kT0);
    f.Add("_start@app;main@app;Pipeline.hot@app", app, 30, kT0 + 20 * kSec);
    f.Add("py:<module>@train.py:3;py:step@train.py:10;k:do_syscall_64",
          {{"node", "a"}, {"pid", "200"}, {"comm", "python3"}}, 50, kT0 + 5 * kSec);
    f.Add("main@db;scan@db", {{"node", "b"}, {"pid", "7"}, {"comm", "db"}}, 20, kT0 + 100 * kSec);
    return f;
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerApiTest, AnswersEveryQueryOfAnIngestedBatch) {
  HttpResult r = PostBatch(server_->port(), Workload(1).batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(json::parse(r.body)["duplicate"].get<bool>());

  // pprof: what `go tool pprof` would show.
  r = Get("/api/v1/profile?type=cpu&format=pprof&" + kHour + "&selector=" + UrlEncode("{node=\"a\",comm=\"app\"}"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto raw = Gunzip(r.body);
  ASSERT_TRUE(raw.ok());
  DecodedProfile pprof;
  ASSERT_TRUE(pprof.raw.ParseFromString(*raw));
  int64_t hot = 0, cold = 0, total = 0;
  for (const auto& s : pprof.raw.sample()) {
    total += s.value(0);
    const auto& loc = pprof.raw.location(s.location_id(0) - 1);
    const auto& fn = pprof.raw.function(loc.line(0).function_id() - 1);
    const std::string& name = pprof.raw.string_table(fn.name());
    if (name == "Pipeline.hot") hot += s.value(0);
    if (name == "Pipeline.cold") cold += s.value(0);
  }
  EXPECT_EQ(total, 430);
  EXPECT_EQ(hot, 330);
  EXPECT_EQ(cold, 100);

  // collapsed
  r = Get("/api/v1/profile?format=collapsed&" + kHour + "&selector=" + UrlEncode("{node=\"b\"}"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "main;scan 20\n");

  // flame-graph JSON: the root carries the total.
  json flame = GetJson("/api/v1/profile?" + kHour);
  EXPECT_EQ(flame["total"], 500);
  ASSERT_TRUE(flame["nodes"].is_array());
  EXPECT_EQ(flame["nodes"][0][5], 500);

  // time range is half-open and selects by sample time
  json early = GetJson("/api/v1/profile?" + Range(kT0, kT0 + 10 * kSec));
  EXPECT_EQ(early["total"], 450);

  json top = GetJson("/api/v1/top?" + kHour + "&limit=3");
  ASSERT_GE(top["functions"].size(), 1u);
  EXPECT_EQ(top["functions"][0]["name"], "Pipeline.hot");
  EXPECT_EQ(top["functions"][0]["self"], 330);

  json series = GetJson("/api/v1/series?" + kHour + "&step=10s&group_by=node");
  ASSERT_EQ(series["series"].size(), 2u);
  EXPECT_EQ(series["series"][0]["labels"]["node"], "a");
  EXPECT_EQ(series["series"][0]["points"][0][1], 450);  // [kT0, kT0+10s)
  EXPECT_EQ(series["series"][0]["points"][1][1], 30);

  // flame chart: per thread lane, per stored second, root-first stacks.
  json chart = GetJson("/api/v1/flamechart?" + Range(kT0, kT0 + 60 * kSec) + "&selector=" + UrlEncode("{node=\"a\"}"));
  EXPECT_EQ(chart["total"], 480);
  ASSERT_EQ(chart["lanes"].size(), 2u);
  EXPECT_EQ(chart["lanes"][0]["labels"]["comm"], "app");  // largest first
  EXPECT_EQ(chart["lanes"][0]["total"], 430);
  ASSERT_EQ(chart["lanes"][0]["points"].size(), 3u);
  EXPECT_EQ(chart["lanes"][0]["points"][2][0], (kT0 + 20 * kSec) / 1'000'000);
  EXPECT_EQ(chart["lanes"][1]["labels"]["pid"], "200");
  const json& py_stack = chart["stacks"][chart["lanes"][1]["points"][0][1].get<int>()];
  EXPECT_EQ(chart["names"][chart["frames"][py_stack[0].get<int>()][0].get<int>()], "<module>");

  // group_by: one subtree per process under the root, totals exact.
  json grouped = GetJson("/api/v1/profile?" + kHour + "&group_by=node,comm");
  EXPECT_EQ(grouped["total"], 500);
  std::map<std::string, int64_t> groups;  // the root's children
  for (const json& n : grouped["nodes"]) {
    if (n[0] != 0) continue;
    groups[grouped["names"][n[1].get<int>()].get<std::string>()] = n[5].get<int64_t>();
    EXPECT_EQ(n[3], 5);
  }
  EXPECT_EQ(groups, (std::map<std::string, int64_t>{{"node=a", 480}, {"node=b", 20}}));
  r = Get("/api/v1/profile?format=collapsed&" + kHour + "&group_by=comm&selector=" + UrlEncode("{node=\"b\"}"));
  EXPECT_EQ(r.body, "comm=db;main;scan 20\n");
  r = Get("/api/v1/profile?format=pprof&" + kHour + "&group_by=comm&selector=" + UrlEncode("{node=\"b\"}"));
  ASSERT_EQ(r.status, 200);
  auto grouped_raw = Gunzip(r.body);
  ASSERT_TRUE(grouped_raw.ok());
  DecodedProfile grouped_pprof;
  ASSERT_TRUE(grouped_pprof.raw.ParseFromString(*grouped_raw));
  ASSERT_EQ(grouped_pprof.raw.sample_size(), 1);
  const auto& root_side = grouped_pprof.raw.location(grouped_pprof.raw.sample(0).location_id(2) - 1);  // leaf first
  EXPECT_EQ(grouped_pprof.raw.string_table(grouped_pprof.raw.function(root_side.line(0).function_id() - 1).name()),
            "comm=db");
  json one_group = GetJson("/api/v1/profile?" + kHour + "&group_by=comm&max_groups=1");
  EXPECT_EQ(one_group["names"][one_group["nodes"][1][1].get<int>()], "comm=app");
  EXPECT_EQ(Get("/api/v1/profile?" + kHour + "&group_by=a,b,c,d,e,f,g,h,i").status, 400);

  json names = GetJson("/api/v1/labels");
  for (const char* n : {"node", "pid", "comm", "exe"}) {
    EXPECT_NE(std::find(names["names"].begin(), names["names"].end(), n), names["names"].end()) << n;
  }
  json values = GetJson("/api/v1/label_values?name=node");
  EXPECT_EQ(values["values"], json::parse(R"(["a","b"])"));

  json targets = GetJson("/api/v1/targets?" + kHour);
  ASSERT_EQ(targets["nodes"].size(), 2u);
  EXPECT_EQ(targets["nodes"][0]["node"], "a");
  EXPECT_EQ(targets["nodes"][0]["processes"].size(), 2u);

  json diff = GetJson("/api/v1/diff?" + Range(kT0 + 10 * kSec, kT0 + 3600 * kSec) + "&base_from=" +
                      std::to_string(kT0 / 1'000'000) + "&base_to=" + std::to_string((kT0 + 10 * kSec) / 1'000'000));
  EXPECT_TRUE(diff.is_object()) << diff.dump();

  json types = GetJson("/api/v1/types");
  ASSERT_EQ(types["types"].size(), 1u);
  EXPECT_EQ(types["types"][0]["name"], "cpu");
}

TEST_F(ServerApiTest, ReSentBatchIsAcknowledgedNotStoredTwice) {
  ASSERT_EQ(PostBatch(server_->port(), Workload(5).batch(), kToken).status, 200);
  const uint64_t stored = StoredSamples();
  HttpResult again = PostBatch(server_->port(), Workload(5).batch(), kToken);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_TRUE(json::parse(again.body)["duplicate"].get<bool>());
  HttpResult older = PostBatch(server_->port(), Workload(4).batch(), kToken);
  ASSERT_EQ(older.status, 200);
  EXPECT_TRUE(json::parse(older.body)["duplicate"].get<bool>());
  EXPECT_EQ(StoredSamples(), stored);
  EXPECT_EQ(GetJson("/api/v1/profile?" + kHour)["total"], 500);
}

TEST_F(ServerApiTest, BadInputIsRejectedAndNothingIsStored) {
  const int port = server_->port();
  ASSERT_EQ(PostBatch(port, Workload(1).batch(), kToken).status, 200);
  const uint64_t stored = StoredSamples();
  uint64_t seq = 100;
  auto expect = [&](HttpResult r, int status, const std::string& needle, const std::string& what) {
    EXPECT_EQ(r.status, status) << what << ": " << r.body;
    EXPECT_NE(r.body.find(needle), std::string::npos) << what << ": " << r.body;
    if (status != 401) {
      json j = json::parse(r.body, nullptr, false);
      EXPECT_TRUE(j.contains("error")) << what << ": " << r.body;
    }
  };
  // Authentication.
  expect(PostBatch(port, Workload(++seq).batch(), ""), 401, "", "no token");
  expect(PostBatch(port, Workload(++seq).batch(), "wrong"), 401, "", "wrong token");
  EXPECT_EQ(HttpGet(port, "/api/v1/profile?" + kHour, "").status, 401);
  // Bodies that are not a batch.
  expect(HttpPostIngest(port, "this is not protobuf \xff\xff\xff", kToken), 400, "IngestBatch", "garbage");
  expect(HttpPostIngest(port, "", kToken), 400, "IngestBatch", "empty body");
  expect(HttpPostIngest(port, Workload(++seq).batch().SerializeAsString(), kToken, "application/json"), 415,
         "Content-Type", "json content type");
  expect(HttpPostIngest(port, "\x28\xb5\x2f\xfd garbage", kToken, "application/x-protobuf", false), 400, "IngestBatch",
         "corrupt protobuf");
  {
    BatchFactory f = Workload(++seq);
    f.mutable_batch().set_schema_version(7);
    expect(PostBatch(port, f.batch(), kToken), 400, "schema_version", "schema version");
  }
  {
    BatchFactory f = Workload(++seq);
    f.mutable_batch().mutable_stacks(0)->add_locations(9999);
    expect(PostBatch(port, f.batch(), kToken), 400, "out of range", "bad index");
  }
  {
    BatchFactory f("agent-1", ++seq, kT0, kT0 + kSec);
    Labels many;
    for (int i = 0; i < 100; ++i) many.emplace_back("l" + std::to_string(1000 + i), "v");
    f.Add("main", many, 1, kT0);
    expect(PostBatch(port, f.batch(), kToken), 400, "label", "too many labels");
  }
  {
    BatchFactory f("agent-1", ++seq, kT0, kT0 + kSec);
    f.Add(std::string(10000, 'x'), {{"node", "a"}}, 1, kT0);
    expect(PostBatch(port, f.batch(), kToken), 400, "string", "long string");
  }
  {
    BatchFactory f("agent-1", ++seq, kT0, kT0 + kSec);
    std::string big;
    for (int i = 0; i < 40000; ++i) big += "f" + std::to_string(i) + std::string(400, 'x') + ";";
    big += "leaf";
    f.Add(big, {{"node", "a"}}, 1, kT0);
    expect(HttpPostIngest(port, f.batch().SerializeAsString(), kToken, "application/x-protobuf", false), 413, "",
           "too large");
  }
  // Queries.
  expect(Get("/api/v1/profile?from=yesterday&to=now"), 400, "from", "bad from");
  expect(Get("/api/v1/profile?from=now&to=now-1h"), 400, "", "from after to");
  expect(Get("/api/v1/profile?" + kHour + "&selector=" + UrlEncode("{node=~\"(\"}")), 400, "selector", "bad regex");
  expect(Get("/api/v1/profile?" + kHour + "&selector=" + UrlEncode("{node=a}")), 400, "selector", "unquoted value");
  expect(Get("/api/v1/profile?" + kHour + "&format=svg"), 400, "format", "bad format");
  expect(Get("/api/v1/series?" + kHour + "&step=1ms"), 400, "step", "too many points");
  expect(Get("/api/v1/diff?" + kHour), 400, "base_from", "diff without base");
  expect(Get("/api/v1/flamechart?" + kHour), 400, "shorter range", "flame chart of an hour");
  expect(Get("/api/v1/label_values"), 400, "name", "label values without name");
  EXPECT_EQ(Get("/api/v1/nope").status, 404);

  EXPECT_EQ(StoredSamples(), stored);
  EXPECT_EQ(GetJson("/api/v1/profile?" + kHour)["total"], 500);
  EXPECT_EQ(GetJson("/api/v1/label_values?name=node")["values"].size(), 2u);
}

Labels GpuLabels(const std::string& node, const std::string& gpu) {
  return {{"node", node},
          {"gpu", gpu},
          {"uuid", "GPU-" + node + "-" + gpu},
          {"gpu_name", "NVIDIA H200"},
          {"pci_bus_id", "00000000:" + gpu + "9:00.0"}};
}

// GPU metrics beside the Workload's samples: node a's GPUs 0 and 1 (with a
// process, pid 300, seen only in per-process GPU metrics), and node c, which
// sends GPU metrics only (GPUs 2 and 10).
BatchFactory WithGpuMetrics(BatchFactory f) {
  for (int s = 0; s < 5; ++s) {
    f.AddMetric("gpu_utilization", "percent", GpuLabels("a", "0"), 10.0 * s, kT0 + s * kSec);
    f.AddMetric("gpu_utilization", "percent", GpuLabels("a", "1"), 50, kT0 + s * kSec);
  }
  f.AddMetric("gpu_power", "watts", GpuLabels("a", "0"), 301.5, kT0);
  f.AddMetric("gpu_power", "watts", GpuLabels("a", "0"), 420.25, kT0 + 12 * kSec);
  f.AddMetric("gpu_process_sm_utilization", "percent",
              {{"node", "a"}, {"pid", "300"}, {"comm", "trainer"}, {"exe", "/usr/bin/trainer"}, {"gpu", "0"},
               {"uuid", "GPU-a-0"}},
              75, kT0);
  return f;
}

TEST_F(ServerApiTest, GpuMetricsAreStoredQueriedAndListedAsTargets) {
  const int port = server_->port();
  HttpResult r = PostBatch(port, WithGpuMetrics(Workload(1)).batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  json ack = json::parse(r.body);
  EXPECT_EQ(ack["stored_samples"], 5);
  EXPECT_EQ(ack["stored_metric_points"], 13);
  EXPECT_EQ(ack["duplicate"], false);
  BatchFactory metrics_only("agent-c", 1, kT0, kT0 + 10 * kSec);
  metrics_only.AddMetric("gpu_utilization", "percent", GpuLabels("c", "10"), 5, kT0);
  metrics_only.AddMetric("gpu_utilization", "percent", GpuLabels("c", "2"), 7, kT0);
  r = PostBatch(port, metrics_only.batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["stored_samples"], 0);
  EXPECT_EQ(json::parse(r.body)["stored_metric_points"], 2);

  const std::string node_a = "&selector=" + UrlEncode("{node=\"a\"}");
  auto check_metrics = [&] {
    json m = GetJson("/api/v1/metrics?name=gpu_utilization&" + kHour + node_a + "&step=10s&group_by=gpu");
    EXPECT_EQ(m["name"], "gpu_utilization");
    EXPECT_EQ(m["unit"], "percent");
    EXPECT_EQ(m["step_ms"], 10000);
    EXPECT_EQ(m["from_ms"], kT0 / 1'000'000);
    const int64_t t0_ms = kT0 / 1'000'000;
    EXPECT_EQ(m["series"], json::parse(R"([{"labels":{"gpu":"0"},"points":[[)" + std::to_string(t0_ms) +
                                       R"(,0.0,40.0,20.0]]},{"labels":{"gpu":"1"},"points":[[)" +
                                       std::to_string(t0_ms) + R"(,50.0,50.0,50.0]]}])"))
        << m.dump();
    json power = GetJson("/api/v1/metrics?name=gpu_power&" + kHour + "&step=10s");
    EXPECT_EQ(power["unit"], "watts");
    ASSERT_EQ(power["series"].size(), 1u);
    EXPECT_EQ(power["series"][0]["labels"], json::object());
    EXPECT_EQ(power["series"][0]["points"][0], json::parse("[" + std::to_string(t0_ms) + ",301.5,301.5,301.5]"));
    EXPECT_EQ(power["series"][0]["points"][1],
              json::parse("[" + std::to_string(t0_ms + 10'000) + ",420.25,420.25,420.25]"));
  };
  check_metrics();

  // The step follows the range like /series: 1 h in at most 300 points is 15 s.
  json chosen = GetJson("/api/v1/metrics?name=gpu_utilization&" + kHour);
  EXPECT_EQ(chosen["step_ms"], 15000);
  ASSERT_EQ(chosen["series"].size(), 1u);
  EXPECT_EQ(chosen["series"][0]["points"][0][1], 0.0);
  EXPECT_EQ(chosen["series"][0]["points"][0][2], 50.0);
  json unknown = GetJson("/api/v1/metrics?name=gpu_nosuch&" + kHour);
  EXPECT_EQ(unknown["unit"], "");
  EXPECT_EQ(unknown["series"], json::array());
  HttpResult no_name = Get("/api/v1/metrics?" + kHour);
  EXPECT_EQ(no_name.status, 400);
  EXPECT_NE(no_name.body.find("'name'"), std::string::npos) << no_name.body;
  EXPECT_EQ(Get("/api/v1/metrics?name=gpu_power&" + kHour + "&step=1ms").status, 400);

  EXPECT_EQ(GetJson("/api/v1/metric_names"), json::parse(R"({"metrics":[
      {"name":"gpu_power","unit":"watts"},
      {"name":"gpu_process_sm_utilization","unit":"percent"},
      {"name":"gpu_utilization","unit":"percent"}]})"));
  // Profile types are untouched by metrics.
  json types = GetJson("/api/v1/types");
  ASSERT_EQ(types["types"].size(), 1u);
  EXPECT_EQ(types["types"][0]["name"], "cpu");
  EXPECT_EQ(GetJson("/api/v1/profile?" + kHour)["total"], 500);

  json targets = GetJson("/api/v1/targets?" + kHour);
  ASSERT_EQ(targets["nodes"].size(), 3u) << targets.dump();
  const json& a = targets["nodes"][0];
  EXPECT_EQ(a["node"], "a");
  std::set<std::string> pids;
  for (const auto& p : a["processes"]) pids.insert(p["pid"].get<std::string>());
  EXPECT_EQ(pids, (std::set<std::string>{"100", "200", "300"}));
  EXPECT_EQ(a["gpus"], json::parse(R"([
      {"gpu":"0","uuid":"GPU-a-0","gpu_name":"NVIDIA H200","pci_bus_id":"00000000:09:00.0"},
      {"gpu":"1","uuid":"GPU-a-1","gpu_name":"NVIDIA H200","pci_bus_id":"00000000:19:00.0"}])"));
  EXPECT_EQ(targets["nodes"][1]["node"], "b");
  EXPECT_EQ(targets["nodes"][1]["gpus"], json::array());
  const json& c = targets["nodes"][2];
  EXPECT_EQ(c["node"], "c");
  EXPECT_EQ(c["processes"], json::array());
  ASSERT_EQ(c["gpus"].size(), 2u);
  EXPECT_EQ(c["gpus"][0]["gpu"], "2");  // by index as a number
  EXPECT_EQ(c["gpus"][1]["gpu"], "10");
  // A profile type narrows the targets to its samples: no GPUs.
  json cpu_targets = GetJson("/api/v1/targets?type=cpu&" + kHour);
  ASSERT_EQ(cpu_targets["nodes"].size(), 2u);
  EXPECT_EQ(cpu_targets["nodes"][0]["gpus"], json::array());
  EXPECT_EQ(GetJson("/api/v1/status")["metric_points"], 15);

  // Acknowledged metrics survive kill -9.
  server_->Kill();
  Restart(port);
  check_metrics();
  HttpResult again = PostBatch(port, WithGpuMetrics(Workload(1)).batch(), kToken);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(json::parse(again.body)["duplicate"], true);
  EXPECT_EQ(json::parse(again.body)["stored_metric_points"], 0);
  check_metrics();
}

TEST_F(ServerApiTest, BadMetricBatchIsRejectedAndNothingIsStored) {
  const int port = server_->port();
  const uint64_t seq = 1;
  auto expect_400 = [&](BatchFactory f, const std::string& needle, const std::string& what) {
    HttpResult r = PostBatch(port, f.batch(), kToken);
    EXPECT_EQ(r.status, 400) << what << ": " << r.body;
    EXPECT_NE(r.body.find(needle), std::string::npos) << what << ": " << r.body;
  };
  {
    BatchFactory f = WithGpuMetrics(Workload(seq));
    f.mutable_batch().mutable_metric_points(3)->set_value(std::nan(""));
    expect_400(std::move(f), "metric_points[3].value: NaN", "NaN");
  }
  {
    BatchFactory f = WithGpuMetrics(Workload(seq));
    f.mutable_batch().mutable_metric_points(0)->set_value(HUGE_VAL);
    expect_400(std::move(f), "metric_points[0].value", "infinity");
  }
  {
    BatchFactory f = WithGpuMetrics(Workload(seq));
    f.mutable_batch().mutable_metric_points(5)->set_metric(77);
    expect_400(std::move(f), "metric_points[5].metric: index 77 out of range", "metric index");
  }
  {
    BatchFactory f = WithGpuMetrics(Workload(seq));
    f.mutable_batch().mutable_metric_points(2)->set_label_set(1000);
    expect_400(std::move(f), "metric_points[2].label_set", "label set index");
  }
  {
    BatchFactory f = WithGpuMetrics(Workload(seq));
    f.mutable_batch().mutable_metric_types(0)->set_name(0);
    expect_400(std::move(f), "metric_types[0].name: empty", "empty name");
  }
  json status = GetJson("/api/v1/status");
  EXPECT_EQ(status["metric_points"], 0);
  EXPECT_EQ(status["samples"], 0);
  EXPECT_EQ(status["rejected_batches"], 5);
  EXPECT_EQ(GetJson("/api/v1/metric_names")["metrics"], json::array());
  EXPECT_EQ(GetJson("/api/v1/targets?" + kHour)["nodes"], json::array());
  EXPECT_EQ(GetJson("/api/v1/metrics?name=gpu_utilization&" + kHour)["series"], json::array());
  // The same sequence, fixed, goes in whole.
  HttpResult ok = PostBatch(port, WithGpuMetrics(Workload(seq)).batch(), kToken);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["stored_metric_points"], 13);
  EXPECT_EQ(GetJson("/api/v1/metric_names")["metrics"].size(), 3u);
}

// Four clients post batches as fast as they can; the server is killed with
// SIGKILL mid-stream and restarted on the same data. Every batch it
// acknowledged must be there; a batch it had not acknowledged is either there
// once or not at all, and re-sending it after the restart stores it once.
// One process's CUDA trace of one second: gemm 20 times (1..20 us) on
// device 0 stream 7, relu twice (50 us) on device 1 stream 9, one 5 us memcpy
// on stream 3; the agent recorded 30 activities and sent these 23.
BatchFactory GpuTrace(uint64_t sequence) {
  BatchFactory f("agent-gpu", sequence, kT0, kT0 + 10 * kSec);
  const Labels train{{"node", "a"}, {"pid", "100"}, {"comm", "train"}};
  for (int i = 1; i <= 20; ++i) {
    auto& k = f.AddGpuKernel("gemm", train, kT0 + i * 100'000, i * 1000, 0, 7, i);
    k.set_grid_x(4);
    k.set_grid_y(1);
    k.set_grid_z(1);
    k.set_block_x(256);
    k.set_block_y(1);
    k.set_block_z(1);
  }
  f.AddGpuKernel("relu", train, kT0 + 50'000, 50'000, 1, 9, 100).set_graph_id(3);
  f.AddGpuKernel("relu", train, kT0 + 3'000'000, 50'000, 1, 9, 101).set_graph_id(3);
  auto& copy = f.AddGpuKernel("", train, kT0 + 10'000, 5'000, 0, 3, 200);
  copy.set_kind(warpscope::v1::GPU_ACTIVITY_MEMCPY);
  copy.set_bytes(1 << 20);
  copy.set_copy_kind(1);
  f.AddGpuCoverage(train, kT0, 30, 23, kT0 + 2'100'000);
  return f;
}

TEST_F(ServerApiTest, GpuKernelsTraceAndChromeTraceOfAnIngestedBatch) {
  HttpResult r = PostBatch(server_->port(), GpuTrace(1).batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["stored_gpu_activities"], 23);
  const std::string ten_s = Range(kT0, kT0 + 10 * kSec);

  auto check = [&] {
    json k = GetJson("/api/v1/gpu/kernels?" + kHour);
    EXPECT_EQ(k["from_ns"], kT0);
    EXPECT_EQ(k["activities"], 23);
    EXPECT_EQ(k["recorded"], 30);
    EXPECT_EQ(k["sent"], 23);
    EXPECT_EQ(k["total_ns"], 210'000 + 100'000 + 5'000);
    ASSERT_EQ(k["kernels"].size(), 3u);
    const json& gemm = k["kernels"][0];
    EXPECT_EQ(gemm["kind"], "kernel");
    EXPECT_EQ(gemm["name"], "gemm");
    EXPECT_EQ(gemm["system_name"], "_Zgemm");
    EXPECT_EQ(gemm["launches"], 20);
    EXPECT_EQ(gemm["total_ns"], 210'000);
    EXPECT_EQ(gemm["mean_ns"], 10'500);
    EXPECT_EQ(gemm["p50_ns"], 10'000);  // nearest rank 10 of 20
    EXPECT_EQ(gemm["p95_ns"], 19'000);  // nearest rank 19 of 20
    EXPECT_EQ(gemm["max_ns"], 20'000);
    EXPECT_EQ(gemm["grid"], json({4, 1, 1}));
    EXPECT_EQ(gemm["block"], json({256, 1, 1}));
    EXPECT_EQ(gemm["configs"], 1);
    EXPECT_DOUBLE_EQ(gemm["share"].get<double>(), 210'000.0 / 315'000.0);
    EXPECT_EQ(k["kernels"][1]["name"], "relu");
    EXPECT_EQ(k["kernels"][1]["p95_ns"], 50'000);
    EXPECT_EQ(k["kernels"][2]["kind"], "memcpy");
    EXPECT_EQ(GetJson("/api/v1/gpu/kernels?" + kHour + "&selector=" + UrlEncode("{pid=\"999\"}"))["activities"], 0);

    json t = GetJson("/api/v1/gpu/trace?" + ten_s);
    EXPECT_EQ(t["to_ns"], kT0 + 10 * kSec);
    ASSERT_EQ(t["streams"].size(), 3u);
    const json& names = t["names"];
    const json& s7 = t["streams"][1];
    EXPECT_EQ(s7["labels"], json({{"comm", "train"}, {"node", "a"}, {"pid", "100"}}));
    EXPECT_EQ(s7["device"], 0);
    EXPECT_EQ(s7["stream"], 7);
    EXPECT_EQ(s7["busy_ns"], 210'000);
    ASSERT_EQ(s7["activities"].size(), 20u);
    const json& first = s7["activities"][0];
    EXPECT_EQ(first[0], kT0 + 100'000);
    EXPECT_EQ(first[1], 1000);
    EXPECT_EQ(names[first[2].get<size_t>()], "gemm");
    EXPECT_EQ(first[3], 0);
    EXPECT_EQ(first[4], 1);
    EXPECT_EQ(t["streams"][0]["stream"], 3);
    EXPECT_EQ(t["streams"][0]["activities"][0][3], 1);  // memcpy
    EXPECT_EQ(t["streams"][2]["device"], 1);
    EXPECT_EQ(t["streams"][2]["activities"][0][5], 3);  // graph id
    ASSERT_EQ(t["coverage"].size(), 1u);
    EXPECT_EQ(t["coverage"][0]["recorded"], 30);
    EXPECT_EQ(t["coverage"][0]["complete_until_ns"], kT0 + 2'100'000);

    httplib::Client client("127.0.0.1", server_->port());
    auto download = client.Get(("/api/v1/gpu/trace.json?" + ten_s).c_str(),
                               httplib::Headers{{"Authorization", std::string("Bearer ") + kToken}});
    ASSERT_TRUE(download);
    EXPECT_EQ(download->status, 200);
    EXPECT_EQ(download->get_header_value("Content-Disposition"),
              "attachment; filename=\"warpscope-gpu-trace-" + std::to_string(kT0) + ".json\"");
    const json trace = json::parse(download->body);
    int complete = 0;
    for (const json& e : trace["traceEvents"]) complete += e["ph"] == "X";
    EXPECT_EQ(complete, 23);
  };
  check();

  // Too long a trace range, too many activities, malformed parameters, no token.
  HttpResult too_long = Get("/api/v1/gpu/trace?" + Range(kT0, kT0 + 11 * kSec));
  EXPECT_EQ(too_long.status, 400);
  EXPECT_NE(too_long.body.find("up to 10 seconds"), std::string::npos) << too_long.body;
  EXPECT_EQ(Get("/api/v1/gpu/trace.json?" + Range(kT0, kT0 + 11 * kSec)).status, 400);
  EXPECT_EQ(Get("/api/v1/gpu/kernels?from=yesterday-ish").status, 400);
  EXPECT_EQ(Get("/api/v1/gpu/trace?" + ten_s + "&selector=" + UrlEncode("{pid=")).status, 400);
  EXPECT_EQ(HttpGet(server_->port(), "/api/v1/gpu/kernels?" + kHour).status, 401);

  // A re-send is acknowledged, not stored twice.
  HttpResult again = PostBatch(server_->port(), GpuTrace(1).batch(), kToken);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(json::parse(again.body)["duplicate"], true);
  EXPECT_EQ(json::parse(again.body)["stored_gpu_activities"], 0);
  EXPECT_EQ(GetJson("/api/v1/status")["gpu_activities"], 23);
  check();

  // Survives a clean restart and a kill -9.
  const int port = server_->port();
  server_->Stop();
  Restart(port);
  check();
  server_->Kill();
  Restart(port);
  check();
}

// The cubin store over HTTP: the token, the hash checked (in the path and
// against the body), both bounds, stored once, byte-exact through HEAD and
// GET, and still there after a kill -9.
TEST_F(ServerApiTest, CubinsArePutOnceAndReadBackByteExact) {
  const std::vector<std::string> limits = {"--cubin-max-bytes", "64K", "--cubin-store-bytes", "150K"};
  const int port = server_->port();
  server_->Stop();
  Restart(port, limits);
  auto bytes = [](size_t size, char seed) {
    std::string b(size, '\0');
    for (size_t i = 0; i < size; ++i) b[i] = static_cast<char>(seed * 31 + i * i % 251);
    b.replace(0, 4, "\x7f" "ELF");
    return b;
  };
  const std::string a = bytes(60'000, 1), b = bytes(60'000, 2), c = bytes(60'000, 3);
  const std::string path = "/api/v1/gpu/cubins/" + CubinHash(a);

  EXPECT_EQ(HttpPutCubin(port, CubinHash(a), a, "").status, 401);
  EXPECT_EQ(HttpHead(port, path, "").status, 401);
  EXPECT_EQ(HttpGet(port, path, "").status, 401);
  EXPECT_EQ(HttpPutCubin(port, CubinHash(a), a, "wrong").status, 401);

  HttpResult r = HttpPutCubin(port, "not-a-hash", a, kToken);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("malformed"), std::string::npos) << r.body;
  EXPECT_EQ(HttpGet(port, "/api/v1/gpu/cubins/" + CubinHash(a).substr(1), kToken).status, 400);
  EXPECT_EQ(HttpHead(port, "/api/v1/gpu/cubins/..%2fLOCK", kToken).status, 400);
  r = HttpPutCubin(port, CubinHash(a), b, kToken);
  EXPECT_EQ(r.status, 400) << "the body is not the hash's";
  EXPECT_NE(r.body.find(CubinHash(b)), std::string::npos) << r.body;
  r = HttpPutCubin(port, CubinHash(bytes(70'000, 4)), bytes(70'000, 4), kToken);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(HttpHead(port, path, kToken).status, 404);
  EXPECT_EQ(Get(path).status, 404);

  r = HttpPutCubin(port, CubinHash(a), a, kToken, /*compress=*/false);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_TRUE(json::parse(r.body)["stored"].get<bool>());
  r = HttpPutCubin(port, CubinHash(a), a, kToken);  // zstd this time
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json::parse(r.body)["already_stored"].get<bool>()) << r.body;
  EXPECT_EQ(HttpHead(port, path, kToken).status, 200);
  HttpResult got = Get(path);
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.content_type, "application/octet-stream");
  EXPECT_TRUE(got.body == a) << "byte-exact";

  // 150K holds two of these 60K cubins, not three.
  EXPECT_EQ(HttpPutCubin(port, CubinHash(b), b, kToken).status, 201);
  r = HttpPutCubin(port, CubinHash(c), c, kToken);
  EXPECT_EQ(r.status, 507) << r.body;
  EXPECT_NE(r.body.find("--cubin-store-bytes"), std::string::npos) << r.body;
  const json cubins = GetJson("/api/v1/status")["cubins"];
  EXPECT_EQ(cubins["stored"], 2);
  EXPECT_EQ(cubins["already_stored"], 1);
  EXPECT_EQ(cubins["refused_too_large"], 1);
  EXPECT_EQ(cubins["refused_store_full"], 1);

  server_->Kill();
  Restart(port, limits);
  got = Get(path);
  ASSERT_EQ(got.status, 200);
  EXPECT_TRUE(got.body == a) << "acknowledged, so it survives kill -9";
  EXPECT_EQ(HttpPutCubin(port, CubinHash(b), b, kToken).status, 200);
}

TEST_F(ServerApiTest, KillNineDuringIngestLosesNoAcknowledgedBatch) {
  const int port = server_->port();
  std::mutex mu;
  std::set<uint64_t> acked;
  std::map<uint64_t, uint64_t> unacked;  // seq -> agent
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next_seq{1};
  auto batch_for = [](uint64_t agent, uint64_t seq) {
    BatchFactory f("agent-" + std::to_string(agent), seq, kT0, kT0 + kSec);
    const Labels labels{{"node", "n" + std::to_string(agent)}, {"batch", std::to_string(seq)}};
    f.Add("main;work;leaf" + std::to_string(seq % 7), labels, static_cast<int64_t>(seq), kT0 + (seq % 60) * kSec);
    f.Add("main;idle", labels, 1, kT0 + (seq % 60) * kSec);
    return f;
  };
  std::vector<std::thread> clients;
  for (uint64_t agent = 0; agent < 4; ++agent) {
    clients.emplace_back([&, agent] {
      uint64_t seq = 0;
      while (!stop) {
        seq = next_seq++;  // globally unique, increasing per agent
        HttpResult r = PostBatch(port, batch_for(agent, seq).batch(), kToken);
        std::lock_guard<std::mutex> lock(mu);
        if (r.status == 200) {
          acked.insert(seq);
        } else {
          unacked[seq] = agent;
          break;
        }  // the server is gone: this agent's later batches would be spooled
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  server_->Kill();
  stop = true;
  for (auto& t : clients) t.join();
  ASSERT_GT(acked.size(), 20u) << "too few batches before the kill to mean anything";

  Restart(port);
  json values = GetJson("/api/v1/label_values?name=batch");
  std::set<uint64_t> present;
  for (const auto& v : values["values"]) present.insert(std::stoull(v.get<std::string>()));
  for (uint64_t seq : acked) EXPECT_TRUE(present.count(seq)) << "acknowledged batch " << seq << " lost";

  // What an agent does next: re-send what it had not seen acknowledged.
  // Each is its agent's last (highest) sequence, so it is stored unless it already was.
  for (const auto& [seq, agent] : unacked) {
    EXPECT_EQ(PostBatch(port, batch_for(agent, seq).batch(), kToken).status, 200);
  }
  int64_t expected = 0;
  for (uint64_t seq : acked) expected += static_cast<int64_t>(seq) + 1;
  json profile = GetJson("/api/v1/profile?" + kHour);
  const int64_t total = profile["total"].get<int64_t>();
  for (const auto& [seq, agent] : unacked) expected += static_cast<int64_t>(seq) + 1;
  EXPECT_EQ(total, expected) << "a batch was lost or stored twice";
  std::cerr << "acknowledged " << acked.size() << " batches before kill -9, " << unacked.size()
            << " unacknowledged\n";
}

}  // namespace
}  // namespace warpscope::testing
