#include "server/open_store.h"

#include <algorithm>

#include "base/duration.h"
#include "base/logging.h"
#include "storage/clickhouse/clickhouse_store.h"
#include "storage/embedded/embedded_store.h"

namespace warpscope::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

storage::CubinLimits CubinLimitsOf(const ServerOptions& options) {
  return storage::CubinLimits{.max_cubin_bytes = options.cubin_max_bytes, .max_store_bytes = options.cubin_store_bytes};
}

StatusOr<std::unique_ptr<storage::ProfileStore>> OpenEmbedded(const ServerOptions& options) {
  embedded::EmbeddedStoreOptions store_options;
  store_options.data_dir = options.data_dir;
  store_options.retention_ns = options.retention.count();
  store_options.repair = options.repair;
  store_options.cubins = CubinLimitsOf(options);
  ASSIGN_OR_RETURN(auto store, embedded::EmbeddedProfileStore::Open(store_options));
  return std::unique_ptr<storage::ProfileStore>(std::move(store));
}

StatusOr<std::unique_ptr<storage::ProfileStore>> OpenClickHouse(const ServerOptions& options,
                                                                const RetryWait& wait) {
  clickhouse::ClickHouseOptions ch;
  ch.url = options.clickhouse_url;
  ch.user = options.clickhouse_user;
  ch.password = options.clickhouse_password;
  ch.ca_file = options.clickhouse_ca_file;
  ch.retention_ns = options.retention.count();
  ch.cubins = CubinLimitsOf(options);
  ch.timeout_ms = static_cast<int>(duration_cast<milliseconds>(options.clickhouse_request_timeout).count());
  const Clock::time_point deadline = Clock::now() + options.clickhouse_start_timeout;
  // Rounded for log lines: "giving up in 41.5s", not "41.497s".
  auto rounded = [](milliseconds d) { return FormatDuration(milliseconds((d.count() + 50) / 100 * 100)); };
  for (int attempt = 0;; ++attempt) {
    // The store's message names the URL and why (curl's reason, ClickHouse's error).
    auto store = clickhouse::ClickHouseProfileStore::Open(ch);
    if (store.ok()) return std::unique_ptr<storage::ProfileStore>(std::move(store).value());
    if (store.status().code() != StatusCode::kUnavailable) return store.status();
    const milliseconds left = duration_cast<milliseconds>(deadline - Clock::now());
    if (left <= milliseconds(0)) {
      if (attempt == 0) return store.status();
      return UnavailableError(store.status().message() + "; gave up after " +
                              FormatDuration(options.clickhouse_start_timeout) + " (" + std::to_string(attempt + 1) +
                              " attempts)");
    }
    const milliseconds delay = StartRetryDelay(attempt, left);
    LOG_WARNING() << "not serving yet: " << store.status().message() << "; retrying in " << rounded(delay)
                  << ", giving up in " << rounded(left);
    if (!wait(delay)) return UnavailableError("stopped while waiting for " + DescribeStorage(options));
  }
}

}  // namespace

milliseconds StartRetryDelay(int attempt, milliseconds left) {
  milliseconds d(500);
  for (int i = 0; i < attempt && d < milliseconds(5000); ++i) d *= 2;
  return std::max(milliseconds(0), std::min({d, milliseconds(5000), left}));
}

StatusOr<std::unique_ptr<storage::ProfileStore>> OpenStore(const ServerOptions& options, const RetryWait& wait) {
  switch (options.storage) {
    case StorageKind::kEmbedded: return OpenEmbedded(options);
    case StorageKind::kClickHouse: return OpenClickHouse(options, wait);
  }
  return InternalError("unknown storage kind");
}

}  // namespace warpscope::server
