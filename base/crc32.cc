#include "base/crc32.h"

#include <zlib.h>

#include <algorithm>

namespace warpscope {

uint32_t Crc32(uint32_t crc, const char* data, size_t size) {
  while (size > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(size, size_t{1} << 30));
    crc = static_cast<uint32_t>(::crc32(crc, reinterpret_cast<const Bytef*>(data), chunk));
    data += chunk;
    size -= chunk;
  }
  return crc;
}

}  // namespace warpscope
