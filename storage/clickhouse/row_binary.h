// ClickHouse's RowBinary format (docs/design/clickhouse.md §2, verified on
// 18.16): fixed-width little-endian integers and doubles, strings and arrays
// as a ULEB128 count then their bytes / elements, rows concatenated with no
// header. The writer builds INSERT bodies and external tables; the reader
// walks SELECT ... FORMAT RowBinary answers. Single-threaded values.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/status.h"

namespace warpscope::clickhouse {

class RowBinaryWriter {
 public:
  template <typename T>
  void Fixed(T value) {
    static_assert(std::is_arithmetic_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (x86-64, arm64)
    out_.append(bytes, sizeof(T));
  }
  void UInt8(uint8_t v) { Fixed(v); }
  void UInt32(uint32_t v) { Fixed(v); }
  void UInt64(uint64_t v) { Fixed(v); }
  void Int64(int64_t v) { Fixed(v); }
  void Float64(double v) { Fixed(v); }
  void VarUInt(uint64_t v);
  void String(std::string_view s);

  const std::string& data() const { return out_; }
  std::string Take() { return std::move(out_); }
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
};

// Reads values in order; any read past the end turns the reader bad (values
// read as zero) and status() says where. Check status() once after a row loop.
class RowBinaryReader {
 public:
  explicit RowBinaryReader(std::string_view data) : data_(data) {}

  bool done() const { return pos_ >= data_.size() || bad_; }
  template <typename T>
  T Fixed() {
    static_assert(std::is_arithmetic_v<T>);
    T value{};
    if (!Need(sizeof(T))) return value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  uint8_t UInt8() { return Fixed<uint8_t>(); }
  uint32_t UInt32() { return Fixed<uint32_t>(); }
  uint64_t UInt64() { return Fixed<uint64_t>(); }
  int64_t Int64() { return Fixed<int64_t>(); }
  double Float64() { return Fixed<double>(); }
  uint64_t VarUInt();
  std::string String();

  // OK, or Internal naming `what` when the answer was cut short or malformed.
  Status status(const std::string& what) const;

 private:
  bool Need(size_t n);

  std::string_view data_;
  size_t pos_ = 0;
  bool bad_ = false;
};

}  // namespace warpscope::clickhouse
