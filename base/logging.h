// Minimal leveled logging to stderr and CHECK for invariants.
// Thread-safe: each message is formatted into one buffer and written with a
// single write(2), so lines from different threads never interleave.
#pragma once

#include <atomic>
#include <cstdint>
#include <sstream>
#include <string>

namespace warpscope {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

// The process-wide minimum level. Set once in main() before threads start.
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();  // writes the line; aborts for kFatal
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// One log site's rate limit (LOG_*_EVERY_N_SEC): at most one line per
// interval, the lines in between counted and reported with the next one, so
// input that triggers a message per request cannot flood the log.
// Thread-safe.
class LogRateLimiter {
 public:
  // True when this call may log; *suppressed is then the number of calls
  // refused since the last one allowed.
  bool Allow(int seconds, uint64_t* suppressed);

 private:
  std::atomic<int64_t> next_allowed_ns_{0};
  std::atomic<uint64_t> suppressed_{0};
};

// "[N similar lines suppressed] " or "".
std::string SuppressedNote(uint64_t suppressed);

// Swallows the stream when the level is disabled.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace warpscope

#define WS_LOG(level)                                                                      \
  (::warpscope::LogLevel::level < ::warpscope::MinLogLevel())                              \
      ? (void)0                                                                            \
      : ::warpscope::LogVoidify() &                                                        \
            ::warpscope::LogMessage(::warpscope::LogLevel::level, __FILE__, __LINE__).stream()

#define LOG_DEBUG() WS_LOG(kDebug)
#define LOG_INFO() WS_LOG(kInfo)
#define LOG_WARNING() WS_LOG(kWarning)
#define LOG_ERROR() WS_LOG(kError)

// At most one line per `seconds` from this call site (LogRateLimiter).
#define WS_LOG_EVERY_N_SEC(level, seconds)                                                       \
  for (uint64_t ws_suppressed_ = 0,                                                              \
                ws_once_ = ([]() -> ::warpscope::LogRateLimiter& {                                \
                  static ::warpscope::LogRateLimiter limiter;                                    \
                  return limiter;                                                                \
                }())                                                                             \
                               .Allow(seconds, &ws_suppressed_);                                 \
       ws_once_; ws_once_ = 0)                                                                   \
  WS_LOG(level) << ::warpscope::SuppressedNote(ws_suppressed_)
#define LOG_INFO_EVERY_N_SEC(seconds) WS_LOG_EVERY_N_SEC(kInfo, seconds)
#define LOG_WARNING_EVERY_N_SEC(seconds) WS_LOG_EVERY_N_SEC(kWarning, seconds)
#define LOG_ERROR_EVERY_N_SEC(seconds) WS_LOG_EVERY_N_SEC(kError, seconds)

#define CHECK(cond)                                                                           \
  (cond) ? (void)0                                                                            \
         : ::warpscope::LogVoidify() &                                                        \
               ::warpscope::LogMessage(::warpscope::LogLevel::kFatal, __FILE__, __LINE__).stream() \
                   << "CHECK failed: " #cond " "

#ifdef NDEBUG
#define DCHECK(cond) \
  while (false) CHECK(cond)
#else
#define DCHECK(cond) CHECK(cond)
#endif
