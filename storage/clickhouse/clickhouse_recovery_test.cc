// ClickHouse going away and coming back, on a private server (so killing it
// disturbs no other test): Unavailable while it is down, recovery without a
// new store, and - with ClickHouse SIGKILLed while an agent ingests - every
// acknowledged batch stored exactly once after the agent's re-sends.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "storage/clickhouse/clickhouse_store_test_util.h"
#include "storage/conformance/test_batches.h"

namespace warpscope::clickhouse {
namespace {

using storage::testing::kSec;
using storage::testing::kT0;
using storage::testing::OneSample;

constexpr int64_t kHour = 3600 * kSec;

class ClickHouseRecoveryTest : public testing::PrivateClickHouseTest {
 protected:
  std::unique_ptr<ClickHouseProfileStore> Open() {
    ClickHouseOptions o = testing::OptionsFor(*ch_, "recovery");
    o.timeout_ms = 10'000;
    StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(o);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
};

int64_t Total(storage::ProfileStore& store) {
  storage::ProfileQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + kHour;
  StatusOr<storage::MergedProfile> p = store.SelectProfile(q);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->total : -1;
}

TEST_F(ClickHouseRecoveryTest, UnreachableAtOpenIsUnavailableNamingTheUrl) {
  ASSERT_TRUE(ch_->Stop().ok());
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store =
      ClickHouseProfileStore::Open(testing::OptionsFor(*ch_, "recovery"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find("127.0.0.1:" + std::to_string(ch_->http_port())), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("curl 7"), std::string::npos) << store.status().message();
  ASSERT_TRUE(ch_->Restart().ok());
  EXPECT_NE(Open(), nullptr);
}

TEST_F(ClickHouseRecoveryTest, KilledMidSessionIsUnavailableThenRecovers) {
  std::unique_ptr<ClickHouseProfileStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Ingest(OneSample("a", 1, kT0, 1)).ok());
  ASSERT_TRUE(ch_->Kill().ok());
  StatusOr<storage::IngestResult> r = store->Ingest(OneSample("a", 2, kT0, 10));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  storage::ProfileQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + kHour;
  EXPECT_EQ(store->SelectProfile(q).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->LabelNames().status().code(), StatusCode::kUnavailable);

  ASSERT_TRUE(ch_->Restart().ok());
  r = store->Ingest(OneSample("a", 2, kT0, 10));  // the agent's re-send
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(Total(*store), 11);
  r = store->Ingest(OneSample("a", 1, kT0, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->duplicate);
}

// An agent (this thread's helper) sends batches 1..N in order, re-sending
// each until it is acknowledged, as the uploader does with its spool;
// ClickHouse is SIGKILLed twice in the middle and restarted. Every batch must
// end up stored exactly once: batch s holds value s at time t0 + s seconds.
TEST_F(ClickHouseRecoveryTest, KillDuringIngestLosesNothingAcknowledgedAndStoresNothingTwice) {
  std::unique_ptr<ClickHouseProfileStore> store = Open();
  ASSERT_NE(store, nullptr);
  constexpr int kBatches = 60;
  std::atomic<int> acked{0};
  std::atomic<int> unavailable{0};
  std::atomic<bool> failed{false};
  std::thread agent([&] {
    for (int s = 1; s <= kBatches && !failed; ++s) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (true) {
        StatusOr<storage::IngestResult> r = store->Ingest(OneSample("agent", s, kT0 + s * kSec, s, "n1", "f"));
        if (r.ok()) {
          acked = s;
          break;
        }
        if (r.status().code() != StatusCode::kUnavailable || std::chrono::steady_clock::now() > give_up) {
          ADD_FAILURE() << "batch " << s << ": " << r.status().ToString();
          failed = true;
          return;
        }
        ++unavailable;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  });
  for (int kill_at : {15, 35}) {
    while (acked < kill_at && !failed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(ch_->Kill().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ASSERT_TRUE(ch_->Restart().ok());
  }
  agent.join();
  ASSERT_FALSE(failed);
  EXPECT_EQ(acked.load(), kBatches);
  EXPECT_GT(unavailable.load(), 0);  // the kills were noticed

  storage::SeriesQuery q;
  q.profile.from_ns = kT0;
  q.profile.to_ns = kT0 + kHour;
  q.step_ns = kSec;
  StatusOr<std::vector<storage::Series>> series = store->SelectSeries(q);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 1u);
  std::vector<storage::SeriesPoint> want;
  for (int s = 1; s <= kBatches; ++s) want.push_back({kT0 + s * kSec, s});
  EXPECT_EQ((*series)[0].points, want);
  StatusOr<std::string> rows = ch_->Query("SELECT count() FROM recovery.samples");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, std::to_string(kBatches) + "\n");
}

}  // namespace
}  // namespace warpscope::clickhouse
