#include "agent/core/cli.h"

#include <charconv>

#include "base/duration.h"

namespace warpscope {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

StatusOr<uint64_t> ParseUnsigned(const std::string& flag, const std::string& text, uint64_t max) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v > max) {
    return InvalidArgumentError(flag + " expects a number up to " + std::to_string(max) + ", got '" + text + "'");
  }
  return v;
}

Status AddPids(const std::string& text, std::vector<uint32_t>* pids) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ASSIGN_OR_RETURN(uint64_t pid, ParseUnsigned("--pid", part, 0x3fffffff));
    if (pid == 0) return InvalidArgumentError("--pid 0 is the idle task; use --all for the whole machine");
    pids->push_back(static_cast<uint32_t>(pid));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RecordOptions> ParseRecordArgs(const std::vector<std::string>& args) {
  RecordOptions o;
  bool format_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_inline_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline_value = true;
    }
    auto take_value = [&]() -> StatusOr<std::string> {
      if (has_inline_value) return value;
      if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value");
      return args[++i];
    };
    if (flag == "--all" || flag == "-a") {
      o.all = true;
    } else if (flag == "--verbose" || flag == "-v") {
      o.verbose = true;
    } else if (flag == "--frame-pointers") {
      o.frame_pointers_only = true;
    } else if (flag == "--no-python") {
      o.python_frames = false;
    } else if (flag == "--pid" || flag == "-p") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      RETURN_IF_ERROR(AddPids(v, &o.pids));
    } else if (flag == "--duration" || flag == "-d") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--duration");
      if (d->count() <= 0) return InvalidArgumentError("--duration must be positive");
      o.duration = *d;
    } else if (flag == "--frequency" || flag == "-F") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      ASSIGN_OR_RETURN(uint64_t hz, ParseUnsigned("--frequency", v, 10000));
      if (hz == 0) return InvalidArgumentError("--frequency must be at least 1 Hz");
      o.frequency_hz = static_cast<uint32_t>(hz);
    } else if (flag == "--output" || flag == "-o") {
      ASSIGN_OR_RETURN(o.output, take_value());
      if (o.output.empty()) return InvalidArgumentError("--output needs a path");
    } else if (flag == "--format" || flag == "-f") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      if (v == "pprof") o.format = OutputFormat::kPprof;
      else if (v == "collapsed" || v == "folded") o.format = OutputFormat::kCollapsed;
      else return InvalidArgumentError("--format must be pprof or collapsed, got '" + v + "'");
      format_given = true;
    } else if (flag == "--top") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("--top", v, 100000));
      o.top = n;
    } else if (flag == "--drain-interval") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--drain-interval");
      o.drain_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else {
      return InvalidArgumentError("unknown flag '" + args[i] + "' (see: warpscope-agent record --help)");
    }
  }
  if (o.all && !o.pids.empty()) return InvalidArgumentError("choose either --pid or --all, not both");
  if (!o.all && o.pids.empty()) return InvalidArgumentError("choose what to record: --pid PID or --all");
  if (!format_given && (EndsWith(o.output, ".folded") || EndsWith(o.output, ".collapsed"))) {
    o.format = OutputFormat::kCollapsed;
  }
  if (o.output.empty()) o.output = o.format == OutputFormat::kPprof ? "cpu.pb.gz" : "cpu.folded";
  return o;
}

std::string RecordUsage() {
  return R"(Usage: warpscope-agent record (--pid PID[,PID...] | --all) [options]

Samples CPU stacks (user and kernel) with eBPF and writes a profile.

  -p, --pid PID[,PID...]   record these processes (repeatable)
  -a, --all                record every process on the machine
  -d, --duration D         how long to record: 10, 10s, 500ms, 2m (default 10s)
  -F, --frequency HZ       samples per second per CPU (default 99)
  -o, --output PATH        output file (default cpu.pb.gz, or cpu.folded for collapsed)
  -f, --format FMT         pprof (gzipped protobuf) or collapsed (folded stacks);
                           default: from the output name (.folded/.collapsed), else pprof
      --top N              print the N hottest functions when done (default 10, 0 = none)
      --drain-interval D   how often samples are read from the kernel (default 1s)
      --frame-pointers     walk user stacks with frame pointers only, not .eh_frame
                           (no Python frames either)
      --no-python          no CPython frames: show the interpreter's native frames
  -v, --verbose            debug logging

Recording stops early when every --pid has exited, or on Ctrl-C; what was
recorded is written either way.

Exit codes: 0 ok, 1 runtime error, 2 bad arguments or output path,
3 missing privileges (CAP_BPF, CAP_PERFMON), 4 unsupported kernel (no BTF),
5 no such process.
)";
}

std::string MainUsage() {
  return R"(Usage: warpscope-agent <command> [options]

Commands:
  record        record CPU profiles of processes or the whole machine (see: record --help)
  probe-stack   whole user stacks at the entry of a function (a uprobe), e.g. cuLaunchKernel
  unwind-table  build the .eh_frame unwind table of binaries and print its size and build time
  version       print the version
  help          print this help
)";
}

}  // namespace warpscope
