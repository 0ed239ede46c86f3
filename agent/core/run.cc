#include "agent/core/run.h"

#include <string.h>

#include <chrono>
#include <iostream>
#include <memory>

#include <sys/resource.h>

#include <fstream>
#include <mutex>

#include "agent/core/cuda_library.h"
#include "agent/core/gpu_metrics_loop.h"
#include "agent/core/lifecycle.h"
#include "agent/core/preflight.h"
#include "agent/core/profiling_session.h"
#include "agent/export/agent_identity.h"
#include "agent/export/ingest_batch_encoder.h"
#include "agent/export/window_batches.h"
#include "agent/export/prometheus_exposition.h"
#include "agent/gpu/gpu_time/gpu_time_collector.h"
#include "agent/kubernetes/pod_metadata_source.h"
#include "agent/export/uploader.h"
#include "agent/process/process_labels.h"
#include "base/duration.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "server/http_server.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;


// The token from --token or --token-file. Errors never contain the token.
StatusOr<std::string> ResolveToken(const RunOptions& options) {
  if (options.token_file.empty()) return options.token;
  return ReadTokenFile(options.token_file);
}

// Everything one upload window needs to become a batch. Sampling thread only.
class WindowEncoder {
 public:
  // `gpu` may be null (--no-gpu-metrics), and `gpu_time` (--no-gpu-time).
  WindowEncoder(std::string agent_id, std::string node, size_t max_batch_bytes, BatchSequencer sequencer,
                ProcessLabelCache* labels, ProfilingSession* session, Uploader* uploader, GpuMetricsLoop* gpu,
                gpu::GpuTimeCollector* gpu_time)
      : agent_id_(std::move(agent_id)),
        node_(std::move(node)),
        max_batch_bytes_(max_batch_bytes),
        sequencer_(std::move(sequencer)),
        labels_(labels),
        session_(session),
        uploader_(uploader),
        gpu_(gpu),
        gpu_time_(gpu_time) {}

  // Finishes the window's profiles (CPU, and GPU time when on), encodes them
  // with the GPU trace and metrics, each source in batches of its own below
  // the server's size limit (window_batches.h), and hands the batches to the
  // uploader. `final`: the last window (GPU time still inside its grace
  // period is joined now). A window or batch that cannot be encoded is
  // logged and skipped, never fatal.
  void FinishWindow(ProfileBuilder* builder, int64_t duration_nanos, bool final) {
    session_->AddCounters(builder);
    std::optional<Profile> gpu_profile;
    GpuTrace trace;
    if (gpu_time_ != nullptr) {
      ProfileBuilder gpu_builder(0, 0, 0);
      gpu_time_->FinishWindow(&gpu_builder, &trace, final);
      gpu_time_->AddCounters(builder);
      gpu_profile = gpu_builder.Finish(duration_nanos);
      gpu_profile->sample_types = {{gpu::kGpuTimeTypeName, gpu::kGpuTimeUnit}};
    }
    const UploaderStats up = uploader_->StatsFromAnyThread();
    builder->SetCounter("spool_dropped_batches", up.spool_dropped_batches);
    builder->SetCounter("upload_batches_sent", up.batches_sent);
    builder->SetCounter("upload_batches_rejected", up.batches_rejected);
    builder->SetCounter("upload_batches_dropped", up.batches_dropped);
    builder->SetCounter("upload_send_failures", up.send_failures);
    builder->SetCounter("upload_auth_failures", up.auth_failures);
    builder->SetCounter("encode_errors", encode_errors_);
    builder->SetCounter("upload_window_batches", batch_stats_.batches);
    builder->SetCounter("upload_batches_split", batch_stats_.split);
    builder->SetCounter("upload_rows_too_large", batch_stats_.rows_too_large);
    std::vector<MetricReading> metrics;
    if (gpu_ != nullptr) {
      metrics = gpu_->TakePendingFromAnyThread();
      const GpuMetricsLoopStats gs = gpu_->StatsFromAnyThread();
      builder->SetCounter("gpu_metric_readings", gs.readings);
      builder->SetCounter("gpu_metric_errors", gs.errors);
      builder->SetCounter("gpu_metric_dropped_readings", gs.dropped_readings);
    }
    if (pods_ != nullptr) {
      const kubernetes::PodSourceStats ks = pods_->StatsFromAnyThread();
      builder->SetCounter("kubernetes_pod_list_fetches", ks.fetches);
      builder->SetCounter("kubernetes_pod_list_errors", ks.fetch_errors);
      builder->SetCounter("kubernetes_pods_cached", ks.pods);
      builder->SetCounter("kubernetes_pod_cache_bytes", ks.cache_bytes);
      builder->SetCounter("kubernetes_pods_dropped", ks.dropped);
      builder->SetCounter("kubernetes_pods_expired", ks.expired);
      builder->SetCounter("kubernetes_pod_lookups_missed", ks.lookups_missed);
    }
    const Profile profile = builder->Finish(duration_nanos);
    health_.Update(profile.counters);

    ProcessLabelMap labels;
    for (const ProfileSample& sample : profile.samples) {
      if (!labels.count(sample.labels.pid)) labels.emplace(sample.labels.pid, labels_->Get(sample.labels.pid));
    }
    for (const MetricReading& m : metrics) {
      const std::optional<uint32_t> pid = ReadingPid(m);
      if (pid && !labels.count(*pid)) labels.emplace(*pid, labels_->Get(*pid));
    }
    if (gpu_profile) {
      gpu_profile->time_nanos = profile.time_nanos;
      for (const ProfileSample& sample : gpu_profile->samples) {
        if (!labels.count(sample.labels.pid)) labels.emplace(sample.labels.pid, labels_->Get(sample.labels.pid));
      }
      for (const auto& [pid, comm] : trace.comms) {
        if (!labels.count(pid)) labels.emplace(pid, labels_->Get(pid));
      }
    }
    labels_->EndWindow();
    // Pod names as they are now: batches already made keep theirs.
    if (pods_ != nullptr) {
      for (auto& [pid, l] : labels) l.kubernetes = pods_->Resolve(l.container);
    }
    const WindowSources sources{&profile, gpu_profile ? &*gpu_profile : nullptr, &trace, &metrics};
    auto batches = EncodeWindowBatches(sources, {agent_id_, 0, node_}, labels, max_batch_bytes_, &batch_stats_);
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

  uint64_t batches() const { return batches_; }
  uint64_t samples() const { return samples_; }
  // Pod names for processes in Kubernetes pods (null: off). Set before the first window.
  void SetPodMetadata(kubernetes::PodMetadataSource* pods) { pods_ = pods; }

  // What the Prometheus endpoint shows about the agent; HTTP threads read it.
  class HealthBoard {
   public:
    void Update(const std::vector<ProfileCounter>& counters) {
      std::lock_guard<std::mutex> lock(mu_);
      health_.counters.clear();
      for (const ProfileCounter& c : counters) health_.counters.emplace_back(c.name, c.value);
    }
    void Count(int64_t samples) {
      std::lock_guard<std::mutex> lock(mu_);
      health_.samples += static_cast<uint64_t>(samples);
      ++health_.batches;
    }
    AgentHealth SnapshotFromAnyThread() const {
      std::lock_guard<std::mutex> lock(mu_);
      return health_;
    }

   private:
    mutable std::mutex mu_;
    AgentHealth health_;
  };
  const HealthBoard& health() const { return health_; }

 private:
  const std::string agent_id_;
  const std::string node_;
  const size_t max_batch_bytes_;
  BatchSequencer sequencer_;
  ProcessLabelCache* labels_;
  ProfilingSession* session_;
  Uploader* uploader_;
  GpuMetricsLoop* gpu_;
  gpu::GpuTimeCollector* gpu_time_;
  kubernetes::PodMetadataSource* pods_ = nullptr;
  HealthBoard health_;
  uint64_t encode_errors_ = 0;
  WindowBatchStats batch_stats_;
  uint64_t batches_ = 0;
  uint64_t samples_ = 0;
};

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

// GET /metrics on --metrics-listen. Read-only numbers, no secrets: served
// without a token on whatever address the operator chose (dcgm-exporter
// does the same on :9400).
StatusOr<std::unique_ptr<server::HttpServer>> StartMetricsEndpoint(const std::string& listen, const std::string& node,
                                                                   const WindowEncoder* encoder,
                                                                   const Uploader* uploader,
                                                                   const GpuMetricsLoop* gpu) {
  server::HttpServerOptions o;
  o.listen = listen;
  o.insecure_listen_any = true;
  o.threads = 2;
  o.ingest_threads = 0;  // one route: no lane of its own
  // A scrape endpoint, often on every interface: few connections, small heads.
  o.connections.max_connections = 64;
  o.connections.max_connections_per_client = 16;
  o.connections.head.max_head_bytes = 16 << 10;
  o.max_request_bytes = 64 << 10;
  server::Routes routes;
  // Liveness for container orchestrators: answers while the endpoint's threads run.
  routes.push_back({"GET", "/healthz", [](const server::HttpRequest&) {
                      return server::HttpResponse::Json(200, R"({"ok":true})");
                    }});
  routes.push_back({"GET", "/metrics", [=](const server::HttpRequest&) {
                      AgentHealth health = encoder->health().SnapshotFromAnyThread();
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
                        latest = gpu->LatestFromAnyThread();
                      } else {
                        health.gpu_off_reason = "--no-gpu-metrics";
                      }
                      AddProcessUsage(&health);
                      server::HttpResponse r;
                      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                      r.body = RenderPrometheusText(latest, health, node);
                      return r;
                    }});
  return server::HttpServer::Start(o, std::move(routes));
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
  o.trace_per_second = options.gpu_trace_per_sec;
  return o;
}

kubernetes::PodSourceMode KubernetesModeOf(RunOptions::KubernetesMode mode) {
  switch (mode) {
    case RunOptions::KubernetesMode::kOff: return kubernetes::PodSourceMode::kOff;
    case RunOptions::KubernetesMode::kKubelet: return kubernetes::PodSourceMode::kKubelet;
    case RunOptions::KubernetesMode::kApiServer: return kubernetes::PodSourceMode::kApiServer;
    case RunOptions::KubernetesMode::kAuto: break;
  }
  return kubernetes::PodSourceMode::kAuto;
}

gpu::GpuTimeSessionParts GpuTimePartsOf(ProfilingSession* session) {
  gpu::GpuTimeSessionParts parts;
  parts.symbolizer = &session->symbolizer();
  parts.python = session->python();
  parts.unwind_maps = session->unwind_map_fds();
  parts.describe = [session](uint32_t pid) { session->DescribeProcess(pid); };
  return parts;
}

}  // namespace

int RunContinuous(const RunOptions& options, const std::string& node_name) {
  const PreflightFacts preflight = ReadPreflightFacts();
  if (Status s = CheckCanProfile(preflight); !s.ok()) {
    return ReportFailure(ExitCodeForStartFailure(s, kExitUnsupported), s);
  }
  // Profiling goes on (the kernel samples every process anyway), but nothing
  // can be named: say so loudly, once, before anything else.
  if (const std::string why = NotInHostPidNamespace(preflight.pid_ns); !why.empty()) {
    std::cerr << "warpscope-agent: WARNING: not in the host's PID namespace: " << why
              << ". Stacks will be unnamed (the agent cannot read /proc/<pid> of the processes it samples). Run it "
                 "with the host's PIDs: hostPID: true (Kubernetes), --pid=host (docker, podman); "
                 "`warpscope-agent doctor` checks the deployment.\n";
  }
  auto token = ResolveToken(options);
  if (!token.ok()) return ReportFailure(kExitUsage, token.status());

  // Before any thread starts: the uploader thread must inherit the blocked
  // SIGINT/SIGTERM, or a signal delivered to it would kill the process
  // without the last window.
  StopSignals stop_signals;
  TargetWatch targets;
  for (uint32_t pid : options.pids) {
    if (Status s = targets.Add(pid); !s.ok()) {
      return ReportFailure(s.code() == StatusCode::kNotFound ? kExitNoSuchProcess : kExitError, s);
    }
  }

  auto agent_id = LoadOrCreateAgentId(options.state_dir);
  if (!agent_id.ok()) return ReportFailure(kExitUsage, agent_id.status().WithContext("--state-dir " + options.state_dir));

  UploaderOptions upload_options;
  upload_options.server_url = options.server_url;
  upload_options.token = *token;
  upload_options.spool_dir = options.spool_dir;
  upload_options.spool_max_bytes = options.spool_max_bytes;
  upload_options.user_agent = std::string("warpscope-agent/") + WARPSCOPE_VERSION;
  auto uploader_or = Uploader::Create(upload_options);
  if (!uploader_or.ok()) {
    const Status& s = uploader_or.status();
    // A locked spool means another agent runs with this state: a runtime clash, not a bad flag.
    return ReportFailure(s.code() == StatusCode::kFailedPrecondition ? kExitError : kExitUsage,
                s.WithContext("spool " + options.spool_dir));
  }
  std::unique_ptr<Uploader> uploader = std::move(uploader_or).value();
  auto sequencer = BatchSequencer::Open(options.state_dir, uploader->newest_spooled_sequence());
  if (!sequencer.ok()) return ReportFailure(kExitUsage, sequencer.status());

  ProfilingSessionOptions session_options;
  session_options.pids = options.pids;
  session_options.frequency_hz = options.frequency_hz;
  session_options.drain_interval = options.drain_interval;
  session_options.python_frames = options.python_frames;
  session_options.stamp_sample_times = true;
  session_options.symbol_cache_bytes = options.symbol_cache_bytes;
  auto session_or = ProfilingSession::Create(session_options);
  if (!session_or.ok()) {
    const Status& s = session_or.status();
    return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  }
  std::unique_ptr<ProfilingSession> session = std::move(session_or).value();

  ProcessLabelCache labels{ProcFs()};
  // Pod metadata on its own thread; lookups never wait for it.
  std::unique_ptr<kubernetes::PodMetadataSource> pods;
  {
    auto target = kubernetes::ResolvePodListTarget(KubernetesModeOf(options.kubernetes), options.kubernetes_pods_url,
                                                   options.kubernetes_token_file, node_name,
                                                   kubernetes::PodSourceEnvironment::Process());
    if (!target.ok()) return ReportFailure(kExitUsage, target.status());
    if (*target) {
      kubernetes::PodSourceOptions o;
      o.url = (*target)->url;
      o.token_file = options.kubernetes_token_file;
      o.ca_file = options.kubernetes_ca_file;
      o.insecure_tls = options.kubernetes_insecure_tls;
      o.refresh = options.kubernetes_refresh;
      o.min_fetch_gap = std::min<std::chrono::milliseconds>(std::chrono::seconds(2), options.kubernetes_refresh);
      o.cache.grace = options.kubernetes_pod_grace;
      o.user_agent = std::string("warpscope-agent/") + WARPSCOPE_VERSION;
      pods = kubernetes::PodMetadataSource::Start(std::move(o));
      std::cerr << "warpscope-agent: Kubernetes pod names from the " << (*target)->source << " (" << (*target)->url
                << ", every " << FormatDuration(options.kubernetes_refresh) << ")\n";
    }
  }
  session->SetProcessEventObserver([&labels, &pods](const ws_proc_event& event) {
    switch (event.type) {
      case WS_PROC_SEEN: {  // read while the process is alive
        const ProcessLabels& l = labels.Get(event.pid);
        if (pods) pods->Notice(l.container);
        break;
      }
      case WS_PROC_EXEC: {
        labels.OnExec(event.pid);
        const ProcessLabels& l = labels.Get(event.pid);
        if (pods) pods->Notice(l.container);
        break;
      }
      case WS_PROC_EXIT: labels.OnExit(event.pid); break;
      default: break;
    }
  });
  // GPU metrics on their own thread; NVML missing is an ordinary outcome.
  std::unique_ptr<GpuMetricsLoop> gpu;
  if (options.gpu_metrics) {
    const std::string library = options.nvml_library;
    gpu = std::make_unique<GpuMetricsLoop>([library] { return OpenNvmlMetricsSource(library); },
                                           options.gpu_metrics_interval, ProcFs());
    gpu->Start();
    if (gpu->WaitUntilOpenFromAnyThread(std::chrono::seconds(10))) {
      const std::string off = gpu->StatsFromAnyThread().off_reason;
      if (!off.empty()) std::cerr << "warpscope-agent: " << off << "; profiling CPUs only\n";
    }
  }
  // GPU time: the socket CUDA processes connect to and the launch probe.
  // Without it (a socket path we cannot create, no uprobe support) the agent
  // still profiles CPUs.
  std::unique_ptr<gpu::GpuTimeCollector> gpu_time;
  if (options.gpu_time && !options.cuda_library_dir.empty()) {
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
  if (options.gpu_time) {
    auto started = gpu::GpuTimeCollector::Start(GpuTimeOptionsFrom(options), GpuTimePartsOf(session.get()));
    if (started.ok()) {
      gpu_time = std::move(started).value();
    } else {
      std::cerr << "warpscope-agent: GPU time is off: " << started.status().message() << "\n";
    }
  }
  WindowEncoder encoder(*agent_id, node_name, options.upload_max_batch_bytes, std::move(sequencer).value(), &labels,
                        session.get(), uploader.get(), gpu.get(), gpu_time.get());
  encoder.SetPodMetadata(pods.get());
  std::unique_ptr<server::HttpServer> metrics_endpoint;
  if (!options.metrics_listen.empty()) {
    auto started = StartMetricsEndpoint(options.metrics_listen, node_name, &encoder, uploader.get(), gpu.get());
    if (!started.ok()) {
      if (gpu) gpu->Stop();
      uploader->Stop();
      return ReportFailure(kExitUsage, started.status().WithContext("--metrics-listen " + options.metrics_listen));
    }
    metrics_endpoint = std::move(started).value();
    std::cerr << "warpscope-agent: Prometheus metrics on http://" << options.metrics_listen << "/metrics\n";
  }

  uploader->Start();
  if (Status s = session->Start(); !s.ok()) {
    if (metrics_endpoint) metrics_endpoint->Stop();
    if (gpu) gpu->Stop();
    uploader->Stop();
    return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  }
  const auto interval = std::chrono::duration_cast<Clock::duration>(options.upload_interval);
  std::cerr << "warpscope-agent: profiling "
            << (options.pids.empty() ? std::string("all processes")
                                     : "pid " + std::to_string(options.pids[0]) +
                                           (options.pids.size() > 1 ? " and others" : ""))
            << " at " << options.frequency_hz << " Hz on " << session->num_cpus() << " CPUs; uploading every "
            << FormatDuration(options.upload_interval) << " to " << options.server_url << " as agent " << *agent_id
            << " (node " << node_name << "; Ctrl-C or SIGTERM stops)\n";

  const auto run_start = Clock::now();
  // Windows follow each other without gaps on the Unix clock that samples are
  // stamped with: each ends when its last drain is done, and the next starts
  // there (so the time spent finishing a window belongs to the next one).
  int64_t window_start_unix = UnixNanosNow();
  auto window_start = Clock::now();
  std::string stop_reason;
  int exit_code = kExitOk;
  while (stop_reason.empty()) {
    const auto window_end = window_start + interval;
    auto builder = std::make_unique<ProfileBuilder>(window_start_unix, session->period_nanos(), options.frequency_hz);
    session->SetBuilder(builder.get());
    Status polled;
    while (Clock::now() < window_end) {
      if (stop_signals.Received()) {
        stop_reason = stop_signals.last_signal() == SIGTERM ? "SIGTERM" : "SIGINT";
        break;
      }
      if (!targets.empty() && targets.AllExited()) {
        stop_reason = options.pids.size() == 1 ? "process exited" : "all processes exited";
        break;
      }
      polled = session->Poll(window_end);
      if (!polled.ok()) break;
      if (gpu_time) gpu_time->Poll();
    }
    if (!polled.ok()) {
      LOG_ERROR() << "sampling failed: " << polled.message();
      stop_reason = "error";
      exit_code = kExitError;
    }
    Status drained = stop_reason.empty() ? session->DrainNow() : session->StopAndDrainAll();
    if (!drained.ok()) {
      LOG_ERROR() << "draining samples failed: " << drained.message();
      if (stop_reason.empty()) (void)session->StopAndDrainAll();
      stop_reason = "error";
      exit_code = kExitError;
    }
    const auto stop = Clock::now();
    int64_t stop_unix = UnixNanosNow();
    if (stop_unix <= window_start_unix) {  // the clock was set back: the steady clock's length
      stop_unix = window_start_unix + std::chrono::duration_cast<std::chrono::nanoseconds>(stop - window_start).count();
    }
    encoder.FinishWindow(builder.get(), stop_unix - window_start_unix, !stop_reason.empty());
    window_start_unix = stop_unix;
    window_start = stop;
  }
  if (metrics_endpoint) metrics_endpoint->Stop();
  if (gpu) gpu->Stop();
  gpu_time.reset();  // closes the CUDA socket: libraries go dormant
  if (pods) pods->Stop();
  // Sends what is queued while the server answers (bounded), spools the rest.
  uploader->Stop();
  const UploaderStats up = uploader->StatsFromAnyThread();
  std::cerr << "warpscope-agent: stopped (" << stop_reason << ") after "
            << FormatDuration(Clock::now() - run_start) << "; " << encoder.samples() << " samples in "
            << encoder.batches() << " batches: " << up.batches_sent << " uploaded, " << up.spooled
            << " waiting in the spool, " << up.batches_rejected << " rejected by the server, "
            << up.spool_dropped_batches + up.batches_dropped << " dropped\n";
  return exit_code;
}

}  // namespace warpscope
