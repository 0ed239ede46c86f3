// Helpers of the ClickHouse store's tests: a database per test on the
// binary's shared server (testing/clickhouse_test_env.h), opened as the
// "warpscope" user.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <memory>
#include <functional>
#include <string>

#include "storage/clickhouse/clickhouse_store.h"
#include "storage/clickhouse/testing/clickhouse_test_env.h"

namespace warpscope::clickhouse::testing {

// "ws_" + the scratch dir's base name, as an identifier.
inline std::string DatabaseFor(const std::string& dir) {
  std::string base = dir.substr(dir.find_last_of('/') + 1);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return "ws_" + base;
}

inline ClickHouseOptions OptionsFor(const ClickHouseInstance& instance, const std::string& database) {
  ClickHouseOptions o;
  o.url = instance.Url(database);
  o.user = kClickHouseUser;
  o.password = kClickHousePassword;
  o.timeout_ms = 30'000;
  return o;
}

// A store on `database` of the shared server; null (with a test failure) when
// it cannot open. `tweak` may change the options first.
inline std::unique_ptr<ClickHouseProfileStore> OpenShared(const std::string& database,
                                                         const std::function<void(ClickHouseOptions&)>& tweak = {}) {
  std::string error;
  ClickHouseInstance* instance = SharedClickHouse(&error);
  EXPECT_NE(instance, nullptr) << error;
  if (instance == nullptr) return nullptr;
  ClickHouseOptions options = OptionsFor(*instance, database);
  if (tweak) tweak(options);
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// A fixture with a private clickhouse-server (stopping or killing it disturbs
// no other test), in a fresh temp dir removed afterwards; with `tls` it also
// serves HTTPS (ClickHouseInstance::Start).
class PrivateClickHouseTest : public ::testing::Test {
 protected:
  explicit PrivateClickHouseTest(bool tls = false) : tls_(tls) {}
  void SetUp() override {
    WS_REQUIRE_CLICKHOUSE();
    std::string tmpl = ::testing::TempDir() + "ch_private.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    StatusOr<std::unique_ptr<ClickHouseInstance>> started = ClickHouseInstance::Start(dir_, tls_);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ch_ = std::move(started).value();
  }
  void TearDown() override {
    ch_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::string dir_;
  std::unique_ptr<ClickHouseInstance> ch_;

 private:
  const bool tls_;
};

// Skips every test of the binary when WARPSCOPE_SKIP_CLICKHOUSE=1 and
// clickhouse-server is missing; fails them when it is missing otherwise.
class ClickHouseEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { WS_REQUIRE_CLICKHOUSE(); }
};

}  // namespace warpscope::clickhouse::testing
