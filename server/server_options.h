// Command-line flags of warpscope-server. Pure parsing over argv (and the one
// environment variable main() hands in) so every error message is
// unit-tested; nothing here touches the system except reading --token-file
// and --clickhouse-password-file.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::server {

// Where profiles live: the embedded store under --data-dir (the default, one
// server), or a ClickHouse database shared by any number of server replicas.
enum class StorageKind { kEmbedded, kClickHouse };

struct ServerOptions {
  std::string listen = "127.0.0.1:7070";
  std::string data_dir = "./warpscope-data";
  std::string token;  // from --token or --token-file; never logged
  // What the flags allow but an operator should hear about (a short token, a
  // token file others can read or write); main prints each line at start.
  // They never name the token itself.
  std::vector<std::string> warnings;
  bool insecure_listen_any = false;
  std::chrono::nanoseconds retention = std::chrono::hours(24 * 14);  // 0 keeps everything
  size_t max_request_bytes = 16u << 20;
  // The cubin store (storage/cubin_store.h): one cubin, and all of them.
  uint64_t cubin_max_bytes = uint64_t{32} << 20;
  uint64_t cubin_store_bytes = uint64_t{1} << 30;
  int threads = 8;         // query workers
  int ingest_threads = 4;  // ingest and /healthz workers, apart from the queries'
  // Each query stops with 503 past this.
  std::chrono::nanoseconds query_timeout = std::chrono::seconds(30);
  // Open connections, in all and from one client address.
  size_t max_connections = 4096;
  size_t max_connections_per_client = 256;
  // The embedded store opens even when segments or WAL records are unreadable
  // or missing: what cannot be read is moved to <data-dir>/quarantine/ and
  // answers over it say so (docs/getting-started.md, "Limits and failure modes").
  bool repair = false;
  bool help = false;
  // The energy answer's default coefficients (docs/design/energy.md); unset
  // keeps query::EnergyCoefficients' own. A query's parameters win.
  std::optional<double> pue;
  std::optional<double> carbon_intensity;  // gCO₂e per kWh
  std::optional<double> price_per_kwh;
  std::optional<double> cpu_watts_per_core;
  // --region-carbon-intensity REGION=G (repeatable): gCO₂e per kWh of a
  // region named by agents' `region` label, added to or replacing the
  // built-in table (query/carbon_regions.h).
  std::map<std::string, double> region_carbon_intensity;

  StorageKind storage = StorageKind::kEmbedded;
  // --storage clickhouse://HOST:PORT/DATABASE (or https://...: TLS), as
  // given; checked by clickhouse::ParseClickHouseUrl at parse time.
  std::string clickhouse_url;
  std::string clickhouse_user;      // empty: ClickHouse's "default" user
  std::string clickhouse_password;  // from the file or the environment; never logged
  std::string clickhouse_ca_file;   // --clickhouse-ca-file: verify an https ClickHouse against it
  // At start, how long an unreachable ClickHouse is retried before the
  // server gives up (exit 1); 0 tries once.
  std::chrono::nanoseconds clickhouse_start_timeout = std::chrono::seconds(60);
  // Each request to ClickHouse (insert or query) gives up after this.
  std::chrono::nanoseconds clickhouse_request_timeout = std::chrono::seconds(30);
};

// What ParseServerArgs reads from the environment; main() fills it with
// getenv so tests can pass their own.
struct ServerEnvironment {
  // WARPSCOPE_CLICKHOUSE_PASSWORD: used when --clickhouse-password-file is not given.
  std::optional<std::string> clickhouse_password;
};

// A shorter token is accepted with a warning (ServerOptions::warnings).
inline constexpr size_t kMinTokenChars = 16;

inline constexpr char kClickHousePasswordEnv[] = "WARPSCOPE_CLICKHOUSE_PASSWORD";

// argv without the program name. InvalidArgument with a one-line message.
StatusOr<ServerOptions> ParseServerArgs(const std::vector<std::string>& args, const ServerEnvironment& env = {});

// "embedded store in DIR" or "ClickHouse at URL as USER": for the startup
// line. Never contains the password.
std::string DescribeStorage(const ServerOptions& options);

std::string ServerUsage();

}  // namespace warpscope::server
