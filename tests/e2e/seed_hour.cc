// e2e_seed_hour: fills a running warpscope-server with one hour of synthetic
// CPU samples (a 10 s step, a few hundred distinct stacks whose mix drifts
// over the hour) for the web UI's "select a range of 1 h of data" measurement
// (tests/e2e/ui_e2e.mjs). Usage: e2e_seed_hour PORT TOKEN NODE
#include <chrono>
#include <cstdio>
#include <string>

#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"

int main(int argc, char** argv) {
  using warpscope::testing::BatchFactory;
  if (argc != 4) {
    std::fprintf(stderr, "usage: e2e_seed_hour PORT TOKEN NODE\n");
    return 2;
  }
  const int port = std::stoi(argv[1]);
  const std::string token = argv[2];
  const std::string node = argv[3];
  constexpr int64_t kSec = 1'000'000'000;
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t start_ns = now_ns - 3600 * kSec;
  // One batch per 5 minutes, as an agent with a long upload interval would send.
  constexpr int kBatches = 12;
  constexpr int64_t kBatchNs = 300 * kSec;
  for (int b = 0; b < kBatches; ++b) {
    BatchFactory f("e2e-seed-" + node, b + 1, start_ns + b * kBatchNs, start_ns + (b + 1) * kBatchNs);
    for (int64_t t = 0; t < kBatchNs; t += 10 * kSec) {
      const int minute = static_cast<int>((b * kBatchNs + t) / (60 * kSec));
      for (int s = 0; s < 240; ++s) {
        const std::string stack = "main@server;serve_" + std::to_string(s % 6) + "@server;handle_" +
                                  std::to_string(s % 24) + "@server;work_" + std::to_string(s) +
                                  "@libwork.so;leaf_" + std::to_string(s % 17) + "@libc.so.6";
        // The mix drifts: early in the hour low stacks dominate, later high ones.
        const int64_t value = 1 + ((s * 7 + minute * (s % 5 + 1)) % 9) + (minute > 30 && s > 120 ? 4 : 0);
        f.Add(stack, {{"node", node}, {"comm", "synthetic"}, {"pid", "4242"}}, value, start_ns + b * kBatchNs + t);
      }
    }
    auto r = warpscope::testing::PostBatch(port, f.batch(), token);
    if (r.status != 200) {
      std::fprintf(stderr, "e2e_seed_hour: batch %d: HTTP %d %s\n", b, r.status, r.body.c_str());
      return 1;
    }
  }
  return 0;
}
