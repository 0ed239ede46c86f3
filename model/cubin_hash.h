// The name of a cubin (a CUDA module's binary) wherever it travels: the
// XXH3-128 of its bytes as 32 lowercase hex digits, high half first
// (XXH128's canonical byte order). The agent computes it when a library
// sends the cubin, the gpu_pc profile's instruction frames carry it as their
// mapping's build id, and the server's cubin store files the bytes under it
// and checks the bytes against it (docs/design/gpu_pc.md, "Cubins on the
// server"). Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace warpscope {

inline constexpr size_t kCubinHashDigits = 32;

std::string CubinHash(std::string_view bytes);

// 32 lowercase hex digits: what CubinHash returns.
bool IsCubinHash(std::string_view text);

}  // namespace warpscope
