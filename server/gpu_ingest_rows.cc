#include "server/gpu_ingest_rows.h"

namespace warpscope::server {
namespace {

bool RowIsWithinBounds(const warpscope::v1::IngestBatch& batch, const warpscope::v1::GpuActivity& a) {
  const uint64_t strings = static_cast<uint64_t>(batch.strings_size());
  if (a.label_set() >= static_cast<uint64_t>(batch.label_sets_size()) || a.name() >= strings ||
      a.system_name() >= strings || a.stack() > static_cast<uint64_t>(batch.stacks_size())) {
    return false;
  }
  if (!warpscope::v1::GpuActivityKind_IsValid(a.kind()) || !warpscope::v1::GpuLaunchApi_IsValid(a.launch_api())) {
    return false;
  }
  if (a.duration_nanos() < 0 || a.duration_nanos() > kMaxGpuActivityNanos) return false;
  if (a.launch_duration_nanos() < 0 || a.launch_duration_nanos() > kMaxGpuActivityNanos) return false;
  const __int128 gap = static_cast<__int128>(a.launch_start_unix_nanos()) - a.start_unix_nanos();
  return a.launch_start_unix_nanos() == 0 || (gap >= -kMaxGpuActivityNanos && gap <= kMaxGpuActivityNanos);
}

}  // namespace

size_t DropBadGpuActivities(warpscope::v1::IngestBatch* batch) {
  auto* rows = batch->mutable_gpu_activities();
  int kept = 0;
  for (int i = 0; i < rows->size(); ++i) {
    if (!RowIsWithinBounds(*batch, rows->Get(i))) continue;
    if (kept != i) rows->SwapElements(kept, i);
    ++kept;
  }
  const size_t dropped = static_cast<size_t>(rows->size() - kept);
  rows->DeleteSubrange(kept, rows->size() - kept);
  return dropped;
}

}  // namespace warpscope::server
