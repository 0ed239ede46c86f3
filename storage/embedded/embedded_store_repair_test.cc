// Damaged and missing files: a damaged segment block is skipped and reported
// as a gap; a missing segment (one the manifest lists), a segment that does
// not open and a damaged WAL record stop the store at open, with a message
// naming `repair`; with repair the unreadable files go to quarantine/ (never
// deleted), the lost time ranges become gaps that answers report, and the
// store starts and keeps starting without repair.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "storage/embedded/embedded_store_test_util.h"
#include "storage/embedded/store_consistency.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::DataGap;
using storage::QueryContext;
using storage::testing::BatchBuilder;
using storage::testing::OneSample;
namespace fs = std::filesystem;

constexpr int64_t kT1 = kT0 + 100 * kSec;  // segment 2's times
constexpr int64_t kT2 = kT0 + 200 * kSec;  // segment 3's

void MustIngest(EmbeddedProfileStore& store, const v1::IngestBatch& batch) {
  StatusOr<storage::IngestResult> r = store.Ingest(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->duplicate);
}

EmbeddedStoreOptions SmallBlocks(const std::string& data_dir) {
  EmbeddedStoreOptions options = ManualOptions(data_dir);
  options.segment.rows_per_block = 1;  // a block per row
  options.compaction.min_inputs = 2;
  return options;
}

// Segments seg-1-1 (kT0: 1), seg-2-2 (kT1: 10, kT1 + 1 s: 20) and seg-3-3
// (kT2: 100), one block per row.
void WriteThreeSegments(const EmbeddedStoreOptions& options) {
  auto store = MustOpen(options);
  MustIngest(*store, OneSample("a", 1, kT0, 1));
  ASSERT_TRUE(store->FlushNow().ok());
  BatchBuilder b("a", 2);
  const uint32_t cpu = b.Cpu(), set = b.LabelSet({{"node", "n1"}}), stack = b.SimpleStack({"main"});
  b.Sample(kT1, cpu, set, stack, 10);
  b.Sample(kT1 + kSec, cpu, set, stack, 20);
  MustIngest(*store, b.batch());
  ASSERT_TRUE(store->FlushNow().ok());
  MustIngest(*store, OneSample("a", 3, kT2, 100));
  ASSERT_TRUE(store->FlushNow().ok());
}

std::string SegmentPath(const std::string& data_dir, uint64_t lo, uint64_t hi) {
  return data_dir + "/segments/" + SegmentFileName(lo, hi);
}

void FlipByte(const std::string& path, size_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  f.seekp(static_cast<std::streamoff>(offset));
  c = static_cast<char>(c ^ 0x5a);
  f.write(&c, 1);
}

struct Answer {
  int64_t total = -1;
  std::vector<DataGap> gaps;
};

Answer ProfileWithGaps(EmbeddedProfileStore& store, int64_t from = 0, int64_t to = INT64_MAX) {
  QueryContext context;
  storage::ProfileQuery q;
  q.from_ns = from;
  q.to_ns = to;
  q.context = &context;
  StatusOr<storage::MergedProfile> p = store.SelectProfile(q);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return Answer{p.ok() ? p->total : -1, context.gaps()};
}

StatusOr<std::unique_ptr<EmbeddedProfileStore>> OpenWithRepair(EmbeddedStoreOptions options, bool repair) {
  options.repair = repair;
  return EmbeddedProfileStore::Open(options);
}

std::vector<std::string> Quarantined(const std::string& data_dir) {
  std::vector<std::string> out;
  if (!fs::exists(data_dir + "/quarantine")) return out;
  for (const auto& e : fs::directory_iterator(data_dir + "/quarantine")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One flipped byte in one block of one segment: every other block of every
// segment is served, and the answer says what is missing.
TEST(EmbeddedStoreRepairTest, DamagedBlockIsSkippedAndReportedAsAGap) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = SmallBlocks(dir.data());
  WriteThreeSegments(options);
  const std::string damaged = SegmentPath(dir.data(), 2, 2);
  FlipByte(damaged, 12);  // block 0 (kT1) starts after the 8-byte header: its prefix CRC fails
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    const Answer all = ProfileWithGaps(*store);
    EXPECT_EQ(all.total, 1 + 20 + 100);
    ASSERT_EQ(all.gaps.size(), 1u);
    EXPECT_EQ(all.gaps[0].from_ns, kT1);
    EXPECT_EQ(all.gaps[0].to_ns, kT1 + 1);
    EXPECT_EQ(all.gaps[0].reason,
              "segment " + SegmentFileName(2, 2) + " block 0 is corrupt: CRC mismatch");
    // Ranges that do not read the block have no gap.
    const Answer later = ProfileWithGaps(*store, kT1 + kSec, INT64_MAX);
    EXPECT_EQ(later.total, 120);
    EXPECT_TRUE(later.gaps.empty());
    EXPECT_EQ(store->state().damaged_blocks, 1u);  // counted once, however often it is read
  }
  // Series answers report it too.
  QueryContext context;
  storage::SeriesQuery q;
  q.profile.from_ns = kT0;
  q.profile.to_ns = kT2 + kSec;
  q.profile.context = &context;
  q.step_ns = kSec;
  ASSERT_TRUE(store->SelectSeries(q).ok());
  EXPECT_EQ(context.gaps().size(), 1u);
  // Compaction leaves the damaged segment alone (merged, its rows would
  // vanish without a trace) and goes on with the rest.
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().segment_files,
            (std::vector<std::string>{SegmentFileName(1, 1), SegmentFileName(2, 2), SegmentFileName(3, 3)}));
  EXPECT_EQ(ProfileWithGaps(*store).total, 121);

  // A fresh store that compacts first finds the damage itself.
  store.reset();
  store = MustOpen(options);
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().segments, 3u);
  EXPECT_EQ(store->state().damaged_blocks, 1u);
  EXPECT_EQ(ProfileWithGaps(*store).gaps.size(), 1u);
}

// A deleted live segment is no longer served as silently missing data.
TEST(EmbeddedStoreRepairTest, MissingSegmentIsRefusedAndWithRepairBecomesAGap) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = SmallBlocks(dir.data());
  WriteThreeSegments(options);
  ASSERT_TRUE(fs::remove(SegmentPath(dir.data(), 2, 2)));

  StatusOr<std::unique_ptr<EmbeddedProfileStore>> refused = OpenWithRepair(options, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  const std::string& message = refused.status().message();
  EXPECT_NE(message.find("segment segments/" + SegmentFileName(2, 2) + " is missing (it held rows from " +
                         FormatUnixTime(kT1) + " to " + FormatUnixTime(kT1 + kSec) + ", WAL records 2 to 2)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(kRepairOption), std::string::npos) << message;

  StatusOr<std::unique_ptr<EmbeddedProfileStore>> repaired = OpenWithRepair(options, true);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  const Answer all = ProfileWithGaps(**repaired);
  EXPECT_EQ(all.total, 101);
  ASSERT_EQ(all.gaps.size(), 1u);
  EXPECT_EQ(all.gaps[0].from_ns, kT1);
  EXPECT_EQ(all.gaps[0].to_ns, kT1 + kSec + 1);
  EXPECT_NE(all.gaps[0].reason.find(SegmentFileName(2, 2) + " was missing at start-up"), std::string::npos)
      << all.gaps[0].reason;
  EXPECT_TRUE(ProfileWithGaps(**repaired, kT2, INT64_MAX).gaps.empty());
  // New data still goes in, compaction works around the hole.
  MustIngest(**repaired, OneSample("a", 4, kT2 + kSec, 1000));
  ASSERT_TRUE((*repaired)->FlushNow().ok());
  ASSERT_TRUE((*repaired)->CompactNow().ok());
  repaired->reset();

  // The gap is recorded: later starts need no repair and still report it.
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  const Answer again = ProfileWithGaps(*store);
  EXPECT_EQ(again.total, 1101);
  EXPECT_EQ(again.gaps, all.gaps);
  EXPECT_EQ(store->state().gaps.size(), 1u);
}

// Retention forgets a gap once its time range is past retention, and a
// missing segment whose rows were all past retention is no loss.
TEST(EmbeddedStoreRepairTest, GapsAndMissingSegmentsPastRetentionAreForgotten) {
  ScratchDir dir;
  int64_t now = kT2 + 60 * kSec;
  EmbeddedStoreOptions options = SmallBlocks(dir.data());
  options.retention_ns = 3600 * kSec;
  options.now_ns = [&] { return now; };
  WriteThreeSegments(options);
  ASSERT_TRUE(fs::remove(SegmentPath(dir.data(), 2, 2)));
  {
    StatusOr<std::unique_ptr<EmbeddedProfileStore>> repaired = OpenWithRepair(options, true);
    ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
    EXPECT_EQ((*repaired)->state().gaps.size(), 1u);
    now = kT1 + kSec + 3601 * kSec;  // segments 1 and 2 are past retention
    ASSERT_TRUE((*repaired)->ApplyRetentionNow().ok());
    EXPECT_TRUE((*repaired)->state().gaps.empty());
    EXPECT_TRUE(ProfileWithGaps(**repaired).gaps.empty());
  }
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->state().gaps.empty());

  // Segment 3 deleted by hand when it is past retention too: opens without repair.
  store.reset();
  ASSERT_TRUE(fs::remove(SegmentPath(dir.data(), 3, 3)));
  now = kT2 + 3601 * kSec;
  store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->state().gaps.empty());
}

// A truncated segment does not open: refused naming repair; with repair it
// goes to quarantine/ and its time range (from the manifest) is a gap.
TEST(EmbeddedStoreRepairTest, UnreadableSegmentIsRefusedAndWithRepairQuarantined) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = SmallBlocks(dir.data());
  WriteThreeSegments(options);
  const std::string path = SegmentPath(dir.data(), 2, 2);
  const uintmax_t size = fs::file_size(path);
  fs::resize_file(path, size / 2);
  const std::string truncated = ReadFileToString(path).value();

  StatusOr<std::unique_ptr<EmbeddedProfileStore>> refused = OpenWithRepair(options, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find(path), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find(kRepairOption), std::string::npos) << refused.status().message();
  EXPECT_TRUE(fs::exists(path));

  StatusOr<std::unique_ptr<EmbeddedProfileStore>> repaired = OpenWithRepair(options, true);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(Quarantined(dir.data()), (std::vector<std::string>{SegmentFileName(2, 2)}));
  EXPECT_EQ(ReadFileToString(dir.data() + "/quarantine/" + SegmentFileName(2, 2)).value(), truncated);
  const Answer all = ProfileWithGaps(**repaired);
  EXPECT_EQ(all.total, 101);
  ASSERT_EQ(all.gaps.size(), 1u);
  EXPECT_EQ(all.gaps[0].from_ns, kT1);
  EXPECT_EQ(all.gaps[0].to_ns, kT1 + kSec + 1);
  EXPECT_NE(all.gaps[0].reason.find("does not open"), std::string::npos) << all.gaps[0].reason;
  EXPECT_NE(all.gaps[0].reason.find("quarantine"), std::string::npos) << all.gaps[0].reason;
  repaired->reset();
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ProfileWithGaps(*store).gaps.size(), 1u);
}

// An unreadable compaction output hides its inputs (still on disk after a
// crash): with repair it goes to quarantine/ and the inputs are live again,
// so nothing is lost.
TEST(EmbeddedStoreRepairTest, UnreadableCompactionOutputFallsBackToItsInputs) {
  ScratchDir dir;
  EmbeddedStoreOptions options = SmallBlocks(dir.data());
  options.crash_point_for_test = [](std::string_view point) { return point == "compact:output_written"; };
  WriteThreeSegments(options);
  {
    auto store = MustOpen(options);
    ASSERT_FALSE(store->CompactNow().ok());  // the output written, the inputs still there
  }
  options.crash_point_for_test = nullptr;
  const std::string output = SegmentPath(dir.data(), 1, 3);
  ASSERT_TRUE(fs::exists(output));
  fs::resize_file(output, 100);
  StatusOr<std::unique_ptr<EmbeddedProfileStore>> refused = OpenWithRepair(options, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(fs::exists(SegmentPath(dir.data(), 2, 2)));  // dead files are deleted only after a good load
  StatusOr<std::unique_ptr<EmbeddedProfileStore>> repaired = OpenWithRepair(options, true);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ(Quarantined(dir.data()), (std::vector<std::string>{SegmentFileName(1, 3)}));
  const Answer all = ProfileWithGaps(**repaired);
  EXPECT_EQ(all.total, 131);
  EXPECT_TRUE(all.gaps.empty());
}

// A corrupt record in the middle of the WAL: refused naming repair; with
// repair the file is copied to quarantine/, the intact records are served
// and flushed, and the next start needs no repair.
TEST(EmbeddedStoreRepairTest, CorruptWalRecordIsRefusedAndWithRepairQuarantined) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = ManualOptions(dir.data());
  {
    auto store = MustOpen(options);
    MustIngest(*store, OneSample("a", 1, kT0, 1));
    MustIngest(*store, OneSample("a", 2, kT0 + kSec, 10));
    MustIngest(*store, OneSample("a", 3, kT0 + 2 * kSec, 100));
  }  // not flushed: all three only in the WAL
  const std::string wal = dir.data() + "/wal/" + wal::WalFileName(1);
  std::string bytes = ReadFileToString(wal).value();
  // Record 2's payload: past the file header and record 1 (header + payload).
  const uint32_t first_length = static_cast<uint8_t>(bytes[wal::kFileHeaderSize + 4]) |
                                static_cast<uint32_t>(static_cast<uint8_t>(bytes[wal::kFileHeaderSize + 5])) << 8;
  const size_t second_payload = wal::kFileHeaderSize + wal::kRecordHeaderSize + first_length + wal::kRecordHeaderSize;
  FlipByte(wal, second_payload + 6);
  const std::string damaged = ReadFileToString(wal).value();

  StatusOr<std::unique_ptr<EmbeddedProfileStore>> refused = OpenWithRepair(options, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find(wal), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find(kRepairOption), std::string::npos) << refused.status().message();

  StatusOr<std::unique_ptr<EmbeddedProfileStore>> repaired = OpenWithRepair(options, true);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ(Quarantined(dir.data()), (std::vector<std::string>{wal::WalFileName(1)}));
  EXPECT_EQ(ReadFileToString(dir.data() + "/quarantine/" + wal::WalFileName(1)).value(), damaged);
  const Answer all = ProfileWithGaps(**repaired);
  EXPECT_EQ(all.total, 101);
  ASSERT_EQ(all.gaps.size(), 1u);
  // Between the intact neighbours' times.
  EXPECT_EQ(all.gaps[0].from_ns, kT0);
  EXPECT_EQ(all.gaps[0].to_ns, kT0 + 2 * kSec + 1);
  EXPECT_NE(all.gaps[0].reason.find("write-ahead log records 2 to 2"), std::string::npos) << all.gaps[0].reason;
  EXPECT_EQ((*repaired)->state().segments, 1u);  // the intact records, flushed at once
  EXPECT_FALSE(fs::exists(wal));
  // Sequences up to 3 stay known: the lost batch's re-send is a duplicate too.
  StatusOr<storage::IngestResult> resend = (*repaired)->Ingest(OneSample("a", 2, kT0 + kSec, 10));
  ASSERT_TRUE(resend.ok());
  EXPECT_TRUE(resend->duplicate);
  repaired->reset();

  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  const Answer again = ProfileWithGaps(*store);
  EXPECT_EQ(again.total, 101);
  EXPECT_EQ(again.gaps, all.gaps);
  MustIngest(*store, OneSample("a", 4, kT0 + 3 * kSec, 1000));
  EXPECT_EQ(ProfileWithGaps(*store).total, 1101);
}

// Retention takes segments out of the manifest before deleting them: a crash
// in between leaves files the next open lists again, not a false "missing".
TEST(EmbeddedStoreRepairTest, CrashBetweenRetentionsManifestUpdateAndDeleteIsHarmless) {
  ScratchDir dir;
  int64_t now = kT2 + 60 * kSec;
  EmbeddedStoreOptions options = SmallBlocks(dir.data());
  options.retention_ns = 3600 * kSec;
  options.now_ns = [&] { return now; };
  WriteThreeSegments(options);
  now = kT1 + 3700 * kSec;  // segments 1 and 2 are past retention
  {
    EmbeddedStoreOptions crashing = options;
    crashing.crash_point_for_test = [](std::string_view point) { return point == "retention:manifest_updated"; };
    auto store = MustOpen(crashing);
    ASSERT_FALSE(store->ApplyRetentionNow().ok());
  }
  EXPECT_TRUE(fs::exists(SegmentPath(dir.data(), 1, 1)));
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->state().segments, 3u);
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segment_files, (std::vector<std::string>{SegmentFileName(3, 3)}));
  store.reset();
  store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ProfileWithGaps(*store).total, 100);
}

}  // namespace
}  // namespace warpscope::embedded
