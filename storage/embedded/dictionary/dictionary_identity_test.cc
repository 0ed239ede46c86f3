// What schema version 3 added: the dictionary's identity and high-water
// marks (dictionary_marks.h), which let the embedded store tell a lost or
// rolled-back dictionary.sqlite from the one its segments were written with,
// the segment manifest and recorded gaps (segment_manifest.h), and the
// migration of older files.
#include <gtest/gtest.h>

#include "storage/embedded/dictionary/dictionary_schema.h"
#include "storage/embedded/dictionary/dictionary_test_util.h"

namespace warpscope::dictionary {
namespace {

using testing::BatchBuilder;
using testing::ExecDirect;
using testing::OpenOrDie;
using testing::QueryDirect;
using testing::ScratchDir;

v1::IngestBatch Batch(const std::string& node, const std::string& fn, uint64_t sequence) {
  BatchBuilder b("agent-1", sequence);
  const uint32_t f = b.Function(fn, fn, "");
  const uint32_t stack = b.Stack({b.Location(0, 0x10, v1::FRAME_KIND_NATIVE, {{f, 0}})});
  b.Sample(1000, b.Type("cpu", "samples", 10'000'000), b.LabelSet({{"node", node}}), stack, 1);
  return b.batch();
}

TEST(DictionaryIdentityTest, MarksAreTheIdentityAndTheHighestCommittedIds) {
  ScratchDir dir;
  uint64_t id = 0;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    const DictionaryMarks empty = store->Marks();
    EXPECT_NE(empty.store_id, 0u);
    EXPECT_EQ(empty, (DictionaryMarks{.store_id = empty.store_id}));
    id = empty.store_id;
    StatusOr<InternedBatch> first = store->InternBatch(Batch("n1", "main", 1));
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    StatusOr<InternedBatch> second = store->InternBatch(Batch("n2", "work", 2));
    ASSERT_TRUE(second.ok());
    const DictionaryMarks marks = store->Marks();
    EXPECT_EQ(marks.store_id, id);
    EXPECT_EQ(marks.max_series_id, second->label_set_ids[0]);
    EXPECT_EQ(marks.max_stack_id, second->stack_ids[0]);
    EXPECT_EQ(marks.max_type_id, 1u);
    EXPECT_GE(marks.max_string_id, 6u);
    // A batch refused by validation adds nothing.
    v1::IngestBatch bad = Batch("n3", "more", 3);
    bad.mutable_samples(0)->set_stack(7);
    EXPECT_FALSE(store->InternBatch(bad).ok());
    EXPECT_EQ(store->Marks(), marks);
  }
  auto store = OpenOrDie(dir.db());
  EXPECT_EQ(store->Marks().store_id, id);
  EXPECT_EQ(store->Marks().max_series_id, 2u);
  ScratchDir other;
  EXPECT_NE(OpenOrDie(other.db())->Marks().store_id, id);
}

// A caller holding data that refers to the dictionary must not get a new,
// empty one in place of a lost file.
TEST(DictionaryIdentityTest, WithoutCreateAnEmptyDatabaseIsRefusedAndLeftEmpty) {
  ScratchDir dir;
  StatusOr<std::unique_ptr<DictionaryStore>> opened = DictionaryStore::Open(dir.db(), {}, {.create = false});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("holds no dictionary"), std::string::npos) << opened.status().message();
  EXPECT_EQ(QueryDirect(dir.db(), "SELECT count(*) FROM sqlite_schema"), 0);
  { ASSERT_NE(OpenOrDie(dir.db()), nullptr); }
  EXPECT_TRUE(DictionaryStore::Open(dir.db(), {}, {.create = false}).ok());
}

// Rule 7: a version-2 file (no store id, no manifest) opens with its data,
// gets an identity that stays, and an empty manifest.
TEST(DictionaryIdentityTest, OpensVersionTwoFilesAndGivesThemAnIdentity) {
  ScratchDir dir;
  uint64_t stack = 0;
  {
    auto store = OpenOrDie(dir.db());
    stack = store->InternBatch(Batch("n1", "main", 1))->stack_ids[0];
  }
  ExecDirect(dir.db(),
             "DROP TABLE segment_manifest; DROP TABLE data_gaps; DELETE FROM meta WHERE key = 'store_id'; "
             "UPDATE meta SET value = 2 WHERE key = 'schema_version'");
  ASSERT_EQ(QueryDirect(dir.db(), "SELECT count(*) FROM meta WHERE key = 'store_id'"), 0);
  uint64_t id = 0;
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_NE(store, nullptr);
    id = store->Marks().store_id;
    EXPECT_NE(id, 0u);
    EXPECT_EQ(store->Marks().max_stack_id, stack);
    EXPECT_TRUE(*store->SeenBefore("agent-1", 1));
    EXPECT_EQ(store->InternBatch(Batch("n1", "main", 2))->stack_ids[0], stack);
  }
  EXPECT_EQ(QueryDirect(dir.db(), "SELECT value FROM meta WHERE key = 'schema_version'"), kDictionarySchemaVersion);
  EXPECT_EQ(QueryDirect(dir.db(), "SELECT count(*) FROM segment_manifest"), 0);
  EXPECT_EQ(static_cast<uint64_t>(QueryDirect(dir.db(), "SELECT value FROM meta WHERE key = 'store_id'")), id);
  EXPECT_EQ(OpenOrDie(dir.db())->Marks().store_id, id);
}

// The manifest and the gaps: one transaction per change, kept across opens.
TEST(DictionaryIdentityTest, ManifestChangesApplyWholeAndPersist) {
  ScratchDir dir;
  const ManifestEntry a{.lo = 1, .hi = 3, .min_time = 10, .max_time = 20};
  const ManifestEntry b{.lo = 4, .hi = 4, .min_time = 15, .max_time = 30};
  const ManifestEntry merged{.lo = 1, .hi = 4, .min_time = 10, .max_time = 30};
  const RecordedGap gap{.from_ns = 100, .to_ns = 200, .reason = "segment x was missing at start-up; rows lost"};
  {
    auto store = OpenOrDie(dir.db());
    ASSERT_TRUE(store->UpdateManifest({.added = {b, a}}).ok());
    EXPECT_EQ(*store->ManifestEntries(), (std::vector<ManifestEntry>{a, b}));
    ASSERT_TRUE(store->UpdateManifest({.removed = {a, b}, .added = {merged}, .gaps_added = {gap}}).ok());
    EXPECT_EQ(*store->ManifestEntries(), (std::vector<ManifestEntry>{merged}));
    EXPECT_EQ(*store->RecordedGaps(), (std::vector<RecordedGap>{gap}));
  }
  auto store = OpenOrDie(dir.db());
  EXPECT_EQ(*store->ManifestEntries(), (std::vector<ManifestEntry>{merged}));
  EXPECT_EQ(*store->RecordedGaps(), (std::vector<RecordedGap>{gap}));
  ASSERT_TRUE(store->UpdateManifest({.drop_gaps_before = 199}).ok());
  EXPECT_EQ(store->RecordedGaps()->size(), 1u);  // ends at 200: still in part after 199
  ASSERT_TRUE(store->UpdateManifest({.removed = {merged}, .drop_gaps_before = 200}).ok());
  EXPECT_TRUE(store->ManifestEntries()->empty());
  EXPECT_TRUE(store->RecordedGaps()->empty());
  // Interning goes on beside it.
  EXPECT_TRUE(store->InternBatch(Batch("n1", "main", 1)).ok());
}

}  // namespace
}  // namespace warpscope::dictionary
