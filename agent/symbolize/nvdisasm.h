// nvdisasm: NVIDIA's disassembler for cubins, which the agent runs as a
// separate program (it ships with the CUDA toolkit, not the driver, so it is
// often absent) to show SASS next to GPU PC samples. Everything here treats
// the program and its output as untrusted: the run is bounded in time and
// output, and the parser skips lines it does not know.
//
// The listing nvdisasm prints, with or without --print-code (-c), -g or
// -hex, names each section with a `.section NAME,"FLAGS",@TYPE` directive;
// code sections (flags with 'x') hold one instruction per line,
//   /*0040*/                   LDC.64 R2, c[0x0][0x210] ;
//   /*0030*/               @P0 BRA `(.L_x_22) ;
// the offset in hex from the section's start, an optional predicate, the
// opcode with its modifiers and the operands up to ';'. Labels, directives
// (.type, .size, ...), `//` comments and encodings (`/* 0x... */`) sit on
// lines of their own or after the ';'.
//
// Thread-safety: pure functions; RunNvdisasm may be called from any thread
// and blocks its caller for at most the timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope {

struct NvdisasmInstruction {
  uint64_t offset = 0;    // from the start of its section
  std::string predicate;  // "@P0", "@!PT"; "" when unconditional
  std::string opcode;     // "IMAD.MOV.U32"
  std::string operands;   // "R1, RZ, RZ, c[0x0][0x28]"; "" for EXIT, NOP
  // "@P0 BRA `(.L_x_22)": predicate, opcode and operands, as nvdisasm spaced them.
  std::string Text() const;
};

struct NvdisasmSection {
  std::string name;                               // ".text.add_one"
  std::vector<NvdisasmInstruction> instructions;  // in listing order
};

struct NvdisasmListing {
  std::vector<NvdisasmSection> sections;  // code sections only
};

NvdisasmListing ParseNvdisasmOutput(std::string_view text);

// The nvdisasm to run: `explicit_path` when not empty (NotFound unless it is
// an executable file), else the first executable `nvdisasm` in the
// colon-separated directories of `search_dirs`; NotFound names where it
// looked.
StatusOr<std::string> FindNvdisasm(std::string_view explicit_path, std::string_view search_dirs);

struct NvdisasmRunOptions {
  std::chrono::milliseconds timeout{30000};
  size_t max_output_bytes = size_t{64} << 20;
  // Where the cubin is written for nvdisasm to read (it takes a file name).
  std::string temp_dir = "/tmp";
};

// Writes `cubin` to a temporary file, runs `nvdisasm --print-code FILE` and
// returns what it printed. The program is killed, and an error returned,
// when it runs past the timeout (DeadlineExceeded) or prints more than
// max_output_bytes (ResourceExhausted); a failed exit is Internal, with the
// start of its stderr. The temporary file is removed in every case.
StatusOr<std::string> RunNvdisasm(const std::string& nvdisasm, std::string_view cubin,
                                  const NvdisasmRunOptions& options);

}  // namespace warpscope
