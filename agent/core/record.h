// `warpscope-agent record`: one bounded recording written to a file.
#pragma once

#include "agent/core/cli.h"

namespace warpscope {

// Runs the recording and returns the process exit code (cli.h). Errors are
// printed to stderr as one clear line; what was recorded is written even when
// the targets exit or the user interrupts.
int RunRecord(const RecordOptions& options);

}  // namespace warpscope
