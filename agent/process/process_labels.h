// Per-process series labels for `run` uploads: the executable path
// and the container/pod facts from the cgroup path. Read once per pid, while
// the process is alive, and kept until the window its last samples belong to
// has been encoded.
//
// Threading: owned by the sampling thread; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "agent/process/container_labels.h"
#include "agent/process/proc_fs.h"

namespace warpscope {

// The Kubernetes names of a process's pod (agent/kubernetes), looked up by
// the cgroup's pod_uid and container_id when a batch is built. Empty outside
// Kubernetes, with the pod metadata source off, or while the pod is unknown.
struct KubernetesLabels {
  std::string pod;
  std::string namespace_name;
  std::string container;      // the container's name in the pod spec
  std::string workload;       // the owning workload's name (the pod's own for a bare pod)
  std::string workload_kind;  // Deployment, StatefulSet, DaemonSet, CronJob, Job, ReplicaSet, Pod, ...

  bool operator==(const KubernetesLabels&) const = default;
};

struct ProcessLabels {
  std::string exe;          // /proc/PID/exe target; empty when unreadable
  ContainerInfo container;  // empty fields on the host
  KubernetesLabels kubernetes;  // filled in per batch, never cached here
};

using ProcessLabelMap = std::map<uint32_t, ProcessLabels>;

class ProcessLabelCache {
 public:
  explicit ProcessLabelCache(ProcFs procfs) : procfs_(std::move(procfs)) {}

  // Reads the labels now if the pid is not cached (a process that already
  // vanished gets empty labels, remembered until EndWindow).
  const ProcessLabels& Get(uint32_t pid);
  // exec changes the executable (and maybe the cgroup): read again on next use.
  void OnExec(uint32_t pid) { cache_.erase(pid); }
  // The process's last samples may still be in the current window: forget it
  // only at EndWindow.
  void OnExit(uint32_t pid) { exited_.insert(pid); }
  // After a window was encoded: forgets processes that exited.
  void EndWindow();

  size_t size() const { return cache_.size(); }

 private:
  ProcFs procfs_;
  ProcessLabelMap cache_;
  std::set<uint32_t> exited_;
};

}  // namespace warpscope
