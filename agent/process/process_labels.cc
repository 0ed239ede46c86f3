#include "agent/process/process_labels.h"

namespace warpscope {

const ProcessLabels& ProcessLabelCache::Get(uint32_t pid) {
  auto [it, inserted] = cache_.try_emplace(pid);
  if (!inserted) return it->second;
  if (auto exe = procfs_.ReadExeLink(pid); exe.ok()) it->second.exe = *exe;
  if (auto cgroup = procfs_.ReadCgroup(pid); cgroup.ok()) it->second.container = ParseCgroupFile(*cgroup);
  // A process that vanished before we looked is an ordinary outcome: no exe,
  // no container labels, and it goes at the next EndWindow like any exited one.
  if (!procfs_.Exists(pid)) exited_.insert(pid);
  return it->second;
}

void ProcessLabelCache::EndWindow() {
  for (uint32_t pid : exited_) cache_.erase(pid);
  exited_.clear();
}

}  // namespace warpscope
