#include "storage/clickhouse/ingest_group_committer.h"

#include <algorithm>

#include "storage/clickhouse/row_binary.h"

namespace warpscope::clickhouse {

IngestGroupCommitter::IngestGroupCommitter(ClickHouseClient* client, IngestWriter* writer,
                                           GroupCommitOptions options)
    : client_(client), writer_(writer), options_(options) {
  committer_ = std::thread([this] { RunCommitter(); });
}

IngestGroupCommitter::~IngestGroupCommitter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  committer_.join();
}

IngestGroupCommitter::ExpectedBatch::~ExpectedBatch() {
  if (committer_ != nullptr) committer_->Expected(-1);
}

IngestGroupCommitter::ExpectedBatch IngestGroupCommitter::ExpectBatch() {
  Expected(+1);
  return ExpectedBatch(this);
}

void IngestGroupCommitter::Expected(int delta) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    expected_ += delta;
  }
  if (delta < 0) queue_cv_.notify_all();
}

BatchOutcome IngestGroupCommitter::CommitAndWait(ExpectedBatch expected, BatchRows rows, std::string agent,
                                                 uint64_t sequence, std::string what) {
  Pending p;
  p.rows = std::move(rows);
  p.agent = std::move(agent);
  p.sequence = sequence;
  p.what = std::move(what);
  std::unique_lock<std::mutex> lock(mu_);
  // From here the batch is queued, no longer expected.
  expected.committer_ = nullptr;
  --expected_;
  if (stop_) {
    p.outcome.status = UnavailableError("the ClickHouse store is closing");
    return p.outcome;
  }
  p.queued_at = std::chrono::steady_clock::now();
  queued_rows_ += p.rows.fact_rows();
  queue_.push_back(&p);
  queue_cv_.notify_all();
  done_cv_.wait(lock, [&] { return p.done; });
  return std::move(p.outcome);
}

IngestGroupCommitter::Counters IngestGroupCommitter::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void IngestGroupCommitter::RunCommitter() {
  const size_t max_batches = static_cast<size_t>(std::max(1, options_.max_batches));
  std::unique_lock<std::mutex> lock(mu_);
  auto free_since = std::chrono::steady_clock::now();
  while (true) {
    queue_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued is written
    // Gathering starts when the committer is free (the first batch may have
    // been queued while the last group was being written).
    const auto deadline = std::max(queue_.front()->queued_at, free_since) + options_.max_wait;
    const size_t target = recent_group_sizes_.empty()
                              ? 1
                              : *std::max_element(recent_group_sizes_.begin(), recent_group_sizes_.end());
    queue_cv_.wait_until(lock, deadline, [&] {
      return stop_ || queue_.size() >= max_batches || queued_rows_ >= options_.max_rows ||
             (expected_ <= 0 && queue_.size() >= target);
    });
    std::vector<Pending*> group = TakeGroup();
    recent_group_sizes_.push_back(group.size());
    if (recent_group_sizes_.size() > 16) recent_group_sizes_.pop_front();
    lock.unlock();
    WriteGroup(group);
    lock.lock();
    ++counters_.groups;
    counters_.batches += group.size();
    counters_.largest_group = std::max<uint64_t>(counters_.largest_group, group.size());
    for (Pending* p : group) p->done = true;
    done_cv_.notify_all();
    free_since = std::chrono::steady_clock::now();
  }
}

std::vector<IngestGroupCommitter::Pending*> IngestGroupCommitter::TakeGroup() {
  const size_t max_batches = static_cast<size_t>(std::max(1, options_.max_batches));
  std::vector<Pending*> group;
  uint64_t rows = 0;
  while (!queue_.empty() && group.size() < max_batches) {
    Pending* p = queue_.front();
    const uint64_t r = p->rows.fact_rows();
    if (!group.empty() && rows + r > options_.max_rows) break;
    group.push_back(p);
    rows += r;
    queue_.pop_front();
    queued_rows_ -= r;
  }
  return group;
}

void IngestGroupCommitter::WriteGroup(const std::vector<Pending*>& group) {
  auto fail = [](Pending* p, const Status& s) { p->outcome.status = s.WithContext("storing " + p->what); };
  std::vector<const BatchRows*> rows;
  std::vector<std::string> agents;
  for (Pending* p : group) {
    rows.push_back(&p->rows);
    agents.push_back(p->agent);
  }
  // Duplicate and repair checks of the whole group in one SELECT.
  StatusOr<std::vector<StoredBatchState>> stored = writer_->CheckStored(rows, &agents);
  if (!stored.ok()) {
    for (Pending* p : group) fail(p, stored.status());
    return;
  }
  std::vector<Pending*> live;
  std::vector<const BatchRows*> live_rows;
  std::vector<StoredBatchState> live_stored;
  for (size_t i = 0; i < group.size(); ++i) {
    Pending* p = group[i];
    StoredBatchState& s = (*stored)[i];
    if (p->sequence <= s.sequence) {  // committed by this or another replica
      p->outcome.duplicate = true;
      p->outcome.stored_sequence = s.sequence;
      continue;
    }
    if (Status partial = CheckNotPartial(p->rows, s, p->what); !partial.ok()) {
      p->outcome.status = partial;
      continue;
    }
    live.push_back(p);
    live_rows.push_back(&p->rows);
    live_stored.push_back(std::move(s));
  }
  if (live.empty()) return;
  std::vector<Status> live_status(live.size());
  Status status = writer_->WriteDictionaries(live_rows);
  if (status.ok()) status = writer_->WriteFacts(live_rows, std::move(live_stored), &live_status);
  if (status.ok()) {
    // The commit: from here on these batches are duplicates for every replica.
    RowBinaryWriter commit;
    size_t n = 0;
    for (size_t i = 0; i < live.size(); ++i) {
      if (!live_status[i].ok()) continue;
      commit.String(live[i]->agent);
      commit.UInt64(live[i]->sequence);
      ++n;
    }
    if (n > 0) {
      status = client_
                   ->Execute(ClickHouseRequest::Insert(
                       "INSERT INTO agent_sequences (agent_id, sequence) FORMAT RowBinary", commit.Take()))
                   .status()
                   .WithContext("recording agent_sequences");
    }
  }
  for (size_t i = 0; i < live.size(); ++i) {
    if (!live_status[i].ok()) {
      fail(live[i], live_status[i]);
    } else if (!status.ok()) {
      fail(live[i], status);
    }
  }
}

}  // namespace warpscope::clickhouse
