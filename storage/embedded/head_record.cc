#include "storage/embedded/head_record.h"

#include <cstring>

#include "storage/embedded/dictionary/content_key.h"
#include "storage/embedded/gpu_activity_codec.h"

namespace warpscope::embedded {

using dictionary::GetVarint;
using dictionary::PutVarint;
using dictionary::UnZigZag;
using dictionary::ZigZag;

std::string EncodeHeadRecord(std::string_view agent_id, uint64_t sequence, const std::vector<SampleRow>& rows,
                             const GpuRows& gpu) {
  std::string out;
  out.reserve(32 + agent_id.size() + rows.size() * 12);
  out.append(kHeadRecordMagic, 4);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((kHeadRecordVersion >> (8 * i)) & 0xff));
  PutVarint(&out, agent_id.size());
  out.append(agent_id);
  PutVarint(&out, sequence);
  PutVarint(&out, rows.size());
  int64_t previous_time = 0;
  for (const SampleRow& row : rows) {
    PutVarint(&out, row.type_id);
    PutVarint(&out, row.series_id);
    PutVarint(&out, row.stack_id);
    PutVarint(&out, ZigZag(static_cast<int64_t>(static_cast<uint64_t>(row.time_ns) - static_cast<uint64_t>(previous_time))));
    PutVarint(&out, ZigZag(row.value));
    previous_time = row.time_ns;
  }
  segment::EncodeGpuActivities(gpu.activities, &out);
  segment::EncodeGpuCoverage(gpu.coverage, &out);
  return out;
}

StatusOr<HeadRecord> DecodeHeadRecord(std::string_view in, const std::string& what) {
  auto damaged = [&](const char* where) {
    return DataLossError("head record " + what + ": damaged at " + where);
  };
  if (in.size() < 8 || std::memcmp(in.data(), kHeadRecordMagic, 4) != 0) return damaged("magic");
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i) version |= static_cast<uint32_t>(static_cast<uint8_t>(in[4 + i])) << (8 * i);
  if (version > kHeadRecordVersion) {
    return FailedPreconditionError("head record " + what + ": format version " + std::to_string(version) +
                                   " is newer than this server's " + std::to_string(kHeadRecordVersion));
  }
  if (version == 0) return damaged("version");
  in.remove_prefix(8);
  HeadRecord record;
  uint64_t length = 0, count = 0;
  if (!GetVarint(&in, &length) || length > in.size()) return damaged("agent_id");
  record.agent_id.assign(in.substr(0, length));
  in.remove_prefix(length);
  if (!GetVarint(&in, &record.sequence)) return damaged("sequence");
  // Each row takes at least 5 bytes: a count beyond that is damage, not a reason to allocate.
  if (!GetVarint(&in, &count) || count > in.size() / 5) return damaged("row count");
  record.rows.resize(count);
  int64_t time = 0;
  for (SampleRow& row : record.rows) {
    uint64_t type = 0, delta = 0, value = 0;
    if (!GetVarint(&in, &type) || type > UINT32_MAX || !GetVarint(&in, &row.series_id) ||
        !GetVarint(&in, &row.stack_id) || !GetVarint(&in, &delta) || !GetVarint(&in, &value)) {
      return damaged("rows");
    }
    row.type_id = static_cast<uint32_t>(type);
    time = static_cast<int64_t>(static_cast<uint64_t>(time) + static_cast<uint64_t>(UnZigZag(delta)));
    row.time_ns = time;
    row.value = UnZigZag(value);
  }
  if (version >= 2) {
    const size_t columns =
        version >= 3 ? segment::kGpuActivityColumns : segment::kGpuActivityColumnsBeforeLaunch;
    if (!segment::DecodeGpuActivities(&in, &record.gpu.activities, columns)) return damaged("GPU activities");
    if (!segment::DecodeGpuCoverage(&in, &record.gpu.coverage)) return damaged("GPU coverage");
  }
  if (!in.empty()) return damaged("end (trailing bytes)");
  return record;
}

}  // namespace warpscope::embedded
