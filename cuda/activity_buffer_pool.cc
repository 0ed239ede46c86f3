#include "cuda/activity_buffer_pool.h"

#include <cstdlib>
#include <cstring>

namespace warpscope::cuda {

void ActivityBufferPool::Configure(size_t buffer_bytes, size_t max_buffers) {
  std::vector<uint8_t*> stale;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (buffer_bytes != buffer_bytes_) {
      stale.swap(idle_);
      allocated_ -= stale.size();
    }
    buffer_bytes_ = buffer_bytes;
    max_buffers_ = max_buffers;
    idle_.reserve(max_buffers);
  }
  for (uint8_t* b : stale) std::free(b);
}

uint8_t* ActivityBufferPool::Take(size_t* size) noexcept {
  size_t bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes = buffer_bytes_;
    if (!idle_.empty()) {
      uint8_t* b = idle_.back();
      idle_.pop_back();
      *size = bytes;
      return b + kPrefix;
    }
    if (allocated_ >= max_buffers_) {
      denied_.fetch_add(1, std::memory_order_relaxed);
      *size = 0;
      return nullptr;
    }
    allocated_++;  // reserve the slot; allocate outside the lock
  }
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(kPrefix, kPrefix + bytes));
  if (b == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    allocated_--;
    denied_.fetch_add(1, std::memory_order_relaxed);
    *size = 0;
    return nullptr;
  }
  std::memcpy(b, &bytes, sizeof(bytes));
  *size = bytes;
  return b + kPrefix;
}

void ActivityBufferPool::Give(uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  uint8_t* b = buffer - kPrefix;
  size_t bytes;
  std::memcpy(&bytes, b, sizeof(bytes));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes == buffer_bytes_ && idle_.size() < max_buffers_ && allocated_ <= max_buffers_) {
      idle_.push_back(b);  // capacity reserved in Configure: no allocation here
      return;
    }
    allocated_--;
  }
  std::free(b);
}

void ActivityBufferPool::Trim() noexcept {
  std::vector<uint8_t*> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle.swap(idle_);
    allocated_ -= idle.size();
  }
  for (uint8_t* b : idle) std::free(b);
  std::lock_guard<std::mutex> lock(mu_);
  try {
    idle_.reserve(max_buffers_);
  } catch (...) {
  }
}

size_t ActivityBufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocated_;
}

}  // namespace warpscope::cuda
