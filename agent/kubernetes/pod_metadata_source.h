// Where the agent gets pod metadata (docs/getting-started.md, "Kubernetes"):
// the pod list of this node, fetched over HTTP(S) with libcurl on a thread of
// its own, parsed (pod_metadata.h) and cached, so that the sampling thread
// only ever looks up a map under a mutex and never waits for the network.
//
// The list is fetched at start, then every `refresh`, and sooner when a
// process of a pod (or a container) the cache does not know shows up, at
// most once per `min_fetch_gap`; a pod or container still unknown after the
// list that was fetched for it asks again only after `unknown_retry`.
// Failures (connection, TLS, HTTP status, a body over the limit, JSON that is
// not a PodList) are counted and logged at most once a minute, and the cache
// keeps what it had.
//
// Threading: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "agent/kubernetes/pod_metadata.h"
#include "agent/process/container_labels.h"
#include "agent/process/process_labels.h"
#include "base/status.h"

namespace warpscope::kubernetes {

inline constexpr char kServiceAccountTokenFile[] = "/var/run/secrets/kubernetes.io/serviceaccount/token";
inline constexpr char kServiceAccountCaFile[] = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
inline constexpr uint16_t kKubeletPort = 10250;

enum class PodSourceMode { kAuto, kOff, kKubelet, kApiServer };

// What the environment tells; injectable for tests.
struct PodSourceEnvironment {
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::function<bool(const std::string&)> file_exists;
  static PodSourceEnvironment Process();  // getenv(3) and stat(2)
};

struct PodListTarget {
  std::string url;
  std::string source;  // "kubelet", "API server" or "URL", for messages
};

// The URL to fetch, or nullopt when pod metadata is off:
//  - off: nullopt.
//  - auto: nullopt unless $KUBERNETES_SERVICE_HOST is set and `token_file`
//    exists (the agent runs in a pod); then like apiserver.
//  - apiserver: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
//    /api/v1/pods?fieldSelector=spec.nodeName%3D<node_name>&resourceVersion=0
//    (served from the API server's cache).
//  - kubelet: https://$NODE_IP:10250/pods.
// A non-empty `url` is used as it is in every mode but off (auto then means
// on). InvalidArgument when the mode's variables are missing.
StatusOr<std::optional<PodListTarget>> ResolvePodListTarget(PodSourceMode mode, const std::string& url,
                                                            const std::string& token_file, const std::string& node_name,
                                                            const PodSourceEnvironment& env);

struct PodSourceOptions {
  std::string url;
  // Read before every request (projected service-account tokens are rotated
  // by the kubelet); a missing file sends no Authorization header.
  std::string token_file = kServiceAccountTokenFile;
  // HTTPS: the CA that signed the server's certificate; a missing file means
  // the system's CAs.
  std::string ca_file = kServiceAccountCaFile;
  bool insecure_tls = false;  // no certificate or host name check (kubelets with self-signed certificates)
  std::chrono::milliseconds refresh{15000};
  std::chrono::milliseconds min_fetch_gap{2000};
  // A pod or container still unknown after the fetch it asked for asks
  // again only after this (a pod sandbox's "pause" container is never listed).
  std::chrono::milliseconds unknown_retry{60000};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{10000};
  size_t max_response_bytes = 32u << 20;
  PodCacheOptions cache;
  std::string user_agent = "warpscope-agent";
};

struct PodSourceStats {
  uint64_t fetches = 0;       // pod lists fetched and parsed
  uint64_t fetch_errors = 0;  // failed fetches (network, TLS, HTTP, size, parse)
  uint64_t pods = 0;          // in the cache now
  uint64_t cache_bytes = 0;   // the cache's size as counted against its bound
  uint64_t dropped = 0;       // pods left out by the cache's bounds
  uint64_t expired = 0;       // pods dropped after their grace period
  uint64_t lookups_missed = 0;  // processes whose pod was not in the cache when a batch was built
};

class PodMetadataSource {
 public:
  // Starts the fetch thread (the first fetch begins at once).
  static std::unique_ptr<PodMetadataSource> Start(PodSourceOptions options);
  ~PodMetadataSource();  // Stop()
  PodMetadataSource(const PodMetadataSource&) = delete;
  PodMetadataSource& operator=(const PodMetadataSource&) = delete;

  // Ends a fetch in progress and joins the thread. Lookups still answer from the cache.
  void Stop();

  // A process of this container was seen: an unknown pod or container asks
  // for an early refresh. Returns at once.
  void Notice(const ContainerInfo& container);
  // The pod's labels, or empty ones (and an early refresh asked for) when the
  // pod is unknown; a known pod whose container is not listed yet gets every
  // label but container.
  KubernetesLabels Resolve(const ContainerInfo& container);

  PodSourceStats StatsFromAnyThread() const;
  // For tests: waits until `fetches + fetch_errors` reaches n.
  bool WaitForAttemptsFromAnyThread(uint64_t n, std::chrono::milliseconds timeout) const;

 private:
  using Clock = std::chrono::steady_clock;
  class Client;

  explicit PodMetadataSource(PodSourceOptions options);
  void Loop();
  // Asks for an early refresh for `key` (a pod uid, or "uid/container_id")
  // unless a list fetched for it lacked it less than unknown_retry ago.
  void WantLocked(const std::string& key, Clock::time_point now);

  const PodSourceOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // wakes the loop; tells waiters of attempts
  bool stopping_ = false;
  PodCache cache_;                                       // guarded by mu_
  std::unordered_set<std::string> wanted_;               // keys asking for an early refresh, guarded by mu_
  std::unordered_map<std::string, Clock::time_point> missing_;  // keys a list lacked, and when; guarded by mu_
  PodSourceStats stats_;                                 // guarded by mu_
  std::atomic<bool> abort_{false};  // ends a transfer in progress
  std::thread thread_;
};

}  // namespace warpscope::kubernetes
