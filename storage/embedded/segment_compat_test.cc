// Files written by older builds must stay readable (STYLE.md rule 7). Each
// format version keeps a small file as written by the first build that wrote
// it; a format change adds a fixture and never edits an old one.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "storage/embedded/segment_file.h"
#include "storage/embedded/segment_test_util.h"

namespace warpscope::segment_test {
namespace {

// The rows the fixtures hold: 48 rows of type 0 in 4 series x 6 buckets, and
// one of type 3 with a negative value.
std::vector<SampleRow> FixtureRows() {
  std::vector<SampleRow> rows;
  for (int i = 0; i < 48; ++i) {
    rows.push_back({1'767'225'600'000'000'000LL + (i % 6) * 10'000'000'000LL, 1 + static_cast<uint64_t>(i / 12),
                    1000 + static_cast<uint64_t>(i % 4), 1, 0});
  }
  rows.push_back({1'767'225'600'000'000'000LL, 9, 77, -5, 3});
  return rows;
}

// The GPU rows of the version 2 fixture: three activities of two series
// (one a memcpy) and two coverage rows.
GpuRows FixtureGpuRows() {
  GpuRows gpu;
  GpuActivityRow k;
  k.start_ns = 1'767'225'600'000'001'000LL;
  k.duration_ns = 2500;
  k.series_id = 1;
  k.name_id = 40;
  k.system_name_id = 41;
  k.stack_id = 1000;
  k.correlation_id = 9001;
  k.graph_id = 3;
  k.device = 1;
  k.stream = 7;
  k.grid[0] = 80;
  k.grid[1] = 2;
  k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registers_per_thread = 64;
  k.static_shared_bytes = 1024;
  k.dynamic_shared_bytes = 4096;
  gpu.activities.push_back(k);
  k.start_ns += 5000;
  k.correlation_id += 1;
  k.series_id = 2;
  gpu.activities.push_back(k);
  GpuActivityRow copy;
  copy.start_ns = 1'767'225'600'000'000'500LL;
  copy.duration_ns = 400;
  copy.series_id = 1;
  copy.name_id = 1;
  copy.system_name_id = 1;
  copy.correlation_id = 9000;
  copy.stream = 7;
  copy.bytes = 1 << 20;
  copy.copy_kind = 1;
  copy.kind = 1;
  gpu.activities.push_back(copy);
  gpu.coverage.push_back({1'767'225'600'000'000'000LL, 1, 12, 2, 1'767'225'600'000'007'000LL});
  gpu.coverage.push_back({1'767'225'600'000'000'000LL, 2, 1, 1, 1'767'225'601'000'000'000LL});
  return gpu;
}

// Format version 1, written with rows_per_block = 32 (2 blocks; zstd and
// stored chunks both occur).
const char kVersion1[] =
    "\x57\x53\x53\x45\x47\x00\x01\x00\x20\x00\x00\xfa\xed\x51\x72\x86\x18\x80\xc8\xaf\xa0\x25\x00\x09"
    "\x09\x00\x02\x0c\x00\x02\x0c\x00\x02\x08\x01\x20\x17\x28\xb5\x2f\xfd\x20\x20\x75\x00\x00\x20\x00"
    "\x00\x02\x09\x03\x00\x2f\x1b\x5a\xca\xad\x70\x43\x01\x21\x15\x28\xb5\x2f\xfd\x20\x21\x65\x00\x00"
    "\x30\xd0\x0f\x04\x01\x04\x05\x01\x00\x87\xae\x08\x01\x20\x11\x28\xb5\x2f\xfd\x20\x20\x45\x00\x00"
    "\x10\x02\x02\x01\x00\x22\xc0\x02\x11\x00\x00\xfa\xed\x51\x72\x86\x18\x80\xc8\xaf\xa0\x25\x00\x09"
    "\x09\x00\x06\x04\x00\x02\x0c\x03\x0a\x01\x00\x11\x11\x08\x00\x02\x00\x09\x00\x02\x00\x02\x00\x02"
    "\x00\x02\x00\x02\x00\x09\x00\x13\x13\xd0\x0f\x04\x01\x04\x05\x04\x01\x04\x05\x04\x01\x04\x05\x04"
    "\x01\x04\xbb\x0e\x00\x11\x11\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x09"
    "\x31\x00\x00\x00\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72\x86\x18\x00\x74\x35\x92\x5d\x72\x86\x18"
    "\x00\xb8\x64\xd9\x45\x00\x00\x00\x02\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x60\x00\x00\x00"
    "\x1a\x00\x00\x00\x40\x9d\x73\xe3\xe9\x02\xd9\x62\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72\x86\x18\x00\x74\x35\x92\x5d\x72\x86\x18\x01\x00\x00\x00"
    "\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x68\x00\x00\x00\x00\x00\x00\x00\x58\x00\x00\x00"
    "\x1a\x00\x00\x00\x76\x1c\x0f\x25\x8a\x93\x4f\x37\x11\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72\x86\x18\x00\x74\x35\x92\x5d\x72\x86\x18\x03\x00\x00\x00"
    "\x00\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00\xb4\x00\x00\x00"
    "\x07\xd6\x69\x94\x57\x53\x53\x45\x47\x00\x01\x00";

TEST_F(SegmentTest, ReadsFormatVersion1Fixture) {
  WriteBytes(Path("v1"), std::string(kVersion1, sizeof(kVersion1) - 1));
  auto reader = SegmentReader::Open(Path("v1"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const Model model = BuildModel(FixtureRows());
  EXPECT_EQ((*reader)->row_count(), model.size());
  EXPECT_EQ((*reader)->block_count(), 2u);
  EXPECT_EQ((*reader)->min_time(), 1'767'225'600'000'000'000LL);
  EXPECT_EQ((*reader)->max_time(), 1'767'225'650'000'000'000LL);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (uint32_t type : {0u, 3u}) {
    Status s;
    EXPECT_EQ(ScanToModel(**reader, type, kMin, kMax, nullptr, &s), Query(model, type, kMin, kMax, nullptr));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_TRUE((*reader)->Verify().ok());
}

// Format version 2 (GPU section), the same rows plus FixtureGpuRows(),
// written with rows_per_block = 32.
const char kVersion2[] =
    "\x57\x53\x53\x45\x47\x00\x02\x00\x20\x00\x00\xfa\xed\x51\x72\x86\x18\x80\xc8\xaf\xa0\x25\x00\x09"
    "\x09\x00\x02\x0c\x00\x02\x0c\x00\x02\x08\x01\x20\x17\x28\xb5\x2f\xfd\x20\x20\x75\x00\x00\x20\x00"
    "\x00\x02\x09\x03\x00\x2f\x1b\x5a\xca\xad\x70\x43\x01\x21\x15\x28\xb5\x2f\xfd\x20\x21\x65\x00\x00"
    "\x30\xd0\x0f\x04\x01\x04\x05\x01\x00\x87\xae\x08\x01\x20\x11\x28\xb5\x2f\xfd\x20\x20\x45\x00\x00"
    "\x10\x02\x02\x01\x00\x22\xc0\x02\x11\x00\x00\xfa\xed\x51\x72\x86\x18\x80\xc8\xaf\xa0\x25\x00\x09"
    "\x09\x00\x06\x04\x00\x02\x0c\x03\x0a\x01\x00\x11\x11\x08\x00\x02\x00\x09\x00\x02\x00\x02\x00\x02"
    "\x00\x02\x00\x02\x00\x09\x00\x13\x13\xd0\x0f\x04\x01\x04\x05\x04\x01\x04\x05\x04\x01\x04\x05\x04"
    "\x01\x04\xbb\x0e\x00\x11\x11\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x09"
    "\x00\x5c\x5c\x03\xe8\x87\xd0\xdf\xbd\x94\xb9\x86\x31\xe8\x07\x90\x4e\xa0\x06\x88\x27\x88\x27\x02"
    "\x00\x02\x01\x00\x00\x01\x28\x28\x01\x29\x29\x00\xe8\x07\xe8\x07\x00\x01\x01\x07\x07\x07\xd0\x8c"
    "\x01\x02\x02\x00\x03\x03\x00\x50\x50\x00\x02\x02\x00\x01\x01\x00\x80\x02\x80\x02\x00\x01\x01\x00"
    "\x01\x01\x00\x40\x40\x00\x80\x08\x80\x08\x00\x80\x20\x80\x20\x80\x80\x40\x00\x00\x01\x00\x00\x00"
    "\x18\x18\x02\x80\x80\xd0\xdf\xbd\x94\xb9\x86\x31\x02\x0c\x02\xb0\x6d\x00\x02\x01\x01\x80\xa8\xd6"
    "\xb9\x07\x31\x00\x00\x00\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72\x86\x18\x00\x74\x35\x92\x5d\x72"
    "\x86\x18\x00\xb8\x64\xd9\x45\x00\x00\x00\x02\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x60\x00"
    "\x00\x00\x1a\x00\x00\x00\x40\x9d\x73\xe3\xe9\x02\xd9\x62\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72\x86\x18\x00\x74\x35\x92\x5d\x72\x86\x18\x01\x00"
    "\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x68\x00\x00\x00\x00\x00\x00\x00\x58\x00"
    "\x00\x00\x1a\x00\x00\x00\x76\x1c\x0f\x25\x8a\x93\x4f\x37\x11\x00\x00\x00\x00\x00\x00\x00\x03\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72\x86\x18\x00\x74\x35\x92\x5d\x72\x86\x18\x03\x00"
    "\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00\x03\x00"
    "\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00\x5f\x00\x00\x00\x7e\xf4"
    "\xdd\xb4\x03\x00\x00\x00\x00\x00\x00\x00\xf4\x01\xfa\xed\x51\x72\x86\x18\x70\x17\xfa\xed\x51\x72"
    "\x86\x18\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x1f\x01\x00\x00\x00\x00"
    "\x00\x00\x1b\x00\x00\x00\xb5\x21\xf0\x10\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\xfa\xed\x51\x72"
    "\x86\x18\x00\x00\xfa\xed\x51\x72\x86\x18\x3a\x01\x00\x00\x00\x00\x00\x00\x28\x01\x00\x00\xea\x16"
    "\x53\x5f\x57\x53\x53\x45\x47\x00\x02\x00";

TEST_F(SegmentTest, ReadsFormatVersion2Fixture) {
  WriteBytes(Path("v2"), std::string(kVersion2, sizeof(kVersion2) - 1));
  auto reader = SegmentReader::Open(Path("v2"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->format_version(), 2);
  const Model model = BuildModel(FixtureRows());
  EXPECT_EQ((*reader)->row_count(), model.size());
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (uint32_t type : {0u, 3u}) {
    Status s;
    EXPECT_EQ(ScanToModel(**reader, type, kMin, kMax, nullptr, &s), Query(model, type, kMin, kMax, nullptr));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  const GpuRows expected = FixtureGpuRows();
  std::vector<GpuActivityRow> activities;
  ASSERT_TRUE((*reader)->ScanGpuActivities(kMin, kMax, nullptr, [&](const GpuActivityRow& r) {
    activities.push_back(r);
  }).ok());
  // File order is by start: the memcpy first.
  EXPECT_EQ(activities, (std::vector<GpuActivityRow>{expected.activities[2], expected.activities[0],
                                                     expected.activities[1]}));
  std::vector<GpuCoverageRow> coverage;
  ASSERT_TRUE(
      (*reader)->ScanGpuCoverage(kMin, kMax, nullptr, [&](const GpuCoverageRow& r) { coverage.push_back(r); }).ok());
  EXPECT_EQ(coverage, expected.coverage);
  EXPECT_TRUE((*reader)->Verify().ok());
}

// A version 1 file has no GPU section: GPU scans find nothing.
TEST_F(SegmentTest, Version1FixtureHasNoGpuRows) {
  WriteBytes(Path("v1"), std::string(kVersion1, sizeof(kVersion1) - 1));
  auto reader = SegmentReader::Open(Path("v1"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->format_version(), 1);
  EXPECT_EQ((*reader)->gpu_activity_count(), 0u);
  EXPECT_EQ((*reader)->total_rows(), (*reader)->row_count());
  size_t seen = 0;
  ASSERT_TRUE((*reader)->ScanGpuActivities(INT64_MIN, INT64_MAX, nullptr, [&](const GpuActivityRow&) { ++seen; }).ok());
  EXPECT_EQ(seen, 0u);
}

// Regenerates the fixture of the current format version (to add it as a new
// constant when the format changes; never to replace an old one):
//   WS_PRINT_SEGMENT_FIXTURE=1 segment_file_test --gtest_filter='*PrintCurrentFormatFixture'
TEST_F(SegmentTest, PrintCurrentFormatFixture) {
  if (std::getenv("WS_PRINT_SEGMENT_FIXTURE") == nullptr) GTEST_SKIP() << "set WS_PRINT_SEGMENT_FIXTURE=1";
  SegmentWriteOptions options;
  options.rows_per_block = 32;
  ASSERT_TRUE(WriteSegment(Path("fixture"), FixtureRows(), FixtureGpuRows(), options).ok());
  const std::string bytes = ReadBytes(Path("fixture"));
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 24 == 0) std::printf("%s    \"", i ? "\"\n" : "");
    std::printf("\\x%02x", static_cast<uint8_t>(bytes[i]));
  }
  std::printf("\";\n");
}

}  // namespace
}  // namespace warpscope::segment_test
