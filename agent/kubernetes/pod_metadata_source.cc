#include "agent/kubernetes/pod_metadata_source.h"

#include <curl/curl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/ca_bundle.h"
#include "base/duration.h"
#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::kubernetes {
namespace {

constexpr size_t kMaxWanted = 1024;
constexpr size_t kMaxMissing = 4096;
constexpr size_t kMaxErrorBody = 4096;

bool IsUnreservedUrlChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string UrlEncode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    if (IsUnreservedUrlChar(c)) {
      out += c;
    } else {
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    }
  }
  return out;
}

// An IPv6 address goes in brackets in a URL.
std::string UrlHost(const std::string& host) {
  return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

// The token file's text without surrounding whitespace; never echoed.
StatusOr<std::string> ReadToken(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return InvalidArgumentError("the token file " + path + " is empty");
  std::string token = text.substr(b, text.find_last_not_of(" \t\r\n") - b + 1);
  for (char c : token) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return InvalidArgumentError("the token file " + path + " holds whitespace or control characters inside the token");
    }
  }
  return token;
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return !path.empty() && stat(path.c_str(), &st) == 0;
}

// A Kubernetes Status's message ("pods is forbidden: User ... cannot list
// resource ..."), else the start of the body.
std::string ErrorBodyMessage(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto m = j.find("message");
    if (m != j.end() && m->is_string()) return m->get<std::string>().substr(0, 300);
  }
  std::string text = body.substr(0, 200);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

struct Body {
  std::string text;
  size_t max = 0;
  bool too_large = false;
};

size_t CollectBody(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t bytes = size * n;
  if (body->text.size() + bytes > body->max) {
    body->too_large = true;
    return 0;  // ends the transfer (CURLE_WRITE_ERROR)
  }
  body->text.append(data, bytes);
  return bytes;
}

int AbortWhenStopping(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(user)->load(std::memory_order_relaxed) ? 1 : 0;
}

}  // namespace

PodSourceEnvironment PodSourceEnvironment::Process() {
  PodSourceEnvironment env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  env.file_exists = FileExists;
  return env;
}

StatusOr<std::optional<PodListTarget>> ResolvePodListTarget(PodSourceMode mode, const std::string& url,
                                                            const std::string& token_file, const std::string& node_name,
                                                            const PodSourceEnvironment& env) {
  if (mode == PodSourceMode::kOff) return std::optional<PodListTarget>();
  if (!url.empty()) return std::optional<PodListTarget>(PodListTarget{url, "URL"});
  const std::optional<std::string> service_host = env.getenv("KUBERNETES_SERVICE_HOST");
  if (mode == PodSourceMode::kAuto) {
    if (!service_host || !env.file_exists(token_file)) return std::optional<PodListTarget>();
    mode = PodSourceMode::kApiServer;
  }
  if (mode == PodSourceMode::kKubelet) {
    const std::optional<std::string> node_ip = env.getenv("NODE_IP");
    if (!node_ip) {
      return InvalidArgumentError(
          "--kubernetes kubelet needs $NODE_IP (in a DaemonSet: the downward API's status.hostIP) or "
          "--kubernetes-pods-url");
    }
    return std::optional<PodListTarget>(
        PodListTarget{"https://" + UrlHost(*node_ip) + ":" + std::to_string(kKubeletPort) + "/pods", "kubelet"});
  }
  if (!service_host) {
    return InvalidArgumentError("--kubernetes apiserver needs $KUBERNETES_SERVICE_HOST (set in every pod) or "
                                "--kubernetes-pods-url");
  }
  const std::string port = env.getenv("KUBERNETES_SERVICE_PORT").value_or("443");
  return std::optional<PodListTarget>(PodListTarget{
      "https://" + UrlHost(*service_host) + ":" + port + "/api/v1/pods?fieldSelector=" +
          UrlEncode("spec.nodeName=" + node_name) + "&resourceVersion=0",
      "API server"});
}

// One easy handle, reused so the connection is kept alive. Loop thread only.
class PodMetadataSource::Client {
 public:
  Client(const PodSourceOptions& options, const std::atomic<bool>* abort) : options_(options) {
    curl_ = curl_easy_init();
    if (curl_ == nullptr) return;
    curl_easy_setopt(curl_, CURLOPT_URL, options_.url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl_, CURLOPT_USERAGENT, options_.user_agent.c_str());
    curl_easy_setopt(curl_, CURLOPT_ACCEPT_ENCODING, "");  // gzip when the server offers it
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, CollectBody);
    curl_easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, AbortWhenStopping);
    curl_easy_setopt(curl_, CURLOPT_XFERINFODATA, abort);
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_);
    if (options_.insecure_tls) {
      curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (FileExists(options_.ca_file)) {
      curl_easy_setopt(curl_, CURLOPT_CAINFO, options_.ca_file.c_str());
    } else if (!SystemCaBundle().empty()) {
      curl_easy_setopt(curl_, CURLOPT_CAINFO, SystemCaBundle().c_str());
    }
  }
  ~Client() {
    if (curl_ != nullptr) curl_easy_cleanup(curl_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The body of a 200 answer. Error messages never hold the token.
  StatusOr<std::string> Fetch() {
    if (curl_ == nullptr) return InternalError("curl_easy_init failed");
    curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
    if (FileExists(options_.token_file)) {
      StatusOr<std::string> token = ReadToken(options_.token_file);
      if (!token.ok()) {
        curl_slist_free_all(headers);
        return token.status();
      }
      headers = curl_slist_append(headers, ("Authorization: Bearer " + *token).c_str());
    }
    Body body;
    body.max = options_.max_response_bytes;
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &body);
    error_[0] = '\0';
    const CURLcode rc = curl_easy_perform(curl_);
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    if (body.too_large) {
      return ResourceExhaustedError("the pod list is larger than " + std::to_string(options_.max_response_bytes) +
                                    " bytes");
    }
    if (rc != CURLE_OK) {
      return UnavailableError(std::string(error_[0] != '\0' ? error_ : curl_easy_strerror(rc)));
    }
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
      return UnavailableError("HTTP " + std::to_string(status) + ": " +
                              ErrorBodyMessage(body.text.substr(0, kMaxErrorBody)));
    }
    return std::move(body.text);
  }

 private:
  const PodSourceOptions& options_;
  CURL* curl_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

std::unique_ptr<PodMetadataSource> PodMetadataSource::Start(PodSourceOptions options) {
  std::unique_ptr<PodMetadataSource> source(new PodMetadataSource(std::move(options)));
  source->thread_ = std::thread([s = source.get()] { s->Loop(); });
  return source;
}

PodMetadataSource::PodMetadataSource(PodSourceOptions options)
    : options_(std::move(options)), cache_(options_.cache) {}

PodMetadataSource::~PodMetadataSource() { Stop(); }

void PodMetadataSource::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  abort_.store(true, std::memory_order_relaxed);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodMetadataSource::WantLocked(const std::string& key, Clock::time_point now) {
  if (auto it = missing_.find(key); it != missing_.end()) {
    if (now - it->second < options_.unknown_retry) return;
    missing_.erase(it);
  }
  if (wanted_.size() >= kMaxWanted) return;
  if (wanted_.insert(key).second) cv_.notify_all();
}

void PodMetadataSource::Notice(const ContainerInfo& container) {
  if (container.pod_uid.empty()) return;
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  const PodMetadata* pod = cache_.Find(container.pod_uid);
  if (pod == nullptr) {
    WantLocked(container.pod_uid, now);
    return;
  }
  bool found = false;
  (void)LabelsOf(*pod, container.container_id, &found);
  if (!found && !container.container_id.empty()) WantLocked(container.pod_uid + "/" + container.container_id, now);
}

KubernetesLabels PodMetadataSource::Resolve(const ContainerInfo& container) {
  if (container.pod_uid.empty()) return {};
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  const PodMetadata* pod = cache_.Find(container.pod_uid);
  if (pod == nullptr) {
    ++stats_.lookups_missed;
    WantLocked(container.pod_uid, now);
    return {};
  }
  bool found = false;
  KubernetesLabels labels = LabelsOf(*pod, container.container_id, &found);
  if (!found && !container.container_id.empty()) WantLocked(container.pod_uid + "/" + container.container_id, now);
  return labels;
}

PodSourceStats PodMetadataSource::StatsFromAnyThread() const {
  std::lock_guard lock(mu_);
  return stats_;
}

bool PodMetadataSource::WaitForAttemptsFromAnyThread(uint64_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return stats_.fetches + stats_.fetch_errors >= n; });
}

void PodMetadataSource::Loop() {
  Client client(options_, &abort_);
  uint64_t failures_in_a_row = 0;
  std::unique_lock lock(mu_);
  Clock::time_point next_periodic = Clock::now();
  Clock::time_point last_attempt = Clock::now() - options_.min_fetch_gap;
  while (!stopping_) {
    const auto now = Clock::now();
    const Clock::time_point early_at = last_attempt + options_.min_fetch_gap;
    const bool early = !wanted_.empty() && now >= early_at;
    if (now < next_periodic && !early) {
      cv_.wait_until(lock, wanted_.empty() ? next_periodic : std::min(next_periodic, early_at));
      continue;
    }
    std::unordered_set<std::string> asked = std::move(wanted_);
    wanted_.clear();
    lock.unlock();
    StatusOr<std::vector<PodMetadata>> pods = [&]() -> StatusOr<std::vector<PodMetadata>> {
      ASSIGN_OR_RETURN(std::string body, client.Fetch());
      return ParsePodList(body);
    }();
    lock.lock();
    if (stopping_) break;
    last_attempt = Clock::now();
    next_periodic = last_attempt + options_.refresh;
    for (auto it = missing_.begin(); it != missing_.end();) {
      it = last_attempt - it->second >= options_.unknown_retry ? missing_.erase(it) : std::next(it);
    }
    if (missing_.size() + asked.size() > kMaxMissing) missing_.clear();
    if (!pods.ok()) {
      ++stats_.fetch_errors;
      ++failures_in_a_row;
      // No early retries for what was asked: the next periodic fetch tries again.
      for (const std::string& key : asked) missing_[key] = last_attempt;
      cv_.notify_all();
      LOG_WARNING_EVERY_N_SEC(60) << "kubernetes: fetching the pod list from " << options_.url
                                  << " failed: " << pods.status().message() << " (retried every "
                                  << FormatDuration(options_.refresh) << "; pods keep their last known names)";
      continue;
    }
    const size_t listed = pods->size();
    PodCache::UpdateResult r = cache_.Update(std::move(pods).value(), last_attempt);
    ++stats_.fetches;
    stats_.pods = cache_.size();
    stats_.cache_bytes = cache_.bytes();
    stats_.dropped += r.dropped;
    stats_.expired += r.expired.size();
    for (const std::string& key : asked) {
      const size_t slash = key.find('/');
      const PodMetadata* pod = cache_.Find(key.substr(0, slash));
      bool found = pod != nullptr;
      if (pod != nullptr && slash != std::string::npos) (void)LabelsOf(*pod, key.substr(slash + 1), &found);
      if (!found) missing_[key] = last_attempt;
    }
    cv_.notify_all();
    if (stats_.fetches == 1 && listed == 0) {
      // The agent's own pod runs on this node: an empty list means the wrong node.
      LOG_WARNING() << "kubernetes: " << options_.url << " lists no pods; a node name other than the node's own "
                    << "selects none (in a DaemonSet set WARPSCOPE_NODE_NAME from the downward API's spec.nodeName)";
    } else if (stats_.fetches == 1 || failures_in_a_row > 0) {
      LOG_INFO() << "kubernetes: " << listed << " pods listed by " << options_.url
                 << (failures_in_a_row > 0 ? " after " + std::to_string(failures_in_a_row) + " failed fetches" : "");
    }
    failures_in_a_row = 0;
    for (const std::string& name : r.expired) {
      LOG_DEBUG() << "kubernetes: pod " << name << " dropped from the cache (not listed for more than "
                  << FormatDuration(options_.cache.grace) << ")";
    }
    if (r.dropped > 0) {
      LOG_WARNING_EVERY_N_SEC(60) << "kubernetes: " << r.dropped << " pods left out of the cache (bounds: "
                                  << options_.cache.max_pods << " pods, " << options_.cache.max_bytes << " bytes)";
    }
  }
}

}  // namespace warpscope::kubernetes
