// What one flame-graph query costs in memory and time on the embedded store,
// with the server_load fleet (bench/server_load/fleet_model.h: 20 nodes,
// ~300 series, ~14,600 distinct stacks of depth 20-40) as the data.
//
//   query_memory_bench ingest DIR [--hours H]     fill DIR with H hours of the fleet
//   query_memory_bench query DIR [--hours H] [--range-hours R] [--node N] [--runs K] [--trim]
//
// `query` opens the store in a fresh process (as a restarted server would:
// the stack cache starts cold), then runs SelectProfile + RenderFlameGraphJson
// over the last R hours (all nodes, or {node="node-N"}) K times, each on a new
// thread as an HTTP worker would. Before each run the peak RSS is reset
// (/proc/self/clear_refs "5"), so "peak" is that run's own VmHWM; "over idle"
// is peak minus the RSS of the open, idle store. --trim calls malloc_trim(0)
// after each run (what "rss after" shows is then what the process keeps).
// Results go to docs/benchmarks.md.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "bench/server_load/batch_encoder.h"
#include "bench/server_load/fleet_model.h"
#include "query/flame_graph.h"
#include "storage/embedded/embedded_store.h"

namespace warpscope {
namespace {

constexpr int64_t kFirstWindow = 180'000'000;  // 2027-01-15, any fixed start works

// A field of /proc/self/status in kB ("VmRSS", "VmHWM").
long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
  }
  return -1;
}

// -1 for a profile without a frame table (the tool also builds against the
// MergedProfile before it had one, for side-by-side runs).
template <typename Profile>
long FrameTableSize(const Profile& p) {
  if constexpr (requires { p.frames.size(); }) {
    return static_cast<long>(p.frames.size());
  } else {
    return -1;
  }
}

void ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

embedded::EmbeddedStoreOptions StoreOptions(const std::string& dir) {
  embedded::EmbeddedStoreOptions o;
  o.data_dir = dir;
  o.retention_ns = 0;
  o.background = false;  // nothing runs beside the measured query
  return o;
}

int Ingest(const std::string& dir, double hours) {
  bench::FleetModel fleet(bench::FleetOptions{});
  auto store = embedded::EmbeddedProfileStore::Open(StoreOptions(dir));
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const int64_t windows = static_cast<int64_t>(hours * 3600e9 / fleet.options().window_ns);
  bench::BatchEncoder encoder(fleet, 1);
  std::vector<bench::WindowRow> rows;
  uint64_t samples = 0;
  const double start = Now();
  for (int64_t w = 0; w < windows; ++w) {
    for (int node = 0; node < fleet.nodes(); ++node) {
      const int64_t window = kFirstWindow + w;
      fleet.SampleWindow(node, window, &rows);
      encoder.Encode(node, "agent-" + fleet.NodeName(node), static_cast<uint64_t>(w + 1),
                     window * fleet.options().window_ns, rows);
      v1::IngestBatch batch;
      if (!batch.ParseFromString(encoder.raw())) return 1;
      auto r = (*store)->Ingest(batch);
      if (!r.ok()) {
        std::fprintf(stderr, "ingest: %s\n", r.status().ToString().c_str());
        return 1;
      }
      samples += r->samples;
    }
    if ((w + 1) % 60 == 0 && !(*store)->FlushNow().ok()) return 1;
  }
  if (!(*store)->FlushNow().ok() || !(*store)->CompactNow().ok()) return 1;
  std::printf("ingested %lld windows x %d nodes: %llu rows, %zu distinct stacks in the model, %.1f s\n",
              static_cast<long long>(windows), fleet.nodes(), static_cast<unsigned long long>(samples),
              fleet.distinct_stacks(), Now() - start);
  return 0;
}

int Query(const std::string& dir, double hours, double range_hours, int node, int runs, bool trim) {
  auto store = embedded::EmbeddedProfileStore::Open(StoreOptions(dir));
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const int64_t window_ns = bench::FleetOptions{}.window_ns;
  const int64_t end_ns = (kFirstWindow + static_cast<int64_t>(hours * 3600e9 / window_ns)) * window_ns;
  storage::ProfileQuery q;
  q.to_ns = end_ns;
  q.from_ns = end_ns - static_cast<int64_t>(range_hours * 3600e9);
  if (node >= 0) q.selector = *Selector::Parse("{node=\"node-" + std::to_string(node) + "\"}");
  const long idle_kb = StatusKb("VmRSS");
  std::printf("query last %.2f h, %s: idle store %ld MB\n", range_hours,
              node >= 0 ? ("node-" + std::to_string(node)).c_str() : "all nodes", idle_kb / 1024);
  for (int run = 0; run < runs; ++run) {
    ResetPeakRss();
    const long before_kb = StatusKb("VmRSS");
    double select_s = 0, render_s = 0;
    size_t stacks = 0, json_bytes = 0, json_hash = 0;
    long frames = -1;
    int64_t total = 0;
    bool ok = true;
    std::thread worker([&] {
      const double t0 = Now();
      StatusOr<storage::MergedProfile> p = (*store)->SelectProfile(q);
      const double t1 = Now();
      if (!p.ok()) {
        ok = false;
        return;
      }
      const std::string json = query::RenderFlameGraphJson(*p, query::FlameGraphOptions{});
      render_s = Now() - t1;
      select_s = t1 - t0;
      stacks = p->stacks.size();
      total = p->total;
      json_bytes = json.size();
      json_hash = std::hash<std::string>()(json);
      frames = FrameTableSize(*p);
    });
    worker.join();
    if (!ok) return 1;
    if (trim) malloc_trim(0);
    const long peak_kb = StatusKb("VmHWM");
    std::printf(
        "  run %d: select %6.1f ms + render %6.1f ms = %6.1f ms; peak %5ld MB (%+5ld MB over idle); rss after %5ld MB;"
        " %zu stacks, %ld frames in the table, total %lld, JSON %zu bytes hash %016zx (rss before %ld MB)\n",
        run + 1, select_s * 1e3, render_s * 1e3, (select_s + render_s) * 1e3, peak_kb / 1024, (peak_kb - idle_kb) / 1024,
        StatusKb("VmRSS") / 1024, stacks, frames, static_cast<long long>(total), json_bytes, json_hash,
        before_kb / 1024);
  }
  return 0;
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ingest|query DIR [--hours H] [--range-hours R] [--node N] [--runs K] [--trim]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  double hours = 1, range_hours = -1;
  int node = -1, runs = 3;
  bool trim = false;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--hours") hours = std::atof(v), ++i;
    else if (a == "--range-hours") range_hours = std::atof(v), ++i;
    else if (a == "--node") node = std::atoi(v), ++i;
    else if (a == "--runs") runs = std::atoi(v), ++i;
    else if (a == "--trim") trim = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (range_hours < 0) range_hours = hours;
  if (mode == "ingest") return warpscope::Ingest(dir, hours);
  if (mode == "query") return warpscope::Query(dir, hours, range_hours, node, runs, trim);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
