#include "agent/core/preflight.h"

#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "base/file_util.h"

namespace warpscope {

PreflightFacts ReadPreflightFacts(const PreflightPaths& paths) {
  PreflightFacts facts;
  facts.btf_path = paths.btf_path;
  auto status = ReadFileToString(paths.proc_root + "/self/status");
  if (status.ok()) {
    std::istringstream in(*status);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("CapEff:", 0) == 0) {
        facts.effective_caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      } else if (line.rfind("Seccomp:", 0) == 0) {
        facts.seccomp_mode = std::atoi(line.c_str() + 8);
      } else if (line.rfind("NSpid:", 0) == 0) {
        std::istringstream pids(line.substr(6));
        std::string pid;
        while (pids >> pid) ++facts.pid_ns.nspid_levels;
      }
    }
  }
  struct stat st {};
  facts.btf_present = ::stat(facts.btf_path.c_str(), &st) == 0;
  if (::stat((paths.proc_root + "/self/ns/pid").c_str(), &st) == 0) facts.pid_ns.ns_inode = st.st_ino;
  // /proc/2/stat: "2 (kthreadd) S 0 ...": the kernel's thread creator, parent 0.
  if (auto stat2 = ReadFileToString(paths.proc_root + "/2/stat"); stat2.ok()) {
    facts.pid_ns.kernel_thread_visible = stat2->rfind("2 (kthreadd) S 0 ", 0) == 0;
  }
  return facts;
}

std::string NotInHostPidNamespace(const PidNamespaceFacts& facts) {
  if (facts.ns_inode != 0 && facts.ns_inode != kHostPidNamespaceInode) {
    return "in pid namespace pid:[" + std::to_string(facts.ns_inode) + "], not the host's pid:[" +
           std::to_string(kHostPidNamespaceInode) + "]";
  }
  if (facts.nspid_levels > 1) {
    return "in " + std::to_string(facts.nspid_levels) + " nested pid namespaces (NSpid in /proc/self/status)";
  }
  if (!facts.kernel_thread_visible) {
    return "/proc shows no kernel threads (no kthreadd): it belongs to a pid namespace other than the host's";
  }
  return "";
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
