// UploadSink: `run`'s sink. Each window becomes warpscope.v1.IngestBatch
// batches, every source in batches of its own below the server's size
// limit (window_batches.h), labelled with the processes' exe, container and
// pod; the batches go to the Uploader, whose thread sends them and spools
// what the server cannot take. The window's new cubins go to the
// CubinUploader, whose thread sends each to the server's cubin store.
//
// Threading: Consume runs on the sampling thread; health() is read by the
// Prometheus endpoint's threads (HealthBoard locks).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "agent/export/agent_identity.h"
#include "agent/export/cubin_uploader.h"
#include "agent/export/prometheus_exposition.h"
#include "agent/export/uploader.h"
#include "agent/export/window_batches.h"
#include "agent/kubernetes/pod_metadata_source.h"
#include "agent/pipeline/window_sink.h"
#include "agent/process/process_labels.h"

namespace warpscope {

// What the Prometheus endpoint shows about the agent's windows; written on
// the sampling thread, read from any.
class HealthBoard {
 public:
  void Update(const std::vector<ProfileCounter>& counters);
  void Count(int64_t samples);
  AgentHealth SnapshotFromAnyThread() const;

 private:
  mutable std::mutex mu_;
  AgentHealth health_;
};

class UploadSink : public WindowSink {
 public:
  // `labels`, `uploader` and `cubins` must outlive the sink; `pods` may be
  // null (not in Kubernetes) and must outlive it otherwise. `agent_labels`
  // (the agent's --label pairs) go on every series beside node.
  UploadSink(std::string agent_id, std::string node, size_t max_batch_bytes, BatchSequencer sequencer,
             ProcessLabelCache* labels, Uploader* uploader, CubinUploader* cubins, kubernetes::PodMetadataSource* pods,
             std::vector<std::pair<std::string, std::string>> agent_labels = {});

  // Encodes the window with its GPU trace and metrics and posts the batches.
  // A window or batch that cannot be encoded is logged, counted
  // (encode_errors) and skipped, never fatal.
  void Consume(Window window) override;

  uint64_t batches() const { return batches_; }
  uint64_t samples() const { return samples_; }
  const HealthBoard& health() const { return health_; }

 private:
  // The sink's own counters and the uploader's and pod source's, into the window's.
  void AddCounters(std::vector<ProfileCounter>* counters) const;
  // Process labels of every pid the window mentions, then the pod names as they are now.
  ProcessLabelMap LabelsOf(const Window& window);

  const std::string agent_id_;
  const std::string node_;
  const std::vector<std::pair<std::string, std::string>> agent_labels_;
  const size_t max_batch_bytes_;
  BatchSequencer sequencer_;
  ProcessLabelCache* const labels_;
  Uploader* const uploader_;
  CubinUploader* const cubins_;
  kubernetes::PodMetadataSource* const pods_;
  HealthBoard health_;
  uint64_t encode_errors_ = 0;
  WindowBatchStats batch_stats_;
  uint64_t batches_ = 0;
  uint64_t samples_ = 0;
};

}  // namespace warpscope
