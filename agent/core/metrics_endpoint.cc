#include "agent/core/metrics_endpoint.h"

#include <unistd.h>

#include <sys/resource.h>

#include <fstream>
#include <utility>
#include <vector>

namespace warpscope {
namespace {

// The agent's own CPU time and resident memory, for its health metrics.
void AddProcessUsage(AgentHealth* health) {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    health->cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                          static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (statm >> size >> resident) health->resident_bytes = resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

StatusOr<std::unique_ptr<http::HttpServer>> StartMetricsEndpoint(const std::string& listen, const std::string& node,
                                                                   const UploadSink* sink, const Uploader* uploader,
                                                                   const GpuMetricsLoop* gpu,
                                                                   const CpuEnergyCollector* cpu_energy) {
  http::HttpServerOptions o;
  o.listen = listen;
  o.insecure_listen_any = true;
  o.threads = 2;
  o.ingest_threads = 0;  // one route: no lane of its own
  // A scrape endpoint, often on every interface: few connections, small heads.
  o.connections.max_connections = 64;
  o.connections.max_connections_per_client = 16;
  o.connections.head.max_head_bytes = 16 << 10;
  o.max_request_bytes = 64 << 10;
  http::Routes routes;
  routes.push_back({"GET", "/healthz", [](const http::HttpRequest&) {
                      return http::HttpResponse::Json(200, R"({"ok":true})");
                    }});
  routes.push_back({"GET", "/metrics", [=](const http::HttpRequest&) {
                      AgentHealth health = sink->health().SnapshotFromAnyThread();
                      const UploaderStats up = uploader->StatsFromAnyThread();
                      health.batches_sent = up.batches_sent;
                      health.batches_rejected = up.batches_rejected;
                      health.batches_dropped = up.batches_dropped;
                      health.send_failures = up.send_failures;
                      health.spool_dropped_batches = up.spool_dropped_batches;
                      health.spooled = up.spooled;
                      std::vector<MetricReading> latest;
                      if (gpu != nullptr) {
                        const GpuMetricsLoopStats gs = gpu->StatsFromAnyThread();
                        health.gpu_readings = gs.readings;
                        health.gpu_errors = gs.errors;
                        health.gpu_disabled = gs.disabled;
                        health.gpu_off_reason = gs.off_reason;
                        health.gpu_process_energy_series = gs.process_energy_series;
                        health.gpu_process_energy_dropped = gs.process_energy_dropped;
                        latest = gpu->LatestFromAnyThread();
                      } else {
                        health.gpu_off_reason = "--no-gpu-metrics";
                      }
                      if (cpu_energy != nullptr) {
                        health.cpu_energy_zones = cpu_energy->StatsFromAnyThread().zones;
                        std::vector<MetricReading> rapl = cpu_energy->LatestFromAnyThread();
                        latest.insert(latest.end(), std::make_move_iterator(rapl.begin()),
                                      std::make_move_iterator(rapl.end()));
                      }
                      AddProcessUsage(&health);
                      http::HttpResponse r;
                      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                      r.body = RenderPrometheusText(latest, health, node);
                      return r;
                    }});
  return http::HttpServer::Start(o, std::move(routes));
}

}  // namespace warpscope
