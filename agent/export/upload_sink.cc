#include "agent/export/upload_sink.h"

#include <utility>

#include "agent/export/ingest_batch_encoder.h"
#include "base/logging.h"

namespace warpscope {

void HealthBoard::Update(const std::vector<ProfileCounter>& counters) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.counters.clear();
  for (const ProfileCounter& c : counters) health_.counters.emplace_back(c.name, c.value);
}

void HealthBoard::Count(int64_t samples) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.samples += static_cast<uint64_t>(samples);
  ++health_.batches;
}

AgentHealth HealthBoard::SnapshotFromAnyThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

UploadSink::UploadSink(std::string agent_id, std::string node, size_t max_batch_bytes, BatchSequencer sequencer,
                       ProcessLabelCache* labels, Uploader* uploader, CubinUploader* cubins,
                       kubernetes::PodMetadataSource* pods, std::vector<std::pair<std::string, std::string>> agent_labels)
    : agent_id_(std::move(agent_id)),
      node_(std::move(node)),
      agent_labels_(std::move(agent_labels)),
      max_batch_bytes_(max_batch_bytes),
      sequencer_(std::move(sequencer)),
      labels_(labels),
      uploader_(uploader),
      cubins_(cubins),
      pods_(pods) {}

void UploadSink::AddCounters(std::vector<ProfileCounter>* counters) const {
  const UploaderStats up = uploader_->StatsFromAnyThread();
  SetCounter(counters, "spool_dropped_batches", up.spool_dropped_batches);
  // Batches waiting in memory (the disk refused them) and on disk.
  SetCounter(counters, "cache_bytes_upload_queue", up.queued_bytes);
  SetCounter(counters, "cache_budget_bytes_upload_queue", up.max_queued_bytes);
  SetCounter(counters, "spool_bytes", up.spooled_bytes);
  SetCounter(counters, "spool_budget_bytes", up.spool_max_bytes);
  SetCounter(counters, "upload_batches_sent", up.batches_sent);
  SetCounter(counters, "upload_batches_rejected", up.batches_rejected);
  SetCounter(counters, "upload_batches_dropped", up.batches_dropped);
  SetCounter(counters, "upload_batches_unspooled", up.batches_unspooled);
  SetCounter(counters, "upload_send_failures", up.send_failures);
  SetCounter(counters, "upload_auth_failures", up.auth_failures);
  SetCounter(counters, "encode_errors", encode_errors_);
  SetCounter(counters, "upload_window_batches", batch_stats_.batches);
  SetCounter(counters, "upload_batches_split", batch_stats_.split);
  SetCounter(counters, "upload_rows_too_large", batch_stats_.rows_too_large);
  const CubinUploaderStats cubins = cubins_->StatsFromAnyThread();
  SetCounter(counters, "cubin_uploads", cubins.uploaded);
  SetCounter(counters, "cubin_uploads_already_stored", cubins.already_stored);
  SetCounter(counters, "cubin_uploads_rejected", cubins.rejected);
  SetCounter(counters, "cubin_uploads_dropped", cubins.dropped);
  SetCounter(counters, "cubin_upload_failures", cubins.failures);
  SetCounter(counters, "cubin_uploads_queued", cubins.queued);
  if (pods_ == nullptr) return;
  const kubernetes::PodSourceStats ks = pods_->StatsFromAnyThread();
  SetCounter(counters, "kubernetes_pod_list_fetches", ks.fetches);
  SetCounter(counters, "kubernetes_pod_list_errors", ks.fetch_errors);
  SetCounter(counters, "kubernetes_pods_cached", ks.pods);
  SetCounter(counters, "kubernetes_pod_cache_bytes", ks.cache_bytes);
  SetCounter(counters, "kubernetes_pods_dropped", ks.dropped);
  SetCounter(counters, "kubernetes_pods_expired", ks.expired);
  SetCounter(counters, "kubernetes_pod_lookups_missed", ks.lookups_missed);
}

ProcessLabelMap UploadSink::LabelsOf(const Window& window) {
  ProcessLabelMap labels;
  auto add = [&](uint32_t pid) {
    if (!labels.count(pid)) labels.emplace(pid, labels_->Get(pid));
  };
  for (const ProfileSample& sample : window.cpu.samples) add(sample.labels.pid);
  for (const MetricReading& m : window.metrics) {
    if (const std::optional<uint32_t> pid = ReadingPid(m)) add(*pid);
  }
  if (window.off_cpu) {
    for (const ProfileSample& sample : window.off_cpu->samples) add(sample.labels.pid);
  }
  if (window.gpu_time) {
    for (const ProfileSample& sample : window.gpu_time->samples) add(sample.labels.pid);
    for (const auto& [pid, comm] : window.gpu_trace.comms) add(pid);
  }
  if (window.gpu_wait) {
    for (const ProfileSample& sample : window.gpu_wait->samples) add(sample.labels.pid);
  }
  if (window.gpu_pc) {
    for (const ProfileSample& sample : window.gpu_pc->samples) add(sample.labels.pid);
  }
  labels_->EndWindow();
  // Pod names as they are now: batches already made keep theirs.
  if (pods_ != nullptr) {
    for (auto& [pid, l] : labels) l.kubernetes = pods_->Resolve(l.container);
  }
  return labels;
}

void UploadSink::Consume(Window window) {
  for (const WindowCubin& cubin : window.cubins) cubins_->PostCubinFromAnyThread(cubin);
  AddCounters(&window.counters);
  Profile& profile = window.cpu;
  profile.time_nanos = window.start_unix_nanos;
  profile.duration_nanos = window.duration_nanos;
  profile.counters = std::move(window.counters);
  health_.Update(profile.counters);
  for (std::optional<Profile>* typed : {&window.off_cpu, &window.gpu_time, &window.gpu_wait, &window.gpu_pc}) {
    if (!*typed) continue;
    (*typed)->time_nanos = window.start_unix_nanos;
    (*typed)->duration_nanos = window.duration_nanos;
  }
  const ProcessLabelMap labels = LabelsOf(window);
  const WindowSources sources{&profile, window.gpu_time ? &*window.gpu_time : nullptr, &window.gpu_trace,
                              &window.metrics, window.off_cpu ? &*window.off_cpu : nullptr,
                              window.gpu_wait ? &*window.gpu_wait : nullptr,
                              window.gpu_pc ? &*window.gpu_pc : nullptr};
  auto batches = EncodeWindowBatches(sources, {agent_id_, 0, node_, agent_labels_}, labels, max_batch_bytes_, &batch_stats_);
  if (!batches.ok()) {
    ++encode_errors_;
    LOG_ERROR() << "window skipped: " << batches.status().message();
    return;
  }
  for (WindowBatch& b : *batches) {
    // Sequences are allocated only for batches that will be posted.
    const uint64_t sequence = sequencer_.Next();
    b.batch.set_sequence(sequence);
    StatusOr<std::string> body = CompressIngestBatch(b.batch);
    if (!body.ok()) {
      ++encode_errors_;
      LOG_ERROR() << WindowSourceName(b.source) << " batch skipped: " << body.status().message();
      continue;
    }
    int64_t samples = 0;
    if (b.source == WindowSource::kCpu) {
      for (const v1::Sample& s : b.batch.samples()) samples += s.value();
    }
    LOG_DEBUG() << "batch " << sequence << " (" << WindowSourceName(b.source) << "): " << samples << " samples, "
                << b.batch.samples_size() << " rows, " << b.batch.stacks_size() << " stacks, "
                << b.batch.gpu_activities_size() << " GPU activities, " << b.batch.metric_points_size()
                << " metric points, " << body->size() << " bytes";
    ++batches_;
    samples_ += samples;
    health_.Count(samples);
    uploader_->PostBatch(sequence, std::move(*body));
  }
}

}  // namespace warpscope
