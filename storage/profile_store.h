// ProfileStore: the storage interface of warpscope-server. The embedded store
// (storage/embedded/, the default) and the ClickHouse store (storage/clickhouse/) both
// implement it and both must pass the one conformance suite in
// storage/conformance/. The server only talks to this interface.
//
// Everything a query returns is resolved (frames with names, label sets as
// name/value pairs), never backend ids, so query/ and server/ do not depend
// on how a backend numbers its dictionaries.
//
// Threading: every method may be called from any number of threads at once
// (the server's HTTP workers). Ingest blocks until the batch is durable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "model/selector.h"
#include "storage/cubin_store.h"
#include "storage/ingest_time_bounds.h"
#include "storage/query_context.h"
#include "storage/store_types.h"

namespace warpscope::storage {

struct IngestResult {
  // True when (agent_id, sequence) was already stored: acknowledged, not stored again.
  bool duplicate = false;
  uint64_t samples = 0;        // sample rows stored by this call (0 for a duplicate)
  uint64_t metric_points = 0;  // metric points stored by this call (0 for a duplicate)
  uint64_t gpu_activities = 0;  // GPU activities stored by this call (0 for a duplicate)
  // Rows (samples, metric points, GPU activities, coverage rows) left out
  // because their time lies outside IngestTimeBounds; the rest was stored.
  DroppedRows dropped{};
};

// Selects samples of one profile type in [from_ns, to_ns) whose series'
// labels pass `selector`.
struct ProfileQuery {
  std::string type = "cpu";  // ProfileType.name
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  Selector selector;
  // Deadline, cancellation and the answer's caveats; null for none
  // (query_context.h). Not owned.
  QueryContext* context = nullptr;
};

// One stack and its summed value over the query.
struct StackValue {
  std::vector<uint32_t> frames;  // indexes into MergedProfile::frames, leaf first
  int64_t value = 0;
};

// A profile is a frame table plus stacks of indexes into it, as pprof has it:
// a frame shared by thousands of stacks (main, the runtime, libc) is held and
// rendered once, so an answer's memory follows its distinct frames, not
// stacks x depth (docs/benchmarks.md, "Query memory").
struct MergedProfile {
  ProfileTypeInfo type;  // name "" when no samples of that type were ever stored
  // The frames the stacks use: each location's lines once, innermost first
  // and consecutive (so a stack lists them as a run), any order otherwise.
  std::vector<ResolvedFrame> frames;
  std::vector<StackValue> stacks;  // distinct stacks (by content), any order; values > 0
  int64_t total = 0;               // sum of values
  uint64_t series = 0;             // series that contributed

  const ResolvedFrame& frame(uint32_t index) const { return frames[index]; }
};

struct SeriesQuery {
  ProfileQuery profile;
  // Points are the sums over [t, t + step) for t = from_ns + k * step.
  int64_t step_ns = 0;
  // Labels to group by; empty sums everything into one series. A series
  // lacking a label groups under "" for it.
  std::vector<std::string> group_by;
  // When set, the store writes the answer's unit and period there (as
  // MergedProfile::type: a type's own unit, or nanoseconds when rows of
  // types with different periods were summed); untouched when nothing of
  // the type was stored or the range is empty.
  ProfileTypeInfo* answer_type = nullptr;
};

struct SeriesPoint {
  int64_t time_ns = 0;
  int64_t value = 0;
  friend bool operator==(const SeriesPoint&, const SeriesPoint&) = default;
};

struct Series {
  Labels labels;                    // the group_by labels (sorted by name)
  std::vector<SeriesPoint> points;  // ascending time, only steps with a value != 0
};

// The flame chart's question: which stacks ran when, per lane (a thread, or
// whatever group_by says), at the time resolution the agents sent (the agent
// stamps samples with their second).
struct TimelineQuery {
  ProfileQuery profile;
  // Lane labels; empty puts everything in one lane. A series lacking a label
  // lanes under "" for it.
  std::vector<std::string> group_by;
  // Distinct (lane, time, stack) points an answer may hold: more is
  // InvalidArgument (a range too long for a flame chart), never a huge answer.
  size_t max_points = 2'000'000;
};

struct TimelinePoint {
  uint32_t lane = 0;   // index into StackTimeline::lanes
  int64_t time_ns = 0;  // the time the rows were stored under
  uint32_t stack = 0;  // index into StackTimeline::profile.stacks
  int64_t value = 0;   // > 0
  friend bool operator==(const TimelinePoint&, const TimelinePoint&) = default;
};

struct StackTimeline {
  // The frames and the distinct stacks, each with its value over the range
  // (so profile.total is the sum of every point's value).
  MergedProfile profile;
  std::vector<Labels> lanes;  // the group_by labels of each lane (sorted by name), lanes sorted by values
  std::vector<TimelinePoint> points;  // sorted by lane, then time, then stack index
};

// Metrics (GPU metrics from NVML, docs/design/gpu_metrics.md): gauges and counters stored as
// raw points per series (metric, label set), kept apart from profile types
// (SelectProfile, SelectSeries, ProfileTypes never see them). A query
// downsamples the points of one metric name into steps, per group.
struct MetricQuery {
  std::string name;  // MetricInfo.name; required
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  Selector selector;
  // Steps are [t, t + step) for t = from_ns + k * step, as in SeriesQuery,
  // with the same limits (InvalidArgument past them).
  int64_t step_ns = 0;
  // Labels to group by; empty puts every series in one group. A series
  // lacking a label groups under "" for it.
  std::vector<std::string> group_by;
  QueryContext* context = nullptr;  // as in ProfileQuery
};

// Every raw point of every series of a group within one step, summarized:
// avg = sum / count. A point stored twice (two agents reporting one label
// set, or a re-send under a new sequence) counts twice.
struct MetricStep {
  int64_t time_ns = 0;  // the step's start
  double min = 0;
  double max = 0;
  double sum = 0;
  uint64_t count = 0;  // > 0
  friend bool operator==(const MetricStep&, const MetricStep&) = default;
};

struct MetricSeries {
  Labels labels;                   // the group_by labels (sorted by name)
  std::vector<MetricStep> points;  // ascending time, only steps with points
  friend bool operator==(const MetricSeries&, const MetricSeries&) = default;
};

// Label sets seen in a range (the "targets": nodes, processes, GPUs).
struct SeriesLabelsQuery {
  std::string type;  // a profile type, or "" for every profile type and every metric
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  Selector selector;
  QueryContext* context = nullptr;  // as in ProfileQuery
};

// GPU activities (kernels, memcpys, memsets) whose start lies in [from_ns,
// to_ns) and whose process's labels pass `selector`, plus the coverage rows
// of the seconds overlapping the range. More than max_activities is
// InvalidArgument ("range too long"): an answer's memory is bounded, never a
// huge allocation.
struct GpuActivityQuery {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  Selector selector;
  size_t max_activities = 1'000'000;
  QueryContext* context = nullptr;  // as in ProfileQuery
};

struct StoreStats {
  uint64_t ingested_batches = 0;
  uint64_t duplicate_batches = 0;
  uint64_t rejected_batches = 0;
  uint64_t samples = 0;        // sample rows stored since start
  uint64_t metric_points = 0;  // metric points stored since start
  uint64_t gpu_activities = 0;  // GPU activities stored since start
  // Rows left out of stored batches by IngestTimeBounds since start.
  uint64_t dropped_too_old = 0;
  uint64_t dropped_too_new = 0;
  // Retention passes that stood aside because the clock was far ahead of the
  // newest row (storage/retention_clock_guard.h).
  uint64_t retention_paused = 0;
  CubinStats cubins;
};

class ProfileStore {
 public:
  virtual ~ProfileStore() = default;

  // Stores a batch's samples, metric points and GPU activities with their
  // trace coverage (any may be empty).
  // Validates the whole batch first: InvalidArgument naming the field, and
  // nothing stored. Returns OK only once the batch is durable (survives
  // kill -9). Unavailable when the backend cannot take writes now (the server
  // answers 503 and the agent retries); ResourceExhausted for a full disk.
  virtual StatusOr<IngestResult> Ingest(const warpscope::v1::IngestBatch& batch) = 0;

  virtual StatusOr<MergedProfile> SelectProfile(const ProfileQuery& query) = 0;
  virtual StatusOr<std::vector<Series>> SelectSeries(const SeriesQuery& query) = 0;
  virtual StatusOr<StackTimeline> SelectStackTimeline(const TimelineQuery& query) = 0;
  // Distinct label sets of series with samples (or, for type "", metric
  // points) in the range, sorted.
  virtual StatusOr<std::vector<Labels>> SelectSeriesLabels(const SeriesLabelsQuery& query) = 0;

  // One series per group, sorted by the group's labels; groups without points
  // in the range are left out, as is everything for a name never stored.
  // InvalidArgument for an empty name, a step <= 0 or too many points.
  virtual StatusOr<std::vector<MetricSeries>> SelectMetricSeries(const MetricQuery& query) = 0;
  // Every (name, unit) ever stored, sorted by name, then unit.
  virtual StatusOr<std::vector<MetricInfo>> MetricNames() = 0;

  // GPU activities and trace coverage (GpuActivityQuery). Coverage rows of
  // one (label set, second) sent in several batches are summed (recorded,
  // sent) with the earliest complete_until_ns. An empty range gives an empty
  // answer; more than max_activities activities is InvalidArgument.
  virtual StatusOr<GpuActivities> SelectGpuActivities(const GpuActivityQuery& query) = 0;

  virtual StatusOr<std::vector<std::string>> LabelNames() = 0;
  virtual StatusOr<std::vector<std::string>> LabelValues(const std::string& name) = 0;
  // Profile types only; metrics are listed by MetricNames.
  virtual StatusOr<std::vector<ProfileTypeInfo>> ProfileTypes() = 0;

  // Cubins by content hash (storage/cubin_store.h). PutCubin returns
  // kStored only once the cubin is durable (survives kill -9); refusals
  // (kTooLarge, kStoreFull) store nothing. InvalidArgument for a malformed
  // hash or bytes whose hash is another; ResourceExhausted for a full disk;
  // Unavailable when the backend cannot take writes now.
  virtual StatusOr<CubinPutResult> PutCubin(const std::string& hash, const std::string& bytes) = 0;
  // The cubin's size; nullopt when the store does not hold it (or it is past
  // retention). InvalidArgument for a malformed hash.
  virtual StatusOr<std::optional<CubinInfo>> FindCubin(const std::string& hash) = 0;
  // The cubin's bytes; nullopt as for FindCubin.
  virtual StatusOr<std::optional<std::string>> ReadCubin(const std::string& hash) = 0;
  // Batches whose instruction frames name these cubins were stored: each
  // one held counts as used now (retention keeps it). Hashes the store does
  // not hold, malformed ones included, are ignored.
  virtual Status NoteCubinUses(const std::vector<std::string>& hashes) = 0;

  virtual StoreStats stats() const = 0;
};

}  // namespace warpscope::storage
