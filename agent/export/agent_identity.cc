#include "agent/export/agent_identity.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool IsAgentId(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Status MakeDirs(const std::string& dir) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError(errno, "creating " + path);
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return ErrnoError(errno, "state directory " + dir);
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError("state directory " + dir + " is not a directory");
  return Status::Ok();
}

uint64_t UnixMicrosNow() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

StatusOr<std::string> LoadOrCreateAgentId(const std::string& state_dir) {
  RETURN_IF_ERROR(MakeDirs(state_dir));
  const std::string path = state_dir + "/" + kAgentIdFileName;
  if (auto text = ReadFileToString(path); text.ok()) {
    const std::string id = Trim(*text);
    if (IsAgentId(id)) return id;
    LOG_WARNING() << path << " does not hold an agent id; creating a new one";
  } else if (text.status().code() != StatusCode::kNotFound) {
    return text.status();
  }
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return ErrnoError(errno, "getrandom");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 15]);
  }
  RETURN_IF_ERROR(WriteFileAtomically(path, id + "\n"));
  LOG_INFO() << "new agent id " << id << " in " << path;
  return id;
}

StatusOr<BatchSequencer> BatchSequencer::Open(const std::string& state_dir, std::optional<uint64_t> newest_spooled,
                                              UnixMicrosClock clock) {
  RETURN_IF_ERROR(MakeDirs(state_dir));
  if (!clock) clock = UnixMicrosNow;
  const std::string path = state_dir + "/" + kLastSequenceFileName;
  uint64_t last = newest_spooled.value_or(0);
  if (auto text = ReadFileToString(path); text.ok()) {
    const std::string t = Trim(*text);
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc() && ptr == t.data() + t.size() && !t.empty()) {
      last = std::max(last, v);
    } else {
      LOG_WARNING() << path << " is garbled; sequences continue from the clock";
    }
  } else if (text.status().code() != StatusCode::kNotFound) {
    LOG_WARNING() << "reading " << path << ": " << text.status().message() << "; sequences continue from the clock";
  }
  return BatchSequencer(path, last, std::move(clock));
}

uint64_t BatchSequencer::Next() {
  last_ = std::max(last_ + 1, clock_());
  if (Status s = WriteFileAtomically(path_, std::to_string(last_) + "\n"); !s.ok()) {
    if (!persist_error_logged_) LOG_WARNING() << "cannot persist the batch sequence: " << s.message();
    persist_error_logged_ = true;
  }
  return last_;
}

}  // namespace warpscope
