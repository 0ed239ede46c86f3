// How the embedded store keeps a metric point (IngestBatch.metric_points) as
// a SampleRow, so that points share the samples' whole path: WAL record
// (head_record.h), head, segment files, flush, compaction, retention.
//
//   type_id   the metric type (a profile_types row marked as a metric:
//             dictionary_types.h), so profile queries never read it
//   series_id the point's label set
//   time_ns   the point's time
//   stack_id  the value: the double's IEEE-754 bits (exact for every finite
//             double; -0.0 is stored as 0.0)
//   value     how many times this exact point was stored (1 per point)
//
// Why the value goes into the key and not into `value`: WriteSegment merges
// rows of equal (type, series, time, stack) by summing `value` (right for
// samples). With the double in the key, two points of one series at one time
// stay two rows when their values differ, and become one row counting 2 when
// they are equal; either way min/max/sum/count over the raw points come out
// as if every point had been kept apart, and a gauge is never summed.
//
// Stateless; any thread.
#pragma once

#include <bit>
#include <cstdint>

#include "storage/embedded/segment_file.h"

namespace warpscope::embedded {

inline SampleRow MetricRow(int64_t time_ns, uint64_t series_id, uint32_t type_id, double value) {
  return SampleRow{.time_ns = time_ns,
                   .series_id = series_id,
                   .stack_id = std::bit_cast<uint64_t>(value + 0.0),  // + 0.0 turns -0.0 into 0.0
                   .value = 1,
                   .type_id = type_id};
}

inline double MetricValue(const SampleRow& row) { return std::bit_cast<double>(row.stack_id); }
// Points this row stands for (> 1 when equal points were merged).
inline uint64_t MetricMultiplicity(const SampleRow& row) { return static_cast<uint64_t>(row.value); }

}  // namespace warpscope::embedded
