// Polls a condition until it holds or a timeout passes, for tests of things
// that happen on another thread (an uploader's, a server's). Any thread.
#pragma once

#include <chrono>
#include <thread>

namespace warpscope::testing {

// True once pred() is; false when it still is not after `timeout`.
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace warpscope::testing
