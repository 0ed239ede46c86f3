// `warpscope-agent run`: continuous profiling uploaded to warpscope-server.
#pragma once

#include <string>

#include "agent/core/cli.h"

namespace warpscope {

// Profiles until SIGINT/SIGTERM (or until every --pid exited), one upload
// window at a time, and returns the process exit code (cli.h). `node_name` is
// the resolved "node" label (main() applies --node-name, $WARPSCOPE_NODE_NAME,
// the host name).
int RunContinuous(const RunOptions& options, const std::string& node_name);

}  // namespace warpscope
