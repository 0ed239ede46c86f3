#include "agent/export/file_sink.h"

#include <utility>

#include "base/file_util.h"
#include "model/formats/collapsed_writer.h"
#include "model/formats/pprof_writer.h"

namespace warpscope {

namespace {

// One profile of off-CPU and CPU time: off_cpu in count, cpu in cpu_nanos.
Profile CombineOffCpuAndCpu(const Profile& off_cpu, const Profile& cpu) {
  ProfileBuilder builder(cpu.time_nanos, cpu.period_nanos, cpu.frequency_hz);
  for (const ProfileMapping& m : cpu.mappings) builder.InternMapping(m);  // the CPU profile's first mapping leads
  for (const ProfileSample& s : off_cpu.samples) {
    builder.SetSampleTime(s.time_nanos);
    builder.AddValues(builder.InternStack(off_cpu, s.location_ids), s.count, 0, s.labels);
  }
  for (const ProfileSample& s : cpu.samples) {
    builder.SetSampleTime(s.time_nanos);
    builder.AddValues(builder.InternStack(cpu, s.location_ids), 0, s.cpu_nanos, s.labels);
  }
  Profile both = builder.Finish(cpu.duration_nanos);
  both.sample_types = {{off_cpu.sample_types.empty() ? "off_cpu" : off_cpu.sample_types[0].type, "nanoseconds"},
                       {"cpu", "nanoseconds"}};
  both.comments = cpu.comments;
  return both;
}

}  // namespace

void FileSink::Consume(Window window) {
  if (types_ == Types::kCpu || !window.off_cpu) {
    profile_ = std::move(window.cpu);
  } else if (types_ == Types::kOffCpu) {
    profile_ = std::move(*window.off_cpu);
  } else {
    profile_ = CombineOffCpuAndCpu(*window.off_cpu, window.cpu);
  }
  profile_->time_nanos = window.start_unix_nanos;
  profile_->duration_nanos = window.duration_nanos;
  profile_->counters = std::move(window.counters);
}

Status FileSink::Write() const {
  if (!profile_) return FailedPreconditionError("no profile was recorded");
  StatusOr<std::string> encoded =
      format_ == OutputFormat::kPprof ? EncodePprofGzip(*profile_) : StatusOr<std::string>(EncodeCollapsed(*profile_));
  if (!encoded.ok()) return encoded.status();
  return WriteFileAtomically(path_, *encoded);
}

}  // namespace warpscope
