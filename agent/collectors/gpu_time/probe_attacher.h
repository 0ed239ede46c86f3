// ProbeAttacher: the GPU-time collector's uprobes on the library files its
// connected processes map: the launch probe on libwarpscope_cuda.so, and
// the autograd probes (entry and return of THPEngine_run_backward) on
// libtorch_python.so (docs/design/gpu_time.md). One probe serves every
// process that maps the same file; a file's probes go when no connected
// process maps it any more.
//
// Any local user can connect to the CUDA socket, so the file is whatever the
// user made it, and its path in /proc/PID/maps names a file in the user's
// mount namespace, where anything can be mounted over it (a FIFO, whose
// open() blocks for ever; a FUSE file, whose reads wait on the user's
// daemon). So:
//   * the file is opened through /proc/PID/map_files/<range>, which is the
//     mapped file itself whatever its path names now; only when that cannot
//     be opened, through /proc/PID/root/<path> with O_PATH|O_NOFOLLOW and
//     only if its device and inode are the mapping's. Either way with O_PATH
//     (no open of a FIFO or a device ever waits) and only a regular file
//     outside FUSE is kept: a FUSE daemon could stall the kernel's uprobe
//     registration, which blocks every fork on the node while it waits.
//     libbpf is handed /proc/self/fd/N, never the path.
//   * every open and attach runs on the attacher's own thread, never on the
//     sampling thread. An attach still running after attach_timeout is given
//     up: its thread is abandoned (it ends by itself if the call ever
//     returns, detaching what it attached), counted, and a new thread takes
//     the next files; after max_stuck_threads abandoned threads no more
//     files are probed until the agent restarts (counted, logged once).
//
// Threading: every public method runs on the sampling thread, which owns this
// object. Files go to the attacher's thread through a bounded queue (past
// max_pending_attaches a file is not probed, counted); results come back
// through a queue that Poll() empties. The UprobeStackCollector is shared
// with that thread (its attach and detach take any thread); the thread's
// state is shared with it too, so an abandoned thread outlives this object
// safely.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "agent/collectors/gpu_time/uprobe_stack_collector.h"
#include "agent/process/proc_fs.h"
#include "agent/process/proc_maps.h"
#include "base/file_util.h"
#include "base/status.h"

namespace warpscope::gpu {

inline constexpr char kLaunchProbeSymbol[] = "warpscope_cuda_launch_probe";

struct ProbeAttacherOptions {
  // Distinct files probed at once, per kind (launch, autograd). Any local
  // user can make a file named libwarpscope_cuda.so or libtorch_python.so
  // that exports the symbols; past this bound such files are not probed
  // (counted) and refused launch probes are tried again when room is made.
  size_t max_probe_files = 16;
  std::chrono::milliseconds attach_timeout{5000};
  size_t max_stuck_threads = 4;
  size_t max_pending_attaches = 64;
};

struct ProbeAttacherStats {
  uint64_t attach_failures = 0;        // launch probe: no library mapped, open or attach failed
  uint64_t files_attached = 0;         // launch probe files attached, since the start
  uint64_t files_detached = 0;         // no connected process mapped the file any more
  uint64_t files_refused = 0;          // not probed: max_probe_files were probed already
  uint64_t autograd_files_attached = 0;
  uint64_t autograd_failures = 0;      // the symbol missing, the bound, open or attach failed
  uint64_t files_unsafe = 0;           // not a regular file, on FUSE, or not the mapped file: never opened
  uint64_t attach_timeouts = 0;        // attaches given up after attach_timeout (their thread abandoned)
  uint64_t attaches_dropped = 0;       // not probed: the queue was full, or attaching stopped for stuck threads
};

// Opens the file behind `m` in process `pid` as O_PATH, as described above:
// the fd, or FailedPrecondition (unsafe: not a regular file, on FUSE, not the
// mapped inode) or NotFound (the process or mapping is gone). Any thread.
StatusOr<ScopedFd> OpenMappedFileForProbe(const ProcFs& procfs, uint32_t pid, const MemoryMapping& m);

class ProbeAttacher {
 public:
  // Opens a file and attaches its probes (the launch probe, or with
  // `autograd` the entry and return probes), on the attacher's thread; the
  // probe handles, or why not.
  using AttachFunction = std::function<StatusOr<std::vector<uint64_t>>(const ProcFs& procfs, uint32_t pid,
                                                                       const MemoryMapping& m, bool autograd)>;
  // The kernel's uprobes through `probe`.
  ProbeAttacher(ProbeAttacherOptions options, ProcFs procfs, std::shared_ptr<UprobeStackCollector> probe);
  // Tests stand in for the kernel with `attach` (`probe` may then be null:
  // handles are not detached).
  ProbeAttacher(ProbeAttacherOptions options, ProcFs procfs, std::shared_ptr<UprobeStackCollector> probe,
                AttachFunction attach);
  ~ProbeAttacher();  // waits briefly for an attach in flight, then abandons its thread
  ProbeAttacher(const ProbeAttacher&) = delete;
  ProbeAttacher& operator=(const ProbeAttacher&) = delete;

  // A process connected: its libwarpscope_cuda.so, and its libtorch_python.so
  // if it maps one, get their probes (at once when the file is probed
  // already, else posted to the attacher's thread).
  void PostConnected(uint64_t connection_id, uint32_t pid);
  // The connection ended: probes no other connection needs go.
  void Disconnected(uint64_t connection_id);
  // Takes finished attaches; gives up one running past attach_timeout.
  void Poll();
  // Processes refused a launch probe for the bound get one once room was made.
  void RetryRefused();

  const ProbeAttacherStats& stats() const { return stats_; }

 private:
  using FileId = std::tuple<uint32_t, uint32_t, uint64_t>;  // (dev major, minor, inode)
  enum class Kind { kLaunch, kAutograd };
  struct ProbedFile {
    std::vector<uint64_t> handles;   // UprobeStackCollector handles; empty while pending
    bool pending = true;             // posted, not attached yet
    std::set<uint64_t> connections;  // connected processes mapping the file
  };
  struct Connection {
    uint32_t pid = 0;
    std::optional<FileId> launch_file;
    bool launch_refused = false;  // max_probe_files reached: tried again by RetryRefused
    std::optional<FileId> autograd_file;
  };
  struct Job {
    Kind kind = Kind::kLaunch;
    FileId file;
    uint32_t pid = 0;
    MemoryMapping mapping;
  };
  struct Result {
    Kind kind = Kind::kLaunch;
    FileId file;
    StatusOr<std::vector<uint64_t>> handles = std::vector<uint64_t>();
    bool timed_out = false;
  };
  class Worker;

  std::map<FileId, ProbedFile>& FilesOf(Kind kind) { return kind == Kind::kLaunch ? launch_files_ : autograd_files_; }
  void AttachLaunch(uint64_t connection_id, Connection& c);
  void AttachAutograd(uint64_t connection_id, Connection& c);
  // Posts the file's attach; false when it cannot be (counted).
  bool Post(Kind kind, const FileId& file, uint32_t pid, const MemoryMapping& m);
  void Apply(Result& result);
  void Release(Kind kind, uint64_t connection_id, const FileId& file);
  void DetachAll(const std::vector<uint64_t>& handles);
  // A fresh thread for the jobs still queued, unless too many are stuck.
  void ReplaceStuckWorker();

  const ProbeAttacherOptions options_;
  const ProcFs procfs_;
  std::shared_ptr<UprobeStackCollector> probe_;
  const AttachFunction attach_;
  std::shared_ptr<Worker> worker_;  // null once attaching stopped for stuck threads
  size_t stuck_threads_ = 0;
  std::map<uint64_t, Connection> connections_;
  std::map<FileId, ProbedFile> launch_files_;
  std::map<FileId, ProbedFile> autograd_files_;
  // Files that failed: never posted again (bounded; past it, only logged once).
  std::set<std::pair<Kind, FileId>> failed_;
  bool refusal_logged_ = false;
  bool stuck_logged_ = false;
  ProbeAttacherStats stats_;
};

}  // namespace warpscope::gpu
