#include "agent/unwind/unwind_table_loader.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agent/elf/elf_file.h"
#include "agent/unwind/unwind_table.h"
#include "base/logging.h"

namespace warpscope {
namespace {

constexpr uint32_t kUploadChunk = 1u << 16;
// Files remembered without a table (no usable CFI), and keys of freed tables.
constexpr size_t kMaxRememberedFiles = 1 << 16;

}  // namespace

UnwindTableOptions AgentUnwindTableOptions() {
  UnwindTableOptions o;
  // PLT rows carry their binutils threshold (11, 10, 9 or 5) in cfa_offset.
  o.rows.plt_threshold_in_cfa_offset = true;
  // Alignment padding between functions never executes and return addresses
  // are looked up at pc-1, so small gaps need no frame-pointer row: 9-17%
  // fewer rows (measured on libc, python3, libLLVM).
  o.max_padding_gap = 15;
  // Binaries past 64 Ki FDEs or rows (512 KiB of rows) are built in spill
  // files, so that the agent's memory does not follow the size of libtorch_cuda
  // or cuDNN (unwind_table.h).
  o.spill_above = 65536;
  return o;
}

namespace {

// Array maps take batch updates keyed by index.
template <typename V>
Status UploadArray(int fd, uint32_t first, const V* values, uint32_t count) {
  std::vector<uint32_t> keys;
  for (uint32_t done = 0; done < count;) {
    const uint32_t n = std::min(kUploadChunk, count - done);
    keys.resize(n);
    for (uint32_t i = 0; i < n; ++i) keys[i] = first + done + i;
    __u32 batch = n;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    if (bpf_map_update_batch(fd, keys.data(), values + done, &batch, &opts) != 0) {
      return ErrnoError(errno, "uploading unwind data");
    }
    done += n;
  }
  return Status::Ok();
}

}  // namespace

UnwindTableLoader::UnwindTableLoader(UnwindMapFds fds, const UnwindMapSizes& sizes, ProcFs procfs,
                                     BinaryFiles* files)
    : fds_(fds),
      sizes_(sizes),
      procfs_(std::move(procfs)),
      own_files_(files == nullptr ? std::make_unique<BinaryFiles>(procfs_) : nullptr),
      files_(files == nullptr ? own_files_.get() : files),
      rows_(sizes.entries),
      mapping_slots_(sizes.exec_mappings) {
  stats_.rows_capacity = sizes.entries;
}

StatusOr<BuiltLoaderTable> BuildLoaderTable(std::shared_ptr<ElfFile> file) {
  const auto t0 = std::chrono::steady_clock::now();
  BuiltLoaderTable out;
  ASSIGN_OR_RETURN(out.table, BuildUnwindTable(std::move(file), AgentUnwindTableOptions()));
  ASSIGN_OR_RETURN(out.index, BuildPageIndex(out.table));
  out.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

StatusOr<uint32_t> UnwindTableLoader::Upload(const std::string& key, BuiltLoaderTable built_table,
                                             const std::string& name) {
  UnwindTable& built = built_table.table;
  const UnwindPageIndex& index = built_table.index;
  const double ms = built_table.build_ms;
  stats_.build_ms_total += ms;
  if (ms > stats_.build_ms_max) {
    stats_.build_ms_max = ms;
    stats_.slowest_binary = name;
  }
  if (ms > 1000) LOG_INFO() << "unwind table for " << name << " took " << static_cast<int>(ms) << " ms";

  const uint64_t rows = built.row_count();
  if (rows == 0) return FailedPreconditionError("no CFI rows in " + name);
  // Idle tables give way, oldest first, to a table that needs their space.
  while (stats_.pages_used + index.size() > sizes_.pages) {
    if (!FreeOldestIdle()) {
      ++stats_.tables_no_space;
      return ResourceExhaustedError("unwind page index full");
    }
  }
  // A table larger than the whole row map is refused before any idle table
  // is freed for it.
  std::optional<uint32_t> first;
  while (rows > sizes_.entries || !(first = rows_.Allocate(static_cast<uint32_t>(rows)))) {
    if (rows > sizes_.entries || !FreeOldestIdle()) {
      ++stats_.tables_no_space;
      return ResourceExhaustedError("unwind row budget full (" + std::to_string(rows) + " rows for " + name + ")");
    }
  }
  auto table = std::make_unique<Table>();
  table->first = *first;
  table->count = static_cast<uint32_t>(rows);
  table->base_vaddr = built.base_vaddr;
  table->segments = std::move(built.load_segments);
  table->key = key;
  auto free_slot = std::find(tables_.begin(), tables_.end(), nullptr);
  table->id = static_cast<uint32_t>(free_slot - tables_.begin());
  uint32_t uploaded = 0;
  Status up = built.ForEachRows([&](std::span<const ws_unwind_entry> chunk) -> Status {
    RETURN_IF_ERROR(UploadArray(fds_.entries, table->first + uploaded, chunk.data(), static_cast<uint32_t>(chunk.size())));
    uploaded += static_cast<uint32_t>(chunk.size());
    return Status::Ok();
  });
  if (!up.ok()) {
    rows_.Free(table->first, table->count);
    return up;
  }
  std::vector<ws_unwind_page_key> keys;
  std::vector<ws_unwind_page> values;
  for (const auto& [page, value] : index) {
    keys.push_back({table->id, page});
    values.push_back({value.first + table->first, value.count});
    table->pages.push_back(page);
  }
  __u32 n = static_cast<__u32>(keys.size());
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  if (n > 0 && bpf_map_update_batch(fds_.pages, keys.data(), values.data(), &n, &opts) != 0) {
    const int e = errno;
    for (uint32_t i = 0; i < n; ++i) bpf_map_delete_elem(fds_.pages, &keys[i]);
    rows_.Free(table->first, table->count);
    return ErrnoError(e, "uploading the unwind page index");
  }
  stats_.pages_used += table->pages.size();
  stats_.rows_used = rows_.used();
  ++stats_.tables_built;
  ++stats_.tables_live;
  if (freed_keys_.contains(key)) ++stats_.tables_rebuilt;
  LOG_DEBUG() << "unwinder: built the table of " << name << " (" << table->count << " rows, " << ms << " ms)";
  const uint32_t id = table->id;
  if (free_slot == tables_.end()) {
    tables_.push_back(std::move(table));
  } else {
    *free_slot = std::move(table);
  }
  table_by_key_[key] = id;
  return id;
}

uint32_t UnwindTableLoader::TableFor(uint32_t pid, const MemoryMapping& m, uint64_t* table_base) {
  const FileIdentity identity = IdentityOf(m);
  auto known = key_by_file_.find(identity);
  if (known == key_by_file_.end()) {
    if (defer_builds_) return WS_TABLE_NONE;  // comes through AdoptTable
    // A process that exits meanwhile takes its paths with it: that says
    // nothing about the file, so nothing is remembered and the next process
    // mapping it tries again.
    StatusOr<std::shared_ptr<ElfFile>> file = files_->Open(pid, m);
    if (!file.ok()) return WS_TABLE_NONE;
    const std::string& build_id = (*file)->BuildId();
    std::string key = !build_id.empty() ? "b:" + build_id : "f:" + identity.ToString();
    if (!table_by_key_.count(key)) key = UploadOrUnusable(std::move(key), BuildLoaderTable(std::move(*file)), m.path);
    known = Remember(identity, std::move(key));
  }
  if (known->second.empty()) return WS_TABLE_NONE;
  auto it = table_by_key_.find(known->second);
  if (it == table_by_key_.end()) return WS_TABLE_NONE;
  return Ref(*tables_[it->second], m, table_base);
}

std::string UnwindTableLoader::UploadOrUnusable(std::string key, StatusOr<BuiltLoaderTable> built,
                                                const std::string& name) {
  StatusOr<uint32_t> id = built.ok() ? Upload(key, std::move(*built), name) : built.status();
  if (id.ok()) return key;
  if (id.status().code() != StatusCode::kResourceExhausted) ++stats_.tables_failed;
  LOG_DEBUG() << "no unwind table for " << name << ": " << id.status().ToString();
  return "";  // remembered as unusable: frame pointers for this file
}

UnwindTableLoader::KeyByFile::iterator UnwindTableLoader::Remember(const FileIdentity& identity, std::string key) {
  // Unusable files are remembered for as long as the tables; a host that
  // keeps running new binaries without CFI must not grow this without end.
  if (key_by_file_.size() >= kMaxRememberedFiles) {
    std::erase_if(key_by_file_, [](const auto& kv) { return kv.second.empty(); });
  }
  return key_by_file_.insert_or_assign(identity, std::move(key)).first;
}

void UnwindTableLoader::AdoptTable(const MemoryMapping& m, const std::string& build_id,
                                   StatusOr<BuiltLoaderTable> built) {
  const FileIdentity identity = IdentityOf(m);
  if (key_by_file_.contains(identity)) return;
  std::string key = !build_id.empty() ? "b:" + build_id : "f:" + identity.ToString();
  if (!table_by_key_.count(key)) key = UploadOrUnusable(std::move(key), std::move(built), m.path);
  Remember(identity, std::move(key));
}

bool UnwindTableLoader::Incomplete(uint32_t pid) const {
  auto it = processes_.find(pid);
  return it != processes_.end() && it->second.incomplete;
}

uint32_t UnwindTableLoader::VdsoTableFor(uint32_t pid, const MemoryMapping& m, uint64_t* table_base) {
  // The vdso exists only in memory; every process of one kernel maps the same image.
  std::shared_ptr<const std::string> image = files_->VdsoImage(pid, m);
  if (!image || image->empty()) return WS_TABLE_NONE;
  auto known = vdso_key_by_image_.find(*image);
  if (known == vdso_key_by_image_.end()) {
    const std::string key = "vdso:" + std::to_string(vdso_key_by_image_.size());
    known = vdso_key_by_image_.emplace(*image, key).first;
    if (!table_by_key_.count(key)) {
      StatusOr<std::shared_ptr<ElfFile>> file = ElfFile::FromMemory(*image);
      StatusOr<BuiltLoaderTable> built = file.ok() ? BuildLoaderTable(std::move(*file)) : file.status();
      StatusOr<uint32_t> id = built.ok() ? Upload(key, std::move(*built), "[vdso]") : built.status();
      if (!id.ok()) {
        LOG_DEBUG() << "no unwind table for [vdso]: " << id.status().ToString();
        known->second.clear();
      }
    }
  }
  if (known->second.empty()) return WS_TABLE_NONE;
  auto it = table_by_key_.find(known->second);
  if (it == table_by_key_.end()) {
    vdso_key_by_image_.erase(known);  // freed since: build again next time
    return WS_TABLE_NONE;
  }
  return Ref(*tables_[it->second], m, table_base);
}

uint32_t UnwindTableLoader::Ref(Table& table, const MemoryMapping& m, uint64_t* table_base) {
  // The mapping's file offset lies in one PT_LOAD segment: that fixes the bias.
  for (const LoadSegment& seg : table.segments) {
    if (m.offset >= seg.file_offset && m.offset < seg.file_offset + std::max<uint64_t>(seg.file_size, 1)) {
      const uint64_t vaddr_at_start = m.offset - seg.file_offset + seg.vaddr;
      *table_base = m.start - vaddr_at_start + table.base_vaddr;
      if (table.refs++ == 0 && idle_.erase({table.idle_since, table.id}) > 0) {
        --stats_.tables_idle;
        ++stats_.tables_reused;
      }
      return table.id;
    }
  }
  return WS_TABLE_NONE;
}

Status UnwindTableLoader::Describe(const ProcessInfo& info, uint32_t flags) {
  auto existing = processes_.find(info.pid);
  if (existing != processes_.end() && existing->second.generation == info.generation &&
      !existing->second.incomplete) {
    if (existing->second.flags == flags) return Status::Ok();
    ws_proc_info value{existing->second.first, existing->second.count, flags, 0};
    if (bpf_map_update_elem(fds_.proc_info, &info.pid, &value, BPF_ANY) != 0) {
      return ErrnoError(errno, "publishing process " + std::to_string(info.pid) + " to the unwinder");
    }
    existing->second.flags = flags;
    return Status::Ok();
  }

  ExpireIdle(Clock::now());
  Process next;
  next.generation = info.generation;
  next.flags = flags;
  std::vector<ws_exec_mapping> slice;
  for (const MemoryMapping& m : info.mappings) {
    if (slice.size() >= WS_MAX_PROC_MAPPINGS) break;
    ws_exec_mapping e{};
    e.start = m.start;
    e.end = m.end;
    if (m.IsFileBacked()) {
      uint64_t table_base = 0;
      e.table_id = TableFor(info.pid, m, &table_base);
      e.table_base = table_base;
      if (e.table_id != WS_TABLE_NONE) next.tables.push_back(e.table_id);
      if (e.table_id == WS_TABLE_NONE && defer_builds_ && !Knows(m)) next.incomplete = true;
    } else if (m.path == "[vdso]") {
      uint64_t table_base = 0;
      e.table_id = VdsoTableFor(info.pid, m, &table_base);
      e.table_base = table_base;
      if (e.table_id != WS_TABLE_NONE) next.tables.push_back(e.table_id);
    } else if (m.IsPseudo()) {
      e.table_id = WS_TABLE_NONE;  // [vsyscall] and the like: frame-pointer step
    } else {
      e.table_id = WS_MAPPING_ANON;
    }
    slice.push_back(e);
  }
  auto release = [&](const Process& p) {
    for (uint32_t id : p.tables) Unref(id);
  };
  std::optional<uint32_t> first = slice.empty() ? std::nullopt : mapping_slots_.Allocate(static_cast<uint32_t>(slice.size()));
  if (!first) {
    release(next);
    return slice.empty() ? Status::Ok() : ResourceExhaustedError("unwinder mapping slots full");
  }
  next.first = *first;
  next.count = static_cast<uint32_t>(slice.size());
  if (Status s = UploadArray(fds_.exec_mappings, next.first, slice.data(), next.count); !s.ok()) {
    mapping_slots_.Free(next.first, next.count);
    release(next);
    return s;
  }
  LOG_DEBUG() << "unwinder: describing pid " << info.pid << " (" << next.tables.size() << " tables)";
  ws_proc_info value{next.first, next.count, flags, 0};
  if (bpf_map_update_elem(fds_.proc_info, &info.pid, &value, BPF_ANY) != 0) {
    const int e = errno;
    mapping_slots_.Free(next.first, next.count);
    release(next);
    return ErrnoError(e, "publishing process " + std::to_string(info.pid) + " to the unwinder");
  }
  if (existing != processes_.end()) {
    mapping_slots_.Free(existing->second.first, existing->second.count);
    release(existing->second);
    existing->second = std::move(next);
  } else {
    processes_.emplace(info.pid, std::move(next));
    ++stats_.processes_described;
  }
  return Status::Ok();
}

void UnwindTableLoader::Forget(uint32_t pid) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  LOG_DEBUG() << "unwinder: forgetting pid " << pid;
  ExpireIdle(Clock::now());
  bpf_map_delete_elem(fds_.proc_info, &pid);
  mapping_slots_.Free(it->second.first, it->second.count);
  for (uint32_t id : it->second.tables) Unref(id);
  processes_.erase(it);
}

void UnwindTableLoader::Unref(uint32_t id) {
  if (id >= tables_.size() || !tables_[id]) return;
  Table& table = *tables_[id];
  if (--table.refs > 0) return;
  table.idle_since = Clock::now();
  idle_.emplace(std::make_pair(table.idle_since, table.id), table.id);
  ++stats_.tables_idle;
}

bool UnwindTableLoader::FreeOldestIdle() {
  if (idle_.empty()) return false;
  Free(idle_.begin()->second);
  return true;
}

void UnwindTableLoader::ExpireIdle(Clock::time_point now) {
  while (!idle_.empty() && now - idle_.begin()->first.first >= kIdleTableGrace) FreeOldestIdle();
}

void UnwindTableLoader::Free(uint32_t id) {
  Table& table = *tables_[id];
  if (idle_.erase({table.idle_since, table.id}) > 0) --stats_.tables_idle;
  for (uint32_t page : table.pages) {
    ws_unwind_page_key key{table.id, page};
    bpf_map_delete_elem(fds_.pages, &key);
  }
  stats_.pages_used -= table.pages.size();
  rows_.Free(table.first, table.count);
  stats_.rows_used = rows_.used();
  table_by_key_.erase(table.key);
  // Files that led to this key must be looked up again if they come back.
  std::erase_if(key_by_file_, [&](const auto& kv) { return kv.second == table.key; });
  if (freed_keys_.size() >= kMaxRememberedFiles) freed_keys_.clear();
  freed_keys_.insert(table.key);
  tables_[id].reset();
  --stats_.tables_live;
  ++stats_.tables_freed;
}

}  // namespace warpscope
