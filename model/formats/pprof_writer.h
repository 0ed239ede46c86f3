// Encodes a Profile as a pprof protobuf (perftools.profiles.Profile), the
// format `go tool pprof`, Parca, Pyroscope and Grafana read.
//
// Layout of the output (what readers may rely on):
//  * sample_type = [samples/count, cpu/nanoseconds], default_sample_type "cpu",
//    period_type cpu/nanoseconds, period = Profile::period_nanos; or
//    Profile::sample_types when set (the last one is default and period type).
//  * Sample.value = [count, cpu_nanos] (just [count] for one sample type);
//    location ids leaf first; string labels "pid", "tid" (decimal; left out when
//    !Profile::has_thread_labels), "comm", "thread_name" (the last two when known).
//  * Mappings keep the Profile's order (the main binary first) and ids; every
//    mapping has has_functions = true because the agent symbolizes on the host;
//    has_filenames / has_line_numbers / has_inline_frames reflect the data.
//  * Locations and functions keep the Profile's ids. A location the symbolizer
//    left without lines gets one synthetic function named like
//    "libfoo.so+0x1a2b" (see frame_names.h), so every reader shows the same
//    name as the collapsed and top-functions outputs.
//  * comment = Profile::comments, then one "name=value" per counter.
//
// Pure functions; safe to call from any thread that owns the Profile.
#pragma once

#include <string>

#include "model/profile.h"
#include "base/status.h"

namespace warpscope {

// Uncompressed protobuf bytes. INVALID_ARGUMENT when the Profile's ids are
// inconsistent (a sample or location points at an id that does not exist).
StatusOr<std::string> EncodePprof(const Profile& profile);

// The same, gzip-compressed (what pprof files on disk and uploads usually are).
StatusOr<std::string> EncodePprofGzip(const Profile& profile);

}  // namespace warpscope
