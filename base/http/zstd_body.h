// Decompression of zstd request bodies with a hard output cap, so a small
// "zstd bomb" cannot make the server allocate gigabytes. Any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::http {

// Decompresses one or more concatenated zstd frames. Errors:
//   ResourceExhausted: the output would exceed max_output_bytes (maps to 413);
//   InvalidArgument: corrupt or truncated input (maps to 400).
// Never allocates more than max_output_bytes plus one block for the output.
StatusOr<std::string> DecompressZstdCapped(std::string_view input, size_t max_output_bytes);

}  // namespace warpscope::http
