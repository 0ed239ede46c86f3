#include "agent/process/process_table.h"

#include <algorithm>

namespace warpscope {
namespace {

const MemoryMapping* Search(const std::vector<MemoryMapping>& mappings, uint64_t addr) {
  auto it = std::upper_bound(mappings.begin(), mappings.end(), addr,
                             [](uint64_t a, const MemoryMapping& m) { return a < m.start; });
  if (it == mappings.begin()) return nullptr;
  --it;
  return it->Contains(addr) ? &*it : nullptr;
}

}  // namespace

ProcessTable::ProcessTable(ProcFs procfs) : procfs_(std::move(procfs)) {}

bool ProcessTable::ReadMaps(Entry& entry) {
  const uint32_t pid = entry.info.pid;
  StatusOr<std::string> text = procfs_.ReadMaps(pid);
  if (!text.ok()) {
    entry.info.exited = true;
    return false;
  }
  std::vector<MemoryMapping> all = ParseProcMaps(*text);
  std::vector<MemoryMapping> exec;
  for (MemoryMapping& m : all) {
    if (!m.executable || m.end <= m.start) continue;
    // The file's identity for the caches of what was read from it; a second
    // mapping of the same file takes the first one's.
    if (m.IsFileBacked()) {
      auto same = std::find_if(exec.begin(), exec.end(), [&](const MemoryMapping& e) {
        return e.inode == m.inode && e.dev_major == m.dev_major && e.dev_minor == m.dev_minor;
      });
      if (same != exec.end()) {
        m.file_size = same->file_size;
        m.file_mtime_ns = same->file_mtime_ns;
      } else {
        StatFile(pid, m);
      }
    }
    exec.push_back(std::move(m));
  }
  std::sort(exec.begin(), exec.end(),
            [](const MemoryMapping& a, const MemoryMapping& b) { return a.start < b.start; });
  entry.info.mappings = std::move(exec);
  entry.info.generation = next_generation_++;
  StatusOr<std::string> exe = procfs_.ReadExeLink(pid);
  if (exe.ok()) entry.info.exe_path = std::move(*exe);
  return true;
}

void ProcessTable::StatFile(uint32_t pid, MemoryMapping& m) {
  // A stat seen this recently stands for the file: a file rewritten in place
  // (same inode) within this window keeps its old identity for processes
  // started in it. Replacing a binary by rename, as installers and linkers do,
  // gives a new inode and is seen at once.
  constexpr auto kReuse = std::chrono::seconds(1);
  constexpr size_t kMaxFiles = 1 << 14;
  const auto now = std::chrono::steady_clock::now();
  const FileKey key{m.dev_major, m.dev_minor, m.inode};
  if (auto it = file_stats_.find(key); it != file_stats_.end() && now - it->second.at < kReuse) {
    m.file_size = it->second.size;
    m.file_mtime_ns = it->second.mtime_ns;
    return;
  }
  if (!procfs_.StatMappedFile(pid, m, &m.file_size, &m.file_mtime_ns)) return;
  if (file_stats_.size() >= kMaxFiles) {
    std::erase_if(file_stats_, [&](const auto& kv) { return now - kv.second.at >= kReuse; });
  }
  if (file_stats_.size() < kMaxFiles) file_stats_[key] = FileStat{m.file_size, m.file_mtime_ns, now};
}

ProcessTable::Entry* ProcessTable::Load(uint32_t pid) {
  if (auto it = processes_.find(pid); it != processes_.end()) return &it->second;
  if (auto it = gone_.find(pid); it != gone_.end() && it->second == epoch_) return nullptr;
  Entry entry;
  entry.info.pid = pid;
  if (!ReadMaps(entry)) {
    gone_[pid] = epoch_;
    return nullptr;
  }
  gone_.erase(pid);
  return &processes_.emplace(pid, std::move(entry)).first->second;
}

const ProcessInfo* ProcessTable::OnProcessSeen(uint32_t pid) {
  Entry* entry = Load(pid);
  return entry == nullptr ? nullptr : &entry->info;
}

void ProcessTable::OnExec(uint32_t pid) {
  gone_.erase(pid);
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    Load(pid);
    return;
  }
  Entry& entry = it->second;
  entry.info.mappings.clear();
  entry.info.exe_path.clear();
  entry.info.exited = false;
  if (!ReadMaps(entry)) entry.info.generation = next_generation_++;  // the old image's maps are gone either way
}

const ProcessInfo* ProcessTable::OnMapsChanged(uint32_t pid) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return OnProcessSeen(pid);
  Entry& entry = it->second;
  if (entry.info.exited || !ReadMaps(entry)) return nullptr;
  return &entry.info;
}

void ProcessTable::OnExit(uint32_t pid) {
  if (auto it = processes_.find(pid); it != processes_.end()) it->second.info.exited = true;
}

const MemoryMapping* ProcessTable::FindMapping(uint32_t pid, uint64_t addr) {
  Entry* entry = Load(pid);
  if (entry == nullptr) return nullptr;
  if (const MemoryMapping* m = Search(entry->info.mappings, addr)) return m;
  if (entry->info.exited || entry->miss_reread_epoch == epoch_) return nullptr;
  entry->miss_reread_epoch = epoch_;
  if (!ReadMaps(*entry)) return nullptr;
  return Search(entry->info.mappings, addr);
}

const ProcessInfo* ProcessTable::Find(uint32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second.info;
}

void ProcessTable::BeginEpoch() { ++epoch_; }

void ProcessTable::CollectExited() {
  std::erase_if(processes_, [](const auto& kv) { return kv.second.info.exited; });
  gone_.clear();
}

}  // namespace warpscope
