// The embedded store's own behaviour beyond the conformance suite: the data
// dir lock, flush and its crash points, compaction and its crash points,
// retention, a full disk, the WAL record format. Damage and repair:
// embedded_store_repair_test.cc.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "storage/embedded/embedded_store_test_util.h"
#include "storage/embedded/head_record.h"
#include "storage/embedded/metric_row.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::testing::NodeBatch;
using storage::testing::OneSample;

std::vector<std::string> SegmentFilesOnDisk(const std::string& data_dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/segments")) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void MustIngest(EmbeddedProfileStore& store, const v1::IngestBatch& batch) {
  StatusOr<storage::IngestResult> r = store.Ingest(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->duplicate);
}

// Every one of batches 1..n of agent "a" must be a duplicate now.
void ExpectAllDuplicates(EmbeddedProfileStore& store, int n) {
  for (int i = 1; i <= n; ++i) {
    StatusOr<storage::IngestResult> r = store.Ingest(OneSample("a", i, kT0 + i * kSec, i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->duplicate) << "seq " << i;
  }
}

// Each stack spelled out (function names root to leaf) with its value, sorted.
std::vector<std::pair<std::vector<std::string>, int64_t>> Spelled(const storage::MergedProfile& p) {
  std::vector<std::pair<std::vector<std::string>, int64_t>> out;
  for (const storage::StackValue& s : p.stacks) {
    std::vector<std::string> names;
    for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it) names.push_back(p.frame(*it).function_name);
    out.emplace_back(std::move(names), s.value);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(EmbeddedStoreTest, AnswersDoNotDependOnTheStackCacheSize) {
  ScratchDir dir;
  storage::ProfileQuery all;
  all.from_ns = kT0;
  all.to_ns = kT0 + kSec;
  std::vector<std::pair<std::vector<std::string>, int64_t>> expected;
  // Unbounded for this data, none at all, and small enough to rotate many
  // times within one query; each asked twice (cold, then from the cache).
  for (size_t bytes : {size_t{64} << 20, size_t{0}, size_t{16} << 10}) {
    SCOPED_TRACE(bytes);
    EmbeddedStoreOptions options = ManualOptions(dir.data());
    options.stack_cache_bytes = bytes;
    auto store = MustOpen(options);
    if (expected.empty()) {
      MustIngest(*store, NodeBatch("n1", 1, kT0, 300, 12));
      MustIngest(*store, NodeBatch("n2", 1, kT0, 300, 12));
    }
    for (int round = 0; round < 2; ++round) {
      StatusOr<storage::MergedProfile> p = store->SelectProfile(all);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      ASSERT_EQ(p->stacks.size(), 600u);
      if (expected.empty()) expected = Spelled(*p);
      EXPECT_EQ(Spelled(*p), expected);
      // Each location once (no inlined frames here), far fewer than the
      // stacks' 600 x 13 frame references.
      std::set<uint64_t> locations;
      for (const storage::ResolvedFrame& f : p->frames) locations.insert(f.location_id);
      EXPECT_EQ(locations.size(), p->frames.size());
      EXPECT_LT(p->frames.size(), 600u * 13 / 4);
    }
  }
}

TEST(EmbeddedStoreTest, SecondServerOnTheSameDirIsRefusedClearly) {
  ScratchDir dir;
  auto first = MustOpen(ManualOptions(dir.data()));
  ASSERT_NE(first, nullptr);
  StatusOr<std::unique_ptr<EmbeddedProfileStore>> second = EmbeddedProfileStore::Open(ManualOptions(dir.data()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(), "data dir " + dir.data() + " is in use by another warpscope-server");
  first.reset();
  EXPECT_NE(MustOpen(ManualOptions(dir.data())), nullptr);
}

TEST(EmbeddedStoreTest, FlushMovesTheHeadToASegmentAndTruncatesTheWal) {
  ScratchDir dir;
  auto store = MustOpen(ManualOptions(dir.data()));
  for (int i = 1; i <= 3; ++i) MustIngest(*store, OneSample("a", i, kT0 + i * kSec, i));
  EXPECT_EQ(store->state().head_rows, 3u);
  ASSERT_TRUE(store->FlushNow().ok());
  EmbeddedStoreState s = store->state();
  EXPECT_EQ(s.head_rows, 0u);
  EXPECT_EQ(s.segments, 1u);
  EXPECT_EQ(s.covered_seq, 3u);
  EXPECT_EQ(s.segment_files, (std::vector<std::string>{SegmentFileName(1, 3)}));
  EXPECT_EQ(Total(*store), 6);
  ASSERT_TRUE(store->FlushNow().ok());  // nothing new: no empty segment
  EXPECT_EQ(store->state().segments, 1u);
  MustIngest(*store, OneSample("a", 4, kT0, 10));
  EXPECT_EQ(Total(*store), 16);
  store.reset();
  store = MustOpen(ManualOptions(dir.data()));
  EXPECT_EQ(Total(*store), 16);
  EXPECT_EQ(store->state().head_rows, 1u);  // seq 4 came back from the WAL
  ExpectAllDuplicates(*store, 3);
  EXPECT_EQ(Total(*store), 16);
}

// A crash at each step of a flush: the reopened store has every row exactly
// once and still knows every batch it acknowledged.
TEST(EmbeddedStoreTest, CrashAtEachFlushStepLosesAndDoublesNothing) {
  for (const char* point : {"flush:frozen", "flush:segment_written", "flush:sequences_recorded"}) {
    SCOPED_TRACE(point);
    ScratchDir dir;
    EmbeddedStoreOptions options = ManualOptions(dir.data());
    {
      auto store = MustOpen(options);
      MustIngest(*store, OneSample("a", 1, kT0 + kSec, 1));
      ASSERT_TRUE(store->FlushNow().ok());  // an earlier, complete flush
      for (int i = 2; i <= 4; ++i) MustIngest(*store, OneSample("a", i, kT0 + i * kSec, i));
    }
    options.crash_point_for_test = [&](std::string_view p) { return p == point; };
    {
      auto store = MustOpen(options);
      MustIngest(*store, OneSample("a", 5, kT0 + 5 * kSec, 5));
      Status crashed = store->FlushNow();
      ASSERT_FALSE(crashed.ok());
      EXPECT_NE(crashed.message().find("simulated crash"), std::string::npos);
    }
    // What WriteSegment leaves when it dies before its rename.
    std::ofstream(dir.data() + "/segments/" + SegmentFileName(2, 5) + ".tmp.Xy12ab") << "partial";
    options.crash_point_for_test = nullptr;
    auto store = MustOpen(options);
    EXPECT_EQ(Total(*store), 15);
    ExpectAllDuplicates(*store, 5);
    EXPECT_EQ(Total(*store), 15);
    ASSERT_TRUE(store->FlushNow().ok());
    EXPECT_EQ(Total(*store), 15);
    store.reset();
    for (const std::string& f : SegmentFilesOnDisk(dir.data())) EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
    store = MustOpen(options);
    EXPECT_EQ(Total(*store), 15);
    MustIngest(*store, OneSample("a", 6, kT0, 100));
    EXPECT_EQ(Total(*store), 115);
  }
}

// Four flushed segments of 1, 2, 3, 4 rows; min_inputs 2.
std::unique_ptr<EmbeddedProfileStore> FourSegments(EmbeddedStoreOptions options) {
  options.compaction.min_inputs = 2;
  auto store = MustOpen(options);
  int seq = 0;
  for (int s = 1; s <= 4; ++s) {
    for (int r = 0; r < s; ++r) {
      ++seq;
      EXPECT_TRUE(store->Ingest(OneSample("a", seq, kT0 + seq * kSec, seq, "n" + std::to_string(r))).ok());
    }
    EXPECT_TRUE(store->FlushNow().ok());
  }
  EXPECT_EQ(store->state().segments, 4u);
  return store;
}

TEST(EmbeddedStoreTest, CompactionMergesSegmentsAndKeepsAnswers) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  auto store = FourSegments(options);
  const int64_t total = Total(*store);
  EXPECT_EQ(total, 55);
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().segment_files, (std::vector<std::string>{SegmentFileName(1, 10)}));
  EXPECT_EQ(SegmentFilesOnDisk(dir.data()), (std::vector<std::string>{SegmentFileName(1, 10)}));
  EXPECT_EQ(Total(*store), total);
  EXPECT_EQ(Total(*store, kT0 + 3 * kSec, kT0 + 6 * kSec), 3 + 4 + 5);
  // A row cap splits the work: 3 + 4 rows would exceed 6.
  store.reset();
  ScratchDir dir2;
  options = ManualOptions(dir2.data());
  options.compaction.max_rows = 6;
  store = FourSegments(options);
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().segment_files,
            (std::vector<std::string>{SegmentFileName(1, 6), SegmentFileName(7, 10)}));
  EXPECT_EQ(Total(*store), total);
}

// Compaction writes a rollup beside its output (segment_catalog.h): flame
// graphs over ranges that cover the segment read it, with the same answers;
// anything narrower reads the rows themselves.
TEST(EmbeddedStoreTest, CompactionRollupAnswersWholeSegmentRanges) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.min_rollup_input_rows = 1;
  options.min_rollup_reduction = 2;  // 10 rows of 4 series: 4 rollup rows
  auto store = FourSegments(options);
  ASSERT_TRUE(store->CompactNow().ok());
  EXPECT_EQ(store->state().rollup_files, (std::vector<std::string>{RollupFileName(1, 10)}));
  EXPECT_EQ(SegmentFilesOnDisk(dir.data()),
            (std::vector<std::string>{SegmentFileName(1, 10), RollupFileName(1, 10)}));
  EXPECT_EQ(Total(*store), 55);
  EXPECT_EQ(store->state().rollup_scans, 1u);
  EXPECT_EQ(Total(*store, kT0 + 3 * kSec, kT0 + 6 * kSec), 3 + 4 + 5);  // partial: the rows
  EXPECT_EQ(store->state().rollup_scans, 1u);
  EXPECT_EQ(Total(*store, kT0, kT0 + 11 * kSec), 55);
  EXPECT_EQ(store->state().rollup_scans, 2u);
  // Reopened, the rollup is found again; retention deletes it with its segment.
  store.reset();
  int64_t now = kT0 + 100 * 24 * 3600 * kSec;
  options.now_ns = [&] { return now; };
  options.retention_ns = 3600 * kSec;
  store = MustOpen(options);
  EXPECT_EQ(store->state().rollup_files, (std::vector<std::string>{RollupFileName(1, 10)}));
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_TRUE(SegmentFilesOnDisk(dir.data()).empty());
}

TEST(EmbeddedStoreTest, RollupWithoutItsSegmentIsDeadAtOpen) {
  ScratchDir dir;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  {
    auto store = FourSegments(options);
    ASSERT_TRUE(store->FlushNow().ok());
  }
  std::ofstream(dir.data() + "/segments/" + RollupFileName(1, 10)) << "orphan";
  std::ofstream(dir.data() + "/segments/" + RollupFileName(1, 6) + ".tmp.AbCdEf") << "partial";
  auto store = MustOpen(options);
  EXPECT_TRUE(store->state().rollup_files.empty());
  for (const std::string& name : SegmentFilesOnDisk(dir.data())) EXPECT_TRUE(name.starts_with("seg-")) << name;
  EXPECT_EQ(Total(*store), 55);
}

TEST(EmbeddedStoreTest, CrashAtEachCompactionStepLeavesEachRowOnce) {
  for (const char* point : {"compact:output_written", "compact:rollup_written", "compact:input_deleted"}) {
    SCOPED_TRACE(point);
    ScratchDir dir;
    EmbeddedStoreOptions options = ManualOptions(dir.data());
    options.min_rollup_input_rows = 1;
    options.min_rollup_reduction = 2;  // 10 rows of 4 series: 4 rollup rows
    options.crash_point_for_test = [&](std::string_view p) { return p == point; };
    {
      auto store = FourSegments(options);
      ASSERT_FALSE(store->CompactNow().ok());
    }
    // An earlier compaction that died inside WriteSegment.
    std::ofstream(dir.data() + "/segments/" + SegmentFileName(1, 6) + ".tmp.AbCdEf") << "partial";
    EXPECT_GT(SegmentFilesOnDisk(dir.data()).size(), 2u);
    options.crash_point_for_test = nullptr;
    auto store = MustOpen(options);
    EXPECT_EQ(Total(*store), 55);
    EXPECT_EQ(store->state().segment_files, (std::vector<std::string>{SegmentFileName(1, 10)}));
    // The output was written before the crash; its rollup only from the second point on.
    std::vector<std::string> files{SegmentFileName(1, 10)};
    if (std::string_view(point) != "compact:output_written") files.push_back(RollupFileName(1, 10));
    EXPECT_EQ(SegmentFilesOnDisk(dir.data()), files);
    ExpectAllDuplicates(*store, 10);
  }
}

// Rows are within retention when they arrive (older ones are dropped at
// ingest: embedded_store_bounds_test.cc) and age past it while stored.
TEST(EmbeddedStoreTest, RetentionDeletesOldSegmentsAndHidesOldRows) {
  ScratchDir dir;
  int64_t now = kT0 + 1000 * kSec;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.retention_ns = 1800 * kSec;
  options.now_ns = [&] { return now; };
  auto store = MustOpen(options);
  MustIngest(*store, OneSample("a", 1, kT0, 1));
  ASSERT_TRUE(store->FlushNow().ok());
  MustIngest(*store, OneSample("a", 2, kT0 + 1200 * kSec, 2));
  MustIngest(*store, OneSample("a", 3, kT0 + 10 * kSec, 4));  // in the same segment as seq 2
  ASSERT_TRUE(store->FlushNow().ok());
  MustIngest(*store, OneSample("a", 4, kT0 + 20 * kSec, 8));  // still in the head
  EXPECT_EQ(Total(*store), 15);
  now = kT0 + 2500 * kSec;  // everything but seq 2 is past retention now
  EXPECT_EQ(Total(*store), 2);
  EXPECT_EQ(store->state().segments, 2u);
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segment_files, (std::vector<std::string>{SegmentFileName(2, 3)}));
  EXPECT_EQ(Total(*store), 2);
  now += 3600 * kSec;
  ASSERT_TRUE(store->FlushNow().ok());
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 0u);
  EXPECT_EQ(Total(*store), 0);
  store.reset();
  store = MustOpen(options);
  EXPECT_EQ(Total(*store), 0);
  ExpectAllDuplicates(*store, 4);
}

// Metric points are rows whose value lives in the key (metric_row.h): a
// flush and a compaction merge equal points into one row that counts them,
// keep different values of one (series, time) apart, and never add two values
// up, while sample rows of one key are still summed. Retention drops them
// like samples.
TEST(EmbeddedStoreTest, MetricRowsKeepEveryPointThroughFlushCompactionAndRetention) {
  ScratchDir dir;
  int64_t now = kT0 + 1000 * kSec;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.compaction.min_inputs = 2;
  options.retention_ns = 1800 * kSec;
  options.now_ns = [&] { return now; };
  auto store = MustOpen(options);
  const storage::Labels gpu = {{"gpu", "0"}, {"node", "n1"}};
  for (int k = 1; k <= 4; ++k) {
    storage::testing::BatchBuilder b("a", k);
    const uint32_t util = b.MetricType("gpu_utilization", "percent");
    const uint32_t set = b.LabelSet(gpu);
    b.MetricPoint(kT0, util, set, 50);                        // the same point four times
    b.MetricPoint(kT0 + kSec, util, set, 10.0 * k + 0.125);  // four values at one time
    b.Sample(kT0, b.Cpu(), set, b.SimpleStack({"main"}), k);  // summed: 10
    MustIngest(*store, b.batch());
    ASSERT_TRUE(store->FlushNow().ok());
  }
  auto answer = [&] {
    storage::MetricQuery q;
    q.name = "gpu_utilization";
    q.from_ns = kT0;
    q.to_ns = kT0 + 60 * kSec;
    q.step_ns = kSec;
    StatusOr<std::vector<storage::MetricSeries>> r = store->SelectMetricSeries(q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && r->size() == 1 ? (*r)[0].points : std::vector<storage::MetricStep>{};
  };
  const std::vector<storage::MetricStep> expected = {
      {.time_ns = kT0, .min = 50, .max = 50, .sum = 200, .count = 4},
      {.time_ns = kT0 + kSec, .min = 10.125, .max = 40.125, .sum = 100.5, .count = 4}};
  EXPECT_EQ(answer(), expected);
  EXPECT_EQ(store->state().segments, 4u);
  EXPECT_EQ(store->state().segment_rows, 12u);

  ASSERT_TRUE(store->CompactNow().ok());
  EmbeddedStoreState state = store->state();
  ASSERT_EQ(state.segment_files, (std::vector<std::string>{SegmentFileName(1, 4)}));
  // 4 equal points -> 1 row (counting 4); 4 different values -> 4 rows; 4 samples -> 1 row.
  EXPECT_EQ(state.segment_rows, 6u);
  StatusOr<std::unique_ptr<SegmentReader>> reader =
      SegmentReader::Open(dir.data() + "/segments/" + state.segment_files[0]);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->Verify().ok());
  EXPECT_EQ(answer(), expected);
  EXPECT_EQ(Total(*store), 10);

  store.reset();
  store = MustOpen(options);
  EXPECT_EQ(answer(), expected);
  EXPECT_EQ(Total(*store), 10);

  now = kT0 + 7200 * kSec;  // everything is past retention now
  EXPECT_TRUE(answer().empty());
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_EQ(store->state().segments, 0u);
  EXPECT_TRUE(answer().empty());
  StatusOr<std::vector<storage::MetricInfo>> names = store->MetricNames();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<storage::MetricInfo>{{"gpu_utilization", "percent"}}));
}

TEST(EmbeddedStoreTest, MetricRowsRoundTripTheirValuesThroughAHeadRecord) {
  const std::vector<double> values = {0.0, -0.0, 1.5, -3.25, 1e-300, 1.7976931348623157e308, 141e9};
  std::vector<SampleRow> rows;
  for (size_t i = 0; i < values.size(); ++i) rows.push_back(MetricRow(kT0 + static_cast<int64_t>(i), 7, 3, values[i]));
  StatusOr<HeadRecord> back = DecodeHeadRecord(EncodeHeadRecord("agent-m", 1, rows), "test");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->rows, rows);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(MetricValue(back->rows[i]), values[i]);
    EXPECT_EQ(MetricMultiplicity(back->rows[i]), 1u);
  }
  EXPECT_EQ(MetricRow(0, 1, 1, -0.0), MetricRow(0, 1, 1, 0.0));  // one zero, so equal points merge
}

// Runs `body` in a forked child (so RLIMIT_FSIZE does not touch the test
// runner) and expects it to exit 0; the child reports failures as exit codes.
void RunInChild(const std::function<int()>& body) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(body());
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "child failed at check " << WEXITSTATUS(wstatus);
}

TEST(EmbeddedStoreTest, FullDiskFailsTheIngestCleanlyAndRecovers) {
  ScratchDir dir;
  RunInChild([&]() -> int {
    ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of death
    StatusOr<std::unique_ptr<EmbeddedProfileStore>> opened = EmbeddedProfileStore::Open(ManualOptions(dir.data()));
    if (!opened.ok()) return 1;
    EmbeddedProfileStore& store = **opened;
    // Batch 1 interns the content; batch 2 repeats it, so only the WAL grows.
    if (!store.Ingest(NodeBatch("n", 1, kT0, 200)).ok()) return 2;
    rlimit original{};
    if (::getrlimit(RLIMIT_FSIZE, &original) != 0) return 3;
    rlimit low = original;
    low.rlim_cur = 64 * 1024;  // the WAL file holds ~3 KB; the next records do not fit 64 KB
    if (::setrlimit(RLIMIT_FSIZE, &low) != 0) return 4;
    int refused = 0;
    for (int i = 0; i < 200 && refused == 0; ++i) {
      StatusOr<storage::IngestResult> r = store.Ingest(NodeBatch("n", 2 + i, kT0 + (i + 1) * 10 * kSec, 200));
      if (!r.ok()) {
        if (r.status().code() != StatusCode::kResourceExhausted) return 5;
        refused = 2 + i;
      }
    }
    if (refused == 0) return 6;
    std::fprintf(stderr, "refused batch %d\n", refused);
    // The refused batch is not stored and not remembered.
    const int64_t per_batch = 40 * 15;
    if (Total(store) != per_batch * (refused - 1)) return 7;
    if (::setrlimit(RLIMIT_FSIZE, &original) != 0) return 8;
    StatusOr<storage::IngestResult> again =
        store.Ingest(NodeBatch("n", refused, kT0 + (refused - 1) * 10 * kSec, 200));
    if (!again.ok() || again->duplicate) return 9;
    if (Total(store) != per_batch * refused) return 10;
    // A flush that cannot write its segment keeps the head; it goes through later.
    low.rlim_cur = 1024;
    if (::setrlimit(RLIMIT_FSIZE, &low) != 0) return 11;
    Status flush = store.FlushNow();
    if (flush.ok()) {
      std::fprintf(stderr, "flush under a 1 KB limit: %s\n", flush.ToString().c_str());
      return 12;
    }
    if (Total(store) != per_batch * refused) return 13;
    if (::setrlimit(RLIMIT_FSIZE, &original) != 0) return 14;
    if (!store.FlushNow().ok()) return 15;
    if (store.state().segments != 1 || Total(store) != per_batch * refused) return 16;
    return 0;
  });
}

TEST(EmbeddedStoreTest, HeadRecordRoundTripsAndRefusesNewerVersions) {
  std::vector<SampleRow> rows = {{kT0, 3, 9, 5, 1}, {kT0 - 7, 1, 1ull << 40, -2, 2}, {0, 0, 0, 0, 0}};
  std::string payload = EncodeHeadRecord("agent-x", 42, rows);
  StatusOr<HeadRecord> back = DecodeHeadRecord(payload, "test");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->agent_id, "agent-x");
  EXPECT_EQ(back->sequence, 42u);
  EXPECT_EQ(back->rows, rows);
  // The version-1 bytes of a one-row record, as written by this version: old
  // WAL files must stay readable.
  const std::string v1_bytes("WSHR\x01\x00\x00\x00\x01" "a\x07\x01\x01\x02\x03\x0a\x05", 17);
  StatusOr<HeadRecord> old = DecodeHeadRecord(v1_bytes, "v1");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->rows, (std::vector<SampleRow>{{5, 2, 3, -3, 1}}));
  std::string newer = payload;
  newer[4] = static_cast<char>(kHeadRecordVersion + 1);
  EXPECT_EQ(DecodeHeadRecord(newer, "n").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeHeadRecord(payload.substr(0, payload.size() - 1), "t").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeHeadRecord("XXXX\x01\x00\x00\x00", "m").status().code(), StatusCode::kDataLoss);
}

TEST(EmbeddedStoreTest, SegmentNamesParseBack) {
  uint64_t lo = 0, hi = 0;
  EXPECT_TRUE(ParseSegmentFileName(SegmentFileName(7, 123456789012345ull), &lo, &hi));
  EXPECT_EQ(lo, 7u);
  EXPECT_EQ(hi, 123456789012345ull);
  EXPECT_FALSE(ParseSegmentFileName(SegmentFileName(7, 9) + ".tmp.abc", &lo, &hi));
  EXPECT_FALSE(ParseSegmentFileName(SegmentFileName(9, 7), &lo, &hi));
  EXPECT_FALSE(ParseSegmentFileName("seg-1-2.wss", &lo, &hi));
}

}  // namespace
}  // namespace warpscope::embedded
