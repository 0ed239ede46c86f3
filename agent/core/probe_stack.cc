#include "agent/core/probe_stack.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <iostream>
#include <map>

#include "agent/collectors/gpu_time/uprobe_stack_collector.h"
#include "agent/core/cli.h"
#include "agent/core/preflight.h"
#include "agent/collectors/cpu/profile_assembler.h"
#include "model/frame_names.h"
#include "agent/symbolize/symbolizer.h"
#include "agent/unwind/python/python_processes.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/duration.h"
#include "base/logging.h"

namespace warpscope {
namespace {

constexpr char kUsage[] = R"(Usage: warpscope-agent probe-stack --pid PID --uprobe BINARY:SYMBOL [options]

Captures whole user stacks at every entry of SYMBOL in BINARY (a uprobe) in
process PID, unwound with the .eh_frame unwinder, and prints the most frequent.

  -p, --pid PID            the process to probe
      --uprobe BIN:SYM     e.g. /usr/local/nvidia/lib64/libcuda.so.1:cuLaunchKernel
  -d, --duration D         how long to probe (default 5s)
      --sample-every N     unwind one hit in N per CPU (default 1)
      --top N              stacks to print (default 3)
      --unwind-table-mb N  unwind-table budget in MiB (default 64)
)";

struct ProbeOptions {
  uint32_t pid = 0;
  std::string binary, symbol;
  std::chrono::nanoseconds duration = std::chrono::seconds(5);
  uint32_t sample_every = 1;
  size_t top = 3;
  uint64_t unwind_table_mb = 64;
};

StatusOr<ProbeOptions> Parse(const std::vector<std::string>& args) {
  ProbeOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value (or is unknown)");
    const std::string& v = args[++i];
    if (flag == "--pid" || flag == "-p") {
      o.pid = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    } else if (flag == "--uprobe") {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) {
        return InvalidArgumentError("--uprobe expects BINARY:SYMBOL, got '" + v + "'");
      }
      o.binary = v.substr(0, colon);
      o.symbol = v.substr(colon + 1);
    } else if (flag == "--duration" || flag == "-d") {
      ASSIGN_OR_RETURN(o.duration, ParseDuration(v));
    } else if (flag == "--sample-every") {
      o.sample_every = static_cast<uint32_t>(std::max(1ul, std::strtoul(v.c_str(), nullptr, 10)));
    } else if (flag == "--top") {
      o.top = std::strtoul(v.c_str(), nullptr, 10);
    } else if (flag == "--unwind-table-mb") {
      o.unwind_table_mb = std::max(1ul, std::strtoul(v.c_str(), nullptr, 10));
    } else {
      return InvalidArgumentError("unknown flag '" + flag + "'");
    }
  }
  if (o.pid == 0) return InvalidArgumentError("--pid is required");
  if (o.binary.empty()) return InvalidArgumentError("--uprobe BINARY:SYMBOL is required");
  return o;
}

}  // namespace

int RunProbeStack(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    }
  }
  auto parsed = Parse(args);
  if (!parsed.ok()) {
    std::cerr << "warpscope-agent probe-stack: " << parsed.status().message() << "\n\n" << kUsage;
    return kExitUsage;
  }
  const ProbeOptions& o = *parsed;
  if (Status s = CheckCanProfile(ReadPreflightFacts()); !s.ok()) {
    std::cerr << "warpscope-agent: " << s.message() << "\n";
    return s.code() == StatusCode::kPermissionDenied ? kExitPermission : kExitUnsupported;
  }
  Symbolizer symbolizer{ProcFs()};
  (void)symbolizer.Init();
  symbolizer.OnProcessSeen(o.pid);
  const ProcessInfo* info = symbolizer.processes().Find(o.pid);
  if (info == nullptr) {
    std::cerr << "warpscope-agent: no process with pid " << o.pid << "\n";
    return kExitNoSuchProcess;
  }
  const UnwindMapSizes sizes = ComputeUnwindMapSizes(o.unwind_table_mb << 20);
  auto collector = UprobeStackCollector::Create(o.sample_every, sizes);
  if (!collector.ok()) {
    std::cerr << "warpscope-agent: " << collector.status().message() << "\n";
    return kExitError;
  }
  UnwindTableLoader unwinder((*collector)->unwind_map_fds(), sizes, ProcFs());
  PythonProcesses python((*collector)->unwind_map_fds().py_procs, ProcFs());
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = unwinder.Describe(*info, python.Describe(*info)); !s.ok()) {
    std::cerr << "warpscope-agent: " << s.message() << "\n";
    return kExitError;
  }
  const double describe_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const UnwindLoaderStats& u = unwinder.stats();
  std::cerr << "warpscope-agent: described pid " << o.pid << " in " << static_cast<int>(describe_ms) << " ms: "
            << u.tables_built << " unwind tables (" << u.tables_failed << " without usable CFI), " << u.rows_used
            << " rows = " << u.rows_used * 8 / 1048576.0 << " MiB; slowest " << u.slowest_binary << " "
            << static_cast<int>(u.build_ms_max) << " ms\n";
  StatusOr<uint64_t> attached = (*collector)->AttachFromAnyThread(o.pid, o.binary, o.symbol);
  if (!attached.ok()) {
    std::cerr << "warpscope-agent: " << attached.status().message() << "\n";
    return kExitError;
  }
  std::map<std::vector<uint64_t>, uint64_t> stacks;
  uint64_t by_end[WS_END_MAX] = {};
  // The first calls' integer arguments (e.g. a probe's correlation id).
  std::vector<std::array<uint64_t, 3>> first_args;
  const auto deadline = std::chrono::steady_clock::now() + o.duration;
  const auto on_stack = [&](const ws_uprobe_stack_event& e) {
    if (first_args.size() < 5) first_args.push_back({e.args[0], e.args[1], e.args[2]});
    const uint32_t len = std::min<uint32_t>(e.stack.len, WS_MAX_STACK_FRAMES);
    auto [it, inserted] = stacks.try_emplace(std::vector<uint64_t>(e.stack.frames, e.stack.frames + len), 0);
    ++it->second;
    if (inserted && (e.stack.flags & WS_STACK_PYTHON)) python.Prefetch(e.pid, reinterpret_cast<const uint64_t*>(e.stack.frames), len);
    const uint32_t end = ws_stack_end(e.stack.flags);
    if (end < WS_END_MAX) ++by_end[end];
  };
  while (std::chrono::steady_clock::now() < deadline) {
    if (Status s = (*collector)->Poll(std::chrono::milliseconds(100), on_stack); !s.ok()) {
      std::cerr << "warpscope-agent: " << s.message() << "\n";
      return kExitError;
    }
  }
  // Detached first, then the ring buffer read to its end: a call counted
  // just before the deadline has its stack read too.
  if (Status s = (*collector)->DetachFromAnyThread(*attached); !s.ok()) {
    std::cerr << "warpscope-agent: " << s.message() << "\n";
  }
  if (Status s = (*collector)->Consume(on_stack); !s.ok()) {
    std::cerr << "warpscope-agent: " << s.message() << "\n";
    return kExitError;
  }
  const UprobeStackStats stats = (*collector)->ReadStats();
  uint64_t captured = 0;
  for (uint64_t n : by_end) captured += n;
  std::cout << o.symbol << ": " << stats.values[WS_UPROBE_HITS] << " calls, " << captured << " stacks captured ("
            << stats.values[WS_UPROBE_DROPPED] << " dropped, " << stats.values[WS_UPROBE_NOT_DESCRIBED]
            << " before the process was described), " << stacks.size() << " distinct\n";
  std::cout << "arguments of the first calls:";
  for (const auto& a : first_args) std::cout << " (" << a[0] << ", " << a[1] << ", " << a[2] << ")";
  std::cout << "\nstack ends:";
  for (uint32_t end = 0; end < WS_END_MAX; ++end) {
    if (by_end[end]) std::cout << " " << StackEndName(end) << "=" << by_end[end];
  }
  std::cout << "\n";
  std::vector<std::pair<uint64_t, const std::vector<uint64_t>*>> sorted;
  for (const auto& [frames, n] : stacks) sorted.emplace_back(n, &frames);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < std::min(o.top, sorted.size()); ++i) {
    const auto& frames = *sorted[i].second;
    std::cout << "\nstack " << i + 1 << " (" << sorted[i].first << " calls, " << frames.size() << " frames):\n";
    for (size_t f = 0, n = 0; f < frames.size(); ++f, ++n) {
      if ((frames[f] & WS_PY_FRAME_TAG) && f + 1 < frames.size()) {
        const PythonFrame py = python.ResolveSlots(o.pid, frames[f], frames[f + 1]);
        std::cout << "  #" << n << " " << py.name << "  [" << py.filename << ":" << py.line << "]\n";
        ++f;
        continue;
      }
      SymbolizedFrame sym = symbolizer.SymbolizeUser(o.pid, frames[f], f > 0);
      std::cout << "  #" << n << " " << sym.functions.front().name << "  ["
                << (sym.has_mapping ? BinaryBasename(sym.mapping.filename) : "?") << "]\n";
    }
  }
  return kExitOk;
}

}  // namespace warpscope
