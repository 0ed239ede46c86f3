#include "agent/core/lifecycle.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <cerrno>
#include <string>

#include "agent/core/cli.h"

namespace warpscope {

TargetWatch::~TargetWatch() {
  for (int fd : fds_) close(fd);
}

Status TargetWatch::Add(uint32_t pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH) return NotFoundError("no process with pid " + std::to_string(pid));
    return ErrnoError(errno, "watching pid " + std::to_string(pid));
  }
  fds_.push_back(fd);
  return Status::Ok();
}

bool TargetWatch::AllExited() const {
  if (fds_.empty()) return false;
  std::vector<pollfd> p;
  for (int fd : fds_) p.push_back({fd, POLLIN, 0});
  if (poll(p.data(), p.size(), 0) < 0) return false;
  return std::all_of(p.begin(), p.end(), [](const pollfd& x) { return x.revents & (POLLIN | POLLHUP); });
}

StopSignals::StopSignals() {
  sigemptyset(&mask_);
  sigaddset(&mask_, SIGINT);
  sigaddset(&mask_, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask_, &old_);
  fd_ = signalfd(-1, &mask_, SFD_NONBLOCK | SFD_CLOEXEC);
}

StopSignals::~StopSignals() {
  if (fd_ >= 0) close(fd_);
  sigprocmask(SIG_SETMASK, &old_, nullptr);
}

bool StopSignals::Received() {
  signalfd_siginfo info;
  if (fd_ < 0 || read(fd_, &info, sizeof(info)) != sizeof(info)) return false;
  last_signal_ = static_cast<int>(info.ssi_signo);
  return true;
}

int ReportFailure(int exit_code, const Status& status) {
  std::cerr << "warpscope-agent: " << status.message() << "\n";
  return exit_code;
}

int ExitCodeForStartFailure(const Status& status, int otherwise) {
  return status.code() == StatusCode::kPermissionDenied ? kExitPermission : otherwise;
}

std::function<std::optional<StopVerdict>()> StopCheckOf(StopSignals* signals, const TargetWatch* targets) {
  return [signals, targets]() -> std::optional<StopVerdict> {
    if (signals->Received()) return StopVerdict{StopCause::kSignal, signals->last_signal()};
    if (!targets->empty() && targets->AllExited()) return StopVerdict{StopCause::kTargetsExited};
    return std::nullopt;
  };
}

}  // namespace warpscope
