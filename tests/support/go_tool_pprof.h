// `go tool pprof`, the reference pprof reader (Debian's golang-go), for the
// tests of the pprof writer and of the server's pprof export. Test thread only.
#pragma once

#include <string>

namespace warpscope::testing {

// The go binary: the first on PATH, else Debian's /usr/lib/go/bin/go; "" when none.
std::string FindGo();

struct GoToolResult {
  int exit_code = -1;  // -1: it could not be run
  std::string out;
  std::string err;
};

// Runs `go tool pprof <mode> <file>` with a private HOME, GOCACHE, GOPATH and
// PPROF_TMPDIR under `dir` (go runs as root in CI with no usable home; the
// caller makes dir/{home,gocache,gopath,pprof}); stdout and stderr go through
// files in `dir`, so large output cannot block the child.
GoToolResult RunGoToolPprof(const std::string& go, const std::string& dir, const std::string& mode,
                            const std::string& file);

}  // namespace warpscope::testing
