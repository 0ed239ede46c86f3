#include "agent/symbolize/nvdisasm.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "base/file_util.h"

extern char** environ;

namespace warpscope {
namespace {

constexpr size_t kMaxStderrBytes = 4096;

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// "/*0a70*/" at the start of `line`: the offset, and the rest of the line.
bool ParseOffset(std::string_view line, uint64_t* offset, std::string_view* rest) {
  if (line.size() < 5 || line.substr(0, 2) != "/*") return false;
  const size_t close = line.find("*/", 2);
  if (close == std::string_view::npos || close == 2 || close > 2 + 16) return false;
  uint64_t v = 0;
  for (size_t i = 2; i < close; ++i) {
    const char c = line[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return false;  // "/* 0x000fe2... */": an encoding, not an offset
    }
    v = (v << 4) | static_cast<uint64_t>(digit);
  }
  *offset = v;
  *rest = line.substr(close + 2);
  return true;
}

// `body` is what follows the offset: "  @P0 BRA `(.L_x_22) ;  /* 0x... */".
bool ParseInstruction(std::string_view body, uint64_t offset, NvdisasmInstruction* out) {
  const size_t comment = body.find("/*");
  if (comment != std::string_view::npos) body = body.substr(0, comment);
  body = Trim(body);
  if (!body.empty() && body.back() == ';') body = Trim(body.substr(0, body.size() - 1));
  // Data directives (.byte, .word) in a code section, and empty lines.
  if (body.empty() || body.front() == '.') return false;
  out->offset = offset;
  out->predicate.clear();
  if (body.front() == '@') {
    const size_t end = body.find_first_of(" \t");
    if (end == std::string_view::npos) return false;
    out->predicate = std::string(body.substr(0, end));
    body = Trim(body.substr(end));
  }
  const size_t end = body.find_first_of(" \t");
  out->opcode = std::string(body.substr(0, end));
  out->operands = end == std::string_view::npos ? std::string() : std::string(Trim(body.substr(end)));
  return !out->opcode.empty();
}

// ".section\t.text.add_one,\"ax\",@progbits": the name, and whether the
// flags mark code.
bool ParseSectionDirective(std::string_view line, std::string* name, bool* code) {
  if (line.substr(0, 8) != ".section" || line.size() < 9 || (line[8] != ' ' && line[8] != '\t')) return false;
  std::string_view rest = Trim(line.substr(9));
  const size_t comma = rest.find(',');
  *name = std::string(Trim(rest.substr(0, comma)));
  *code = false;
  if (comma != std::string_view::npos) {
    std::string_view flags = rest.substr(comma + 1);
    const size_t open = flags.find('"');
    const size_t close = open == std::string_view::npos ? open : flags.find('"', open + 1);
    if (close != std::string_view::npos)
      *code = flags.substr(open + 1, close - open - 1).find('x') != std::string_view::npos;
  }
  return !name->empty();
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Removes the temporary file when the run is over, whatever its outcome.
class TempFile {
 public:
  TempFile() = default;
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  Status Create(const std::string& dir, std::string_view contents) {
    std::string tmpl = dir + "/warpscope-cubin.XXXXXX";
    ScopedFd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!fd.valid()) return ErrnoError(errno, "creating a temporary file in " + dir);
    path_ = tmpl;
    size_t done = 0;
    while (done < contents.size()) {
      const ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoError(n < 0 ? errno : EIO, "writing " + path_);
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Kills and reaps the child unless it was already reaped.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The exit status once the child has exited; nullopt if it is still
  // running (when it has closed its output but not exited).
  std::optional<int> TryWait() {
    int status = 0;
    pid_t r;
    while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == 0) return std::nullopt;
    pid_ = -1;
    // r < 0 (ECHILD) when something else reaped it (SIGCHLD ignored): the
    // status is unknown and reads as success; the output stands.
    return status;
  }
  void Wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

std::string FirstLine(std::string_view s) {
  s = Trim(s.substr(0, s.find('\n')));
  return std::string(s);
}

}  // namespace

std::string NvdisasmInstruction::Text() const {
  std::string text = predicate;
  if (!text.empty()) text.push_back(' ');
  text += opcode;
  if (!operands.empty()) {
    text.push_back(' ');
    text += operands;
  }
  return text;
}

NvdisasmListing ParseNvdisasmOutput(std::string_view text) {
  NvdisasmListing listing;
  NvdisasmSection* current = nullptr;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = Trim(text.substr(pos, eol - pos));
    pos = eol + 1;
    std::string name;
    bool code = false;
    if (ParseSectionDirective(line, &name, &code)) {
      current = nullptr;
      if (code) current = &listing.sections.emplace_back(NvdisasmSection{std::move(name), {}});
      continue;
    }
    uint64_t offset = 0;
    std::string_view rest;
    NvdisasmInstruction instruction;
    if (current != nullptr && ParseOffset(line, &offset, &rest) && ParseInstruction(rest, offset, &instruction)) {
      current->instructions.push_back(std::move(instruction));
    }
  }
  return listing;
}

StatusOr<std::string> FindNvdisasm(std::string_view explicit_path, std::string_view search_dirs) {
  if (!explicit_path.empty()) {
    std::string path(explicit_path);
    if (IsExecutableFile(path)) return path;
    return NotFoundError("nvdisasm " + path + " is not an executable file");
  }
  size_t pos = 0;
  while (pos <= search_dirs.size()) {
    size_t colon = search_dirs.find(':', pos);
    if (colon == std::string_view::npos) colon = search_dirs.size();
    const std::string_view dir = search_dirs.substr(pos, colon - pos);
    pos = colon + 1;
    if (dir.empty()) continue;
    std::string path = std::string(dir) + "/nvdisasm";
    if (IsExecutableFile(path)) return path;
  }
  return NotFoundError("no nvdisasm in " + std::string(search_dirs) +
                       " (it comes with the CUDA toolkit, not the driver)");
}

StatusOr<std::string> RunNvdisasm(const std::string& nvdisasm, std::string_view cubin,
                                  const NvdisasmRunOptions& options) {
  TempFile input;
  RETURN_IF_ERROR(input.Create(options.temp_dir, cubin));

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  ScopedFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  ScopedFd err_read(err_pipe[0]), err_write(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  std::string arg0 = "nvdisasm";
  std::string arg1 = "--print-code";
  std::string arg2 = input.path();
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  pid_t pid = -1;
  const int spawn_error = ::posix_spawn(&pid, nvdisasm.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) return ErrnoError(spawn_error, "starting " + nvdisasm);
  Child child(pid);
  out_write.Reset();
  err_write.Reset();

  // Both pipes are drained until the program closes them (exits), runs out
  // of time, or prints too much; the Child destructor kills it in the last
  // two cases.
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  std::string out;
  std::string err;
  char buf[65536];
  bool out_open = true;
  bool err_open = true;
  while (out_open || err_open) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return DeadlineExceededError(nvdisasm + " ran past " + std::to_string(options.timeout.count()) + " ms; stopped");
    }
    pollfd fds[2] = {{out_open ? out_read.get() : -1, POLLIN, 0}, {err_open ? err_read.get() : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return ErrnoError(errno, "poll");
    if (ready <= 0) continue;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::read(out_read.get(), buf, sizeof(buf));
      if (n > 0) {
        if (out.size() + static_cast<size_t>(n) > options.max_output_bytes) {
          return ResourceExhaustedError(nvdisasm + " printed more than " + std::to_string(options.max_output_bytes) +
                                        " bytes; stopped");
        }
        out.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        out_open = false;
      }
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::read(err_read.get(), buf, sizeof(buf));
      if (n > 0) {
        err.append(buf, std::min(static_cast<size_t>(n), kMaxStderrBytes - std::min(err.size(), kMaxStderrBytes)));
      } else if (n == 0 || errno != EINTR) {
        err_open = false;
      }
    }
  }
  std::optional<int> exited;
  while (!(exited = child.TryWait())) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError(nvdisasm + " ran past " + std::to_string(options.timeout.count()) + " ms; stopped");
    }
    ::usleep(5000);
  }
  const int status = *exited;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                      : "was killed by signal " + std::to_string(WTERMSIG(status));
  const std::string first = FirstLine(err);
  return InternalError(nvdisasm + " " + how + (first.empty() ? "" : ": " + first));
}

}  // namespace warpscope
