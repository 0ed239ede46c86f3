// gtest glue for tests that need a real ClickHouse (clickhouse_instance.h).
//
//   TEST(MyTest, Replicas) {
//     WS_REQUIRE_CLICKHOUSE();   // fails (CI installs it), or skips with WARPSCOPE_SKIP_CLICKHOUSE=1
//     ...
//   }
//
// SharedClickHouse() is one server for the whole test binary (started on
// first use in a scratch dir, stopped at exit); tests give each store its own
// database.
#pragma once

#include <gtest/gtest.h>

#include "storage/clickhouse/testing/clickhouse_instance.h"

namespace warpscope::clickhouse::testing {

// The binary's shared server, started on first call; null (with the reason
// in *error) when it cannot start. Thread-safe.
ClickHouseInstance* SharedClickHouse(std::string* error = nullptr);

}  // namespace warpscope::clickhouse::testing

// A macro because GTEST_SKIP and FAIL return from the test body.
#define WS_REQUIRE_CLICKHOUSE()                                                                        \
  do {                                                                                                 \
    bool ws_skip_clickhouse_ = false;                                                                  \
    ::warpscope::Status ws_ch_status_ =                                                                \
        ::warpscope::clickhouse::testing::CheckClickHouseInstalled(&ws_skip_clickhouse_);              \
    if (ws_skip_clickhouse_) GTEST_SKIP() << "clickhouse-server missing; WARPSCOPE_SKIP_CLICKHOUSE=1"; \
    if (!ws_ch_status_.ok()) FAIL() << ws_ch_status_.message();                                        \
  } while (0)
