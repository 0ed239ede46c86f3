// LaunchTimeTable: when and on which thread each recent kernel launch was
// made, by CUPTI correlation id, so that the activity converter can put the
// launch call on the kernel's record (ws_cuda_kernel.launch_*) and the trace
// can link the CPU call to the GPU work.
//
// A fixed ring of slots indexed by the correlation id's low bits: a launch
// overwrites the slot of the launch kSlots ids before it. CUPTI completes a
// buffer within about a second (or when it is full), so at up to ~16k
// launches per buffer every record finds its launch; a record whose slot has
// been reused reads as missing (counted by the caller), never as another
// launch's time.
//
// Lock-free and wait-free: Put runs on application threads inside the launch
// callback, Find on the CUPTI buffer thread. Each slot is a seqlock: a writer
// claims it by moving its sequence from even to odd (a second writer that
// finds it odd gives up: that launch is just not recorded), and a reader
// accepts the fields only when the sequence was even and unchanged around
// its reads and the slot holds the id it asked for.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace warpscope::cuda {

struct LaunchTime {
  uint64_t enter_ns = 0;     // CLOCK_MONOTONIC at the outermost API entry
  uint32_t duration_ns = 0;  // entry to exit
  uint32_t tid = 0;
  uint16_t kind = 0;   // ws_cuda_launch_kind
  uint16_t flags = 0;  // WS_CUDA_LAUNCH_FLAG_*
};

class LaunchTimeTable {
 public:
  static constexpr size_t kSlots = 16384;  // 512 KiB

  // False when another thread was writing the same slot.
  // `epoch`: the CUPTI attachment the id belongs to (ids start over after a
  // detach), so that a record never finds an earlier attachment's launch.
  bool Put(uint32_t epoch, uint32_t correlation_id, const LaunchTime& t) noexcept {
    Slot& s = slots_[correlation_id % kSlots];
    uint32_t seq = s.seq.load(std::memory_order_relaxed);
    if ((seq & 1) != 0 || !s.seq.compare_exchange_strong(seq, seq + 1, std::memory_order_acquire)) return false;
    std::atomic_thread_fence(std::memory_order_release);
    s.id.store(correlation_id, std::memory_order_relaxed);
    s.epoch.store(epoch, std::memory_order_relaxed);
    s.enter_ns.store(t.enter_ns, std::memory_order_relaxed);
    s.duration_ns.store(t.duration_ns, std::memory_order_relaxed);
    s.tid.store(t.tid, std::memory_order_relaxed);
    s.kind_flags.store(static_cast<uint32_t>(t.kind) << 16 | t.flags, std::memory_order_relaxed);
    s.seq.store(seq + 2, std::memory_order_release);
    return true;
  }

  // False when the slot holds another launch (or attachment), is being written, or was never
  // written (enter_ns 0).
  bool Find(uint32_t epoch, uint32_t correlation_id, LaunchTime* out) const noexcept {
    const Slot& s = slots_[correlation_id % kSlots];
    const uint32_t before = s.seq.load(std::memory_order_acquire);
    if ((before & 1) != 0) return false;
    const uint32_t id = s.id.load(std::memory_order_relaxed);
    const uint32_t slot_epoch = s.epoch.load(std::memory_order_relaxed);
    LaunchTime t;
    t.enter_ns = s.enter_ns.load(std::memory_order_relaxed);
    t.duration_ns = s.duration_ns.load(std::memory_order_relaxed);
    t.tid = s.tid.load(std::memory_order_relaxed);
    const uint32_t kind_flags = s.kind_flags.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != before || id != correlation_id || slot_epoch != epoch ||
        t.enter_ns == 0) {
      return false;
    }
    t.kind = static_cast<uint16_t>(kind_flags >> 16);
    t.flags = static_cast<uint16_t>(kind_flags & 0xffff);
    *out = t;
    return true;
  }

 private:
  struct Slot {
    std::atomic<uint32_t> seq{0};
    std::atomic<uint32_t> id{0};
    std::atomic<uint64_t> enter_ns{0};
    std::atomic<uint32_t> duration_ns{0};
    std::atomic<uint32_t> tid{0};
    std::atomic<uint32_t> kind_flags{0};
    std::atomic<uint32_t> epoch{0};
  };
  static_assert(sizeof(Slot) == 32);
  std::array<Slot, kSlots> slots_{};
};

}  // namespace warpscope::cuda
