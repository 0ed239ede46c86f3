// Checks, before any BPF work, that this process can profile: the right
// capabilities and a kernel with BTF. Facts are read into a value so tests can
// feed any combination (CONTRIBUTING.md, "State and threads": features are values, not globals).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace warpscope {

// Where the facts are read (tests and `doctor` point these at fixtures).
struct PreflightPaths {
  std::string proc_root = "/proc";
  std::string btf_path = "/sys/kernel/btf/vmlinux";
};

// Whether this process sees the host's processes. The agent reads
// /proc/<pid>/maps and the binaries of every process the kernel samples,
// named by their pids in the host's (initial) pid namespace: from another
// namespace those paths do not exist and every stack stays unnamed.
struct PidNamespaceFacts {
  uint64_t ns_inode = 0;        // of /proc/self/ns/pid; 0 when unreadable
  int nspid_levels = 0;         // pids in the NSpid line of /proc/self/status (0: no such line)
  bool kernel_thread_visible = false;  // /proc/2 is kthreadd (kernel threads live only in the host's namespace)
};

// The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO).
inline constexpr uint64_t kHostPidNamespaceInode = 0xEFFFFFFCu;

struct PreflightFacts {
  uint64_t effective_caps = 0;  // CapEff from /proc/self/status
  bool btf_present = false;     // /sys/kernel/btf/vmlinux exists
  std::string btf_path = "/sys/kernel/btf/vmlinux";
  int seccomp_mode = -1;        // Seccomp from /proc/self/status (2: a filter); -1 unknown
  PidNamespaceFacts pid_ns;
};

inline constexpr int kCapDacOverride = 1;
inline constexpr int kCapDacReadSearch = 2;
inline constexpr int kCapSysPtrace = 19;
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapPerfmon = 38;
inline constexpr int kCapBpf = 39;
inline constexpr int kCapCheckpointRestore = 40;

PreflightFacts ReadPreflightFacts(const PreflightPaths& paths = {});

// PermissionDenied naming the missing capabilities, FailedPrecondition for a
// kernel without BTF, Ok otherwise. CAP_SYS_ADMIN stands in for both
// CAP_BPF and CAP_PERFMON (as the kernel allows).
Status CheckCanProfile(const PreflightFacts& facts);

// Empty when this process is in the host's pid namespace and its /proc shows
// the host's processes; otherwise what shows it is not (for a warning: the
// agent then profiles with unnamed stacks).
std::string NotInHostPidNamespace(const PidNamespaceFacts& facts);

}  // namespace warpscope
