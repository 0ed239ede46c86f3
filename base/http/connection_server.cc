#include "base/http/connection_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "base/logging.h"
#include "base/http/response_encoding.h"

namespace warpscope::http {
namespace {

using Clock = std::chrono::steady_clock;

// Set by handlers and by the stream, read by the worker loop, all on the
// worker thread that serves the request.
thread_local bool t_close_after_response = false;
thread_local bool t_body_deadline_passed = false;
thread_local bool t_client_authenticated = false;

int ToMillis(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

int MillisUntil(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

std::string AddressOf(const sockaddr_storage& addr, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    if (port) *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    if (port) *port = ntohs(a->sin6_port);
  }
  return buf;
}

bool PollFor(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

// Acknowledges what was just read at once. A client without TCP_NODELAY
// (cpp-httplib's and others') writes a request's head and body separately,
// and Nagle holds the body until the head is acknowledged: with the
// kernel's delayed ACK that cost each request ~40 ms whenever the head
// arrived alone. Not sticky in the kernel, so set after each read.
void AckNow(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

// A socket stream over a non-blocking fd for one request on a worker: reads
// come from the bytes the I/O thread already read (the head, maybe more)
// before the socket, and every read and write waits no longer than the
// request's deadline. httplib's request-line reader asks for one byte at a
// time, so socket reads are buffered too.
// Renames the request head's Accept-Encoding header (same length, in place)
// so that httplib never compresses an answer itself: the HTTP core does,
// with the codings and levels of response_encoding.h. Only the head is
// touched, never a body byte that came with it.
void HideAcceptEncoding(std::string* buf) {
  size_t head_end = buf->find("\r\n\r\n");
  if (head_end == std::string::npos) head_end = buf->find("\n\n");
  if (head_end == std::string::npos) head_end = buf->size();
  constexpr std::string_view kName = "accept-encoding";
  size_t line = buf->find('\n');  // the request line ends here
  while (line != std::string::npos && line < head_end) {
    const size_t start = line + 1;
    if (start + kName.size() < buf->size() && (*buf)[start + kName.size()] == ':' &&
        strncasecmp(buf->data() + start, kName.data(), kName.size()) == 0) {
      buf->replace(start, kName.size(), kHiddenAcceptEncoding);
    }
    line = buf->find('\n', start);
  }
}

class RequestStream : public httplib::Stream {
 public:
  RequestStream(int fd, std::string buffered, int read_timeout_ms, int write_timeout_ms,
                std::chrono::milliseconds deadline)
      : fd_(fd),
        buf_(std::move(buffered)),
        read_timeout_ms_(read_timeout_ms),
        write_timeout_ms_(write_timeout_ms),
        deadline_length_(deadline),
        read_deadline_(Clock::now() + deadline) {}

  bool has_buffered_bytes() const { return pos_ < buf_.size(); }
  // What was read from the socket but not consumed: the start of a
  // pipelined next request.
  std::string TakeUnread() { return buf_.substr(pos_); }
  bool deadline_passed() const { return deadline_passed_; }

  bool is_readable() const override {
    return has_buffered_bytes() || PollFor(fd_, POLLIN, std::min(read_timeout_ms_, MillisUntil(read_deadline_)));
  }
  bool is_writable() const override { return PollFor(fd_, POLLOUT, WriteWaitMs()); }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered_bytes()) {
      buf_.resize(kChunk);
      pos_ = 0;
      ssize_t n;
      while (true) {
        n = ::recv(fd_, buf_.data(), kChunk, 0);
        if (n >= 0 || (errno != EAGAIN && errno != EINTR)) break;
        if (errno == EAGAIN) {
          const int left = MillisUntil(read_deadline_);
          if (left == 0 || !PollFor(fd_, POLLIN, std::min(read_timeout_ms_, left))) {
            // Less than a millisecond left counts as past the deadline.
            if (MillisUntil(read_deadline_) == 0) MarkDeadlinePassed();
            buf_.clear();
            return -1;
          }
        }
      }
      buf_.resize(n > 0 ? static_cast<size_t>(n) : 0);
      if (n <= 0) return n;
      AckNow(fd_);
    }
    const size_t take = std::min(size, buf_.size() - pos_);
    std::memcpy(ptr, buf_.data() + pos_, take);
    pos_ += take;
    return static_cast<ssize_t>(take);
  }

  ssize_t write(const char* ptr, size_t size) override {
    // The response's deadline runs from its first byte.
    if (!write_started_) {
      write_started_ = true;
      write_deadline_ = Clock::now() + deadline_length_;
    }
    while (true) {
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return -1;
      const int left = MillisUntil(write_deadline_);
      if (left == 0 || !PollFor(fd_, POLLOUT, std::min(write_timeout_ms_, left))) {
        if (MillisUntil(write_deadline_) == 0) MarkDeadlinePassed();
        return -1;
      }
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip = AddressOf(addr, &port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip = AddressOf(addr, &port);
  }
  socket_t socket() const override { return fd_; }

 private:
  static constexpr size_t kChunk = 16384;

  int WriteWaitMs() const {
    return write_started_ ? std::min(write_timeout_ms_, MillisUntil(write_deadline_)) : write_timeout_ms_;
  }
  void MarkDeadlinePassed() {
    deadline_passed_ = true;
    t_body_deadline_passed = true;
  }

  int fd_;
  std::string buf_;
  size_t pos_ = 0;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::chrono::milliseconds deadline_length_;
  Clock::time_point read_deadline_;
  bool write_started_ = false;
  Clock::time_point write_deadline_{};
  bool deadline_passed_ = false;
};

// Sends what fits now (the canned answers are small, the socket's buffer
// empty); never blocks the I/O thread.
void SendNow(int fd, const std::string& bytes) { (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT); }

}  // namespace

// One client connection. Owned by exactly one thread at a time: the I/O
// thread while it waits for a head (or lingers before closing), a lane's
// queue or worker while its request is served.
struct ConnectionServer::Connection {
  int fd = -1;
  std::string client;  // peer address: the per-client limit's key
  bool authenticated_client = false;  // the address had authenticated before, or this connection did
  Clock::time_point accepted_at{};
  std::string buf;     // bytes read and not yet served
  RequestHeadScanner scanner;
  size_t requests = 0;
  bool lingering = false;    // answered and shut down for writing; draining until EOF or the deadline
  bool peer_closed = false;  // the client has shut down its side: close after the answer
  Clock::time_point idle_deadline{};
  Clock::time_point head_deadline{};
  Clock::time_point linger_deadline{};

  explicit Connection(const RequestHeadLimits& limits) : scanner(limits) {}
};

struct ConnectionServer::Impl {
  // A pool of workers with a bounded queue of connections whose heads are in.
  class Lane {
   public:
    Lane(Impl* impl, int threads, size_t max_queued, std::string name) : impl_(impl), max_queued_(max_queued) {
      for (int i = 0; i < threads; ++i) {
        workers_.emplace_back([this, name] {
          pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
          Run();
        });
      }
    }
    // Moves `c` into the queue; false (and `c` untouched) when it is full.
    bool TryPush(std::unique_ptr<Connection>& c) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.size() >= max_queued_) return false;
        queue_.push_back(std::move(c));
      }
      cv_.notify_one();
      return true;
    }
    // Serves what is queued, then joins the workers.
    void Shutdown() {
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
      }
      cv_.notify_all();
      for (auto& t : workers_) t.join();
      workers_.clear();
    }

   private:
    void Run() {
      while (true) {
        std::unique_ptr<Connection> c;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
          if (queue_.empty()) return;
          c = std::move(queue_.front());
          queue_.pop_front();
        }
        impl_->Serve(std::move(c));
      }
    }

    Impl* impl_;
    const size_t max_queued_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Connection>> queue_;
    bool done_ = false;
    std::vector<std::thread> workers_;
  };

  ConnectionServer* server = nullptr;
  ConnectionLimits limits;
  LaneOf lane_of;
  ConnectionCounters* counters = nullptr;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::atomic<bool> stop_io{false};
  std::vector<std::unique_ptr<Lane>> lanes;
  std::thread io_thread;
  bool shut_down = false;

  // Owned by the I/O thread.
  std::unordered_map<int, std::unique_ptr<Connection>> idle;  // by fd: connections the I/O thread watches
  bool listen_paused = false;
  Clock::time_point listen_resume{};

  // Connections handed back by workers (kept alive, or lingering).
  std::mutex handback_mu;
  std::vector<std::unique_ptr<Connection>> handed_back;

  // Open connections per client, and in all; any thread (a worker may close).
  std::mutex clients_mu;
  std::map<std::string, size_t> clients;
  size_t open = 0;
  // Addresses that sent valid credentials, oldest first; guarded by clients_mu.
  std::unordered_map<std::string, uint64_t> authenticated;  // address -> when it was noted (a sequence number)
  std::deque<std::pair<std::string, uint64_t>> authenticated_order;
  uint64_t authenticated_seq = 0;

  ~Impl() {
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void Wake() {
    uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof(one));
  }

  // ---- the client table ----
  enum class Admission { kAdmitted, kServerFull, kClientFull };
  Admission Admit(const std::string& client) {
    std::lock_guard<std::mutex> lock(clients_mu);
    size_t& n = clients[client];
    if (open >= limits.max_connections || n >= limits.max_connections_per_client) {
      const bool client_full = n >= limits.max_connections_per_client;
      if (n == 0) clients.erase(client);
      return client_full ? Admission::kClientFull : Admission::kServerFull;
    }
    ++n;
    ++open;
    return Admission::kAdmitted;
  }
  bool IsAuthenticatedClient(const std::string& client) {
    std::lock_guard<std::mutex> lock(clients_mu);
    return authenticated.count(client) != 0;
  }
  // Worker threads, after a request with valid credentials.
  void NoteAuthenticated(const std::string& client) {
    std::lock_guard<std::mutex> lock(clients_mu);
    const uint64_t seq = ++authenticated_seq;
    authenticated[client] = seq;
    authenticated_order.emplace_back(client, seq);
    // Stale entries (re-noted since) are skipped; the table stays bounded.
    while (authenticated.size() > limits.max_authenticated_clients ||
           authenticated_order.size() > 2 * limits.max_authenticated_clients + 16) {
      auto [address, noted] = authenticated_order.front();
      authenticated_order.pop_front();
      if (auto it = authenticated.find(address); it != authenticated.end() && it->second == noted) {
        authenticated.erase(it);
      }
    }
  }
  // With every slot taken: closes the oldest watched connection that is
  // waiting for a head, unauthenticated clients' first and among them
  // those that never completed one. A newcomer that has not authenticated
  // never evicts an authenticated client's connection. I/O thread.
  bool EvictForNewcomer(bool newcomer_authenticated) {
    Connection* victim = nullptr;
    auto rank = [](const Connection& c) { return std::make_tuple(c.authenticated_client, c.requests > 0, c.accepted_at); };
    for (auto& [fd, c] : idle) {
      if (c->lingering) continue;
      if (c->authenticated_client && !newcomer_authenticated) continue;
      if (victim == nullptr || rank(*c) < rank(*victim)) victim = c.get();
    }
    if (victim == nullptr) return false;
    counters->evicted_waiting_heads++;
    LOG_WARNING_EVERY_N_SEC(10) << "http: every connection slot taken (" << limits.max_connections
                                 << "): closing the oldest connection still waiting for a head, from "
                                 << victim->client;
    auto it = idle.find(victim->fd);
    Forget(it->second);
    return true;
  }
  void Close(std::unique_ptr<Connection> c) {
    ::close(c->fd);
    std::lock_guard<std::mutex> lock(clients_mu);
    auto it = clients.find(c->client);
    if (it != clients.end() && --it->second == 0) clients.erase(it);
    --open;
  }

  // ---- the I/O thread ----
  void RunIo() {
    pthread_setname_np(pthread_self(), "http-io");
    epoll_event events[64];
    auto next_sweep = Clock::now();
    bool listening = true;
    while (!stop_io.load()) {
      const int n = ::epoll_wait(epoll_fd, events, 64, 100);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd) {
          AcceptAll();
        } else if (fd == wake_fd) {
          uint64_t v;
          (void)!::read(wake_fd, &v, sizeof(v));
          TakeHandedBack();
        } else if (auto it = idle.find(fd); it != idle.end()) {
          OnReadable(it->second);
        }
      }
      if (stopping.load() && listening) {
        // Stop accepting and drop every connection without a request in
        // service; what the lanes hold is served (Shutdown).
        listening = false;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
        for (auto& [fd, c] : idle) Close(std::move(c));
        idle.clear();
      }
      const auto now = Clock::now();
      if (now >= next_sweep) {
        Sweep(now);
        next_sweep = now + std::chrono::milliseconds(100);
      }
    }
    TakeHandedBack();
    for (auto& [fd, c] : idle) Close(std::move(c));
    idle.clear();
  }

  void Watch(std::unique_ptr<Connection> c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
      LOG_WARNING() << "http: epoll_ctl: " << std::strerror(errno);
      Close(std::move(c));
      return;
    }
    const int fd = c->fd;
    idle[fd] = std::move(c);
  }

  void AcceptAll() {
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop watching the listening socket for a
          // moment instead of spinning on it (the backlog holds the clients).
          LOG_WARNING_EVERY_N_SEC(10) << "http: accept: " << std::strerror(errno) << " (pausing accepts for 100 ms)";
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          listen_paused = true;
          listen_resume = Clock::now() + std::chrono::milliseconds(100);
        }
        return;  // EAGAIN: accepted everything queued
      }
      auto c = std::make_unique<Connection>(limits.head);
      c->fd = fd;
      c->client = AddressOf(addr, nullptr);
      c->authenticated_client = IsAuthenticatedClient(c->client);
      c->accepted_at = Clock::now();
      Admission admission = Admit(c->client);
      if (admission == Admission::kServerFull && EvictForNewcomer(c->authenticated_client)) {
        admission = Admit(c->client);
      }
      if (admission != Admission::kAdmitted) {
        counters->refused_connections++;
        LOG_WARNING_EVERY_N_SEC(10) << "http: refusing a connection from " << c->client
                                     << " (over max " << limits.max_connections << " connections, or "
                                     << limits.max_connections_per_client << " from one client)";
        SendNow(fd, CannedErrorResponse(503, "too many connections"));
        ::close(fd);
        continue;
      }
      counters->accepted++;
      int one = 1;
      // Headers and body go out in separate writes; without TCP_NODELAY the
      // body waits for the client's delayed ACK (40 ms per response).
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      c->idle_deadline = Clock::now() + limits.idle_timeout;
      Watch(std::move(c));
    }
  }

  // Reads what the client sent and acts on the head once it is decided.
  void OnReadable(std::unique_ptr<Connection>& c) {
    char chunk[16384];
    const size_t cap = limits.head.max_head_bytes + sizeof(chunk);
    // A lingering connection's bytes are discarded, a few chunks per wake-up
    // so that a client flooding it cannot hold this thread.
    bool eof = false;
    for (int reads = 0; c->lingering ? reads < 8 : c->buf.size() < cap; ++reads) {
      const ssize_t n = ::recv(c->fd, chunk, sizeof(chunk), 0);
      if (n > 0) {
        if (!c->lingering) c->buf.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      eof = true;  // the client closed its side (or reset the connection)
      break;
    }
    if (c->lingering) {
      if (eof) Forget(c);
      return;
    }
    AckNow(c->fd);
    const bool was_started = c->scanner.started();
    const RequestHeadState state = c->scanner.Scan(c->buf);
    if (!was_started && c->scanner.started()) c->head_deadline = Clock::now() + limits.header_timeout;
    if (eof) {
      // A client may shut down its sending side once its request is out
      // (HTTP allows the half-close): a whole head is still served, and the
      // connection is closed after the answer (the next read sees EOF).
      if (state != RequestHeadState::kComplete) {
        Forget(c);
        return;
      }
      c->peer_closed = true;
    }
    OnHeadState(c, state);
  }

  void OnHeadState(std::unique_ptr<Connection>& c, RequestHeadState state) {
    switch (state) {
      case RequestHeadState::kIncomplete: return;
      case RequestHeadState::kComplete: Dispatch(c); return;
      case RequestHeadState::kTooLarge:
        counters->heads_too_large++;
        Refuse(c, 431,
               "request head over the limit of " + std::to_string(limits.head.max_head_bytes) + " bytes, " +
                   std::to_string(limits.head.max_header_lines) + " header lines or " +
                   std::to_string(limits.head.max_header_line_bytes) + " bytes per line");
        return;
      case RequestHeadState::kUriTooLong:
        counters->uris_too_long++;
        Refuse(c, 414, "request line over the limit of " + std::to_string(limits.head.max_request_line_bytes) +
                           " bytes");
        return;
      case RequestHeadState::kMalformed:
        counters->malformed_heads++;
        Refuse(c, 400, "malformed request line");
        return;
    }
  }

  // Drops a watched connection.
  void Forget(std::unique_ptr<Connection>& c) {
    const int fd = c->fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    Close(std::move(c));
    idle.erase(fd);
  }

  // Answers a watched connection with an error and closes it after a short
  // linger, so the client reads the answer instead of a reset.
  void Refuse(std::unique_ptr<Connection>& c, int status, const std::string& message) {
    SendNow(c->fd, CannedErrorResponse(status, message));
    ::shutdown(c->fd, SHUT_WR);
    c->lingering = true;
    c->buf.clear();
    c->linger_deadline = Clock::now() + std::chrono::milliseconds(500);
  }

  void Dispatch(std::unique_ptr<Connection>& c) {
    const std::string_view head(c->buf);
    size_t lane = lane_of ? lane_of(c->scanner.method(head), c->scanner.target(head)) : 0;
    lane = std::min(lane, lanes.size() - 1);
    const int fd = c->fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    if (!lanes[lane]->TryPush(c)) {
      counters->queue_full++;
      LOG_WARNING_EVERY_N_SEC(10) << "http: every worker busy and the queue full; answering 503";
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
      Refuse(c, 503, "server busy: every worker is taken; retry shortly");
      return;
    }
    counters->requests++;
    idle.erase(fd);
  }

  void TakeHandedBack() {
    std::vector<std::unique_ptr<Connection>> back;
    {
      std::lock_guard<std::mutex> lock(handback_mu);
      back.swap(handed_back);
    }
    const auto now = Clock::now();
    for (auto& c : back) {
      if (stopping.load()) {
        Close(std::move(c));
        continue;
      }
      if (c->lingering) {
        c->linger_deadline = now + std::chrono::milliseconds(500);
        Watch(std::move(c));
        continue;
      }
      c->idle_deadline = now + limits.idle_timeout;
      // A pipelined next request may already be (partly) here.
      const RequestHeadState state = c->scanner.Scan(c->buf);
      if (c->scanner.started()) c->head_deadline = now + limits.header_timeout;
      const int fd = c->fd;
      Watch(std::move(c));
      if (auto it = idle.find(fd); it != idle.end() && state != RequestHeadState::kIncomplete) {
        OnHeadState(it->second, state);
      }
    }
  }

  void Sweep(Clock::time_point now) {
    if (listen_paused && now >= listen_resume && !stopping.load()) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = listen_fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
      listen_paused = false;
    }
    std::vector<int> expired_idle, expired_head, expired_linger;
    for (const auto& [fd, c] : idle) {
      if (c->lingering) {
        if (now >= c->linger_deadline) expired_linger.push_back(fd);
      } else if (c->scanner.started()) {
        if (now >= c->head_deadline) expired_head.push_back(fd);
      } else if (now >= c->idle_deadline) {
        expired_idle.push_back(fd);
      }
    }
    for (int fd : expired_linger) Forget(idle[fd]);
    for (int fd : expired_idle) {
      counters->idle_closed++;
      Forget(idle[fd]);
    }
    for (int fd : expired_head) {
      counters->header_timeouts++;
      Refuse(idle[fd], 408,
             "request head not complete within " + std::to_string(limits.header_timeout.count()) + " ms");
    }
  }

  // ---- the workers ----
  void Serve(std::unique_ptr<Connection> c) {
    HideAcceptEncoding(&c->buf);
    RequestStream stream(c->fd, std::move(c->buf), ToMillis(server->read_timeout_sec_, server->read_timeout_usec_),
                         ToMillis(server->write_timeout_sec_, server->write_timeout_usec_), limits.body_timeout);
    c->buf.clear();
    const bool last = ++c->requests >= limits.max_requests_per_connection || stopping.load();
    t_close_after_response = false;
    t_body_deadline_passed = false;
    t_client_authenticated = false;
    bool connection_closed = false;
    const bool ok = server->ServeOneRequest(stream, last, connection_closed);
    const bool close_early = t_close_after_response;
    t_close_after_response = false;
    if (t_client_authenticated) {
      t_client_authenticated = false;
      c->authenticated_client = true;
      NoteAuthenticated(c->client);
    }
    if (stream.deadline_passed()) counters->body_timeouts++;
    if (!ok || stream.deadline_passed()) {
      Close(std::move(c));
      return;
    }
    if (close_early) {
      // The client may still be sending the body we refused (also when it
      // asked for Connection: close): linger so that it reads our answer.
      ::shutdown(c->fd, SHUT_WR);
      c->lingering = true;
    } else if (connection_closed || last || c->peer_closed) {
      Close(std::move(c));
      return;
    } else {
      c->buf = stream.TakeUnread();
      c->scanner = RequestHeadScanner(limits.head);
    }
    HandBack(std::move(c));
  }

  void HandBack(std::unique_ptr<Connection> c) {
    if (stopping.load()) {
      Close(std::move(c));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(handback_mu);
      handed_back.push_back(std::move(c));
    }
    Wake();
  }
};

ConnectionServer::ConnectionServer() = default;

ConnectionServer::~ConnectionServer() { Shutdown(); }

Status ConnectionServer::Serve(const ConnectionLimits& limits, std::vector<int> lane_threads, LaneOf lane_of,
                               ConnectionCounters* counters) {
  if (impl_) return FailedPreconditionError("already serving");
  if (lane_threads.empty()) return InvalidArgumentError("no worker lanes");
  for (int n : lane_threads) {
    if (n < 1) return InvalidArgumentError("every lane needs at least one worker");
  }
  const int listen_fd = svr_sock_;
  if (listen_fd < 0) return FailedPreconditionError("not bound");
  auto impl = std::make_unique<Impl>();
  impl->server = this;
  impl->limits = limits;
  impl->lane_of = std::move(lane_of);
  impl->counters = counters;
  impl->listen_fd = listen_fd;
  // httplib 0.11 listens with a backlog of 5 (compiled into the library), so
  // a burst of agents connecting at once would overflow the accept queue;
  // listen(2) on a listening socket only updates the backlog.
  ::listen(listen_fd, SOMAXCONN);
  ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0) return ErrnoError(errno, "creating the HTTP server's epoll");
  for (int fd : {listen_fd, impl->wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) return ErrnoError(errno, "epoll_ctl");
  }
  for (size_t i = 0; i < lane_threads.size(); ++i) {
    impl->lanes.push_back(std::make_unique<Impl::Lane>(impl.get(), lane_threads[i], limits.max_queued_per_lane,
                                                       "http-lane" + std::to_string(i)));
  }
  Impl* raw = impl.get();
  impl->io_thread = std::thread([raw] { raw->RunIo(); });
  impl_ = std::move(impl);
  return Status::Ok();
}

void ConnectionServer::Shutdown() {
  if (!impl_ || impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->stopping = true;
  impl_->Wake();
  // The lanes serve what they hold (their connections close after it), then
  // the I/O thread closes the rest.
  for (auto& lane : impl_->lanes) lane->Shutdown();
  impl_->stop_io = true;
  impl_->Wake();
  impl_->io_thread.join();
  const int fd = svr_sock_.exchange(INVALID_SOCKET);
  if (fd >= 0) ::close(fd);
}

void ConnectionServer::CloseConnectionAfterResponse(httplib::Response& res) {
  t_close_after_response = true;
  if (!res.has_header("Connection")) res.set_header("Connection", "close");
}

bool ConnectionServer::BodyDeadlinePassed() { return t_body_deadline_passed; }

void ConnectionServer::NoteClientAuthenticated() { t_client_authenticated = true; }

bool ConnectionServer::ServeOneRequest(httplib::Stream& stream, bool last, bool& connection_closed) {
  return process_request(stream, last, connection_closed, nullptr);
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  ::close(sock);
  return false;
}

}  // namespace warpscope::http
