// ActivityBufferPool: the buffers handed to CUPTI's activity API, bounded.
//
// CUPTI asks for a buffer (cuptiActivityRegisterCallbacks' request callback)
// whenever it needs room for records; the pool gives one of at most
// `max_buffers`, allocating lazily, and gives null when all are out (CUPTI
// then drops records, which it counts: cuptiActivityGetNumDroppedRecords; the
// pool counts the refusals). Buffers come back through the completed
// callback. Each allocation carries its own size in a small prefix, so a
// buffer from an earlier configuration is recognised and freed.
//
// Threading: Take and Give are called on CUPTI's threads (possibly an
// application thread inside a CUDA call): they take one mutex for a few
// instructions and never allocate while holding it. Configure and Trim are
// called by the link thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace warpscope::cuda {

class ActivityBufferPool {
 public:
  void Configure(size_t buffer_bytes, size_t max_buffers);
  // Null when the pool is exhausted (counted in denied()).
  uint8_t* Take(size_t* size) noexcept;
  void Give(uint8_t* buffer) noexcept;
  // Frees idle buffers (the session ended; CUPTI gave everything back).
  void Trim() noexcept;

  uint64_t denied() const { return denied_.load(std::memory_order_relaxed); }
  size_t allocated() const;

 private:
  static constexpr size_t kPrefix = 64;  // keeps CUPTI's 8-byte alignment

  mutable std::mutex mu_;
  size_t buffer_bytes_ = 1u << 20;
  size_t max_buffers_ = 16;
  size_t allocated_ = 0;              // handed out + idle
  std::vector<uint8_t*> idle_;        // allocation starts (prefix included)
  std::atomic<uint64_t> denied_{0};
};

}  // namespace warpscope::cuda
