#include "cuda/pc_sampling.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cuda/injection_state.h"

namespace warpscope::cuda {

namespace {

// The last context this thread noted, and the generation it noted it in:
// a launch into the same context costs two compares.
struct ThreadNote {
  CUcontext context = nullptr;
  uint32_t generation = 0;
};
constinit thread_local ThreadNote t_note{};

uint32_t StateFor(CUptiResult result) {
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return WS_CUDA_PC_SAMPLING_NO_PERMISSION;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
      return WS_CUDA_PC_SAMPLING_UNSUPPORTED;
    default:
      return WS_CUDA_PC_SAMPLING_FAILED;
  }
}

bool HasPcSampling(const CuptiFunctions& fn) {
  return fn.cuptiPCSamplingGetNumStallReasons != nullptr && fn.cuptiPCSamplingGetStallReasons != nullptr &&
         fn.cuptiPCSamplingSetConfigurationAttribute != nullptr && fn.cuptiPCSamplingEnable != nullptr &&
         fn.cuptiPCSamplingDisable != nullptr && fn.cuptiPCSamplingGetData != nullptr;
}

}  // namespace

void PcSampling::Configure(const LinkConfig& config) {
  period_log2_ = config.pc_period_log2;
  max_pcs_ = config.pc_max_pcs;
  wanted_.store(config.pc_sampling && !refused_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void PcSampling::NoteContext(CUcontext context) noexcept {
  if (context == nullptr || !wanted_.load(std::memory_order_relaxed)) return;
  const uint32_t generation = generation_.load(std::memory_order_acquire);
  if (t_note.context == context && t_note.generation == generation) return;
  t_note = ThreadNote{context, generation};
  CUcontext free_slot_value = nullptr;
  for (auto& slot : noted_) {
    CUcontext seen = slot.load(std::memory_order_acquire);
    if (seen == context) return;
    if (seen == nullptr &&
        slot.compare_exchange_strong(free_slot_value, context, std::memory_order_acq_rel)) {
      return;
    }
    free_slot_value = nullptr;
  }
  // More contexts than slots at once: this one is noted on a later launch.
  t_note = ThreadNote{};
}

void PcSampling::OnModuleLoaded(const CuptiFunctions& fn, const CUpti_ModuleResourceData& module) noexcept {
  if (!wanted_.load(std::memory_order_relaxed) || module.pCubin == nullptr || module.cubinSize == 0 ||
      fn.cuptiGetCubinCrc == nullptr) {
    return;
  }
  CUpti_GetCubinCrcParams params{};
  params.size = CUpti_GetCubinCrcParamsSize;
  params.cubinSize = module.cubinSize;
  params.cubin = module.pCubin;
  if (fn.cuptiGetCubinCrc(&params) != CUPTI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(cubin_mu_);
  if (!cubin_crcs_.insert(params.cubinCrc).second) return;  // sent (or refused) already
  if (module.cubinSize > kMaxCubinBytes || pending_bytes_ + module.cubinSize > kMaxPendingCubinBytes) {
    counters_.cubins_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    Cubin c;
    c.crc = params.cubinCrc;
    c.bytes.assign(module.pCubin, module.cubinSize);
    pending_bytes_ += c.bytes.size();
    pending_cubins_.push_back(std::move(c));
  } catch (...) {
    counters_.cubins_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

void PcSampling::Refuse(const CuptiFunctions& fn, CUptiResult result, const char* what) noexcept {
  const uint32_t state = StateFor(result);
  counters_.state.store(state, std::memory_order_relaxed);
  counters_.error.store(static_cast<uint32_t>(result), std::memory_order_relaxed);
  refused_.store(true, std::memory_order_relaxed);
  wanted_.store(false, std::memory_order_relaxed);
  std::string why;
  if (state == WS_CUDA_PC_SAMPLING_NO_PERMISSION) {
    why = "the driver allows GPU profiling to admin users only (NVreg_RestrictProfilingToAdminUsers)";
  } else if (state == WS_CUDA_PC_SAMPLING_UNSUPPORTED) {
    why = "this GPU, driver or CUPTI does not support it";
  } else {
    why = std::string(what) + " failed: " + CuptiResultText(fn, result);
  }
  SayPcSamplingOnce("PC sampling is off: " + why + "; GPU time is recorded as before");
}

bool PcSampling::EnableLocked(const CuptiFunctions& fn, Context& c) noexcept {
  // CUPTI's order: enable, then ask for the stall reasons, then configure.
  CUpti_PCSamplingEnableParams enable{};
  enable.size = CUpti_PCSamplingEnableParamsSize;
  enable.ctx = c.handle;
  CUptiResult r = fn.cuptiPCSamplingEnable(&enable);
  if (r != CUPTI_SUCCESS) {
    Refuse(fn, r, "cuptiPCSamplingEnable");
    return false;
  }
  auto undo = [&] {
    CUpti_PCSamplingDisableParams disable{};
    disable.size = CUpti_PCSamplingDisableParamsSize;
    disable.ctx = c.handle;
    (void)fn.cuptiPCSamplingDisable(&disable);
  };
  size_t count = 0;
  CUpti_PCSamplingGetNumStallReasonsParams num{};
  num.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  num.ctx = c.handle;
  num.numStallReasons = &count;
  r = fn.cuptiPCSamplingGetNumStallReasons(&num);
  if (r != CUPTI_SUCCESS) {
    undo();
    Refuse(fn, r, "cuptiPCSamplingGetNumStallReasons");
    return false;
  }
  count = std::min<size_t>(count, 256);
  try {
    std::vector<std::vector<char>> names(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
    std::vector<char*> name_pointers(count);
    for (size_t i = 0; i < count; ++i) name_pointers[i] = names[i].data();
    c.stall_indexes.assign(count, 0);
    CUpti_PCSamplingGetStallReasonsParams reasons{};
    reasons.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    reasons.ctx = c.handle;
    reasons.numStallReasons = count;
    reasons.stallReasonIndex = c.stall_indexes.data();
    reasons.stallReasons = name_pointers.data();
    r = fn.cuptiPCSamplingGetStallReasons(&reasons);
    if (r != CUPTI_SUCCESS) {
      undo();
      Refuse(fn, r, "cuptiPCSamplingGetStallReasons");
      return false;
    }
    c.stall_names.clear();
    c.not_issued_of.clear();
    std::unordered_map<std::string, uint32_t> index_of;
    for (size_t i = 0; i < count; ++i) {
      names[i].back() = '\0';
      c.stall_names[c.stall_indexes[i]] = names[i].data();
      index_of[names[i].data()] = c.stall_indexes[i];
    }
    constexpr std::string_view kNotIssued = "_not_issued";
    for (const auto& [name, index] : index_of) {
      if (name.size() <= kNotIssued.size() || name.compare(name.size() - kNotIssued.size(), std::string::npos, kNotIssued) != 0) continue;
      auto base = index_of.find(name.substr(0, name.size() - kNotIssued.size()));
      if (base != index_of.end()) c.not_issued_of[index] = base->second;
    }
    c.reason_samples.assign(count, 0);
    // The buffer CUPTI fills on each read: max_pcs_ PCs, each with room for
    // every stall reason.
    c.pcs.assign(max_pcs_, CUpti_PCSamplingPCData{});
    c.stall_storage.assign(static_cast<size_t>(max_pcs_) * std::max<size_t>(count, 1), CUpti_PCSamplingStallReason{});
    for (size_t i = 0; i < c.pcs.size(); ++i) {
      c.pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      c.pcs[i].stallReason = c.stall_storage.data() + i * std::max<size_t>(count, 1);
    }
  } catch (...) {
    undo();
    return false;  // out of memory: this context goes without; tried again when noted again
  }
  c.data = CUpti_PCSamplingData{};
  c.data.size = sizeof(CUpti_PCSamplingData);
  c.data.collectNumPcs = c.pcs.size();
  c.data.pPcData = c.pcs.data();

  CUpti_PCSamplingConfigurationInfo info[6] = {};
  info[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  info[0].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  info[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  info[1].attributeData.samplingPeriodData.samplingPeriod = period_log2_;
  info[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  info[2].attributeData.stallReasonData.stallReasonCount = c.stall_indexes.size();
  info[2].attributeData.stallReasonData.pStallReasonIndex = c.stall_indexes.data();
  info[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  info[3].attributeData.samplingDataBufferData.samplingDataBuffer = &c.data;
  info[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  info[4].attributeData.enableStartStopControlData.enableStartStopControl = 0;
  info[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
  info[5].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;

  CUpti_PCSamplingConfigurationInfoParams config{};
  config.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  config.ctx = c.handle;
  config.numAttributes = sizeof(info) / sizeof(info[0]);
  config.pPCSamplingConfigurationInfo = info;
  r = fn.cuptiPCSamplingSetConfigurationAttribute(&config);
  if (r != CUPTI_SUCCESS) {
    undo();
    Refuse(fn, r, "cuptiPCSamplingSetConfigurationAttribute");
    return false;
  }
  if (fn.cuptiGetDeviceId != nullptr) {
    uint32_t device = UINT32_MAX;
    if (fn.cuptiGetDeviceId(c.handle, &device) == CUPTI_SUCCESS) c.device = device;
  }
  c.enabled = true;
  counters_.state.store(WS_CUDA_PC_SAMPLING_ON, std::memory_order_relaxed);
  return true;
}

bool PcSampling::Enable(const CuptiFunctions& fn) noexcept {
  if (refused_.load(std::memory_order_relaxed)) return false;
  if (!wanted_.load(std::memory_order_relaxed)) return true;
  if (!HasPcSampling(fn)) {
    Refuse(fn, CUPTI_ERROR_NOT_SUPPORTED, "PC sampling");
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& slot : noted_) {
    CUcontext context = slot.exchange(nullptr, std::memory_order_acq_rel);
    if (context == nullptr) continue;
    auto it = std::find_if(contexts_.begin(), contexts_.end(), [&](const Context& c) { return c.handle == context; });
    if (it != contexts_.end() && it->enabled) continue;
    if (it == contexts_.end()) {
      if (contexts_.size() >= kMaxContexts) continue;
      contexts_.emplace_back();
      it = contexts_.end() - 1;
      it->handle = context;
    }
    if (!EnableLocked(fn, *it)) {
      if (refused_.load(std::memory_order_relaxed)) return false;
    }
  }
  return true;
}

void PcSampling::ReadLocked(const CuptiFunctions& fn, Context& c, WireOutbox& outbox, uint64_t now_ns) noexcept {
  if (!c.enabled) return;
  for (int round = 0; round < kMaxReadsPerContext; ++round) {
    c.data.totalNumPcs = 0;
    c.data.remainingNumPcs = 0;
    c.data.totalSamples = 0;
    c.data.droppedSamples = 0;
    c.data.hardwareBufferFull = 0;
    CUpti_PCSamplingGetDataParams params{};
    params.size = CUpti_PCSamplingGetDataParamsSize;
    params.ctx = c.handle;
    params.pcSamplingData = &c.data;
    const CUptiResult r = fn.cuptiPCSamplingGetData(&params);
    if (r == CUPTI_ERROR_OUT_OF_MEMORY || c.data.hardwareBufferFull != 0) {
      counters_.hardware_buffer_full.fetch_add(1, std::memory_order_relaxed);
    }
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) return;
    counters_.samples_total.fetch_add(c.data.totalSamples, std::memory_order_relaxed);
    counters_.samples_dropped.fetch_add(c.data.droppedSamples, std::memory_order_relaxed);
    const size_t pcs = std::min<size_t>(c.data.totalNumPcs, c.pcs.size());
    const size_t reasons_room = c.pcs.empty() ? 0 : c.stall_storage.size() / c.pcs.size();
    for (size_t i = 0; i < pcs; ++i) {
      const CUpti_PCSamplingPCData& pc = c.pcs[i];
      ws_cuda_pc_sample record{};
      record.cubin_crc = pc.cubinCrc;
      record.pc_offset = pc.pcOffset;
      record.read_host_ns = now_ns;
      record.device_id = c.device;
      const size_t reasons = std::min({pc.stallReasonCount, reasons_room, c.reason_samples.size()});
      // A sample counts under its reason and, when the scheduler issued no
      // instruction in that cycle, under the reason's "_not_issued" twin as
      // well. The records partition the samples instead: the twin's, and the
      // reason's less the twin's.
      for (size_t j = 0; j < reasons; ++j) c.reason_samples[j] = pc.stallReason[j].samples;
      for (size_t j = 0; j < reasons; ++j) {
        auto base = c.not_issued_of.find(pc.stallReason[j].pcSamplingStallReasonIndex);
        if (base == c.not_issued_of.end()) continue;
        for (size_t k = 0; k < reasons; ++k) {
          if (pc.stallReason[k].pcSamplingStallReasonIndex != base->second) continue;
          c.reason_samples[k] -= std::min(c.reason_samples[k], pc.stallReason[j].samples);
          break;
        }
      }
      for (size_t j = 0; j < reasons; ++j) {
        const CUpti_PCSamplingStallReason& reason = pc.stallReason[j];
        if (c.reason_samples[j] == 0) continue;
        auto name = c.stall_names.find(reason.pcSamplingStallReasonIndex);
        record.samples = c.reason_samples[j];
        counters_.samples.fetch_add(record.samples, std::memory_order_relaxed);
        if (!outbox.AddPcSample(record, pc.functionName, name == c.stall_names.end() ? nullptr : name->second.c_str())) {
          counters_.records_dropped.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    if (c.data.remainingNumPcs == 0) return;
  }
  // PCs left over after kMaxReadsPerContext reads stay with CUPTI for the
  // next read.
}

void PcSampling::Read(const CuptiFunctions& fn, WireOutbox& outbox, uint64_t now_ns) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  for (Context& c : contexts_) ReadLocked(fn, c, outbox, now_ns);
}

void PcSampling::DisableLocked(const CuptiFunctions& fn, Context& c, WireOutbox& outbox, uint64_t now_ns) noexcept {
  if (!c.enabled) return;
  ReadLocked(fn, c, outbox, now_ns);
  CUpti_PCSamplingDisableParams disable{};
  disable.size = CUpti_PCSamplingDisableParamsSize;
  disable.ctx = c.handle;
  (void)fn.cuptiPCSamplingDisable(&disable);
  c.enabled = false;
}

bool PcSampling::any_enabled() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Context& c : contexts_) {
    if (c.enabled) return true;
  }
  return false;
}

void PcSampling::DisableAll(const CuptiFunctions& fn, WireOutbox& outbox, uint64_t now_ns) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Context& c : contexts_) DisableLocked(fn, c, outbox, now_ns);
    contexts_.clear();
    for (auto& slot : noted_) slot.store(nullptr, std::memory_order_relaxed);
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

void PcSampling::OnContextDestroying(const CuptiFunctions& fn, CUcontext context, WireOutbox& outbox) noexcept {
  for (auto& slot : noted_) {
    CUcontext expected = context;
    slot.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  }
  if (!HasPcSampling(fn)) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
    if (it->handle != context) continue;
    DisableLocked(fn, *it, outbox, MonotonicNs());
    contexts_.erase(it);
    break;
  }
  if (t_note.context == context) t_note = ThreadNote{};
}

void PcSampling::FeedCubins(WireOutbox& outbox, size_t room_bytes) noexcept {
  constexpr size_t kChunk = WS_CUDA_WIRE_MAX_MESSAGE - sizeof(ws_cuda_msg_header) - sizeof(ws_cuda_cubin_chunk);
  std::lock_guard<std::mutex> lock(cubin_mu_);
  while (!pending_cubins_.empty() && outbox.queued_data_bytes() + kChunk <= room_bytes) {
    Cubin& c = pending_cubins_.front();
    ws_cuda_cubin_chunk chunk{};
    chunk.cubin_crc = c.crc;
    chunk.total_bytes = c.bytes.size();
    chunk.offset = c.sent;
    chunk.length = static_cast<uint32_t>(std::min(kChunk, c.bytes.size() - c.sent));
    chunk.flags = c.sent + chunk.length == c.bytes.size() ? WS_CUDA_CUBIN_FLAG_LAST : 0;
    if (!outbox.AddCubinChunk(chunk, reinterpret_cast<const uint8_t*>(c.bytes.data()) + c.sent)) {
      // Dropped mid-cubin: the agent discards the partial one.
      counters_.cubins_dropped.fetch_add(1, std::memory_order_relaxed);
      pending_bytes_ -= c.bytes.size();
      pending_cubins_.erase(pending_cubins_.begin());
      continue;
    }
    c.sent += chunk.length;
    if (c.sent == c.bytes.size()) {
      counters_.cubins_sent.fetch_add(1, std::memory_order_relaxed);
      pending_bytes_ -= c.bytes.size();
      pending_cubins_.erase(pending_cubins_.begin());
    }
  }
}

void PcSampling::FillStats(ws_cuda_stats* stats) const noexcept {
  stats->pc_samples = counters_.samples.load(std::memory_order_relaxed);
  stats->pc_samples_total = counters_.samples_total.load(std::memory_order_relaxed);
  stats->pc_samples_dropped = counters_.samples_dropped.load(std::memory_order_relaxed);
  stats->pc_records_dropped = counters_.records_dropped.load(std::memory_order_relaxed);
  stats->pc_hardware_buffer_full = counters_.hardware_buffer_full.load(std::memory_order_relaxed);
  stats->cubins_sent = counters_.cubins_sent.load(std::memory_order_relaxed);
  stats->cubins_dropped = counters_.cubins_dropped.load(std::memory_order_relaxed);
  stats->pc_sampling_state = counters_.state.load(std::memory_order_relaxed);
  stats->pc_sampling_error = counters_.error.load(std::memory_order_relaxed);
}

}  // namespace warpscope::cuda
