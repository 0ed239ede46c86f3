// IngestCounters: what every store counts of its Ingest calls (StoreStats;
// its cubins are counted apart, storage/cubin_store.h),
// with the two outcomes that end an Ingest early.
//
//   if (Status s = counters_.CheckSchema(batch); !s.ok()) return s;
//   if (!pass) return counters_.Duplicate();
//   ... store the batch ...
//   return counters_.Stored(batch);
//
// Threading: any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/profile_store.h"

namespace warpscope::storage {

class IngestCounters {
 public:
  // The batch's schema version must be the one this server reads; a batch
  // that is not is counted as rejected.
  Status CheckSchema(const warpscope::v1::IngestBatch& batch) {
    if (batch.schema_version() == 1) return Status::Ok();
    return Rejected(InvalidArgumentError("schema_version " + std::to_string(batch.schema_version()) +
                                         " is not supported; this server reads 1"));
  }
  // Counts a rejected batch and passes its reason on.
  Status Rejected(Status why) {
    ++rejected_batches_;
    return why;
  }
  IngestResult Duplicate() {
    ++duplicate_batches_;
    return IngestResult{.duplicate = true};
  }
  // The batch is durable: counts it and what it held.
  IngestResult Stored(const warpscope::v1::IngestBatch& batch) {
    return Stored(IngestResult{.duplicate = false,
                               .samples = static_cast<uint64_t>(batch.samples_size()),
                               .metric_points = static_cast<uint64_t>(batch.metric_points_size()),
                               .gpu_activities = static_cast<uint64_t>(batch.gpu_activities_size())});
  }
  // The batch is durable with what `result` says was stored of it and left
  // out (IngestTimeBounds): counts that.
  IngestResult Stored(const IngestResult& result) {
    ++ingested_batches_;
    samples_ += result.samples;
    metric_points_ += result.metric_points;
    gpu_activities_ += result.gpu_activities;
    dropped_too_old_ += result.dropped.too_old;
    dropped_too_new_ += result.dropped.too_new;
    return result;
  }

  StoreStats Stats() const {
    return StoreStats{.ingested_batches = ingested_batches_.load(),
                      .duplicate_batches = duplicate_batches_.load(),
                      .rejected_batches = rejected_batches_.load(),
                      .samples = samples_.load(),
                      .metric_points = metric_points_.load(),
                      .gpu_activities = gpu_activities_.load(),
                      .dropped_too_old = dropped_too_old_.load(),
                      .dropped_too_new = dropped_too_new_.load(),
                      .cubins = {}};
  }

 private:
  std::atomic<uint64_t> ingested_batches_{0}, duplicate_batches_{0}, rejected_batches_{0}, samples_{0},
      metric_points_{0}, gpu_activities_{0}, dropped_too_old_{0}, dropped_too_new_{0};
};

}  // namespace warpscope::storage
