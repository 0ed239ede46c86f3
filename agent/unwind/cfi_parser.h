// CfiParser: the CIE/FDE structure of .eh_frame and .debug_frame.
//
// Handles 32- and 64-bit DWARF lengths; the CIE id conventions of both
// sections (.eh_frame: id 0 and a CIE pointer relative to the pointer field;
// .debug_frame: id 0xffffffff / 0xffffffffffffffff and an absolute CIE offset);
// CIE versions 1, 3 and 4; augmentations z, R, P, L, S (and B/G, which carry no
// data), plus the legacy "eh" prefix; the DW_EH_PE pointer encodings that need
// no run-time state (see dwarf_reader.h).
//
// Damage is contained: an entry whose length runs past its section ends the
// walk of that section (what came before is kept); an FDE with a malformed
// header, an unusable CIE or an unsupported encoding is left out and counted.
// Every loop advances through the bytes, so work is linear in the input.
//
// One instance belongs to one thread. It points into the section bytes, which
// must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/unwind/cfa_program.h"

namespace warpscope {

enum class CfiSectionKind : uint8_t { kEhFrame, kDebugFrame };

struct CfiSection {
  CfiSectionKind kind = CfiSectionKind::kEhFrame;
  std::string_view data;
  uint64_t vaddr = 0;       // sh_addr: the base of DW_EH_PE_pcrel
  uint64_t text_vaddr = 0;  // .text's sh_addr: the base of DW_EH_PE_textrel (0: unsupported)
  const CfiArch* arch = &kCfiX86_64;  // the file's machine
};

// An FDE whose header parsed, with a usable CIE. 32 bytes: libtorch-sized
// binaries have hundreds of thousands.
struct FdeInfo {
  uint64_t pc_begin;
  uint32_t pc_length;  // FDEs covering 4 GiB or more are rejected as malformed
  uint32_t program_offset;  // the CFA program, within the section
  uint32_t program_size;
  uint32_t cie_index;  // into the parser's CIE table
  uint32_t sequence;   // order of appearance over all sections: the tie-break between equal pc_begin
  uint8_t section;     // index into the parser's sections
};
static_assert(sizeof(FdeInfo) == 32, "FdeInfo layout");

struct CfiParseStats {
  uint64_t cies = 0;          // CIEs parsed (usable or not)
  uint64_t fdes = 0;          // FDE entries seen
  uint64_t fdes_skipped = 0;  // malformed or unsupported: header, CIE or program
  uint64_t truncated_sections = 0;  // sections whose walk stopped at a broken entry length
};

class CfiParser {
 public:
  CfiParser(std::span<const CfiSection> sections, const RowEncodingOptions& options);

  // Walks every section once; appends the FDEs that can be evaluated.
  void CollectFdes(std::vector<FdeInfo>* out);
  // The same, handing each to `take` in file order.
  void CollectFdes(const std::function<void(const FdeInfo&)>& take);

  // Runs one FDE's program and appends its rows (see RunFdeProgram). False,
  // with the FDE counted as skipped, when the program is malformed or
  // unsupported.
  bool EvaluateFde(const FdeInfo& fde, std::vector<UnwindRow>* rows);

  const CfiParseStats& stats() const { return stats_; }

 private:
  struct Cie {
    CfaProgramContext context;  // context.initial is fixed up on use (the vector may reallocate)
    FrameRules initial;
    bool augmentation_data = false;  // 'z': FDEs carry an augmentation length
    bool usable = false;
  };

  void CollectSection(uint8_t section_index, const std::function<void(const FdeInfo&)>& take);
  // The CIE at `offset` of the section, parsed once; -1 if there is none.
  int64_t CieAt(uint8_t section_index, uint64_t offset);
  Cie ParseCie(const CfiSection& section, uint64_t offset);
  void ParseCieBody(const CfiSection& section, dwarf::ByteReader* r, Cie* cie);
  bool ParseFde(uint8_t section_index, uint64_t cie_offset, dwarf::ByteReader r, FdeInfo* fde);

  std::vector<CfiSection> sections_;
  RowEncodingOptions options_;
  std::vector<Cie> cies_;
  std::unordered_map<uint64_t, uint32_t> cie_by_key_;  // (section << 56 | offset) -> index into cies_
  uint64_t last_cie_key_ = ~uint64_t{0};
  int64_t last_cie_index_ = -1;
  uint32_t sequence_ = 0;
  CfiParseStats stats_;
};

}  // namespace warpscope
