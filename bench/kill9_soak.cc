// kill9_soak: kill -9 the real warpscope-server again and again while agents
// ingest, then check that every acknowledged batch is stored exactly once
// with its exact value. Not a test (it runs for minutes); results go to
// docs/benchmarks.md.
//
//   build/bin/kill9_soak [--kills 20] [--agents 4] [--min-interval 0.05] [--max-interval 8]
//                        [--long-intervals 3] [--long-interval 65] [--seed N]
//                        [--server-bin PATH] [--server-arg FLAG]... [--data-dir DIR]
//                        [--disk-full-mb 64 | --no-disk-full] [--disk-full-dir DIR]
//   build/bin/kill9_soak --kills 5 --long-intervals 0 --max-interval 3 --disk-full-mb 32   # ~1 minute
//
// Kill loop: --agents threads each post batches of 1-3 stacks, every stack's
// leaf named after its (agent, sequence, stack) so that each acknowledged
// batch can be found again, with a random value per stack. A batch is re-sent
// until it is acknowledged (200), as the agent's uploader does; a re-send
// answered "duplicate" was stored by an attempt whose answer was lost. The
// server is SIGKILLed --kills times, at moments drawn log-uniformly from
// [--min-interval, --max-interval] seconds after its restart (so short ones,
// kills right after a restart, are common), except --long-intervals of them
// that last --long-interval seconds: the embedded store compacts every 60 s
// (a fixed period; the server has no flag for it or for the 5 s flush, so a
// shorter run sets --long-intervals 0 or passes a flag of a newer server with
// --server-arg), and the segment count before and after such an interval
// shows whether compaction ran. After the last restart the agents stop (each
// finishes its batch in flight; one still unacknowledged after 120 s is
// abandoned and counted) and collapsed-profile queries over the whole run,
// one per agent, must hold every acknowledged batch exactly once with its
// exact values, and nothing else.
//
// Disk-full phase (needs root to mount a tmpfs of --disk-full-mb, or
// --disk-full-dir on a small filesystem the caller made): a fresh server on
// it, a filler file takes all but a few MB, the agents ingest until the
// server answers 507 for 8 s (queries must still answer 200), the filler
// is removed, ingest must resume (the 507'd batches re-sent and acknowledged)
// and flushes complete; then kill -9, restart, and the same exact-once check.
//
// Threading: main runs the kill loop; each agent is one thread that only
// shares its counters and acknowledged batches under SoakAgents::mu_.
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::bench {
namespace {

using testing::BatchFactory;
using testing::HttpGet;
using testing::HttpResult;
using testing::PostBatch;
using testing::ServerProcess;

constexpr char kToken[] = "kill9-soak-token";
constexpr int64_t kSec = 1'000'000'000;

double NowS() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
void SleepS(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

struct Options {
  std::string server_bin;
  std::vector<std::string> server_args;
  std::string data_dir;
  int kills = 20;
  int agents = 4;
  double min_interval_s = 0.05;
  double max_interval_s = 8;
  int long_intervals = 3;
  double long_interval_s = 65;
  uint64_t seed = 0;
  bool disk_full = true;
  int disk_full_mb = 64;
  std::string disk_full_dir;
};

// One acknowledged batch: what the query must find.
struct AckedBatch {
  int agent = 0;
  uint64_t sequence = 0;
  std::vector<std::pair<std::string, int64_t>> leaves;  // leaf frame, value
};

// The agent threads. Each owns its sequence and random stream; counters and
// acknowledged batches are shared under mu_.
class SoakAgents {
 public:
  // `leaf_padding` lengthens every leaf name (the disk-full phase fills the
  // disk faster with new strings); `stacks` is the most stacks per batch.
  SoakAgents(std::atomic<int>* port, std::string node, int agents, int stacks, size_t leaf_padding, uint64_t seed)
      : port_(port), node_(std::move(node)), stacks_(stacks), padding_(leaf_padding, 'p') {
    running_ = agents;
    for (int a = 0; a < agents; ++a) {
      threads_.emplace_back([this, a, seed] {
        Run(a, seed * 1000 + a);
        --running_;
      });
    }
  }
  ~SoakAgents() { Stop(); }

  // Agents finish the batch in flight (re-sending until acknowledged) and
  // stop. A batch still unacknowledged after `deadline_s` is dropped and
  // counted as abandoned (the server is gone, or its disk stays full).
  void Stop(double deadline_s = 120) {
    stop_ = true;
    const double until = NowS() + deadline_s;
    while (NowS() < until && running_ > 0) SleepS(0.05);
    abandon_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  struct Counters {
    uint64_t acked = 0, duplicates_on_resend = 0, duplicates_on_first_send = 0, connection_errors = 0, attempts = 0,
             abandoned = 0;
    std::map<int, uint64_t> other_statuses;  // non-200 answers
    std::map<int, std::string> first_bodies;  // the first body of each
  };
  Counters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    return counters_;
  }
  std::vector<AckedBatch> acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  // The node label of every batch: the query selects the run by it.
  const std::string& node() const { return node_; }

 private:
  void Run(int agent, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const std::string agent_id = node_ + "-agent-" + std::to_string(agent);
    for (uint64_t seq = 1; !stop_; ++seq) {
      const int64_t now_s = WallNs() / kSec * kSec;
      BatchFactory f(agent_id, seq, now_s - kSec, now_s);
      AckedBatch batch{agent, seq, {}};
      const int stacks = 1 + static_cast<int>(rng() % stacks_);
      for (int k = 0; k < stacks; ++k) {
        const std::string leaf = "leaf_a" + std::to_string(agent) + "_s" + std::to_string(seq) + "_k" +
                                 std::to_string(k) + (padding_.empty() ? "" : "_" + padding_);
        const int64_t value = 1 + static_cast<int64_t>(rng() % 1000);
        f.Add("main;soak_ingest;" + leaf, {{"node", node_}, {"agent", std::to_string(agent)}}, value, now_s);
        batch.leaves.push_back({leaf, value});
      }
      for (int attempt = 0;; ++attempt) {
        if (abandon_) {
          std::lock_guard<std::mutex> lock(mu_);
          ++counters_.abandoned;
          break;
        }
        const HttpResult r = PostBatch(port_->load(), f.batch(), kToken);
        std::unique_lock<std::mutex> lock(mu_);
        ++counters_.attempts;
        if (r.status == 200) {
          const bool duplicate = r.body.find("\"duplicate\":true") != std::string::npos ||
                                 r.body.find("\"duplicate\": true") != std::string::npos;
          if (duplicate) ++(attempt > 0 ? counters_.duplicates_on_resend : counters_.duplicates_on_first_send);
          ++counters_.acked;
          acked_.push_back(std::move(batch));
          break;
        }
        if (r.status == 0) {
          ++counters_.connection_errors;
        } else {
          ++counters_.other_statuses[r.status];
          counters_.first_bodies.emplace(r.status, r.body.substr(0, 300));
        }
        lock.unlock();
        SleepS(std::min(0.02 * (attempt + 1), 0.2));  // the server is down, restarting, or its disk is full
      }
    }
  }

  std::atomic<int>* port_;
  const std::string node_;
  const int stacks_;
  const std::string padding_;
  std::atomic<bool> stop_{false}, abandon_{false};
  std::atomic<int> running_{0};
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  Counters counters_;            // guarded by mu_
  std::vector<AckedBatch> acked_;  // guarded by mu_
};

// What the collapsed profile holds of the acknowledged batches.
struct Verification {
  uint64_t acked = 0, found = 0, missing = 0, stored_twice = 0, wrong_value = 0, partial = 0, unknown_leaves = 0;
  int query_status = 0;
  double query_s = 0;
  bool ok() const { return query_status == 200 && found == acked && unknown_leaves == 0; }
};

// One collapsed query per agent (each answer a quarter of the run's stacks)
// over the whole run; every acknowledged batch must be there once, exactly.
Verification Verify(int port, const std::string& node, int agents, const std::vector<AckedBatch>& acked,
                    int64_t from_ns) {
  Verification v;
  v.acked = acked.size();
  v.query_status = 200;
  std::map<std::string, int64_t> stored;  // leaf -> value
  const std::string range = "from=" + std::to_string(from_ns / 1'000'000 - 60'000) +
                            "&to=" + std::to_string(WallNs() / 1'000'000 + 60'000);
  for (int agent = 0; agent < agents; ++agent) {
    const std::string selector =
        testing::UrlEncode("{node=\"" + node + "\",agent=\"" + std::to_string(agent) + "\"}");
    const double begin = NowS();
    const HttpResult r = HttpGet(port, "/api/v1/profile?format=collapsed&" + range + "&selector=" + selector, kToken);
    v.query_s += NowS() - begin;
    if (r.status != 200) {
      v.query_status = r.status;
      std::fprintf(stderr, "verification query answered %d: %.300s\n", r.status, r.body.c_str());
      return v;
    }
    size_t start = 0;
    while (start < r.body.size()) {
      const size_t end = std::min(r.body.find('\n', start), r.body.size());
      const std::string line = r.body.substr(start, end - start);
      start = end + 1;
      const size_t space = line.rfind(' '), semi = line.rfind(';', space);
      if (space == std::string::npos) continue;
      const std::string leaf = line.substr(semi == std::string::npos ? 0 : semi + 1, space - semi - 1);
      stored[leaf] += std::atoll(line.c_str() + space + 1);
    }
  }
  std::set<std::string> expected;
  for (const AckedBatch& b : acked) {
    int exact = 0, twice = 0, absent = 0;
    for (const auto& [leaf, value] : b.leaves) {
      expected.insert(leaf);
      auto it = stored.find(leaf);
      if (it == stored.end()) ++absent;
      else if (it->second == value) ++exact;
      else if (it->second == 2 * value) ++twice;
    }
    const int n = static_cast<int>(b.leaves.size());
    if (exact == n) ++v.found;
    else if (absent == n) ++v.missing;
    else if (twice == n) ++v.stored_twice;
    else if (exact + absent == n) ++v.partial;
    else ++v.wrong_value;
    if (exact != n && v.missing + v.stored_twice + v.wrong_value + v.partial <= 10) {
      std::fprintf(stderr, "batch agent %d seq %" PRIu64 ": %d of %d stacks exact, %d twice, %d absent\n", b.agent,
                   b.sequence, exact, n, twice, absent);
    }
  }
  for (const auto& [leaf, value] : stored) v.unknown_leaves += expected.count(leaf) == 0;
  return v;
}

void PrintVerification(const char* what, const Verification& v) {
  std::printf("| %s: batches acknowledged | %" PRIu64 " |\n| found exactly once, exact values | %" PRIu64
              " |\n| missing | %" PRIu64 " |\n| stored twice | %" PRIu64 " |\n| wrong value | %" PRIu64
              " |\n| some stacks missing | %" PRIu64 " |\n| stored but never acknowledged (unknown leaves) | %" PRIu64
              " |\n| verification queries (one per agent) | %d in %.2f s |\n",
              what, v.acked, v.found, v.missing, v.stored_twice, v.wrong_value, v.partial, v.unknown_leaves,
              v.query_status, v.query_s);
}

void PrintCounters(const SoakAgents::Counters& c) {
  std::printf("| requests sent | %" PRIu64 " |\n| duplicates answered on re-send | %" PRIu64
              " |\n| duplicates answered on a first send (wrong) | %" PRIu64 " |\n| connection errors | %" PRIu64
              " |\n| batches abandoned unacknowledged at the end | %" PRIu64 " |\n",
              c.attempts, c.duplicates_on_resend, c.duplicates_on_first_send, c.connection_errors, c.abandoned);
  for (const auto& [status, n] : c.other_statuses) std::printf("| answers %d | %" PRIu64 " |\n", status, n);
}

size_t CountSegments(const std::string& data_dir) {
  size_t n = 0;
  if (DIR* d = opendir((data_dir + "/segments").c_str())) {
    while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, "seg-", 4) == 0;
    closedir(d);
  }
  return n;
}

std::unique_ptr<ServerProcess> StartServer(const Options& o, const std::string& data_dir, int port) {
  std::vector<std::string> args = {"--token", kToken};
  args.insert(args.end(), o.server_args.begin(), o.server_args.end());
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto s = ServerProcess::Start(o.server_bin, data_dir, args, port);
    if (s.ok()) return std::move(s).value();
    std::fprintf(stderr, "server start failed (attempt %d): %s\n", attempt + 1, s.status().message().c_str());
    SleepS(1);
  }
  return nullptr;
}

std::vector<std::string> FlushFailures(const std::string& log) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < log.size()) {
    const size_t end = std::min(log.find('\n', start), log.size());
    const std::string line = log.substr(start, end - start);
    if (line.find("flush: ") != std::string::npos || line.find("compaction: ") != std::string::npos) {
      out.push_back(line);
    }
    start = end + 1;
  }
  return out;
}

// The kill -9 loop; true when every acknowledged batch was found exactly.
bool KillLoop(const Options& o) {
  const std::string data_dir = o.data_dir.empty() ? testing::MakeTempDir() + "/data" : o.data_dir;
  std::mt19937_64 rng(o.seed);
  std::set<int> long_at;  // which intervals are long
  while (static_cast<int>(long_at.size()) < std::min(o.long_intervals, o.kills)) long_at.insert(rng() % o.kills);
  std::printf("## kill -9 loop: %d kills, %d agents, intervals %.2f-%.2f s (log-uniform), %zu of %.0f s, seed %" PRIu64
              ", data %s\n\n",
              o.kills, o.agents, o.min_interval_s, o.max_interval_s, long_at.size(), o.long_interval_s, o.seed,
              data_dir.c_str());
  std::unique_ptr<ServerProcess> server = StartServer(o, data_dir, 0);
  if (!server) return false;
  std::atomic<int> port{server->port()};
  const int64_t from_ns = WallNs();
  const double begin = NowS();
  SoakAgents agents(&port, "soak", o.agents, 3, 0, o.seed);
  std::vector<double> restarts, intervals;
  std::uniform_real_distribution<double> unit(0, 1);
  for (int k = 0; k < o.kills; ++k) {
    const double interval = long_at.count(k) ? o.long_interval_s
                                             : o.min_interval_s * std::pow(o.max_interval_s / o.min_interval_s, unit(rng));
    intervals.push_back(interval);
    const size_t segments_before = CountSegments(data_dir);
    SleepS(interval);
    const size_t segments_at_kill = CountSegments(data_dir);
    const uint64_t acked_at_kill = agents.counters().acked;
    server->Kill();
    server = StartServer(o, data_dir, port.load());
    if (!server) {
      std::fprintf(stderr, "the server does not start again after kill %d\n", k + 1);
      agents.Stop(/*deadline_s=*/0);
      return false;
    }
    restarts.push_back(server->start_seconds());
    std::fprintf(stderr, "kill %2d after %6.2f s: %" PRIu64 " acked so far, segments %zu -> %zu, restart %.2f s\n",
                 k + 1, interval, acked_at_kill, segments_before, segments_at_kill, server->start_seconds());
  }
  agents.Stop();
  const double soak_s = NowS() - begin;
  const SoakAgents::Counters counters = agents.counters();
  const Verification v = Verify(server->port(), agents.node(), o.agents, agents.acked(), from_ns);
  std::vector<std::string> flush_failures = FlushFailures(server->log());
  std::sort(restarts.begin(), restarts.end());
  std::printf("| | |\n|---|---|\n| run | %.0f s, %d kills, %zu intervals over 60 s, %zu under 0.3 s |\n", soak_s,
              o.kills, static_cast<size_t>(std::count_if(intervals.begin(), intervals.end(), [](double i) { return i > 60; })),
              static_cast<size_t>(std::count_if(intervals.begin(), intervals.end(), [](double i) { return i < 0.3; })));
  PrintVerification("kill loop", v);
  PrintCounters(counters);
  if (!restarts.empty()) {
    std::printf("| restart (fork to serving) min / median / max | %.2f / %.2f / %.2f s |\n", restarts.front(),
                restarts[restarts.size() / 2], restarts.back());
  }
  std::printf("| flush/compaction failures in the last server's log | %zu |\n\n", flush_failures.size());
  for (const std::string& line : flush_failures) std::fprintf(stderr, "server log: %s\n", line.c_str());
  const testing::ServerExit exit = server->Stop(60);
  if (exit.exit_code != 0) std::fprintf(stderr, "the last server exited with %d (signal %d)\n", exit.exit_code, exit.signal);
  if (o.data_dir.empty()) testing::RunProcess({"rm", "-rf", data_dir.substr(0, data_dir.rfind('/'))});
  return v.ok() && counters.duplicates_on_first_send == 0 && counters.abandoned == 0;
}

// The disk-full phase; true when it ran and found every acknowledged batch.
bool DiskFull(const Options& o) {
  std::string fs = o.disk_full_dir;
  bool mounted = false;
  const std::string base = testing::MakeTempDir();
  if (fs.empty()) {
    fs = base + "/small";
    mkdir(fs.c_str(), 0755);
    const std::string size = "size=" + std::to_string(o.disk_full_mb) + "m";
    if (mount("tmpfs", fs.c_str(), "tmpfs", 0, size.c_str()) != 0) {
      std::printf("## disk full: skipped: cannot mount a tmpfs (%s); run as root or give --disk-full-dir\n\n",
                  std::strerror(errno));
      testing::RunProcess({"rm", "-rf", base});
      return true;
    }
    mounted = true;
  }
  const std::string data_dir = fs + "/data", filler = fs + "/filler";
  std::printf("## disk full: %s (%s)\n\n", fs.c_str(), mounted ? ("tmpfs of " + std::to_string(o.disk_full_mb) + " MiB").c_str() : "given");
  bool ok = false;
  std::unique_ptr<ServerProcess> server = StartServer(o, data_dir, 0);
  if (server) {
    std::atomic<int> port{server->port()};
    // The filler leaves 3 MiB: a few hundred batches of new (long) leaf names.
    struct statvfs st {};
    statvfs(fs.c_str(), &st);
    const uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    const uint64_t fill = free_bytes > (3u << 20) ? free_bytes - (3u << 20) : 0;
    {
      std::ofstream out(filler, std::ios::binary);
      const std::string chunk(1 << 20, 'f');
      for (uint64_t written = 0; written < fill && out; written += chunk.size()) {
        out.write(chunk.data(), static_cast<std::streamsize>(std::min<uint64_t>(chunk.size(), fill - written)));
      }
    }
    const int64_t from_ns = WallNs();
    const double begin = NowS();
    SoakAgents agents(&port, "diskfull", o.agents, 20, 200, o.seed + 1);
    // Until the server has answered 507 for 8 s (or 120 s pass): longer than
    // the 5 s flush period, so a flush runs into the full disk too.
    double first_507 = 0;
    while (NowS() - begin < 120) {
      SleepS(0.2);
      const SoakAgents::Counters c = agents.counters();
      const uint64_t n507 = c.other_statuses.count(507) ? c.other_statuses.at(507) : 0;
      if (n507 > 0 && first_507 == 0) first_507 = NowS();
      if (first_507 > 0 && NowS() - first_507 > 8) break;
    }
    const SoakAgents::Counters at_full = agents.counters();
    const HttpResult status = HttpGet(port.load(), "/api/v1/status", kToken);
    const HttpResult query = HttpGet(port.load(), "/api/v1/profile?from=now-10m&to=now%2B1m&max_nodes=10", kToken);
    const size_t flush_failures_full = FlushFailures(server->log()).size();
    // Free the space; ingest must resume (the 507'd batches acknowledged on
    // re-send). The agents stop after 200 more batches: the space freed is
    // a few seconds of their new strings, and the check is that flushes
    // complete, not that the disk fills again.
    unlink(filler.c_str());
    const double freed = NowS();
    while (NowS() - freed < 60 && agents.counters().acked < at_full.acked + 200) SleepS(0.05);
    const double resumed_s = NowS() - freed;
    agents.Stop(/*deadline_s=*/60);
    const size_t log_mark = server->log().size();
    SleepS(12);  // two flush periods after the last batch
    const std::vector<std::string> later_failures = FlushFailures(server->log().substr(log_mark));
    const size_t segments = CountSegments(data_dir);
    const uint64_t acked_before_kill = agents.counters().acked;
    server->Kill();
    server = StartServer(o, data_dir, port.load());
    if (server) {
      const double restart_s = server->start_seconds();
      const Verification v = Verify(server->port(), agents.node(), o.agents, agents.acked(), from_ns);
      const SoakAgents::Counters c = agents.counters();
      std::printf("| | |\n|---|---|\n| first 507 after | %.1f s of ingest |\n", first_507 > 0 ? first_507 - begin : -1.0);
      std::printf("| acknowledged when the disk was full | %" PRIu64 " |\n", at_full.acked);
      for (const auto& [code, body] : at_full.first_bodies) std::printf("| first %d answer | `%s` |\n", code, body.c_str());
      std::printf("| while full: /api/v1/status, /api/v1/profile | %d, %d |\n", status.status, query.status);
      std::printf("| flush failures logged in the 8 s of full disk | %zu |\n", flush_failures_full);
      std::printf("| space freed: 200 more batches acknowledged after | %.1f s |\n", resumed_s);
      std::printf("| flush/compaction failures logged in the 12 s after the agents stopped | %zu |\n",
                  later_failures.size());
      std::printf("| segments before the kill -9 | %zu |\n", segments);
      std::printf("| acknowledged before the kill -9 | %" PRIu64 " |\n| restart | %.2f s |\n", acked_before_kill,
                  restart_s);
      PrintVerification("disk full", v);
      PrintCounters(c);
      std::printf("\n");
      for (const std::string& line : later_failures) std::fprintf(stderr, "server log after freeing: %s\n", line.c_str());
      ok = v.ok() && first_507 > 0 && status.status == 200 && query.status == 200 && later_failures.empty() &&
           c.duplicates_on_first_send == 0 && c.abandoned == 0;
      server->Stop(60);
    } else {
      std::printf("the server did not start again after the kill in the disk-full phase\n\n");
    }
  }
  if (mounted) umount2(fs.c_str(), MNT_DETACH);
  testing::RunProcess({"rm", "-rf", base});
  return ok;
}

int Usage() {
  std::fprintf(stderr,
               "usage: kill9_soak [--kills N] [--agents N] [--min-interval S] [--max-interval S]\n"
               "                  [--long-intervals N] [--long-interval S] [--seed N] [--server-bin PATH]\n"
               "                  [--server-arg FLAG]... [--data-dir DIR] [--disk-full-mb N | --no-disk-full]\n"
               "                  [--disk-full-dir DIR]\n");
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  o.seed = static_cast<uint64_t>(WallNs());
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  const std::string self_path = n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  o.server_bin = self_path.substr(0, self_path.rfind('/') + 1) + "warpscope-server";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", flag.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (flag == "--kills") o.kills = std::atoi(value().c_str());
    else if (flag == "--agents") o.agents = std::atoi(value().c_str());
    else if (flag == "--min-interval") o.min_interval_s = std::atof(value().c_str());
    else if (flag == "--max-interval") o.max_interval_s = std::atof(value().c_str());
    else if (flag == "--long-intervals") o.long_intervals = std::atoi(value().c_str());
    else if (flag == "--long-interval") o.long_interval_s = std::atof(value().c_str());
    else if (flag == "--seed") o.seed = std::strtoull(value().c_str(), nullptr, 0);
    else if (flag == "--server-bin") o.server_bin = value();
    else if (flag == "--server-arg") o.server_args.push_back(value());
    else if (flag.rfind("--server-arg=", 0) == 0) o.server_args.push_back(flag.substr(13));
    else if (flag == "--data-dir") o.data_dir = value();
    else if (flag == "--disk-full-mb") o.disk_full_mb = std::atoi(value().c_str());
    else if (flag == "--disk-full-dir") o.disk_full_dir = value();
    else if (flag == "--no-disk-full") o.disk_full = false;
    else return Usage();
  }
  if (o.kills < 1 || o.agents < 1 || o.min_interval_s <= 0 || o.max_interval_s < o.min_interval_s ||
      o.disk_full_mb < 8) {
    return Usage();
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows as it comes when stdout is a pipe
  std::printf("kill9_soak: %s, seed %" PRIu64 "\n\n", o.server_bin.c_str(), o.seed);
  const bool kill_ok = KillLoop(o);
  const bool disk_ok = o.disk_full ? DiskFull(o) : true;
  std::printf("result: kill loop %s, disk full %s\n", kill_ok ? "PASS" : "FAIL",
              o.disk_full ? (disk_ok ? "PASS" : "FAIL") : "not run");
  return kill_ok && disk_ok ? 0 : 1;
}

}  // namespace
}  // namespace warpscope::bench

int main(int argc, char** argv) { return warpscope::bench::Main(argc, argv); }
