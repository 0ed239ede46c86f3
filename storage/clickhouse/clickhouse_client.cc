#include "storage/clickhouse/clickhouse_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

#include "base/ca_bundle.h"

namespace warpscope::clickhouse {
namespace {

// ClickHouse error codes (src/Common/ErrorCodes.cpp) the store treats specially.
constexpr int kTimeoutExceeded = 159;
constexpr int kTooSlow = 160;
constexpr int kTooManyRows = 158;
constexpr int kTooManyBytes = 307;
constexpr int kTooManyRowsOrBytes = 396;
constexpr int kTooManySimultaneousQueries = 202;
constexpr int kSocketTimeout = 209;
constexpr int kNetworkError = 210;
constexpr int kMemoryLimitExceeded = 241;
constexpr int kTableIsReadOnly = 242;
constexpr int kTooManyParts = 252;
constexpr int kUnknownUser = 192;
constexpr int kWrongPassword = 193;
constexpr int kRequiredPassword = 194;
constexpr int kIpAddressNotAllowed = 195;
constexpr int kCannotCompileRegexp = 427;
constexpr int kAccessDenied = 497;
constexpr int kAuthenticationFailed = 516;

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Keeps X-ClickHouse-Exception-Code (ClickHouse 19.x+; 18.16 sends none).
size_t ReadHeader(char* data, size_t size, size_t n, void* user) {
  const std::string_view line(data, size * n);
  constexpr std::string_view kName = "x-clickhouse-exception-code:";
  if (line.size() > kName.size()) {
    std::string lower(line.substr(0, kName.size()));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kName) {
      int code = 0;
      for (char c : line.substr(kName.size())) {
        if (std::isdigit(static_cast<unsigned char>(c))) code = code * 10 + (c - '0');
      }
      *static_cast<int*>(user) = code;
    }
  }
  return size * n;
}

std::string OneLine(std::string text, size_t limit) {
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string Escape(CURL* curl, const std::string& s) {
  char* e = curl_easy_escape(curl, s.data(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : "";
  curl_free(e);
  return out;
}

void InitCurlOnce() {
  // libcurl's one process-wide initialization (not thread-safe before 7.84).
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

int ParseClickHouseErrorCode(const std::string& body) {
  const size_t at = body.find("Code: ");
  if (at == std::string::npos) return 0;
  int code = 0;
  for (size_t i = at + 6; i < body.size() && std::isdigit(static_cast<unsigned char>(body[i])); ++i) {
    code = code * 10 + (body[i] - '0');
    if (code > 1'000'000) break;
  }
  return code;
}

Status StatusForClickHouseError(long http_status, int code, const std::string& message,
                                const std::string& transport_error, const std::string& where) {
  if (http_status == 0) return UnavailableError("ClickHouse at " + where + " unreachable: " + transport_error);
  const std::string text = "ClickHouse at " + where + ": HTTP " + std::to_string(http_status) +
                           (code != 0 ? ", code " + std::to_string(code) : "") + ": " + OneLine(message, 600);
  switch (code) {
    case kUnknownUser:
    case kWrongPassword:
    case kRequiredPassword:
    case kIpAddressNotAllowed:
    case kAccessDenied:
    case kAuthenticationFailed:
      return PermissionDeniedError(text);
    case kTooManySimultaneousQueries:
    case kSocketTimeout:
    case kNetworkError:
    case kMemoryLimitExceeded:
    case kTableIsReadOnly:
    case kTooManyParts:
      return UnavailableError(text);
    case kCannotCompileRegexp:
      return InvalidArgumentError("selector: ClickHouse cannot compile the regex (RE2 syntax): " +
                                  OneLine(message, 300));
    case kTimeoutExceeded:
    case kTooSlow:
    case kTooManyRows:
    case kTooManyBytes:
    case kTooManyRowsOrBytes:
      return InvalidArgumentError(
          "range too long for ClickHouse's limits; choose a shorter range or a narrower "
          "selector (" +
          text + ")");
    default:
      break;
  }
  if (http_status == 401 || http_status == 403) return PermissionDeniedError(text);
  // A proxy or load balancer in front of ClickHouse without a ClickHouse answer.
  if (code == 0 && (http_status == 502 || http_status == 503 || http_status == 504)) return UnavailableError(text);
  return InternalError(text);
}

ClickHouseClient::ClickHouseClient(ClickHouseEndpoint endpoint, ClickHouseClientOptions options)
    : endpoint_(std::move(endpoint)), options_(std::move(options)) {
  InitCurlOnce();
}

ClickHouseClient::~ClickHouseClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* ClickHouseClient::TakeHandle() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void ClickHouseClient::ReturnHandle(void* handle) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (idle_.size() < options_.max_idle_handles) {
    idle_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

StatusOr<std::string> ClickHouseClient::Send(const ClickHouseRequest& request, int* clickhouse_code) {
  if (clickhouse_code != nullptr) *clickhouse_code = 0;
  int timeout_ms = options_.timeout_ms;
  if (request.deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*request.deadline -
                                                                            std::chrono::steady_clock::now());
    if (left.count() <= 0) return DeadlineExceededError("query ran past its deadline before ClickHouse answered");
    timeout_ms = static_cast<int>(std::min<int64_t>(timeout_ms, left.count()));
  }
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) return InternalError("curl_easy_init failed");
  // Reset drops the last request's options but keeps the connection cache.
  curl_easy_reset(curl);

  std::string url = endpoint_.BaseUrl() + "?";
  auto param = [&](const std::string& k, const std::string& v) {
    if (url.back() != '?') url += '&';
    url += k + "=" + Escape(curl, v);
  };
  if (request.in_database) param("database", endpoint_.database);
  if (request.read) {
    param("wait_end_of_query", "1");
    param("max_execution_time", std::to_string(std::max(1, timeout_ms / 1000)));
  }
  for (const auto& [k, v] : request.settings) param(k, v);
  for (const ExternalTable& t : request.tables) {
    param(t.name + "_structure", t.structure);
    param(t.name + "_format", "RowBinary");
  }

  curl_mime* mime = nullptr;
  if (!request.tables.empty()) {
    mime = curl_mime_init(curl);
    curl_mimepart* q = curl_mime_addpart(mime);
    curl_mime_name(q, "query");
    curl_mime_data(q, request.sql.data(), request.sql.size());
    for (const ExternalTable& t : request.tables) {
      curl_mimepart* part = curl_mime_addpart(mime);
      curl_mime_name(part, t.name.c_str());
      curl_mime_filename(part, t.name.c_str());
      curl_mime_data(part, t.data.data(), t.data.size());
    }
    curl_easy_setopt(curl, CURLOPT_MIMEPOST, mime);
  } else if (!request.data.empty()) {
    param("query", request.sql);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.data.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.data.size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.sql.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.sql.size()));
  }

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  headers = curl_slist_append(
      headers, ("X-ClickHouse-User: " + (options_.user.empty() ? std::string("default") : options_.user)).c_str());
  if (!options_.password.empty()) {
    headers = curl_slist_append(headers, ("X-ClickHouse-Key: " + options_.password).c_str());
  }
  std::string body;
  int header_code = 0;
  char curl_error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(timeout_ms, 5000)));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  const std::string& ca_file = options_.ca_file.empty() ? SystemCaBundle() : options_.ca_file;
  if (!ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &header_code);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
  const CURLcode rc = curl_easy_perform(curl);
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  curl_slist_free_all(headers);
  if (mime != nullptr) curl_mime_free(mime);
  if (rc != CURLE_OK) {
    // A dead connection must not go back to the pool.
    curl_easy_cleanup(curl);
    const std::string why = std::string(curl_error[0] != 0 ? curl_error : curl_easy_strerror(rc)) + " (curl " +
                            std::to_string(static_cast<int>(rc)) + ")";
    if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL) {
      return InvalidArgumentError("ClickHouse URL " + endpoint_.ToString() + ": " + why);
    }
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
      return FailedPreconditionError("ClickHouse at " + endpoint_.ToString() + ": TLS: " + why);
    }
    return StatusForClickHouseError(0, 0, "", why, endpoint_.ToString());
  }
  ReturnHandle(curl);
  if (http_status == 200) return body;
  const int code = header_code != 0 ? header_code : ParseClickHouseErrorCode(body);
  if (clickhouse_code != nullptr) *clickhouse_code = code;
  Status status = StatusForClickHouseError(http_status, code, body, "", endpoint_.ToString());
  if (status.code() == StatusCode::kInternal) {
    status = status.WithContext("statement \"" + OneLine(request.sql, 300) + "\"");
  }
  return status;
}

StatusOr<std::string> ClickHouseClient::Execute(const ClickHouseRequest& request, const RetryPolicy& retry) {
  int backoff_ms = retry.first_backoff_ms;
  for (int attempt = 1;; ++attempt) {
    StatusOr<std::string> result = Send(request);
    if (result.ok() || result.status().code() != StatusCode::kUnavailable || attempt >= retry.attempts) {
      return result;
    }
    if (request.deadline &&
        std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff_ms) >= *request.deadline) {
      return DeadlineExceededError(result.status().message() + "; no time left to retry before the deadline");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms *= 4;
  }
}

}  // namespace warpscope::clickhouse
