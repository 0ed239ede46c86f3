#include "agent/collectors/cpu/cpu_collector.h"

namespace warpscope {

StatusOr<std::unique_ptr<CpuCollector>> CpuCollector::Create(const ProfilingSessionOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<ProfilingSession> session, ProfilingSession::Create(options));
  return std::unique_ptr<CpuCollector>(new CpuCollector(std::move(session), options.frequency_hz));
}

void CpuCollector::BeginWindow(int64_t start_unix_nanos) {
  builder_ = std::make_unique<ProfileBuilder>(start_unix_nanos, session_->period_nanos(), frequency_hz_);
  session_->SetBuilder(builder_.get());
  if (session_->off_cpu()) {
    off_cpu_builder_ = std::make_unique<ProfileBuilder>(start_unix_nanos, 0, 0);
    session_->SetOffCpuBuilder(off_cpu_builder_.get());
  }
  if (lead_pid_) {
    if (auto main_binary = session_->symbolizer().MainExecutableMapping(*lead_pid_)) {
      builder_->InternMapping(*main_binary);
      if (off_cpu_builder_) off_cpu_builder_->InternMapping(*main_binary);
    }
  }
}

Status CpuCollector::FinishWindow(Window* window) {
  Status drained = window->final ? session_->StopAndDrainAll() : session_->DrainNow();
  if (!drained.ok() && !window->final) (void)session_->StopAndDrainAll();
  session_->AddCounters(&window->counters);
  window->cpu = builder_->Finish(0);
  builder_.reset();
  if (off_cpu_builder_) {
    window->off_cpu = off_cpu_builder_->Finish(0);
    window->off_cpu->sample_types = {{kOffCpuTypeName, kOffCpuUnit}};
    off_cpu_builder_.reset();
  }
  return drained;
}

}  // namespace warpscope
