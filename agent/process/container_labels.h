// Container and Kubernetes pod labels read from a process's cgroup path.
// The cgroup path is the only place the kernel tells an agent which
// container a pid runs in, without asking a container runtime. Pure parsing: no
// I/O here; ProcFs::ReadCgroup supplies the text, so tests feed fixtures.
//
// The pod's namespace and name are NOT in the cgroup path. The agent looks
// them up by pod_uid and container_id in the node's pod list
// (agent/kubernetes/pod_metadata_source.h).
#pragma once

#include <string>
#include <string_view>

namespace warpscope {

struct ContainerInfo {
  // As the runtime names it: 64 lowercase hex for docker, containerd, cri-o
  // and podman; the container name for lxc. Empty on the host.
  std::string container_id;
  // "docker", "containerd", "cri-o", "podman", "lxc", or "" when the path
  // does not tell (a bare id outside docker/kubepods, or no container).
  std::string runtime;
  // With dashes, as `kubectl get pod -o jsonpath='{.metadata.uid}'` shows it
  // (static pods have 32 hex digits without dashes). Empty outside Kubernetes.
  std::string pod_uid;
  // "guaranteed", "burstable", "besteffort"; "" when pod_uid is empty.
  std::string qos_class;

  bool operator==(const ContainerInfo&) const = default;
};

// Parses the text of /proc/PID/cgroup. Uses the cgroup v2 line ("0::/path")
// when it names a container or pod; otherwise (hybrid hosts, where the v2 line
// is often just "/") the first informative v1 hierarchy among pids, memory,
// cpu/cpuacct and name=systemd. Nested containers (kind, docker-in-docker)
// give the innermost container and innermost pod. Anything unrecognized gives
// empty fields: a host process is an ordinary outcome, never an error.
ContainerInfo ParseCgroupFile(std::string_view proc_pid_cgroup_text);

// Same rules for one cgroup path ("/kubepods/burstable/pod.../<id>").
ContainerInfo ParseCgroupPath(std::string_view cgroup_path);

}  // namespace warpscope
