#include "base/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace warpscope {
namespace {
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelTag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "D";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarning: return "W";
    case LogLevel::kError: return "E";
    case LogLevel::kFatal: return "F";
  }
  return "?";
}
}  // namespace

void SetMinLogLevel(LogLevel level) { g_min_level.store(static_cast<int>(level)); }
LogLevel MinLogLevel() { return static_cast<LogLevel>(g_min_level.load(std::memory_order_relaxed)); }

bool LogRateLimiter::Allow(int seconds, uint64_t* suppressed) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t now = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  int64_t next = next_allowed_ns_.load(std::memory_order_relaxed);
  if (now < next || !next_allowed_ns_.compare_exchange_strong(next, now + int64_t{seconds} * 1'000'000'000)) {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
  return true;
}

std::string SuppressedNote(uint64_t suppressed) {
  return suppressed == 0 ? std::string() : "[" + std::to_string(suppressed) + " similar lines suppressed] ";
}

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm tm_utc{};
  gmtime_r(&ts.tv_sec, &tm_utc);
  char when[32];
  strftime(when, sizeof(when), "%H:%M:%S", &tm_utc);
  const char* base = std::strrchr(file, '/');
  stream_ << LevelTag(level) << ' ' << when << '.' << (ts.tv_nsec / 1000000) / 100
          << ((ts.tv_nsec / 1000000) / 10) % 10 << (ts.tv_nsec / 1000000) % 10 << ' '
          << (base ? base + 1 : file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  std::string text = stream_.str();
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
  if (level_ == LogLevel::kFatal) std::abort();
}

}  // namespace warpscope
