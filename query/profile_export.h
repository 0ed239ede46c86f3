// Downloads of a queried profile (GET /api/v1/profile?format=pprof or collapsed):
// the same MergedProfile the flame graph shows, in the formats other tools read.
// Frames are named by frame_label.h in both, as the agent's own exporters
// (model/formats/) name them, so a profile reads the same recorded locally or
// queried from the server.
//
// Pure functions; safe on any thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "storage/profile_store.h"

namespace warpscope::query {

// gzip-compressed pprof (perftools.profiles.Profile), written by the agent's
// pprof writer (model/formats/pprof_writer.h), readable by `go tool pprof`.
//  * sample types: for unit "samples" [samples/count, <type>/nanoseconds]
//    (value × period_nanos; default <type>, e.g. cpu/nanoseconds), or just
//    [samples/count] when the period is unknown; for any other unit just
//    [<type>/<unit>] (e.g. gpu_time/nanoseconds).
//  * time_nanos = from_ns, duration_nanos = to_ns - from_ns.
//  * A mapping per (mapping_file, build_id) (kernel frames without one:
//    "[kernel.kallsyms]"), with addresses as stored (file offsets for native
//    frames, memory_start 0). Inlined frames become one location with
//    several lines, innermost first; functions carry name, system name,
//    source file and line. A frame without any name gets the
//    "libfoo.so+0x1a2b" name of frame_label.h.
//  * One sample per stack, without labels (a merged profile belongs to no
//    single process or thread).
// InvalidArgument when value × period overflows int64.
StatusOr<std::string> RenderPprofGzip(const storage::MergedProfile& profile, int64_t from_ns, int64_t to_ns);

// Brendan Gregg's folded stacks (flamegraph.pl, speedscope, inferno): one
// line "root;...;leaf VALUE\n" per distinct stack, names from frame_label.h,
// inlined functions as frames of their own (outer first), kernel frames with
// FlameGraph's "_[k]" suffix (as model/formats/collapsed_writer.h). ';' in a
// name becomes ':' and control characters spaces; a stack without frames is
// "[unknown]". Stacks that name the same are merged; lines sorted bytewise.
std::string RenderCollapsed(const storage::MergedProfile& profile);

}  // namespace warpscope::query
