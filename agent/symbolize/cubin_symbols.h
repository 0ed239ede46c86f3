// CubinSymbols: the GPU side of symbolization for CUPTI PC sampling. CUPTI
// reports each sample as (cubin CRC, function name, PC offset, stall reason);
// the agent holds the cubin captured when its module loaded, and this turns
// (function, PC offset) into the function, its source file and line, the
// inlined calls that led there, and the SASS instruction.
//
// What CUPTI's offset means: CUpti_PCSamplingPCData::pcOffset counts bytes
// from the start of the function it names (functionName), not from the
// cubin's text or the module's load address. Every function has a .text
// section of its own that starts at address 0 (its internal subroutines
// follow it in that section), and CUPTI's own correlation call,
// cuptiGetSassToSourceCorrelation, takes exactly (functionName, pcOffset)
// and answers from that function's line table: offset 0 is the function's
// first instruction, whatever its place in the cubin.
//
// What the cubin tells:
// - Functions: STT_FUNC symbols of the code sections, with their sizes;
//   kernels carry STO_CUDA_ENTRY. Internal subroutines (the slow paths of
//   sqrt and division) are symbols inside their kernel's section, and the
//   kernel's own size covers them, so an offset past the kernel's code finds
//   the subroutine's instructions under either name.
// - Lines: the DWARF line table (.debug_line) of a cubin built with
//   -lineinfo or -G (Triton's kernels have it), with the relocations that
//   attach each sequence to its function; cubin_line_table.h has the format.
//   Without it every instruction has no line (has_lines() false).
// - Inlining: ptxas records every inlined call in the line table (an NVIDIA
//   extension: the inlined function's name and the row of its call site), so
//   an instruction of an inlined function reports that function and where
//   it was called, through every level of nesting (up to 64).
// - SASS: only NVIDIA's nvdisasm can decode instructions, and it ships with
//   the CUDA toolkit, not the driver. When it is found it runs once per
//   cubin (bounded in time and output, nvdisasm.h); otherwise, or when it
//   fails, each instruction reads "function+0xOFFSET" and
//   sass_unavailable_reason() says why, for the UI to show.
//
// A cubin is untrusted input: a malformed ELF is an error from Parse; a
// malformed line table leaves the functions and SASS usable and only
// has_lines() false, with the error in lines_unavailable_reason(). All work
// is bounded by the cubin's size and the options' caps.
//
// Memory: per instruction only its SASS text is kept (in one buffer); the
// GpuInstruction values are assembled when asked for.
//
// Thread-safety: Parse blocks its caller while nvdisasm runs (up to its
// timeout), so it belongs off the sampling thread. The result is immutable;
// its const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/symbolize/nvdisasm.h"
#include "base/status.h"

namespace warpscope {

// One level of inlining: `function` was inlined, called at call_file:call_line.
struct GpuInlinedCall {
  std::string function;  // demangled
  std::string call_file;
  int call_line = 0;
};

struct GpuInstruction {
  uint64_t offset = 0;  // from the start of the function asked about
  // "@P0 BRA `(.L_x_22)"; "add_one+0x40" when SASS text is unavailable.
  std::string sass;
  // The source position of the instruction itself ("" and 0 without line
  // information): for inlined code, a line of the inlined function.
  std::string file;
  int line = 0;
  // The inlined calls around the instruction, innermost first: the code is
  // inlined[0].function's, called at inlined[0].call_file:call_line, which
  // is code of inlined[1].function (or of the function asked about, after
  // the last one). Empty for the function's own code, and without line
  // information.
  std::vector<GpuInlinedCall> inlined;
};

struct GpuFunction {
  std::string name;       // as the symbol table and CUPTI spell it (mangled)
  std::string demangled;  // the name itself when it is not a C++ name
  uint64_t size = 0;      // bytes of code
  bool entry = false;     // a kernel (STO_CUDA_ENTRY), not a device function
};

struct CubinSymbolsOptions {
  enum class Sass {
    kSearch,    // nvdisasm from search_dirs
    kPath,      // nvdisasm at nvdisasm_path
    kDisabled,  // never run nvdisasm
  };
  Sass sass = Sass::kSearch;
  std::string nvdisasm_path;
  // Colon-separated; empty means $PATH, then /usr/local/cuda/bin.
  std::string search_dirs;
  NvdisasmRunOptions nvdisasm;
  size_t max_cubin_bytes = size_t{256} << 20;
  // Line table rows decoded at most (cubin_line_table.h); past it, the
  // rest of the table is not read and its code has no lines.
  size_t max_line_rows = size_t{1} << 21;
};

class CubinSymbols {
 public:
  // InvalidArgument for what is not a CUDA ELF (or is empty),
  // ResourceExhausted past max_cubin_bytes, DataLoss for a malformed ELF.
  static StatusOr<CubinSymbols> Parse(std::string_view cubin, const CubinSymbolsOptions& options);
  // The same, with SASS from `nvdisasm_output`, what nvdisasm printed for
  // this cubin (options.sass is not consulted).
  static StatusOr<CubinSymbols> ParseWithSass(std::string_view cubin, std::string_view nvdisasm_output,
                                              const CubinSymbolsOptions& options = {});

  // The instruction at `pc_offset` bytes from the start of `function`
  // (mangled, as CUPTI gives it); nullopt for an unknown function, an
  // offset past its end, or one that is not an instruction boundary.
  std::optional<GpuInstruction> Find(std::string_view function, uint64_t pc_offset) const;
  // All instructions of `function`, in order (for the source/SASS view);
  // empty for an unknown function.
  std::vector<GpuInstruction> Instructions(std::string_view function) const;

  const GpuFunction* FindFunction(std::string_view function) const;
  // "" for an unknown function.
  std::string_view DemangledName(std::string_view function) const;
  const std::vector<GpuFunction>& functions() const { return functions_; }  // sorted by name

  bool has_sass() const { return sass_reason_.empty(); }
  const std::string& sass_unavailable_reason() const { return sass_reason_; }
  bool has_lines() const { return lines_reason_.empty(); }
  const std::string& lines_unavailable_reason() const { return lines_reason_; }
  // The SM architecture the code is for (90 for sm_90); 0 when unknown.
  int sm() const { return sm_; }
  // Memory held by the parsed tables (functions, line rows, SASS text).
  size_t MemoryBytes() const;

 private:
  friend class CubinSymbolsBuilder;

  struct LineRow {
    uint64_t address;
    uint32_t file;  // kNone: no line from here on
    uint32_t line;
    uint32_t frame;
  };
  struct InlineFrame {
    uint32_t function;  // into inlined_functions_
    uint32_t call_file;
    uint32_t call_line;
    uint32_t parent;
  };
  struct SassEntry {
    uint64_t offset;
    uint32_t begin;  // into sass_text_
    uint32_t length;
  };
  struct CodeSection {
    std::string name;
    uint64_t size = 0;
    std::vector<LineRow> rows;    // by address; end-of-sequence rows first among equal addresses
    std::vector<SassEntry> sass;  // by offset
  };
  struct Placement {
    uint32_t section;  // into sections_
    uint64_t start;    // offset of the function in its section
  };

  static StatusOr<CubinSymbols> Build(std::string_view cubin, const CubinSymbolsOptions& options);
  void AttachSass(std::string_view nvdisasm_output);
  GpuInstruction MakeInstruction(size_t function, uint64_t offset) const;
  size_t FunctionIndex(std::string_view function) const;

  std::vector<GpuFunction> functions_;
  std::vector<Placement> placements_;  // parallel to functions_
  std::vector<CodeSection> sections_;
  std::vector<std::string> files_;
  std::vector<std::string> inlined_functions_;  // demangled
  std::vector<InlineFrame> frames_;
  std::string sass_text_;
  std::string sass_reason_;
  std::string lines_reason_;
  int sm_ = 0;
  uint64_t instruction_size_ = 16;
};

}  // namespace warpscope
