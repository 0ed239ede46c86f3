// The ProfileStore conformance suite: behaviour every backend must show,
// written once against the interface. A backend's test binary links
// ws_storage_conformance and instantiates the suite with its factory:
//
//   WS_INSTANTIATE_STORE_CONFORMANCE(Embedded, (StoreBackend{
//       .name = "embedded",
//       .open = [](const std::string& dir) -> std::unique_ptr<ProfileStore> { ... }}));
//
// Each test gets a fresh scratch directory; `open` builds a store on it (a
// backend that keeps data elsewhere, like ClickHouse, uses the dir's name as
// its database). Durability tests close the store and open it again on the
// same dir through `reopen`.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "storage/conformance/test_batches.h"
#include "storage/profile_store.h"

namespace warpscope::storage::conformance {

struct StoreBackend {
  std::string name;  // a gtest name: letters, digits, underscores
  // A store on `dir` (fresh or holding an earlier store's data). Must not fail.
  std::function<std::unique_ptr<ProfileStore>(const std::string& dir)> open;
  // Closes `store` and opens it again on the same data. Empty: destroy it, then open(dir).
  std::function<std::unique_ptr<ProfileStore>(std::unique_ptr<ProfileStore> store, const std::string& dir)> reopen;
  // A store on `dir` whose clock reads `now_ns` and that keeps `retention_ns`
  // (0: everything), for the time-bound tests; empty: those tests are skipped.
  std::function<std::unique_ptr<ProfileStore>(const std::string& dir, int64_t now_ns, int64_t retention_ns)> open_at;
  // A store on `dir` with these cubin limits; empty: the bounds test is skipped.
  std::function<std::unique_ptr<ProfileStore>(const std::string& dir, const CubinLimits& limits)>
      open_with_cubin_limits;
  // The backend's batch limits (the suite sends batches just past them).
  size_t max_string_bytes = 4096;
  size_t max_labels_per_set = 64;
  size_t max_metric_types = 1024;
};

inline void PrintTo(const StoreBackend& backend, std::ostream* os) { *os << backend.name; }

class StoreConformanceTest : public ::testing::TestWithParam<StoreBackend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  ProfileStore& store() { return *store_; }
  // Replaces the store by GetParam().open_at(dir(), now_ns, retention_ns).
  void OpenAt(int64_t now_ns, int64_t retention_ns);
  // Replaces the store by GetParam().open_with_cubin_limits(dir(), limits).
  void OpenWithCubinLimits(const CubinLimits& limits);
  void Reopen();
  const std::string& dir() const { return dir_; }

  // Ingest that must succeed and store (not a duplicate).
  void MustIngest(const v1::IngestBatch& batch);
  // SelectSeries summed into one value per step, that must succeed (the
  // answer's unit and period into `answer_type` when given).
  std::vector<SeriesPoint> SeriesPoints(const std::string& selector, int64_t from_ns, int64_t to_ns, int64_t step_ns,
                                        const std::string& type = "cpu", ProfileTypeInfo* answer_type = nullptr);
  // SelectProfile over {type, [from, to), selector} that must succeed.
  MergedProfile Profile(const std::string& selector, int64_t from_ns, int64_t to_ns, const std::string& type = "cpu");
  // Sum of values per leaf function name.
  static std::map<std::string, int64_t> ByLeaf(const MergedProfile& profile);
  // SelectMetricSeries that must succeed.
  std::vector<MetricSeries> Metric(const std::string& name, const std::string& selector, int64_t from_ns,
                                   int64_t to_ns, int64_t step_ns, std::vector<std::string> group_by = {});
  // SelectGpuActivities that must succeed.
  GpuActivities GpuTrace(const std::string& selector, int64_t from_ns, int64_t to_ns, size_t max_activities = 1'000'000);

 private:
  std::string dir_;
  std::unique_ptr<ProfileStore> store_;
};

}  // namespace warpscope::storage::conformance

// At namespace scope of the backend's test file; `prefix` names the instantiation.
#define WS_INSTANTIATE_STORE_CONFORMANCE(prefix, backend)                             \
  using ::warpscope::storage::conformance::StoreConformanceTest;                      \
  INSTANTIATE_TEST_SUITE_P(prefix, StoreConformanceTest, ::testing::Values(backend),  \
                           [](const auto& info) { return info.param.name; })
