#include "tests/integration/server_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <chrono>
#include <regex>

namespace warpscope::testing {

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& binary, const std::string& data_dir,
                                                              const std::vector<std::string>& extra_args, int port) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  std::vector<std::string> argv = {binary, "--listen", "127.0.0.1:" + std::to_string(port), "--data-dir", data_dir};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
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
    }
  });
  const std::regex serving("serving on http://[^:]+:([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string log = p->log();
    if (std::regex_search(log, m, serving)) {
      p->port_ = std::stoi(m[1]);
      return p;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return InternalError("warpscope-server exited at start: " + log);
    }
    usleep(20'000);
  }
  return InternalError("warpscope-server did not start within 30 s: " + p->log());
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

void ServerProcess::Reap(int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pid_ = -1;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      exit_code_ = -1;
      pid_ = -1;
      break;
    }
    usleep(10'000);
  }
  if (reader_.joinable()) reader_.join();
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  Reap(10);
}

int ServerProcess::Stop(int timeout_s) {
  if (pid_ <= 0) return exit_code_;
  kill(pid_, SIGTERM);
  Reap(timeout_s);
  return exit_code_;
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

}  // namespace

HttpResult HttpGet(int port, const std::string& path_and_query, const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  return FromResult(client.Get(path_and_query.c_str(), AuthHeaders(token)));
}

HttpResult HttpPostIngest(int port, const std::string& body, const std::string& token, const std::string& content_type,
                          bool compress) {
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
  return FromResult(client.Post("/api/v1/ingest", headers, payload, content_type.c_str()));
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
