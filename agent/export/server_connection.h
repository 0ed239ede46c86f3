// ServerConnection: the agent's HTTP client to warpscope-server, one libcurl
// easy handle reused for every request so the connection is kept alive,
// with the token, the user agent, the timeouts and an abort deadline. The
// Uploader sends batches through one (POST /api/v1/ingest), the
// CubinUploader cubins through another (HEAD and PUT
// /api/v1/gpu/cubins/<hash>); both read answers the same way
// (ClassifyHttpStatus) and wait the same way between failures (BackoffDelay).
//
// Threading: a ServerConnection belongs to the thread that sends with it;
// the abort deadline it reads may be set from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace warpscope {

// How one answer is treated:
//   2xx                 kAccepted: done
//   401, 403            kAuthRetry: the token is wrong or missing; kept and retried (fixable on the server)
//   408, 425, 429       kRetry: transient (Retry-After honoured, capped at the caller's max backoff)
//   other 4xx           kRejected: permanent for this request (logged, counted, dropped)
//   5xx, network errors, timeouts, anything else: kRetry
enum class UploadOutcome { kAccepted, kRejected, kRetry, kAuthRetry };
UploadOutcome ClassifyHttpStatus(long http_status);

// The wait before retry number `consecutive_failures` (1-based):
// d = min(max, initial * 2^(n-1)), then a uniform draw in [d/2, d] from `unit`
// (in [0, 1)), so a fleet of agents does not retry in lockstep.
std::chrono::milliseconds BackoffDelay(std::chrono::milliseconds initial, std::chrono::milliseconds max,
                                       uint64_t consecutive_failures, double unit);

struct ServerConnectionOptions {
  std::string server_url;  // "http://host:port" or "https://..."; paths are appended
  std::string token;       // bearer token; empty sends no Authorization header
  std::string user_agent = "warpscope-agent";
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
};

struct ServerAnswer {
  UploadOutcome outcome = UploadOutcome::kRetry;
  long http_status = 0;  // 0: no answer (network error)
  std::string message;   // the server's error message or the network error; "" when accepted
  std::chrono::milliseconds retry_after{0};
};

class ServerConnection {
 public:
  // `abort_at_ns`: a request still running at this steady-clock time (ns)
  // is aborted; must outlive the connection.
  ServerConnection(const ServerConnectionOptions& options, const std::atomic<int64_t>* abort_at_ns);
  ~ServerConnection();
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // `method` (POST or PUT) of `path` with `body`, zstd-compressed already,
  // as `content_type`.
  ServerAnswer Send(const char* method, const std::string& path, const std::string& content_type,
                    const std::string& zstd_body);
  // HEAD of `path`.
  ServerAnswer Head(const std::string& path);

  // "http://host:port/api/v1/ingest" for "/api/v1/ingest": for log lines.
  std::string UrlOf(const std::string& path) const { return base_url_ + path; }

 private:
  ServerAnswer Perform(const std::string& path, void* headers);

  const ServerConnectionOptions options_;
  const std::string base_url_;  // without a trailing '/'
  void* curl_ = nullptr;        // CURL*
  std::string response_;
  char error_[256] = {};        // CURL_ERROR_SIZE
};

}  // namespace warpscope
