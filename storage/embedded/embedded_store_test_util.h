// Helpers for the embedded store's own tests: a scratch dir, options for a
// store driven by hand (no background thread, no flush at close: destroying it
// leaves the files as a kill -9 would), and short query helpers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "storage/conformance/test_batches.h"
#include "storage/embedded/embedded_store.h"

namespace warpscope::embedded::testing {

using storage::testing::kSec;
using storage::testing::kT0;

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = ::testing::TempDir() + "embedded_store.XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string data() const { return path_ + "/data"; }

 private:
  std::string path_;
};

inline EmbeddedStoreOptions ManualOptions(const std::string& data_dir) {
  EmbeddedStoreOptions o;
  o.data_dir = data_dir;
  o.retention_ns = 0;
  // Tests move the clock by hours between passes without new rows; the
  // guard has tests of its own.
  o.retention_clock_guard_ns = 0;
  o.background = false;
  o.flush_on_close = false;
  return o;
}

inline std::unique_ptr<EmbeddedProfileStore> MustOpen(const EmbeddedStoreOptions& options) {
  StatusOr<std::unique_ptr<EmbeddedProfileStore>> store = EmbeddedProfileStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// Total of every cpu sample in [from, to) (default: all time).
inline int64_t Total(storage::ProfileStore& store, int64_t from = 0, int64_t to = INT64_MAX) {
  storage::ProfileQuery q;
  q.from_ns = from;
  q.to_ns = to;
  StatusOr<storage::MergedProfile> p = store.SelectProfile(q);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->total : -1;
}

}  // namespace warpscope::embedded::testing
