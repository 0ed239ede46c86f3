#include "agent/export/server_connection.h"

#include <curl/curl.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/ca_bundle.h"

namespace warpscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxResponseBytes = 64 * 1024;

// The server's errors are {"error": {"code": N, "message": "..."}}; anything
// else is shown as (the start of) the raw body.
std::string ErrorMessage(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("error") && json["error"].is_object() && json["error"].contains("message") &&
      json["error"]["message"].is_string()) {
    return json["error"]["message"].get<std::string>();
  }
  std::string text = body.substr(0, 200);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

size_t CollectBody(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  const size_t bytes = size * n;
  if (out->size() < kMaxResponseBytes) out->append(data, std::min(bytes, kMaxResponseBytes - out->size()));
  return bytes;
}

int AbortAtDeadline(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* abort_at_ns = static_cast<const std::atomic<int64_t>*>(user);
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  return now >= abort_at_ns->load(std::memory_order_relaxed) ? 1 : 0;
}

std::string WithoutTrailingSlashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

UploadOutcome ClassifyHttpStatus(long status) {
  if (status >= 200 && status < 300) return UploadOutcome::kAccepted;
  if (status == 401 || status == 403) return UploadOutcome::kAuthRetry;
  if (status == 408 || status == 425 || status == 429) return UploadOutcome::kRetry;
  if (status >= 400 && status < 500) return UploadOutcome::kRejected;
  // 5xx, and answers the server never gives (1xx, 3xx: a proxy or a wrong
  // URL, fixable without losing data).
  return UploadOutcome::kRetry;
}

std::chrono::milliseconds BackoffDelay(std::chrono::milliseconds initial, std::chrono::milliseconds max,
                                       uint64_t consecutive_failures, double unit) {
  if (consecutive_failures == 0) return std::chrono::milliseconds(0);
  std::chrono::milliseconds d = initial;
  for (uint64_t i = 1; i < consecutive_failures && d < max; ++i) d *= 2;
  d = std::min(d, max);
  const auto half = d / 2;
  return half + std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>((d - half).count()) * unit));
}

ServerConnection::ServerConnection(const ServerConnectionOptions& options, const std::atomic<int64_t>* abort_at_ns)
    : options_(options), base_url_(WithoutTrailingSlashes(options.server_url)) {
  static_assert(sizeof(error_) >= CURL_ERROR_SIZE);
  CURL* curl = curl_easy_init();
  curl_ = curl;
  if (curl == nullptr) return;
  curl_easy_setopt(curl, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, CollectBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response_);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortAtDeadline);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, abort_at_ns);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_);
  if (!SystemCaBundle().empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, SystemCaBundle().c_str());
}

ServerConnection::~ServerConnection() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

ServerAnswer ServerConnection::Send(const char* method, const std::string& path, const std::string& content_type,
                                    const std::string& zstd_body) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_slist* headers = nullptr;
  if (curl != nullptr) {
    headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    headers = curl_slist_append(headers, "Content-Encoding: zstd");
    curl_easy_setopt(curl, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string_view(method) == "POST" ? nullptr : method);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, zstd_body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(zstd_body.size()));
  }
  return Perform(path, headers);
}

ServerAnswer ServerConnection::Head(const std::string& path) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl != nullptr) {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, nullptr);
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);  // forgets the last request's body
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  }
  return Perform(path, nullptr);
}

ServerAnswer ServerConnection::Perform(const std::string& path, void* header_list) {
  ServerAnswer answer;
  CURL* curl = static_cast<CURL*>(curl_);
  curl_slist* headers = static_cast<curl_slist*>(header_list);
  if (curl == nullptr) {
    answer.message = "curl_easy_init failed";
    return answer;
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  if (!options_.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + options_.token).c_str());
  const std::string url = UrlOf(path);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  response_.clear();
  error_[0] = '\0';
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    answer.message = error_[0] ? error_ : curl_easy_strerror(rc);
    return answer;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.http_status);
  curl_off_t retry_after = 0;
  if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0) {
    answer.retry_after = std::chrono::seconds(retry_after);
  }
  answer.outcome = ClassifyHttpStatus(answer.http_status);
  if (answer.outcome != UploadOutcome::kAccepted) answer.message = ErrorMessage(response_);
  return answer;
}

}  // namespace warpscope
