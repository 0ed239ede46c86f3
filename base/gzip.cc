#include "base/gzip.h"

#include <zlib.h>

#include <climits>

namespace warpscope {

StatusOr<std::string> GzipCompress(std::string_view data, int level) {
  // zlib counts in 32-bit uInt.
  if (data.size() > static_cast<size_t>(INT_MAX)) return ResourceExhaustedError("gzip input exceeds 2 GiB");
  z_stream zs{};
  // windowBits 15 + 16 = 31: write a gzip header and trailer rather than zlib's.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return InternalError(std::string("deflateInit2: ") + (zs.msg ? zs.msg : "failed"));
  }
  // deflateBound is a guaranteed upper bound, so one Z_FINISH call suffices.
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const size_t written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return InternalError("gzip compression failed (zlib code " + std::to_string(rc) + ")");
  out.resize(written);
  return out;
}

}  // namespace warpscope
