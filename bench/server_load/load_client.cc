#include "bench/server_load/load_client.h"

#include <httplib.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "bench/server_load/batch_encoder.h"

namespace warpscope::bench {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double SelfCpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

// "stored_samples":N in the ingest answer; -1 when absent.
int64_t JsonInt(const std::string& body, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = body.find(needle);
  if (at == std::string::npos) return -1;
  return std::strtoll(body.c_str() + at + needle.size(), nullptr, 10);
}

// Hands out (node, window) pairs so each node's windows go out in order and
// at most one of a node's batches is in flight; nodes advance together
// (the node furthest behind goes first), like a fleet that uploads every 10 s.
// Shared by the poster threads; all state under mu_.
class NodeScheduler {
 public:
  NodeScheduler(int nodes, int64_t windows) : next_(nodes, 0), busy_(nodes, false), windows_(windows) {}

  // False when every window of every node has been handed out (or on abort).
  bool Take(int* node, int64_t* window) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (aborted_) return false;
      int best = -1;
      bool any_left = false;
      for (size_t n = 0; n < next_.size(); ++n) {
        if (next_[n] >= windows_) continue;
        any_left = true;
        if (!busy_[n] && (best < 0 || next_[n] < next_[best])) best = static_cast<int>(n);
      }
      if (!any_left) return false;
      if (best >= 0) {
        busy_[best] = true;
        *node = best;
        *window = next_[best];
        return true;
      }
      cv_.wait(lock);  // every node with windows left is in flight on another thread
    }
  }
  void Done(int node) {
    std::lock_guard<std::mutex> lock(mu_);
    busy_[node] = false;
    ++next_[node];
    cv_.notify_all();
  }
  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> next_;
  std::vector<bool> busy_;
  const int64_t windows_;
  bool aborted_ = false;
};

}  // namespace

StatusOr<ServerAddress> ParseServerUrl(const std::string& url, const std::string& token) {
  ServerAddress a;
  a.token = token;
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0)
    rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    return InvalidArgumentError("--server-url: only http:// is supported");
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || rest.find('/') != std::string::npos) {
    return InvalidArgumentError("--server-url: expected http://HOST:PORT, found \"" + url + "\"");
  }
  a.host = rest.substr(0, colon);
  a.port = std::atoi(rest.c_str() + colon + 1);
  if (a.port <= 0 || a.port > 65535) return InvalidArgumentError("--server-url: bad port in \"" + url + "\"");
  return a;
}

HttpAnswer TimedGet(const ServerAddress& server, const std::string& path_and_query) {
  httplib::Client client(server.host, server.port);
  client.set_read_timeout(600, 0);
  httplib::Headers headers;
  if (!server.token.empty()) headers.emplace("Authorization", "Bearer " + server.token);
  HttpAnswer answer;
  const double begin = Now();
  auto r = client.Get(path_and_query.c_str(), headers);
  answer.ms = (Now() - begin) * 1000;
  if (r) {
    answer.status = r->status;
    answer.body = std::move(r->body);
  } else {
    answer.body = "no answer: " + httplib::to_string(r.error());
  }
  return answer;
}

BackfillResult RunBackfill(const FleetModel& fleet, const ServerAddress& server, const BackfillOptions& options) {
  const int nodes = fleet.nodes();
  const int64_t window_ns = fleet.options().window_ns;
  BackfillResult result;
  result.window_values.assign(static_cast<size_t>(nodes) * options.windows, 0);
  NodeScheduler scheduler(nodes, options.windows);
  std::mutex result_mu;  // guards result's counters, latencies and error from the poster threads
  std::atomic<int64_t> rows_done{0}, batches_done{0};
  std::atomic<bool> finished{false};

  const double cpu_begin = SelfCpuSeconds();
  const double begin = Now();
  auto poster = [&] {
    BatchEncoder encoder(fleet, options.zstd_level);
    httplib::Client client(server.host, server.port);
    client.set_keep_alive(true);
    client.set_read_timeout(600, 0);
    client.set_write_timeout(600, 0);
    httplib::Headers headers = {{"Content-Encoding", "zstd"}};
    if (!server.token.empty()) headers.emplace("Authorization", "Bearer " + server.token);
    std::vector<WindowRow> rows;
    BackfillResult local;
    int node;
    int64_t w;
    while (scheduler.Take(&node, &w)) {
      const int64_t window = options.first_window + w;
      fleet.SampleWindow(node, window, &rows);
      const std::string agent_id = options.agent_prefix + fleet.NodeName(node);
      const std::string& body = encoder.Encode(node, agent_id, static_cast<uint64_t>(w + 1), window * window_ns, rows);
      int64_t values = 0;
      for (const WindowRow& r : rows) values += r.value;
      std::string failure;
      for (int attempt = 0;; ++attempt) {
        const double sent = Now();
        auto r = client.Post("/api/v1/ingest", headers, body, "application/x-protobuf");
        const double ms = (Now() - sent) * 1000;
        const int status = r ? r->status : 0;
        if (status == 200) {
          const int64_t stored = JsonInt(r->body, "stored_samples");
          if (r->body.find("\"duplicate\":true") != std::string::npos)
            ++local.duplicates;
          else if (stored != static_cast<int64_t>(rows.size()))
            ++local.stored_mismatches;
          local.latencies_ms.push_back(ms);
          break;
        }
        // Overload and dropped connections: back off and re-send, as the agent's spool would.
        if ((status == 0 || status == 429 || status == 503) && attempt < 30) {
          ++local.retries;
          std::this_thread::sleep_for(std::chrono::milliseconds(100 * (1 + attempt)));
          continue;
        }
        char head[256];
        snprintf(head, sizeof(head),
                 "POST /api/v1/ingest (agent_id=%s sequence=%lld start=%lld ns, %zu samples, %zu label sets, "
                 "%zu stacks, %zu locations, %zu raw bytes, %zu zstd bytes, attempt %d) -> ",
                 agent_id.c_str(), static_cast<long long>(w + 1), static_cast<long long>(window * window_ns),
                 rows.size(), encoder.counts().label_sets, encoder.counts().stacks, encoder.counts().locations,
                 encoder.raw().size(), body.size(), attempt + 1);
        failure = head + (r ? "HTTP " + std::to_string(status) + " " + r->body
                            : "no answer (" + httplib::to_string(r.error()) + ")");
        break;
      }
      if (!failure.empty()) {
        std::lock_guard<std::mutex> lock(result_mu);
        if (result.error.empty()) result.error = failure;
        scheduler.Abort();
        break;
      }
      ++local.batches;
      local.rows += static_cast<int64_t>(rows.size());
      local.sample_values += values;
      local.raw_bytes += static_cast<int64_t>(encoder.raw().size());
      local.wire_bytes += static_cast<int64_t>(body.size());
      result.window_values[static_cast<size_t>(node) * options.windows + w] = values;  // one writer per slot
      rows_done += static_cast<int64_t>(rows.size());
      ++batches_done;
      scheduler.Done(node);
    }
    std::lock_guard<std::mutex> lock(result_mu);
    result.batches += local.batches;
    result.rows += local.rows;
    result.sample_values += local.sample_values;
    result.raw_bytes += local.raw_bytes;
    result.wire_bytes += local.wire_bytes;
    result.duplicates += local.duplicates;
    result.retries += local.retries;
    result.stored_mismatches += local.stored_mismatches;
    result.latencies_ms.insert(result.latencies_ms.end(), local.latencies_ms.begin(), local.latencies_ms.end());
  };

  std::mutex progress_mu;
  std::condition_variable progress_cv;
  std::thread progress([&] {
    const int64_t total_batches = options.windows * nodes;
    std::unique_lock<std::mutex> lock(progress_mu);
    while (options.progress && !progress_cv.wait_for(lock, std::chrono::seconds(5), [&] { return finished.load(); })) {
      const double t = Now() - begin;
      fprintf(stderr, "server_load: %6.0f s  %lld/%lld batches  %.1f M rows  %.0f rows/s\n", t,
              static_cast<long long>(batches_done.load()), static_cast<long long>(total_batches),
              rows_done.load() / 1e6, rows_done.load() / t);
    }
  });
  std::vector<std::thread> threads;
  for (int c = 0; c < options.clients; ++c) threads.emplace_back(poster);
  for (auto& t : threads) t.join();
  result.wall_seconds = Now() - begin;
  result.client_cpu_seconds = SelfCpuSeconds() - cpu_begin;
  {
    std::lock_guard<std::mutex> lock(progress_mu);
    finished = true;
  }
  progress_cv.notify_all();
  progress.join();
  return result;
}

}  // namespace warpscope::bench
