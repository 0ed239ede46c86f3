// BinaryLearner: reads what the agent needs from new binaries (symbols,
// unwind table, CPython check) on a worker thread, so that describing a
// process never stalls the agent loop: a burst of new processes (a
// `make -j`, a fleet of short Python tools) queues their new files here and
// the loop goes on draining samples.
//
// The loop opens each file (cheap: the open, one fstat and the ELF header)
// while the process is alive and hands the open file over; the worker does
// the expensive part, at a low CPU priority (nice 10), one file at a time.
// The queue is bounded (kMaxQueuedFiles open files); what does not fit is
// counted and left to the readers' own fallbacks. Results are taken back on
// the loop (TakeDone), or awaited there for one file (Await) when a drain
// needs its symbols now.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "agent/elf/elf_file.h"
#include "agent/process/proc_fs.h"
#include "agent/process/proc_maps.h"
#include "agent/symbolize/elf_symbols.h"
#include "agent/unwind/python/python_binary.h"
#include "agent/unwind/unwind_table_loader.h"
#include "base/status.h"

namespace warpscope {

inline constexpr size_t kMaxQueuedFiles = 256;

struct LearnRequest {
  uint32_t pid = 0;       // a process mapping the file (for debug files in its root)
  MemoryMapping mapping;  // the mapping it was found through
  std::shared_ptr<ElfFile> file;
  bool symbols = false;
  bool table = false;
  bool python = false;
};

struct LearnedBinary {
  uint32_t pid = 0;
  MemoryMapping mapping;
  std::string build_id;
  std::optional<StatusOr<std::shared_ptr<const ElfSymbols>>> symbols;  // when asked
  std::optional<StatusOr<BuiltLoaderTable>> table;
  std::optional<StatusOr<PythonBinary>> python;
};

struct BinaryLearnerStats {
  uint64_t files_queued = 0;
  uint64_t queue_full = 0;      // files not queued: the queue held kMaxQueuedFiles
  uint64_t files_done = 0;
  uint64_t queue_peak = 0;      // most files waiting at once
  double wait_ms_max = 0;       // longest a file waited before the worker took it
  double work_ms_total = 0;     // the worker's time reading files
  double await_ms_total = 0;    // time the loop spent in Await
};

class BinaryLearner {
 public:
  explicit BinaryLearner(ProcFs procfs);
  ~BinaryLearner();  // stops the worker; queued files are dropped
  BinaryLearner(const BinaryLearner&) = delete;
  BinaryLearner& operator=(const BinaryLearner&) = delete;

  // False (and counted) when the queue is full.
  bool Submit(LearnRequest request);
  // Results finished since the last call, in the order they were queued.
  std::vector<LearnedBinary> TakeDone();
  // The symbols of a queued (or finished, not yet taken) file, waiting for
  // the worker up to `timeout`; nullopt when the file is not here or the
  // wait ran out.
  std::optional<StatusOr<std::shared_ptr<const ElfSymbols>>> AwaitSymbols(const FileIdentity& identity,
                                                                          std::chrono::milliseconds timeout);
  // Waits until every queued file is done (or `timeout`).
  void WaitIdle(std::chrono::milliseconds timeout);

  size_t queued() const;
  BinaryLearnerStats stats() const;

 private:
  struct Item {
    LearnRequest request;
    std::chrono::steady_clock::time_point queued_at;
  };
  void Run();
  LearnedBinary Learn(LearnRequest& request);

  const ProcFs procfs_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the worker waits for files
  std::condition_variable done_cv_;  // Await and WaitIdle wait for results
  std::deque<Item> queue_;
  std::unordered_map<FileIdentity, int, FileIdentityHash> in_queue_;  // identity -> queued or being read
  std::list<LearnedBinary> done_;
  bool stop_ = false;
  BinaryLearnerStats stats_;
  std::thread worker_;
};

}  // namespace warpscope
