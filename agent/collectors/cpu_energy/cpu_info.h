// What the server needs to estimate CPU energy on a node without RAPL
// (docs/design/energy.md, "CPU joules"): the CPU's model, so that it can
// look up the family's watts per thread, and the watts per thread the
// agent was told (--cpu-watts-per-core), if any.
//
// CpuInfoCollector sends them once per window as the metrics `cpu_info`
// (value: online logical CPUs; labels arch, cpu_model) and
// `cpu_watts_per_core` (watts). It reads /proc/cpuinfo once, at start.
#pragma once

#include <optional>
#include <string>

#include "agent/pipeline/collector.h"

namespace warpscope {

struct CpuModel {
  std::string arch;   // uname's machine: x86_64, aarch64
  std::string model;  // x86: "model name"; Arm: "arm:0x" + "CPU part" (e.g. arm:0xd0c); "" unknown
  int logical_cpus = 0;
};

// Parses /proc/cpuinfo's text (the first processor's fields).
CpuModel ParseCpuInfo(const std::string& cpuinfo, const std::string& arch);

class CpuInfoCollector : public Collector {
 public:
  // Reads `cpuinfo_path` (tests pass a fixture) and the machine's arch.
  CpuInfoCollector(const std::string& cpuinfo_path, std::optional<double> watts_per_core);

  std::string_view name() const override { return "cpu_info"; }
  Status Start() override { return Status::Ok(); }
  Status Poll(Clock::time_point) override { return Status::Ok(); }
  Status FinishWindow(Window* window) override;
  void Stop() override {}

  const CpuModel& model() const { return model_; }

 private:
  CpuModel model_;
  std::optional<double> watts_per_core_;
};

}  // namespace warpscope
