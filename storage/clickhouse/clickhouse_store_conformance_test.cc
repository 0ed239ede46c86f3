// The conformance suite (storage/conformance/) against a real ClickHouse:
// one clickhouse-server per test binary, a database per test named after its
// scratch dir; reopening is a new store (a new replica, as far as the store
// can tell) on the same database.
#include "storage/clickhouse/clickhouse_store_test_util.h"
#include "storage/conformance/store_conformance.h"

namespace warpscope::clickhouse {
namespace {

using storage::ProfileStore;
using storage::conformance::StoreBackend;

::testing::Environment* const kEnvironment = ::testing::AddGlobalTestEnvironment(new testing::ClickHouseEnvironment);

std::unique_ptr<ProfileStore> OpenOnDir(const std::string& dir) {
  return testing::OpenShared(testing::DatabaseFor(dir));
}

std::unique_ptr<ProfileStore> OpenAt(const std::string& dir, int64_t now_ns, int64_t retention_ns) {
  return testing::OpenShared(testing::DatabaseFor(dir), [&](ClickHouseOptions& o) {
    o.now_ns = [now_ns] { return now_ns; };
    o.retention_ns = retention_ns;
  });
}

std::unique_ptr<ProfileStore> OpenWithCubinLimits(const std::string& dir, const storage::CubinLimits& limits) {
  return testing::OpenShared(testing::DatabaseFor(dir), [&](ClickHouseOptions& o) { o.cubins = limits; });
}

WS_INSTANTIATE_STORE_CONFORMANCE(ClickHouse, (StoreBackend{.name = "clickhouse_18_16",
                                                           .open = OpenOnDir,
                                                           .reopen = {},
                                                           .open_at = OpenAt,
                                                           .open_with_cubin_limits = OpenWithCubinLimits}));

}  // namespace
}  // namespace warpscope::clickhouse
