#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "base/logging.h"

namespace warpscope {

struct CudaSocketServer::Connection {
  explicit Connection(const CudaRecordBounds& bounds) : check(bounds) {}
  int fd = -1;
  uint64_t id = 0;
  int32_t pid = 0;
  uint32_t uid = 0;
  bool hello_seen = false;
  uint16_t version = 0;  // the library's protocol version (its HELLO's); CONFIG goes out in it
  // The connection's dictionary: its entries are charged to the name budget
  // (charged_bytes, given back at close); the names themselves are shared.
  std::unordered_map<uint32_t, std::shared_ptr<const InternedKernelName>> names;
  size_t name_bytes = 0;     // against max_name_bytes_per_connection
  size_t charged_bytes = 0;  // to the name budget
  // The cubin being reassembled (chunks come in order, one cubin at a time);
  // its total size is charged to cubin_bytes_in_flight_ until it completes.
  uint64_t cubin_crc = 0;
  uint64_t cubin_total = 0;
  bool cubin_skipping = false;  // this cubin's chunks are dropped
  std::string cubin;
  CudaRecordCheck check;  // the connection's clock offset and record bounds
};

namespace {

int64_t MonotonicNow() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Keeps the elements of `v` that `keep` accepts (in order); counts the others.
template <typename T, typename Keep>
void KeepWithin(std::vector<T>& v, std::atomic<uint64_t>& rejected, Keep keep) {
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (keep(v[i])) {
      if (out != i) v[out] = std::move(v[i]);
      ++out;
    }
  }
  if (out != v.size()) rejected.fetch_add(v.size() - out);
  v.resize(out);
}

// Runs `fn` with umask `mask` on a thread of its own that no longer shares
// the process's umask (unshare(CLONE_FS)), so files other threads create
// meanwhile keep theirs.
Status WithPrivateUmask(mode_t mask, const std::function<Status()>& fn) {
  Status result = Status::Ok();
  std::thread thread([&] {
    if (unshare(CLONE_FS) != 0) {
      result = ErrnoError(errno, "unshare(CLONE_FS) for a private umask");
      return;
    }
    umask(mask);
    result = fn();
  });
  thread.join();
  return result;
}

// "/a/b" -> "/a"; "/a" -> "/".
std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

// Whoever may write to the socket's directory can unlink the agent's socket
// and bind their own in its place (every CUDA application would then talk to
// them), and whoever may write to a directory above it can rename the whole
// directory away. So the directory must belong to root (or to the agent's
// user) and be writable by nobody else, and so must every directory above it,
// except that a sticky one (/tmp) is fine there: others cannot rename what
// they do not own in it. Checked on the resolved path, which is returned:
// once every component is trusted, nobody else can change what it names.
StatusOr<std::string> TrustedSocketDirectory(const std::string& dir, bool is_socket_directory) {
  char resolved[PATH_MAX];
  if (realpath(dir.c_str(), resolved) == nullptr) return ErrnoError(errno, "resolving " + dir);
  const std::string top = resolved;
  for (std::string p = top;; p = ParentDirectory(p)) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0) return ErrnoError(errno, "checking " + p);
    if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(p + " is not a directory");
    const bool is_top = is_socket_directory && p == top;
    const std::string what = is_top ? "the CUDA socket's directory " + p : p + " (above the CUDA socket's directory)";
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
      return FailedPreconditionError(what + " is owned by uid " + std::to_string(st.st_uid) +
                                     ", who could replace the socket; use a directory owned by root, e.g. "
                                     "/run/warpscope");
    }
    const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (others_write && (is_top || (st.st_mode & S_ISVTX) == 0)) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return FailedPreconditionError(what + " is writable by group or others (mode " + mode +
                                     "), who could replace the socket; use a directory only root can write "
                                     "to, e.g. /run/warpscope");
    }
    if (p == "/") break;
  }
  return top;
}

namespace {

// Creates the socket's directory if missing, checks it, and removes a stale
// socket. Returns the socket's resolved path.
StatusOr<std::string> PrepareSocketPath(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path) || path.back() == '/') {
    return InvalidArgumentError("CUDA socket path '" + path + "' is empty, too long or a directory");
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // 0755 whatever the umask: every user's applications must reach the socket.
  Status made = WithPrivateUmask(022, [&] {
    return mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST ? Status::Ok() : ErrnoError(errno, "creating " + dir);
  });
  RETURN_IF_ERROR(made);
  StatusOr<std::string> trusted = TrustedSocketDirectory(dir);
  if (!trusted.ok()) return trusted.status();
  const std::string socket_path = (*trusted == "/" ? std::string() : *trusted) + "/" + name;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("CUDA socket path '" + socket_path + "' (" + path + " resolved) is too long");
  }
  struct stat st;
  if (lstat(socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return FailedPreconditionError(socket_path + " exists and is not a socket");
    unlink(socket_path.c_str());  // a stale socket from an earlier agent
  }
  return socket_path;
}

}  // namespace

StatusOr<std::unique_ptr<CudaSocketServer>> CudaSocketServer::Start(const CudaSocketServerOptions& options,
                                                                    Consumer consumer) {
  ASSIGN_OR_RETURN(std::string bound_path, PrepareSocketPath(options.socket_path));
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoError(errno, "socket(AF_UNIX, SOCK_SEQPACKET)");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, bound_path.data(), bound_path.size());
  // bind() creates the socket file with the umask applied: 0666, connectable
  // by every user (applications run as any user), with no chmod by path
  // afterwards that a symlink swapped in between could redirect.
  Status bound = WithPrivateUmask(0111, [&] {
    return bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 ? Status::Ok()
                                                                             : ErrnoError(errno, "binding " + bound_path);
  });
  if (!bound.ok()) {
    close(fd);
    return bound;
  }
  if (listen(fd, 128) != 0) {
    const int err = errno;
    close(fd);
    unlink(bound_path.c_str());
    return ErrnoError(err, "listening on " + bound_path);
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int err = errno;
    close(fd);
    unlink(bound_path.c_str());
    return ErrnoError(err, "eventfd");
  }
std::unique_ptr<CudaSocketServer> server(new CudaSocketServer(options, bound_path, std::move(consumer), fd, wake));
  server->thread_ = std::thread([s = server.get()] { s->RunThread(); });
  return server;
}

CudaSocketServer::CudaSocketServer(const CudaSocketServerOptions& options, std::string bound_path, Consumer consumer,
                                   int listen_fd, int wake_fd)
    : options_(options),
      bound_path_(std::move(bound_path)),
      kernel_names_(options.kernel_names ? options.kernel_names
                                         : std::make_shared<KernelNameTable>(kDefaultKernelNameBytes)),
      consumer_(std::move(consumer)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      config_(options.config), receive_buffer_(WS_CUDA_WIRE_MAX_MESSAGE + 1) {}

CudaSocketServer::~CudaSocketServer() {
  stop_.store(true);
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  for (auto& c : connections_) {
    close(c->fd);
    kernel_names_->Release(c->charged_bytes);
  }
  connections_.clear();
  close(listen_fd_);
  close(wake_fd_);
  unlink(bound_path_.c_str());
}

void CudaSocketServer::PostConfig(const ws_cuda_config& config) {
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    config_ = config;
    config_changed_ = true;
  }
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

CudaSocketServerCounters CudaSocketServer::counters() const {
  CudaSocketServerCounters c;
  c.connections_accepted = accepted_.load();
  c.connections_refused = refused_.load();
  c.connections_refused_per_uid = refused_per_uid_.load();
  c.connections_refused_rate = refused_rate_.load();
  c.connections_open = open_.load();
  c.protocol_errors = protocol_errors_.load();
  c.closed_over_name_budget = closed_over_name_budget_.load();
  c.messages = messages_.load();
  c.bytes = bytes_.load();
  c.cubins_received = cubins_received_.load();
  c.cubins_skipped = cubins_skipped_.load();
  c.rejected.kernels = rejected_kernels_.load();
  c.rejected.memops = rejected_memops_.load();
  c.rejected.waits = rejected_waits_.load();
  c.rejected.launches = rejected_launches_.load();
  c.rejected.pc_samples = rejected_pc_samples_.load();
  c.rejected.clock_pairs = rejected_clock_pairs_.load();
  c.rejected.windows = rejected_windows_.load();
  return c;
}

void CudaSocketServer::RunThread() {
  std::vector<pollfd> fds;
  while (!stop_.load()) {
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const auto& c : connections_) fds.push_back({c->fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) break;
    if (stop_.load()) break;
    // Connections first: fds[2 + i] is connections_[i] only until one is
    // closed or accepted.
    std::vector<Connection*> to_close;
    std::vector<std::string> reasons;
    for (size_t i = 0; i < connections_.size(); ++i) {
      const short revents = fds[2 + i].revents;
      if (revents == 0) continue;
      std::string reason;
      if (!ReadConnection(*connections_[i], &reason)) {
        to_close.push_back(connections_[i].get());
        reasons.push_back(reason);
      }
    }
    for (size_t i = 0; i < to_close.size(); ++i) {
      const bool protocol_error = reasons[i].rfind("protocol error", 0) == 0;
      Close(*to_close[i], reasons[i], protocol_error);
    }
    if (fds[1].revents & POLLIN) {
      uint64_t value;
      (void)!read(wake_fd_, &value, sizeof(value));
      SendConfigToAll();
    }
    if (fds[0].revents & POLLIN) AcceptAll();
  }
}

void CudaSocketServer::AcceptAll() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN, or a transient error: poll again
    if (connections_.size() >= options_.max_connections) {
      close(fd);
      refused_.fetch_add(1);
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      cred.pid = 0;
      cred.uid = static_cast<uid_t>(-1);  // unknown: one bucket for all such peers
    }
    const bool bounded_user = cred.uid != 0 && cred.uid != geteuid();
    size_t& of_uid = open_by_uid_[cred.uid];
    if (bounded_user && of_uid >= options_.max_connections_per_uid) {
      close(fd);
      refused_per_uid_.fetch_add(1);
      if (uids_warned_.size() < 1024 && uids_warned_.insert(cred.uid).second) {
        LOG_WARNING() << "CUDA socket: uid " << cred.uid << " already has " << of_uid
                      << " connections (--gpu-connections-per-uid); more are refused "
                         "(cuda_connections_refused_per_uid)";
      }
      continue;
    }
    if (bounded_user) {
      if (connects_by_uid_.size() > 4096) connects_by_uid_.clear();  // as many users: start their buckets over
      const int64_t now = MonotonicNow();
      const double depth = static_cast<double>(options_.max_connections_per_uid);
      auto [bucket, fresh] = connects_by_uid_.try_emplace(cred.uid, ConnectBucket{depth, now});
      ConnectBucket& b = bucket->second;
      b.tokens = std::min(depth, b.tokens + static_cast<double>(now - b.at_ns) * 1e-9 *
                                                 options_.max_connects_per_sec_per_uid);
      b.at_ns = now;
      if (b.tokens < 1) {
        close(fd);
        refused_rate_.fetch_add(1);
        if (of_uid == 0) open_by_uid_.erase(cred.uid);
        continue;
      }
      b.tokens -= 1;
    }
    ++of_uid;
    auto c = std::make_unique<Connection>(options_.record_bounds);
    c->fd = fd;
    c->id = next_connection_id_++;
    c->pid = cred.pid;
    c->uid = cred.uid;
    connections_.push_back(std::move(c));
    accepted_.fetch_add(1);
    open_.fetch_add(1);
  }
}

bool CudaSocketServer::ReadConnection(Connection& c, std::string* reason) {
  // Bounded per wakeup so that one busy process cannot starve the others.
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = recv(c.fd, receive_buffer_.data(), receive_buffer_.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      *reason = std::string("receive failed: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      *reason = "peer closed the connection";
      return false;
    }
    if (static_cast<size_t>(n) > WS_CUDA_WIRE_MAX_MESSAGE) {
      *reason = "protocol error: message of " + std::to_string(n) + " bytes";
      return false;
    }
    messages_.fetch_add(1);
    bytes_.fetch_add(static_cast<uint64_t>(n));
    StatusOr<CudaWireMessage> message = DecodeCudaMessage(receive_buffer_.data(), static_cast<size_t>(n));
    Status status = message.ok() ? HandleMessage(c, std::move(message).value()) : message.status();
    if (!status.ok()) {
      // ResourceExhausted: the agent's own bound, not the peer's fault.
      *reason = (status.code() == StatusCode::kResourceExhausted ? "" : "protocol error: ") + status.message();
      return false;
    }
  }
  return true;
}

Status CudaSocketServer::HandleMessage(Connection& c, CudaWireMessage&& message) {
  if (!c.hello_seen) {
    if (message.type != WS_CUDA_MSG_HELLO) {
      return InvalidArgumentError(CudaMessageTypeName(message.type) + " before HELLO");
    }
    c.hello_seen = true;
    c.version = message.version;
    ws_cuda_config config;
    {
      std::lock_guard<std::mutex> lock(config_mu_);
      config = config_;
    }
    const std::vector<uint8_t> bytes = EncodeCudaConfig(config, c.version);
    if (send(c.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
      return UnavailableError(std::string("sending CONFIG: ") + std::strerror(errno));
    }
    CudaProcessEvent event;
    event.kind = CudaProcessEvent::Kind::kConnected;
    event.connection_id = c.id;
    event.pid = c.pid;
  event.uid = c.uid;
    event.uid = c.uid;
    event.hello = message.hello;
    if (!c.check.TakeClockPair(message.hello.clock, MonotonicNow())) {
      // The process is served; its kernels wait for a CLOCK within bounds.
      if (message.hello.clock.cupti_ns != 0) rejected_clock_pairs_.fetch_add(1);
      event.hello.clock = {};
    }
    consumer_(std::move(event));
    return Status::Ok();
  }
  CudaProcessEvent event;
  event.kind = CudaProcessEvent::Kind::kRecords;
  event.connection_id = c.id;
  event.pid = c.pid;
  event.uid = c.uid;
  const int64_t now = MonotonicNow();
  switch (message.type) {
    case WS_CUDA_MSG_HELLO:
    case WS_CUDA_MSG_CONFIG:
      return InvalidArgumentError(CudaMessageTypeName(message.type) + " from the library after HELLO");
    case WS_CUDA_MSG_NAMES:
      for (CudaKernelNameEntry& entry : message.names) {
        if (c.names.count(entry.name_id)) {
          return InvalidArgumentError("name id " + std::to_string(entry.name_id) + " defined twice");
        }
        c.name_bytes += entry.name.size() + kDictionaryEntryBytes;
        if (c.name_bytes > options_.max_name_bytes_per_connection) {
          return InvalidArgumentError("kernel names exceed " + std::to_string(options_.max_name_bytes_per_connection) +
                                      " bytes");
        }
        if (!kernel_names_->Charge(kDictionaryEntryBytes)) {
          closed_over_name_budget_.fetch_add(1);
          return ResourceExhaustedError("the agent's kernel name budget is full");
        }
        c.charged_bytes += kDictionaryEntryBytes;
        std::shared_ptr<const InternedKernelName> name = kernel_names_->Intern(entry.name);
        c.names.emplace(entry.name_id, name ? std::move(name) : KernelNameTable::RefusedName());
      }
      return Status::Ok();  // the consumer sees names on the kernels
    case WS_CUDA_MSG_KERNELS:
      event.kernels.reserve(message.kernels.size());
      for (const ws_cuda_kernel& k : message.kernels) {
        if (!c.check.Span(k.start_ns, k.end_ns, (k.flags & WS_CUDA_RECORD_FLAG_NO_TIME) != 0, now) ||
            !c.check.HostTime(k.launch_host_ns, now) || !c.check.Device(k.device_id, false)) {
          rejected_kernels_.fetch_add(1);
          continue;
        }
        CudaKernel kernel;
        kernel.record = k;
        if (k.name_id == 0) {
          kernel.name = KernelNameTable::UnknownName();
        } else {
          auto it = c.names.find(k.name_id);
          if (it == c.names.end()) return InvalidArgumentError("kernel uses undefined name id " + std::to_string(k.name_id));
          kernel.name = it->second;
        }
        event.kernels.push_back(std::move(kernel));
      }
      break;
    case WS_CUDA_MSG_MEMOPS:
      KeepWithin(message.memops, rejected_memops_, [&](const ws_cuda_memop& m) {
        return c.check.Span(m.start_ns, m.end_ns, false, now) && c.check.Device(m.device_id, false);
      });
      event.memops = std::move(message.memops);
      break;
    case WS_CUDA_MSG_LAUNCHES:
      KeepWithin(message.launches, rejected_launches_,
                 [&](const ws_cuda_launch& l) { return c.check.HostTime(l.host_time_ns, now); });
      event.launches = std::move(message.launches);
      break;
    case WS_CUDA_MSG_WAITS:
      KeepWithin(message.waits, rejected_waits_,
                 [&](const ws_cuda_wait& w) { return c.check.Span(w.start_ns, w.end_ns, false, now); });
      event.waits = std::move(message.waits);
      break;
    case WS_CUDA_MSG_STATS:
      event.stats = message.stats;
      break;
    case WS_CUDA_MSG_CLOCK:
      if (!c.check.TakeClockPair(message.clock, now)) {
        rejected_clock_pairs_.fetch_add(1);
        return Status::Ok();
      }
      event.clock = message.clock;
      break;
    case WS_CUDA_MSG_WINDOW:
      if (!c.check.Window(message.window, now)) {
        rejected_windows_.fetch_add(1);
        return Status::Ok();
      }
      event.window = message.window;
      break;
    case WS_CUDA_MSG_PC_SAMPLES: {
      auto name = [&](uint32_t id, std::shared_ptr<const InternedKernelName>* out) {
        auto it = c.names.find(id);
        if (it == c.names.end()) return false;
        *out = it->second;
        return true;
      };
      event.pc_samples.reserve(message.pc_samples.size());
      for (const ws_cuda_pc_sample& p : message.pc_samples) {
        if (!c.check.HostTime(p.read_host_ns, now) || !c.check.Device(p.device_id, true)) {
          rejected_pc_samples_.fetch_add(1);
          continue;
        }
        CudaPcSample sample;
        sample.record = p;
        if (!name(p.function_name_id, &sample.function) || !name(p.stall_name_id, &sample.stall_reason)) {
          return InvalidArgumentError("PC sample uses an undefined name id");
        }
        event.pc_samples.push_back(std::move(sample));
      }
      break;
    }
    case WS_CUDA_MSG_CUBIN: {
      std::optional<CudaCubin> whole = TakeCubinChunk(c, message.cubin_chunk, message.cubin_bytes);
      if (!whole) return Status::Ok();
      event.cubin = std::move(whole);
      break;
    }
  }
  consumer_(std::move(event));
  return Status::Ok();
}

std::optional<CudaCubin> CudaSocketServer::TakeCubinChunk(Connection& c, const ws_cuda_cubin_chunk& chunk,
                                                          std::vector<uint8_t>& bytes) {
  auto release = [&] {
    if (!c.cubin_skipping) cubin_bytes_in_flight_ -= c.cubin_total;
    c.cubin.clear();
    c.cubin.shrink_to_fit();
    c.cubin_crc = c.cubin_total = 0;
    c.cubin_skipping = false;
  };
  if (chunk.offset == 0) {
    // A new cubin; one left unfinished (its chunks dropped by the library) is skipped.
    if (c.cubin_total != 0) {
      if (!c.cubin_skipping) cubins_skipped_.fetch_add(1);
      release();
    }
    c.cubin_crc = chunk.cubin_crc;
    c.cubin_total = chunk.total_bytes;
    c.cubin_skipping = cubin_bytes_in_flight_ + chunk.total_bytes > options_.max_cubin_bytes_in_flight;
    if (c.cubin_skipping) {
      cubins_skipped_.fetch_add(1);
    } else {
      cubin_bytes_in_flight_ += chunk.total_bytes;
      c.cubin.reserve(chunk.total_bytes);
    }
  } else if (c.cubin_total == 0 || chunk.cubin_crc != c.cubin_crc || chunk.total_bytes != c.cubin_total ||
             (!c.cubin_skipping && chunk.offset != c.cubin.size())) {
    // A gap: the library dropped a chunk. The rest of this cubin is skipped.
    if (c.cubin_total != 0 && !c.cubin_skipping) {
      cubins_skipped_.fetch_add(1);
      cubin_bytes_in_flight_ -= c.cubin_total;
      c.cubin.clear();
      c.cubin_skipping = true;
    }
    if ((chunk.flags & WS_CUDA_CUBIN_FLAG_LAST) != 0) release();
    return std::nullopt;
  }
  if (!c.cubin_skipping) c.cubin.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if ((chunk.flags & WS_CUDA_CUBIN_FLAG_LAST) == 0) return std::nullopt;
  std::optional<CudaCubin> out;
  if (!c.cubin_skipping) {
    out = CudaCubin{c.cubin_crc, std::make_shared<const std::string>(std::move(c.cubin))};
    cubins_received_.fetch_add(1);
  }
  release();
  return out;
}

void CudaSocketServer::Close(Connection& c, const std::string& reason, bool protocol_error) {
  if (protocol_error) protocol_errors_.fetch_add(1);
  CudaProcessEvent event;
  event.kind = CudaProcessEvent::Kind::kDisconnected;
  event.connection_id = c.id;
  event.pid = c.pid;
  event.uid = c.uid;
  event.reason = reason;
  const bool announced = c.hello_seen;
  close(c.fd);
  kernel_names_->Release(c.charged_bytes);
  if (c.cubin_total != 0 && !c.cubin_skipping) cubin_bytes_in_flight_ -= c.cubin_total;
  open_.fetch_sub(1);
  if (auto it = open_by_uid_.find(c.uid); it != open_by_uid_.end() && --it->second == 0) open_by_uid_.erase(it);
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->get() == &c) {
      connections_.erase(it);
      break;
    }
  }
  if (announced) consumer_(std::move(event));
}

void CudaSocketServer::SendConfigToAll() {
  ws_cuda_config config;
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    if (!config_changed_) return;
    config_changed_ = false;
    config = config_;
  }
  std::vector<Connection*> failed;
  for (const auto& c : connections_) {
    if (!c->hello_seen) continue;
    const std::vector<uint8_t> bytes = EncodeCudaConfig(config, c->version);
    if (send(c->fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
      failed.push_back(c.get());
    }
  }
  for (Connection* c : failed) Close(*c, "sending CONFIG failed", false);
}

}  // namespace warpscope
