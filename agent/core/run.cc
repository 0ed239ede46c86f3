// `warpscope-agent run`: the collectors of collector_registry.h into the
// agent loop, each window to the UploadSink; the pod metadata source, the
// Prometheus endpoint, the uploader and the cubin uploader around them.
// Wiring only: the sources live in agent/collectors/, the loop in
// agent/pipeline/, the sinks in agent/export/.
#include "agent/core/run.h"

#include <sys/stat.h>

#include <cerrno>

#include "base/spill_file.h"

#include <signal.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "agent/core/collector_registry.h"
#include "agent/unwind/bpf_features.h"
#include "agent/core/lifecycle.h"
#include "agent/core/metrics_endpoint.h"
#include "agent/core/preflight.h"
#include "agent/export/agent_identity.h"
#include "agent/export/cubin_uploader.h"
#include "agent/export/upload_sink.h"
#include "agent/export/uploader.h"
#include "agent/kubernetes/pod_metadata_source.h"
#include "agent/pipeline/agent_loop.h"
#include "agent/process/process_labels.h"
#include "base/duration.h"
#include "base/logging.h"

namespace warpscope {
namespace {

// The token from --token or --token-file. Errors never contain the token.
StatusOr<std::string> ResolveToken(const RunOptions& options) {
  if (options.token_file.empty()) return options.token;
  return ReadTokenFile(options.token_file);
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

// Pod metadata on its own thread (null: not in Kubernetes, or --kubernetes off); lookups never wait for it.
StatusOr<std::unique_ptr<kubernetes::PodMetadataSource>> StartPodMetadata(const RunOptions& options,
                                                                          const std::string& node_name) {
  auto target = kubernetes::ResolvePodListTarget(KubernetesModeOf(options.kubernetes), options.kubernetes_pods_url,
                                                 options.kubernetes_token_file, node_name,
                                                 kubernetes::PodSourceEnvironment::Process());
  if (!target.ok()) return target.status();
  if (!*target) return std::unique_ptr<kubernetes::PodMetadataSource>();
  kubernetes::PodSourceOptions o;
  o.url = (*target)->url;
  o.token_file = options.kubernetes_token_file;
  o.ca_file = options.kubernetes_ca_file;
  o.insecure_tls = options.kubernetes_insecure_tls;
  o.refresh = options.kubernetes_refresh;
  o.min_fetch_gap = std::min<std::chrono::milliseconds>(std::chrono::seconds(2), options.kubernetes_refresh);
  o.cache.grace = options.kubernetes_pod_grace;
  o.user_agent = std::string("warpscope-agent/") + WARPSCOPE_VERSION;
  std::cerr << "warpscope-agent: Kubernetes pod names from the " << (*target)->source << " (" << (*target)->url
            << ", every " << FormatDuration(options.kubernetes_refresh) << ")\n";
  return kubernetes::PodMetadataSource::Start(std::move(o));
}

// Process labels follow the CPU sampler's process events: read while the
// process is alive, refreshed on exec, dropped on exit.
void FollowProcesses(ProfilingSession* session, ProcessLabelCache* labels, kubernetes::PodMetadataSource* pods) {
  session->SetProcessEventObserver([labels, pods](const ws_proc_event& event) {
    switch (event.type) {
      case WS_PROC_EXEC: labels->OnExec(event.pid); [[fallthrough]];
      case WS_PROC_SEEN: {
        const ProcessLabels& l = labels->Get(event.pid);
        if (pods) pods->Notice(l.container);
        break;
      }
      case WS_PROC_EXIT: labels->OnExit(event.pid); break;
      default: break;
    }
  });
}

std::string StopReasonOf(const StopVerdict& stop, size_t pids) {
  switch (stop.cause) {
    case StopCause::kSignal: return stop.signal == SIGTERM ? "SIGTERM" : "SIGINT";
    case StopCause::kTargetsExited: return pids == 1 ? "process exited" : "all processes exited";
    case StopCause::kError: return "error";
    case StopCause::kWindowsDone: break;
  }
  return "done";
}

}  // namespace

int RunContinuous(const RunOptions& options, const std::string& node_name) {
  const PreflightFacts preflight = ReadPreflightFacts();
  if (Status s = CheckCanProfile(preflight); !s.ok()) {
    return ReportFailure(ExitCodeForStartFailure(s, kExitUnsupported), s);
  }
  if (!options.unwinder_driver.empty()) {
    if (Status s = SetUnwinderDriverOverride(options.unwinder_driver); !s.ok()) return ReportFailure(kExitUsage, s);
  }
  if (Status s = CheckUnwinderDriver(); !s.ok()) return ReportFailure(kExitUnsupported, s);
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
  // Tables that follow the size of the binaries read (symbols, unwind rows)
  // are built and kept in unlinked files here, not in memory
  // (base/spill_file.h; without room they stay in memory, counted).
  const std::string spill_dir = options.state_dir + "/spill";
  if (::mkdir(spill_dir.c_str(), 0700) == 0 || errno == EEXIST) SetSpillDirectory(spill_dir);

  ServerConnectionOptions server;
  server.server_url = options.server_url;
  server.token = *token;
  server.user_agent = std::string("warpscope-agent/") + WARPSCOPE_VERSION;
  UploaderOptions upload_options;
  upload_options.server = server;
  upload_options.spool_dir = options.spool_dir;
  upload_options.spool_max_bytes = options.spool_max_bytes;
  auto uploader_or = Uploader::Create(upload_options);
  if (!uploader_or.ok()) {
    const Status& s = uploader_or.status();
    // A locked spool means another agent runs with this state: a runtime clash, not a bad flag.
    return ReportFailure(s.code() == StatusCode::kFailedPrecondition ? kExitError : kExitUsage,
                         s.WithContext("spool " + options.spool_dir));
  }
  std::unique_ptr<Uploader> uploader = std::move(uploader_or).value();
  CubinUploaderOptions cubin_options;
  cubin_options.server = server;
  // A 32 MiB cubin over a slow link: the default 30 s would not do.
  cubin_options.server.request_timeout = std::chrono::minutes(2);
  auto cubins_or = CubinUploader::Create(cubin_options);
  if (!cubins_or.ok()) return ReportFailure(kExitUsage, cubins_or.status());
  std::unique_ptr<CubinUploader> cubins = std::move(cubins_or).value();
  auto sequencer = BatchSequencer::Open(options.state_dir, uploader->newest_spooled_sequence());
  if (!sequencer.ok()) return ReportFailure(kExitUsage, sequencer.status());

  CollectorWiring wiring;
  std::vector<std::unique_ptr<Collector>> collectors;
  for (const CollectorEntry& entry : RunCollectors()) {
    auto made = entry.make(options, &wiring);
    if (!made.ok()) return ReportFailure(ExitCodeForStartFailure(made.status(), kExitError), made.status());
    if (*made) collectors.push_back(std::move(made).value());
  }

  ProcessLabelCache labels{ProcFs()};
  auto pods_or = StartPodMetadata(options, node_name);
  if (!pods_or.ok()) return ReportFailure(kExitUsage, pods_or.status());
  std::unique_ptr<kubernetes::PodMetadataSource> pods = std::move(pods_or).value();
  FollowProcesses(&wiring.cpu->session(), &labels, pods.get());
  CpuCollector* cpu = wiring.cpu;
  const GpuMetricsLoop* gpu_metrics = wiring.gpu_metrics;
  const CpuEnergyCollector* cpu_energy = wiring.cpu_energy;

  UploadSink sink(*agent_id, node_name, options.upload_max_batch_bytes, std::move(sequencer).value(), &labels,
                  uploader.get(), cubins.get(), pods.get(), options.labels);
  AgentLoopOptions loop_options;
  loop_options.window_length = options.upload_interval;
  loop_options.stop_check = StopCheckOf(&stop_signals, &targets);
  AgentLoop loop(std::move(loop_options), std::move(collectors), &sink);

  std::unique_ptr<http::HttpServer> metrics_endpoint;
  if (!options.metrics_listen.empty()) {
    auto started = StartMetricsEndpoint(options.metrics_listen, node_name, &sink, uploader.get(), gpu_metrics,
                                        cpu_energy);
    if (!started.ok()) {
      loop.Stop();
      uploader->Stop();
      return ReportFailure(kExitUsage, started.status().WithContext("--metrics-listen " + options.metrics_listen));
    }
    metrics_endpoint = std::move(started).value();
    std::cerr << "warpscope-agent: Prometheus metrics on http://" << options.metrics_listen << "/metrics\n";
  }

  uploader->Start();
  cubins->Start();
  if (Status s = loop.Start(); !s.ok()) {
    if (metrics_endpoint) metrics_endpoint->Stop();
    cubins->Stop();
    uploader->Stop();
    return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  }
  std::cerr << "warpscope-agent: profiling "
            << (options.pids.empty() ? std::string("all processes")
                                     : "pid " + std::to_string(options.pids[0]) +
                                           (options.pids.size() > 1 ? " and others" : ""))
            << " at " << options.frequency_hz << " Hz on " << cpu->session().num_cpus() << " CPUs; uploading every "
            << FormatDuration(options.upload_interval) << " to " << options.server_url << " as agent " << *agent_id
            << " (node " << node_name << "; Ctrl-C or SIGTERM stops)\n";

  const AgentLoopResult result = loop.Run();
  if (!result.error.ok()) LOG_ERROR() << "sampling failed: " << result.error.message();
  if (metrics_endpoint) metrics_endpoint->Stop();
  loop.Stop();  // closes the CUDA socket: libraries go dormant
  if (pods) pods->Stop();
  // Sends what is queued while the server answers (bounded), spools the rest.
  uploader->Stop();
  cubins->Stop();
  const UploaderStats up = uploader->StatsFromAnyThread();
  std::cerr << "warpscope-agent: stopped (" << StopReasonOf(result.stop, options.pids.size()) << ") after "
            << FormatDuration(result.elapsed) << "; " << sink.samples() << " samples in " << sink.batches()
            << " batches: " << up.batches_sent << " uploaded, " << up.spooled << " waiting in the spool, "
            << up.batches_rejected << " rejected by the server, " << up.spool_dropped_batches + up.batches_dropped
            << " dropped\n";
  return result.error.ok() ? kExitOk : kExitError;
}

}  // namespace warpscope
