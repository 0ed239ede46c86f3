#include "storage/clickhouse/clickhouse_cubins.h"

#include <utility>

#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"

namespace warpscope::clickhouse {
namespace {

constexpr int64_t kDayNs = int64_t{86400} * 1'000'000'000;

int64_t DayOf(int64_t ns) { return ns >= 0 ? ns / kDayNs : -((-ns + kDayNs - 1) / kDayNs); }

}  // namespace

ClickHouseCubins::ClickHouseCubins(ClickHouseClient* client, storage::CubinLimits limits,
                                   std::function<int64_t()> now_ns, std::function<int64_t()> cutoff_ns)
    : client_(client), limits_(limits), now_ns_(std::move(now_ns)), cutoff_ns_(std::move(cutoff_ns)) {}

std::string ClickHouseCubins::UsedInsideRetentionSql() const {
  const int64_t cutoff = cutoff_ns_();
  if (cutoff == INT64_MIN) return "";
  // Whole days, as retention drops them: a use row of the cutoff's day stays.
  return " AND hash IN (SELECT hash FROM cubin_uses WHERE day >= toDate(" + std::to_string(DayOf(cutoff)) + "))";
}

Status ClickHouseCubins::WriteUses(const std::vector<std::string>& hashes, bool always) {
  const int64_t day = DayOf(now_ns_());
  RowBinaryWriter rows;
  std::vector<std::string> written;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (day != noted_day_) {
      noted_.clear();
      noted_day_ = day;
    }
    for (const std::string& hash : hashes) {
      if (!IsCubinHash(hash) || (!always && noted_.count(hash))) continue;
      rows.String(hash);
      rows.Fixed(static_cast<uint16_t>(day));  // Date: days since 1970-01-01
      written.push_back(hash);
    }
  }
  if (written.empty()) return Status::Ok();
  RETURN_IF_ERROR(
      client_->Execute(ClickHouseRequest::Insert("INSERT INTO cubin_uses (hash, day) FORMAT RowBinary", rows.Take()))
          .status());
  std::lock_guard<std::mutex> lock(mu_);
  if (day == noted_day_) noted_.insert(written.begin(), written.end());
  return Status::Ok();
}

Status ClickHouseCubins::NoteUses(const std::vector<std::string>& hashes) { return WriteUses(hashes, false); }

StatusOr<std::optional<storage::CubinInfo>> ClickHouseCubins::Find(const std::string& hash) {
  RETURN_IF_ERROR(storage::CheckCubinHash(hash));
  ASSIGN_OR_RETURN(const std::string body,
                   client_->Execute(ClickHouseRequest::Read("SELECT size FROM cubins WHERE hash = " + SqlString(hash) +
                                                            UsedInsideRetentionSql() + " LIMIT 1 FORMAT RowBinary")));
  if (body.empty()) return std::optional<storage::CubinInfo>();
  RowBinaryReader r(body);
  const uint64_t size = r.UInt64();
  RETURN_IF_ERROR(r.status("cubin size"));
  return std::optional<storage::CubinInfo>(storage::CubinInfo{size});
}

StatusOr<std::optional<std::string>> ClickHouseCubins::Read(const std::string& hash) {
  RETURN_IF_ERROR(storage::CheckCubinHash(hash));
  ASSIGN_OR_RETURN(const std::string body,
                   client_->Execute(ClickHouseRequest::Read("SELECT bytes FROM cubins WHERE hash = " +
                                                            SqlString(hash) + UsedInsideRetentionSql() +
                                                            " LIMIT 1 FORMAT RowBinary")));
  if (body.empty()) return std::optional<std::string>();
  RowBinaryReader r(body);
  std::string bytes = r.String();
  RETURN_IF_ERROR(r.status("cubin bytes"));
  return std::optional<std::string>(std::move(bytes));
}

StatusOr<storage::CubinPutResult> ClickHouseCubins::Put(const std::string& hash, const std::string& bytes) {
  ASSIGN_OR_RETURN(std::optional<storage::CubinPutOutcome> refused, storage::CheckCubinPut(hash, bytes, limits_));
  if (refused) return storage::CubinPutResult{*refused, bytes.size()};
  // Held already, inside retention or past it but not deleted yet (the use
  // row written here revives it).
  ASSIGN_OR_RETURN(const std::string held,
                   client_->Execute(ClickHouseRequest::Read("SELECT size FROM cubins WHERE hash = " + SqlString(hash) +
                                                            " LIMIT 1 FORMAT RowBinary")));
  if (!held.empty()) {
    RETURN_IF_ERROR(WriteUses({hash}, /*always=*/true));
    return storage::CubinPutResult{storage::CubinPutOutcome::kAlreadyStored, bytes.size()};
  }
  // Charged as storage::CubinChargedBytes does: a floor and a cost per entry.
  ASSIGN_OR_RETURN(const std::string total,
                   client_->Execute(ClickHouseRequest::Read(
                       "SELECT toUInt64(count()), toUInt64(sum(greatest(size, " +
                       std::to_string(storage::kCubinMinChargeBytes) + ") + " +
                       std::to_string(storage::kCubinEntryChargeBytes) +
                       ")) FROM (SELECT hash, any(size) AS size FROM cubins GROUP BY hash) FORMAT RowBinary")));
  RowBinaryReader r(total);
  const uint64_t held_cubins = r.UInt64();
  const uint64_t held_bytes = r.UInt64();
  RETURN_IF_ERROR(r.status("cubin store size"));
  if (held_bytes + storage::CubinChargedBytes(bytes.size()) > limits_.max_store_bytes ||
      held_cubins >= limits_.max_cubins) {
    return storage::CubinPutResult{storage::CubinPutOutcome::kStoreFull, bytes.size()};
  }
  RETURN_IF_ERROR(WriteUses({hash}, /*always=*/true));
  RowBinaryWriter row;
  row.String(hash);
  row.String(bytes);
  row.UInt64(bytes.size());
  // Idempotent (the table keeps one row per hash), so retries are safe.
  RETURN_IF_ERROR(
      client_->Execute(ClickHouseRequest::Insert("INSERT INTO cubins (hash, bytes, size) FORMAT RowBinary", row.Take()))
          .status()
          .WithContext("storing cubin " + hash));
  return storage::CubinPutResult{storage::CubinPutOutcome::kStored, bytes.size()};
}

StatusOr<uint64_t> ClickHouseCubins::RemoveUnused() {
  ASSIGN_OR_RETURN(const std::string body,
                   client_->Execute(ClickHouseRequest::Read(
                       "SELECT DISTINCT hash FROM cubins WHERE hash NOT IN (SELECT hash FROM cubin_uses) "
                       "FORMAT RowBinary")));
  RowBinaryReader r(body);
  std::string list;
  uint64_t n = 0;
  while (!r.done()) {
    const std::string hash = r.String();
    list += (list.empty() ? "" : ", ") + SqlString(hash);
    ++n;
  }
  RETURN_IF_ERROR(r.status("unused cubins"));
  if (n == 0) return n;
  RETURN_IF_ERROR(
      client_->Execute(ClickHouseRequest::Statement("ALTER TABLE cubins DELETE WHERE hash IN (" + list + ")")).status());
  return n;
}

}  // namespace warpscope::clickhouse
