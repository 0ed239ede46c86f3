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

std::shared_ptr<const std::string> BinaryFiles::VdsoImage(uint32_t pid, const MemoryMapping& m) {
  constexpr size_t kHeaderBytes = 64;  // Elf64_Ehdr; an Elf32_Ehdr and what follows it for 32-bit images
  constexpr size_t kMaxImages = 16;
  const size_t size = m.end - m.start;
  if (m.end <= m.start || size < kHeaderBytes) return nullptr;
  StatusOr<std::string> header = procfs_.ReadMemory(pid, m.start, kHeaderBytes);
  if (!header.ok()) return nullptr;
  std::string key = std::move(*header);
  key.append(reinterpret_cast<const char*>(&size), sizeof(size));
  if (auto it = vdso_by_header_.find(key); it != vdso_by_header_.end()) return it->second;
  StatusOr<std::string> image = procfs_.ReadMemory(pid, m.start, size);
  if (!image.ok()) return nullptr;
  ++stats_.vdso_reads;
  if (vdso_by_header_.size() >= kMaxImages) vdso_by_header_.clear();
  auto shared = std::make_shared<const std::string>(std::move(*image));
  vdso_by_header_.emplace(std::move(key), shared);
  return shared;
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
