// dictionary.sqlite and the rows that refer to it: a lost or rolled-back
// dictionary must stop the store at open (store_consistency.h), never give
// old rows the meanings of newly interned ids; a stack or series missing
// from the dictionary at query time is data loss, not "not found".
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "storage/embedded/embedded_store_test_util.h"
#include "storage/embedded/store_consistency.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::testing::OneSample;
namespace fs = std::filesystem;

void MustIngest(EmbeddedProfileStore& store, const v1::IngestBatch& batch) {
  StatusOr<storage::IngestResult> r = store.Ingest(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->duplicate);
}

// Batch `seq` of agent "a": one sample on its own node and leaf, so every
// batch interns a new series, stack and strings.
v1::IngestBatch NewContent(uint64_t seq) {
  return OneSample("a", seq, kT0 + static_cast<int64_t>(seq) * kSec, 1, "node-" + std::to_string(seq),
                   "fn_" + std::to_string(seq));
}

void RemoveDictionary(const std::string& data_dir, bool main_file) {
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(data_dir + "/dictionary.sqlite" + suffix);
  if (main_file) fs::remove(data_dir + "/dictionary.sqlite");
}

// Opening must fail with the refusal that tells the operator what to do.
void ExpectRefused(const EmbeddedStoreOptions& options, const std::string& detail) {
  StatusOr<std::unique_ptr<EmbeddedProfileStore>> store = EmbeddedProfileStore::Open(options);
  ASSERT_FALSE(store.ok()) << "the store opened";
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition) << store.status().ToString();
  EXPECT_NE(store.status().message().find(kDictionaryBehind), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find(detail), std::string::npos) << store.status().message();
}

// Runs a store in a child that dies without closing anything, as kill -9
// would: dictionary.sqlite-wal keeps what was never checkpointed.
void IngestInAChildThatDies(const EmbeddedStoreOptions& options, uint64_t seq, bool flush) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StatusOr<std::unique_ptr<EmbeddedProfileStore>> store = EmbeddedProfileStore::Open(options);
    if (!store.ok()) _exit(2);
    if (!(*store)->Ingest(NewContent(seq)).ok()) _exit(3);
    if (flush && !(*store)->FlushNow().ok()) _exit(4);
    _exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
}

// The review's case: dictionary.sqlite* deleted, segments and WAL kept. A new
// dictionary would give the first new batch's node the old rows' series id.
TEST(EmbeddedStoreDictionaryTest, DeletedDictionaryIsRefused) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = ManualOptions(dir.data());
  {
    auto store = MustOpen(options);
    MustIngest(*store, NewContent(1));
    ASSERT_TRUE(store->FlushNow().ok());
    MustIngest(*store, NewContent(2));  // in the WAL only
  }
  RemoveDictionary(dir.data(), /*main_file=*/true);
  ExpectRefused(options, "dictionary.sqlite is missing but segments/ or wal/ hold data");
  EXPECT_FALSE(fs::exists(dir.data() + "/dictionary.sqlite"));  // nothing made in its place: refused again
  ExpectRefused(options, "is missing");

  // A store that never flushed: the WAL alone holds the rows.
  ScratchDir wal_only;
  const EmbeddedStoreOptions wal_options = ManualOptions(wal_only.data());
  {
    auto store = MustOpen(wal_options);
    MustIngest(*store, NewContent(1));
  }
  RemoveDictionary(wal_only.data(), /*main_file=*/true);
  ExpectRefused(wal_options, "is missing");

  // Moving segments/ and wal/ aside, as the message says, starts empty.
  fs::rename(dir.data() + "/segments", dir.path() + "/segments.old");
  fs::rename(dir.data() + "/wal", dir.path() + "/wal.old");
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Total(*store), 0);
}

// Only dictionary.sqlite-wal (and -shm) lost after a crash: the main file
// holds the last checkpoint, without the ids interned since.
TEST(EmbeddedStoreDictionaryTest, DeletedDictionaryWalIsRefused) {
  for (bool flush : {true, false}) {
    SCOPED_TRACE(flush ? "newest rows in a segment" : "newest rows in the WAL");
    ScratchDir dir;
    const EmbeddedStoreOptions options = ManualOptions(dir.data());
    {
      auto store = MustOpen(options);  // closed cleanly: checkpointed into dictionary.sqlite
      MustIngest(*store, NewContent(1));
      ASSERT_TRUE(store->FlushNow().ok());
    }
    IngestInAChildThatDies(options, 2, flush);
    ASSERT_TRUE(fs::exists(dir.data() + "/dictionary.sqlite-wal"));
    RemoveDictionary(dir.data(), /*main_file=*/false);
    ExpectRefused(options, flush ? "segments/" + SegmentFileName(2, 2) + " refers to series id 2"
                                 : "WAL record seq 2 refers to");
  }
}

// dictionary.sqlite restored from an older copy, or taken from another data dir.
TEST(EmbeddedStoreDictionaryTest, OlderOrForeignDictionaryIsRefused) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = ManualOptions(dir.data());
  {
    auto store = MustOpen(options);
    MustIngest(*store, NewContent(1));
    ASSERT_TRUE(store->FlushNow().ok());
  }
  const std::string path = dir.data() + "/dictionary.sqlite";
  fs::copy_file(path, dir.path() + "/backup.sqlite");
  {
    auto store = MustOpen(options);
    MustIngest(*store, NewContent(2));
    ASSERT_TRUE(store->FlushNow().ok());
  }
  fs::copy_file(path, dir.path() + "/current.sqlite");
  fs::copy_file(dir.path() + "/backup.sqlite", path, fs::copy_options::overwrite_existing);
  ExpectRefused(options, "segments/" + SegmentFileName(2, 2) + " refers to series id 2 but dictionary.sqlite holds "
                         "series up to 1");

  // Another store's dictionary, however many ids it has.
  ScratchDir other;
  {
    auto store = MustOpen(ManualOptions(other.data()));
    for (uint64_t seq = 1; seq <= 5; ++seq) MustIngest(*store, NewContent(seq));
  }
  fs::copy_file(other.data() + "/dictionary.sqlite", path, fs::copy_options::overwrite_existing);
  ExpectRefused(options, "was written with dictionary");

  // The matching file back: the store opens and every row is there.
  fs::copy_file(dir.path() + "/current.sqlite", path, fs::copy_options::overwrite_existing);
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Total(*store), 2);
}

// A row whose stack the dictionary lacks (here: a segment whose footer
// claims less than its rows use) is data loss for the server's 500, not 404.
TEST(EmbeddedStoreDictionaryTest, StackMissingAtQueryTimeIsDataLoss) {
  ScratchDir dir;
  const EmbeddedStoreOptions options = ManualOptions(dir.data());
  DictionaryMarks marks;
  {
    auto store = MustOpen(options);
    MustIngest(*store, NewContent(1));
    ASSERT_TRUE(store->FlushNow().ok());
    MustIngest(*store, NewContent(2));
    MustIngest(*store, NewContent(3));
    StatusOr<std::unique_ptr<SegmentReader>> first =
        SegmentReader::Open(dir.data() + "/segments/" + SegmentFileName(1, 1));
    ASSERT_TRUE(first.ok());
    marks = (*first)->dictionary_marks();
  }
  // Records 2's rows replaced by a row of stack 999 (type 1 is cpu).
  const SampleRow row{.time_ns = kT0, .series_id = 1, .stack_id = 999, .value = 5, .type_id = 1};
  ASSERT_TRUE(WriteSegment(dir.data() + "/segments/" + SegmentFileName(2, 2), {row}, {}, marks, {}).ok());
  auto store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  storage::ProfileQuery q;
  q.from_ns = 0;
  q.to_ns = INT64_MAX;
  StatusOr<storage::MergedProfile> p = store->SelectProfile(q);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kDataLoss) << p.status().ToString();
  EXPECT_NE(p.status().message().find("stack 999"), std::string::npos) << p.status().ToString();
}

}  // namespace
}  // namespace warpscope::embedded
