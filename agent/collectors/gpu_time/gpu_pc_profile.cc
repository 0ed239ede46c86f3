#include "agent/collectors/gpu_time/gpu_pc_profile.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "model/cubin_hash.h"

namespace warpscope::gpu {

namespace {

constexpr char kStallPrefix[] = "smsp__pcsamp_warps_issue_stalled_";

// CUPTI's stall reasons (their names without kStallPrefix) in plain words;
// Nsight Compute's "Warp State" descriptions, shortened.
const std::pair<const char*, const char*> kStallWords[] = {
    {"barrier", "waiting at a block barrier (__syncthreads)"},
    {"branch_resolving", "resolving a branch target"},
    {"dispatch_stall", "dispatch stalled (pipeline interlock)"},
    {"drain", "draining memory stores before exit"},
    {"imc_miss", "waiting for the constant cache (miss)"},
    {"lg_throttle", "local/global memory queue full (too many loads and stores)"},
    {"long_scoreboard", "waiting for global or local memory (long scoreboard)"},
    {"math_pipe_throttle", "math pipe busy (compute bound)"},
    {"membar", "waiting at a memory barrier"},
    {"mio_throttle", "shared memory or special math queue full (MIO throttle)"},
    {"misc", "miscellaneous"},
    {"no_instructions", "no instruction fetched (instruction cache)"},
    {"not_selected", "ready, another warp issued"},
    {"selected", "issuing (not stalled)"},
    {"short_scoreboard", "waiting for shared memory or special math (short scoreboard)"},
    {"sleeping", "sleeping (nanosleep or yield)"},
    {"tex_throttle", "texture queue full"},
    {"wait", "fixed-latency dependency (wait)"},
    {"warpgroup_arrive", "waiting for a warpgroup arrive"},
    {"gmma", "waiting for a warpgroup matrix multiply (wgmma)"},
    {"math", "waiting for a math result"},
};

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The split of a kernel no GPU time was seen for: one placeholder stack.
const std::vector<KernelLaunchShare> kNotRecorded = {{~0ull, 0, 1}};

std::string HexOffset(uint64_t offset) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%04" PRIx64, offset);
  return buf;
}

}  // namespace

std::string StallReasonWords(const std::string& cupti_name) {
  std::string reason = cupti_name;
  if (reason.rfind(kStallPrefix, 0) == 0) reason = reason.substr(sizeof(kStallPrefix) - 1);
  std::string suffix;
  constexpr std::string_view kNotIssued = "_not_issued";
  if (reason.size() > kNotIssued.size() && reason.compare(reason.size() - kNotIssued.size(), kNotIssued.size(), kNotIssued) == 0) {
    reason.resize(reason.size() - kNotIssued.size());
    suffix = ", not issued";
  }
  for (const auto& [name, words] : kStallWords) {
    if (reason == name) return words + suffix;
  }
  // Unknown to this table: CUPTI's own name, readable.
  std::replace(reason.begin(), reason.end(), '_', ' ');
  return (reason.empty() ? cupti_name : reason) + suffix;
}

CubinLibrary::CubinLibrary(size_t max_bytes, CubinSymbolsOptions options, size_t max_bytes_per_uid,
                           size_t max_parsed_bytes)
    : max_bytes_(max_bytes),
      max_bytes_per_uid_(max_bytes_per_uid != 0 ? max_bytes_per_uid : max_bytes / 4),
      max_parsed_bytes_(max_parsed_bytes),
      options_(std::move(options)) {
  worker_ = std::thread([this] { Run(); });
}

CubinLibrary::~CubinLibrary() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void CubinLibrary::Add(uint64_t crc, std::shared_ptr<const std::string> bytes, uint64_t connection, uint32_t uid) {
  if (bytes == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = held_.find(crc); it != held_.end()) {
      Held& h = it->second;
      if (std::find(h.connections.begin(), h.connections.end(), connection) == h.connections.end() &&
          h.connections.size() < 4096) {
        h.connections.push_back(connection);
      }
      h.released_at = 0;
      return;
    }
    if (stats_.bytes + bytes->size() > max_bytes_) {
      ++stats_.refused;
      return;
    }
    const bool bounded_user = uid != 0 && uid != geteuid();
    size_t& of_uid = bytes_by_uid_[uid];
    if (bounded_user && of_uid + bytes->size() > max_bytes_per_uid_) {
      ++stats_.refused_per_uid;
      if (of_uid == 0) bytes_by_uid_.erase(uid);
      return;
    }
    of_uid += bytes->size();
    stats_.bytes += bytes->size();
    stats_.memory_bytes += bytes->size();
    ++stats_.cubins;
    Held h;
    h.size = bytes->size();
    h.cubin = WindowCubin{CubinHash(*bytes), std::move(bytes)};
    h.uid = uid;
    h.connections.push_back(connection);
    held_.emplace(crc, std::move(h));
    queue_.push_back(crc);
  }
  cv_.notify_all();
}

void CubinLibrary::Release(uint64_t connection, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [crc, h] : held_) {
    auto it = std::find(h.connections.begin(), h.connections.end(), connection);
    if (it == h.connections.end()) continue;
    h.connections.erase(it);
    if (h.connections.empty()) h.released_at = std::max<int64_t>(now_ns, 1);
  }
}

void CubinLibrary::NoteSampled(uint64_t crc, const std::string& function) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(crc);
  if (it == held_.end() || it->second.uploaded || it->second.sampled.size() >= 64) return;
  std::vector<std::string>& sampled = it->second.sampled;
  if (std::find(sampled.begin(), sampled.end(), function) == sampled.end()) sampled.push_back(function);
}

void CubinLibrary::Free(std::unordered_map<uint64_t, Held>::iterator it) {
  const Held& h = it->second;
  const size_t size = h.size;
  stats_.bytes -= size;
  if (h.spilled_at) {
    spill_->Discard(*h.spilled_at, size);
  } else {
    stats_.memory_bytes -= size;
  }
  --stats_.cubins;
  ++stats_.released;
  if (!h.uploaded) ++stats_.not_uploaded;
  if (auto u = bytes_by_uid_.find(h.uid); u != bytes_by_uid_.end() && (u->second -= size) == 0) bytes_by_uid_.erase(u);
  if (auto p = parsed_.find(it->first); p != parsed_.end()) {
    stats_.parsed_bytes -= p->second->MemoryBytes();
    parsed_.erase(p);
  }
  held_.erase(it);
}

void CubinLibrary::EndWindow(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = held_.begin(); it != held_.end();) {
    const auto next = std::next(it);
    const bool queued = std::find(queue_.begin(), queue_.end(), it->first) != queue_.end();
    if (it->second.released_at != 0 && now_ns - it->second.released_at >= kKeepAfterReleaseNs && !queued) Free(it);
    it = next;
  }
}

std::string CubinLibrary::HashOf(uint64_t crc) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(crc);
  return it != held_.end() ? it->second.cubin.hash : std::string();
}

std::vector<WindowCubin> CubinLibrary::TakeAdded() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WindowCubin> out;
  for (auto& [crc, h] : held_) {
    if (h.uploaded || h.sampled.empty()) continue;
    auto p = parsed_.find(crc);
    if (p == parsed_.end()) continue;  // not parsed (yet), or not a CUDA ELF
    bool named = false;
    for (const std::string& f : h.sampled) named = named || p->second->FindFunction(f) != nullptr;
    if (!named) continue;
    WindowCubin cubin = h.cubin;
    if (h.spilled_at) {  // read back for its one upload
      auto bytes = std::make_shared<std::string>(h.size, '\0');
      if (!spill_->ReadAt(*h.spilled_at, bytes->data(), bytes->size()).ok()) continue;
      cubin.bytes = std::move(bytes);
    }
    h.uploaded = true;
    h.sampled.clear();
    h.sampled.shrink_to_fit();
    out.push_back(std::move(cubin));
  }
  return out;
}

std::shared_ptr<const CubinSymbols> CubinLibrary::Find(uint64_t crc) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = held_.find(crc);
  if (held == held_.end()) return nullptr;
  auto it = parsed_.find(crc);
  if (it != parsed_.end()) {
    held->second.parsed_used = ++clock_;
    return it->second;
  }
  // Dropped for the budget: parsed again (once queued is enough).
  if (!held->second.parse_failed && (held->second.spilled_at || held->second.cubin.bytes != nullptr) &&
      std::find(queue_.begin(), queue_.end(), crc) == queue_.end()) {
    queue_.push_back(crc);
    cv_.notify_all();
  }
  return nullptr;
}

void CubinLibrary::EvictParsed(uint64_t keep) {
  while (stats_.parsed_bytes > max_parsed_bytes_) {
    auto victim = parsed_.end();
    uint64_t oldest = UINT64_MAX;
    for (auto it = parsed_.begin(); it != parsed_.end(); ++it) {
      if (it->first == keep) continue;
      auto h = held_.find(it->first);
      const uint64_t used = h != held_.end() ? h->second.parsed_used : 0;
      if (used < oldest) {
        oldest = used;
        victim = it;
      }
    }
    if (victim == parsed_.end()) return;  // only the one just parsed: kept, over the budget
    stats_.parsed_bytes -= victim->second->MemoryBytes();
    ++stats_.parsed_evicted;
    parsed_.erase(victim);
  }
}

bool CubinLibrary::WaitIdle(int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return queue_.empty() && !busy_; });
}

CubinLibraryStats CubinLibrary::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CubinLibrary::Spill(Held& h) {
  if (h.spilled_at || h.cubin.bytes == nullptr || spill_failed_) return;
  if (!spill_) {
    StatusOr<SpillFile> file = SpillFile::Create();
    if (!file.ok()) {
      spill_failed_ = true;  // kept in memory, within the same bound
      return;
    }
    spill_ = std::move(*file);
  }
  const uint64_t at = spill_->size();
  if (!spill_->Append(h.cubin.bytes->data(), h.size).ok()) {
    spill_->Discard(at, spill_->size() - at);  // what a short write left
    return;
  }
  h.spilled_at = at;
  h.cubin.bytes = nullptr;
  stats_.memory_bytes -= h.size;
}

void CubinLibrary::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const uint64_t crc = queue_.front();
    queue_.pop_front();
    auto held = held_.find(crc);
    if (held == held_.end() || parsed_.count(crc)) {  // freed before its turn, or parsed meanwhile
      cv_.notify_all();
      continue;
    }
    std::shared_ptr<const std::string> bytes = held->second.cubin.bytes;
    if (bytes == nullptr && held->second.spilled_at) {  // parsed before, its tables dropped: read back
      auto read = std::make_shared<std::string>(held->second.size, '\0');
      if (spill_->ReadAt(*held->second.spilled_at, read->data(), read->size()).ok()) bytes = std::move(read);
    }
    if (bytes == nullptr) {
      cv_.notify_all();
      continue;
    }
    busy_ = true;
    lock.unlock();
    StatusOr<CubinSymbols> parsed = CubinSymbols::Parse(*bytes, options_);
    lock.lock();
    busy_ = false;
    if (held_.count(crc) == 0) {
      // Freed while it was parsed.
    } else {
      Held& h = held_.find(crc)->second;
      if (parsed.ok()) {
        ++stats_.parsed;
        if (!parsed->has_sass()) ++stats_.without_sass;
        auto table = std::make_shared<const CubinSymbols>(std::move(parsed).value());
        stats_.parsed_bytes += table->MemoryBytes();
        parsed_[crc] = std::move(table);
        h.parsed_used = ++clock_;
        EvictParsed(crc);
      } else {
        ++stats_.parse_failures;
        h.parse_failed = true;
      }
      Spill(h);
    }
    cv_.notify_all();
  }
}

void GpuPcAggregator::Add(uint32_t pid, const CudaPcSample& sample, int64_t now_ns, int64_t unix_second) {
  stats_.samples += sample.record.samples;
  if (buckets_.empty() || buckets_.back().unix_second != unix_second) {
    buckets_.push_back(Bucket{now_ns, unix_second, {}});
  }
  std::map<Key, uint64_t>& samples = buckets_.back().samples;
  const Key key{pid, sample.record.device_id, sample.function->key, sample.record.cubin_crc, sample.record.pc_offset,
                sample.stall_reason->key};
  auto it = samples.find(key);
  if (it == samples.end()) {
    if (keys_ >= max_keys_) {
      stats_.samples_dropped += sample.record.samples;
      return;
    }
    it = samples.emplace(key, 0).first;
    ++keys_;
    names_.emplace(sample.function->key, sample.function);
    names_.emplace(sample.stall_reason->key, sample.stall_reason);
  }
  it->second += sample.record.samples;
}

void GpuPcAggregator::ForgetProcess(uint32_t pid) {
  last_shares_.erase(last_shares_.lower_bound({pid, std::string()}), last_shares_.lower_bound({pid + 1, std::string()}));
}

void GpuPcAggregator::AddGpuTime(uint32_t pid, const std::string& kernel, uint64_t stack_key, uint32_t tid,
                                 int64_t gpu_ns) {
  std::vector<KernelLaunchShare>& shares = window_shares_[{pid, kernel}];
  auto same = std::find_if(shares.begin(), shares.end(),
                           [&](const KernelLaunchShare& k) { return k.stack_key == stack_key && k.tid == tid; });
  if (same != shares.end()) {
    same->gpu_ns += gpu_ns;
  } else {
    shares.push_back({stack_key, tid, gpu_ns});
  }
}

void GpuPcAggregator::Finish(const Context& context, ProfileBuilder* builder) {
  for (auto& [key, list] : window_shares_) last_shares_[key] = std::move(list);
  window_shares_.clear();
  while (!buckets_.empty() && (context.final || buckets_.front().arrived_ns <= context.now_ns - context.delay_ns)) {
    Bucket bucket = std::move(buckets_.front());
    buckets_.pop_front();
    keys_ -= bucket.samples.size();
    builder->SetSampleTime(bucket.unix_second);
    AddBucket(bucket, context, builder);
  }
  builder->SetSampleTime(0);
  if (buckets_.empty()) names_.clear();
}

void GpuPcAggregator::AddBucket(const Bucket& bucket, const Context& context, ProfileBuilder* builder) {
  std::vector<uint64_t> locations;
  for (const auto& [key, count] : bucket.samples) {
    const InternedKernelName& function = *names_.at(key.function);
    const InternedKernelName& stall = *names_.at(key.stall);
    const std::string& mangled = function.text.system_name;
    const auto found = last_shares_.find({key.pid, mangled});
    const std::vector<KernelLaunchShare>* split = found != last_shares_.end() ? &found->second : &kNotRecorded;
    if (split == &kNotRecorded) stats_.samples_unjoined += count;

    const std::shared_ptr<const CubinSymbols> symbols = context.cubins ? context.cubins->Find(key.crc) : nullptr;
    const std::optional<GpuInstruction> instruction =
        symbols ? symbols->Find(mangled, key.pc) : std::optional<GpuInstruction>();
    if (!instruction) ++stats_.instructions_unknown;

    // Leaf first: stall reason, instruction, source line, kernel.
    locations.clear();
    const std::string words = StallReasonWords(stall.text.system_name);
    locations.push_back(
        builder->InternSourceLocation(builder->InternFunction(words, stall.text.system_name), 0, FrameKind::kGpuStall));
    std::string text = HexOffset(key.pc);
    if (instruction && symbols->has_sass()) text += " " + instruction->sass;
    const uint64_t inst_fn = builder->InternFunction(text, mangled + "+" + HexOffset(key.pc));
    // The cubin as the instruction's mapping, so a sample leads to the
    // server's copy; offsets count from the kernel's start, so each kernel's
    // instruction at an offset is a location of its own.
    const std::string hash = context.cubins ? context.cubins->HashOf(key.crc) : std::string();
    uint64_t mapping = 0;
    if (!hash.empty()) {
      ProfileMapping cubin;
      cubin.filename = kCubinMappingName;
      cubin.build_id = hash;
      mapping = builder->InternMapping(cubin);
    }
    locations.push_back(builder->InternFunctionLocation(mapping, key.pc, FrameKind::kGpuInstruction, inst_fn));
    if (instruction && instruction->line > 0) {
      std::string name = Basename(instruction->file) + ":" + std::to_string(instruction->line);
      std::string inlined;
      if (!instruction->inlined.empty()) {
        inlined = instruction->inlined.front().function;
        name += " in " + inlined;
      }
      const uint64_t line_fn = builder->InternFunction(name, inlined, instruction->file);
      locations.push_back(builder->InternSourceLocation(line_fn, instruction->line, FrameKind::kGpuLine));
    }
    std::string kernel_name = function.text.name;
    if (symbols != nullptr && kernel_name == mangled) {
      const std::string_view demangled = symbols->DemangledName(mangled);
      if (!demangled.empty()) kernel_name = std::string(demangled);
    }
    locations.push_back(
        builder->InternSourceLocation(builder->InternFunction(kernel_name, mangled), 0, FrameKind::kCudaKernel));
    const size_t inside = locations.size();

    // The kernel's estimated cycles, split over its launch stacks by their
    // GPU time (the last share takes the rounding).
    const uint32_t shift = std::min<uint32_t>(context.period_log2, 31);
    const int64_t cycles = static_cast<int64_t>(std::min<uint64_t>(count, uint64_t{INT64_MAX} >> shift) << shift);
    int64_t total_ns = 0;
    for (const KernelLaunchShare& s : *split) total_ns += std::max<int64_t>(s.gpu_ns, 0);
    int64_t given = 0;
    for (size_t i = 0; i < split->size(); ++i) {
      const KernelLaunchShare& s = (*split)[i];
      const int64_t value = i + 1 == split->size()
                                ? cycles - given
                                : static_cast<int64_t>(static_cast<__int128>(cycles) * std::max<int64_t>(s.gpu_ns, 0) /
                                                       std::max<int64_t>(total_ns, 1));
      given += value;
      if (value <= 0) continue;
      locations.resize(inside);
      if (s.stack_key == ~0ull) {
        const uint64_t fn = builder->InternFunction("[launch not recorded]", "[launch not recorded]");
        locations.push_back(builder->InternFunctionLocation(0, 0, FrameKind::kNative, fn));
      } else {
        const std::vector<uint64_t>& stack = context.stack(s.stack_key);
        locations.insert(locations.end(), stack.begin(), stack.end());
      }
      SampleLabels labels = context.labels(key.pid, s.stack_key == ~0ull ? 0 : s.tid);
      labels.extra.emplace_back("device", std::to_string(key.device));
      builder->AddSample(locations, value, labels);
    }
  }
}

}  // namespace warpscope::gpu
