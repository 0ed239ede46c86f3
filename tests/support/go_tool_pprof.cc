#include "tests/support/go_tool_pprof.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

#include "base/file_util.h"

namespace warpscope::testing {

std::string FindGo() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/go";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  if (::access("/usr/lib/go/bin/go", X_OK) == 0) return "/usr/lib/go/bin/go";
  return "";
}

GoToolResult RunGoToolPprof(const std::string& go, const std::string& dir, const std::string& mode,
                            const std::string& file) {
  const char* path = std::getenv("PATH");
  const std::vector<std::string> argv = {go, "tool", "pprof", mode, file};
  const std::vector<std::string> env = {"PATH=" + std::string(path ? path : "/usr/bin:/bin"), "HOME=" + dir + "/home",
                                        "GOCACHE=" + dir + "/gocache", "GOPATH=" + dir + "/gopath",
                                        "PPROF_TMPDIR=" + dir + "/pprof"};
  // Everything the child needs is prepared before fork().
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  GoToolResult result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (auto out = ReadFileToString(out_path); out.ok()) result.out = *out;
  if (auto err = ReadFileToString(err_path); err.ok()) result.err = *err;
  return result;
}

}  // namespace warpscope::testing
