// Byte-level building blocks of the segment file format (segment_format.h):
// little-endian fixed-width integers, LEB128 varints, zigzag, and zstd-framed
// column chunks.
//
// Decoders read untrusted bytes (a file that passed its CRC can still have been
// written by a buggy or hostile build), so every read is bounds-checked and
// reports failure as a value; nothing here aborts or throws on bad input.
// Everything is stateless apart from the caller-owned zstd contexts, so any
// number of threads may use these functions at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace warpscope::segment {

// --- Encoding into a growing byte string --------------------------------------------------------

void PutFixed8(std::string* out, uint8_t v);
void PutFixed16(std::string* out, uint16_t v);
void PutFixed32(std::string* out, uint32_t v);
void PutFixed64(std::string* out, uint64_t v);
void PutVarint64(std::string* out, uint64_t v);

inline uint64_t ZigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

uint32_t LoadFixed32(const char* p);
uint64_t LoadFixed64(const char* p);

// --- Bounds-checked decoding --------------------------------------------------------------------

// A cursor over an untrusted byte range. Each Get* returns false (and leaves
// the value unspecified) when the bytes run out or a varint is malformed;
// callers turn that into a DataLoss status with their own context.
class ByteReader {
 public:
  ByteReader(const char* data, size_t size) : p_(data), end_(data + size) {}
  explicit ByteReader(std::string_view s) : ByteReader(s.data(), s.size()) {}

  bool GetFixed8(uint8_t* v);
  bool GetFixed16(uint16_t* v);
  bool GetFixed32(uint32_t* v);
  bool GetFixed64(uint64_t* v);
  bool GetVarint64(uint64_t* v);
  // Hands out the next n bytes without copying.
  bool GetBytes(size_t n, std::string_view* v);

  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

// --- zstd chunks --------------------------------------------------------------------------------

struct ZstdCCtxDeleter {
  void operator()(ZSTD_CCtx_s* c) const;
};
struct ZstdDCtxDeleter {
  void operator()(ZSTD_DCtx_s* d) const;
};
// One per writing (or reading) call; contexts are not thread-safe, so each
// thread owns its own.
using ZstdCompressor = std::unique_ptr<ZSTD_CCtx_s, ZstdCCtxDeleter>;
using ZstdDecompressor = std::unique_ptr<ZSTD_DCtx_s, ZstdDCtxDeleter>;
ZstdCompressor NewZstdCompressor();
ZstdDecompressor NewZstdDecompressor();
bool IsValidZstdLevel(int level);

// How a chunk's payload is stored. Stored is chosen when zstd would not shrink
// it (tiny blocks), so a chunk never costs more than its raw bytes plus header.
enum class ChunkCodec : uint8_t { kStored = 0, kZstd = 1 };

// Appends one chunk: codec (1 byte), raw length (varint), stored length
// (varint), payload. *scratch is reused compression space owned by the caller.
Status AppendChunk(ZSTD_CCtx_s* cctx, int level, std::string_view raw, std::string* scratch, std::string* out);

// Reads one chunk header and payload from `in` and decompresses it into *raw
// (reusing its capacity). The raw length must not exceed max_raw_size, which
// bounds the memory a corrupt length can make us allocate. Errors are DataLoss
// without file context; the caller adds it.
Status ReadChunk(ZSTD_DCtx_s* dctx, ByteReader* in, size_t max_raw_size, std::string* raw);

}  // namespace warpscope::segment
