// CRC-32 (zlib's polynomial) over buffers of any size: zlib's crc32() takes
// 32-bit lengths, so large buffers are fed in slices. Start with crc = 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace warpscope {

uint32_t Crc32(uint32_t crc, const char* data, size_t size);

}  // namespace warpscope
