// The server's ingest of GPU activity rows, the real binary on loopback: a
// row out of bounds is dropped and counted, and the batch's other rows are
// stored (server/gpu_ingest_rows.h). One user's 2-day kernel used to make the
// server refuse the node's whole batch (400), and the agent dropped it with
// every other process's kernels.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/agent_process.h"
#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;

constexpr char kToken[] = "gpu-rows-token";
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kDay = 86'400 * kSec;

TEST(GpuIngestRows, BadRowsAreDroppedAndCountedTheRestStored) {
  const std::string dir = MakeTempDir();
  auto server = ServerProcess::Start(WS_SERVER_BIN, dir + "/data", {"--token", kToken});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count() /
      kSec * kSec;
  BatchFactory f("gpu-node", 1, now - 10 * kSec, now);
  const std::vector<std::pair<std::string, std::string>> root = {{"node", "gpu-node"}, {"pid", "100"}};
  const std::vector<std::pair<std::string, std::string>> user = {{"node", "gpu-node"}, {"pid", "200"}};
  for (int i = 0; i < 50; ++i) f.AddGpuKernel("gemm", root, now - 5 * kSec + i * 1000, 500, 0, 7, i + 1);
  f.AddGpuKernel("evil", user, now - 5 * kSec, 2 * kDay, 0, 1, 1);          // two days
  f.AddGpuKernel("evil", user, now - 5 * kSec, -5, 0, 1, 2);                // negative
  f.AddGpuKernel("evil", user, now - 5 * kSec, kDay + 1, 0, 1, 3);          // a day and 1 ns
  f.AddGpuKernel("evil", user, now - 5 * kSec, 100, 0, 1, 4).set_launch_start_unix_nanos(now - 5 * kSec - 2 * kDay);
  f.AddGpuKernel("evil", user, now - 5 * kSec, 100, 0, 1, 5).set_launch_duration_nanos(-1);
  f.AddGpuKernel("evil", user, now - 5 * kSec, 100, 0, 1, 6).set_name(1'000'000);  // no such string
  f.AddGpuKernel("fine", user, now - 5 * kSec, kDay, 0, 1, 7);              // a day: the bound itself
  const HttpResult r = PostBatch((*server)->port(), f.batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);
  EXPECT_EQ(answer["stored_gpu_activities"], 51) << r.body;
  EXPECT_EQ(answer["dropped_bad_gpu_activities"], 6) << r.body;
  const std::string range = "from=" + std::to_string((now - 60 * kSec) / 1'000'000) +
                            "&to=" + std::to_string((now + 60 * kSec) / 1'000'000);
  const json kernels = GetApiJson((*server)->port(), "/api/v1/gpu/kernels?" + range, kToken);
  EXPECT_EQ(kernels["activities"], 51) << kernels.dump();
  server->reset();
  RunProcess({"rm", "-rf", dir});
}

}  // namespace
}  // namespace warpscope::testing
