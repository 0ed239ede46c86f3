// FileSink: `record`'s sink. Keeps the profile of the window it gets (record
// has one) so the command can add its comments, then writes it as pprof
// (gzip) or collapsed stacks, atomically: a reader never sees half a file.
// The profile is the window's CPU profile, its off-CPU profile, or both in
// one: sample types off_cpu/nanoseconds (ProfileSample::count) and
// cpu/nanoseconds (::cpu_nanos, the default type).
//
// Threading: sampling thread only.
#pragma once

#include <optional>
#include <string>

#include "agent/pipeline/window_sink.h"
#include "base/status.h"

namespace warpscope {

enum class OutputFormat { kPprof, kCollapsed };

class FileSink : public WindowSink {
 public:
  enum class Types { kCpu, kOffCpu, kCpuAndOffCpu };

  FileSink(std::string path, OutputFormat format, Types types = Types::kCpu)
      : path_(std::move(path)), format_(format), types_(types) {}

  // Keeps the window's profile (by `types`), its counters and length (a later
  // window replaces it).
  void Consume(Window window) override;

  // The kept profile, null before the first window.
  Profile* profile() { return profile_ ? &*profile_ : nullptr; }
  // Writes the kept profile to the path. Errors: nothing kept, encoding, I/O.
  Status Write() const;

 private:
  const std::string path_;
  const OutputFormat format_;
  const Types types_;
  std::optional<Profile> profile_;
};

}  // namespace warpscope
