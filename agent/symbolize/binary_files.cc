#include "agent/symbolize/binary_files.h"

namespace warpscope {

void BinaryFiles::CountKnown(const std::vector<MemoryMapping>& mappings) {
  std::unordered_set<FileIdentity, FileIdentityHash> seen;
  for (const MemoryMapping& m : mappings) {
    if (!m.IsFileBacked()) continue;
    const FileIdentity id = IdentityOf(m);
    if (seen.insert(id).second && !opened_in_scope_.contains(id)) ++stats_.known;
  }
}

StatusOr<std::shared_ptr<ElfFile>> BinaryFiles::Open(uint32_t pid, const MemoryMapping& m, bool share) {
  const FileIdentity id = IdentityOf(m);
  if (share && depth_ > 0) {
    if (auto it = open_.find(id); it != open_.end()) {
      ++stats_.shared;
      return it->second;
    }
  }
  std::vector<std::string> paths = {procfs_.MapFilesPath(pid, m.start, m.end)};
  if (!m.deleted) {
    paths.push_back(procfs_.RootPath(pid, m.path));
    paths.push_back(m.path);
  }
  Status last_error;
  for (const std::string& path : paths) {
    StatusOr<std::shared_ptr<ElfFile>> file = ElfFile::Open(path);
    if (!file.ok()) {
      last_error = file.status();
      continue;
    }
    ++stats_.opened;
    if (depth_ > 0) {
      opened_in_scope_.insert(id);
      if (share) open_.emplace(id, *file);
    }
    return file;
  }
  return last_error;
}

}  // namespace warpscope
