#include "agent/core/record.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "agent/collectors/cpu/cpu_collector.h"
#include "agent/unwind/bpf_features.h"
#include "agent/core/lifecycle.h"
#include "agent/core/preflight.h"
#include "agent/export/file_sink.h"
#include "agent/pipeline/agent_loop.h"
#include "base/duration.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "model/formats/top_functions.h"

namespace warpscope {
namespace {

// One line per process (most samples first) into the profile's comments, and
// a short summary for stderr: how many user stacks reached their root, and why
// the others stopped.
std::string SummarizeUnwinding(const AssemblerStats& stats, Profile* profile) {
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
    profile->comments.push_back(line.str());
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
  if (!options.unwinder_driver.empty()) {
    if (Status s = SetUnwinderDriverOverride(options.unwinder_driver); !s.ok()) return ReportFailure(kExitUsage, s);
  }
  if (Status s = CheckUnwinderDriver(); !s.ok()) return ReportFailure(kExitUnsupported, s);
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
  session_options.off_cpu.enabled = options.off_cpu;
  session_options.off_cpu.min_wait = options.off_cpu_min_wait;
  auto cpu_or = CpuCollector::Create(session_options);
  if (!cpu_or.ok()) return ReportFailure(ExitCodeForStartFailure(cpu_or.status(), kExitError), cpu_or.status());
  CpuCollector* cpu = cpu_or->get();
  if (!options.pids.empty()) cpu->LeadWithMainMappingOf(options.pids[0]);
  StopSignals stop_signals;

  // One window, the whole recording, into the file.
  const FileSink::Types types = !options.off_cpu ? FileSink::Types::kCpu
                                : options.cpu    ? FileSink::Types::kCpuAndOffCpu
                                                 : FileSink::Types::kOffCpu;
  FileSink sink(options.output, options.format, types);
  AgentLoopOptions loop_options;
  loop_options.window_length = options.duration;
  loop_options.single_window = true;
  loop_options.stop_check = StopCheckOf(&stop_signals, &targets);
  std::vector<std::unique_ptr<Collector>> collectors;
  collectors.push_back(std::move(cpu_or).value());
  AgentLoop loop(std::move(loop_options), std::move(collectors), &sink);
  if (Status s = loop.Start(); !s.ok()) return ReportFailure(ExitCodeForStartFailure(s, kExitError), s);
  std::cerr << "warpscope-agent: recording "
            << (options.all ? std::string("all processes") : "pid " + std::to_string(options.pids[0]) +
                                                                (options.pids.size() > 1 ? " and others" : ""))
            << " at " << options.frequency_hz << " Hz on " << cpu->session().num_cpus() << " CPUs for "
            << FormatDuration(options.duration) << " (Ctrl-C stops early)\n";

  const AgentLoopResult result = loop.Run();
  loop.Stop();
  if (!result.error.ok()) return ReportFailure(kExitError, result.error);
  std::string stop_reason = "duration reached";
  if (result.stop.cause == StopCause::kSignal) stop_reason = "interrupted";
  if (result.stop.cause == StopCause::kTargetsExited) {
    stop_reason = options.pids.size() == 1 ? "process exited" : "all processes exited";
  }

  const ProfilingSession& session = cpu->session();
  const CpuSamplerStats stats = session.sampler_stats();
  Profile& profile = *sink.profile();
  profile.comments.push_back("warpscope-agent record, " + std::to_string(options.frequency_hz) +
                             " Hz, stop: " + stop_reason);
  const std::string unwind_summary = SummarizeUnwinding(session.assembler_stats(), &profile);
  for (const ProfileCounter& c : profile.counters) LOG_DEBUG() << "counter " << c.name << "=" << c.value;
  if (Status s = sink.Write(); !s.ok()) return ReportFailure(kExitError, s);

  const uint64_t drops = stats[WS_STAT_DROP_COUNTS_FULL] + stats[WS_STAT_DROP_STACKS_FULL] +
                         stats[WS_STAT_DROP_PROC_EVENTS];
  std::cerr << "warpscope-agent: " << stop_reason << " after " << FormatDuration(result.elapsed) << "; "
            << session.assembler_stats().samples << " samples written to " << options.output << " ("
            << profile.samples.size() << " distinct stacks, " << drops << " dropped";
  if (drops) {
    std::cerr << ": counts map full " << stats[WS_STAT_DROP_COUNTS_FULL] << ", stacks map full "
              << stats[WS_STAT_DROP_STACKS_FULL] << ", process events " << stats[WS_STAT_DROP_PROC_EVENTS];
  }
  std::cerr << ")\n";
  if (options.off_cpu) {
    int64_t blocked_ns = 0;
    for (const ProfileSample& s : profile.samples) blocked_ns += s.count;  // off_cpu is the first value
    const uint64_t lost = stats[WS_STAT_OFFCPU_RATE_LIMITED] + stats[WS_STAT_OFFCPU_PENDING_FULL] +
                          stats[WS_STAT_OFFCPU_DROP_COUNTS_FULL];
    std::cerr << "warpscope-agent: off-CPU " << FormatDuration(std::chrono::nanoseconds(blocked_ns))
              << " blocked, from " << stats[WS_STAT_OFFCPU_RECORDED] << " timed waits of "
              << stats[WS_STAT_OFFCPU_SWITCHES] << " (" << lost << " lost";
    if (lost) {
      std::cerr << ": rate bound " << stats[WS_STAT_OFFCPU_RATE_LIMITED] << ", waits map full "
                << stats[WS_STAT_OFFCPU_PENDING_FULL] << ", counts map full "
                << stats[WS_STAT_OFFCPU_DROP_COUNTS_FULL];
    }
    std::cerr << ")\n";
  }
  if (!unwind_summary.empty()) std::cerr << unwind_summary;
  // The summary counts samples: CPU profiles only.
  if (options.top > 0 && !options.off_cpu && !profile.samples.empty()) {
    std::cout << FormatTopFunctions(profile, options.top);
  }
  return kExitOk;
}

}  // namespace warpscope
