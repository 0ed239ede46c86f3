#include "agent/process/container_labels.h"

#include <array>
#include <optional>
#include <vector>

namespace warpscope {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool IsContainerHexId(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!IsLowerHex(c)) return false;
  }
  return true;
}

// Pod uids are UUIDs (8-4-4-4-12) for API pods and 32 hex digits for static
// pods (an md5 of the manifest). The systemd cgroup driver writes '_' for '-'
// because '-' separates slice levels; callers pass the raw text and get the
// dashed form back, or nullopt when it is not a uid (e.g. a "podman" component).
std::optional<std::string> NormalizePodUid(std::string_view raw) {
  std::string uid(raw);
  size_t hex_digits = 0;
  for (char& c : uid) {
    if (c == '_') c = '-';
    if (IsLowerHex(c)) {
      ++hex_digits;
    } else if (c != '-') {
      return std::nullopt;
    }
  }
  if (hex_digits != 32) return std::nullopt;
  if (uid.size() == 32) return uid;
  if (uid.size() == 36 && uid[8] == '-' && uid[13] == '-' && uid[18] == '-' && uid[23] == '-') return uid;
  return std::nullopt;
}

struct ScopePrefix {
  std::string_view prefix;
  std::string_view runtime;
};

// systemd-driver scopes ("<prefix><id>.scope") and the cgroupfs forms some
// runtimes use ("crio-<id>", "libpod-<id>"). conmon scopes
// ("crio-conmon-<id>", "libpod-conmon-<id>") hold the runtime's monitor, not the
// container's processes, so they are deliberately not listed: the 64-hex check
// rejects "conmon-<id>".
constexpr std::array<ScopePrefix, 6> kScopePrefixes = {{
    {"docker-", "docker"},
    {"cri-containerd-", "containerd"},
    {"nerdctl-", "containerd"},
    {"crio-", "cri-o"},
    {"libpod-", "podman"},
    {"lxc.payload.", "lxc"},
}};

struct PathState {
  ContainerInfo info;
  bool in_kubepods = false;       // saw a cgroupfs "kubepods" component
  std::string_view pending_qos;   // cgroupfs qos level seen under it
  std::string_view parent;        // previous component, for bare ids
};

// systemd driver: every slice repeats its ancestry in its name, e.g.
// "kubepods-burstable-pod<uid_with_underscores>.slice" or, under kind,
// "kubelet-kubepods-pod<uid>.slice", so one component tells qos and pod.
void ParseKubeSlice(std::string_view name, PathState& st) {
  const std::vector<std::string_view> parts = Split(name, '-');
  size_t i = 0;
  while (i < parts.size() && parts[i] != "kubepods") ++i;
  if (i == parts.size()) return;
  std::string_view qos = "guaranteed";
  for (++i; i < parts.size(); ++i) {
    if (parts[i] == "burstable" || parts[i] == "besteffort") {
      qos = parts[i];
    } else if (parts[i].starts_with("pod")) {
      if (std::optional<std::string> uid = NormalizePodUid(parts[i].substr(3))) {
        st.info.pod_uid = std::move(*uid);
        st.info.qos_class = std::string(qos);
      }
    }
  }
}

void ParseComponent(std::string_view c, PathState& st) {
  if (c.ends_with(".slice")) {
    ParseKubeSlice(c.substr(0, c.size() - 6), st);
    return;
  }
  // cgroupfs driver: /kubepods[/burstable|/besteffort]/pod<uid>/<id>.
  if (c == "kubepods") {
    st.in_kubepods = true;
    st.pending_qos = {};
    return;
  }
  if (st.in_kubepods && (c == "burstable" || c == "besteffort")) {
    st.pending_qos = c;
    return;
  }
  if (st.in_kubepods && c.starts_with("pod")) {
    if (std::optional<std::string> uid = NormalizePodUid(c.substr(3))) {
      st.info.pod_uid = std::move(*uid);
      st.info.qos_class = st.pending_qos.empty() ? "guaranteed" : std::string(st.pending_qos);
      return;
    }
  }
  std::string_view name = c;
  if (name.ends_with(".scope")) name.remove_suffix(6);
  for (const ScopePrefix& p : kScopePrefixes) {
    if (!name.starts_with(p.prefix)) continue;
    std::string_view id = name.substr(p.prefix.size());
    if (p.runtime == "lxc" ? !id.empty() : IsContainerHexId(id)) {
      st.info.container_id = std::string(id);
      st.info.runtime = std::string(p.runtime);
    }
    return;
  }
  // Older lxc (cgroup v1): /lxc/<name>.
  if (st.parent == "lxc" && !c.empty()) {
    st.info.container_id = std::string(c);
    st.info.runtime = "lxc";
    return;
  }
  if (IsContainerHexId(c)) {
    st.info.container_id = std::string(c);
    // A bare id under a pod is containerd's cgroupfs layout; dockershim
    // (removed in Kubernetes 1.24) wrote the same shape, so this is a best
    // guess. Elsewhere (ECS, custom parents) the path does not tell.
    if (st.parent == "docker") {
      st.info.runtime = "docker";
    } else if (st.in_kubepods) {
      st.info.runtime = "containerd";
    } else {
      st.info.runtime.clear();
    }
  }
}

bool HasLabels(const ContainerInfo& info) { return !info.container_id.empty() || !info.pod_uid.empty(); }

// Preference among v1 hierarchies: pids and memory are the ones container
// runtimes always place processes in; name=systemd is last because systemd
// inside a container can move processes around within it.
int V1Rank(std::string_view controllers) {
  for (std::string_view c : Split(controllers, ',')) {
    if (c == "pids") return 0;
  }
  for (std::string_view c : Split(controllers, ',')) {
    if (c == "memory") return 1;
  }
  for (std::string_view c : Split(controllers, ',')) {
    if (c == "cpu" || c == "cpuacct") return 2;
  }
  if (controllers == "name=systemd") return 3;
  return -1;
}

}  // namespace

ContainerInfo ParseCgroupPath(std::string_view cgroup_path) {
  PathState st;
  // Components are visited outermost first and later matches overwrite
  // earlier ones, so nested setups end with the innermost container and pod.
  for (std::string_view c : Split(cgroup_path, '/')) {
    if (c.empty()) continue;
    ParseComponent(c, st);
    st.parent = c;
  }
  if (st.info.pod_uid.empty()) st.info.qos_class.clear();
  return st.info;
}

ContainerInfo ParseCgroupFile(std::string_view text) {
  std::optional<std::string_view> v2_path;
  std::array<std::optional<std::string_view>, 4> v1_paths;
  for (std::string_view line : Split(text, '\n')) {
    // "hierarchy-ID:controller-list:cgroup-path"; the path may itself hold ':'.
    const size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    const size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first);
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      v2_path = path;
      continue;
    }
    const int rank = V1Rank(controllers);
    if (rank >= 0 && !v1_paths[static_cast<size_t>(rank)]) v1_paths[static_cast<size_t>(rank)] = path;
  }
  if (v2_path) {
    ContainerInfo info = ParseCgroupPath(*v2_path);
    if (HasLabels(info)) return info;
  }
  for (const std::optional<std::string_view>& path : v1_paths) {
    if (!path) continue;
    ContainerInfo info = ParseCgroupPath(*path);
    if (HasLabels(info)) return info;
  }
  return {};
}

}  // namespace warpscope
