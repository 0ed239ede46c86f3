#include "storage/embedded/segment_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <thread>

#include "storage/embedded/segment_test_util.h"

namespace warpscope::segment_test {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::unique_ptr<SegmentReader> OpenOrDie(const std::string& path) {
  auto r = SegmentReader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Every type's full scan equals the model, and the file-wide numbers agree.
void ExpectMatchesModel(const SegmentReader& reader, const Model& model) {
  EXPECT_EQ(reader.row_count(), model.size());
  for (uint32_t type = 0; type < 4; ++type) {
    Status s;
    EXPECT_EQ(ScanToModel(reader, type, kMin, kMax, nullptr, &s), Query(model, type, kMin, kMax, nullptr));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_TRUE(reader.Verify().ok());
}

TEST_F(SegmentTest, RoundTripsRandomRows) {
  const std::vector<SampleRow> rows = RandomRows(50'000, 1);
  const Model model = BuildModel(rows);
  for (uint32_t block : {1000u, 65536u}) {
    for (int64_t window : {int64_t{0}, int64_t{300'000'000'000}}) {
      SegmentWriteOptions options;
      options.rows_per_block = block;
      options.time_window_ns = window;
      ASSERT_TRUE(WriteSegment(Path("seg"), rows, options).ok());
      auto reader = OpenOrDie(Path("seg"));
      ASSERT_NE(reader, nullptr);
      ExpectMatchesModel(*reader, model);
      EXPECT_EQ(reader->min_time(), std::get<2>(std::min_element(model.begin(), model.end(), [](auto& a, auto& b) {
                                                  return std::get<2>(a.first) < std::get<2>(b.first);
                                                })->first));
      EXPECT_EQ(reader->block_count(), (model.size() + block - 1) / block);
    }
  }
}

TEST_F(SegmentTest, RowsComeBackInFileOrder) {
  SegmentWriteOptions options;
  options.time_window_ns = 0;  // pure (type, series, time, stack)
  ASSERT_TRUE(WriteSegment(Path("seg"), RandomRows(5000, 2), options).ok());
  auto reader = OpenOrDie(Path("seg"));
  std::vector<SampleRow> got;
  ASSERT_TRUE(reader->Scan(kMin, kMax, nullptr, 1, [&](const SampleRow& r) { got.push_back(r); }).ok());
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), [](const SampleRow& a, const SampleRow& b) {
    return std::tie(a.series_id, a.time_ns, a.stack_id) < std::tie(b.series_id, b.time_ns, b.stack_id);
  }));
}

TEST_F(SegmentTest, TimeRangesAreHalfOpen) {
  const std::vector<SampleRow> rows = RandomRows(20'000, 3);
  const Model model = BuildModel(rows);
  SegmentWriteOptions options;
  options.rows_per_block = 512;  // many blocks, so range pruning is exercised
  ASSERT_TRUE(WriteSegment(Path("seg"), rows, options).ok());
  auto reader = OpenOrDie(Path("seg"));
  std::mt19937_64 rng(4);
  const int64_t lo = reader->min_time() - 20'000'000'000LL;
  const uint64_t span = static_cast<uint64_t>(reader->max_time() - lo) + 40'000'000'000ULL;
  for (int i = 0; i < 200; ++i) {
    int64_t from = lo + static_cast<int64_t>(rng() % span);
    int64_t to = lo + static_cast<int64_t>(rng() % span);
    if (i % 4 == 0) from = from / 10'000'000'000LL * 10'000'000'000LL;  // exactly on a bucket
    if (i % 8 == 0) to = from;                                         // empty range
    const uint32_t type = static_cast<uint32_t>(rng() % 3);
    Status s;
    EXPECT_EQ(ScanToModel(*reader, type, from, to, nullptr, &s), Query(model, type, from, to, nullptr))
        << "[" << from << ", " << to << ")";
    EXPECT_TRUE(s.ok());
  }
  // A bucket's own start is in, its end is out.
  const int64_t t = reader->min_time();
  Status s;
  const Model one = ScanToModel(*reader, 0, t, t + 1, nullptr, &s);
  EXPECT_EQ(one, Query(model, 0, t, t + 10'000'000'000LL, nullptr));
  EXPECT_TRUE(ScanToModel(*reader, 0, t - 10, t, nullptr, &s).empty());
}

TEST_F(SegmentTest, SeriesFilterSelectsSeries) {
  const std::vector<SampleRow> rows = RandomRows(20'000, 5);
  const Model model = BuildModel(rows);
  SegmentWriteOptions options;
  options.rows_per_block = 700;
  ASSERT_TRUE(WriteSegment(Path("seg"), rows, options).ok());
  auto reader = OpenOrDie(Path("seg"));
  const std::function<bool(uint64_t)> filters[] = {
      [](uint64_t s) { return s == 7; },
      [](uint64_t s) { return s % 3 == 0; },
      [](uint64_t) { return false; },
  };
  const int64_t mid = (reader->min_time() + reader->max_time()) / 2;
  for (const auto& filter : filters) {
    for (uint32_t type = 0; type < 3; ++type) {
      Status s;
      EXPECT_EQ(ScanToModel(*reader, type, kMin, kMax, filter, &s), Query(model, type, kMin, kMax, filter));
      EXPECT_EQ(ScanToModel(*reader, type, mid, kMax, filter, &s), Query(model, type, mid, kMax, filter));
      EXPECT_TRUE(s.ok());
    }
  }
  // Called per run of a series, not per row.
  int calls = 0;
  ASSERT_TRUE(reader->Scan(kMin, kMax, [&](uint64_t) { return ++calls, true; }, 0, [](const SampleRow&) {}).ok());
  EXPECT_LT(calls, static_cast<int>(reader->row_count() / 10));
}

TEST_F(SegmentTest, MergesExactDuplicatesBySumming) {
  const int64_t t = 1'000'000'000'000;
  std::vector<SampleRow> rows = {
      {t, 1, 10, 5, 0},   {t, 1, 10, 7, 0},  {t, 1, 10, -2, 0},  // same key: 10
      {t, 1, 10, 1, 1},                                             // other type
      {t, 2, 10, 1, 0},                                             // other series
      {t + 1, 1, 10, 1, 0},                                         // other time
      {t, 1, 11, 1, 0},                                             // other stack
  };
  ASSERT_TRUE(WriteSegment(Path("seg"), rows, {}).ok());
  auto reader = OpenOrDie(Path("seg"));
  EXPECT_EQ(reader->row_count(), 5u);
  ExpectMatchesModel(*reader, BuildModel(rows));
  std::vector<SampleRow> got;
  ASSERT_TRUE(reader->Scan(t, t + 1, [](uint64_t s) { return s == 1; }, 0,
                           [&](const SampleRow& r) { got.push_back(r); }).ok());
  EXPECT_EQ(got, (std::vector<SampleRow>{{t, 1, 10, 10, 0}, {t, 1, 11, 1, 0}}));
}

// Rows already acknowledged must never make a flush or compaction fail:
// sums stick at the int64 limits.
TEST_F(SegmentTest, MergeSaturatesAtTheInt64Limits) {
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
  std::vector<SampleRow> rows = {{0, 1, 1, kMax, 0}, {0, 1, 1, 1, 0}, {0, 1, 1, kMax, 0},
                                 {0, 2, 1, kLowest, 0}, {0, 2, 1, -1, 0}};
  ASSERT_TRUE(WriteSegment(Path("seg"), rows, {}).ok());
  auto reader = OpenOrDie(Path("seg"));
  std::vector<SampleRow> got;
  ASSERT_TRUE(reader->Scan(kMin, kMax, nullptr, 0, [&](const SampleRow& r) { got.push_back(r); }).ok());
  EXPECT_EQ(got, (std::vector<SampleRow>{{0, 1, 1, kMax, 0}, {0, 2, 1, kLowest, 0}}));
}

TEST_F(SegmentTest, EmptySegment) {
  ASSERT_TRUE(WriteSegment(Path("seg"), {}, {}).ok());
  auto reader = OpenOrDie(Path("seg"));
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->row_count(), 0u);
  EXPECT_EQ(reader->block_count(), 0u);
  EXPECT_EQ(reader->min_time(), 0);
  EXPECT_EQ(reader->max_time(), 0);
  int visits = 0;
  EXPECT_TRUE(reader->Scan(kMin, kMax, nullptr, 0, [&](const SampleRow&) { ++visits; }).ok());
  EXPECT_EQ(visits, 0);
  EXPECT_TRUE(reader->Verify().ok());
}

TEST_F(SegmentTest, BlockBoundaries) {
  for (uint32_t block : {1u, 2u, 7u, 100u}) {
    for (size_t n : {size_t{1}, size_t{block} - 1, size_t{block}, size_t{block} + 1, size_t{3} * block}) {
      if (n == 0) continue;
      std::vector<SampleRow> rows;
      for (size_t i = 0; i < n; ++i) {
        rows.push_back({static_cast<int64_t>(i % 5) * 10, 1 + i / 5, 100 + i, static_cast<int64_t>(i), 0});
      }
      SegmentWriteOptions options;
      options.rows_per_block = block;
      ASSERT_TRUE(WriteSegment(Path("seg"), rows, options).ok());
      auto reader = OpenOrDie(Path("seg"));
      ASSERT_NE(reader, nullptr);
      EXPECT_EQ(reader->block_count(), (n + block - 1) / block) << block << " " << n;
      ExpectMatchesModel(*reader, BuildModel(rows));
    }
  }
}

TEST_F(SegmentTest, ExtremeValuesRoundTrip) {
  const uint64_t kBig = std::numeric_limits<uint64_t>::max();
  std::vector<SampleRow> rows = {
      {kMin, 0, 0, kMin, 0},           {kMin, kBig, kBig, kMax, 0}, {kMax - 1, 0, kBig, -1, 0},
      {0, kBig / 2, 1, 0, 0},          {-5, 3, kBig - 1, 9, 0},     {kMax - 1, kBig, 0, 1, kMax >> 33},
      {kMax, 1, 1, 1, 0},  // unreachable by a half-open scan, but stored
  };
  ASSERT_TRUE(WriteSegment(Path("seg"), rows, {}).ok());
  auto reader = OpenOrDie(Path("seg"));
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->min_time(), kMin);
  EXPECT_EQ(reader->max_time(), kMax);
  const Model model = BuildModel(rows);
  Status s;
  EXPECT_EQ(ScanToModel(*reader, 0, kMin, kMax, nullptr, &s), Query(model, 0, kMin, kMax, nullptr));
  EXPECT_EQ(ScanToModel(*reader, kMax >> 33, kMin, kMax, nullptr, &s).size(), 1u);
  EXPECT_TRUE(reader->Verify().ok());
}

TEST_F(SegmentTest, ConcurrentScansAgree) {
  const std::vector<SampleRow> rows = RandomRows(40'000, 6);
  const Model model = BuildModel(rows);
  SegmentWriteOptions options;
  options.rows_per_block = 1000;
  ASSERT_TRUE(WriteSegment(Path("seg"), rows, options).ok());
  auto reader = OpenOrDie(Path("seg"));
  std::vector<Model> results(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      Status s;
      for (int rep = 0; rep < 5; ++rep) results[i] = ScanToModel(*reader, i % 3, kMin, kMax, nullptr, &s);
      EXPECT_TRUE(s.ok());
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i], Query(model, static_cast<uint32_t>(i % 3), kMin, kMax, nullptr));
  }
}

TEST_F(SegmentTest, ReplacesAtomicallyAndLeavesNoTemporaryFiles) {
  ASSERT_TRUE(WriteSegment(Path("seg"), RandomRows(100, 7), {}).ok());
  ASSERT_TRUE(WriteSegment(Path("seg"), RandomRows(10, 8), {}).ok());
  EXPECT_EQ(OpenOrDie(Path("seg"))->row_count(), BuildModel(RandomRows(10, 8)).size());
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "seg");
  }
  EXPECT_EQ(entries, 1u);
  EXPECT_FALSE(WriteSegment(dir_ + "/no/such/dir/seg", RandomRows(10, 8), {}).ok());
}

TEST_F(SegmentTest, RejectsInvalidOptions) {
  SegmentWriteOptions options;
  options.rows_per_block = 0;
  EXPECT_EQ(WriteSegment(Path("seg"), {}, options).code(), StatusCode::kInvalidArgument);
  options = {};
  options.rows_per_block = (1u << 20) + 1;
  EXPECT_EQ(WriteSegment(Path("seg"), {}, options).code(), StatusCode::kInvalidArgument);
  options = {};
  options.zstd_level = 1000;
  EXPECT_EQ(WriteSegment(Path("seg"), {}, options).code(), StatusCode::kInvalidArgument);
  options = {};
  options.time_window_ns = -1;
  EXPECT_EQ(WriteSegment(Path("seg"), {}, options).code(), StatusCode::kInvalidArgument);
}

TEST_F(SegmentTest, MissingFileIsNotFound) {
  auto r = SegmentReader::Open(Path("absent"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace warpscope::segment_test
