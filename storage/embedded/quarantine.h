// <data_dir>/quarantine/: where the embedded store, started with `repair`,
// puts the files it cannot read (a segment that does not open, a WAL file
// with damaged records), so that it can start without them and nothing is
// ever deleted. The operator may inspect, send or delete them.
//
// Stateless functions; the store calls them from Open only.
#pragma once

#include <string>

#include "base/status.h"

namespace warpscope::embedded {

// Moves `path` into `dir` (created if needed) under its own file name, with
// ".1", ".2", ... appended when that name is taken. Durable: both directories
// are fsynced. Returns the new path.
StatusOr<std::string> MoveToQuarantine(const std::string& dir, const std::string& path);

// The same, leaving `path` in place: a copy, fsynced (for a WAL file the log
// itself deletes once its intact records are in segments).
StatusOr<std::string> CopyToQuarantine(const std::string& dir, const std::string& path);

}  // namespace warpscope::embedded
