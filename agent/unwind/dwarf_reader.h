// Bounds-checked reading of DWARF call-frame data: fixed-width little-endian
// integers, LEB128 and the DW_EH_PE pointer encodings of .eh_frame.
//
// ByteReader never reads outside [begin, end): the first failed read makes it
// sticky-bad (every later read returns 0), so decoders read a whole record and
// check ok() once. x86-64 only, hence little-endian data on a little-endian
// host.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace warpscope::dwarf {

static_assert(std::endian::native == std::endian::little, "CFI decoding assumes a little-endian host");

// DW_EH_PE_*: low nibble = value format, bits 4-6 = application, bit 7 = indirect.
inline constexpr uint8_t kPeAbsptr = 0x00;
inline constexpr uint8_t kPeUleb128 = 0x01;
inline constexpr uint8_t kPeUdata2 = 0x02;
inline constexpr uint8_t kPeUdata4 = 0x03;
inline constexpr uint8_t kPeUdata8 = 0x04;
inline constexpr uint8_t kPeSigned = 0x08;  // signed, address-sized
inline constexpr uint8_t kPeSleb128 = 0x09;
inline constexpr uint8_t kPeSdata2 = 0x0a;
inline constexpr uint8_t kPeSdata4 = 0x0b;
inline constexpr uint8_t kPeSdata8 = 0x0c;
inline constexpr uint8_t kPePcrel = 0x10;
inline constexpr uint8_t kPeTextrel = 0x20;
inline constexpr uint8_t kPeDatarel = 0x30;
inline constexpr uint8_t kPeFuncrel = 0x40;
inline constexpr uint8_t kPeAligned = 0x50;
inline constexpr uint8_t kPeIndirect = 0x80;
inline constexpr uint8_t kPeOmit = 0xff;

class ByteReader {
 public:
  ByteReader() = default;
  ByteReader(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ >= end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* pos() const { return p_; }
  const uint8_t* end() const { return end_; }

  uint8_t U8() { return Fixed<uint8_t>(); }
  uint16_t U16() { return Fixed<uint16_t>(); }
  uint32_t U32() { return Fixed<uint32_t>(); }
  uint64_t U64() { return Fixed<uint64_t>(); }

  // At most 10 bytes; longer encodings are treated as malformed.
  uint64_t Uleb() {
    uint64_t result = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      if (p_ >= end_) return Fail();
      const uint8_t b = *p_++;
      if (shift < 64) result |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return result;
    }
    return Fail();
  }
  int64_t Sleb() {
    uint64_t result = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      if (p_ >= end_) return static_cast<int64_t>(Fail());
      const uint8_t b = *p_++;
      if (shift < 64) result |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) {
        if (shift + 7 < 64 && (b & 0x40) != 0) result |= ~uint64_t{0} << (shift + 7);
        return static_cast<int64_t>(result);
      }
    }
    return static_cast<int64_t>(Fail());
  }
  // The NUL-terminated string at the cursor, without the NUL.
  std::string_view CString() {
    const void* nul = p_ < end_ ? std::memchr(p_, 0, remaining()) : nullptr;
    if (nul == nullptr) {
      Fail();
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), static_cast<const uint8_t*>(nul) - p_);
    p_ = static_cast<const uint8_t*>(nul) + 1;
    return s;
  }
  void Skip(uint64_t n) {
    if (n > remaining()) {
      Fail();
      return;
    }
    p_ += n;
  }

 private:
  template <typename T>
  T Fixed() {
    if (remaining() < sizeof(T)) return static_cast<T>(Fail());
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }

  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  bool ok_ = true;
};

// Where the bytes being decoded live in the file's address space: the base of
// DW_EH_PE_pcrel (and of DW_EH_PE_aligned) and of DW_EH_PE_textrel.
struct PointerBase {
  const uint8_t* section_begin = nullptr;
  uint64_t section_vaddr = 0;
  uint64_t text_vaddr = 0;  // 0: textrel unsupported

  uint64_t VaddrOf(const uint8_t* p) const { return section_vaddr + static_cast<uint64_t>(p - section_begin); }
};

// Consumes one encoded value and returns it raw (no pc/text base applied);
// *field is where the value itself starts (after DW_EH_PE_aligned padding).
// False for an unknown format or a truncated value.
inline bool ReadEncodedRaw(ByteReader* r, uint8_t encoding, const PointerBase& base, uint64_t* value,
                           const uint8_t** field) {
  *value = 0;
  *field = r->pos();
  if (encoding == kPeOmit) return true;
  if ((encoding & 0x70) == kPeAligned) {
    const uint64_t misalign = base.VaddrOf(r->pos()) % 8;
    if (misalign != 0) r->Skip(8 - misalign);
    *field = r->pos();
    *value = r->U64();
    return r->ok();
  }
  switch (encoding & 0x0f) {
    case kPeAbsptr:
    case kPeUdata8:
    case kPeSdata8:
    case kPeSigned: *value = r->U64(); break;
    case kPeUleb128: *value = r->Uleb(); break;
    case kPeSleb128: *value = static_cast<uint64_t>(r->Sleb()); break;
    case kPeUdata2: *value = r->U16(); break;
    case kPeUdata4: *value = r->U32(); break;
    case kPeSdata2: *value = static_cast<uint64_t>(int64_t{static_cast<int16_t>(r->U16())}); break;
    case kPeSdata4: *value = static_cast<uint64_t>(int64_t{static_cast<int32_t>(r->U32())}); break;
    default: return false;
  }
  return r->ok();
}

enum class PointerStatus { kOk, kMalformed, kUnsupported };

// Reads a pointer and applies its base. DW_EH_PE_datarel and funcrel need
// bases this decoder does not have (the GOT, the enclosing function) and
// indirect pointers need the process's memory: all are kUnsupported.
inline PointerStatus ReadEncodedPointer(ByteReader* r, uint8_t encoding, const PointerBase& base, uint64_t* value) {
  const uint8_t* field = nullptr;
  if (!ReadEncodedRaw(r, encoding, base, value, &field)) return PointerStatus::kMalformed;
  if (encoding == kPeOmit) return PointerStatus::kOk;
  if ((encoding & kPeIndirect) != 0) return PointerStatus::kUnsupported;
  switch (encoding & 0x70) {
    case 0:
    case kPeAligned: return PointerStatus::kOk;
    case kPePcrel: *value += base.VaddrOf(field); return PointerStatus::kOk;
    case kPeTextrel:
      if (base.text_vaddr == 0) return PointerStatus::kUnsupported;
      *value += base.text_vaddr;
      return PointerStatus::kOk;
    default: return PointerStatus::kUnsupported;
  }
}

}  // namespace warpscope::dwarf
