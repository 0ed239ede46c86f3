// Minimal leveled logging to stderr and CHECK for invariants.
// Thread-safe: each message is formatted into one buffer and written with a
// single write(2), so lines from different threads never interleave.
#pragma once

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
