#include "tests/support/cfi_builder.h"

#include <gtest/gtest.h>

namespace warpscope::testing {

uint64_t CfiBuilder::AddRaw(const Bytes& body, bool dwarf64) {
  const uint64_t offset = data_.size();
  Bytes header;
  if (dwarf64) {
    header.U32(0xffffffffu).U64(body.size());
  } else {
    header.U32(static_cast<uint32_t>(body.size()));
  }
  data_.append(reinterpret_cast<const char*>(header.bytes().data()), header.size());
  data_.append(reinterpret_cast<const char*>(body.bytes().data()), body.size());
  return offset;
}

uint64_t CfiBuilder::AddCie(const CieSpec& spec) {
  const bool eh = kind_ == CfiSectionKind::kEhFrame;
  Bytes body;
  if (eh) {
    body.U32(0);
  } else if (spec.dwarf64) {
    body.U64(~uint64_t{0});
  } else {
    body.U32(0xffffffffu);
  }
  body.U8(spec.version).Str(spec.augmentation);
  if (spec.version == 4) body.U8(spec.address_size).U8(0);
  std::string aug = spec.augmentation;
  if (aug.rfind("eh", 0) == 0) {
    body.U64(0xdeadbeef);
    aug = aug.substr(2);
  }
  body.Uleb(spec.code_align).Sleb(spec.data_align);
  if (spec.version == 1) {
    body.U8(static_cast<uint8_t>(spec.ra_column));
  } else {
    body.Uleb(spec.ra_column);
  }
  if (!aug.empty() && aug[0] == 'z') {
    Bytes data;
    for (char c : aug.substr(1)) {
      if (c == 'R') data.U8(spec.fde_encoding);
      if (c == 'P') data.U8(dwarf::kPeIndirect | dwarf::kPePcrel | dwarf::kPeSdata4).U32(0x1234);
      if (c == 'L') data.U8(dwarf::kPePcrel | dwarf::kPeSdata4);
    }
    body.Uleb(data.size()).Add(data);
  }
  body.Add(spec.program);
  return AddRaw(body, spec.dwarf64);
}

uint64_t CfiBuilder::AddFde(uint64_t cie_offset, const CieSpec& cie, const FdeSpec& spec) {
  const bool eh = kind_ == CfiSectionKind::kEhFrame;
  const uint64_t offset = data_.size();
  const uint64_t id_at = offset + (spec.dwarf64 ? 12 : 4);
  Bytes body;
  uint64_t pc_at = id_at + 4;
  if (eh) {
    body.U32(static_cast<uint32_t>(id_at - cie_offset));
  } else if (spec.dwarf64) {
    body.U64(cie_offset);
    pc_at = id_at + 8;
  } else {
    body.U32(static_cast<uint32_t>(cie_offset));
  }
  if (eh) {
    const uint8_t encoding = spec.encoding_override != 0 ? spec.encoding_override : cie.fde_encoding;
    Bytes begin = EncodePointer(encoding, spec.pc_begin, pc_at);
    body.Add(begin);
    body.Add(EncodePointer(encoding & 0x0f, spec.pc_length, pc_at + begin.size()));
  } else if (cie.version == 4 && cie.address_size == 4) {
    body.U32(static_cast<uint32_t>(spec.pc_begin)).U32(static_cast<uint32_t>(spec.pc_length));
  } else {
    body.U64(spec.pc_begin).U64(spec.pc_length);
  }
  if (!cie.augmentation.empty() && cie.augmentation[0] == 'z') {
    if (cie.augmentation.find('L') != std::string::npos) {
      body.Uleb(4).U32(0);
    } else {
      body.Uleb(0);
    }
  }
  body.Add(spec.program);
  return AddRaw(body, spec.dwarf64);
}

Bytes CfiBuilder::EncodePointer(uint8_t encoding, uint64_t value, uint64_t at) const {
  Bytes b;
  if (encoding == dwarf::kPeOmit) return b;
  const uint8_t application = encoding & 0x70;
  if (application == dwarf::kPeAligned) {
    while ((vaddr_ + at + b.size()) % 8 != 0) b.U8(0);
    return b.U64(value);
  }
  uint64_t v = value;
  if (application == dwarf::kPePcrel) v = value - (vaddr_ + at);
  if (application == dwarf::kPeTextrel) v = value - text_vaddr_;
  switch (encoding & 0x0f) {
    case dwarf::kPeUdata2:
    case dwarf::kPeSdata2: return b.U16(static_cast<uint16_t>(v));
    case dwarf::kPeUdata4:
    case dwarf::kPeSdata4: return b.U32(static_cast<uint32_t>(v));
    case dwarf::kPeUleb128: return b.Uleb(v);
    case dwarf::kPeSleb128: return b.Sleb(static_cast<int64_t>(v));
    default: return b.U64(v);
  }
}

void PrintTo(const Row& r, std::ostream* os) {
  *os << "{pc=0x" << std::hex << r.pc << std::dec << " type=" << int{r.type} << " cfa_offset=" << r.cfa_offset
      << " fp_offset=" << int{r.fp_offset} << "}";
}

std::vector<Row> RowsOf(const UnwindTable& table) {
  std::vector<Row> rows;
  for (const ws_unwind_entry& e : table.entries) rows.push_back(Row{e.pc, e.cfa_type, e.cfa_offset, e.fp_offset});
  return rows;
}

UnwindTable SingleFdeTable(const Bytes& fde_program, const CieSpec& cie, const RowEncodingOptions& options,
                           CfiSectionKind kind) {
  CfiBuilder builder(kind);
  const uint64_t cie_offset = builder.AddCie(cie);
  FdeSpec fde;
  fde.program = fde_program;
  builder.AddFde(cie_offset, cie, fde);
  CfiSection section = builder.section();
  section.arch = cie.arch;
  UnwindTableOptions table_options;
  table_options.rows = options;
  StatusOr<UnwindTable> table = BuildUnwindTableFromSections({&section, 1}, {}, table_options);
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return table.ok() ? std::move(table).value() : UnwindTable{};
}

}  // namespace warpscope::testing
