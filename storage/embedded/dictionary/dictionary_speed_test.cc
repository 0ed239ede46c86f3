// Measures InternBatch on a realistic upload (1000 stacks x depth 30, 50
// series): all content new vs all content already known. Prints batches/s;
// asserts only what must hold (a known batch writes no dictionary rows), not
// timings, which depend on the disk's fsync latency.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "storage/embedded/dictionary/batch_validator.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/embedded/dictionary/dictionary_test_util.h"

namespace warpscope::dictionary {
namespace {

using testing::OpenOrDie;
using testing::ScratchDir;

TEST(DictionarySpeedTest, InternRealisticBatchNewVersusKnown) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  constexpr int kBatches = 10;
  std::vector<v1::IngestBatch> fresh;
  for (int i = 0; i < kBatches; ++i) fresh.push_back(testing::RealisticBatch("t" + std::to_string(i), 1));

  auto start = std::chrono::steady_clock::now();
  uint64_t new_rows = 0;
  for (const auto& batch : fresh) {
    StatusOr<InternedBatch> interned = store->InternBatch(batch);
    ASSERT_TRUE(interned.ok()) << interned.status().ToString();
    new_rows += interned->new_rows;
  }
  double new_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The same batches again (a later upload of the same node): every lookup hits the cache.
  constexpr int kKnownRounds = 5;
  start = std::chrono::steady_clock::now();
  for (int round = 0; round < kKnownRounds; ++round) {
    for (auto& batch : fresh) {
      batch.set_sequence(batch.sequence() + 1);
      StatusOr<InternedBatch> interned = store->InternBatch(batch);
      ASSERT_TRUE(interned.ok()) << interned.status().ToString();
      ASSERT_EQ(interned->new_rows, 0u);
    }
  }
  double known_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Where a known batch's time goes: validation alone, and an empty batch
  // (one transaction that only updates the sequence record: the fsync cost).
  start = std::chrono::steady_clock::now();
  for (const auto& batch : fresh) ASSERT_TRUE(ValidateBatch(batch).ok());
  double validate_ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kBatches;
  v1::IngestBatch empty = testing::BatchBuilder("agent-empty", 1).batch();
  constexpr int kEmpty = 20;
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEmpty; ++i) {
    empty.set_sequence(i + 1);
    ASSERT_TRUE(store->InternBatch(empty).ok());
  }
  double empty_ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kEmpty;
  std::printf("[ dictionary ] known batch breakdown: validation %.2f ms, empty-batch commit (fsync) %.2f ms\n",
              validate_ms, empty_ms);
  std::printf(
      "[ dictionary ] realistic batch (1000 stacks x 30, 50 series): %.1f batches/s all new "
      "(%.1f ms each, %.0f rows each), %.1f batches/s all known (%.2f ms each, 0 dictionary rows)\n",
      kBatches / new_s, 1e3 * new_s / kBatches, static_cast<double>(new_rows) / kBatches,
      kKnownRounds * kBatches / known_s, 1e3 * known_s / (kKnownRounds * kBatches));
}

}  // namespace
}  // namespace warpscope::dictionary
