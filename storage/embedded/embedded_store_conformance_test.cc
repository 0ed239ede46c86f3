// The conformance suite against the embedded store, three ways: as the
// server runs it; with nothing ever flushed (every reopen is a WAL replay,
// the state a kill -9 leaves); and flushing after every batch (every query
// races a head -> segment hand-off).
#include "storage/conformance/store_conformance.h"
#include "storage/embedded/embedded_store.h"

namespace warpscope::embedded {
namespace {

using storage::ProfileStore;
using storage::conformance::StoreBackend;

std::function<std::unique_ptr<ProfileStore>(const std::string&)> Opener(
    std::function<void(EmbeddedStoreOptions&)> tweak) {
  return [tweak](const std::string& dir) -> std::unique_ptr<ProfileStore> {
    EmbeddedStoreOptions options;
    options.data_dir = dir + "/data";
    options.retention_ns = 0;  // test data is from 2023
    tweak(options);
    StatusOr<std::unique_ptr<EmbeddedProfileStore>> store = EmbeddedProfileStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  };
}

std::unique_ptr<ProfileStore> OpenAt(const std::string& dir, int64_t now_ns, int64_t retention_ns) {
  return Opener([&](EmbeddedStoreOptions& o) {
    o.now_ns = [now_ns] { return now_ns; };
    o.retention_ns = retention_ns;
  })(dir);
}

std::unique_ptr<ProfileStore> OpenWithCubinLimits(const std::string& dir, const storage::CubinLimits& limits) {
  return Opener([&](EmbeddedStoreOptions& o) { o.cubins = limits; })(dir);
}

WS_INSTANTIATE_STORE_CONFORMANCE(Embedded, (StoreBackend{.name = "server_defaults",
                                                         .open = Opener([](EmbeddedStoreOptions&) {}),
                                                         .reopen = {},
                                                         .open_at = OpenAt,
                                                         .open_with_cubin_limits = OpenWithCubinLimits}));
WS_INSTANTIATE_STORE_CONFORMANCE(EmbeddedWalOnly, (StoreBackend{.name = "never_flushed",
                                                                .open = Opener([](EmbeddedStoreOptions& o) {
                                                                  o.background = false;
                                                                  o.flush_on_close = false;
                                                                }),
                                                                .reopen = {}}));
WS_INSTANTIATE_STORE_CONFORMANCE(EmbeddedEagerFlush, (StoreBackend{.name = "flush_every_batch",
                                                                   .open = Opener([](EmbeddedStoreOptions& o) {
                                                                     o.head_max_rows = 1;
                                                                     o.flush_interval_ns = 10'000'000;
                                                                     o.compaction_interval_ns = 50'000'000;
                                                                     o.compaction.min_inputs = 2;
                                                                   }),
                                                                .reopen = {}}));

}  // namespace
}  // namespace warpscope::embedded
