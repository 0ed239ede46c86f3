#include "tests/support/python_interpreters.h"

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "agent/unwind/python/code_object.h"
#include "base/logging.h"

extern char** environ;

namespace warpscope::testing {
namespace {

// The child's environment: ours, with UTF-8 forced for stdout and file names
// (the test compares non-ASCII names byte for byte) and no .pyc writes.
std::vector<std::string> ChildEnvironment() {
  static const char* kForced[] = {"PYTHONUTF8=1", "PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1"};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("PYTHONPATH=") || entry.starts_with("PYTHONHOME=")) continue;
    env.emplace_back(entry);
  }
  for (const char* f : kForced) env.emplace_back(f);
  return env;
}

StatusOr<PythonVersion> QueryVersion(const std::string& python) {
  StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Start({python, "-c", "import sys; print(*sys.version_info[:3])"});
  if (!child.ok()) return child.status();
  StatusOr<std::string> out = (*child)->Finish(30000);
  if (!out.ok()) return out.status().WithContext(python);
  PythonVersion v;
  std::istringstream in(*out);
  if (!(in >> v.major >> v.minor >> v.micro)) return InternalError(python + " printed no version: " + *out);
  return v;
}

std::vector<std::string> Glob(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}


// A JSON string starting at s[*pos] == '"'; leaves *pos after the closing quote.
StatusOr<std::string> ParseJsonString(std::string_view s, size_t* pos) {
  std::string out;
  size_t i = *pos + 1;
  uint32_t high_surrogate = 0;
  while (i < s.size() && s[i] != '"') {
    if (s[i] != '\\') {
      out.push_back(s[i++]);
      continue;
    }
    if (++i >= s.size()) break;
    const char e = s[i++];
    static const std::string_view kEscapes = "\"\\/bfnrt", kValues = "\"\\/\b\f\n\r\t";
    if (const size_t k = kEscapes.find(e); k != std::string_view::npos) {
      out.push_back(kValues[k]);
      continue;
    }
    if (e != 'u' || i + 4 > s.size()) return InvalidArgumentError("bad JSON escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = HexDigit(s[i++]);
      if (d < 0) return InvalidArgumentError("bad \\u escape");
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    if (cp >= 0xD800 && cp < 0xDC00) {
      high_surrogate = cp;
      continue;
    }
    if (cp >= 0xDC00 && cp < 0xE000 && high_surrogate != 0) cp = 0x10000 + ((high_surrogate - 0xD800) << 10) + (cp - 0xDC00);
    high_surrogate = 0;
    AppendUtf8(cp, &out);
  }
  if (i >= s.size()) return InvalidArgumentError("unterminated JSON string");
  *pos = i + 1;
  return out;
}

}  // namespace

StatusOr<std::vector<TestPython>> FindTestPythons() {
  std::vector<std::string> candidates = {"/usr/bin/python3"};
  for (const char* minor : {"10", "11", "12", "13"}) {
    for (std::string& p : Glob(std::string("/root/.pyenv/versions/3.") + minor + ".*/bin/python3." + minor)) {
      candidates.push_back(std::move(p));
    }
  }
  if (const char* extra = std::getenv("WS_TEST_PYTHONS")) {
    std::istringstream in(extra);
    for (std::string p; std::getline(in, p, ':');) {
      if (!p.empty()) candidates.push_back(p);
    }
  }
  std::vector<TestPython> out;
  std::set<std::string> seen;
  for (const std::string& path : candidates) {
    std::error_code ec;
    const std::string resolved = std::filesystem::canonical(path, ec).string();
    if (ec) return NotFoundError("interpreter " + path + ": " + ec.message());
    if (!seen.insert(resolved).second) continue;
    StatusOr<PythonVersion> version = QueryVersion(path);
    if (!version.ok()) return version.status();
    out.push_back({path, *version});
  }
  return out;
}

std::string Describe(const TestPython& python) { return python.version.ToString() + " (" + python.path + ")"; }

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(const std::vector<std::string>& argv) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env = ChildEnvironment();
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return ErrnoError(rc, "spawning " + argv[0]);
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, in_pipe[1], out_pipe[0]));
}

ChildProcess::~ChildProcess() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  close(stdout_fd_);
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool ChildProcess::Fill(int timeout_ms) {
  pollfd p{stdout_fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  char buf[65536];
  const ssize_t n = read(stdout_fd_, buf, sizeof(buf));
  if (n <= 0) return false;
  buffered_.append(buf, static_cast<size_t>(n));
  return true;
}

StatusOr<std::string> ChildProcess::ReadLine(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (buffered_.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !Fill(static_cast<int>(left.count()))) {
      return UnavailableError("no line from child " + std::to_string(pid_) + " (EOF or timeout)");
    }
  }
  const size_t nl = buffered_.find('\n');
  std::string line = buffered_.substr(0, nl);
  buffered_.erase(0, nl + 1);
  return line;
}

StatusOr<std::string> ChildProcess::Finish(int timeout_ms) {
  close(stdin_fd_);
  stdin_fd_ = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return UnavailableError("child " + std::to_string(pid_) + " timed out");
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[65536];
    const ssize_t n = read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffered_.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError("child " + std::to_string(pid_) + " failed with wait status " + std::to_string(status));
  }
  return std::move(buffered_);
}

StatusOr<std::string> RunPythonScript(const std::string& python, const std::string& script, int timeout_ms) {
  StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start({python, script});
  if (!child.ok()) return child.status();
  StatusOr<std::string> out = (*child)->Finish(timeout_ms);
  if (!out.ok()) return out.status().WithContext(python + " " + script);
  return out;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/ws_python_test.XXXXXX";
  CHECK(mkdtemp(templ.data()) != nullptr);
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

StatusOr<std::string> TempDir::WriteFile(const std::string& name, std::string_view data) {
  const std::string path = path_ + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out.good()) return InternalError("writing " + path);
  return path;
}

StatusOr<std::string> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return InvalidArgumentError("odd-length hex");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgumentError("bad hex digit");
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

StatusOr<std::map<std::string, std::string>> ParseFlatJson(std::string_view line) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  auto skip = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == ',' || line[i] == ':')) ++i;
  };
  if (line.empty() || line[0] != '{') return InvalidArgumentError("not a JSON object: " + std::string(line));
  ++i;
  while (true) {
    skip();
    if (i < line.size() && line[i] == '}') return out;
    if (i >= line.size() || line[i] != '"') return InvalidArgumentError("expected a key in " + std::string(line));
    StatusOr<std::string> key = ParseJsonString(line, &i);
    if (!key.ok()) return key.status();
    skip();
    if (i < line.size() && line[i] == '"') {
      StatusOr<std::string> value = ParseJsonString(line, &i);
      if (!value.ok()) return value.status();
      out[*key] = *value;
      continue;
    }
    const size_t start = i;
    while (i < line.size() && (line[i] == '-' || (line[i] >= '0' && line[i] <= '9'))) ++i;
    if (i == start) return InvalidArgumentError("unsupported JSON value in " + std::string(line));
    out[*key] = std::string(line.substr(start, i - start));
  }
}

GuardedBytes::GuardedBytes(std::string_view data) : size_(data.size()) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t data_pages = (data.size() + page - 1) / page;
  map_len_ = (data_pages + 1) * page;
  void* m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED);
  map_ = static_cast<char*>(m);
  CHECK(mprotect(map_ + data_pages * page, page, PROT_NONE) == 0);
  char* start = map_ + data_pages * page - data.size();
  if (!data.empty()) std::memcpy(start, data.data(), data.size());
  start_ = start;
}

GuardedBytes::~GuardedBytes() { munmap(map_, map_len_); }

}  // namespace warpscope::testing
