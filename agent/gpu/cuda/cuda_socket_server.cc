#include "agent/gpu/cuda/cuda_socket_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace warpscope {

struct CudaSocketServer::Connection {
  int fd = -1;
  uint64_t id = 0;
  int32_t pid = 0;
  bool hello_seen = false;
  std::unordered_map<uint32_t, std::shared_ptr<const std::string>> names;
  size_t name_bytes = 0;
};

namespace {

// The library caps its dictionary at 8 MiB; a peer far past that is broken.
constexpr size_t kMaxNameBytesPerConnection = 64u << 20;

const std::shared_ptr<const std::string>& UnknownName() {
  static const auto* const unknown = new std::shared_ptr<const std::string>(std::make_shared<const std::string>());
  return *unknown;
}

Status PrepareSocketPath(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("CUDA socket path '" + path + "' is empty or too long");
  }
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError(errno, "creating " + dir);
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return FailedPreconditionError(path + " exists and is not a socket");
    unlink(path.c_str());  // a stale socket from an earlier agent
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<CudaSocketServer>> CudaSocketServer::Start(const CudaSocketServerOptions& options,
                                                                    Consumer consumer) {
  RETURN_IF_ERROR(PrepareSocketPath(options.socket_path));
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoError(errno, "socket(AF_UNIX, SOCK_SEQPACKET)");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, options.socket_path.data(), options.socket_path.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoError(err, "binding " + options.socket_path);
  }
  chmod(options.socket_path.c_str(), 0666);
  if (listen(fd, 128) != 0) {
    const int err = errno;
    close(fd);
    unlink(options.socket_path.c_str());
    return ErrnoError(err, "listening on " + options.socket_path);
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int err = errno;
    close(fd);
    unlink(options.socket_path.c_str());
    return ErrnoError(err, "eventfd");
  }
  std::unique_ptr<CudaSocketServer> server(new CudaSocketServer(options, std::move(consumer), fd, wake));
  server->thread_ = std::thread([s = server.get()] { s->RunThread(); });
  return server;
}

CudaSocketServer::CudaSocketServer(const CudaSocketServerOptions& options, Consumer consumer, int listen_fd,
                                   int wake_fd)
    : options_(options), consumer_(std::move(consumer)), listen_fd_(listen_fd), wake_fd_(wake_fd),
      config_(options.config), receive_buffer_(WS_CUDA_WIRE_MAX_MESSAGE + 1) {}

CudaSocketServer::~CudaSocketServer() {
  stop_.store(true);
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  for (auto& c : connections_) close(c->fd);
  close(listen_fd_);
  close(wake_fd_);
  unlink(options_.socket_path.c_str());
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
  c.connections_open = open_.load();
  c.protocol_errors = protocol_errors_.load();
  c.messages = messages_.load();
  c.bytes = bytes_.load();
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
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->id = next_connection_id_++;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) c->pid = cred.pid;
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
      *reason = "protocol error: " + status.message();
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
    ws_cuda_config config;
    {
      std::lock_guard<std::mutex> lock(config_mu_);
      config = config_;
    }
    const std::vector<uint8_t> bytes = EncodeCudaConfig(config);
    if (send(c.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
      return UnavailableError(std::string("sending CONFIG: ") + std::strerror(errno));
    }
    CudaProcessEvent event;
    event.kind = CudaProcessEvent::Kind::kConnected;
    event.connection_id = c.id;
    event.pid = c.pid;
    event.hello = message.hello;
    consumer_(std::move(event));
    return Status::Ok();
  }
  CudaProcessEvent event;
  event.kind = CudaProcessEvent::Kind::kRecords;
  event.connection_id = c.id;
  event.pid = c.pid;
  switch (message.type) {
    case WS_CUDA_MSG_HELLO:
    case WS_CUDA_MSG_CONFIG:
      return InvalidArgumentError(CudaMessageTypeName(message.type) + " from the library after HELLO");
    case WS_CUDA_MSG_NAMES:
      for (CudaKernelNameEntry& entry : message.names) {
        auto [it, inserted] = c.names.emplace(entry.name_id, nullptr);
        if (!inserted) return InvalidArgumentError("name id " + std::to_string(entry.name_id) + " defined twice");
        c.name_bytes += entry.name.size();
        if (c.name_bytes > kMaxNameBytesPerConnection) return InvalidArgumentError("kernel names exceed 64 MiB");
        it->second = std::make_shared<const std::string>(std::move(entry.name));
      }
      return Status::Ok();  // the consumer sees names on the kernels
    case WS_CUDA_MSG_KERNELS:
      event.kernels.reserve(message.kernels.size());
      for (const ws_cuda_kernel& k : message.kernels) {
        CudaKernel kernel;
        kernel.record = k;
        if (k.name_id == 0) {
          kernel.name = UnknownName();
        } else {
          auto it = c.names.find(k.name_id);
          if (it == c.names.end()) return InvalidArgumentError("kernel uses undefined name id " + std::to_string(k.name_id));
          kernel.name = it->second;
        }
        event.kernels.push_back(std::move(kernel));
      }
      break;
    case WS_CUDA_MSG_MEMOPS:
      event.memops = std::move(message.memops);
      break;
    case WS_CUDA_MSG_LAUNCHES:
      event.launches = std::move(message.launches);
      break;
    case WS_CUDA_MSG_STATS:
      event.stats = message.stats;
      break;
    case WS_CUDA_MSG_CLOCK:
      event.clock = message.clock;
      break;
    case WS_CUDA_MSG_WINDOW:
      event.window = message.window;
      break;
  }
  consumer_(std::move(event));
  return Status::Ok();
}

void CudaSocketServer::Close(Connection& c, const std::string& reason, bool protocol_error) {
  if (protocol_error) protocol_errors_.fetch_add(1);
  CudaProcessEvent event;
  event.kind = CudaProcessEvent::Kind::kDisconnected;
  event.connection_id = c.id;
  event.pid = c.pid;
  event.reason = reason;
  const bool announced = c.hello_seen;
  close(c.fd);
  open_.fetch_sub(1);
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
  const std::vector<uint8_t> bytes = EncodeCudaConfig(config);
  std::vector<Connection*> failed;
  for (const auto& c : connections_) {
    if (!c->hello_seen) continue;
    if (send(c->fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
      failed.push_back(c.get());
    }
  }
  for (Connection* c : failed) Close(*c, "sending CONFIG failed", false);
}

}  // namespace warpscope
