// warpscope-agent: the node agent. Today: `record` (one CPU profile to a file).
#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "agent/core/cli.h"
#include "agent/core/record.h"
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
