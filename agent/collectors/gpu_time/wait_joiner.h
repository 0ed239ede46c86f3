// WaitJoiner: turns the waits libwarpscope_cuda.so measures in CUDA
// synchronisation calls (ws_cuda_wait: cudaStreamSynchronize, synchronous
// copies, ...) into gpu_wait samples: value = the time a host thread was
// blocked in the call, under the stack that made it, split by what the GPU
// ran meanwhile.
//
//   * A wait's stack comes from the agent's uprobe when the library sampled
//     it (its own per-thread token bucket), keyed like a launch by (pid,
//     attachment << 32 | correlation id).
//   * What the GPU ran: every kernel, memcpy and memset record of the same
//     connection (the same CUPTI clock as the wait's times) that overlapped
//     the wait, on the stream it waited on (or any stream, for device and
//     context synchronisation); each one's overlap becomes a child of the
//     call. Overlaps of concurrent streams may add up to more than the wait:
//     then they are scaled down to it. What no record covers stays on the
//     call itself (the GPU ran nothing of this process's that was recorded).
//   * Records arrive about a second after the kernels ran (CUPTI's buffers),
//     so a wait is judged `grace_ns` after it arrived.
//   * A wait whose stack was not sampled (or was lost) is never dropped: its
//     time is spread over the sampled stacks of the same process and API in
//     the same drain, in proportion to their wait time (or, when that drain
//     had none, over the latest drain's that had, within `stack_ttl_ns`),
//     else it goes to the placeholder stack (stack_key 0). Spreading keeps
//     every nanosecond (largest remainders).
//   * A windowed recording's waits carry the window's weight, like kernels.
// Every bound has a drop counter (GpuWaitStats).
//
// Threading: one owner thread (the agent's GPU-time loop) calls everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "proto/cuda/cuda_wire.h"

namespace warpscope::gpu {

struct WaitJoinerOptions {
  int64_t grace_ns = 3'000'000'000;      // a wait waits this long after it arrived for its GPU records
  int64_t span_ttl_ns = 15'000'000'000;  // GPU records kept this long after they arrived
  int64_t stack_ttl_ns = 60'000'000'000; // sampled stacks kept this long
  size_t max_pending_waits = 1'000'000;
  size_t max_spans_per_connection = 2'000'000;
  size_t max_stacks = 1'000'000;
};

// What the GPU ran: a kernel (kernel_key, the caller's handle for its name)
// or a memory operation (memop: op << 8 | CUPTI copy or memory kind).
struct GpuChild {
  uint64_t kernel_key = 0;
  uint16_t memop = 0;
  bool operator<(const GpuChild& o) const { return std::tie(kernel_key, memop) < std::tie(o.kernel_key, o.memop); }
  bool operator==(const GpuChild& o) const { return kernel_key == o.kernel_key && memop == o.memop; }
  bool none() const { return kernel_key == 0 && memop == 0; }
};

// One GPU record, times in the connection's CUPTI clock.
struct GpuSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t stream = 0;
  uint32_t context = 0;
  GpuChild child;
};

// Output: wait time of one (process, thread, stack, API, bucket, child).
// child.none(): time in the call while no recorded GPU work of the process
// ran on what it waited on.
struct GpuWaitSample {
  uint32_t pid = 0;
  uint32_t tid = 0;          // the waiting thread (0 for the placeholder)
  uint64_t stack_key = 0;    // 0: placeholder, no sampled wait of this API
  uint16_t api = 0;          // ws_cuda_wait_api
  int64_t bucket = 0;
  bool scaled = false;
  GpuChild child;
  int64_t wait_ns = 0;
};

struct GpuWaitStats {
  uint64_t waits = 0;            // judged
  uint64_t waits_sampled = 0;    // with their own stack
  uint64_t waits_spread = 0;     // over other waits' stacks
  uint64_t waits_placeholder = 0;
  uint64_t waits_stack_missing = 0;  // sampled, but no stack came (counted in spread/placeholder too)
  uint64_t waits_dropped = 0;    // pending bound
  uint64_t stacks_dropped = 0;   // stack bound
  uint64_t spans_dropped = 0;    // span bound (their overlap is then missing)
  uint64_t wait_ns = 0;          // total judged, weighted
  uint64_t overlap_ns = 0;       // of it, under a GPU record
};

class WaitJoiner {
 public:
  explicit WaitJoiner(const WaitJoinerOptions& options = {}) : options_(options) {}

  void AddSpan(uint64_t connection, const GpuSpan& span, int64_t now_ns);
  // `bucket`: the caller's time bucket of the wait; `weight` its window's.
  void AddWait(uint64_t connection, uint32_t pid, const ws_cuda_wait& wait, int64_t bucket, double weight,
               int64_t now_ns);
  void AddStack(uint32_t pid, uint32_t tid, uint64_t probe_key, uint64_t stack_key, int64_t now_ns);
  // The connection ended: its waits are judged at the next Drain without
  // waiting for their grace (no more records come), then its spans go.
  void EndConnection(uint64_t connection);

  // The waits whose grace is over (all with `final`), as samples.
  std::vector<GpuWaitSample> Drain(int64_t now_ns, bool final);

  const GpuWaitStats& stats() const { return stats_; }

 private:
  struct Pending {
    uint64_t connection;
    uint32_t pid;
    ws_cuda_wait wait;
    int64_t bucket;
    double weight;
    int64_t arrived_ns;
  };
  struct Spans {
    std::deque<std::pair<GpuSpan, int64_t>> by_start;  // (span, arrival), sorted by start
    int64_t max_duration = 0;
    bool ended = false;
  };
  struct StackEntry {
    uint32_t tid;
    uint64_t stack_key;
    int64_t seen_ns;
  };
  using Key = std::tuple<uint32_t, uint32_t, uint64_t, uint16_t, int64_t, bool, GpuChild>;  // pid tid stack api bucket scaled child
  // Time per child of one wait (child none: the rest).
  void Overlaps(const Pending& p, std::map<GpuChild, int64_t>* out);

  const WaitJoinerOptions options_;
  std::deque<Pending> pending_;
  std::unordered_map<uint64_t, Spans> spans_;  // by connection
  std::map<std::pair<uint32_t, uint64_t>, StackEntry> stacks_;  // (pid, probe key)
  // (pid, api) -> stack weights of the latest drain that had sampled waits, and when.
  std::map<std::pair<uint32_t, uint16_t>, std::pair<std::map<std::pair<uint64_t, uint32_t>, int64_t>, int64_t>> last_;
  GpuWaitStats stats_;
};

}  // namespace warpscope::gpu
