// Kubernetes pod metadata for the agent's series: a pod list (the kubelet's
// GET /pods or the API server's GET /api/v1/pods, both a v1 PodList) becomes
// one PodMetadata per pod, keyed by the pod uid the cgroup path shows, with
// the pod's name, namespace, owning workload and the names of its containers
// by container id. PodCache keeps the latest list, bounded, and keeps pods
// that left it for a grace period (a process's last window may still be
// encoded after its pod is gone).
//
// Workload rules (ResolveWorkload), from the pod's controller owner reference:
//   ReplicaSet "<d>-<h>" where h is the pod's pod-template-hash label
//                           -> Deployment "<d>" (else ReplicaSet itself)
//   Job "<c>-<8 or more digits>" -> CronJob "<c>" (the CronJob controller
//                           names its Jobs after the scheduled minute; a Job
//                           named by hand, e.g. "load-2", stays a Job)
//   StatefulSet, DaemonSet, Job, ReplicationController, any other kind
//                           -> that owner, as named
//   Node (a static pod's mirror), no owner -> the pod itself, kind "Pod"
// A pod list does not show a ReplicaSet's own owner: a ReplicaSet made by
// another controller that also sets pod-template-hash (e.g. an Argo Rollout)
// is reported as a Deployment of the same name.
//
// Pure code, no I/O (pod_metadata_source.h fetches); not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/process/process_labels.h"
#include "base/status.h"

namespace warpscope::kubernetes {

struct PodContainer {
  std::string id;    // the runtime's id without its scheme ("containerd://")
  std::string name;  // as in the pod spec
};

struct PodMetadata {
  // As the pod's cgroup path names it: metadata.uid, or for a static pod's
  // mirror in the API server the kubernetes.io/config.mirror annotation (the
  // kubelet's config hash, which is the uid the kubelet and its cgroups use).
  std::string uid;
  std::string name;
  std::string namespace_name;
  std::string workload_kind;
  std::string workload;
  // Containers, init containers and ephemeral containers that have an id
  // (one that has not started yet has none).
  std::vector<PodContainer> containers;

  // What the cache counts against its byte bound: the strings and a fixed
  // overhead per pod and per container.
  size_t Bytes() const;
};

struct OwnerReference {
  std::string kind;
  std::string name;
  bool controller = false;
};

struct Workload {
  std::string kind;
  std::string name;
  bool operator==(const Workload&) const = default;
};

// The rules above. The controller owner is used when one is marked, else the
// first owner.
Workload ResolveWorkload(std::string_view pod_name, const std::vector<OwnerReference>& owners,
                         std::string_view pod_template_hash);

// "containerd://<id>", "cri-o://<id>", "docker://<id>" -> "<id>"; text
// without a scheme is returned as it is.
std::string_view StripContainerIdScheme(std::string_view container_id);

// Parses a v1 PodList. Only what the labels need is kept while parsing
// (spec, managedFields, conditions and all annotations but the mirror one
// are skipped), so a list of large pods costs little more than its text.
// Pods without a uid or a name are left out. InvalidArgument when the text is
// not JSON or not a PodList (e.g. a Status object).
StatusOr<std::vector<PodMetadata>> ParsePodList(std::string_view json);

// The labels of a pod's process: pod, namespace, workload, and the container's
// name when `container_id` is one of the pod's (*container_found says whether).
KubernetesLabels LabelsOf(const PodMetadata& pod, std::string_view container_id, bool* container_found = nullptr);

struct PodCacheOptions {
  size_t max_pods = 4096;
  size_t max_bytes = 8u << 20;
  // How long a pod that is no longer listed stays.
  std::chrono::nanoseconds grace = std::chrono::minutes(2);
};

class PodCache {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PodCache(PodCacheOptions options = {}) : options_(options) {}

  struct UpdateResult {
    size_t listed = 0;    // pods of the list kept
    uint64_t dropped = 0;  // pods left out by the bounds (listed or within their grace)
    // "namespace/name (uid)" of the pods dropped because their grace ran out.
    std::vector<std::string> expired;
  };
  // Replaces the cache with a successful list taken at `now`: the listed pods
  // first, in list order, then those listed before within their grace period,
  // most recently listed first, as long as both bounds hold.
  UpdateResult Update(std::vector<PodMetadata> listed, Clock::time_point now);

  const PodMetadata* Find(std::string_view uid) const;
  size_t size() const { return pods_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Entry {
    PodMetadata pod;
    Clock::time_point last_listed;
    size_t bytes = 0;
  };
  PodCacheOptions options_;
  std::unordered_map<std::string, Entry> pods_;  // by uid
  size_t bytes_ = 0;
};

}  // namespace warpscope::kubernetes
