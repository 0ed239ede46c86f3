// The agent's GPU metrics source: agent/collectors/gpu_metrics/nvml's collector behind the
// GpuMetricsLoop's interface. Everything here runs on the loop's thread.
#include "agent/collectors/gpu_metrics/gpu_metrics_loop.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"
#include "base/logging.h"

namespace warpscope {
namespace {

class NvmlMetricsSource final : public GpuMetricsSource {
 public:
  explicit NvmlMetricsSource(std::unique_ptr<NvmlReader> collector) : collector_(std::move(collector)) {}

  void CollectInto(int64_t now_unix_nanos, std::vector<MetricReading>* readings) override {
    collector_->CollectInto(now_unix_nanos, readings);
  }

  std::vector<GpuMetricOff> DisabledMetrics() const override {
    std::vector<GpuMetricOff> out;
    for (const DisabledGpuMetric& d : collector_->DisabledMetrics()) {
      out.push_back({std::to_string(d.gpu), d.metric, d.reason});
    }
    return out;
  }

  uint64_t ErrorCount() const override { return collector_->ErrorCount(); }

 private:
  std::unique_ptr<NvmlReader> collector_;
};

}  // namespace

StatusOr<std::unique_ptr<GpuMetricsSource>> OpenNvmlMetricsSource(const std::string& library_path) {
  GpuMetricsOptions options;
  if (!library_path.empty()) options.library_path = library_path;
  ASSIGN_OR_RETURN(std::unique_ptr<NvmlReader> collector, NvmlReader::Open(options));
  LOG_INFO() << "GPU metrics: " << collector->DeviceCount() << " GPU(s) through NVML (" << options.library_path << ")";
  return std::unique_ptr<GpuMetricsSource>(std::make_unique<NvmlMetricsSource>(std::move(collector)));
}

}  // namespace warpscope
