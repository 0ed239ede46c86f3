#include "storage/clickhouse/row_binary.h"

namespace warpscope::clickhouse {

void RowBinaryWriter::VarUInt(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void RowBinaryWriter::String(std::string_view s) {
  VarUInt(s.size());
  out_.append(s.data(), s.size());
}

bool RowBinaryReader::Need(size_t n) {
  if (bad_ || data_.size() - pos_ < n || pos_ > data_.size()) {
    bad_ = true;
    return false;
  }
  return true;
}

uint64_t RowBinaryReader::VarUInt() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (!Need(1)) return 0;
    const auto byte = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  bad_ = true;
  return 0;
}

std::string RowBinaryReader::String() {
  const uint64_t n = VarUInt();
  if (!Need(n)) return {};
  std::string s(data_.substr(pos_, n));
  pos_ += n;
  return s;
}

Status RowBinaryReader::status(const std::string& what) const {
  if (!bad_) return Status::Ok();
  return InternalError(what + ": ClickHouse's RowBinary answer ends early or is malformed (" +
                       std::to_string(data_.size()) + " bytes)");
}

}  // namespace warpscope::clickhouse
