// PcSampling: CUPTI's PC sampling in continuous mode on every CUDA context
// of the process, and the cubins of the modules it loads
// (docs/design/gpu_pc.md).
//
// Continuous mode keeps kernels concurrent (nothing is serialised); each
// record is one instruction (cubin CRC, function, PC offset) with its sample
// counts per stall reason, and no launch: samples belong to a kernel
// function. Stall-reason names are read from CUPTI for each context (they
// differ between GPU architectures), never assumed.
//
// Who does what:
//   - application threads, inside CUPTI callbacks, only note contexts
//     (NoteContext: a launch's context, or a context being created) and copy
//     the cubin of a module being loaded (OnModuleLoaded; cuptiGetCubinCrc
//     names it). A context being destroyed is read and disabled on its own
//     thread (OnContextDestroying), before the context goes; every context
//     is read and disabled by an application thread when the session leaves
//     CUPTI (DisableAll, inside a launch callback or the step-aside of
//     cupti_session.h).
//   - the link thread enables sampling on the noted contexts (Enable), reads
//     what CUPTI collected (Read: every flush interval, and when a window
//     closes), turns it into PC_SAMPLES records, and feeds pending cubins
//     into the outbox as CUBIN chunks while it has room (FeedCubins).
// The link thread never disables: cuptiPCSamplingDisable there deadlocks
// against a launch in flight on the same context (CUPTI 13 on an H100: the
// disable waits for a lock the launch holds while the launch waits for one
// the disable holds). So sampling goes on between a window's close and the
// detach that follows it (the drain), and a process that never launches
// again after its last window keeps it enabled on an idle GPU.
// Everything CUPTI returns is bounded: PCs per read (LinkConfig::pc_max_pcs),
// reads per call, contexts (kMaxContexts), pending cubin bytes; what does not
// fit is counted in ws_cuda_stats.
//
// A driver that restricts profiling to admin users (or a CUPTI without PC
// sampling) makes Enable fail once: the library says so in one line, stops
// trying for the life of the process, and records GPU time as before.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda/cupti_library.h"
#include "cuda/link_config.h"
#include "cuda/wire_outbox.h"
#include "proto/cuda/cuda_wire.h"

namespace warpscope::cuda {

struct PcSamplingCounters {
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> samples_total{0};
  std::atomic<uint64_t> samples_dropped{0};
  std::atomic<uint64_t> records_dropped{0};
  std::atomic<uint64_t> hardware_buffer_full{0};
  std::atomic<uint64_t> cubins_sent{0};
  std::atomic<uint64_t> cubins_dropped{0};
  std::atomic<uint32_t> state{WS_CUDA_PC_SAMPLING_OFF};
  std::atomic<uint32_t> error{0};
};

class PcSampling {
 public:
  static constexpr size_t kMaxContexts = 64;
  // Cubins copied but not yet sent, all together (the application's memory:
  // a sent cubin is freed; the agent keeps it).
  static constexpr size_t kMaxPendingCubinBytes = 64u << 20;
  // One cubin at most (larger ones are counted and not sent).
  static constexpr size_t kMaxCubinBytes = 32u << 20;
  // CUPTI calls per context and Read: at most this many times pc_max_pcs PCs.
  static constexpr int kMaxReadsPerContext = 16;

  PcSampling() = default;
  PcSampling(const PcSampling&) = delete;
  PcSampling& operator=(const PcSampling&) = delete;

  // Link thread: what the next Enable sets up (a new CONFIG). `wanted`
  // false: NoteContext and OnModuleLoaded do nothing.
  void Configure(const LinkConfig& config);
  bool wanted() const { return wanted_.load(std::memory_order_relaxed); }

  // Application threads (CUPTI callbacks). Never block on the link thread.
  void NoteContext(CUcontext context) noexcept;
  void OnModuleLoaded(const CuptiFunctions& fn, const CUpti_ModuleResourceData& module) noexcept;
  void OnContextDestroying(const CuptiFunctions& fn, CUcontext context, WireOutbox& outbox) noexcept;

  // Link thread, while CUPTI is attached.
  // Enables sampling on the contexts noted since the last call; returns
  // false once sampling is refused for good (the state says why).
  bool Enable(const CuptiFunctions& fn) noexcept;
  void Read(const CuptiFunctions& fn, WireOutbox& outbox, uint64_t now_ns) noexcept;
  // Reads and disables every enabled context; NoteContext notes them again
  // from their next launch. Only on an application thread inside a CUPTI
  // callback (the detach), or where no launch can be in flight.
  void DisableAll(const CuptiFunctions& fn, WireOutbox& outbox, uint64_t now_ns) noexcept;
  // Link thread: some context has sampling enabled.
  bool any_enabled() noexcept;
  // Moves pending cubins into the outbox as CUBIN chunks while its queued
  // data stays under `room_bytes`.
  void FeedCubins(WireOutbox& outbox, size_t room_bytes) noexcept;

  void FillStats(ws_cuda_stats* stats) const noexcept;
  const PcSamplingCounters& counters() const { return counters_; }

 private:
  struct Context {
    CUcontext handle = nullptr;
    uint32_t device = UINT32_MAX;
    bool enabled = false;
    std::vector<uint32_t> stall_indexes;
    std::unordered_map<uint32_t, std::string> stall_names;  // CUPTI index -> name
    // CUPTI index of each "<reason>_not_issued" -> that of "<reason>".
    std::unordered_map<uint32_t, uint32_t> not_issued_of;
    std::vector<uint32_t> reason_samples;  // one PC's samples per reason (scratch)
    std::vector<CUpti_PCSamplingPCData> pcs;
    std::vector<CUpti_PCSamplingStallReason> stall_storage;  // pcs.size() x stall reasons
    CUpti_PCSamplingData data{};
  };
  struct Cubin {
    uint64_t crc = 0;
    std::string bytes;
    size_t sent = 0;  // bytes already in the outbox
  };

  // With mu_ held.
  bool EnableLocked(const CuptiFunctions& fn, Context& c) noexcept;
  void ReadLocked(const CuptiFunctions& fn, Context& c, WireOutbox& outbox, uint64_t now_ns) noexcept;
  void DisableLocked(const CuptiFunctions& fn, Context& c, WireOutbox& outbox, uint64_t now_ns) noexcept;
  void Refuse(const CuptiFunctions& fn, CUptiResult result, const char* what) noexcept;

  std::atomic<bool> wanted_{false};
  std::atomic<bool> refused_{false};
  uint32_t period_log2_ = 20;
  uint32_t max_pcs_ = 4096;

  // Contexts noted by application threads, not yet taken by Enable: a
  // lock-free set of slots (null: free).
  std::atomic<CUcontext> noted_[kMaxContexts] = {};
  // Bumped when contexts are disabled, so that each thread notes its
  // context again (a thread_local remembers the last one noted).
  std::atomic<uint32_t> generation_{1};

  std::mutex mu_;  // contexts_: link thread, and a thread destroying a context
  std::vector<Context> contexts_;

  std::mutex cubin_mu_;  // application threads loading modules, link thread
  std::unordered_set<uint64_t> cubin_crcs_;  // copied in this process
  std::vector<Cubin> pending_cubins_;  // in load order
  size_t pending_bytes_ = 0;

  PcSamplingCounters counters_;
};

}  // namespace warpscope::cuda
