// The byte encoding of GPU activity and coverage rows (gpu_activity_row.h),
// shared by the WAL record (head_record.h, version 2) and the segment file's
// GPU section (segment_gpu_section.h), where it is zstd-compressed.
//
// Column-major, so that zstd sees runs of like values:
//   Activities := count:varint  then `count` varints per column, in order:
//     zz(start_ns - previous start_ns)  zz(duration_ns)  zz(series_id - previous)
//     kind  name_id  system_name_id  stack_id  device  stream
//     zz(correlation_id - previous)  graph_id  grid_x grid_y grid_z
//     block_x block_y block_z  registers  static_shared  dynamic_shared
//     bytes  copy_kind                                      (22 columns)
//     launch_lead  launch_duration_ns  launch_tid  launch_api   (4 more since
//       segment format 4 and head record version 3; older encodings have 22)
//   launch_lead: zz(L) with L = 0 when the launch is unknown, else
//     d = start_ns - launch_start_ns, L = d + 1 when d >= 0, else d.
//   Coverage   := count:varint  then per row:
//     zz(second_ns - previous)  zz(series_id - previous)  recorded  sent
//     zz(complete_until_ns - second_ns)
// ("previous" starts at 0 in each encoding.)
//
// Decoders read untrusted bytes: false on anything malformed, never abort;
// a count larger than the bytes could hold is malformed (no allocation
// beyond the input's size). Stateless; any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/embedded/gpu_activity_row.h"

namespace warpscope::segment {

inline constexpr size_t kGpuActivityColumns = 26;
// Segment format versions 2 and 3, head record version 2: no launch columns.
inline constexpr size_t kGpuActivityColumnsBeforeLaunch = 22;

void EncodeGpuActivities(std::span<const GpuActivityRow> rows, std::string* out);
// Consumes one encoding of `columns` columns from the front of *in, appending
// its rows to *rows (the columns it lacks read as 0).
bool DecodeGpuActivities(std::string_view* in, std::vector<GpuActivityRow>* rows,
                         size_t columns = kGpuActivityColumns);

void EncodeGpuCoverage(std::span<const GpuCoverageRow> rows, std::string* out);
bool DecodeGpuCoverage(std::string_view* in, std::vector<GpuCoverageRow>* rows);

}  // namespace warpscope::segment
