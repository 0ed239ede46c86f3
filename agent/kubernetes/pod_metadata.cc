#include "agent/kubernetes/pod_metadata.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <unordered_set>

namespace warpscope::kubernetes {
namespace {

using nlohmann::json;

constexpr char kMirrorAnnotation[] = "kubernetes.io/config.mirror";
constexpr char kTemplateHashLabel[] = "pod-template-hash";
// The CronJob controller names a Job "<cronjob>-<scheduled time in minutes>"
// (8 digits since 1973; older controllers used seconds, 10).
constexpr size_t kMinCronJobSuffixDigits = 8;
constexpr size_t kPodOverheadBytes = 256;
constexpr size_t kContainerOverheadBytes = 64;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string StringAt(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

template <size_t N>
bool OneOf(const std::string& s, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

constexpr std::array<std::string_view, 6> kMetadataKeys = {"name", "namespace", "uid", "labels",
                                                           "ownerReferences", "annotations"};
constexpr std::array<std::string_view, 3> kStatusKeys = {"containerStatuses", "initContainerStatuses",
                                                         "ephemeralContainerStatuses"};

// What ParsePodList keeps, by the path of keys from the list down: depth 1
// is the list's keys, 3 a pod's, 4 its metadata's or status's, 5 a label or
// annotation, 6 a container status's.
class PodListFilter {
 public:
  bool operator()(int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key) return true;
    if (depth < 1 || depth >= static_cast<int>(path_.size())) return true;
    const std::string& key = parsed.get_ref<const std::string&>();
    path_[static_cast<size_t>(depth)] = key;
    if (path_[1] != "items") return true;
    switch (depth) {
      case 3: return key == "metadata" || key == "status";
      case 4: return path_[3] == "metadata" ? OneOf(key, kMetadataKeys) : OneOf(key, kStatusKeys);
      case 5:
        if (path_[3] != "metadata") return true;
        if (path_[4] == "labels") return key == kTemplateHashLabel;
        if (path_[4] == "annotations") return key == kMirrorAnnotation;
        return true;
      case 6:
        if (path_[3] == "status") return key == "name" || key == "containerID";
        return true;
      default: return true;
    }
  }

 private:
  std::array<std::string, 8> path_;
};

void AddContainers(const json& statuses, PodMetadata* pod) {
  if (!statuses.is_array()) return;
  for (const json& s : statuses) {
    std::string id(StripContainerIdScheme(StringAt(s, "containerID")));
    std::string name = StringAt(s, "name");
    if (id.empty() || name.empty()) continue;
    pod->containers.push_back({std::move(id), std::move(name)});
  }
}

}  // namespace

size_t PodMetadata::Bytes() const {
  size_t b = kPodOverheadBytes + uid.size() + name.size() + namespace_name.size() + workload_kind.size() +
             workload.size();
  for (const PodContainer& c : containers) b += kContainerOverheadBytes + c.id.size() + c.name.size();
  return b;
}

Workload ResolveWorkload(std::string_view pod_name, const std::vector<OwnerReference>& owners,
                         std::string_view pod_template_hash) {
  const OwnerReference* owner = nullptr;
  for (const OwnerReference& o : owners) {
    if (o.controller) {
      owner = &o;
      break;
    }
  }
  if (owner == nullptr && !owners.empty()) owner = &owners.front();
  if (owner == nullptr || owner->kind.empty() || owner->name.empty() || owner->kind == "Node") {
    return {"Pod", std::string(pod_name)};
  }
  const std::string_view name = owner->name;
  if (owner->kind == "ReplicaSet" && !pod_template_hash.empty() && name.size() > pod_template_hash.size() + 1 &&
      name.ends_with(pod_template_hash) && name[name.size() - pod_template_hash.size() - 1] == '-') {
    return {"Deployment", std::string(name.substr(0, name.size() - pod_template_hash.size() - 1))};
  }
  if (owner->kind == "Job") {
    const size_t dash = name.rfind('-');
    if (dash != std::string_view::npos && dash > 0 && name.size() - dash - 1 >= kMinCronJobSuffixDigits &&
        AllDigits(name.substr(dash + 1))) {
      return {"CronJob", std::string(name.substr(0, dash))};
    }
  }
  return {owner->kind, owner->name};
}

std::string_view StripContainerIdScheme(std::string_view container_id) {
  const size_t sep = container_id.find("://");
  return sep == std::string_view::npos ? container_id : container_id.substr(sep + 3);
}

StatusOr<std::vector<PodMetadata>> ParsePodList(std::string_view text) {
  PodListFilter filter;
  json list = json::parse(text.begin(), text.end(), std::ref(filter), /*allow_exceptions=*/false);
  if (list.is_discarded()) return InvalidArgumentError("the pod list is not JSON");
  if (!list.is_object()) return InvalidArgumentError("the pod list is not a JSON object");
  const std::string kind = StringAt(list, "kind");
  if (kind != "PodList") {
    std::string message = StringAt(list, "message");
    return InvalidArgumentError("expected a PodList, got " + (kind.empty() ? std::string("no kind") : "kind " + kind) +
                                (message.empty() ? "" : ": " + message.substr(0, 200)));
  }
  std::vector<PodMetadata> pods;
  auto items = list.find("items");
  if (items == list.end() || items->is_null()) return pods;  // an empty list may say "items": null
  if (!items->is_array()) return InvalidArgumentError("the pod list's items are not an array");
  pods.reserve(items->size());
  for (const json& item : *items) {
    if (!item.is_object()) continue;
    auto meta = item.find("metadata");
    if (meta == item.end() || !meta->is_object()) continue;
    PodMetadata pod;
    pod.uid = StringAt(*meta, "uid");
    pod.name = StringAt(*meta, "name");
    pod.namespace_name = StringAt(*meta, "namespace");
    if (auto a = meta->find("annotations"); a != meta->end()) {
      if (std::string mirror = StringAt(*a, kMirrorAnnotation); !mirror.empty()) pod.uid = std::move(mirror);
    }
    if (pod.uid.empty() || pod.name.empty()) continue;
    std::string hash;
    if (auto l = meta->find("labels"); l != meta->end()) hash = StringAt(*l, kTemplateHashLabel);
    std::vector<OwnerReference> owners;
    if (auto o = meta->find("ownerReferences"); o != meta->end() && o->is_array()) {
      for (const json& ref : *o) {
        if (!ref.is_object()) continue;
        auto c = ref.find("controller");
        owners.push_back({StringAt(ref, "kind"), StringAt(ref, "name"), c != ref.end() && c->is_boolean() && c->get<bool>()});
      }
    }
    Workload w = ResolveWorkload(pod.name, owners, hash);
    pod.workload_kind = std::move(w.kind);
    pod.workload = std::move(w.name);
    if (auto s = item.find("status"); s != item.end() && s->is_object()) {
      for (std::string_view key : kStatusKeys) {
        if (auto st = s->find(std::string(key)); st != s->end()) AddContainers(*st, &pod);
      }
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

KubernetesLabels LabelsOf(const PodMetadata& pod, std::string_view container_id, bool* container_found) {
  KubernetesLabels l;
  l.pod = pod.name;
  l.namespace_name = pod.namespace_name;
  l.workload = pod.workload;
  l.workload_kind = pod.workload_kind;
  bool found = false;
  if (!container_id.empty()) {
    for (const PodContainer& c : pod.containers) {
      if (c.id == container_id) {
        l.container = c.name;
        found = true;
        break;
      }
    }
  }
  if (container_found != nullptr) *container_found = found;
  return l;
}

PodCache::UpdateResult PodCache::Update(std::vector<PodMetadata> listed, Clock::time_point now) {
  UpdateResult result;
  std::unordered_map<std::string, Entry> next;
  size_t bytes = 0;
  auto fits = [&](size_t b) { return next.size() < options_.max_pods && bytes + b <= options_.max_bytes; };
  for (PodMetadata& pod : listed) {
    if (next.count(pod.uid)) continue;  // a uid twice in one list: the first
    const size_t b = pod.Bytes();
    if (!fits(b)) {
      ++result.dropped;
      continue;
    }
    std::string uid = pod.uid;
    next.emplace(std::move(uid), Entry{std::move(pod), now, b});
    bytes += b;
    ++result.listed;
  }
  // Pods that left the list: kept for their grace period, newest first.
  std::vector<Entry*> gone;
  for (auto& [uid, e] : pods_) {
    if (!next.count(uid)) gone.push_back(&e);
  }
  std::sort(gone.begin(), gone.end(), [](const Entry* a, const Entry* b) { return a->last_listed > b->last_listed; });
  for (Entry* e : gone) {
    if (now - e->last_listed > options_.grace) {
      result.expired.push_back(e->pod.namespace_name + "/" + e->pod.name + " (" + e->pod.uid + ")");
      continue;
    }
    if (!fits(e->bytes)) {
      ++result.dropped;
      continue;
    }
    bytes += e->bytes;
    std::string uid = e->pod.uid;
    next.emplace(std::move(uid), std::move(*e));
  }
  pods_ = std::move(next);
  bytes_ = bytes;
  return result;
}

const PodMetadata* PodCache::Find(std::string_view uid) const {
  auto it = pods_.find(std::string(uid));
  return it == pods_.end() ? nullptr : &it->second.pod;
}

}  // namespace warpscope::kubernetes
