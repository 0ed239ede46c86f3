// Whole-buffer gzip (a gzip header and trailer, not a raw zlib stream): the
// pprof files and the HTTP answers. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope {

// `level`: zlib's 1 (fastest) to 9 (smallest), or -1 for its default (6).
// Errors: input over 2 GiB (zlib counts in 32 bits), zlib failures.
StatusOr<std::string> GzipCompress(std::string_view data, int level);

}  // namespace warpscope
