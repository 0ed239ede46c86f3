// mcp_seed: fills a running warpscope-server with two minutes of known
// numbers for the MCP client test (mcp_client_test.mjs), ending a minute
// before now:
//  * node "mcp-node", process python3 (pid 4242), GPU 0: the process's own
//    SM utilization 8 % every 5 s and its memory, while its main thread
//    runs a whole core (19 samples a second at 19 Hz) in tokenize_batch
//    under main: the gpu_starved_by_cpu case. A second thread, loader,
//    runs 4 samples a second in read_shard.
//  * the GPU's own metrics every second: gpu_utilization 10 %, every tenth
//    second 90 % (mean 18, min 10, max 90, p95 90); gpu_power 300 W;
//    gpu_memory_used 40 GiB.
//  * 100 launches of gemm_kernel (2 ms each) by the process.
// Prints `from_ms=<ms> to_ms=<ms>`, the two minutes.
// Usage: mcp_seed PORT TOKEN
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"

namespace {

using warpscope::testing::BatchFactory;
using Labels = std::vector<std::pair<std::string, std::string>>;
constexpr int64_t kSec = 1'000'000'000;
constexpr int kSeconds = 120;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mcp_seed PORT TOKEN\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const std::string token = argv[2];
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  // Whole minutes, so every 5 s step of the insights' query is one of ours.
  const int64_t from = (now / (60 * kSec) - 3) * 60 * kSec;
  const int64_t to = from + kSeconds * kSec;

  const Labels process = {{"node", "mcp-node"}, {"pid", "4242"}, {"comm", "python3"}};
  auto with = [](Labels labels, const Labels& more) {
    labels.insert(labels.end(), more.begin(), more.end());
    return labels;
  };
  const Labels gpu = {{"node", "mcp-node"}, {"gpu", "0"}, {"uuid", "GPU-mcp-0"}, {"gpu_name", "NVIDIA H100"},
                      {"pci_bus_id", "00000000:19:00.0"}};
  BatchFactory f("mcp-seed", 1, from, to);
  for (int s = 0; s < kSeconds; ++s) {
    const int64_t t = from + s * kSec;
    f.Add("py:main@train.py:1;py:tokenize_batch@data.py:42", with(process, {{"thread", "python3"}}), 19, t);
    f.Add("py:main@train.py:1;py:load@data.py:7;read_shard@libshard.so", with(process, {{"thread", "loader"}}), 4, t);
    f.AddMetric("gpu_utilization", "percent", gpu, s % 10 == 9 ? 90 : 10, t);
    f.AddMetric("gpu_power", "watts", gpu, 300, t);
    f.AddMetric("gpu_memory_used", "bytes", gpu, 40.0 * (1 << 30), t);
    if (s % 5 == 0) {
      f.AddMetric("gpu_process_sm_utilization", "percent", with(process, {{"gpu", "0"}, {"uuid", "GPU-mcp-0"}}), 8, t);
      f.AddMetric("gpu_process_memory_used", "bytes", with(process, {{"gpu", "0"}, {"uuid", "GPU-mcp-0"}}),
                  2.0 * (1 << 30), t);
    }
  }
  for (int i = 0; i < 100; ++i) {
    f.AddGpuKernel("gemm_kernel", process, from + i * kSec, 2'000'000, 0, 7, static_cast<uint64_t>(i + 1));
  }
  const auto r = warpscope::testing::PostBatch(port, f.batch(), token);
  if (r.status != 200) {
    std::fprintf(stderr, "mcp_seed: HTTP %d %s\n", r.status, r.body.c_str());
    return 1;
  }
  std::printf("from_ms=%lld to_ms=%lld\n", static_cast<long long>(from / 1'000'000),
              static_cast<long long>(to / 1'000'000));
  return 0;
}
