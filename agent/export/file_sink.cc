#include "agent/export/file_sink.h"

#include <utility>

#include "base/file_util.h"
#include "model/formats/collapsed_writer.h"
#include "model/formats/pprof_writer.h"

namespace warpscope {

void FileSink::Consume(Window window) {
  profile_ = std::move(window.cpu);
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
