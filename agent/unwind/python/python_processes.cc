#include "agent/unwind/python/python_processes.h"

#include <bpf/bpf.h>

#include <algorithm>

#include "base/logging.h"
#include "bpf/intf/unwind.h"

namespace warpscope {
namespace {

constexpr size_t kMaxCodeObjectsPerProcess = 1 << 16;
constexpr size_t kMaxStaticCodeObjects = 1 << 14;

}  // namespace

bool PythonProcesses::IsCandidate(const ProcessInfo& info, const MemoryMapping& m) {
  if (!m.IsFileBacked()) return false;
  if (m.path == info.exe_path) return true;
  const size_t slash = m.path.rfind('/');
  const std::string base = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
  return base.starts_with("libpython");
}

PythonProcesses::PythonProcesses(int py_procs_fd, ProcFs procfs, size_t max_binaries, BinaryFiles* files,
                                 size_t max_code_bytes)
    : py_procs_fd_(py_procs_fd),
      procfs_(std::move(procfs)),
      own_files_(files == nullptr ? std::make_unique<BinaryFiles>(procfs_) : nullptr),
      files_(files == nullptr ? own_files_.get() : files),
      max_binaries_(max_binaries),
      max_code_bytes_(max_code_bytes) {}

const PythonBinary* PythonProcesses::BinaryFor(uint32_t pid, const MemoryMapping& m) {
  const FileIdentity key = IdentityOf(m);
  auto it = binaries_.find(key);
  if (it != binaries_.end()) return it->second.get();
  if (defer_reads_) return nullptr;  // comes through Adopt
  // Not remembered when the file cannot be opened: the process is gone, and
  // the next one mapping the file tries again.
  StatusOr<std::shared_ptr<ElfFile>> file = files_->Open(pid, m);
  if (!file.ok()) return nullptr;
  Adopt(m, ReadPythonBinary(**file, m.path));
  it = binaries_.find(key);
  return it == binaries_.end() ? nullptr : it->second.get();
}

void PythonProcesses::Adopt(const MemoryMapping& m, StatusOr<PythonBinary> bin) {
  const FileIdentity key = IdentityOf(m);
  if (binaries_.contains(key)) return;
  std::unique_ptr<PythonBinary> value;  // null: no (readable) CPython in this file
  if (bin.ok()) {
    value = std::make_unique<PythonBinary>(std::move(bin).value());
  } else if (bin.status().code() != StatusCode::kNotFound) {
    LOG_DEBUG() << "python: " << bin.status().message();
  }
  binaries_.emplace(key, std::move(value));
}

uint32_t PythonProcesses::Describe(const ProcessInfo& info) {
  if (auto it = processes_.find(info.pid); it != processes_.end() && it->second.generation == info.generation) {
    return WS_PROC_PYTHON;
  }
  const PythonBinary* found = nullptr;
  const MemoryMapping* found_mapping = nullptr;
  for (const MemoryMapping& m : info.mappings) {
    if (!IsCandidate(info, m)) continue;
    if (const PythonBinary* bin = BinaryFor(info.pid, m)) {
      found = bin;
      found_mapping = &m;
      break;
    }
  }
  auto withdraw = [&]() -> uint32_t {
    if (EraseProcess(info.pid) && py_procs_fd_ >= 0) bpf_map_delete_elem(py_procs_fd_, &info.pid);
    return 0;
  };
  if (!found) return withdraw();
  const std::string path = found_mapping->path;
  if (!found->version) {
    if (warned_.insert(path).second) {
      LOG_WARNING() << "python: cannot tell the CPython version of " << path
                    << "; its processes get native frames only";
    }
    ++stats_.unsupported_processes;
    return withdraw();
  }
  const PythonLayout* layout = FindPythonLayout(*found->version);
  if (!layout) {
    if (warned_.insert(path).second) {
      LOG_WARNING() << "python: " << path << " is CPython " << found->version->ToString()
                    << ", which warpscope does not walk (supported: " << SupportedPythonVersions()
                    << "); its processes get native frames only";
    }
    ++stats_.unsupported_processes;
    return withdraw();
  }
  const std::optional<uint64_t> bias = found->LoadBias(found_mapping->start, found_mapping->offset);
  if (!bias) return withdraw();

  ws_py_proc value{};
  value.runtime = found->runtime_vaddr + *bias;
  value.eval_start[0] = found->eval.vaddr + *bias;
  value.eval_end[0] = value.eval_start[0] + found->eval.size;
  if (found->eval_cold) {
    value.eval_start[1] = found->eval_cold->vaddr + *bias;
    value.eval_end[1] = value.eval_start[1] + found->eval_cold->size;
  }
  value.layout = layout->bpf;
  if (py_procs_fd_ >= 0 && bpf_map_update_elem(py_procs_fd_, &info.pid, &value, BPF_ANY) != 0) {
    LOG_WARNING() << "python: publishing pid " << info.pid << ": " << strerror(errno);
    return withdraw();
  }
  auto [it, inserted] = processes_.try_emplace(info.pid);
  if (inserted || it->second.layout != layout) {
    if (inserted) ++stats_.processes;
    LOG_DEBUG() << "python: pid " << info.pid << " runs CPython " << found->version->ToString() << " (" << path
                << ")";
    ClearCode(it->second);
  }
  it->second.layout = layout;
  it->second.generation = info.generation;
  it->second.version = *found->version;
  it->second.binary_key = IdentityOf(*found_mapping);
  it->second.bias = *bias;
  it->second.static_ranges.clear();
  for (const PythonBinary::Segment& seg : found->segments) {
    if (seg.file_size > 0) it->second.static_ranges.emplace_back(seg.vaddr + *bias, seg.vaddr + *bias + seg.file_size);
  }
  exited_.erase(info.pid);
  return WS_PROC_PYTHON;
}

void PythonProcesses::OnExec(uint32_t pid) {
  EraseProcess(pid);
  exited_.erase(pid);
  if (py_procs_fd_ >= 0) bpf_map_delete_elem(py_procs_fd_, &pid);
}

void PythonProcesses::OnExit(uint32_t pid) {
  if (py_procs_fd_ >= 0) bpf_map_delete_elem(py_procs_fd_, &pid);
  if (processes_.count(pid)) exited_.insert(pid);
}

void PythonProcesses::EndEpoch() {
  for (uint32_t pid : exited_) EraseProcess(pid);
  exited_.clear();
  if (binaries_.size() <= max_binaries_) return;
  std::unordered_set<FileIdentity, FileIdentityHash> in_use;
  for (const auto& [pid, p] : processes_) in_use.insert(p.binary_key);
  std::erase_if(binaries_, [&](const auto& kv) { return !in_use.contains(kv.first); });
  if (warned_.size() > max_binaries_) warned_.clear();
}

const PythonVersion* PythonProcesses::VersionOf(uint32_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second.version;
}

std::shared_ptr<const PythonCodeInfo> PythonProcesses::Lookup(uint32_t pid, Process& p, uint64_t code_addr,
                                                              uint32_t fingerprint) {
  const auto key = std::make_pair(code_addr, fingerprint);
  auto it = p.code.find(key);
  if (it != p.code.end()) return it->second;
  const bool in_image = std::any_of(p.static_ranges.begin(), p.static_ranges.end(), [&](const auto& r) {
    return code_addr >= r.first && code_addr < r.second;
  });
  const StaticCodeKey static_key{p.binary_key, code_addr - p.bias, fingerprint};
  if (in_image) {
    if (auto s = static_code_.find(static_key); s != static_code_.end()) {
      ++stats_.code_objects_shared;
      AddCode(p, key, s->second);
      return s->second;
    }
  }
  std::shared_ptr<const PythonCodeInfo> info;
  StatusOr<PythonCodeInfo> read = ReadCodeObject(ProcessMemoryReader(pid), *p.layout, code_addr);
  ++stats_.code_objects_read;
  if (read.ok() && read->fingerprint == fingerprint) {
    info = std::make_shared<const PythonCodeInfo>(std::move(read).value());
    if (in_image) {
      if (static_code_.size() >= kMaxStaticCodeObjects) {
        static_code_.clear();
        stats_.static_code_bytes = 0;
        ++stats_.code_cache_evictions;
      }
      static_code_.emplace(static_key, info);
      stats_.static_code_bytes += CodeBytes(info.get());
    }
  } else {
    ++stats_.code_object_errors;
    if (!read.ok()) LOG_DEBUG() << "python: pid " << pid << " code object: " << read.status().message();
    // Remember the failure only while the process cannot be read any more;
    // a live process may simply not have finished building the object.
    if (!exited_.count(pid) && procfs_.Exists(pid)) return nullptr;
  }
  AddCode(p, key, info);
  return info;
}

size_t PythonProcesses::CodeBytes(const PythonCodeInfo* info) {
  // The map node and the shared_ptr's control block, roughly, plus the strings.
  constexpr size_t kEntry = 128;
  if (info == nullptr) return kEntry;
  return kEntry + sizeof(PythonCodeInfo) + info->name.capacity() + info->filename.capacity() +
         info->linetable.capacity();
}

void PythonProcesses::AddCode(Process& p, const std::pair<uint64_t, uint32_t>& key,
                              std::shared_ptr<const PythonCodeInfo> info) {
  if (p.code.size() >= kMaxCodeObjectsPerProcess) ClearCode(p);  // a process that churns code
  const size_t bytes = CodeBytes(info.get());
  if (!p.code.emplace(key, std::move(info)).second) return;
  p.code_bytes += bytes;
  stats_.code_bytes += bytes;
  // Over the budget: the process holding the most gives its cache up (its
  // frames read their code objects again).
  while (stats_.code_bytes > max_code_bytes_) {
    Process* largest = nullptr;
    for (auto& [pid, q] : processes_) {
      if (largest == nullptr || q.code_bytes > largest->code_bytes) largest = &q;
    }
    if (largest == nullptr || largest->code_bytes == 0) break;
    ClearCode(*largest);
  }
}

void PythonProcesses::ClearCode(Process& p) {
  if (!p.code.empty()) ++stats_.code_cache_evictions;
  stats_.code_bytes -= std::min(stats_.code_bytes, p.code_bytes);
  p.code_bytes = 0;
  p.code.clear();
}

bool PythonProcesses::EraseProcess(uint32_t pid) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return false;
  stats_.code_bytes -= std::min(stats_.code_bytes, it->second.code_bytes);
  processes_.erase(it);
  return true;
}

void PythonProcesses::Prefetch(uint32_t pid, const uint64_t* frames, size_t count) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  for (size_t i = 0; i + 1 < count; ++i) {
    if (!(frames[i] & WS_PY_FRAME_TAG)) continue;
    Lookup(pid, it->second, frames[i] & WS_PY_ADDR_MASK, static_cast<uint32_t>(frames[i + 1] >> 32));
    ++i;
  }
}

PythonFrame PythonProcesses::Resolve(uint32_t pid, uint64_t code_addr, uint32_t fingerprint, uint32_t instr_index) {
  PythonFrame frame;
  auto it = processes_.find(pid);
  std::shared_ptr<const PythonCodeInfo> info =
      it == processes_.end() ? nullptr : Lookup(pid, it->second, code_addr, fingerprint);
  if (!info) {
    ++stats_.frames_unresolved;
    frame.name = "[python: code object unavailable]";
    return frame;
  }
  ++stats_.frames_resolved;
  frame.name = info->name;
  frame.filename = info->filename;
  frame.line = PythonLineForInstruction(info->linetable_format, info->linetable, info->firstlineno, instr_index);
  frame.resolved = true;
  return frame;
}

}  // namespace warpscope
