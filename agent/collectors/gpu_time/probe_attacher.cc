#include "agent/collectors/gpu_time/probe_attacher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "agent/collectors/gpu_time/autograd_graft.h"
#include "base/logging.h"

namespace warpscope::gpu {
namespace {

using Clock = std::chrono::steady_clock;

constexpr long kFuseSuperMagic = 0x65735546;
// How long the destructor waits for an attach in flight before abandoning its thread.
constexpr auto kStopWait = std::chrono::milliseconds(1000);
// Failed files remembered (never posted again); past it, a failed file may be tried again.
constexpr size_t kMaxFailedFiles = 256;

// libwarpscope_cuda.so's executable mapping in `pid`, or nullopt.
std::optional<MemoryMapping> InjectionLibraryMapping(const ProcFs& procfs, uint32_t pid) {
  StatusOr<std::string> maps = procfs.ReadMaps(pid);
  if (!maps.ok()) return std::nullopt;
  for (MemoryMapping& m : ParseProcMaps(*maps)) {
    if (m.executable && m.IsFileBacked() && m.path.find("libwarpscope_cuda") != std::string::npos) return m;
  }
  return std::nullopt;
}

// The executable mapping of a libtorch_python*.so in `pid`, or nullopt.
std::optional<MemoryMapping> AutogradLibraryMapping(const ProcFs& procfs, uint32_t pid) {
  StatusOr<std::string> maps = procfs.ReadMaps(pid);
  if (!maps.ok()) return std::nullopt;
  for (MemoryMapping& m : ParseProcMaps(*maps)) {
    if (!m.executable || !m.IsFileBacked()) continue;
    const size_t slash = m.path.rfind('/');
    const std::string_view base = std::string_view(m.path).substr(slash == std::string::npos ? 0 : slash + 1);
    if (base.starts_with(kAutogradLibraryPrefix)) return m;
  }
  return std::nullopt;
}

}  // namespace

StatusOr<ScopedFd> OpenMappedFileForProbe(const ProcFs& procfs, uint32_t pid, const MemoryMapping& m) {
  // O_PATH: no open of a FIFO or device waits, and nothing is read.
  std::string path = procfs.MapFilesPath(pid, m.start, m.end);
  ScopedFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  const bool mapped_file = fd.valid();  // map_files is the mapping's own file, whatever the path names now
  if (!mapped_file) {
    if (m.deleted) return NotFoundError(m.path + " of pid " + std::to_string(pid) + " is deleted and gone");
    path = procfs.RootPath(pid, m.path);
    fd = ScopedFd(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) {
      const int e = errno;
      if (e == ENOENT || e == ESRCH) return NotFoundError(path + " is gone");
      return ErrnoError(e, "open " + path);
    }
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, "fstat " + path);
  if (!S_ISREG(st.st_mode)) return FailedPreconditionError(path + " is not a regular file");
  if (!mapped_file && (major(st.st_dev) != m.dev_major || minor(st.st_dev) != m.dev_minor || st.st_ino != m.inode)) {
    return FailedPreconditionError(path + " is not the file pid " + std::to_string(pid) + " maps");
  }
  struct statfs fs {};
  if (::fstatfs(fd.get(), &fs) != 0) return ErrnoError(errno, "fstatfs " + path);
  if (fs.f_type == kFuseSuperMagic) {
    return FailedPreconditionError(path + " is on FUSE, whose daemon could stall the kernel's probe registration");
  }
  return fd;
}

// The attacher's thread and what it shares with the sampling thread. The
// state is shared (shared_ptr) by both, so an abandoned thread keeps it.
class ProbeAttacher::Worker {
 public:
  static std::shared_ptr<Worker> Start(ProcFs procfs, std::shared_ptr<UprobeStackCollector> probe,
                                       AttachFunction attach, std::deque<Job> jobs) {
    auto w = std::make_shared<Worker>();
    w->jobs = std::move(jobs);
    w->thread = std::thread([w, procfs = std::move(procfs), probe = std::move(probe), attach = std::move(attach)] {
      w->Run(procfs, probe.get(), attach);
    });
    return w;
  }

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;                  // guarded by mu; sampling thread -> attacher thread
  std::vector<Result> results;           // guarded by mu; attacher thread -> sampling thread
  std::optional<Job> running;            // guarded by mu; the job in flight
  Clock::time_point running_since;       // guarded by mu
  bool stopping = false;                 // guarded by mu; the attacher is going away
  bool abandoned = false;                // guarded by mu; the sampling thread gave up on this thread
  bool exited = false;                   // guarded by mu
  std::thread thread;                    // joined or detached by the sampling thread

 private:
  void Run(const ProcFs& procfs, UprobeStackCollector* probe, const AttachFunction& attach) {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stopping || abandoned || !jobs.empty(); });
      if (stopping || abandoned) break;
      running = std::move(jobs.front());
      jobs.pop_front();
      running_since = Clock::now();
      const Job job = *running;
      lock.unlock();
      Result result{job.kind, job.file, attach(procfs, job.pid, job.mapping, job.kind == Kind::kAutograd)};
      lock.lock();
      running.reset();
      if (abandoned) {
        // Given up meanwhile (counted as a timeout): nobody holds these probes.
        if (result.handles.ok() && probe != nullptr) {
          for (uint64_t h : *result.handles) (void)probe->DetachFromAnyThread(h);
        }
        break;
      }
      results.push_back(std::move(result));
    }
    exited = true;
    cv.notify_all();
  }
};

namespace {

// The kernel's uprobes on the file behind `m`, opened as OpenMappedFileForProbe says.
StatusOr<std::vector<uint64_t>> AttachThroughMapping(UprobeStackCollector& probe, const ProcFs& procfs, uint32_t pid,
                                                     const MemoryMapping& m, bool autograd) {
  ASSIGN_OR_RETURN(ScopedFd fd, OpenMappedFileForProbe(procfs, pid, m));
  // libbpf reads the ELF file and the kernel resolves the probe's inode through the fd, never the path.
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  if (!autograd) {
    ASSIGN_OR_RETURN(uint64_t handle, probe.AttachFromAnyThread(0, path, kLaunchProbeSymbol));
    return std::vector<uint64_t>{handle};
  }
  // The first of the function's symbols the file has.
  Status missing;
  for (const char* symbol : kAutogradEntrySymbols) {
    StatusOr<uint64_t> entry = probe.AttachFromAnyThread(0, path, symbol, WS_UPROBE_ROLE_AUTOGRAD_ENTRY);
    if (!entry.ok()) {
      if (missing.ok()) missing = entry.status();
      continue;
    }
    StatusOr<uint64_t> ret = probe.AttachReturnFromAnyThread(0, path, symbol, WS_UPROBE_ROLE_AUTOGRAD_RETURN);
    if (!ret.ok()) {
      (void)probe.DetachFromAnyThread(*entry);
      return ret.status();
    }
    return std::vector<uint64_t>{*entry, *ret};
  }
  return missing;
}

}  // namespace

ProbeAttacher::ProbeAttacher(ProbeAttacherOptions options, ProcFs procfs, std::shared_ptr<UprobeStackCollector> probe)
    : ProbeAttacher(options, std::move(procfs), probe,
                    [probe](const ProcFs& p, uint32_t pid, const MemoryMapping& m, bool autograd) {
                      return AttachThroughMapping(*probe, p, pid, m, autograd);
                    }) {}

ProbeAttacher::ProbeAttacher(ProbeAttacherOptions options, ProcFs procfs, std::shared_ptr<UprobeStackCollector> probe,
                             AttachFunction attach)
    : options_(options), procfs_(std::move(procfs)), probe_(std::move(probe)), attach_(std::move(attach)) {
  worker_ = Worker::Start(procfs_, probe_, attach_, {});
}

ProbeAttacher::~ProbeAttacher() {
  if (worker_ == nullptr) return;
  std::unique_lock lock(worker_->mu);
  worker_->stopping = true;
  worker_->cv.notify_all();
  const bool exited = worker_->cv.wait_for(lock, kStopWait, [&] { return worker_->exited; });
  lock.unlock();
  // A thread stuck in an open or attach is left to end by itself (or with the process).
  if (exited) {
    worker_->thread.join();
  } else {
    worker_->thread.detach();
  }
}

void ProbeAttacher::PostConnected(uint64_t connection_id, uint32_t pid) {
  Connection& c = connections_[connection_id];
  c.pid = pid;
  AttachLaunch(connection_id, c);
  AttachAutograd(connection_id, c);
}

void ProbeAttacher::AttachLaunch(uint64_t connection_id, Connection& c) {
  const bool retry = c.launch_refused;  // refused for the bound before: counted then
  c.launch_refused = false;
  const std::optional<MemoryMapping> library = InjectionLibraryMapping(procfs_, c.pid);
  if (!library) {
    ++stats_.attach_failures;
    LOG_WARNING() << "CUDA process " << c.pid << " connected but libwarpscope_cuda.so is not in its maps";
    return;
  }
  const FileId file{library->dev_major, library->dev_minor, library->inode};
  if (auto it = launch_files_.find(file); it != launch_files_.end()) {
    it->second.connections.insert(connection_id);  // one probe serves every process mapping the file
    c.launch_file = file;
    return;
  }
  if (failed_.count({Kind::kLaunch, file}) != 0) {
    ++stats_.attach_failures;  // logged the first time
    return;
  }
  if (launch_files_.size() >= options_.max_probe_files) {
    c.launch_refused = true;  // tried again when a file's probe goes
    if (retry) return;
    ++stats_.files_refused;
    if (!refusal_logged_) {
      LOG_WARNING() << "launch stacks of pid " << c.pid << " will be missing: " << launch_files_.size()
                    << " files named libwarpscope_cuda.so are probed already (--gpu-probe-files); "
                    << library->path << " is not (counted in gpu_probe_files_refused; logged once)";
      refusal_logged_ = true;
    }
    return;
  }
  if (!Post(Kind::kLaunch, file, c.pid, *library)) return;
  launch_files_[file].connections.insert(connection_id);
  c.launch_file = file;
}

void ProbeAttacher::AttachAutograd(uint64_t connection_id, Connection& c) {
  const std::optional<MemoryMapping> library = AutogradLibraryMapping(procfs_, c.pid);
  if (!library) return;  // not a PyTorch process (or torch not imported yet)
  const FileId file{library->dev_major, library->dev_minor, library->inode};
  if (auto it = autograd_files_.find(file); it != autograd_files_.end()) {
    it->second.connections.insert(connection_id);
    c.autograd_file = file;
    return;
  }
  if (failed_.count({Kind::kAutograd, file}) != 0) return;  // counted and logged the first time
  // Any local user can name a file libtorch_python.so: bounded like the injection library's probes.
  if (autograd_files_.size() >= options_.max_probe_files) {
    ++stats_.autograd_failures;
    return;
  }
  if (!Post(Kind::kAutograd, file, c.pid, *library)) return;
  autograd_files_[file].connections.insert(connection_id);
  c.autograd_file = file;
}

bool ProbeAttacher::Post(Kind kind, const FileId& file, uint32_t pid, const MemoryMapping& m) {
  uint64_t& failures = kind == Kind::kLaunch ? stats_.attach_failures : stats_.autograd_failures;
  if (worker_ == nullptr) {
    ++failures;
    ++stats_.attaches_dropped;
    return false;
  }
  std::lock_guard lock(worker_->mu);
  if (worker_->jobs.size() >= options_.max_pending_attaches) {
    ++failures;
    ++stats_.attaches_dropped;
    return false;
  }
  // Hand-off: the job (a copy of the mapping) belongs to the attacher thread from here.
  worker_->jobs.push_back(Job{kind, file, pid, m});
  worker_->cv.notify_one();
  return true;
}

void ProbeAttacher::Poll() {
  if (worker_ == nullptr) return;
  std::vector<Result> results;
  std::optional<Job> stuck;
  {
    std::lock_guard lock(worker_->mu);
    results.swap(worker_->results);
    if (worker_->running && Clock::now() - worker_->running_since > options_.attach_timeout) {
      stuck = worker_->running;
      worker_->abandoned = true;
      worker_->cv.notify_all();
    }
  }
  for (Result& r : results) Apply(r);
  if (!stuck) return;
  ++stats_.attach_timeouts;
  Result timeout{stuck->kind, stuck->file,
                 DeadlineExceededError("opening and probing " + stuck->mapping.path + " of pid " +
                                       std::to_string(stuck->pid) + " took more than " +
                                       std::to_string(options_.attach_timeout.count()) + " ms; given up"),
                 true};
  Apply(timeout);
  ReplaceStuckWorker();
}

void ProbeAttacher::ReplaceStuckWorker() {
  std::deque<Job> jobs;
  {
    std::lock_guard lock(worker_->mu);
    jobs.swap(worker_->jobs);
  }
  worker_->thread.detach();  // it ends by itself if its call returns (abandoned: it detaches what it attached)
  ++stuck_threads_;
  if (stuck_threads_ < options_.max_stuck_threads) {
    worker_ = Worker::Start(procfs_, probe_, attach_, std::move(jobs));
    return;
  }
  worker_.reset();
  if (!stuck_logged_) {
    LOG_ERROR() << stuck_threads_ << " probe attaches never returned; no more library files are probed until the "
                << "agent restarts (launch stacks of new CUDA processes will be missing; counted in "
                << "gpu_probe_attaches_dropped)";
    stuck_logged_ = true;
  }
  for (const Job& job : jobs) {
    ++stats_.attaches_dropped;
    Result dropped{job.kind, job.file, UnavailableError("probe attaching stopped"), false};
    Apply(dropped);
  }
}

void ProbeAttacher::Apply(Result& r) {
  std::map<FileId, ProbedFile>& files = FilesOf(r.kind);
  auto it = files.find(r.file);
  const bool launch = r.kind == Kind::kLaunch;
  if (it == files.end() || !it->second.pending) {
    if (r.handles.ok()) DetachAll(*r.handles);  // not expected: nothing waits for these
    return;
  }
  if (r.handles.ok()) {
    it->second.handles = std::move(*r.handles);
    it->second.pending = false;
    ++(launch ? stats_.files_attached : stats_.autograd_files_attached);
    if (it->second.connections.empty()) {  // every process mapping it left meanwhile
      DetachAll(it->second.handles);
      files.erase(it);
      if (launch) ++stats_.files_detached;
    }
    return;
  }
  const Status& s = r.handles.status();
  ++(launch ? stats_.attach_failures : stats_.autograd_failures);
  if (s.code() == StatusCode::kFailedPrecondition) ++stats_.files_unsafe;
  // A process that exited is no reason to give up on its file; anything else is.
  if (s.code() != StatusCode::kNotFound && s.code() != StatusCode::kUnavailable && failed_.size() < kMaxFailedFiles) {
    failed_.insert({r.kind, r.file});
  }
  for (uint64_t id : it->second.connections) {
    auto c = connections_.find(id);
    if (c == connections_.end()) continue;
    (launch ? c->second.launch_file : c->second.autograd_file).reset();
  }
  if (launch) {
    LOG_WARNING() << "launch stacks of the processes mapping this libwarpscope_cuda.so will be missing: "
                  << s.message();
  } else {
    LOG_WARNING() << "autograd threads' GPU time of the processes mapping this libtorch_python.so stays under the "
                  << "autograd engine, not under backward()'s caller: " << s.message();
  }
  files.erase(it);
}

void ProbeAttacher::DetachAll(const std::vector<uint64_t>& handles) {
  if (probe_ == nullptr) return;  // a test's stand-in
  for (uint64_t h : handles) {
    if (Status s = probe_->DetachFromAnyThread(h); !s.ok()) LOG_WARNING() << s.message();
  }
}

void ProbeAttacher::Release(Kind kind, uint64_t connection_id, const FileId& file) {
  std::map<FileId, ProbedFile>& files = FilesOf(kind);
  auto it = files.find(file);
  if (it == files.end()) return;
  it->second.connections.erase(connection_id);
  if (!it->second.connections.empty() || it->second.pending) return;  // a pending one goes when its result comes
  DetachAll(it->second.handles);
  files.erase(it);
  if (kind == Kind::kLaunch) ++stats_.files_detached;
}

void ProbeAttacher::Disconnected(uint64_t connection_id) {
  auto it = connections_.find(connection_id);
  if (it == connections_.end()) return;
  if (it->second.launch_file) Release(Kind::kLaunch, connection_id, *it->second.launch_file);
  if (it->second.autograd_file) Release(Kind::kAutograd, connection_id, *it->second.autograd_file);
  connections_.erase(it);
}

void ProbeAttacher::RetryRefused() {
  for (auto& [id, c] : connections_) {
    if (launch_files_.size() >= options_.max_probe_files) break;
    if (c.launch_refused) AttachLaunch(id, c);
  }
}

}  // namespace warpscope::gpu
