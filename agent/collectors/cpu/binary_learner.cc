#include "agent/collectors/cpu/binary_learner.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "agent/symbolize/symbolizer.h"
#include "base/logging.h"

namespace warpscope {

BinaryLearner::BinaryLearner(ProcFs procfs) : procfs_(std::move(procfs)), worker_([this] { Run(); }) {}

BinaryLearner::~BinaryLearner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  worker_.join();
}

bool BinaryLearner::Submit(LearnRequest request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueuedFiles) {
      ++stats_.queue_full;
      return false;
    }
    ++in_queue_[IdentityOf(request.mapping)];
    queue_.push_back(Item{std::move(request), std::chrono::steady_clock::now()});
    ++stats_.files_queued;
    stats_.queue_peak = std::max<uint64_t>(stats_.queue_peak, queue_.size());
  }
  work_cv_.notify_one();
  return true;
}

std::vector<LearnedBinary> BinaryLearner::TakeDone() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LearnedBinary> out(std::make_move_iterator(done_.begin()), std::make_move_iterator(done_.end()));
  done_.clear();
  return out;
}

std::optional<StatusOr<std::shared_ptr<const ElfSymbols>>> BinaryLearner::AwaitSymbols(
    const FileIdentity& identity, std::chrono::milliseconds timeout) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  auto find_done = [&]() -> LearnedBinary* {
    for (LearnedBinary& d : done_) {
      if (IdentityOf(d.mapping) == identity && d.symbols) return &d;
    }
    return nullptr;
  };
  LearnedBinary* found = find_done();
  if (found == nullptr && in_queue_.contains(identity)) {
    done_cv_.wait_until(lock, t0 + timeout, [&] { return stop_ || (found = find_done()) != nullptr || !in_queue_.contains(identity); });
  }
  stats_.await_ms_total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (found == nullptr) return std::nullopt;
  return *found->symbols;
}

void BinaryLearner::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait_for(lock, timeout, [&] { return stop_ || in_queue_.empty(); });
}

size_t BinaryLearner::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

BinaryLearnerStats BinaryLearner::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

LearnedBinary BinaryLearner::Learn(LearnRequest& request) {
  LearnedBinary out;
  out.pid = request.pid;
  out.mapping = request.mapping;
  out.build_id = request.file->BuildId();
  if (request.symbols) out.symbols = ReadSymbolsFor(*request.file, request.pid, request.mapping, procfs_);
  if (request.python) out.python = ReadPythonBinary(*request.file, request.mapping.path);
  if (request.table) out.table = BuildLoaderTable(request.file);
  return out;
}

void BinaryLearner::Run() {
  // Reading binaries can wait; the applications on the node cannot.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    const auto start = std::chrono::steady_clock::now();
    stats_.wait_ms_max =
        std::max(stats_.wait_ms_max, std::chrono::duration<double, std::milli>(start - item.queued_at).count());
    lock.unlock();
    LearnedBinary learned = Learn(item.request);
    item.request.file.reset();  // closed here, off the loop
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    stats_.work_ms_total += ms;
    ++stats_.files_done;
    const FileIdentity identity = IdentityOf(learned.mapping);
    done_.push_back(std::move(learned));
    if (auto it = in_queue_.find(identity); it != in_queue_.end() && --it->second == 0) in_queue_.erase(it);
    done_cv_.notify_all();
  }
}

}  // namespace warpscope
