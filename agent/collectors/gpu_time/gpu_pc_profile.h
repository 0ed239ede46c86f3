// The gpu_pc profile: PC samples from inside kernels (docs/design/gpu_pc.md).
//
// CUPTI's continuous PC sampling gives counts per (process, device, kernel
// function, cubin, PC offset, stall reason) with no launch, so a kernel's
// samples are spread over the stacks that launched that kernel, in
// proportion to the GPU time each stack's launches of it took in the same
// window (the gpu_time profile's split). Each sample counts 2^period
// cycles of one SM's warp scheduler; the profile's values are those
// estimated cycles, so the split stays exact in integers. Leafward of the
// kernel frame come the source line (when the cubin has line information),
// the instruction and, as the leaf, the stall reason: the flame graph,
// tables and diff work on it unchanged, and a stall reason is a frame one
// can search, focus or fold like any other.
//
// CubinLibrary keeps the cubins the libraries sent (one copy per CRC, for
// all processes, within a byte bound) and parses each on its own worker
// thread (nvdisasm may take seconds); until a cubin is parsed, or when it
// never arrived, its instructions show as offsets. It names each cubin by
// its content hash (model/cubin_hash.h): the instruction frames carry it as
// their mapping's build id, and the window hands each new cubin to the sink,
// which uploads it to the server's cubin store.
//
// Any local user can send cubins, so what is kept follows the processes
// connected now, and what leaves the node is what was used: a cubin is kept
// while a connection that sent it is open, and its bytes and symbols are
// freed at the first window end kKeepAfterReleaseNs after the last such
// connection closed (the PC samples of a process's last seconds wait for
// their GPU time's split, up to a recording period, and must still find
// it); one user (other than
// root or the agent's) holds at most max_bytes_per_uid of the budget; and
// a cubin is handed to the sink only once it parsed as a CUDA ELF holding a
// function that PC samples named (at most once; one that never does is
// never uploaded). Once parsed, a cubin's bytes wait for that upload in a
// spill file (base/spill_file.h), not in memory: the byte bound is disk,
// and the agent keeps in memory only the cubins not parsed yet and the
// tables parsed from them, within their own budget (least recently used
// dropped first, parsed again from the spill file when asked for).
//
// The kernels' GPU time reaches the profile only after the join's grace
// period (a kernel record waits for its launch stack), so PC samples wait as
// long: they go out once the GPU time of the seconds they were read in has
// been split, and with the last window in any case.
//
// Threading: CubinLibrary's Add and Find are safe from any thread;
// GpuPcAggregator belongs to the sampling thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"
#include "agent/pipeline/window.h"
#include "agent/symbolize/cubin_symbols.h"
#include "base/spill_file.h"
#include "model/profile.h"

namespace warpscope::gpu {

inline constexpr char kGpuPcTypeName[] = "gpu_pc";
inline constexpr char kGpuPcUnit[] = "cycles";
// The file name of the instruction frames' mapping (its build id is the
// cubin's content hash).
inline constexpr char kCubinMappingName[] = "cubin";

// CUPTI's stall reason name in plain words: "waiting for global or local
// memory (long scoreboard)" for smsp__pcsamp_warps_issue_stalled_long_scoreboard.
std::string StallReasonWords(const std::string& cupti_name);

struct CubinLibraryStats {
  uint64_t cubins = 0;        // held now
  uint64_t bytes = 0;         // held now, in memory and in the spill file (the budget's measure)
  uint64_t memory_bytes = 0;  // of those, in memory (waiting to be parsed, or the spill file failed)
  uint64_t refused = 0;       // over the byte bound
  uint64_t parsed = 0;
  uint64_t parse_failures = 0;
  uint64_t without_sass = 0;  // parsed, but nvdisasm absent or failed
  uint64_t refused_per_uid = 0;  // over max_bytes_per_uid
  uint64_t released = 0;         // freed after their last connection closed
  uint64_t not_uploaded = 0;     // freed without a parse or a sampled function in them
  uint64_t parsed_bytes = 0;     // the parsed tables held now (functions, lines, SASS)
  uint64_t parsed_evicted = 0;   // parsed tables dropped for the budget (parsed again when asked for)
};

class CubinLibrary {
 public:
  // Root and the agent's own user are bound only by max_bytes. The parsed
  // tables of all cubins together stay within max_parsed_bytes: past it, the
  // least recently asked for are dropped, and parsed again from the spill
  // file when a PC sample asks for them (meanwhile its instructions show as
  // offsets).
  static constexpr size_t kDefaultMaxParsedBytes = size_t{64} << 20;
  CubinLibrary(size_t max_bytes, CubinSymbolsOptions options, size_t max_bytes_per_uid = 0,
               size_t max_parsed_bytes = kDefaultMaxParsedBytes);
  ~CubinLibrary();
  CubinLibrary(const CubinLibrary&) = delete;
  CubinLibrary& operator=(const CubinLibrary&) = delete;

  // A cubin from connection `connection` of user `uid` (the same CRC again
  // only adds the connection to its holders). Hashes it: a few milliseconds
  // for the largest, once per cubin.
  void Add(uint64_t crc, std::shared_ptr<const std::string> bytes, uint64_t connection = 0, uint32_t uid = 0);
  static constexpr int64_t kKeepAfterReleaseNs = 30'000'000'000;
  // The connection closed at `now_ns` (CLOCK_MONOTONIC): cubins no open
  // connection holds any longer are freed by the first EndWindow
  // kKeepAfterReleaseNs later.
  void Release(uint64_t connection, int64_t now_ns);
  // A PC sample named `function` (mangled) in cubin `crc`.
  void NoteSampled(uint64_t crc, const std::string& function);
  // The window ended (sampling thread, after TakeAdded): frees what was
  // released long enough ago.
  void EndWindow(int64_t now_ns);
  // Null until parsed, or when it failed to parse or never came; a cubin
  // whose tables were dropped for the budget is queued to be parsed again.
  std::shared_ptr<const CubinSymbols> Find(uint64_t crc) const;
  size_t max_parsed_bytes() const { return max_parsed_bytes_; }
  // The content hash of the cubin with `crc`; "" when it is not held.
  std::string HashOf(uint64_t crc) const;
  // The cubins that became worth uploading since the last call (parsed, a
  // sampled function in them), oldest first.
  std::vector<WindowCubin> TakeAdded();
  // Waits until every cubin added so far is parsed (tests); false after `timeout_ms`.
  bool WaitIdle(int timeout_ms) const;
  CubinLibraryStats stats() const;

 private:
  void Run();

  struct Held {
    WindowCubin cubin;                   // bytes null once spilled
    size_t size = 0;
    std::optional<uint64_t> spilled_at;  // offset in spill_
    uint32_t uid = 0;                    // charged to
    std::vector<uint64_t> connections;   // open ones that sent it
    int64_t released_at = 0;             // when the last one closed; 0: held
    bool uploaded = false;
    bool parse_failed = false;
    uint64_t parsed_used = 0;            // clock_ of the last Find that took its tables
    std::vector<std::string> sampled;    // functions PC samples named, until uploaded (bounded)
  };
  void EvictParsed(uint64_t keep);       // mu_ held: least recently used tables first
  void Free(std::unordered_map<uint64_t, Held>::iterator it);  // mu_ held
  void Spill(Held& h);                                           // mu_ held

  const size_t max_bytes_;
  const size_t max_bytes_per_uid_;
  const size_t max_parsed_bytes_;
  const CubinSymbolsOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::unordered_map<uint64_t, Held> held_;  // by CRC (Find marks use and queues parses again)
  std::unordered_map<uint64_t, std::shared_ptr<const CubinSymbols>> parsed_;
  std::unordered_map<uint32_t, size_t> bytes_by_uid_;
  // Parsed cubins wait here for an upload that may never come (only sampled
  // ones go), so that the budget is disk, not the agent's memory.
  std::optional<SpillFile> spill_;
  bool spill_failed_ = false;
  mutable std::deque<uint64_t> queue_;
  mutable uint64_t clock_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  CubinLibraryStats stats_;
  std::thread worker_;
};

// GPU time of one launch stack's launches of a kernel in the window.
struct KernelLaunchShare {
  uint64_t stack_key = 0;  // 0: launches without a sampled stack
  uint32_t tid = 0;
  int64_t gpu_ns = 0;
};

struct GpuPcStats {
  uint64_t samples = 0;            // PC samples received
  uint64_t samples_unjoined = 0;   // of a kernel with no GPU time seen in its process yet
  uint64_t samples_dropped = 0;    // over the window's bound of distinct keys
  uint64_t instructions_unknown = 0;  // cubin missing or unparsed, or an offset it lacks
};

class GpuPcAggregator {
 public:
  // At most `max_keys` distinct (process, device, function, cubin, PC, stall)
  // keys wait at once, ~kKeyBytes each; samples of new keys past it are
  // dropped and counted (samples_dropped).
  static constexpr size_t kDefaultMaxKeys = 250'000;
  static constexpr size_t kKeyBytes = 112;  // the key, its count and its map node
  explicit GpuPcAggregator(size_t max_keys = kDefaultMaxKeys) : max_keys_(max_keys) {}
  size_t keys() const { return keys_; }
  size_t max_keys() const { return max_keys_; }

  // `now_ns`: CLOCK_MONOTONIC when it arrived; `unix_second`: the Unix
  // second it is reported in.
  void Add(uint32_t pid, const CudaPcSample& sample, int64_t now_ns, int64_t unix_second);
  // GPU time the gpu_time profile gave one launch stack's launches of
  // `kernel` (its system name) in this window: the split Finish uses, from
  // then on, for the kernel's samples.
  void AddGpuTime(uint32_t pid, const std::string& kernel, uint64_t stack_key, uint32_t tid, int64_t gpu_ns);

  // Hooks into the collector: the locations of a launch stack (leaf first),
  // the labels of a launching thread.
  struct Context {
    std::function<const std::vector<uint64_t>&(uint64_t stack_key)> stack;
    std::function<SampleLabels(uint32_t pid, uint32_t tid)> labels;
    const CubinLibrary* cubins = nullptr;
    uint32_t period_log2 = 20;
    int64_t now_ns = 0;    // CLOCK_MONOTONIC
    int64_t delay_ns = 0;  // samples younger than this wait (the join's grace)
    bool final = false;    // every sample goes out
  };
  // Adds the samples old enough to `builder` under the kernels' launch
  // stacks: a kernel takes its latest split (this window's AddGpuTime, else
  // an earlier window's), or goes under "[launch not recorded]" when none
  // is known.
  void Finish(const Context& context, ProfileBuilder* builder);
  // A process ended: its remembered splits go.
  void ForgetProcess(uint32_t pid);

  const GpuPcStats& stats() const { return stats_; }

 private:
  struct Key {
    uint32_t pid;
    uint32_t device;
    uint64_t function;  // InternedKernelName::key
    uint64_t crc;
    uint64_t pc;
    uint64_t stall;  // InternedKernelName::key
    bool operator<(const Key& o) const {
      return std::tie(pid, device, function, crc, pc, stall) < std::tie(o.pid, o.device, o.function, o.crc, o.pc, o.stall);
    }
  };

  struct Bucket {
    int64_t arrived_ns = 0;   // CLOCK_MONOTONIC of its first sample
    int64_t unix_second = 0;  // reported in this second
    std::map<Key, uint64_t> samples;
  };

  void AddBucket(const Bucket& bucket, const Context& context, ProfileBuilder* builder);

  const size_t max_keys_;
  std::deque<Bucket> buckets_;  // oldest first
  size_t keys_ = 0;             // in all buckets
  std::unordered_map<uint64_t, std::shared_ptr<const InternedKernelName>> names_;  // of the buckets' keys
  // (pid, kernel system name) -> split: this window's, and the latest one.
  std::map<std::pair<uint32_t, std::string>, std::vector<KernelLaunchShare>> window_shares_, last_shares_;
  GpuPcStats stats_;
};

}  // namespace warpscope::gpu
