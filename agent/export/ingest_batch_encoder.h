// Profile -> warpscope.v1.IngestBatch (proto/warpscope/v1/ingest.proto): the
// agent's upload to warpscope-server, one per upload window.
//
// Every string, mapping, function, location, stack and label set is written
// once per batch; samples are aggregated per (label set, stack). Series labels
// (sorted by key, empty values left out): node, pid, comm, exe, thread, and
// from the cgroup path container_id, container_runtime, pod_uid, qos_class,
// and from the pod list (ProcessLabels::kubernetes) pod, namespace,
// container, workload, workload_kind.
// The thread id is deliberately not a label: it would make a series per
// thread, while thread names group threads the way people read them.
//
// Native frames are sent as (mapping = file name + build id, file offset), not
// as virtual addresses, so the same binary in different processes (ASLR,
// different load addresses) gives the same locations on the server.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/gpu_trace.h"
#include "model/metric_reading.h"
#include "model/profile.h"
#include "agent/process/process_labels.h"
#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope {

inline constexpr uint32_t kIngestSchemaVersion = 1;
inline constexpr char kIngestCpuTypeName[] = "cpu";
inline constexpr char kIngestCpuSampleUnit[] = "samples";
// The server's limit on one string (docs/api.md); longer ones are cut.
inline constexpr size_t kIngestMaxStringBytes = 4096;

struct IngestBatchHeader {
  std::string agent_id;
  uint64_t sequence = 0;
  std::string node;  // the "node" label of every series
  // The agent's --label pairs, on every series beside node (a label the
  // series has of its own, such as pid or comm, wins).
  std::vector<std::pair<std::string, std::string>> labels;
};

// Window start and end come from the profile (time_nanos, + duration_nanos);
// samples are stamped with their ProfileSample::time_nanos (the agent's
// per-second buckets), or the window start when that is 0. Counters are the profile's.
// `labels` gives exe and container labels per pid (a pid missing from it gets
// only node, pid, comm and thread). InvalidArgument when the profile's ids are
// inconsistent.
//
// `metrics` become metric points (metric_types + metric_points), each series
// labelled with node plus the reading's labels; a reading with a "pid" label
// also gets that process's exe and container labels from `labels` (its comm
// comes with the reading).
// Non-finite values are left out (the server would reject the batch).
StatusOr<v1::IngestBatch> EncodeIngestBatch(const Profile& profile, const IngestBatchHeader& header,
                                            const ProcessLabelMap& labels,
                                            const std::vector<MetricReading>& metrics = {});
// Several profiles of one window in one batch, each its own profile type: the
// CPU profile first (it gives the window), then e.g. GPU time, whose profile
// has one sample type (Profile::sample_types: {"gpu_time", "nanoseconds"})
// and ProfileSample::count = the value. A sample's SampleLabels::extra become
// series labels (device, stream, graph_id).
// `trace` (may be null) becomes gpu_activities and gpu_trace_coverage, each
// labelled like its process's samples: node, pid, comm, exe, container labels.
StatusOr<v1::IngestBatch> EncodeIngestBatch(const std::vector<const Profile*>& profiles,
                                            const IngestBatchHeader& header, const ProcessLabelMap& labels,
                                            const std::vector<MetricReading>& metrics = {},
                                            const GpuTrace* trace = nullptr);

// What one batch carries of a window: any of its sources, each possibly only
// in part (the window split into batches, window_batches.h). Every part may
// be empty; a profile in `profiles` gives the batch its type even without
// samples.
struct IngestBatchContent {
  int64_t start_unix_nanos = 0;
  int64_t end_unix_nanos = 0;
  struct ProfileRows {
    const Profile* profile = nullptr;
    size_t begin = 0, end = 0;  // its samples [begin, end)
  };
  std::vector<ProfileRows> profiles;  // each its own type, in this order
  const std::vector<ProfileCounter>* counters = nullptr;
  std::span<const MetricReading> metrics;
  const GpuTrace* trace = nullptr;  // its comms label the activities' processes
  std::span<const GpuActivityRecord> activities;
  std::span<const GpuTraceCoverageRow> coverage;
};
StatusOr<v1::IngestBatch> EncodeIngestBatch(const IngestBatchContent& content, const IngestBatchHeader& header,
                                            const ProcessLabelMap& labels);

// The HTTP body: the serialized batch, zstd-compressed (also the spool's payload).
StatusOr<std::string> CompressIngestBatch(const v1::IngestBatch& batch, int zstd_level = 3);
// The reverse, for tests and tools. max_bytes caps the decompressed size.
StatusOr<v1::IngestBatch> DecompressIngestBatch(std::string_view body, size_t max_bytes = 256u << 20);

}  // namespace warpscope
