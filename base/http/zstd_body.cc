#include "base/http/zstd_body.h"

#include <zstd.h>

#include <algorithm>
#include <memory>

namespace warpscope::http {
namespace {

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* ctx) const { ZSTD_freeDCtx(ctx); }
};

}  // namespace

StatusOr<std::string> DecompressZstdCapped(std::string_view input, size_t max_output_bytes) {
  if (input.empty()) return std::string();
  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) return InternalError("ZSTD_createDCtx failed");
  // Windows larger than 128 MiB are refused outright: the decoder would
  // allocate the window before producing a byte of output.
  ZSTD_DCtx_setParameter(ctx.get(), ZSTD_d_windowLogMax, 27);

  std::string out;
  // Grow by chunks instead of trusting the frame header's content size, which
  // the sender controls.
  const size_t chunk = ZSTD_DStreamOutSize();
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t last_ret = 0;
  while (true) {
    size_t old_size = out.size();
    // One byte beyond the cap is enough to notice an overflow.
    size_t room = std::min(chunk, max_output_bytes + 1 - old_size);
    out.resize(old_size + room);
    ZSTD_outBuffer ob{out.data() + old_size, room, 0};
    last_ret = ZSTD_decompressStream(ctx.get(), &ob, &in);
    out.resize(old_size + ob.pos);
    if (ZSTD_isError(last_ret)) {
      return InvalidArgumentError(std::string("corrupt zstd body: ") + ZSTD_getErrorName(last_ret));
    }
    if (out.size() > max_output_bytes) {
      return ResourceExhaustedError("zstd body decompresses to more than " + std::to_string(max_output_bytes) +
                                    " bytes");
    }
    const bool input_done = in.pos == in.size;
    const bool output_full = ob.pos == ob.size;
    // 0: the frame just ended, fully flushed. Checked before anything else:
    // when a frame's output ends exactly at a chunk boundary, one more call
    // on an ended frame would return a new frame's header hint instead.
    if (input_done && last_ret == 0) break;
    if (input_done && !output_full) break;  // the decoder wants input that is not there
  }
  if (last_ret != 0) {
    return InvalidArgumentError("corrupt zstd body: truncated frame");
  }
  return out;
}

StatusOr<std::string> CompressZstd(std::string_view input, int level) {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  if (ctx == nullptr) return InternalError("zstd: out of memory");
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(input.size()), '\0');
  const size_t n = ZSTD_compress2(ctx, out.data(), out.size(), input.data(), input.size());
  ZSTD_freeCCtx(ctx);
  if (ZSTD_isError(n)) return InternalError(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

}  // namespace warpscope::http
