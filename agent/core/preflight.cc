#include "agent/core/preflight.h"

#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "base/file_util.h"

namespace warpscope {

PreflightFacts ReadPreflightFacts() {
  PreflightFacts facts;
  auto status = ReadFileToString("/proc/self/status");
  if (status.ok()) {
    std::istringstream in(*status);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("CapEff:", 0) == 0) {
        facts.effective_caps = std::strtoull(line.c_str() + 7, nullptr, 16);
        break;
      }
    }
  }
  struct stat st {};
  facts.btf_present = ::stat(facts.btf_path.c_str(), &st) == 0;
  return facts;
}

Status CheckCanProfile(const PreflightFacts& facts) {
  auto has = [&](int cap) { return (facts.effective_caps >> cap) & 1; };
  if (!has(kCapSysAdmin)) {
    std::string missing;
    if (!has(kCapBpf)) missing += "CAP_BPF";
    if (!has(kCapPerfmon)) missing += std::string(missing.empty() ? "" : ", ") + "CAP_PERFMON";
    if (!missing.empty()) {
      return PermissionDeniedError("warpscope-agent needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); missing " +
                                   missing + ". Run it as root (sudo) or grant them with setcap.");
    }
  }
  if (!facts.btf_present) {
    return FailedPreconditionError("this kernel has no BTF (" + facts.btf_path +
                                   " is missing); warpscope needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
  }
  return Status::Ok();
}

}  // namespace warpscope
