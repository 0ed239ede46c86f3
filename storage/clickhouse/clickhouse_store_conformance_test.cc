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

WS_INSTANTIATE_STORE_CONFORMANCE(ClickHouse,
                                 (StoreBackend{.name = "clickhouse_18_16", .open = OpenOnDir, .reopen = {}}));

}  // namespace
}  // namespace warpscope::clickhouse
