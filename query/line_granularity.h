// Line granularity (pprof's -granularity=lines): every answer names a frame
// by its function, and so merges the lines of one function into one node
// (frame_label.h). SplitFramesByLine renames each frame that has a line to
// its function and line, so the flame graph, the table, the diff and the
// flame chart show one node per (function, line):
//   Python: "train_step:42" (the binary is already the source file);
//   native with a source file: "gemm blas.cc:120"; without: "gemm:120".
// Frames without a line, or without a function name, keep their name.
//
// Pure function on one answer's frame table; any thread.
#pragma once

#include "storage/profile_store.h"

namespace warpscope::query {

void SplitFramesByLine(storage::MergedProfile* profile);

}  // namespace warpscope::query
