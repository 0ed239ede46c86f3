// Opens the ProfileStore that warpscope-server's flags name, so main() stays
// a list of steps: the embedded store under --data-dir, or ClickHouse.
//
// ClickHouse may be unreachable when a replica starts (a deploy that starts
// both at once, ClickHouse restarting): Unavailable is retried with backoff
// for --clickhouse-start-timeout, one log line per attempt, then given up.
// Every other error (bad URL, wrong password, a schema newer than this
// server) is returned at once: retrying would not change it.
//
// Threading: called once from main's thread before the HTTP server starts.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "base/status.h"
#include "server/server_options.h"
#include "storage/profile_store.h"

namespace warpscope::server {

// Sleeps up to `d` between attempts; false when the server was asked to stop
// meanwhile (SIGTERM during the start-up retries), which ends the retries.
using RetryWait = std::function<bool(std::chrono::milliseconds d)>;

// Unavailable after the start timeout names the URL, how long it tried and
// the last error.
StatusOr<std::unique_ptr<storage::ProfileStore>> OpenStore(const ServerOptions& options, const RetryWait& wait);

// The delay before retry `attempt` (0-based): 0.5 s doubling to 5 s, and
// never past `left`.
std::chrono::milliseconds StartRetryDelay(int attempt, std::chrono::milliseconds left);

}  // namespace warpscope::server
