// The DWARF line table of a cubin (.debug_line, versions 2 to 5), decoded
// into rows that each name a code section, an offset in it, a source line
// and, for inlined code, the chain of inlined calls that led there.
//
// What ptxas (CUDA 13.0) writes with -lineinfo: a version 2 line
// program with one sequence per function; each sequence opens with
// DW_LNE_set_address, whose operand is 0 in the file and is relocated (by
// .rela.debug_line) to the function's symbol, so the relocations, not the
// addresses, say which function a sequence describes. Addresses are byte
// offsets into the function's .text section. Inlining is described by an
// NVIDIA extended opcode, 0x90 (DW_LNE_inlined_call in NVIDIA's tools), with
// two ULEB128 operands that hold until the next 0x90 or the end of the
// sequence:
//   context   0 for code of the function itself; otherwise N, meaning the
//             call site is the Nth row (from 1) of this sequence;
//   function  the offset in .debug_str of the inlined function's (mangled)
//             name.
// ptxas writes each call site as a row of its own at the address where the
// inlined code starts, just before the inlined row: of rows at one address
// the last describes the instruction. The row a context names carries its
// own context, so nested inlining is a chain that ends at a row with
// context 0. A context can only name an earlier row, so chains are finite.
//
// .nv_debug_line_sass, beside .debug_line, is the same kind of program over
// the same addresses, but its lines are lines of the PTX that ptxas compiled
// (.nv_debug_ptx_txt holds that PTX, one NUL-terminated line after
// another); source lines come from .debug_line only.
//
// The input is untrusted: every read is bounded, each opcode consumes at
// least one byte (so decoding is linear in the section size), and decoding
// stops after max_rows rows. Pure functions, any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope {

// A code address as the relocations give it: an ELF section index and a
// byte offset from that section's start.
struct CubinCodeAddress {
  uint32_t section = 0;
  uint64_t offset = 0;
};

// The relocation of the DW_LNE_set_address operand at `operand_offset`
// (a byte offset into .debug_line).
struct CubinLineRelocation {
  uint64_t operand_offset = 0;
  CubinCodeAddress target;
};

struct CubinLineTableInput {
  std::string_view debug_line;
  std::string_view debug_str;                        // inlined functions' names; DW_FORM_strp
  std::string_view debug_line_str;                   // DW_FORM_line_strp (version 5)
  std::span<const CubinLineRelocation> relocations;  // sorted by operand_offset
  // The section that a set_address without a relocation points into: the
  // one code section of a cubin that has only one, else kNoSection (and such
  // sequences are dropped, since every code section starts at address 0).
  uint32_t unrelocated_section = kNoSection;
  // Decoding stops after this many rows (kept or not), which bounds the
  // memory of rows and inlined calls to a few dozen bytes a row.
  size_t max_rows = size_t{1} << 21;

  static constexpr uint32_t kNoSection = UINT32_MAX;
};

struct CubinLineTable {
  static constexpr uint32_t kNone = UINT32_MAX;

  // One inlined call: `function` (index into inlined_functions) was inlined
  // at call_file:call_line, itself inside the frame `parent` (kNone when the
  // call site is the outer function's own code).
  struct InlineFrame {
    uint32_t function = kNone;
    uint32_t call_file = kNone;
    uint32_t call_line = 0;
    uint32_t parent = kNone;
  };
  // file == kNone marks the end of a sequence: no line from `address` on.
  struct Row {
    uint64_t address = 0;
    uint32_t section = 0;
    uint32_t file = kNone;
    uint32_t line = 0;
    uint32_t frame = kNone;  // innermost inlined call, kNone if not inlined
  };

  std::vector<std::string> files;              // paths, "dir/name" where a directory is known
  std::vector<std::string> inlined_functions;  // names as .debug_str holds them (mangled)
  std::vector<InlineFrame> frames;
  std::vector<Row> rows;  // program order; sequences in the order they appear
  size_t sequences = 0;
  size_t sequences_dropped = 0;  // no relocation said which section they describe
  bool rows_capped = false;      // max_rows reached; the rest of the table was not decoded
};

// DataLoss for a malformed table (truncated unit, bad header, opcode running
// past its unit), naming the unit's offset; InvalidArgument for a version
// outside 2..5.
StatusOr<CubinLineTable> ParseCubinLineTable(const CubinLineTableInput& input);

}  // namespace warpscope
