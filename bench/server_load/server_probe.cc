#include "bench/server_load/server_probe.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace warpscope::bench {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

StatusOr<double> ReadProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return NotFoundError("no /proc/" + std::to_string(pid) + "/stat");
  // Fields after "(comm)": 3 state ... 14 utime 15 stime (man 5 proc).
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

StatusOr<int64_t> ReadPeakRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return NotFoundError("no VmHWM in /proc/" + std::to_string(pid) + "/status");
}

StatusOr<DirUsage> MeasureDirectory(const std::string& dir) {
  // nftw takes a plain function: collect into a thread-local scratch.
  struct Scratch {
    std::string root;
    DirUsage usage;
    std::map<std::string, int64_t> entries;
  };
  static thread_local Scratch* scratch = nullptr;
  Scratch s;
  s.root = dir;
  while (s.root.size() > 1 && s.root.back() == '/') s.root.pop_back();
  scratch = &s;
  const int rc = nftw(
      s.root.c_str(),
      [](const char* path, const struct stat* st, int type, FTW*) {
        if (type != FTW_F) return 0;
        scratch->usage.apparent_bytes += st->st_size;
        scratch->usage.allocated_bytes += static_cast<int64_t>(st->st_blocks) * 512;
        std::string rel = std::string(path).substr(scratch->root.size() + 1);
        scratch->entries[rel.substr(0, rel.find('/'))] += st->st_size;
        return 0;
      },
      64, FTW_PHYS);
  scratch = nullptr;
  if (rc != 0) return ErrnoError(errno, "walking " + dir);
  s.usage.entries.assign(s.entries.begin(), s.entries.end());
  std::sort(s.usage.entries.begin(), s.usage.entries.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return s.usage;
}

StatusOr<std::unique_ptr<LocalServer>> LocalServer::Start(const std::string& binary, const std::string& data_dir,
                                                          const std::string& token,
                                                          const std::vector<std::string>& extra_args, int port) {
  if (access(binary.c_str(), X_OK) != 0) return ErrnoError(errno, "server binary " + binary);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  std::vector<std::string> argv = {binary, "--listen", "127.0.0.1:" + std::to_string(port), "--data-dir", data_dir};
  if (!token.empty()) argv.insert(argv.end(), {"--token", token});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  const double started = Now();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoError(errno, "fork");
  if (pid == 0) {
    dup2(pipe_fds[1], 2);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::unique_ptr<LocalServer> server(new LocalServer());
  server->pid_ = pid;
  server->stderr_fd_ = pipe_fds[0];
  LocalServer* raw = server.get();
  server->reader_ = std::thread([raw] {
    char buf[4096];
    for (;;) {
      const ssize_t n = read(raw->stderr_fd_, buf, sizeof(buf));
      if (n <= 0) break;
      std::lock_guard<std::mutex> lock(raw->mu_);
      raw->log_.append(buf, n);
      if (raw->log_.size() > (4u << 20)) raw->log_.erase(0, raw->log_.size() - (2u << 20));
    }
  });
  const std::regex serving("serving on http://[^: ]+:([0-9]+)");
  while (Now() < started + 120) {
    std::smatch m;
    const std::string log = server->log();
    if (std::regex_search(log, m, serving)) {
      server->port_ = std::stoi(m[1]);
      server->start_seconds_ = Now() - started;
      return server;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = -1;
      return InternalError("warpscope-server exited at start (status " + std::to_string(status) + "): " + log);
    }
    usleep(10'000);
  }
  return InternalError("warpscope-server did not print 'serving on' within 120 s: " + server->log());
}

LocalServer::~LocalServer() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (reader_.joinable()) reader_.join();
  if (stderr_fd_ >= 0) close(stderr_fd_);
}

std::string LocalServer::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

ExitUsage LocalServer::Stop(int timeout_s) {
  ExitUsage usage;
  if (pid_ <= 0) return usage;
  const double begin = Now();
  kill(pid_, SIGTERM);
  int status = 0;
  struct rusage ru {};
  for (;;) {
    const pid_t r = wait4(pid_, &status, WNOHANG, &ru);
    if (r == pid_) break;
    if (Now() > begin + timeout_s) {
      kill(pid_, SIGKILL);
      wait4(pid_, &status, 0, &ru);
      break;
    }
    usleep(5'000);
  }
  usage.stop_seconds = Now() - begin;
  usage.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  usage.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  usage.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  usage.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  pid_ = -1;
  if (reader_.joinable()) reader_.join();
  return usage;
}

}  // namespace warpscope::bench
