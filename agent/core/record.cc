#include "agent/core/record.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "agent/core/lifecycle.h"
#include "agent/core/preflight.h"
#include "agent/core/profiling_session.h"
#include "agent/export/collapsed_writer.h"
#include "agent/export/pprof_writer.h"
#include "agent/export/top_functions.h"
#include "base/duration.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;


// One line per process (most samples first) into the profile's comments, and
// a short summary for stderr: how many user stacks reached their root, and why
// the others stopped.
std::string SummarizeUnwinding(const AssemblerStats& stats, ProfileBuilder* builder) {
  std::vector<std::pair<uint32_t, const UnwindOutcome*>> procs;
  uint64_t total = 0, root = 0;
  for (const auto& [pid, outcome] : stats.unwind_by_pid) {
    procs.emplace_back(pid, &outcome);
    total += outcome.samples;
    root += outcome.by_end[WS_END_ROOT];
  }
  std::sort(procs.begin(), procs.end(),
            [](const auto& a, const auto& b) { return a.second->samples > b.second->samples; });
  std::ostringstream summary;
  if (total > 0) {
    summary << "warpscope-agent: " << std::fixed << std::setprecision(1) << 100.0 * root / total
            << "% of user stacks reached their root";
  }
  for (size_t i = 0; i < procs.size(); ++i) {
    const auto& [pid, o] = procs[i];
    std::ostringstream line;
    line << "unwind pid=" << pid << " comm=" << o->comm << " samples=" << o->samples;
    for (uint32_t end = 0; end < WS_END_MAX; ++end) {
      if (o->by_end[end]) line << " " << StackEndName(end) << "=" << o->by_end[end];
    }
    builder->AddComment(line.str());
    if (i < 3) {
      summary << (i == 0 ? " (" : ", ") << o->comm << "[" << pid << "] " << std::fixed << std::setprecision(1)
              << 100.0 * o->RootShare() << "%";
      if (i + 1 == std::min<size_t>(procs.size(), 3)) summary << ")";
    }
  }
  if (total > 0) summary << "; details: go tool pprof -comments\n";
  return summary.str();
}

}  // namespace

int RunRecord(const RecordOptions& options) {
  if (Status s = CheckCanProfile(ReadPreflightFacts()); !s.ok()) {
    return ReportFailure(ExitCodeForStartFailure(s, kExitUnsupported), s);
  }
  if (Status s = CheckWritable(options.output); !s.ok()) return ReportFailure(kExitUsage, s);

  TargetWatch targets;
  for (uint32_t pid : options.pids) {
    if (Status s = targets.Add(pid); !s.ok()) {
      return ReportFailure(s.code() == StatusCode::kNotFound ? kExitNoSuchProcess : kExitError, s);
    }
  }

  ProfilingSessionOptions session_options;
  session_options.pids = options.pids;
  session_options.frequency_hz = options.frequency_hz;
  session_options.drain_interval = options.drain_interval;
  session_options.frame_pointers_only = options.frame_pointers_only;
  session_options.python_frames = options.python_frames;
  auto session_or = ProfilingSession::Create(session_options);
  if (!session_or.ok()) {
    const Status& s = session_or.status();
    return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  }
  std::unique_ptr<ProfilingSession> session = std::move(session_or).value();

  ProfileBuilder builder(UnixNanosNow(), session->period_nanos(), options.frequency_hz);
  // pprof tools name a profile after its first mapping: make it the target's executable.
  if (!options.pids.empty()) {
    if (auto main_binary = session->symbolizer().MainExecutableMapping(options.pids[0])) {
      builder.InternMapping(*main_binary);
    }
  }
  session->SetBuilder(&builder);
  StopSignals stop_signals;

  if (Status s = session->Start(); !s.ok()) {
    return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  }
  const size_t num_cpus = session->num_cpus();
  const auto start = Clock::now();
  const auto deadline = start + options.duration;
  std::cerr << "warpscope-agent: recording "
            << (options.all ? std::string("all processes") : "pid " + std::to_string(options.pids[0]) +
                                                                (options.pids.size() > 1 ? " and others" : ""))
            << " at " << options.frequency_hz << " Hz on " << num_cpus << " CPUs for "
            << FormatDuration(options.duration) << " (Ctrl-C stops early)\n";

  std::string stop_reason = "duration reached";
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (stop_signals.Received()) {
      stop_reason = "interrupted";
      break;
    }
    if (!targets.empty() && targets.AllExited()) {
      stop_reason = options.pids.size() == 1 ? "process exited" : "all processes exited";
      break;
    }
    if (Status s = session->Poll(deadline); !s.ok()) return ReportFailure(kExitError, s);
  }
  const auto elapsed = Clock::now() - start;
  if (Status s = session->StopAndDrainAll(); !s.ok()) return ReportFailure(kExitError, s);

  const CpuSamplerStats stats = session->sampler_stats();
  session->AddCounters(&builder);
  builder.AddComment("warpscope-agent record, " + std::to_string(options.frequency_hz) + " Hz, stop: " + stop_reason);
  const std::string unwind_summary = SummarizeUnwinding(session->assembler_stats(), &builder);
  Profile profile =
      builder.Finish(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  for (const ProfileCounter& c : profile.counters) LOG_DEBUG() << "counter " << c.name << "=" << c.value;

  StatusOr<std::string> encoded = options.format == OutputFormat::kPprof ? EncodePprofGzip(profile)
                                                                         : StatusOr<std::string>(EncodeCollapsed(profile));
  if (!encoded.ok()) return ReportFailure(kExitError, encoded.status());
  if (Status s = WriteFileAtomically(options.output, *encoded); !s.ok()) return ReportFailure(kExitError, s);

  const uint64_t drops = stats[WS_STAT_DROP_COUNTS_FULL] + stats[WS_STAT_DROP_STACKS_FULL] +
                         stats[WS_STAT_DROP_PROC_EVENTS];
  std::cerr << "warpscope-agent: " << stop_reason << " after " << FormatDuration(elapsed) << "; "
            << session->assembler_stats().samples << " samples written to " << options.output << " ("
            << profile.samples.size() << " distinct stacks, " << drops << " dropped";
  if (drops) {
    std::cerr << ": counts map full " << stats[WS_STAT_DROP_COUNTS_FULL] << ", stacks map full "
              << stats[WS_STAT_DROP_STACKS_FULL] << ", process events " << stats[WS_STAT_DROP_PROC_EVENTS];
  }
  std::cerr << ")\n";
  if (!unwind_summary.empty()) std::cerr << unwind_summary;
  if (options.top > 0 && !profile.samples.empty()) std::cout << FormatTopFunctions(profile, options.top);
  return kExitOk;
}

}  // namespace warpscope
