#include "agent/unwind/cfi_parser.h"

#include <limits>

namespace warpscope {
namespace {

using dwarf::ByteReader;

const uint8_t* Bytes(const CfiSection& s) { return reinterpret_cast<const uint8_t*>(s.data.data()); }

enum class EntryStatus {
  kOk,
  kZero,       // a zero length: the .eh_frame terminator (readelf walks on, and so do we)
  kMalformed,  // framing fine, body too short for its id: skip just this entry
  kBroken,     // the length runs past the section: nothing after it can be found
};

struct EntryHeader {
  uint64_t end = 0;  // offset of the next entry
  bool is_cie = false;
  uint64_t cie_offset = 0;  // FDEs: the CIE's offset in the section (~0 when the pointer is bad)
  ByteReader body;          // after the CIE id / pointer, up to the end of the entry
};

EntryStatus ReadEntryHeader(const CfiSection& s, uint64_t offset, EntryHeader* h) {
  const uint8_t* begin = Bytes(s);
  ByteReader r(begin + offset, begin + s.data.size());
  if (r.remaining() < 4) {
    // Alignment padding after the terminator is fine; anything else is a cut entry.
    for (const uint8_t* p = r.pos(); p < r.end(); ++p) {
      if (*p != 0) return EntryStatus::kBroken;
    }
    h->end = s.data.size();
    return EntryStatus::kZero;
  }
  uint64_t length = r.U32();
  bool dwarf64 = false;
  if (length == 0xffffffffu) {
    length = r.U64();
    dwarf64 = true;
    if (!r.ok()) return EntryStatus::kBroken;
  } else if (length >= 0xfffffff0u) {
    return EntryStatus::kBroken;  // reserved values
  }
  if (length > r.remaining()) return EntryStatus::kBroken;
  const uint64_t body_offset = static_cast<uint64_t>(r.pos() - begin);
  h->end = body_offset + length;
  if (length == 0) return EntryStatus::kZero;

  const bool eh = s.kind == CfiSectionKind::kEhFrame;
  // LLVM's convention: .eh_frame keeps a 4-byte id even in 64-bit entries.
  const bool wide_id = dwarf64 && !eh;
  ByteReader body(r.pos(), r.pos() + length);
  const uint64_t id = wide_id ? body.U64() : body.U32();
  if (!body.ok()) return EntryStatus::kMalformed;
  if (eh) {
    h->is_cie = id == 0;
    h->cie_offset = id <= body_offset ? body_offset - id : ~uint64_t{0};
  } else {
    h->is_cie = id == (wide_id ? ~uint64_t{0} : uint64_t{0xffffffffu});
    h->cie_offset = id;
  }
  h->body = body;
  return EntryStatus::kOk;
}

}  // namespace

CfiParser::CfiParser(std::span<const CfiSection> sections, const RowEncodingOptions& options)
    : sections_(sections.begin(), sections.end()), options_(options) {}

void CfiParser::CollectFdes(std::vector<FdeInfo>* out) {
  CollectFdes([out](const FdeInfo& fde) { out->push_back(fde); });
}

void CfiParser::CollectFdes(const std::function<void(const FdeInfo&)>& take) {
  for (size_t i = 0; i < sections_.size() && i <= std::numeric_limits<uint8_t>::max(); ++i) {
    CollectSection(static_cast<uint8_t>(i), take);
  }
}

void CfiParser::CollectSection(uint8_t section_index, const std::function<void(const FdeInfo&)>& take) {
  const CfiSection& s = sections_[section_index];
  if (s.data.size() >= (uint64_t{1} << 32)) {
    ++stats_.truncated_sections;  // 32-bit offsets in FdeInfo; no real binary comes close
    return;
  }
  uint64_t offset = 0;
  while (offset < s.data.size()) {
    EntryHeader h;
    const EntryStatus status = ReadEntryHeader(s, offset, &h);
    if (status == EntryStatus::kBroken) {
      ++stats_.truncated_sections;
      return;
    }
    if (status == EntryStatus::kMalformed) {
      ++stats_.fdes;
      ++stats_.fdes_skipped;
    } else if (status == EntryStatus::kOk) {
      if (h.is_cie) {
        CieAt(section_index, offset);
      } else {
        ++stats_.fdes;
        FdeInfo fde;
        if (ParseFde(section_index, h.cie_offset, h.body, &fde)) take(fde);
      }
    }
    offset = h.end;
  }
}

int64_t CfiParser::CieAt(uint8_t section_index, uint64_t offset) {
  const CfiSection& s = sections_[section_index];
  if (offset >= s.data.size()) return -1;
  const uint64_t key = (uint64_t{section_index} << 56) | offset;
  if (key == last_cie_key_) return last_cie_index_;
  int64_t index;
  if (auto it = cie_by_key_.find(key); it != cie_by_key_.end()) {
    index = it->second;
  } else {
    index = static_cast<int64_t>(cies_.size());
    cies_.push_back(ParseCie(s, offset));
    cie_by_key_.emplace(key, static_cast<uint32_t>(index));
  }
  last_cie_key_ = key;
  last_cie_index_ = index;
  return index;
}

CfiParser::Cie CfiParser::ParseCie(const CfiSection& s, uint64_t offset) {
  Cie cie;
  EntryHeader h;
  if (ReadEntryHeader(s, offset, &h) != EntryStatus::kOk || !h.is_cie) return cie;  // not a CIE: unusable
  ++stats_.cies;
  ParseCieBody(s, &h.body, &cie);
  return cie;
}

void CfiParser::ParseCieBody(const CfiSection& s, ByteReader* r, Cie* cie) {
  CfaProgramContext& ctx = cie->context;
  ctx.arch = s.arch;
  ctx.ra_column = s.arch->ra;
  ctx.eh_frame = s.kind == CfiSectionKind::kEhFrame;
  ctx.pointer_base = dwarf::PointerBase{Bytes(s), s.vaddr, s.text_vaddr};

  const uint8_t version = r->U8();
  if (version != 1 && version != 3 && version != 4) return;
  std::string_view augmentation = r->CString();
  if (version == 4) {
    ctx.address_size = r->U8();
    const uint8_t segment_size = r->U8();
    if (segment_size != 0 || (ctx.address_size != 4 && ctx.address_size != 8)) return;
  }
  if (augmentation.starts_with("eh")) {  // pre-"z" GCC: an address-sized EH data pointer follows
    r->Skip(ctx.address_size);
    augmentation.remove_prefix(2);
  }
  ctx.code_align = r->Uleb();
  ctx.data_align = r->Sleb();
  ctx.ra_column = version == 1 ? r->U8() : r->Uleb();
  if (!r->ok() || ctx.code_align == 0 || ctx.ra_column == ctx.arch->fp) return;

  if (!augmentation.empty()) {
    // Without 'z' the data of an unknown augmentation cannot be skipped.
    if (augmentation[0] != 'z') return;
    cie->augmentation_data = true;
    const uint64_t size = r->Uleb();
    if (!r->ok() || size > r->remaining()) return;
    ByteReader data(r->pos(), r->pos() + size);
    r->Skip(size);
    for (char c : augmentation.substr(1)) {
      if (c == 'R') {
        ctx.fde_encoding = data.U8();
      } else if (c == 'L') {
        data.U8();  // LSDA encoding: the pointer itself sits in the FDE's augmentation data
      } else if (c == 'P') {
        const uint8_t encoding = data.U8();
        uint64_t personality = 0;
        const uint8_t* field = nullptr;
        if (!dwarf::ReadEncodedRaw(&data, encoding, ctx.pointer_base, &personality, &field)) return;
      } else if (c == 'S') {
        ctx.signal_frame = true;
      } else if (c == 'B' || c == 'G') {
        // AArch64 BTI / MTE markers: no data.
      } else {
        break;  // unknown: 'z' lets us skip the rest of the data, as GCC's unwinder does
      }
    }
    if (!data.ok()) return;
  }
  if (RunCieProgram(*r, ctx, &cie->initial) != CfaProgramStatus::kOk) return;
  cie->usable = true;
}

bool CfiParser::ParseFde(uint8_t section_index, uint64_t cie_offset, ByteReader r, FdeInfo* fde) {
  const CfiSection& s = sections_[section_index];
  const int64_t cie_index = CieAt(section_index, cie_offset);
  if (cie_index < 0 || !cies_[cie_index].usable) {
    ++stats_.fdes_skipped;
    return false;
  }
  const Cie& cie = cies_[cie_index];
  const CfaProgramContext& ctx = cie.context;

  uint64_t pc_begin = 0;
  uint64_t pc_length = 0;
  if (ctx.eh_frame) {
    if (dwarf::ReadEncodedPointer(&r, ctx.fde_encoding, ctx.pointer_base, &pc_begin) != dwarf::PointerStatus::kOk ||
        ctx.fde_encoding == dwarf::kPeOmit) {
      ++stats_.fdes_skipped;
      return false;
    }
    const uint8_t* field = nullptr;
    // The range has the begin's value format but no base.
    if (!dwarf::ReadEncodedRaw(&r, ctx.fde_encoding & 0x0f, ctx.pointer_base, &pc_length, &field)) {
      ++stats_.fdes_skipped;
      return false;
    }
  } else if (ctx.address_size == 4) {
    pc_begin = r.U32();
    pc_length = r.U32();
  } else {
    pc_begin = r.U64();
    pc_length = r.U64();
  }
  if (cie.augmentation_data) r.Skip(r.Uleb());  // the LSDA pointer and friends
  uint64_t pc_end = 0;
  if (!r.ok() || pc_length >= (uint64_t{1} << 32) || __builtin_add_overflow(pc_begin, pc_length, &pc_end)) {
    ++stats_.fdes_skipped;
    return false;
  }
  if (pc_length == 0) return false;  // covers nothing (discarded code); not an error

  fde->pc_begin = pc_begin;
  fde->pc_length = static_cast<uint32_t>(pc_length);
  fde->program_offset = static_cast<uint32_t>(r.pos() - Bytes(s));
  fde->program_size = static_cast<uint32_t>(r.remaining());
  fde->cie_index = static_cast<uint32_t>(cie_index);
  fde->sequence = sequence_++;
  fde->section = section_index;
  return true;
}

bool CfiParser::EvaluateFde(const FdeInfo& fde, std::vector<UnwindRow>* rows) {
  const Cie& cie = cies_[fde.cie_index];
  CfaProgramContext ctx = cie.context;
  ctx.initial = &cie.initial;
  const uint8_t* program = Bytes(sections_[fde.section]) + fde.program_offset;
  const CfaProgramStatus status = RunFdeProgram(ByteReader(program, program + fde.program_size), ctx, fde.pc_begin,
                                                fde.pc_begin + fde.pc_length, options_, rows);
  if (status != CfaProgramStatus::kOk) {
    ++stats_.fdes_skipped;
    return false;
  }
  return true;
}

}  // namespace warpscope
