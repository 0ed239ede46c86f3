// A real warpscope-server process on loopback (CONTRIBUTING.md, "Tests"), and a small
// HTTP client for its API (zstd-compressed ingest, GETs). Used by the
// integration tests and by the load generator (bench/server_load), which
// also reads what the process used from Stop()'s answer.
//
// Threading: a ServerProcess belongs to the thread that started it; its
// stderr reader thread only appends to the log under mu_.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"

namespace warpscope::testing {

// What a stopped server used over its whole life (wait4's rusage).
struct ServerExit {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that ended it, if any
  double cpu_seconds = 0;
  int64_t peak_rss_bytes = 0;
  double stop_seconds = 0;  // SIGTERM to exit (the final flush)
};

// Starts `binary --listen 127.0.0.1:<port> --data-dir DIR [extra...]` and
// waits (up to 120 s: a restart may replay a long WAL) for its "serving on"
// line. Port 0 lets the kernel pick (read port()); a restart passes the old
// port so clients keep their address.
class ServerProcess {
 public:
  static StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& binary, const std::string& data_dir,
                                                        const std::vector<std::string>& extra_args = {},
                                                        int port = 0);
  ~ServerProcess();  // SIGKILLs the process if still running

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // From fork to the "serving on" line.
  double start_seconds() const { return start_seconds_; }
  // What the server wrote to stderr so far (the last 2-4 MiB of it).
  std::string log() const;

  void Kill();  // SIGKILL and reap
  // SIGTERM, then wait up to timeout_s (SIGKILL after that).
  ServerExit Stop(int timeout_s = 20);

 private:
  ServerProcess() = default;
  ServerExit Reap(int timeout_s);

  pid_t pid_ = -1;
  int port_ = 0;
  double start_seconds_ = 0;
  int stderr_fd_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::string log_;  // guarded by mu_
};

struct HttpResult {
  int status = 0;  // 0 when no answer came (connection refused, timeout)
  std::string body;
  std::string content_type;
};

HttpResult HttpGet(int port, const std::string& path_and_query, const std::string& token = "");
// POSTs body with Content-Encoding: zstd (compressed here) unless raw is set.
HttpResult HttpPostIngest(int port, const std::string& body, const std::string& token = "",
                          const std::string& content_type = "application/x-protobuf", bool compress = true);
HttpResult PostBatch(int port, const warpscope::v1::IngestBatch& batch, const std::string& token = "");
HttpResult HttpHead(int port, const std::string& path, const std::string& token = "");
// PUT /api/v1/gpu/cubins/<hash> with `bytes`, zstd-compressed unless !compress.
HttpResult HttpPutCubin(int port, const std::string& hash, const std::string& bytes, const std::string& token = "",
                        bool compress = true);

// Percent-encodes a query parameter value.
std::string UrlEncode(const std::string& text);

}  // namespace warpscope::testing
