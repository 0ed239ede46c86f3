// zstd request bodies: compressed by the agent, and decompressed by the
// server with a hard output cap, so a small "zstd bomb" cannot make it
// allocate gigabytes. Any thread.
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

// One zstd frame of `input` at `level`, with a content checksum, so that a
// body damaged after compression (on disk, on the way) is refused by the
// decompressor instead of read as something else. Internal on failure.
StatusOr<std::string> CompressZstd(std::string_view input, int level);

}  // namespace warpscope::http
