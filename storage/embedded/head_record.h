// The payload of one write-ahead-log record of the embedded store: one
// ingested batch's sample rows, already in global dictionary ids, plus the
// (agent_id, sequence) that made them, so a replay rebuilds both the head and
// the per-agent duplicate check.
//
// Layout (integers little-endian or LEB128 varints; the WAL checksums the
// whole payload, so no CRC here):
//   0  char[4]  magic "WSHR"
//   4  u32      format version (3; 1 and 2 are read too)
//   8  varint   agent_id length, then its bytes
//      varint   sequence
//      varint   row count
//      rows, each: varint type_id, varint series_id, varint stack_id,
//                  zigzag varint time_ns delta from the previous row (first from 0),
//                  zigzag varint value
//      (version 2:) GPU activities, then GPU coverage rows, as gpu_activity_codec.h
//      encodes them (uncompressed); version 2 activities have no launch
//      columns. Version 1 records (no GPU part) still decode.
//
// Stateless; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/embedded/gpu_activity_row.h"
#include "storage/embedded/segment_file.h"

namespace warpscope::embedded {

inline constexpr char kHeadRecordMagic[4] = {'W', 'S', 'H', 'R'};
inline constexpr uint32_t kHeadRecordVersion = 3;

struct HeadRecord {
  std::string agent_id;
  uint64_t sequence = 0;
  std::vector<SampleRow> rows;
  GpuRows gpu;
};

std::string EncodeHeadRecord(std::string_view agent_id, uint64_t sequence, const std::vector<SampleRow>& rows,
                             const GpuRows& gpu = {});

// DataLoss for a damaged or foreign payload, FailedPrecondition for a newer
// version; `what` (the WAL seq) goes into the message.
StatusOr<HeadRecord> DecodeHeadRecord(std::string_view payload, const std::string& what);

}  // namespace warpscope::embedded
