// The embedded store's segment files on disk: their names, what a crash may
// leave behind, and which of them hold live data.
//
// Naming: segments/seg-<lo>-<hi>.wss, lo and hi as 20 digits: the segment
// holds exactly the rows of the WAL records with seq in [lo, hi]. A flush
// writes one segment for the WAL range it drained from the head; compaction
// merges a run of segments adjacent in WAL order, [a, b] + [b+1, c] + ... ->
// [a, c]. The names alone decide what is live (dictionary.sqlite's segment
// manifest only tells a missing segment from one never written:
// dictionary/segment_manifest.h), and the rule is
//   * a segment whose range lies inside another segment's range is dead (a
//     compaction wrote its output and crashed before deleting its inputs);
//   * *.tmp.* files are dead (WriteSegment crashed before its rename);
//   * WAL records with seq <= the highest hi are in segments; the rest are
//     replayed into the head.
// Because WriteSegment publishes a file with one rename, a crash at any step
// of a flush or a compaction leaves every row in exactly one live place.
//
// Rollups: segments/sum-<lo>-<hi>.wss, written by compaction after its output
// seg-<lo>-<hi>.wss, holds that segment's profile rows summed over time (each
// (type, series, stack) once, at the segment's min time). A query that needs
// no time resolution (a flame graph) and covers the segment's whole time span
// reads the rollup instead. It is a derived copy: live only beside a live
// segment of the same range (otherwise dead and deleted), and a segment
// without one is simply read in full.
//
// A segment file that does not open (truncated, a damaged footer) fails the
// load; with a quarantine dir (the store's `repair`), it is moved there and
// the load goes on without it, as if the file had been deleted: a range it
// hid (compaction inputs not yet deleted) is live again. Dead files are
// deleted only once every live one has opened, so a bad compaction output
// never costs its inputs.
//
// Stateless functions; any thread. The store serializes the ones that change
// files (its maintenance mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/embedded/segment_file.h"

namespace warpscope::embedded {

// The damaged parts ("block 3", "rollup block 0") scans of one segment have
// met, so that each is logged and counted once, a damaged rollup is no longer
// used, and compaction leaves the segment alone (merging it would turn the
// damage into silently missing rows). Any thread.
class SegmentDamage {
 public:
  struct Recorded {
    bool first_in_segment = false;  // the segment's first damaged part
    bool new_part = false;          // not recorded before
  };
  Recorded Record(const std::string& part) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool first = parts_.empty();
    const bool added = parts_.insert(part).second;
    if (added && part.starts_with("rollup")) rollup_damaged_ = true;
    return {first, added};
  }
  bool any() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !parts_.empty();
  }
  bool rollup_damaged() const {
    std::lock_guard<std::mutex> lock(mu_);
    return rollup_damaged_;
  }

 private:
  mutable std::mutex mu_;
  std::set<std::string> parts_;  // guarded by mu_
  bool rollup_damaged_ = false;  // guarded by mu_
};

// One live segment: immutable after it is published (but for what scans
// learn of its damage), shared by queries (shared_ptr), so a compaction or
// retention may drop it from the catalog and unlink the file while a query
// still reads it through its open fd.
struct Segment {
  uint64_t lo = 0;  // WAL seq range covered, inclusive
  uint64_t hi = 0;
  std::unique_ptr<SegmentReader> reader;
  std::unique_ptr<SegmentReader> rollup;  // may be null; see "Rollups" above
  mutable SegmentDamage damage;
};
using SegmentList = std::vector<std::shared_ptr<const Segment>>;  // ascending lo, disjoint ranges

std::string SegmentFileName(uint64_t lo, uint64_t hi);
bool ParseSegmentFileName(std::string_view name, uint64_t* lo, uint64_t* hi);
std::string RollupFileName(uint64_t lo, uint64_t hi);
bool ParseRollupFileName(std::string_view name, uint64_t* lo, uint64_t* hi);

struct LoadOptions {
  // Where a live segment that does not open (DataLoss) is moved; empty: such
  // a segment fails the load.
  std::string quarantine_dir;
};

struct QuarantinedSegment {
  std::string name;      // seg-<lo>-<hi>.wss
  std::string moved_to;  // its path now
  Status why;            // what opening it said
};

struct LoadedSegments {
  SegmentList segments;
  std::vector<std::string> deleted;  // dead files removed while loading (for logs and tests)
  std::vector<QuarantinedSegment> quarantined;
};

// Lists `dir` (creating it if missing), opens the live segments, then deletes
// dead files (above). A segment that cannot be opened fails the load
// (DataLoss naming the file: starting without it would silently lose its
// data), unless options.quarantine_dir says where to move it.
StatusOr<LoadedSegments> LoadSegments(const std::string& dir, const LoadOptions& options = {});

struct CompactionPolicy {
  // A run needs at least this many segments to be merged.
  size_t min_inputs = 4;
  // Upper bound on an output's rows: WriteSegment holds all of them in memory
  // (~32 bytes each, twice while sorting).
  uint64_t max_rows = 4'000'000;
  // Upper bound on an output's time span (max_time - min_time).
  int64_t max_span_ns = 3600LL * 1'000'000'000;
};

// Runs of adjacent segments (index ranges [begin, end) into `segments`) worth
// merging: each input smaller than half of max_rows and without known damage,
// the run within max_rows and max_span_ns. Greedy, oldest first; runs do not
// overlap.
std::vector<std::pair<size_t, size_t>> PlanCompaction(const SegmentList& segments, const CompactionPolicy& policy);

}  // namespace warpscope::embedded
