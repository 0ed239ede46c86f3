#include "storage/embedded/gpu_activity_codec.h"

#include <type_traits>

#include "storage/embedded/column_codec.h"

namespace warpscope::segment {
namespace {

// One column: how a row's field becomes a varint and back. `delta` columns
// store the zigzag difference to the previous row's value.
struct Column {
  enum Mode { kPlain, kZigZag, kDelta } mode;
  uint64_t (*get)(const GpuActivityRow&);
  void (*set)(GpuActivityRow&, uint64_t);
};

#define WS_U64_FIELD(field) \
  [](const GpuActivityRow& r) { return static_cast<uint64_t>(r.field); }, \
      [](GpuActivityRow& r, uint64_t v) { r.field = static_cast<std::remove_reference_t<decltype(r.field)>>(v); }

// The launch's start relative to the activity's (gpu_activity_codec.h):
// small, and never 0 for a known launch.
uint64_t LaunchLead(const GpuActivityRow& r) {
  if (r.launch_start_ns == 0) return 0;
  const int64_t d = static_cast<int64_t>(static_cast<uint64_t>(r.start_ns) - static_cast<uint64_t>(r.launch_start_ns));
  return static_cast<uint64_t>(d >= 0 ? d + 1 : d);
}
void SetLaunchLead(GpuActivityRow& r, uint64_t v) {
  if (v == 0) {
    r.launch_start_ns = 0;
    return;
  }
  const int64_t lead = static_cast<int64_t>(v);
  const int64_t d = lead > 0 ? lead - 1 : lead;
  r.launch_start_ns = static_cast<int64_t>(static_cast<uint64_t>(r.start_ns) - static_cast<uint64_t>(d));
}

// Order is the format: see gpu_activity_codec.h.
const Column kColumns[kGpuActivityColumns] = {
    {Column::kDelta, WS_U64_FIELD(start_ns)},
    {Column::kZigZag, WS_U64_FIELD(duration_ns)},
    {Column::kDelta, WS_U64_FIELD(series_id)},
    {Column::kPlain, WS_U64_FIELD(kind)},
    {Column::kPlain, WS_U64_FIELD(name_id)},
    {Column::kPlain, WS_U64_FIELD(system_name_id)},
    {Column::kPlain, WS_U64_FIELD(stack_id)},
    {Column::kPlain, WS_U64_FIELD(device)},
    {Column::kPlain, WS_U64_FIELD(stream)},
    {Column::kDelta, WS_U64_FIELD(correlation_id)},
    {Column::kPlain, WS_U64_FIELD(graph_id)},
    {Column::kPlain, WS_U64_FIELD(grid[0])},
    {Column::kPlain, WS_U64_FIELD(grid[1])},
    {Column::kPlain, WS_U64_FIELD(grid[2])},
    {Column::kPlain, WS_U64_FIELD(block[0])},
    {Column::kPlain, WS_U64_FIELD(block[1])},
    {Column::kPlain, WS_U64_FIELD(block[2])},
    {Column::kPlain, WS_U64_FIELD(registers_per_thread)},
    {Column::kPlain, WS_U64_FIELD(static_shared_bytes)},
    {Column::kPlain, WS_U64_FIELD(dynamic_shared_bytes)},
    {Column::kPlain, WS_U64_FIELD(bytes)},
    {Column::kPlain, WS_U64_FIELD(copy_kind)},
    {Column::kZigZag, LaunchLead, SetLaunchLead},
    {Column::kPlain, WS_U64_FIELD(launch_duration_ns)},
    {Column::kPlain, WS_U64_FIELD(launch_tid)},
    {Column::kPlain, WS_U64_FIELD(launch_api)},
};
#undef WS_U64_FIELD

// Fields narrower than 64 bits must come back unchanged: a value that does
// not fit its field is malformed input.
bool FitsField(const Column& c, GpuActivityRow& scratch, uint64_t v) {
  c.set(scratch, v);
  return c.get(scratch) == v;
}

bool GetVarint(std::string_view* in, uint64_t* v) {
  ByteReader r(*in);
  if (!r.GetVarint64(v)) return false;
  in->remove_prefix(in->size() - r.remaining());
  return true;
}

}  // namespace

void EncodeGpuActivities(std::span<const GpuActivityRow> rows, std::string* out) {
  PutVarint64(out, rows.size());
  for (const Column& c : kColumns) {
    uint64_t previous = 0;
    for (const GpuActivityRow& row : rows) {
      const uint64_t v = c.get(row);
      switch (c.mode) {
        case Column::kPlain: PutVarint64(out, v); break;
        case Column::kZigZag: PutVarint64(out, ZigZagEncode(static_cast<int64_t>(v))); break;
        case Column::kDelta: PutVarint64(out, ZigZagEncode(static_cast<int64_t>(v - previous))); break;
      }
      previous = v;
    }
  }
}

bool DecodeGpuActivities(std::string_view* in, std::vector<GpuActivityRow>* rows, size_t columns) {
  uint64_t count = 0;
  if (columns > kGpuActivityColumns || columns == 0) return false;
  if (!GetVarint(in, &count) || count > in->size() / columns) return false;
  const size_t base = rows->size();
  rows->resize(base + count);
  GpuActivityRow scratch;
  for (size_t column = 0; column < columns; ++column) {
    const Column& c = kColumns[column];
    uint64_t previous = 0;
    for (size_t i = base; i < rows->size(); ++i) {
      uint64_t v = 0;
      if (!GetVarint(in, &v)) return false;
      switch (c.mode) {
        case Column::kPlain: break;
        case Column::kZigZag: v = static_cast<uint64_t>(ZigZagDecode(v)); break;
        case Column::kDelta: v = previous + static_cast<uint64_t>(ZigZagDecode(v)); break;
      }
      if (c.mode == Column::kPlain && !FitsField(c, scratch, v)) return false;
      c.set((*rows)[i], v);
      previous = v;
    }
  }
  return true;
}

void EncodeGpuCoverage(std::span<const GpuCoverageRow> rows, std::string* out) {
  PutVarint64(out, rows.size());
  int64_t previous_second = 0;
  uint64_t previous_series = 0;
  for (const GpuCoverageRow& row : rows) {
    PutVarint64(out, ZigZagEncode(static_cast<int64_t>(static_cast<uint64_t>(row.second_ns) -
                                                       static_cast<uint64_t>(previous_second))));
    PutVarint64(out, ZigZagEncode(static_cast<int64_t>(row.series_id - previous_series)));
    PutVarint64(out, row.recorded);
    PutVarint64(out, row.sent);
    PutVarint64(out, ZigZagEncode(static_cast<int64_t>(static_cast<uint64_t>(row.complete_until_ns) -
                                                       static_cast<uint64_t>(row.second_ns))));
    previous_second = row.second_ns;
    previous_series = row.series_id;
  }
}

bool DecodeGpuCoverage(std::string_view* in, std::vector<GpuCoverageRow>* rows) {
  uint64_t count = 0;
  if (!GetVarint(in, &count) || count > in->size() / 5) return false;
  int64_t previous_second = 0;
  uint64_t previous_series = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t second = 0, series = 0, until = 0;
    GpuCoverageRow row;
    if (!GetVarint(in, &second) || !GetVarint(in, &series) || !GetVarint(in, &row.recorded) ||
        !GetVarint(in, &row.sent) || !GetVarint(in, &until)) {
      return false;
    }
    row.second_ns = static_cast<int64_t>(static_cast<uint64_t>(previous_second) +
                                         static_cast<uint64_t>(ZigZagDecode(second)));
    row.series_id = previous_series + static_cast<uint64_t>(ZigZagDecode(series));
    row.complete_until_ns =
        static_cast<int64_t>(static_cast<uint64_t>(row.second_ns) + static_cast<uint64_t>(ZigZagDecode(until)));
    previous_second = row.second_ns;
    previous_series = row.series_id;
    rows->push_back(row);
  }
  return true;
}

}  // namespace warpscope::segment
