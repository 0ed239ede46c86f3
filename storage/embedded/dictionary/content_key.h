// Canonical byte encodings of dictionary contents. They are both the in-memory
// cache keys and (for stacks, label sets and location lines) the blobs stored
// in SQLite, so they are part of the on-disk format: changing them bumps
// kDictionarySchemaVersion (dictionary_schema.h).
//
// Encoding: a sequence of LEB128 varints of global ids; signed values
// (line numbers, periods) are zigzag-encoded first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warpscope::dictionary {

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Consumes one varint from the front of `in`; false on truncated or overlong input.
inline bool GetVarint(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

}  // namespace warpscope::dictionary
