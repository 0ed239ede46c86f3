#include "storage/clickhouse/testing/clickhouse_test_env.h"

#include <stdlib.h>

#include <filesystem>
#include <mutex>

namespace warpscope::clickhouse::testing {
namespace {

// Owns the shared server and its scratch dir; destroyed at exit (static
// destructor), which stops the server and removes the dir.
struct SharedServer {
  std::unique_ptr<ClickHouseInstance> instance;
  std::string dir;
  std::string error;
  ~SharedServer() {
    instance.reset();
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};

}  // namespace

ClickHouseInstance* SharedClickHouse(std::string* error) {
  static std::mutex mu;
  static SharedServer server;
  std::lock_guard<std::mutex> lock(mu);
  if (server.instance == nullptr && server.error.empty()) {
    std::string tmpl = ::testing::TempDir() + "warpscope_clickhouse.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      server.error = "mkdtemp failed";
    } else {
      server.dir = tmpl;
      StatusOr<std::unique_ptr<ClickHouseInstance>> started = ClickHouseInstance::Start(server.dir);
      if (started.ok()) {
        server.instance = std::move(started).value();
      } else {
        server.error = started.status().ToString();
      }
    }
  }
  if (error != nullptr) *error = server.error;
  return server.instance.get();
}

}  // namespace warpscope::clickhouse::testing
