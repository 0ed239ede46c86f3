#include "agent/core/collector_registry.h"

#include <iostream>
#include <string>

#include "agent/collectors/cpu_energy/cpu_info.h"
#include "agent/collectors/gpu_metrics/gpu_metrics_collector.h"
#include "agent/collectors/gpu_time/gpu_time_collector.h"
#include "agent/core/cuda_library.h"

namespace warpscope {
namespace {

StatusOr<std::unique_ptr<Collector>> MakeCpu(const RunOptions& options, CollectorWiring* wiring) {
  ProfilingSessionOptions o;
  o.pids = options.pids;
  o.frequency_hz = options.frequency_hz;
  o.drain_interval = options.drain_interval;
  o.python_frames = options.python_frames;
  o.stamp_sample_times = true;
  o.symbol_cache_bytes = options.symbol_cache_bytes;
  o.off_cpu.enabled = options.off_cpu;
  o.off_cpu.min_wait = options.off_cpu_min_wait;
  ASSIGN_OR_RETURN(std::unique_ptr<CpuCollector> cpu, CpuCollector::Create(o));
  wiring->cpu = cpu.get();
  return std::unique_ptr<Collector>(std::move(cpu));
}

// GPU metrics on their own thread; NVML missing is an ordinary outcome.
StatusOr<std::unique_ptr<Collector>> MakeGpuMetrics(const RunOptions& options, CollectorWiring* wiring) {
  if (!options.gpu_metrics) return std::unique_ptr<Collector>();
  const std::string library = options.nvml_library;
  auto c = std::make_unique<GpuMetricsCollector>([library] { return OpenNvmlMetricsSource(library); },
                                                 options.gpu_metrics_interval, std::chrono::seconds(10));
  const std::string off = c->loop().StatsFromAnyThread().off_reason;
  if (!off.empty()) std::cerr << "warpscope-agent: " << off << "; profiling CPUs only\n";
  wiring->gpu_metrics = &c->loop();
  return std::unique_ptr<Collector>(std::move(c));
}

// CPU and DRAM energy from RAPL, read once a second; a machine without it
// (most VMs) is an ordinary outcome, said once.
StatusOr<std::unique_ptr<Collector>> MakeCpuEnergy(const RunOptions& options, CollectorWiring* wiring) {
  if (options.powercap_root.empty()) return std::unique_ptr<Collector>();
  auto reader = PowercapReader::Open(options.powercap_root);
  if (!reader.ok()) {
    std::cerr << "warpscope-agent: " << reader.status().message() << "\n";
    return std::unique_ptr<Collector>();
  }
  const PowercapStats s = (*reader)->stats();
  std::cerr << "warpscope-agent: CPU energy from RAPL: " << s.zones << " zone(s) under " << options.powercap_root
            << "\n";
  auto c = std::make_unique<CpuEnergyCollector>(std::move(reader).value(), std::chrono::seconds(1));
  wiring->cpu_energy = c.get();
  return std::unique_ptr<Collector>(std::move(c));
}

// The CPU's model (and the watts per thread the agent was told), for the
// server's CPU energy estimate where RAPL is missing.
StatusOr<std::unique_ptr<Collector>> MakeCpuInfo(const RunOptions& options, CollectorWiring*) {
  return std::unique_ptr<Collector>(std::make_unique<CpuInfoCollector>("/proc/cpuinfo", options.cpu_watts_per_core));
}

gpu::GpuTimeOptions GpuTimeOptionsFrom(const RunOptions& options) {
  gpu::GpuTimeOptions o;
  o.socket.socket_path = options.cuda_socket;
  o.socket.max_connections_per_uid = options.gpu_connections_per_uid;
  o.kernel_name_bytes = options.gpu_kernel_name_bytes;
  o.max_probe_files = options.gpu_probe_files;
  ws_cuda_config& c = o.socket.config;
  switch (options.gpu_time_mode) {
    case RunOptions::GpuTimeMode::kAdaptive:
      c.mode = WS_CUDA_MODE_ADAPTIVE;
      break;
    case RunOptions::GpuTimeMode::kDuty:
      c.mode = WS_CUDA_MODE_DUTY;
      c.flags |= WS_CUDA_CONFIG_DUTY_DETACH;
      break;
    case RunOptions::GpuTimeMode::kExact:
      c.mode = WS_CUDA_MODE_EXACT;
      break;
  }
  c.duty_on_ms = options.gpu_duty_on_ms;
  c.duty_period_ms = options.gpu_duty_period_ms;
  c.overhead_budget_ppm = options.gpu_overhead_budget_ppm;
  if (options.gpu_trace_per_sec > 0) c.flags |= WS_CUDA_CONFIG_MEMCPY | WS_CUDA_CONFIG_MEMSET;
  c.launch_samples_per_sec = options.gpu_launch_samples;
  if (options.gpu_pc_sampling) c.flags |= WS_CUDA_CONFIG_PC_SAMPLING;
  c.pc_sampling_period_log2 = options.gpu_pc_period_log2;
  if (!options.nvdisasm.empty()) {
    o.cubin_symbols.sass = CubinSymbolsOptions::Sass::kPath;
    o.cubin_symbols.nvdisasm_path = options.nvdisasm;
  }
  o.trace_per_second = options.gpu_trace_per_sec;
  return o;
}

// GPU time: the socket CUDA processes connect to and the launch probe.
// Without it (a socket path we cannot create, no uprobe support) the agent
// still profiles CPUs.
StatusOr<std::unique_ptr<Collector>> MakeGpuTime(const RunOptions& options, CollectorWiring* wiring) {
  if (!options.gpu_time) return std::unique_ptr<Collector>();
  if (!options.cuda_library_dir.empty()) {
    const std::string source = options.cuda_library.empty() ? DefaultCudaLibraryPath() : options.cuda_library;
    StatusOr<std::string> published = PublishCudaLibrary(source, options.cuda_library_dir);
    if (published.ok()) {
      std::cerr << "warpscope-agent: CUDA applications that mount " << options.cuda_library_dir
                << " start with CUDA_INJECTION64_PATH=" << *published << "\n";
    } else {
      std::cerr << "warpscope-agent: the CUDA injection library was not copied: " << published.status().message()
                << "\n";
    }
  }
  ProfilingSession& session = wiring->cpu->session();
  gpu::GpuTimeSessionParts parts;
  parts.symbolizer = &session.symbolizer();
  parts.python = session.python();
  parts.unwind_maps = session.unwind_map_fds();
  parts.describe = [&session](uint32_t pid) { session.DescribeProcess(pid); };
  auto opened = gpu::GpuTimeCollector::Open(GpuTimeOptionsFrom(options), std::move(parts));
  if (!opened.ok()) {
    std::cerr << "warpscope-agent: GPU time is off: " << opened.status().message() << "\n";
    return std::unique_ptr<Collector>();
  }
  return std::unique_ptr<Collector>(std::move(opened).value());
}

constexpr CollectorEntry kRunCollectors[] = {
    {"cpu", MakeCpu},
    {"cpu_energy", MakeCpuEnergy},
    {"cpu_info", MakeCpuInfo},
    {"gpu_metrics", MakeGpuMetrics},
    {"gpu_time", MakeGpuTime},
};

}  // namespace

std::span<const CollectorEntry> RunCollectors() { return kRunCollectors; }

}  // namespace warpscope
