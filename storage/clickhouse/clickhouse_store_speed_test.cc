// Rough timings of the ClickHouse store on the test's server (not a
// benchmark: bench/ has the load generator). Prints what one node's 10 s
// upload costs, new and known content, and what a flame graph costs; asserts
// only the totals.
#include <gtest/gtest.h>

#include <chrono>

#include "storage/clickhouse/clickhouse_store_test_util.h"
#include "storage/conformance/test_batches.h"

namespace warpscope::clickhouse {
namespace {

using storage::testing::kSec;
using storage::testing::kT0;
using storage::testing::NodeBatch;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

TEST(ClickHouseStoreSpeed, NodeBatchesAndAFlameGraph) {
  std::unique_ptr<ClickHouseProfileStore> store = testing::OpenShared("ws_t_speed");
  ASSERT_NE(store, nullptr);
  constexpr int kNodes = 10, kRounds = 6, kStacks = 500, kDepth = 20;
  double first_round_ms = 0, later_rounds_ms = 0;
  int64_t total = 0;
  for (int round = 0; round < kRounds; ++round) {
    const auto start = Clock::now();
    for (int n = 0; n < kNodes; ++n) {
      const v1::IngestBatch batch =
          NodeBatch("n" + std::to_string(n), round + 1, kT0 + round * 10 * kSec, kStacks, kDepth);
      for (const auto& s : batch.samples()) total += s.value();
      StatusOr<storage::IngestResult> r = store->Ingest(batch);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    (round == 0 ? first_round_ms : later_rounds_ms) += MsSince(start);
  }
  const double new_ms = first_round_ms / kNodes;
  const double known_ms = later_rounds_ms / (kNodes * (kRounds - 1));
  storage::ProfileQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + 3600 * kSec;
  auto start = Clock::now();
  StatusOr<storage::MergedProfile> cold = store->SelectProfile(q);
  const double cold_ms = MsSince(start);
  ASSERT_TRUE(cold.ok()) << cold.status().ToString();
  start = Clock::now();
  StatusOr<storage::MergedProfile> warm = store->SelectProfile(q);
  const double warm_ms = MsSince(start);
  ASSERT_TRUE(warm.ok());
  EXPECT_EQ(cold->total, total);
  EXPECT_EQ(cold->stacks.size(), static_cast<size_t>(kNodes * kStacks));
  std::printf("one node's batch (%d stacks, depth %d): %.1f ms with new content, %.1f ms known\n", kStacks, kDepth,
              new_ms, known_ms);
  std::printf("flame graph over %zu stacks: %.1f ms cold (stacks resolved), %.1f ms warm\n", cold->stacks.size(),
              cold_ms, warm_ms);
}

}  // namespace
}  // namespace warpscope::clickhouse
