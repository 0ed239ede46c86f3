// Damaged segment files must always give an error and never crash, hang or
// return wrong rows silently.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "storage/embedded/column_codec.h"
#include "storage/embedded/segment_file.h"
#include "storage/embedded/segment_format.h"
#include "storage/embedded/segment_test_util.h"

namespace warpscope::segment_test {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Opens, verifies and scans every type; returns the first error (or OK).
// Scans run even when Verify fails, to show that they do not crash either.
Status OpenVerifyAndScan(const std::string& path) {
  auto reader = SegmentReader::Open(path);
  if (!reader.ok()) return reader.status();
  Status first = (*reader)->Verify();
  for (uint32_t type = 0; type < 3; ++type) {
    Status s = (*reader)->Scan(kMin, kMax, nullptr, type, [](const SampleRow&) {});
    if (first.ok()) first = s;
  }
  return first;
}

class SegmentCorruptionTest : public SegmentTest {
 protected:
  void SetUp() override {
    SegmentTest::SetUp();
    SegmentWriteOptions options;
    options.rows_per_block = 150;  // four blocks, mostly of one type each, in under 3 KB
    ASSERT_TRUE(WriteSegment(Path("good"), RandomRows(600, 11), options).ok());
    good_ = ReadBytes(Path("good"));
    ASSERT_TRUE(OpenVerifyAndScan(Path("good")).ok());
  }

  // These tests rewrite a small file thousands of times; on tmpfs that takes
  // a second, on a busy ext4 disk ten times as long.
  std::string ScratchBase() const override {
    return std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : SegmentTest::ScratchBase();
  }

  std::string good_;
};

TEST_F(SegmentCorruptionTest, EveryFlippedByteIsDetected) {
  ASSERT_LT(good_.size(), 8u * 1024) << "keep the fixture small: every byte is tried";
  for (size_t i = 0; i < good_.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::string bad = good_;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      WriteBytes(Path("bad"), bad);
      const Status s = OpenVerifyAndScan(Path("bad"));
      ASSERT_FALSE(s.ok()) << "flipping byte " << i << " with " << int{mask} << " went unnoticed";
      // The version bytes say "newer format"; everything else is data loss.
      ASSERT_TRUE(s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kFailedPrecondition)
          << i << ": " << s.ToString();
      ASSERT_NE(s.message().find(Path("bad")), std::string::npos) << s.ToString();
    }
  }
}

TEST_F(SegmentCorruptionTest, EveryTruncationIsDataLoss) {
  for (size_t len = 0; len < good_.size(); ++len) {
    WriteBytes(Path("bad"), good_.substr(0, len));
    auto reader = SegmentReader::Open(Path("bad"));
    ASSERT_FALSE(reader.ok()) << "truncated to " << len;
    ASSERT_EQ(reader.status().code(), StatusCode::kDataLoss) << reader.status().ToString();
    ASSERT_NE(reader.status().message().find(Path("bad")), std::string::npos);
  }
}

TEST_F(SegmentCorruptionTest, AppendedBytesAreDataLoss) {
  for (const std::string& tail : {std::string(1, '\0'), std::string(24, 'x'), good_}) {
    WriteBytes(Path("bad"), good_ + tail);
    EXPECT_EQ(OpenVerifyAndScan(Path("bad")).code(), StatusCode::kDataLoss);
  }
}

TEST_F(SegmentCorruptionTest, EmptyAndForeignFilesAreDataLoss) {
  WriteBytes(Path("bad"), "");
  EXPECT_EQ(SegmentReader::Open(Path("bad")).status().code(), StatusCode::kDataLoss);
  WriteBytes(Path("bad"), std::string(4096, '\0'));
  EXPECT_EQ(SegmentReader::Open(Path("bad")).status().code(), StatusCode::kDataLoss);
  WriteBytes(Path("bad"), "SQLite format 3" + std::string(100, '\0'));
  auto r = SegmentReader::Open(Path("bad"));
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("magic"), std::string::npos) << r.status().ToString();
}

TEST_F(SegmentCorruptionTest, WrongMagicIsDataLoss) {
  for (size_t pos : {size_t{0}, good_.size() - 8}) {
    std::string bad = good_;
    bad.replace(pos, 6, "WSSEH", 6);
    WriteBytes(Path("bad"), bad);
    auto r = SegmentReader::Open(Path("bad"));
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << pos;
    EXPECT_NE(r.status().message().find("magic"), std::string::npos) << r.status().ToString();
  }
}

TEST_F(SegmentCorruptionTest, NewerVersionIsFailedPrecondition) {
  std::string bad = good_;
  const char newer = static_cast<char>(segment::kFormatVersion + 1);
  bad[6] = newer;                  // header version
  bad[good_.size() - 2] = newer;   // trailer version
  WriteBytes(Path("bad"), bad);
  auto r = SegmentReader::Open(Path("bad"));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("version " + std::to_string(segment::kFormatVersion + 1)), std::string::npos)
      << r.status().ToString();
}

// Rewrites the footer of `file` after `edit`, with fresh CRCs, so that damage
// inside a block reaches the decoder instead of stopping at the CRC check.
std::string WithRecomputedCrcs(std::string file) {
  const std::string_view trailer_bytes(file.data() + file.size() - segment::kTrailerSize, segment::kTrailerSize);
  auto trailer = segment::ParseTrailer(trailer_bytes, file.size(), "fixture");
  EXPECT_TRUE(trailer.ok());
  const std::string_view footer_bytes(file.data() + trailer->footer_offset, trailer->footer_size);
  auto footer = segment::ParseFooter(footer_bytes, trailer->footer_offset, "fixture");
  EXPECT_TRUE(footer.ok());
  for (segment::BlockIndexEntry& b : footer->blocks) {
    b.prefix_crc32 = segment::Crc32(std::string_view(file.data() + b.offset, b.prefix_size));
    b.columns_crc32 = segment::Crc32(std::string_view(file.data() + b.offset + b.prefix_size, b.size - b.prefix_size));
  }
  std::string tail;
  segment::AppendFooter(*footer, &tail);
  trailer->footer_crc32 = segment::Crc32(tail);
  segment::AppendTrailer(*trailer, &tail);
  file.replace(trailer->footer_offset, std::string::npos, tail);
  return file;
}

// A block that passes its CRC but holds garbage (a buggy writer, a hostile
// file) must still fail cleanly: every length and varint is bounds-checked.
TEST_F(SegmentCorruptionTest, GarbageBehindAValidCrcNeverCrashes) {
  const size_t blocks_end = good_.size() - segment::kTrailerSize -
                            segment::LoadFixed32(good_.data() + good_.size() - segment::kTrailerSize + 8);
  std::mt19937_64 rng(12);
  int errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = good_;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const size_t pos = segment::kHeaderSize + rng() % (blocks_end - segment::kHeaderSize);
      bad[pos] = static_cast<char>(trial % 2 ? rng() : bad[pos] ^ (1 << (rng() % 8)));
    }
    WriteBytes(Path("bad"), WithRecomputedCrcs(bad));
    const Status s = OpenVerifyAndScan(Path("bad"));
    if (!s.ok()) {
      ++errors;
      ASSERT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    }
  }
  // Most damage is caught by structure alone; a flip inside a value column
  // can decode to different valid rows, which only the CRC would catch.
  EXPECT_GT(errors, 1000);
}

// With hooks, a scan skips a damaged block (reporting it with its time
// range) and serves every other block; before_block can stop it.
TEST_F(SegmentCorruptionTest, HooksSkipADamagedBlockAndStopAScan) {
  auto good = SegmentReader::Open(Path("good"));
  ASSERT_TRUE(good.ok());
  ASSERT_EQ((*good)->block_count(), 4u);
  const Model model = BuildModel(RandomRows(600, 11));
  // Damage block 1's columns: its prefix still decodes, its CRC does not match.
  auto trailer = segment::ParseTrailer(std::string_view(good_).substr(good_.size() - segment::kTrailerSize),
                                       good_.size(), "good");
  ASSERT_TRUE(trailer.ok());
  auto footer =
      segment::ParseFooter(std::string_view(good_).substr(trailer->footer_offset, trailer->footer_size),
                           trailer->footer_offset, "good");
  ASSERT_TRUE(footer.ok());
  const segment::BlockIndexEntry& damaged = footer->blocks[1];
  std::string bad = good_;
  bad[damaged.offset + damaged.size - 1] ^= 0x40;
  WriteBytes(Path("bad"), bad);
  auto reader = SegmentReader::Open(Path("bad"));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();

  for (uint32_t type = 0; type < 3; ++type) {
    SCOPED_TRACE(type);
    std::vector<DamagedBlock> reported;
    ScanHooks hooks;
    hooks.on_damaged_block = [&](const DamagedBlock& b) {
      reported.push_back(b);
      return Status::Ok();
    };
    Model got;
    const Status s = (*reader)->Scan(kMin, kMax, nullptr, type, [&](const SampleRow& r) {
      got[{r.type_id, r.series_id, r.time_ns, r.stack_id}] = r.value;
    }, hooks);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Model good_rows;
    ASSERT_TRUE((*good)->Scan(kMin, kMax, nullptr, type, [&](const SampleRow& r) {
      good_rows[{r.type_id, r.series_id, r.time_ns, r.stack_id}] = r.value;
    }).ok());
    EXPECT_EQ(good_rows, Query(model, type, kMin, kMax, nullptr));
    if (type < damaged.min_type || type > damaged.max_type) {
      EXPECT_TRUE(reported.empty());
      EXPECT_EQ(got, good_rows);
      continue;
    }
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_EQ(reported[0].part, "block 1");
    EXPECT_EQ(reported[0].min_time, damaged.min_time);
    EXPECT_EQ(reported[0].max_time, damaged.max_time);
    EXPECT_EQ(reported[0].status.code(), StatusCode::kDataLoss);
    EXPECT_NE(reported[0].status.message().find(Path("bad")), std::string::npos);
    // Every row of the other blocks, none of the damaged one's.
    EXPECT_LT(got.size(), good_rows.size());
    for (const auto& [key, value] : got) EXPECT_EQ(good_rows.at(key), value);
    // Without the hook the same scan fails.
    EXPECT_EQ((*reader)->Scan(kMin, kMax, nullptr, type, [](const SampleRow&) {}).code(), StatusCode::kDataLoss);
  }

  // before_block stops the scan with its own status.
  int blocks = 0;
  ScanHooks stop;
  stop.before_block = [&]() -> Status {
    return ++blocks > 1 ? DeadlineExceededError("past the deadline") : Status::Ok();
  };
  const Status stopped = (*good)->Scan(kMin, kMax, nullptr, footer->blocks[0].min_type, [](const SampleRow&) {}, stop);
  EXPECT_EQ(stopped.code(), StatusCode::kDeadlineExceeded) << stopped.ToString();
  EXPECT_EQ(blocks, 2);
}

}  // namespace
}  // namespace warpscope::segment_test
