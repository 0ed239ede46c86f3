// The `gpu_energy` profile type: the GPU-time profile (kernel leaves under
// their launch stacks) weighted by the joules the GPU used while those
// kernels ran, in microjoules, so the flame graph, the top table, the diff,
// the series and every export show joules per kernel and per Python
// function (docs/design/energy.md, "Joules per stack").
//
// A store in front of the real one: it answers gpu_energy's profile, series,
// timeline and label queries from gpu_time's timeline and the GPU energy
// metrics (query/energy.h EnergyWeights), and passes everything else on.
// Each kernel's nanoseconds, in each second, get its GPU's busy joules per
// GPU nanosecond over the share window around them.
#pragma once

#include "storage/profile_store.h"

namespace warpscope::query {

inline constexpr char kGpuEnergyType[] = "gpu_energy";
inline constexpr char kMicrojoules[] = "microjoules";

class EnergyProfileStore final : public storage::ProfileStore {
 public:
  // `inner` must outlive this store.
  explicit EnergyProfileStore(storage::ProfileStore* inner) : inner_(inner) {}

  StatusOr<storage::IngestResult> Ingest(const warpscope::v1::IngestBatch& batch) override {
    return inner_->Ingest(batch);
  }
  StatusOr<storage::MergedProfile> SelectProfile(const storage::ProfileQuery& query) override;
  StatusOr<std::vector<storage::Series>> SelectSeries(const storage::SeriesQuery& query) override;
  StatusOr<storage::StackTimeline> SelectStackTimeline(const storage::TimelineQuery& query) override;
  StatusOr<std::vector<storage::Labels>> SelectSeriesLabels(const storage::SeriesLabelsQuery& query) override;
  StatusOr<std::vector<storage::MetricSeries>> SelectMetricSeries(const storage::MetricQuery& query) override {
    return inner_->SelectMetricSeries(query);
  }
  StatusOr<std::vector<storage::MetricInfo>> MetricNames() override { return inner_->MetricNames(); }
  StatusOr<storage::GpuActivities> SelectGpuActivities(const storage::GpuActivityQuery& query) override {
    return inner_->SelectGpuActivities(query);
  }
  StatusOr<std::vector<std::string>> LabelNames() override { return inner_->LabelNames(); }
  StatusOr<std::vector<std::string>> LabelValues(const std::string& name) override { return inner_->LabelValues(name); }
  // The inner store's types, and gpu_energy after gpu_time when it has that.
  StatusOr<std::vector<storage::ProfileTypeInfo>> ProfileTypes() override;
  StatusOr<storage::CubinPutResult> PutCubin(const std::string& hash, const std::string& bytes) override {
    return inner_->PutCubin(hash, bytes);
  }
  StatusOr<std::optional<storage::CubinInfo>> FindCubin(const std::string& hash) override {
    return inner_->FindCubin(hash);
  }
  StatusOr<std::optional<std::string>> ReadCubin(const std::string& hash) override { return inner_->ReadCubin(hash); }
  Status NoteCubinUses(const std::vector<std::string>& hashes) override { return inner_->NoteCubinUses(hashes); }
  storage::StoreStats stats() const override { return inner_->stats(); }

 private:
  // gpu_time's timeline over the query, lanes by `group_by`, each point's
  // value in microjoules (points and stacks that come to 0 µJ left out).
  StatusOr<storage::StackTimeline> EnergyTimeline(const storage::ProfileQuery& query,
                                                  const std::vector<std::string>& group_by, size_t max_points);

  storage::ProfileStore* inner_;
};

}  // namespace warpscope::query
