// Test-only: assembles .eh_frame / .debug_frame sections byte by byte, so the
// tests can cover every opcode, pointer encoding, augmentation and framing
// variant without depending on what a compiler happens to emit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ostream>

#include "agent/unwind/cfi_parser.h"
#include "agent/unwind/dwarf_reader.h"
#include "agent/unwind/unwind_table.h"

namespace warpscope::testing {

class Bytes {
 public:
  Bytes() = default;
  Bytes(std::initializer_list<uint8_t> b) : b_(b) {}
  Bytes& U8(uint8_t v) { return Raw(&v, 1); }
  Bytes& U16(uint16_t v) { return Raw(&v, 2); }
  Bytes& U32(uint32_t v) { return Raw(&v, 4); }
  Bytes& U64(uint64_t v) { return Raw(&v, 8); }
  Bytes& Uleb(uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      if (v != 0) byte |= 0x80;
      b_.push_back(byte);
    } while (v != 0);
    return *this;
  }
  Bytes& Sleb(int64_t v) {
    for (;;) {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      const bool done = (v == 0 && (byte & 0x40) == 0) || (v == -1 && (byte & 0x40) != 0);
      if (!done) byte |= 0x80;
      b_.push_back(byte);
      if (done) return *this;
    }
  }
  Bytes& Str(const std::string& s) {
    Raw(s.data(), s.size());
    return U8(0);
  }
  Bytes& Add(const Bytes& o) {
    b_.insert(b_.end(), o.b_.begin(), o.b_.end());
    return *this;
  }
  Bytes& Raw(const void* p, size_t n) {
    const uint8_t* u = static_cast<const uint8_t*>(p);
    b_.insert(b_.end(), u, u + n);
    return *this;
  }
  size_t size() const { return b_.size(); }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

struct CieSpec {
  uint8_t version = 1;
  std::string augmentation = "zR";
  uint8_t fde_encoding = dwarf::kPePcrel | dwarf::kPeSdata4;
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_column = 16;
  uint8_t address_size = 8;  // version 4 only
  // def_cfa rsp+8; rip at cfa-8: what every x86-64 CIE says.
  Bytes program{0x0c, 0x07, 0x08, 0x90, 0x01};
  bool dwarf64 = false;
  const CfiArch* arch = &kCfiX86_64;  // the machine of the file the section would be in
};

struct FdeSpec {
  uint64_t pc_begin = 0x2000;
  uint64_t pc_length = 0x100;
  Bytes program;
  bool dwarf64 = false;
  uint8_t encoding_override = 0;  // non-zero: encode pc_begin with this instead of the CIE's
};

class CfiBuilder {
 public:
  explicit CfiBuilder(CfiSectionKind kind, uint64_t vaddr = 0x10000, uint64_t text_vaddr = 0x1000)
      : kind_(kind), vaddr_(vaddr), text_vaddr_(text_vaddr) {}

  uint64_t AddCie(const CieSpec& spec);
  uint64_t AddFde(uint64_t cie_offset, const CieSpec& cie, const FdeSpec& spec);
  // An entry with arbitrary body bytes (after the length).
  uint64_t AddRaw(const Bytes& body, bool dwarf64 = false);
  void AddTerminator() { data_.append(4, '\0'); }

  CfiSection section() const { return CfiSection{kind_, data_, vaddr_, text_vaddr_}; }
  std::string& data() { return data_; }
  // Encodes `value` as the pointer at section offset `at` would be.
  Bytes EncodePointer(uint8_t encoding, uint64_t value, uint64_t at) const;

 private:
  CfiSectionKind kind_;
  uint64_t vaddr_;
  uint64_t text_vaddr_;
  std::string data_;
};

// A table row in comparable form.
struct Row {
  uint32_t pc;
  uint8_t type;
  uint16_t cfa_offset = 0;
  int8_t fp_offset = 0;
  bool operator==(const Row&) const = default;
};
void PrintTo(const Row& r, std::ostream* os);
std::vector<Row> RowsOf(const UnwindTable& table);

// One CIE and one FDE over [0x2000, 0x2100) running `fde_program`, built into
// a table. A failed build is a test failure and gives an empty table.
UnwindTable SingleFdeTable(const Bytes& fde_program, const CieSpec& cie = {}, const RowEncodingOptions& options = {},
                           CfiSectionKind kind = CfiSectionKind::kEhFrame);

}  // namespace warpscope::testing
