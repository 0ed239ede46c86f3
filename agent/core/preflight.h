// Checks, before any BPF work, that this process can profile: the right
// capabilities and a kernel with BTF. Facts are read into a value so tests can
// feed any combination (STYLE.md rule 3: features are values, not globals).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace warpscope {

struct PreflightFacts {
  uint64_t effective_caps = 0;  // CapEff from /proc/self/status
  bool btf_present = false;     // /sys/kernel/btf/vmlinux exists
  std::string btf_path = "/sys/kernel/btf/vmlinux";
};

inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapPerfmon = 38;
inline constexpr int kCapBpf = 39;

PreflightFacts ReadPreflightFacts();

// PermissionDenied naming the missing capabilities, FailedPrecondition for a
// kernel without BTF, Ok otherwise. CAP_SYS_ADMIN stands in for both
// CAP_BPF and CAP_PERFMON (as the kernel allows).
Status CheckCanProfile(const PreflightFacts& facts);

}  // namespace warpscope
