// Watts per busy CPU thread by CPU family, for CPU energy where a node has no
// RAPL counters (docs/design/energy.md, "CPU joules"): Cloud Carbon
// Footprint's maximum watts per vCPU of each microarchitecture (from
// SPECpower results), which is what a vCPU busy all the time draws in its
// linear model. A CPU sample is a thread on a vCPU, so a busy
// thread-second costs that many joules.
#pragma once

#include <optional>
#include <string>

namespace warpscope::query {

struct CpuFamily {
  std::string name;           // "Cascade Lake", "EPYC 2nd Gen", ...
  double watts_per_thread;    // busy, per vCPU
};

// The family of a CPU from its model as the agent reports it (/proc/cpuinfo's
// "model name" on x86, "arm:0xPART" on Arm), or nullopt when the table does
// not know it.
std::optional<CpuFamily> CpuFamilyOf(const std::string& cpu_model);

}  // namespace warpscope::query
