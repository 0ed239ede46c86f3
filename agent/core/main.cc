// warpscope-agent: the node agent: `record` (one CPU profile to a file) and
// `run` (continuous profiling uploaded to warpscope-server).
#include <bpf/libbpf.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "agent/core/cli.h"
#include "agent/core/doctor.h"
#include "agent/core/probe_stack.h"
#include "agent/core/record.h"
#include "agent/core/run.h"
#include "agent/process/node_name.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/logging.h"

namespace {

// libbpf's messages go through our logger: warnings stay visible, the rest
// (including verifier logs) only with --verbose.
int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG && warpscope::MinLogLevel() > warpscope::LogLevel::kDebug) return 0;
  char buf[4096];
  int n = vsnprintf(buf, sizeof(buf), format, args);
  std::string text(buf, n > 0 ? std::min<size_t>(n, sizeof(buf) - 1) : 0);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (level == LIBBPF_WARN) {
    LOG_WARNING() << "libbpf: " << text;
  } else {
    LOG_DEBUG() << "libbpf: " << text;
  }
  return n;
}

// `warpscope-agent unwind-table FILE...`: builds the .eh_frame unwind table of
// each binary as the agent would and prints its size and build time. For
// diagnosing a binary whose stacks stop early, and for the benchmarks.
int PrintUnwindTable(const std::vector<std::string>& paths) {
  using namespace warpscope;
  if (paths.empty()) {
    std::cerr << "usage: warpscope-agent unwind-table FILE...\n";
    return kExitUsage;
  }
  int rc = kExitOk;
  for (const std::string& path : paths) {
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<UnwindTable> table = BuildUnwindTable(path, AgentUnwindTableOptions());
    StatusOr<UnwindPageIndex> index = table.ok() ? BuildPageIndex(*table) : StatusOr<UnwindPageIndex>(table.status());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!index.ok()) {
      std::cerr << path << ": " << index.status().ToString() << "\n";
      rc = kExitError;
      continue;
    }
    const UnwindTableStats& s = table->stats;
    const uint64_t bytes = table->row_count() * sizeof(ws_unwind_entry) +
                           index->size() * (sizeof(ws_unwind_page_key) + sizeof(ws_unwind_page));
    std::printf("%s: %llu rows (%llu before merging), %zu pages, %.1f MiB in BPF maps, built in %.0f ms; "
                "%llu FDEs (%llu skipped), rows: %llu gap, %llu invalid, %llu plt, %llu end, %llu signal\n",
                path.c_str(), static_cast<unsigned long long>(s.rows),
                static_cast<unsigned long long>(s.rows_before_merge), index->size(), bytes / 1048576.0, ms,
                static_cast<unsigned long long>(s.fdes), static_cast<unsigned long long>(s.fdes_skipped),
                static_cast<unsigned long long>(s.gap_rows), static_cast<unsigned long long>(s.invalid_rows),
                static_cast<unsigned long long>(s.plt_rows), static_cast<unsigned long long>(s.end_rows),
                static_cast<unsigned long long>(s.signal_rows));
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace warpscope;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << MainUsage();
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "version" || args[0] == "--version") {
    std::cout << "warpscope-agent " << WARPSCOPE_VERSION << "\n";
    return kExitOk;
  }
  if (args[0] == "probe-stack") {
    libbpf_set_print(LibbpfPrint);
    return RunProbeStack(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (args[0] == "unwind-table") return PrintUnwindTable(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args[0] == "doctor") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const std::string& a : rest) {
      if (a == "--help" || a == "-h") {
        std::cout << DoctorUsage();
        return kExitOk;
      }
    }
    auto options = ParseDoctorArgs(rest);
    if (!options.ok()) {
      std::cerr << "warpscope-agent doctor: " << options.status().message() << "\n\n" << DoctorUsage();
      return kExitUsage;
    }
    SetMinLogLevel(options->verbose ? LogLevel::kDebug : LogLevel::kWarning);
    return RunDoctor(*options);
  }
  if (args[0] == "run") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const std::string& a : rest) {
      if (a == "--help" || a == "-h") {
        std::cout << RunUsage();
        return kExitOk;
      }
    }
    auto options = ParseRunArgs(rest);
    if (!options.ok()) {
      std::cerr << "warpscope-agent run: " << options.status().message() << "\n\n" << RunUsage();
      return kExitUsage;
    }
    SetMinLogLevel(options->verbose ? LogLevel::kDebug : LogLevel::kInfo);
    libbpf_set_print(LibbpfPrint);
    const std::string node =
        options->node_name.empty() ? NodeName(std::getenv(kNodeNameEnvVar)) : options->node_name;
    return RunContinuous(*options, node);
  }
  if (args[0] != "record") {
    std::cerr << "warpscope-agent: unknown command '" << args[0] << "'\n\n" << MainUsage();
    return kExitUsage;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const std::string& a : rest) {
    if (a == "--help" || a == "-h") {
      std::cout << RecordUsage();
      return kExitOk;
    }
  }
  auto options = ParseRecordArgs(rest);
  if (!options.ok()) {
    std::cerr << "warpscope-agent record: " << options.status().message() << "\n\n" << RecordUsage();
    return kExitUsage;
  }
  SetMinLogLevel(options->verbose ? LogLevel::kDebug : LogLevel::kInfo);
  libbpf_set_print(LibbpfPrint);
  return RunRecord(*options);
}
