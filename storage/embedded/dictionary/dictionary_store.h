// The embedded store's dictionaries: strings, mappings, functions, locations,
// stacks, label sets and profile types, content-addressed and written once,
// each with a dense global id (from 1; 0 means "none"). Sample rows elsewhere
// (WAL, head, segments) refer to stacks, label sets (series) and types only
// by these ids.
//
// Identity: a random store id made with the dictionary, and the highest id of
// each kind (Marks()), which segment footers record so that a lost or
// rolled-back dictionary is noticed (dictionary_marks.h). The same file keeps
// the embedded store's segment manifest (segment_manifest.h).
//
// Storage: one SQLite file (schema: dictionary_schema.h/.cc) in WAL journal
// mode with synchronous=FULL, so an InternBatch that returned OK is durable
// across kill -9 and power loss.
//
// Dedup: every content table has a UNIQUE constraint over its full content
// (the canonical encodings of content_key.h), not over a 64-bit hash. With a
// hash, a collision (rare, but silent corruption of a profile when it happens)
// needs a non-unique index plus a verify-and-probe path that is hard to test;
// with the content, SQLite's B-tree is exact by construction. The cost is the
// index repeating the content (a stack is ~2 bytes per frame as varints, so
// about 60 bytes for depth 30): small next to sample data, and dictionaries
// are written once.
//
// Cache: the writer keeps every content -> id in memory (loaded at Open), so
// InternBatch runs no SELECTs and a batch of known content writes no
// dictionary rows at all; only the agent's sequence record is updated.
// Memory is about the size of the dictionary's content plus hash-map overhead.
// Measured (dictionary_speed_test, 1000 stacks x 30 frames, 50 series):
// ~100 ms for an all-new batch (13.4k rows), ~9 ms for an all-known one, of
// which ~0.4 ms validation, ~0.3 ms the commit and the rest ~13.5k lookups in
// std::unordered_map at ~0.7 us each (cache misses); a flat table keyed by a
// 128-bit content hash would cut the lookups.
//
// Threads: any thread may call any method. Writes (InternBatch, SeenBefore,
// which reads the writer's sequence map) serialize on the writer connection's
// mutex; reads (Resolve*, LabelSet, label index) use a second connection with
// its own mutex, so queries are not blocked by an InternBatch's fsync (WAL
// mode lets a reader run beside the writer). Reads see committed data only:
// every id returned by InternBatch resolves once InternBatch has returned.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/embedded/dictionary/batch_validator.h"
#include "storage/embedded/dictionary/dictionary_reader.h"
#include "storage/embedded/dictionary/dictionary_types.h"
#include "storage/embedded/dictionary/dictionary_writer.h"
#include "storage/embedded/dictionary/segment_manifest.h"

namespace warpscope::dictionary {

class DictionaryStore {
 public:
  // Opens or creates the database at `path`. FailedPrecondition for a file of a
  // newer schema version or one that is not a dictionary database, and, with
  // create false, for an empty one (a caller that has data referring to the
  // dictionary must not get a new, empty one).
  struct OpenOptions {
    bool create = true;
  };
  static StatusOr<std::unique_ptr<DictionaryStore>> Open(const std::string& path, const BatchLimits& limits = {}) {
    return Open(path, limits, OpenOptions{});
  }
  static StatusOr<std::unique_ptr<DictionaryStore>> Open(const std::string& path, const BatchLimits& limits,
                                                         const OpenOptions& options);

  // Validates the whole batch (InvalidArgument naming the field and index;
  // nothing is written), then in one transaction interns all its content and,
  // unless options say otherwise, records (agent_id, sequence). Content
  // already stored keeps its id.
  //
  // Recording the sequence here is right only when this commit is what makes
  // the batch stored. The embedded ProfileStore stores rows in its WAL after
  // interning, so it passes record_sequence = false and records sequences
  // itself (RecordAgentSequences) once the rows are durable: a crash between
  // this commit and the WAL append must not turn the agent's re-send into a
  // "duplicate" whose rows were never stored.
  struct InternOptions {
    bool record_sequence = true;
  };
  StatusOr<InternedBatch> InternBatch(const warpscope::v1::IngestBatch& batch) { return InternBatch(batch, {}); }
  StatusOr<InternedBatch> InternBatch(const warpscope::v1::IngestBatch& batch, const InternOptions& options);

  // Raises each agent's stored sequence to at least the given one (never
  // lowers it), in one durable transaction.
  Status RecordAgentSequences(const std::vector<std::pair<std::string, uint64_t>>& sequences);
  // Every agent's stored sequence, any order.
  std::vector<std::pair<std::string, uint64_t>> AgentSequences();

  // The dictionary's random identity (made with it) and its highest ids of
  // each kind that rows refer to, as committed (dictionary_marks.h).
  DictionaryMarks Marks();

  // The embedded store's segment manifest and recorded gaps
  // (segment_manifest.h), on the writer's connection.
  StatusOr<std::vector<ManifestEntry>> ManifestEntries();
  StatusOr<std::vector<RecordedGap>> RecordedGaps();
  Status UpdateManifest(const ManifestChange& change);

  // True when InternBatch already committed a batch of `agent_id` with a
  // sequence >= `sequence`: the upload is a re-send, acknowledge without storing.
  StatusOr<bool> SeenBefore(const std::string& agent_id, uint64_t sequence);

  StatusOr<ResolvedStack> ResolveStack(uint64_t stack_id);
  // Same order as `stack_ids`; shares lookups of common frames across stacks.
  StatusOr<std::vector<ResolvedStack>> ResolveStacks(const std::vector<uint64_t>& stack_ids);
  // The two halves of ResolveStacks, for a cache that keeps locations apart
  // from stacks: each stack's location ids (leaf first), and each location's
  // frames (innermost line first). Same order as the ids given.
  StatusOr<std::vector<std::vector<uint64_t>>> StackLocations(const std::vector<uint64_t>& stack_ids);
  StatusOr<std::vector<std::vector<ResolvedFrame>>> ResolveLocations(const std::vector<uint64_t>& location_ids);
  StatusOr<Labels> LabelSet(uint64_t label_set_id);
  // String ids (InternedBatch::string_ids) to their values, same order.
  StatusOr<std::vector<std::string>> Strings(const std::vector<uint64_t>& ids);
  StatusOr<ProfileTypeInfo> ProfileType(uint64_t type_id);

  // Label-set (series) ids having every name=value pair, ascending. An empty
  // list matches every series. Only equality: callers narrow with the
  // matchers whose matches_empty() is false and filter the rest themselves.
  StatusOr<std::vector<uint64_t>> SeriesMatching(const Labels& equal_matchers);
  StatusOr<std::vector<std::string>> LabelNames();
  StatusOr<std::vector<std::string>> LabelValues(const std::string& name);

  StatusOr<DictionaryRowCounts> RowCounts();

 private:
  DictionaryStore(std::unique_ptr<DictionaryWriter> writer, std::unique_ptr<SegmentManifest> manifest,
                  std::unique_ptr<DictionaryReader> reader)
      : writer_(std::move(writer)), manifest_(std::move(manifest)), reader_(std::move(reader)) {}

  std::mutex write_mu_;
  std::unique_ptr<DictionaryWriter> writer_;  // guarded by write_mu_
  std::unique_ptr<SegmentManifest> manifest_;  // guarded by write_mu_ (the writer's connection)
  std::mutex read_mu_;
  std::unique_ptr<DictionaryReader> reader_;  // guarded by read_mu_
};

}  // namespace warpscope::dictionary
