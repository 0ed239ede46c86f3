#include "agent/core/run.h"

#include <string.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "agent/core/lifecycle.h"
#include "agent/core/preflight.h"
#include "agent/core/profiling_session.h"
#include "agent/export/agent_identity.h"
#include "agent/export/ingest_batch_encoder.h"
#include "agent/export/uploader.h"
#include "agent/process/process_labels.h"
#include "base/duration.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;


// The token from --token or --token-file. Errors never contain the token.
StatusOr<std::string> ResolveToken(const RunOptions& options) {
  if (options.token_file.empty()) return options.token;
  auto text = ReadFileToString(options.token_file);
  if (!text.ok()) return text.status().WithContext("--token-file");
  auto token = TokenFromFileText(*text);
  if (!token.ok()) return token.status().WithContext("--token-file " + options.token_file);
  return token;
}

// Everything one upload window needs to become a batch. Sampling thread only.
class WindowEncoder {
 public:
  WindowEncoder(std::string agent_id, std::string node, BatchSequencer sequencer, ProcessLabelCache* labels,
                ProfilingSession* session, Uploader* uploader)
      : agent_id_(std::move(agent_id)),
        node_(std::move(node)),
        sequencer_(std::move(sequencer)),
        labels_(labels),
        session_(session),
        uploader_(uploader) {}

  // Finishes the window's profile, encodes it and hands it to the uploader.
  // A window that cannot be encoded is logged and skipped, never fatal.
  void FinishWindow(ProfileBuilder* builder, int64_t duration_nanos) {
    session_->AddCounters(builder);
    const UploaderStats up = uploader_->StatsFromAnyThread();
    builder->SetCounter("spool_dropped_batches", up.spool_dropped_batches);
    builder->SetCounter("upload_batches_sent", up.batches_sent);
    builder->SetCounter("upload_batches_rejected", up.batches_rejected);
    builder->SetCounter("upload_batches_dropped", up.batches_dropped);
    builder->SetCounter("upload_send_failures", up.send_failures);
    builder->SetCounter("upload_auth_failures", up.auth_failures);
    builder->SetCounter("encode_errors", encode_errors_);
    const Profile profile = builder->Finish(duration_nanos);

    ProcessLabelMap labels;
    for (const ProfileSample& sample : profile.samples) {
      if (!labels.count(sample.labels.pid)) labels.emplace(sample.labels.pid, labels_->Get(sample.labels.pid));
    }
    labels_->EndWindow();
    auto batch = EncodeIngestBatch(profile, {agent_id_, 0, node_}, labels);
    if (!batch.ok()) {
      ++encode_errors_;
      LOG_ERROR() << "window skipped: " << batch.status().message();
      return;
    }
    // Sequences are allocated only for batches that will be posted.
    const uint64_t sequence = sequencer_.Next();
    batch->set_sequence(sequence);
    StatusOr<std::string> body = CompressIngestBatch(*batch);
    if (!body.ok()) {
      ++encode_errors_;
      LOG_ERROR() << "window skipped: " << body.status().message();
      return;
    }
    int64_t samples = 0;
    for (const v1::Sample& s : batch->samples()) samples += s.value();
    LOG_DEBUG() << "batch " << sequence << ": " << samples << " samples, " << batch->samples_size() << " rows, "
                << batch->stacks_size() << " stacks, " << batch->label_sets_size() << " series, " << body->size()
                << " bytes";
    ++batches_;
    samples_ += samples;
    uploader_->PostBatch(sequence, std::move(*body));
  }

  uint64_t batches() const { return batches_; }
  uint64_t samples() const { return samples_; }

 private:
  const std::string agent_id_;
  const std::string node_;
  BatchSequencer sequencer_;
  ProcessLabelCache* labels_;
  ProfilingSession* session_;
  Uploader* uploader_;
  uint64_t encode_errors_ = 0;
  uint64_t batches_ = 0;
  uint64_t samples_ = 0;
};

}  // namespace

int RunContinuous(const RunOptions& options, const std::string& node_name) {
  if (Status s = CheckCanProfile(ReadPreflightFacts()); !s.ok()) {
    return ReportFailure(ExitCodeForStartFailure(s, kExitUnsupported), s);
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
  auto session_or = ProfilingSession::Create(session_options);
  if (!session_or.ok()) {
    const Status& s = session_or.status();
    return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  }
  std::unique_ptr<ProfilingSession> session = std::move(session_or).value();

  ProcessLabelCache labels{ProcFs()};
  session->SetProcessEventObserver([&labels](const ws_proc_event& event) {
    switch (event.type) {
      case WS_PROC_SEEN: (void)labels.Get(event.pid); break;  // read while the process is alive
      case WS_PROC_EXEC:
        labels.OnExec(event.pid);
        (void)labels.Get(event.pid);
        break;
      case WS_PROC_EXIT: labels.OnExit(event.pid); break;
      default: break;
    }
  });
  WindowEncoder encoder(*agent_id, node_name, std::move(sequencer).value(), &labels, session.get(),
                        uploader.get());

  uploader->Start();
  if (Status s = session->Start(); !s.ok()) {
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
  int64_t window_start_unix = UnixNanosNow();
  std::string stop_reason;
  int exit_code = kExitOk;
  while (stop_reason.empty()) {
    const auto window_start = Clock::now();
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
    const int64_t duration = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - window_start).count();
    encoder.FinishWindow(builder.get(), duration);
    window_start_unix += duration;
  }
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
