// CpuCollector: the CPU sampler as a collector of the agent loop. Each
// window gets a profile of its own (and one of off-CPU time when it is on); the ProfilingSession underneath (BPF
// program, symbols, unwind tables, Python state) lives across windows.
//
// Threading: sampling thread only, like the session.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "agent/collectors/cpu/profiling_session.h"
#include "agent/pipeline/collector.h"

namespace warpscope {

// The off-CPU profile's one sample type.
inline constexpr char kOffCpuTypeName[] = "off_cpu";
inline constexpr char kOffCpuUnit[] = "nanoseconds";

class CpuCollector : public Collector {
 public:
  // Loads the BPF program (ProfilingSession::Create); errors carry
  // kPermissionDenied when privileges are missing.
  static StatusOr<std::unique_ptr<CpuCollector>> Create(const ProfilingSessionOptions& options);

  // Every window's profile begins with the main executable of `pid`: pprof
  // tools name a profile after its first mapping (`record`).
  void LeadWithMainMappingOf(uint32_t pid) { lead_pid_ = pid; }

  ProfilingSession& session() { return *session_; }

  std::string_view name() const override { return "cpu"; }
  Status Start() override { return session_->Start(); }
  void BeginWindow(int64_t start_unix_nanos) override;
  Status Poll(Clock::time_point until) override { return session_->Poll(until); }
  // Drains the sampler into the window's profile; the final window stops
  // sampling first. A failed drain stops sampling too.
  Status FinishWindow(Window* window) override;
  void Stop() override {}  // sampling stopped with the final window

 private:
  explicit CpuCollector(std::unique_ptr<ProfilingSession> session, uint32_t frequency_hz)
      : session_(std::move(session)), frequency_hz_(frequency_hz) {}

  std::unique_ptr<ProfilingSession> session_;
  const uint32_t frequency_hz_;
  std::optional<uint32_t> lead_pid_;
  std::unique_ptr<ProfileBuilder> builder_;  // the window's
  std::unique_ptr<ProfileBuilder> off_cpu_builder_;  // the window's, with off-CPU time on
};

}  // namespace warpscope
