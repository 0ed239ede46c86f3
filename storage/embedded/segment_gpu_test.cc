// The GPU section of segment files (segment_gpu_section.h): round trip, block
// skipping by time, series filters, version 2 layout checks, corruption.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "storage/embedded/segment_file.h"
#include "storage/embedded/segment_test_util.h"

namespace warpscope::segment_test {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kT = 1'767'225'600'000'000'000LL;

// n activities 1 us apart over 3 series, in reverse order (the writer sorts).
GpuRows ManyActivities(size_t n) {
  GpuRows gpu;
  for (size_t i = n; i-- > 0;) {
    GpuActivityRow r;
    r.start_ns = kT + static_cast<int64_t>(i) * 1000;
    r.duration_ns = static_cast<int64_t>(i % 97) * 10;
    r.series_id = 1 + i % 3;
    r.name_id = 5 + i % 4;
    r.system_name_id = 50 + i % 4;
    r.correlation_id = i;
    r.stream = static_cast<uint32_t>(i % 2);
    r.grid[0] = 128;
    r.block[0] = 256;
    gpu.activities.push_back(r);
  }
  for (int s = 0; s < 3; ++s) gpu.coverage.push_back({kT + s * 1'000'000'000LL, 2, 100, 90, kT + s * 1'000'000'000LL + 5});
  return gpu;
}

std::vector<GpuActivityRow> ScanAll(const SegmentReader& r, int64_t from, int64_t to,
                                    const std::function<bool(uint64_t)>& filter = nullptr) {
  std::vector<GpuActivityRow> out;
  Status s = r.ScanGpuActivities(from, to, filter, [&](const GpuActivityRow& row) { out.push_back(row); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST_F(SegmentTest, GpuSectionRoundTripsBesideSamples) {
  const GpuRows gpu = ManyActivities(40'000);  // 3 GPU blocks
  const std::vector<SampleRow> samples = RandomRows(1000, 7);
  ASSERT_TRUE(WriteSegment(Path("seg"), samples, gpu, SegmentWriteOptions()).ok());
  auto reader = SegmentReader::Open(Path("seg"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const SegmentReader& r = **reader;
  EXPECT_EQ(r.format_version(), segment::kFormatVersion);
  EXPECT_EQ(r.gpu_activity_count(), 40'000u);
  EXPECT_EQ(r.gpu_coverage_count(), 3u);
  EXPECT_EQ(r.total_rows(), r.row_count() + 40'003u);
  EXPECT_TRUE(r.Verify().ok());
  // Samples read as before.
  const Model model = BuildModel(samples);
  for (uint32_t type = 0; type < 4; ++type) {
    Status s;
    EXPECT_EQ(ScanToModel(r, type, kMin, kMax, nullptr, &s), Query(model, type, kMin, kMax, nullptr));
  }
  std::vector<GpuActivityRow> all = ScanAll(r, kMin, kMax);
  ASSERT_EQ(all.size(), 40'000u);
  std::vector<GpuActivityRow> expected = gpu.activities;
  std::reverse(expected.begin(), expected.end());  // file order: by start
  EXPECT_EQ(all, expected);
  // Half-open ranges on start, across block boundaries.
  const std::vector<GpuActivityRow> mid = ScanAll(r, kT + 16'000'000, kT + 16'500'000);
  ASSERT_EQ(mid.size(), 500u);
  EXPECT_EQ(mid.front().start_ns, kT + 16'000'000);
  EXPECT_EQ(mid.back().start_ns, kT + 16'499'000);
  const auto series2 = ScanAll(r, kMin, kMax, [](uint64_t s) { return s == 2; });
  EXPECT_EQ(series2.size(), 13'333u);
  std::vector<GpuCoverageRow> coverage;
  ASSERT_TRUE(r.ScanGpuCoverage(kT + 1, kMax, nullptr, [&](const GpuCoverageRow& c) { coverage.push_back(c); }).ok());
  EXPECT_EQ(coverage, std::vector<GpuCoverageRow>(gpu.coverage.begin() + 1, gpu.coverage.end()));
  EXPECT_EQ(r.data_min_time(), std::min(r.min_time(), kT));
  EXPECT_EQ(r.data_max_time(), std::max<int64_t>(r.max_time(), kT + 2'000'000'000LL));  // the last coverage second
}

TEST_F(SegmentTest, GpuOnlySegmentHasNoSampleRows) {
  ASSERT_TRUE(WriteSegment(Path("seg"), {}, ManyActivities(10), SegmentWriteOptions()).ok());
  auto reader = SegmentReader::Open(Path("seg"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->row_count(), 0u);
  EXPECT_EQ((*reader)->total_rows(), 13u);
  EXPECT_EQ((*reader)->data_min_time(), kT);
  EXPECT_EQ((*reader)->data_max_time(), kT + 2'000'000'000LL);
  EXPECT_EQ(ScanAll(**reader, kMin, kMax).size(), 10u);
}

TEST_F(SegmentTest, DamagedGpuBlockGivesDataLossNamingTheFile) {
  ASSERT_TRUE(WriteSegment(Path("seg"), RandomRows(100, 1), ManyActivities(100), SegmentWriteOptions()).ok());
  std::string bytes = ReadBytes(Path("seg"));
  // The same samples without GPU rows: the sample blocks are identical, so
  // the first differing byte is where the GPU section starts.
  ASSERT_TRUE(WriteSegment(Path("plain"), RandomRows(100, 1), GpuRows{}, SegmentWriteOptions()).ok());
  const std::string plain_bytes = ReadBytes(Path("plain"));
  size_t first_diff = 0;
  while (first_diff < plain_bytes.size() && plain_bytes[first_diff] == bytes[first_diff]) ++first_diff;
  bytes[first_diff + 3] ^= 0x5a;
  WriteBytes(Path("seg"), bytes);
  auto reader = SegmentReader::Open(Path("seg"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();  // blocks are checked lazily
  Status s = (*reader)->ScanGpuActivities(kMin, kMax, nullptr, [](const GpuActivityRow&) {});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(Path("seg")), std::string::npos) << s.message();
  EXPECT_EQ((*reader)->Verify().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace warpscope::segment_test
