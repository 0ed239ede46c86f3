// The query limits (query_limits.h) on their own, and through ApiRoutes over
// a real embedded store: the row budget's 400, the heavy-query gate, and
// the counters /api/v1/status reports.
#include "server/query_limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/api_handlers.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/embedded/embedded_store.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kNow = 1'764'417'600 * kSec;

TEST(QueryLimitsTest, TheGateLetsOnlyItsSlotsInAndWaitsForAFreedOne) {
  HeavyQueryGate gate(2, 50ms);
  ASSERT_TRUE(gate.Enter());
  ASSERT_TRUE(gate.Enter());
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(gate.Enter());  // waited 50 ms for a slot
  EXPECT_GE(std::chrono::steady_clock::now() - before, 50ms);
  std::thread leave([&] {
    std::this_thread::sleep_for(10ms);
    gate.Leave();
  });
  HeavyQueryGate patient(1, 5s);
  EXPECT_TRUE(gate.Enter());  // the slot freed while it waited
  leave.join();
  EXPECT_TRUE(patient.Enter());
}

TEST(QueryLimitsTest, RowsPastTheBudgetAreACountedInvalidArgument) {
  QueryLimits limits(1, 1ms);
  EXPECT_TRUE(CheckQueryRows(10, 10, &limits).ok());
  const Status s = CheckQueryRows(11, 10, &limits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reads 11 rows, more than the server's limit of 10"), std::string::npos) << s.message();
  EXPECT_EQ(limits.counters.over_budget.load(), 1u);
}

class LimitedRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/ws_query_limits_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    embedded::EmbeddedStoreOptions o;
    o.data_dir = dir_;
    o.background = false;
    o.now_ns = [] { return kNow; };
    auto store = embedded::EmbeddedProfileStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(store).value();
    // 60 points of one GPU's utilization, one a second.
    v1::IngestBatch batch;
    batch.set_schema_version(1);
    batch.set_agent_id("limits");
    batch.set_sequence(1);
    batch.set_start_unix_nanos(kNow - 60 * kSec);
    batch.set_end_unix_nanos(kNow);
    for (const char* s : {"", "gpu_utilization", "percent", "gpu", "0", "node", "n"}) batch.add_strings(s);
    auto* type = batch.add_metric_types();
    type->set_name(1);
    type->set_unit(2);
    auto* labels = batch.add_label_sets();
    for (auto [k, v] : {std::pair{3, 4}, std::pair{5, 6}}) {
      auto* l = labels->add_labels();
      l->set_key(k);
      l->set_value(v);
    }
    for (int64_t i = 0; i < 60; ++i) {
      auto* p = batch.add_metric_points();
      p->set_time_unix_nanos(kNow - 60 * kSec + i * kSec);
      p->set_metric(0);
      p->set_label_set(0);
      p->set_value(50);
    }
    auto ingested = store_->Ingest(batch);
    ASSERT_TRUE(ingested.ok()) << ingested.status().message();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  http::HttpResponse Get(const http::Routes& routes, const std::string& path,
                         std::multimap<std::string, std::string> query) {
    for (const http::Route& r : routes) {
      if (r.method == "GET" && r.path == path) {
        http::HttpRequest req;
        req.method = "GET";
        req.path = path;
        req.query = std::move(query);
        return r.handler(req);
      }
    }
    ADD_FAILURE() << "no route " << path;
    return http::HttpResponse::Error(404, "");
  }

  std::string dir_;
  std::unique_ptr<embedded::EmbeddedProfileStore> store_;
};

TEST_F(LimitedRoutesTest, AQueryPastTheRowBudgetIsRefusedAndCounted) {
  ApiOptions options;
  options.now_ns = [] { return kNow; };
  options.max_query_rows = 30;
  const http::Routes routes = ApiRoutes(store_.get(), options);
  const std::multimap<std::string, std::string> q = {
      {"name", "gpu_utilization"}, {"from", "now-1m"}, {"to", "now"}, {"step", "1s"}};
  http::HttpResponse r = Get(routes, "/api/v1/metrics", q);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("more than the server's limit of 30"), std::string::npos) << r.body;
  auto coarse = q;
  coarse.erase("step");
  coarse.emplace("step", "10s");  // 6 points: within the budget
  EXPECT_EQ(Get(routes, "/api/v1/metrics", coarse).status, 200);
  EXPECT_EQ(Get(routes, "/api/v1/insights", {{"starved_thread_cores", "0"}}).status, 400);
  const json status = json::parse(Get(routes, "/api/v1/status", {}).body);
  EXPECT_EQ(status["queries"]["over_row_budget"], 1);
  EXPECT_EQ(status["queries"]["bad_parameters"], 2);  // the budget's 400 and the threshold's
}

}  // namespace
}  // namespace warpscope::server
