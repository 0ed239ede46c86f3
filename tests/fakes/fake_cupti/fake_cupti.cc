// libws_fake_cupti.so: the subset of CUPTI that libwarpscope_cuda.so uses,
// answered in memory, plus test hooks (fake_cupti_hooks.h).
//
// Like CUPTI: one subscriber at a time; callbacks run only for ids enabled
// with cuptiEnableCallback; activity records go into buffers obtained from
// the client's request callback and come back through its completed callback
// (on the thread that fills the buffer or calls cuptiActivityFlushAll); a
// refused buffer drops records and counts them for
// cuptiActivityGetNumDroppedRecords. Unlike CUPTI: no GPU, no worker thread,
// and records are complete the moment they are queued.
//
// Threading: state behind one mutex, released while the subscriber's
// callback runs (it may call back into CUPTI); call counters are atomics so
// cuptiActivityGetNextRecord, called inside the completed callback while the
// activity lock is held, takes no lock.
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "tests/fakes/fake_cupti/fake_cupti_hooks.h"

namespace {

#define WS_FAKE_CUPTI_FUNCTIONS(X)    \
  X(cuptiGetVersion)                  \
  X(cuptiGetResultString)             \
  X(cuptiSubscribe)                   \
  X(cuptiSubscribe_v2)                \
  X(cuptiUnsubscribe)                 \
  X(cuptiEnableCallback)              \
  X(cuptiActivityRegisterCallbacks)   \
  X(cuptiActivityEnable)              \
  X(cuptiActivityDisable)             \
  X(cuptiActivityFlushAll)            \
  X(cuptiActivityGetNextRecord)       \
  X(cuptiActivityGetNumDroppedRecords) \
  X(cuptiGetTimestamp)                \
  X(cuptiGetGraphExecId)              \
  X(cuptiGetStreamIdEx)               \
  X(cuptiFinalize)                    \
  X(cuptiGetDeviceId)                 \
  X(cuptiGetCubinCrc)                 \
  X(cuptiPCSamplingGetNumStallReasons) \
  X(cuptiPCSamplingGetStallReasons)   \
  X(cuptiPCSamplingSetConfigurationAttribute) \
  X(cuptiPCSamplingEnable)            \
  X(cuptiPCSamplingDisable)           \
  X(cuptiPCSamplingGetData)

enum FunctionIndex {
#define WS_FAKE_INDEX(name) k_##name,
  WS_FAKE_CUPTI_FUNCTIONS(WS_FAKE_INDEX)
#undef WS_FAKE_INDEX
      kFunctionCount
};

const char* const kFunctionNames[] = {
#define WS_FAKE_NAME(name) #name,
    WS_FAKE_CUPTI_FUNCTIONS(WS_FAKE_NAME)
#undef WS_FAKE_NAME
};

std::atomic<uint64_t> g_calls[kFunctionCount];
std::atomic<int> g_fail[kFunctionCount];
// Time out of CUPTI: when the last cuptiFinalize or cuptiUnsubscribe ended
// (0: subscribed), and the shortest gap until the next subscription (or
// finalize) seen so far.
std::atomic<uint64_t> g_finalized_at{0};
std::atomic<uint64_t> g_min_detached{UINT64_MAX};
// Bumped by every cuptiFinalize.
std::atomic<uint32_t> g_finalize_generation{0};

uint64_t NowNs();

// ws_fake_cupti_synchronize: while its callbacks run, cuptiGetTimestamp on
// that thread answers this (0: the clock as usual).
thread_local uint64_t t_frozen_timestamp = 0;
// Set while the subscriber's callback runs on this thread.
thread_local bool t_in_callback = false;
// A thread that tore CUPTI down (cuptiFinalize) from inside a callback is
// not traced again: no callbacks and no kernel records for its launches.
// This is our reading of what an H100 showed: in the windowed design, which
// finalized at the exit of whichever launch came first, every kernel of
// PyTorch's autograd thread (the thread that launches most, so the one that
// most often ran the teardown) was missing, while the main thread's were
// recorded.
thread_local bool t_lost_by_finalize = false;

// The CUPTI stream id of a stream handle: the handle's value, and the
// kernels' stream (7) for the default stream.
uint32_t StreamIdOf(const void* stream) {
  return stream != nullptr ? static_cast<uint32_t>(reinterpret_cast<uintptr_t>(stream)) : 7;
}

constexpr int kMaxKind = 128;

struct FakeState {
  std::mutex mu;  // everything below except where noted
  bool subscribed = false;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<std::pair<int, uint32_t>> enabled_callbacks;
  std::string other_subscriber;  // ws_fake_cupti_occupy: another tool holds the subscription
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  bool activity_enabled[kMaxKind] = {};
  uint64_t enable_count[kMaxKind] = {};

  // The current activity buffer; guarded by activity_mu (held while the
  // client's buffer callbacks run).
  std::mutex activity_mu;
  uint8_t* buffer = nullptr;
  size_t buffer_size = 0;
  size_t buffer_used = 0;
  uint64_t dropped_since_query = 0;
  uint64_t dropped_total = 0;
  std::unordered_set<std::string> names;  // keeps kernel names alive

  std::atomic<uint32_t> next_correlation{1000};

  // CUDA graphs, as CUPTI treats them (guarded by mu): a graph launched
  // while kernel activity is on is instrumented by CUPTI; cuptiFinalize
  // tears that instrumentation down, and a later replay of such a graph
  // crashes the application (SIGSEGV), as on CUDA 13 with driver 580.
  std::set<uint64_t> instrumented_graphs;
  std::set<uint64_t> broken_graphs;  // instrumented before a cuptiFinalize

  // ws_fake_cupti_stream_launch: CUPTI stream id -> when its last kernel
  // ends (CLOCK_MONOTONIC); guarded by mu.
  std::unordered_map<uint32_t, uint64_t> stream_busy_until;

  // PC sampling, per context (guarded by mu). Samples scripted with
  // ws_fake_cupti_pc_sample wait in `pending` until cuptiPCSamplingGetData.
  struct PcContext {
    bool enabled = false;
    bool configured = false;
    uint32_t period = 0;
    CUpti_PCSamplingData* buffer = nullptr;
    // (cubin crc, function, pc offset) -> stall index -> samples
    std::map<std::tuple<uint64_t, std::string, uint64_t>, std::map<uint32_t, uint32_t>> pending;
    uint64_t dropped = 0;  // samples scripted while sampling was off
  };
  std::map<CUcontext, PcContext> pc;
  std::set<std::string> function_names;  // alive for the records' functionName
};

// Each device's context: a made-up handle (device + 1) << 12. Launches and
// scripted samples go to the current one (ws_fake_cupti_set_device).
CUcontext ContextOf(uint32_t device) { return reinterpret_cast<CUcontext>((uintptr_t{device} + 1) << 12); }
std::atomic<uint32_t> g_device{0};

// The stall reasons of every fake context: CUPTI index -> name, the indexes
// not contiguous, as on real GPUs. As on real GPUs, a "_not_issued" twin's
// samples are also counted under its reason (totalSamples counts them once).
const std::pair<uint32_t, const char*> kStallReasons[] = {
    {2, "smsp__pcsamp_warps_issue_stalled_barrier"},
    {5, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
    {6, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"},
    {9, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"},
    {14, "smsp__pcsamp_warps_issue_stalled_selected"},
};

FakeState& State() {
  static FakeState* const state = new FakeState();
  return *state;
}

// Counts the call; returns the injected failure, if any.
CUptiResult Enter(FunctionIndex index) {
  g_calls[index].fetch_add(1, std::memory_order_relaxed);
  // Out of CUPTI (finalized or unsubscribed) until the next subscription.
  if (index != k_cuptiSubscribe && index != k_cuptiSubscribe_v2 && index != k_cuptiFinalize) {
    return static_cast<CUptiResult>(g_fail[index].load(std::memory_order_relaxed));
  }
  if (const uint64_t at = g_finalized_at.exchange(0); at != 0) {
    const uint64_t gap = NowNs() - at;
    uint64_t seen = g_min_detached.load();
    while (gap < seen && !g_min_detached.compare_exchange_weak(seen, gap)) {
    }
  }
  return static_cast<CUptiResult>(g_fail[index].load(std::memory_order_relaxed));
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool QueueKernel(const char* name, uint64_t start, uint64_t duration_ns, uint32_t correlation, uint32_t stream,
                 uint64_t graph_exec);

size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    default:
      return 0;
  }
}

// Hands the current buffer back; activity_mu held.
void CompleteBufferLocked(FakeState& s) {
  if (s.buffer == nullptr) return;
  uint8_t* buffer = s.buffer;
  const size_t size = s.buffer_size, used = s.buffer_used;
  s.buffer = nullptr;
  s.buffer_size = s.buffer_used = 0;
  if (s.complete != nullptr) s.complete(nullptr, 0, buffer, size, used);
}

// Copies one record into the current buffer, asking for one when needed.
bool AppendRecord(const void* record, size_t size) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.activity_mu);
  if (s.buffer != nullptr && s.buffer_size - s.buffer_used < size) CompleteBufferLocked(s);
  if (s.buffer == nullptr && s.request != nullptr) {
    uint8_t* buffer = nullptr;
    size_t buffer_size = 0, max_records = 0;
    s.request(&buffer, &buffer_size, &max_records);
    if (buffer != nullptr && buffer_size >= size) {
      s.buffer = buffer;
      s.buffer_size = buffer_size;
      s.buffer_used = 0;
    }
  }
  if (s.buffer == nullptr) {
    s.dropped_since_query++;
    s.dropped_total++;
    return false;
  }
  std::memcpy(s.buffer + s.buffer_used, record, size);
  s.buffer_used += size;
  return true;
}

bool ActivityEnabled(CUpti_ActivityKind kind) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return kind < kMaxKind && s.activity_enabled[kind];
}

void RunCallback(CUpti_CallbackDomain domain, uint32_t cbid, CUpti_ApiCallbackSite site, uint32_t correlation,
                 const void* params) {
  FakeState& s = State();
  CUpti_CallbackFunc callback;
  void* userdata;
  if (t_lost_by_finalize) return;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.subscribed || s.enabled_callbacks.count({domain, cbid}) == 0) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  CUpti_CallbackData data{};
  data.context = ContextOf(g_device.load());
  data.callbackSite = site;
  data.functionName = "fakeLaunch";
  data.functionParams = params;
  data.correlationId = correlation;
  t_in_callback = true;
  callback(userdata, domain, cbid, &data);
  t_in_callback = false;
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (CUptiResult r = Enter(k_cuptiGetVersion)) return r;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  Enter(k_cuptiGetResultString);
  static thread_local char text[64];
  snprintf(text, sizeof(text), "FAKE_CUPTI_ERROR_%d", static_cast<int>(result));
  *str = text;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  if (CUptiResult r = Enter(k_cuptiSubscribe)) return r;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.subscribed || !s.other_subscriber.empty()) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                       void* userdata, CUpti_SubscriberParams* params) {
  if (CUptiResult r = Enter(k_cuptiSubscribe_v2)) return r;
  if (params != nullptr && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.subscribed || !s.other_subscriber.empty()) {
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
      snprintf(params->oldSubscriberName, params->oldSubscriberSize, "CUPTI for %s",
               s.other_subscriber.empty() ? "(unnamed)" : s.other_subscriber.c_str());
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  if (CUptiResult r = Enter(k_cuptiUnsubscribe)) return r;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) return CUPTI_ERROR_INVALID_PARAMETER;
  s.subscribed = false;
  s.callback = nullptr;
  s.enabled_callbacks.clear();
  g_finalized_at.store(NowNs());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (CUptiResult r = Enter(k_cuptiEnableCallback)) return r;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) {
    s.enabled_callbacks.insert({domain, cbid});
  } else {
    s.enabled_callbacks.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  if (CUptiResult r = Enter(k_cuptiActivityRegisterCallbacks)) return r;
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.activity_mu);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (CUptiResult r = Enter(k_cuptiActivityEnable)) return r;
  if (kind <= 0 || kind >= kMaxKind) return CUPTI_ERROR_INVALID_KIND;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.activity_enabled[kind]) s.enable_count[kind]++;
  s.activity_enabled[kind] = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (CUptiResult r = Enter(k_cuptiActivityDisable)) return r;
  if (kind <= 0 || kind >= kMaxKind) return CUPTI_ERROR_INVALID_KIND;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.activity_enabled[kind] = false;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  if (CUptiResult r = Enter(k_cuptiActivityFlushAll)) return r;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.activity_mu);
  if (s.complete == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  CompleteBufferLocked(s);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_size, CUpti_Activity** record) {
  Enter(k_cuptiActivityGetNextRecord);
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const size_t size = RecordSize((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + size;
  }
  if (offset + sizeof(CUpti_Activity) > valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = RecordSize(next->kind);
  if (size == 0 || offset + size > valid_size) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (CUptiResult r = Enter(k_cuptiActivityGetNumDroppedRecords)) return r;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.activity_mu);
  *dropped = s.dropped_since_query;
  s.dropped_since_query = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (CUptiResult r = Enter(k_cuptiGetTimestamp)) return r;
  *timestamp = t_frozen_timestamp != 0 ? t_frozen_timestamp : NowNs() + kWsFakeCuptiClockOffsetNs;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext, CUstream stream, uint8_t, uint32_t* stream_id) {
  if (CUptiResult r = Enter(k_cuptiGetStreamIdEx)) return r;
  if (stream_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *stream_id = StreamIdOf(stream);
  return CUPTI_SUCCESS;
}

// Detaches, as CUPTI does: the subscription, every enabled callback and
// activity kind and the buffer callbacks are gone (a forced flush comes
// first); the next CUPTI call works on a fresh state.
CUptiResult CUPTIAPI cuptiFinalize() {
  if (CUptiResult r = Enter(k_cuptiFinalize)) return r;
  if (t_in_callback) t_lost_by_finalize = true;
  FakeState& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto& [context, pc] : s.pc) pc = FakeState::PcContext{};
  }
  {
    std::lock_guard<std::mutex> lock(s.activity_mu);
    CompleteBufferLocked(s);
    s.request = nullptr;
    s.complete = nullptr;
  }
  std::lock_guard<std::mutex> lock(s.mu);
  s.subscribed = false;
  s.callback = nullptr;
  s.enabled_callbacks.clear();
  for (bool& on : s.activity_enabled) on = false;
  s.broken_graphs.insert(s.instrumented_graphs.begin(), s.instrumented_graphs.end());
  s.instrumented_graphs.clear();
  g_finalized_at.store(NowNs());
  g_finalize_generation.fetch_add(1);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphExecId(CUgraphExec graph_exec, uint32_t* id) {
  if (CUptiResult r = Enter(k_cuptiGetGraphExecId)) return r;
  if (graph_exec == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph_exec));
  return CUPTI_SUCCESS;
}

// ---- test hooks ----

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t* device) {
  if (CUptiResult r = Enter(k_cuptiGetDeviceId)) return r;
  if (context == nullptr || device == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *device = static_cast<uint32_t>((reinterpret_cast<uintptr_t>(context) >> 12) - 1);
  return CUPTI_SUCCESS;
}

// FNV-1a over the bytes: a stable id, like CUPTI's CRC.
CUptiResult CUPTIAPI cuptiGetCubinCrc(CUpti_GetCubinCrcParams* params) {
  if (CUptiResult r = Enter(k_cuptiGetCubinCrc)) return r;
  if (params == nullptr || params->cubin == nullptr || params->cubinSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = static_cast<const uint8_t*>(params->cubin);
  for (size_t i = 0; i < params->cubinSize; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  params->cubinCrc = h;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams* params) {
  if (CUptiResult r = Enter(k_cuptiPCSamplingGetNumStallReasons)) return r;
  if (params == nullptr || params->ctx == nullptr || params->numStallReasons == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  *params->numStallReasons = sizeof(kStallReasons) / sizeof(kStallReasons[0]);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams* params) {
  if (CUptiResult r = Enter(k_cuptiPCSamplingGetStallReasons)) return r;
  if (params == nullptr || params->stallReasonIndex == nullptr || params->stallReasons == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  const size_t n = std::min(params->numStallReasons, sizeof(kStallReasons) / sizeof(kStallReasons[0]));
  for (size_t i = 0; i < n; ++i) {
    params->stallReasonIndex[i] = kStallReasons[i].first;
    snprintf(params->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", kStallReasons[i].second);
  }
  return CUPTI_SUCCESS;
}

// Like CUPTI: only on an enabled context; the sampling data buffer is kept
// for cuptiPCSamplingGetData.
CUptiResult CUPTIAPI cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams* params) {
  if (CUptiResult r = Enter(k_cuptiPCSamplingSetConfigurationAttribute)) return r;
  if (params == nullptr || params->ctx == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pc.find(params->ctx);
  if (it == s.pc.end() || !it->second.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  for (size_t i = 0; i < params->numAttributes; ++i) {
    const CUpti_PCSamplingConfigurationInfo& info = params->pPCSamplingConfigurationInfo[i];
    switch (info.attributeType) {
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
        if (info.attributeData.samplingPeriodData.samplingPeriod < 5 ||
            info.attributeData.samplingPeriodData.samplingPeriod > 31) {
          return CUPTI_ERROR_INVALID_PARAMETER;
        }
        it->second.period = info.attributeData.samplingPeriodData.samplingPeriod;
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
        if (info.attributeData.collectionModeData.collectionMode != CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS) {
          return CUPTI_ERROR_NOT_SUPPORTED;  // the fake has no serialised mode
        }
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
        it->second.buffer =
            static_cast<CUpti_PCSamplingData*>(info.attributeData.samplingDataBufferData.samplingDataBuffer);
        break;
      default:
        break;
    }
  }
  it->second.configured = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams* params) {
  if (CUptiResult r = Enter(k_cuptiPCSamplingEnable)) return r;
  if (params == nullptr || params->ctx == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.pc[params->ctx].enabled = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams* params) {
  if (CUptiResult r = Enter(k_cuptiPCSamplingDisable)) return r;
  if (params == nullptr || params->ctx == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pc.find(params->ctx);
  if (it == s.pc.end() || !it->second.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  it->second = FakeState::PcContext{};
  return CUPTI_SUCCESS;
}

// Hands out the pending samples, at most collectNumPcs PCs per call, each
// with its stall reasons; the rest waits (remainingNumPcs).
CUptiResult CUPTIAPI cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams* params) {
  if (CUptiResult r = Enter(k_cuptiPCSamplingGetData)) return r;
  if (params == nullptr || params->ctx == nullptr || params->pcSamplingData == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pc.find(params->ctx);
  if (it == s.pc.end() || !it->second.enabled || !it->second.configured) return CUPTI_ERROR_INVALID_OPERATION;
  auto* out = static_cast<CUpti_PCSamplingData*>(params->pcSamplingData);
  if (out->pPcData == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  out->totalNumPcs = 0;
  out->totalSamples = 0;
  out->droppedSamples = it->second.dropped;
  it->second.dropped = 0;
  auto& pending = it->second.pending;
  while (!pending.empty() && out->totalNumPcs < out->collectNumPcs) {
    auto first = pending.begin();
    CUpti_PCSamplingPCData& pc = out->pPcData[out->totalNumPcs++];
    pc.cubinCrc = std::get<0>(first->first);
    pc.functionName = const_cast<char*>(s.function_names.insert(std::get<1>(first->first)).first->c_str());
    pc.pcOffset = std::get<2>(first->first);
    pc.correlationId = 0;
    size_t n = 0;
    for (const auto& [index, samples] : first->second) {
      pc.stallReason[n].pcSamplingStallReasonIndex = index;
      pc.stallReason[n].samples = samples;
      if (index != 6) out->totalSamples += samples;
      ++n;
    }
    pc.stallReasonCount = n;
    pending.erase(first);
  }
  out->remainingNumPcs = pending.size();
  return CUPTI_SUCCESS;
}

uint64_t ws_fake_cupti_call_count(const char* name) {
  uint64_t total = 0;
  for (int i = 0; i < kFunctionCount; ++i) {
    if (name == nullptr || std::strcmp(name, kFunctionNames[i]) == 0) total += g_calls[i].load();
  }
  return total;
}

uint64_t ws_fake_cupti_min_detached_ns(void) { return g_min_detached.load(); }

int ws_fake_cupti_subscribed(void) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.subscribed ? 1 : 0;
}

int ws_fake_cupti_activity_enabled(int kind) {
  return kind > 0 && kind < kMaxKind && ActivityEnabled(static_cast<CUpti_ActivityKind>(kind)) ? 1 : 0;
}

uint64_t ws_fake_cupti_enable_count(int kind) {
  if (kind <= 0 || kind >= kMaxKind) return 0;
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.enable_count[kind];
}

uint32_t ws_fake_cupti_launch(int domain, uint32_t cbid, const char* name, uint64_t duration_ns,
                              uint32_t nested_driver_cbid, uint64_t graph_exec) {
  FakeState& s = State();
  const auto d = static_cast<CUpti_CallbackDomain>(domain);
  // Every parameter struct of the graph launches starts with the exec handle;
  // the kernel launches' first member is a pointer too.
  const void* params[4] = {reinterpret_cast<void*>(graph_exec), nullptr, nullptr, nullptr};
  const uint32_t outer = s.next_correlation.fetch_add(1);
  uint32_t innermost = outer;
  RunCallback(d, cbid, CUPTI_API_ENTER, outer, params);
  if (nested_driver_cbid != 0) {
    innermost = s.next_correlation.fetch_add(1);
    RunCallback(CUPTI_CB_DOMAIN_DRIVER_API, nested_driver_cbid, CUPTI_API_ENTER, innermost, params);
    RunCallback(CUPTI_CB_DOMAIN_DRIVER_API, nested_driver_cbid, CUPTI_API_EXIT, innermost, params);
  }
  RunCallback(d, cbid, CUPTI_API_EXIT, outer, params);
  return QueueKernel(name, NowNs() + kWsFakeCuptiClockOffsetNs, duration_ns, innermost, 7, graph_exec) ? innermost : 0;
}

uint32_t ws_fake_cupti_stream_launch(int domain, uint32_t cbid, uint64_t stream, const char* name, uint64_t call_ns,
                                     uint64_t delay_ns, uint64_t duration_ns, uint64_t* start_ns,
                                     uint64_t* end_ns) {
  FakeState& s = State();
  const auto d = static_cast<CUpti_CallbackDomain>(domain);
  // As ws_fake_cupti_launch: the kernel launches' first member is a pointer.
  const void* params[4] = {nullptr, nullptr, nullptr, nullptr};
  const uint32_t correlation = s.next_correlation.fetch_add(1);
  RunCallback(d, cbid, CUPTI_API_ENTER, correlation, params);
  // The call's own work comes after its ENTER callback, however long that took.
  const uint64_t entered = NowNs();
  while (NowNs() - entered < call_ns) {
  }
  RunCallback(d, cbid, CUPTI_API_EXIT, correlation, params);
  const uint32_t stream_id = StreamIdOf(reinterpret_cast<void*>(stream));
  uint64_t start;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    uint64_t& busy_until = s.stream_busy_until[stream_id];
    start = std::max(busy_until, NowNs() + delay_ns);
    busy_until = start + duration_ns;
  }
  if (start_ns != nullptr) *start_ns = start;
  if (end_ns != nullptr) *end_ns = start + duration_ns;
  return QueueKernel(name, start + kWsFakeCuptiClockOffsetNs, duration_ns, correlation, stream_id, 0) ? correlation
                                                                                                      : 0;
}

uint32_t ws_fake_cupti_synchronize(int domain, uint32_t cbid, uint32_t nested_driver_cbid, uint64_t stream,
                                   uint64_t wait_ns, const char* kernel_name, uint64_t kernel_ns) {
  FakeState& s = State();
  const auto d = static_cast<CUpti_CallbackDomain>(domain);
  // The stream calls' parameter structs start with the stream.
  const void* params[4] = {reinterpret_cast<void*>(stream), nullptr, nullptr, nullptr};
  const uint64_t start = NowNs() + kWsFakeCuptiClockOffsetNs;
  if (kernel_name != nullptr) {
    QueueKernel(kernel_name, start, kernel_ns, s.next_correlation.fetch_add(1),
                StreamIdOf(reinterpret_cast<void*>(stream)), 0);
  }
  const uint32_t outer = s.next_correlation.fetch_add(1);
  t_frozen_timestamp = start;
  RunCallback(d, cbid, CUPTI_API_ENTER, outer, params);
  if (nested_driver_cbid != 0) {
    const uint32_t inner = s.next_correlation.fetch_add(1);
    RunCallback(CUPTI_CB_DOMAIN_DRIVER_API, nested_driver_cbid, CUPTI_API_ENTER, inner, params);
    RunCallback(CUPTI_CB_DOMAIN_DRIVER_API, nested_driver_cbid, CUPTI_API_EXIT, inner, params);
  }
  // The thread really waits, so that wall time agrees with the clock it saw.
  t_frozen_timestamp = 0;
  const uint64_t until = NowNs() + wait_ns;
  while (NowNs() < until) {
    const uint64_t left = until - NowNs();
    timespec ts{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
    nanosleep(&ts, nullptr);
  }
  t_frozen_timestamp = start + wait_ns;
  RunCallback(d, cbid, CUPTI_API_EXIT, outer, params);
  t_frozen_timestamp = 0;
  return outer;
}

}  // extern "C"

namespace {
bool QueueKernel(const char* name, uint64_t start, uint64_t duration_ns, uint32_t correlation, uint32_t stream,
                 uint64_t graph_exec) {
  FakeState& s = State();
  if (t_lost_by_finalize || !ActivityEnabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return false;
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = k.start + duration_ns;
  k.deviceId = g_device.load();  // the device current at the launch (ws_fake_cupti_set_device)
  k.contextId = k.deviceId + 1;
  k.streamId = stream;
  k.gridX = 128;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.correlationId = correlation;
  k.graphId = graph_exec != 0 ? 77 : 0;
  {
    std::lock_guard<std::mutex> lock(s.activity_mu);
    k.name = s.names.insert(name != nullptr ? name : "").first->c_str();
  }
  return AppendRecord(&k, sizeof(k));
}
}  // namespace

extern "C" {

int ws_fake_cupti_graph_launch(int domain, uint32_t cbid, uint64_t graph_exec, uint32_t nodes, const char* name,
                               uint64_t duration_ns) {
  FakeState& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.broken_graphs.count(graph_exec) != 0) {
      static const char kWhy[] = "fake CUPTI: graph replayed after cuptiFinalize tore down its instrumentation\n";
      (void)!write(2, kWhy, sizeof(kWhy) - 1);
      raise(SIGSEGV);
    }
  }
  const auto d = static_cast<CUpti_CallbackDomain>(domain);
  const void* params[4] = {reinterpret_cast<void*>(graph_exec), nullptr, nullptr, nullptr};
  const uint32_t correlation = s.next_correlation.fetch_add(1);
  RunCallback(d, cbid, CUPTI_API_ENTER, correlation, params);
  RunCallback(d, cbid, CUPTI_API_EXIT, correlation, params);
  if (t_lost_by_finalize || !ActivityEnabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.instrumented_graphs.insert(graph_exec);
  }
  uint64_t start = NowNs() + kWsFakeCuptiClockOffsetNs;
  int queued = 0;
  for (uint32_t node = 1; node <= nodes; ++node) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = start + duration_ns;
    start = k.end;
    k.deviceId = g_device.load();
    k.contextId = k.deviceId + 1;
    k.streamId = 7;
    k.gridX = 128;
    k.gridY = k.gridZ = 1;
    k.blockX = 256;
    k.blockY = k.blockZ = 1;
    k.registersPerThread = 32;
    k.correlationId = correlation;  // every node carries the graph launch's id
    k.graphId = static_cast<uint32_t>(graph_exec);
    k.graphNodeId = (graph_exec << 16) | node;
    {
      std::lock_guard<std::mutex> lock(s.activity_mu);
      k.name = s.names.insert(name != nullptr ? name : "").first->c_str();
    }
    if (AppendRecord(&k, sizeof(k))) queued++;
  }
  return queued;
}

uint32_t ws_fake_cupti_finalize_generation(void) { return g_finalize_generation.load(); }

void ws_fake_cupti_memcpy(uint64_t bytes, uint64_t duration_ns) {
  if (!ActivityEnabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return;
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = bytes;
  m.start = NowNs() + kWsFakeCuptiClockOffsetNs;
  m.end = m.start + duration_ns;
  m.streamId = 7;
  m.correlationId = State().next_correlation.fetch_add(1);
  AppendRecord(&m, sizeof(m));
}

void ws_fake_cupti_flush(void) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.activity_mu);
  CompleteBufferLocked(s);
}

uint64_t ws_fake_cupti_records_dropped(void) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.activity_mu);
  return s.dropped_total;
}

void ws_fake_cupti_set_device(uint32_t device) { g_device.store(device); }

namespace {
void RunResourceCallback(uint32_t cbid, CUcontext context, void* descriptor) {
  FakeState& s = State();
  CUpti_CallbackFunc callback;
  void* userdata;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.subscribed || s.enabled_callbacks.count({CUPTI_CB_DOMAIN_RESOURCE, cbid}) == 0) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  CUpti_ResourceData data{};
  data.context = context;
  data.resourceDescriptor = descriptor;
  callback(userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}
}  // namespace

void ws_fake_cupti_context_created(void) {
  RunResourceCallback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, ContextOf(g_device.load()), nullptr);
}

void ws_fake_cupti_context_destroying(void) {
  RunResourceCallback(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, ContextOf(g_device.load()), nullptr);
}

void ws_fake_cupti_load_module(const void* cubin, size_t size) {
  CUpti_ModuleResourceData module{};
  module.moduleId = 1;
  module.cubinSize = size;
  module.pCubin = static_cast<const char*>(cubin);
  RunResourceCallback(CUPTI_CBID_RESOURCE_MODULE_LOADED, ContextOf(g_device.load()), &module);
}

int ws_fake_cupti_pc_sample(const char* function, uint64_t cubin_crc, uint64_t pc_offset, uint32_t stall_index,
                            uint32_t samples) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  FakeState::PcContext& pc = s.pc[ContextOf(g_device.load())];
  if (!pc.enabled || !pc.configured) {
    pc.dropped += samples;
    return 0;
  }
  pc.pending[{cubin_crc, function, pc_offset}][stall_index] += samples;
  return 1;
}

uint32_t ws_fake_cupti_pc_sampling_period(uint32_t device) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pc.find(ContextOf(device));
  return it != s.pc.end() && it->second.enabled && it->second.configured ? it->second.period : 0;
}

void ws_fake_cupti_occupy(const char* tool) {
  FakeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.other_subscriber = tool != nullptr ? tool : "";
}

void ws_fake_cupti_fail(const char* name, int result) {
  for (int i = 0; i < kFunctionCount; ++i) {
    if (std::strcmp(name, kFunctionNames[i]) == 0) g_fail[i].store(result);
  }
}

}  // extern "C"
#pragma GCC visibility pop
