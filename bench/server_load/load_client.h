// The HTTP side of server_load: the backfill (many nodes' 10 s windows posted
// over a few keep-alive connections, each node's windows in order) and timed
// profile queries.
//
// Threading: RunBackfill starts `clients` poster threads and a progress
// thread, and returns when they are done; everything they share sits behind
// one mutex (the node scheduler) or is atomic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/server_load/fleet_model.h"

namespace warpscope::bench {

struct ServerAddress {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string token;
};
// "http://host:port" (no path, no TLS).
StatusOr<ServerAddress> ParseServerUrl(const std::string& url, const std::string& token);

struct BackfillOptions {
  int clients = 8;
  int64_t first_window = 0;  // in units of window_ns since the epoch
  int64_t windows = 360;
  std::string agent_prefix;  // agent_id = prefix + node name; a fresh prefix per run keeps sequences valid
  int zstd_level = 3;
  bool progress = true;  // a line on stderr every 5 s
};

struct BackfillResult {
  double wall_seconds = 0;
  double client_cpu_seconds = 0;  // this process (generation, encoding, HTTP client)
  int64_t batches = 0, rows = 0, sample_values = 0;
  int64_t raw_bytes = 0, wire_bytes = 0;
  int64_t duplicates = 0, retries = 0, stored_mismatches = 0;
  std::vector<double> latencies_ms;  // one per accepted batch
  // Window sums of sample values, [node * windows + w], to check query answers.
  std::vector<int64_t> window_values;
  // The first failure, precisely: the request and the answer.
  std::string error;
};

BackfillResult RunBackfill(const FleetModel& fleet, const ServerAddress& server, const BackfillOptions& options);

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection refused, timeout)
  std::string body;
  double ms = 0;
};
HttpAnswer TimedGet(const ServerAddress& server, const std::string& path_and_query);


}  // namespace warpscope::bench
