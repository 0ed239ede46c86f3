// The CUDA injection library for applications in other mount namespaces
// (Kubernetes pods, containers): the agent copies the libwarpscope_cuda.so it
// ships with into a directory they mount from the host, next to the CUDA
// socket, so one hostPath gives a pod both (docs/deploy.md).
#pragma once

#include <string>

#include "base/status.h"

namespace warpscope {

// The library shipped beside this executable: <dir of exe>/../lib/warpscope/
// libwarpscope_cuda.so (/usr/bin and /usr/lib/warpscope in the image;
// PREFIX/bin and PREFIX/lib/warpscope for scripts/install.sh). Empty when
// /proc/self/exe cannot be read.
std::string DefaultCudaLibraryPath();

// Copies `source` to `dir`/libwarpscope_cuda.so, mode 0644 (`dir` is made,
// mode 0755, when missing), unless a file with
// the same bytes is there already. The copy is written beside the target and
// renamed over it, so an application that mapped the old file keeps it and
// one that starts sees a whole file. Returns the target's path.
StatusOr<std::string> PublishCudaLibrary(const std::string& source, const std::string& dir);

}  // namespace warpscope
