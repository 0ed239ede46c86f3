// A shared/exclusive gate that favours the exclusive side: ingest threads
// pass it shared (any number at once, so WAL appends still group-commit);
// a flush takes it exclusively for the instant it freezes the head. Once a
// flush is waiting, new ingests wait behind it, so a steady stream of uploads
// cannot starve flushing (glibc's rwlock, behind std::shared_mutex, prefers
// readers and did starve it under 4 busy writers).
//
// Threading: any thread. The exclusive holder must not hold it shared.
#pragma once

#include <condition_variable>
#include <mutex>

namespace warpscope::embedded {

class AppendGate {
 public:
  void EnterShared() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !exclusive_wanted_ && !exclusive_held_; });
    ++shared_;
  }
  void LeaveShared() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--shared_ == 0) cv_.notify_all();
  }
  void EnterExclusive() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !exclusive_wanted_ && !exclusive_held_; });
    exclusive_wanted_ = true;
    cv_.wait(lock, [&] { return shared_ == 0; });
    exclusive_wanted_ = false;
    exclusive_held_ = true;
  }
  void LeaveExclusive() {
    std::lock_guard<std::mutex> lock(mu_);
    exclusive_held_ = false;
    cv_.notify_all();
  }

  class Shared {
   public:
    explicit Shared(AppendGate& gate) : gate_(gate) { gate_.EnterShared(); }
    ~Shared() { gate_.LeaveShared(); }
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;

   private:
    AppendGate& gate_;
  };
  class Exclusive {
   public:
    explicit Exclusive(AppendGate& gate) : gate_(gate) { gate_.EnterExclusive(); }
    ~Exclusive() { gate_.LeaveExclusive(); }
    Exclusive(const Exclusive&) = delete;
    Exclusive& operator=(const Exclusive&) = delete;

   private:
    AppendGate& gate_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int shared_ = 0;                 // guarded by mu_
  bool exclusive_wanted_ = false;  // guarded by mu_
  bool exclusive_held_ = false;    // guarded by mu_
};

}  // namespace warpscope::embedded
