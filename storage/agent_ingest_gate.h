// AgentIngestGate: the per-agent part of Ingest that every store shares.
//
// An agent's batches carry increasing sequence numbers, and an agent re-sends
// a batch it got no answer for, so a re-send can race its original. The gate
// lets one Ingest per agent in at a time (the other waits until the first is
// done, and then the sequence it stored decides) and remembers the highest
// sequence known stored per agent, which answers "duplicate" without asking
// the store.
//
//   std::optional<AgentIngestGate::Pass> pass = gate_.Enter(agent, sequence);
//   if (!pass) return IngestResult{.duplicate = true};
//   ... store the batch ...
//   gate_.Stored(agent, sequence);   // only once it is durable
//   // the Pass going out of scope lets the agent's next Ingest in
//
// Threading: any thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace warpscope::storage {

class AgentIngestGate {
 public:
  // An Ingest's hold on its agent, from Enter until it is destroyed.
  class Pass {
   public:
    Pass(Pass&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)), agent_(std::move(other.agent_)) {}
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass() {
      if (gate_ != nullptr) gate_->Leave(agent_);
    }

   private:
    friend class AgentIngestGate;
    Pass(AgentIngestGate* gate, std::string agent) : gate_(gate), agent_(std::move(agent)) {}
    AgentIngestGate* gate_;
    std::string agent_;
  };

  // Waits out another Ingest of `agent`; then nothing when `sequence` is at or
  // below the highest one known stored (a duplicate), else the agent's Pass.
  std::optional<Pass> Enter(const std::string& agent, uint64_t sequence) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !in_flight_.contains(agent); });
    auto it = stored_.find(agent);
    if (it != stored_.end() && sequence <= it->second) return std::nullopt;
    in_flight_.insert(agent);
    return Pass(this, agent);
  }

  // Notes that `sequence` of `agent` is stored (keeps the highest).
  void Stored(const std::string& agent, uint64_t sequence) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t& last = stored_[agent];
    last = std::max(last, sequence);
  }

  // Every agent's highest stored sequence.
  std::vector<std::pair<std::string, uint64_t>> StoredSequences() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {stored_.begin(), stored_.end()};
  }

 private:
  void Leave(const std::string& agent) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.erase(agent);
    }
    cv_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, uint64_t> stored_;
  std::unordered_set<std::string> in_flight_;
};

}  // namespace warpscope::storage
