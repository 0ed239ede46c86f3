// The agent's --metrics-listen endpoint: GET /metrics (Prometheus text: the
// newest GPU readings with dcgm-exporter's names, the energy counters (RAPL's,
// and the GPU joules per process), and the agent's own health) and GET /healthz (liveness for container orchestrators).
// Read-only numbers, no secrets: served without a token on whatever address
// the operator chose (dcgm-exporter does the same on :9400).
//
// Threading: the endpoint's HTTP threads read the sink's HealthBoard, the
// uploader's, the GPU metrics loop's and the CPU energy collector's
// …FromAnyThread state.
#pragma once

#include <memory>
#include <string>

#include "agent/collectors/cpu_energy/cpu_energy_collector.h"
#include "agent/collectors/gpu_metrics/gpu_metrics_loop.h"
#include "agent/export/upload_sink.h"
#include "agent/export/uploader.h"
#include "base/http/http_server.h"

namespace warpscope {

// `gpu` and `cpu_energy` may be null (off). Everything passed must outlive the endpoint.
StatusOr<std::unique_ptr<http::HttpServer>> StartMetricsEndpoint(const std::string& listen, const std::string& node,
                                                                   const UploadSink* sink, const Uploader* uploader,
                                                                   const GpuMetricsLoop* gpu,
                                                                   const CpuEnergyCollector* cpu_energy);

}  // namespace warpscope
