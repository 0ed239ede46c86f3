#include "tests/integration/server_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <chrono>
#include <regex>

namespace warpscope::testing {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& binary, const std::string& data_dir,
                                                              const std::vector<std::string>& extra_args, int port) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  std::vector<std::string> argv = {binary, "--listen", "127.0.0.1:" + std::to_string(port), "--data-dir", data_dir};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  const double started = NowSeconds();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoError(errno, "fork");
  if (pid == 0) {
    dup2(pipe_fds[1], 2);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->pid_ = pid;
  p->stderr_fd_ = pipe_fds[0];
  ServerProcess* raw = p.get();
  p->reader_ = std::thread([raw] {
    char buf[4096];
    for (;;) {
      ssize_t n = read(raw->stderr_fd_, buf, sizeof(buf));
      if (n <= 0) break;
      std::lock_guard<std::mutex> lock(raw->mu_);
      raw->log_.append(buf, n);
      if (raw->log_.size() > (4u << 20)) raw->log_.erase(0, raw->log_.size() - (2u << 20));
    }
  });
  // The whole line, up to its newline: what follows the port (the store,
  // the token rule) is part of what callers read.
  const std::regex serving("serving on http://[^: ]+:([0-9]+)[^\n]*\n");
  while (NowSeconds() < started + 120) {
    std::smatch m;
    const std::string log = p->log();
    if (std::regex_search(log, m, serving)) {
      p->port_ = std::stoi(m[1]);
      p->start_seconds_ = NowSeconds() - started;
      return p;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return InternalError("warpscope-server exited at start: " + log);
    }
    usleep(20'000);
  }
  return InternalError("warpscope-server did not print 'serving on' within 120 s: " + p->log());
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill();
  if (reader_.joinable()) reader_.join();
  if (stderr_fd_ >= 0) close(stderr_fd_);
}

std::string ServerProcess::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

ServerExit ServerProcess::Reap(int timeout_s) {
  ServerExit exit;
  const double begin = NowSeconds();
  int status = 0;
  struct rusage ru {};
  for (;;) {
    if (wait4(pid_, &status, WNOHANG, &ru) == pid_) break;
    if (NowSeconds() > begin + timeout_s) {
      kill(pid_, SIGKILL);
      wait4(pid_, &status, 0, &ru);
      break;
    }
    usleep(5'000);
  }
  exit.stop_seconds = NowSeconds() - begin;
  exit.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  exit.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  exit.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  exit.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  pid_ = -1;
  if (reader_.joinable()) reader_.join();
  return exit;
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  Reap(10);
}

ServerExit ServerProcess::Stop(int timeout_s) {
  if (pid_ <= 0) return {};
  kill(pid_, SIGTERM);
  return Reap(timeout_s);
}

namespace {

HttpResult FromResult(const httplib::Result& r) {
  HttpResult out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

httplib::Headers AuthHeaders(const std::string& token) {
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return h;
}

// A POST or PUT of `body` (zstd-compressed, with its Content-Encoding, unless !compress).
HttpResult SendBody(int port, const std::string& method, const std::string& path, const std::string& body,
                    const std::string& token, const std::string& content_type, bool compress) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  httplib::Headers headers = AuthHeaders(token);
  std::string payload = body;
  if (compress) {
    payload.resize(ZSTD_compressBound(body.size()));
    const size_t n = ZSTD_compress(payload.data(), payload.size(), body.data(), body.size(), 3);
    payload.resize(ZSTD_isError(n) ? 0 : n);
    headers.emplace("Content-Encoding", "zstd");
  }
  return FromResult(method == "PUT" ? client.Put(path.c_str(), headers, payload, content_type.c_str())
                                    : client.Post(path.c_str(), headers, payload, content_type.c_str()));
}

}  // namespace

HttpResult HttpGet(int port, const std::string& path_and_query, const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  return FromResult(client.Get(path_and_query.c_str(), AuthHeaders(token)));
}

HttpResult HttpPostIngest(int port, const std::string& body, const std::string& token, const std::string& content_type,
                          bool compress) {
  return SendBody(port, "POST", "/api/v1/ingest", body, token, content_type, compress);
}

HttpResult HttpHead(int port, const std::string& path, const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  return FromResult(client.Head(path.c_str(), AuthHeaders(token)));
}

HttpResult HttpPutCubin(int port, const std::string& hash, const std::string& bytes, const std::string& token,
                        bool compress) {
  return SendBody(port, "PUT", "/api/v1/gpu/cubins/" + hash, bytes, token, "application/octet-stream", compress);
}

HttpResult PostBatch(int port, const warpscope::v1::IngestBatch& batch, const std::string& token) {
  return HttpPostIngest(port, batch.SerializeAsString(), token);
}

std::string UrlEncode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace warpscope::testing
