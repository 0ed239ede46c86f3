#include "server/connection_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace warpscope::server {
namespace {

// Set by handlers and read by the loop, both on the worker thread that owns
// the connection.
thread_local bool t_close_after_response = false;

int ToMillis(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

void SockaddrToIpPort(const sockaddr_storage& addr, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  }
  ip = buf;
}

// A buffered socket stream: httplib's request-line reader asks for one byte
// at a time, so reads go through a 4 KiB buffer.
class BufferedSocketStream : public httplib::Stream {
 public:
  BufferedSocketStream(int fd, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  bool has_buffered_bytes() const { return pos_ < len_; }

  bool is_readable() const override { return has_buffered_bytes() || Poll(POLLIN, read_timeout_ms_); }
  bool is_writable() const override { return Poll(POLLOUT, write_timeout_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered_bytes()) {
      if (!Poll(POLLIN, read_timeout_ms_)) return -1;
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof(buf_), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t take = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, take);
    pos_ += take;
    return static_cast<ssize_t>(take);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) SockaddrToIpPort(addr, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) SockaddrToIpPort(addr, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  bool Poll(short events, int timeout_ms) const {
    pollfd p{fd_, events, 0};
    int r;
    do {
      r = ::poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    return r > 0;
  }

  int fd_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  char buf_[4096];
  size_t pos_ = 0;
  size_t len_ = 0;
};

}  // namespace

void ConnectionServer::CloseConnectionAfterResponse(httplib::Response& res) {
  t_close_after_response = true;
  if (!res.has_header("Connection")) res.set_header("Connection", "close");
}

void ConnectionServer::RaiseListenBacklog(int backlog) {
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, backlog);
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  // Headers and body go out in separate writes; without TCP_NODELAY the body
  // waits for the client's delayed ACK (40 ms per response).
  int one = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  BufferedSocketStream stream(sock, ToMillis(read_timeout_sec_, read_timeout_usec_),
                              ToMillis(write_timeout_sec_, write_timeout_usec_));
  // Waits for the next request on a kept-alive connection, giving up early
  // when Stop() has closed the listening socket.
  auto wait_for_request = [&]() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    while (true) {
      if (stream.has_buffered_bytes()) return true;
      if (svr_sock_ == INVALID_SOCKET) return false;
      pollfd p{sock, POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
  };

  bool ret = false;
  bool closed_early = false;
  for (size_t remaining = keep_alive_max_count_; remaining > 0 && wait_for_request(); --remaining) {
    t_close_after_response = false;
    bool connection_closed = false;
    ret = process_request(stream, /*close_connection=*/remaining == 1, connection_closed, nullptr);
    closed_early = t_close_after_response;
    t_close_after_response = false;
    if (!ret || connection_closed || closed_early) break;
  }
  if (closed_early) {
    // Lingering close: the client may still be sending the body we refused.
    // Draining briefly lets it read our response instead of seeing a reset.
    ::shutdown(sock, SHUT_WR);
    char sink[16384];
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{sock, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      if (::recv(sock, sink, sizeof(sink), 0) <= 0) break;
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace warpscope::server
