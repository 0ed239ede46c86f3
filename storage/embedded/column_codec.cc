#include "storage/embedded/column_codec.h"

#include <zstd.h>

#include "base/byte_order.h"

namespace warpscope::segment {

void PutFixed8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }

void PutFixed16(std::string* out, uint16_t v) {
  char b[2];
  StoreLE16(b, v);
  out->append(b, 2);
}

void PutFixed32(std::string* out, uint32_t v) {
  char b[4];
  StoreLE32(b, v);
  out->append(b, 4);
}

void PutFixed64(std::string* out, uint64_t v) {
  char b[8];
  StoreLE64(b, v);
  out->append(b, 8);
}

void PutVarint64(std::string* out, uint64_t v) {
  char b[10];
  size_t n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<char>(v);
  out->append(b, n);
}

uint32_t LoadFixed32(const char* p) { return LoadLE32(p); }

uint64_t LoadFixed64(const char* p) { return LoadLE64(p); }

bool ByteReader::GetFixed8(uint8_t* v) {
  if (remaining() < 1) return false;
  *v = static_cast<uint8_t>(*p_++);
  return true;
}

bool ByteReader::GetFixed16(uint16_t* v) {
  if (remaining() < 2) return false;
  *v = static_cast<uint16_t>(static_cast<uint8_t>(p_[0]) | (static_cast<uint8_t>(p_[1]) << 8));
  p_ += 2;
  return true;
}

bool ByteReader::GetFixed32(uint32_t* v) {
  if (remaining() < 4) return false;
  *v = LoadFixed32(p_);
  p_ += 4;
  return true;
}

bool ByteReader::GetFixed64(uint64_t* v) {
  if (remaining() < 8) return false;
  *v = LoadFixed64(p_);
  p_ += 8;
  return true;
}

bool ByteReader::GetVarint64(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ == end_) return false;
    const uint8_t byte = static_cast<uint8_t>(*p_++);
    // The tenth byte may only carry the top bit of a 64-bit value.
    if (shift == 63 && byte > 1) return false;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool ByteReader::GetBytes(size_t n, std::string_view* v) {
  if (remaining() < n) return false;
  *v = std::string_view(p_, n);
  p_ += n;
  return true;
}

void ZstdCCtxDeleter::operator()(ZSTD_CCtx_s* c) const { ZSTD_freeCCtx(c); }
void ZstdDCtxDeleter::operator()(ZSTD_DCtx_s* d) const { ZSTD_freeDCtx(d); }

ZstdCompressor NewZstdCompressor() { return ZstdCompressor(ZSTD_createCCtx()); }
ZstdDecompressor NewZstdDecompressor() { return ZstdDecompressor(ZSTD_createDCtx()); }

bool IsValidZstdLevel(int level) { return level >= ZSTD_minCLevel() && level <= ZSTD_maxCLevel(); }

Status AppendChunk(ZSTD_CCtx_s* cctx, int level, std::string_view raw, std::string* scratch, std::string* out) {
  std::string& compressed = *scratch;
  compressed.resize(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compressCCtx(cctx, compressed.data(), compressed.size(), raw.data(), raw.size(), level);
  if (ZSTD_isError(n)) return InternalError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  const bool use_zstd = n < raw.size();
  PutFixed8(out, static_cast<uint8_t>(use_zstd ? ChunkCodec::kZstd : ChunkCodec::kStored));
  PutVarint64(out, raw.size());
  PutVarint64(out, use_zstd ? n : raw.size());
  if (use_zstd) {
    out->append(compressed.data(), n);
  } else {
    out->append(raw.data(), raw.size());
  }
  return Status::Ok();
}

Status ReadChunk(ZSTD_DCtx_s* dctx, ByteReader* in, size_t max_raw_size, std::string* raw) {
  uint8_t codec = 0;
  uint64_t raw_size = 0;
  uint64_t stored_size = 0;
  std::string_view payload;
  if (!in->GetFixed8(&codec) || !in->GetVarint64(&raw_size) || !in->GetVarint64(&stored_size)) {
    return DataLossError("column chunk header is cut short");
  }
  if (raw_size > max_raw_size) {
    return DataLossError("column chunk claims " + std::to_string(raw_size) + " bytes, more than the " +
                         std::to_string(max_raw_size) + " its rows can need");
  }
  if (stored_size > in->remaining() || !in->GetBytes(stored_size, &payload)) {
    return DataLossError("column chunk payload runs past its block");
  }
  switch (static_cast<ChunkCodec>(codec)) {
    case ChunkCodec::kStored:
      if (stored_size != raw_size) return DataLossError("stored column chunk has inconsistent lengths");
      raw->assign(payload.data(), payload.size());
      return Status::Ok();
    case ChunkCodec::kZstd: {
      raw->resize(raw_size);
      const size_t n = ZSTD_decompressDCtx(dctx, raw->data(), raw->size(), payload.data(), payload.size());
      if (ZSTD_isError(n)) return DataLossError(std::string("zstd: ") + ZSTD_getErrorName(n));
      if (n != raw_size) return DataLossError("column chunk decompressed to an unexpected length");
      return Status::Ok();
    }
  }
  return DataLossError("unknown column chunk codec " + std::to_string(codec));
}

}  // namespace warpscope::segment
