// server_load: ingest and query load on a warpscope server, measured from
// outside, so the embedded store and the ClickHouse store can be
// compared side by side. Not a test; results go to docs/benchmarks.md.
//
//   build/bin/server_load --server-bin build/bin/warpscope-server [--hours 1] [--nodes 20] [--clients 8]
//   build/bin/server_load --server-bin build/bin/warpscope-server --clickhouse [--hours 1]
//   build/bin/server_load --server-url http://HOST:PORT --token T [--server-pid PID] [--data-dir DIR]
//   build/bin/server_load --describe        # the synthetic fleet only, no server
//
// With --server-bin the tool owns the server: it starts it on a fresh data
// dir (--data-dir, default a new /tmp/ws-server-load-*), backfills --hours of
// 10 s windows ending now for every node (each node's windows in order,
// --clients keep-alive connections), reads the server's CPU time from /proc
// before and after, stops it with SIGTERM (the final flush) and measures the
// data dir, then restarts it before each query so the first run of each query
// is cold (process caches empty; the OS page cache is not dropped). With
// --server-url it only posts and queries; CPU needs --server-pid, size needs
// --data-dir (measured while running: no flush). --server-arg passes a flag
// through to the server (repeat it: --server-arg=--retention --server-arg=0).
//
// --clickhouse (with --server-bin) stores into ClickHouse instead: the tool
// starts a private clickhouse-server (Debian's, the same config as the
// tests' ClickHouseInstance, storage/clickhouse/testing/) in a fresh dir
// (--clickhouse-dir to choose it), gives the server --storage
// clickhouse://127.0.0.1:PORT/ws_bench, and reports ClickHouse's CPU time
// (its process, read from /proc like the server's, shown separately and
// added to the server's in the "server + ClickHouse" rate) and its bytes on
// disk (system.parts bytes_on_disk of the database's active parts, fact and
// dictionary tables apart) after the server's stop, and the store's group
// commit line from the server's log at exit (batches, groups, INSERTs).
// Restarting the server before each query empties the server's caches, not
// ClickHouse's.
//
// Queries are flame graphs (format=json) of the last 1 h and 24 h before the
// end of the loaded data (when that much was loaded), all nodes and one node,
// each run 1 + --query-runs times. Answers are checked, not just timed: the
// server's /api/v1/status sample count against the rows sent, and every flame
// graph's "total" against the samples sent for that range and selector.
//
// Output: one markdown table on stdout; progress on stderr.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/server_load/batch_encoder.h"
#include "bench/server_load/fleet_model.h"
#include "bench/server_load/load_client.h"
#include "bench/server_load/server_probe.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/clickhouse/testing/clickhouse_instance.h"
#include "tests/integration/server_process.h"

namespace warpscope::bench {
namespace {

struct Options {
  int nodes = 20;
  double hours = 1;
  int clients = 8;
  uint64_t seed = 1;
  double zipf = 1.35;
  int zstd_level = 3;
  int query_runs = 5;
  bool queries = true;
  bool describe = false;
  bool keep_data = false;
  bool clickhouse = false;
  std::string clickhouse_dir;
  std::string server_bin, data_dir, server_url, token, label;
  std::vector<std::string> server_args;
  pid_t server_pid = 0;
};

const char kUsage[] =
    "usage: server_load (--server-bin PATH [--data-dir DIR] [--keep-data] [--server-arg ARG]...\n"
    "                     [--clickhouse [--clickhouse-dir DIR]]\n"
    "                    | --server-url http://HOST:PORT [--token T] [--server-pid PID] [--data-dir DIR]\n"
    "                    | --describe)\n"
    "                   [--nodes 20] [--hours 1] [--clients 8] [--seed 1] [--zstd-level 3]\n"
    "                   [--query-runs 5] [--no-queries] [--label NAME]\n";

[[noreturn]] void Die(const std::string& message) {
  fprintf(stderr, "server_load: %s\n", message.c_str());
  exit(1);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    const bool has_inline = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) Die(arg + " needs a value\n" + kUsage);
      return argv[++i];
    };
    if (arg == "--nodes")
      o.nodes = std::atoi(next().c_str());
    else if (arg == "--hours")
      o.hours = std::atof(next().c_str());
    else if (arg == "--clients")
      o.clients = std::atoi(next().c_str());
    else if (arg == "--zipf")
      o.zipf = std::atof(next().c_str());
    else if (arg == "--seed")
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (arg == "--zstd-level")
      o.zstd_level = std::atoi(next().c_str());
    else if (arg == "--query-runs")
      o.query_runs = std::atoi(next().c_str());
    else if (arg == "--no-queries")
      o.queries = false;
    else if (arg == "--describe")
      o.describe = true;
    else if (arg == "--keep-data")
      o.keep_data = true;
    else if (arg == "--clickhouse")
      o.clickhouse = true;
    else if (arg == "--clickhouse-dir")
      o.clickhouse_dir = next();
    else if (arg == "--server-bin")
      o.server_bin = next();
    else if (arg == "--server-arg")
      o.server_args.push_back(next());
    else if (arg == "--data-dir")
      o.data_dir = next();
    else if (arg == "--server-url")
      o.server_url = next();
    else if (arg == "--token")
      o.token = next();
    else if (arg == "--server-pid")
      o.server_pid = std::atoi(next().c_str());
    else if (arg == "--label")
      o.label = next();
    else if (arg == "--help" || arg == "-h") {
      fputs(kUsage, stdout);
      exit(0);
    } else {
      Die("unknown argument " + arg + "\n" + kUsage);
    }
  }
  if (o.nodes < 1 || o.clients < 1 || o.hours <= 0 || o.query_runs < 1)
    Die("--nodes, --clients, --hours and --query-runs must be positive");
  if (!o.describe && o.server_bin.empty() == o.server_url.empty())
    Die(std::string("give exactly one of --server-bin and --server-url\n") + kUsage);
  if ((o.clickhouse || !o.clickhouse_dir.empty()) && o.server_bin.empty())
    Die("--clickhouse needs --server-bin (the tool starts both)");
  return o;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

std::string Fmt(const char* format, double value) {
  char buf[64];
  snprintf(buf, sizeof(buf), format, value);
  return buf;
}

std::string Thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// The first three fields of /proc/loadavg: others' work on a shared machine shows here.
std::string LoadAverage() {
  FILE* f = fopen("/proc/loadavg", "r");
  if (!f) return "?";
  double a = 0, b = 0, c = 0;
  const int n = fscanf(f, "%lf %lf %lf", &a, &b, &c);
  fclose(f);
  if (n != 3) return "?";
  char buf[64];
  snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", a, b, c);
  return buf;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// The hand-written batch must parse with the generated code and say what the rows say.
void CheckWireFormat(const BatchEncoder& encoder, const std::vector<WindowRow>& rows, int64_t values) {
  v1::IngestBatch batch;
  if (!batch.ParseFromString(encoder.raw())) Die("encoder bug: the batch does not parse");
  int64_t parsed_values = 0;
  for (const auto& s : batch.samples()) {
    parsed_values += s.value();
    if (s.stack() >= static_cast<uint32_t>(batch.stacks_size()) ||
        s.label_set() >= static_cast<uint32_t>(batch.label_sets_size())) {
      Die("encoder bug: sample index out of range");
    }
  }
  for (const auto& st : batch.stacks()) {
    for (uint32_t l : st.locations()) {
      if (l >= static_cast<uint32_t>(batch.locations_size())) Die("encoder bug: location index out of range");
    }
  }
  for (const auto& loc : batch.locations()) {
    if (loc.mapping() > static_cast<uint32_t>(batch.mappings_size()) || loc.lines_size() != 1 ||
        loc.lines(0).function() >= static_cast<uint32_t>(batch.functions_size())) {
      Die("encoder bug: location refers out of range");
    }
  }
  if (batch.samples_size() != static_cast<int>(rows.size()) || parsed_values != values || batch.strings(0) != "" ||
      batch.schema_version() != 1 || batch.types_size() != 1 || batch.strings(batch.types(0).name()) != "cpu" ||
      batch.label_sets(0).labels_size() != 5 || batch.strings(batch.label_sets(0).labels(2).key()) != "node") {
    Die("encoder bug: the parsed batch differs from the rows");
  }
  if (batch.SerializeAsString() != encoder.raw()) Die("encoder bug: not the canonical serialization");
}

int64_t JsonInt(const std::string& body, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = body.find(needle);
  return at == std::string::npos ? -1 : std::strtoll(body.c_str() + at + needle.size(), nullptr, 10);
}

// The synthetic fleet alone: what a window and a batch look like, and what
// encoding costs. Also checks the hand-written wire format against the
// generated protobuf parser.
void Describe(const FleetModel& fleet, const Options& o) {
  BatchEncoder encoder(fleet, o.zstd_level);
  std::vector<WindowRow> rows;
  const int64_t windows = std::max<int64_t>(1, static_cast<int64_t>(o.hours * 360));
  std::vector<double> row_counts;
  int64_t values = 0, raw = 0, wire = 0, stacks = 0, locations = 0;
  double encode_cpu = 0;
  for (int64_t w = 0; w < windows; ++w) {
    for (int n = 0; n < fleet.nodes(); ++n) {
      const double cpu_begin = ThreadCpuSeconds();
      fleet.SampleWindow(n, 170'000'000 + w, &rows);
      const std::string& body = encoder.Encode(n, "describe-" + fleet.NodeName(n), w + 1, 0, rows);
      encode_cpu += ThreadCpuSeconds() - cpu_begin;
      row_counts.push_back(static_cast<double>(rows.size()));
      int64_t window_values = 0;
      for (const auto& r : rows) window_values += r.value;
      values += window_values;
      raw += static_cast<int64_t>(encoder.raw().size());
      wire += static_cast<int64_t>(body.size());
      stacks += static_cast<int64_t>(encoder.counts().stacks);
      locations += static_cast<int64_t>(encoder.counts().locations);
      if (w < 3) CheckWireFormat(encoder, rows, window_values);
    }
  }
  const double batches = static_cast<double>(row_counts.size());
  printf("fleet: %d nodes, %zu series, %zu distinct stacks, %zu locations, %zu functions\n", fleet.nodes(),
         fleet.total_series(), fleet.distinct_stacks(), fleet.distinct_locations(), fleet.distinct_functions());
  printf(
      "per node and 10 s window (%lld windows): rows median %.0f (p5 %.0f, p95 %.0f), samples %.0f, "
      "stacks in batch %.0f, locations %.0f\n",
      static_cast<long long>(windows), Median(row_counts), Percentile(row_counts, 0.05), Percentile(row_counts, 0.95),
      values / batches, stacks / batches, locations / batches);
  printf(
      "batch: %.1f KB protobuf, %.1f KB zstd-%d (%.1f bytes/row on the wire); sample+encode+compress %.2f ms "
      "CPU per batch\n",
      raw / batches / 1024, wire / batches / 1024, o.zstd_level, wire / std::max(1.0, std::accumulate(row_counts.begin(), row_counts.end(), 0.0)),
      encode_cpu * 1000 / batches);
}

struct QueryResult {
  std::string name;
  double cold_ms = 0, median_ms = 0, min_ms = 0;
  int64_t bytes = 0, total = -1, expected = 0;
  std::string error;
};

// The server's flags after --listen and --data-dir.
std::vector<std::string> ServerArgs(const std::string& token, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--token", token};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

int Main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  const auto build_begin = std::chrono::steady_clock::now();
  FleetOptions fo;
  fo.nodes = o.nodes;
  fo.seed = o.seed;
  fo.stack_zipf_s = o.zipf;
  FleetModel fleet(fo);
  fprintf(stderr, "server_load: fleet of %d nodes built in %.2f s (%zu series, %zu distinct stacks)\n", o.nodes,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - build_begin).count(), fleet.total_series(),
          fleet.distinct_stacks());
  if (o.describe) {
    Describe(fleet, o);
    return 0;
  }

  const int64_t window_ns = fo.window_ns;
  const int64_t windows = std::max<int64_t>(1, static_cast<int64_t>(o.hours * 3600e9 / window_ns));
  const int64_t end_window = NowNs() / window_ns;  // data ends at the current 10 s boundary
  const int64_t end_ns = end_window * window_ns;
  const bool own_server = !o.server_bin.empty();

  // ClickHouse, when the server is to store there.
  std::unique_ptr<clickhouse::testing::ClickHouseInstance> ch;
  std::string ch_dir = o.clickhouse_dir, ch_version;
  const std::string ch_database = "ws_bench";
  pid_t ch_pid = 0;
  std::vector<std::string> server_args = o.server_args;
  if (o.clickhouse) {
    if (ch_dir.empty()) {
      char templ[] = "/tmp/ws-server-load-clickhouse-XXXXXX";
      if (!mkdtemp(templ)) Die("mkdtemp failed");
      ch_dir = templ;
    }
    auto started = clickhouse::testing::ClickHouseInstance::Start(ch_dir);
    if (!started.ok()) Die("starting clickhouse-server: " + started.status().ToString());
    ch = std::move(started).value();
    auto pid = FindChildProcess("clickhouse");
    if (!pid.ok()) Die(pid.status().message());
    ch_pid = *pid;
    auto version = ch->Query("SELECT version()");
    ch_version = version.ok() ? version->substr(0, version->find('\n')) : "?";
    // A rerun on a kept --clickhouse-dir starts from an empty database.
    if (auto dropped = ch->Query("DROP DATABASE IF EXISTS " + ch_database); !dropped.ok()) Die(dropped.status().message());
    server_args.insert(server_args.end(), {"--storage", ch->Url(ch_database)});
    fprintf(stderr, "server_load: clickhouse-server %s pid %d on port %d, data in %s\n", ch_version.c_str(), ch_pid,
            ch->http_port(), ch_dir.c_str());
  }

  // The server.
  std::unique_ptr<testing::ServerProcess> server;
  std::string data_dir = o.data_dir, token = o.token;
  ServerAddress address;
  if (own_server) {
    if (data_dir.empty()) {
      char templ[] = "/tmp/ws-server-load-XXXXXX";
      if (!mkdtemp(templ)) Die("mkdtemp failed");
      data_dir = templ;
    }
    if (token.empty()) token = "load-" + std::to_string(std::random_device()());
    auto started = testing::ServerProcess::Start(o.server_bin, data_dir, ServerArgs(token, server_args));
    if (!started.ok()) Die(started.status().message());
    server = std::move(started).value();
    address.port = server->port();
    address.token = token;
    fprintf(stderr, "server_load: %s pid %d on port %d, data in %s\n", o.server_bin.c_str(), server->pid(),
            server->port(), data_dir.c_str());
  } else {
    auto parsed = ParseServerUrl(o.server_url, token);
    if (!parsed.ok()) Die(parsed.status().message());
    address = *parsed;
  }
  const pid_t pid = own_server ? server->pid() : o.server_pid;

  // Ingest.
  BackfillOptions bo;
  bo.clients = o.clients;
  bo.first_window = end_window - windows;
  bo.windows = windows;
  bo.zstd_level = o.zstd_level;
  bo.agent_prefix = "server-load-" + std::to_string(NowNs() / 1'000'000'000) + "-";
  double cpu_before = -1, cpu_after = -1, ch_cpu_before = -1, ch_cpu_after = -1, ch_cpu_at_stop = -1;
  if (pid > 0) {
    auto c = ReadProcessCpuSeconds(pid);
    if (c.ok()) cpu_before = *c;
  }
  if (ch_pid > 0) {
    auto c = ReadProcessCpuSeconds(ch_pid);
    if (c.ok()) ch_cpu_before = *c;
  }
  fprintf(stderr, "server_load: backfilling %lld windows x %d nodes over %d connections\n",
          static_cast<long long>(windows), o.nodes, o.clients);
  const std::string load_before = LoadAverage();
  const BackfillResult ingest = RunBackfill(fleet, address, bo);
  const std::string load_after = LoadAverage();
  int64_t peak_rss_ingest = -1;
  if (pid > 0) {
    auto c = ReadProcessCpuSeconds(pid);
    if (c.ok()) cpu_after = *c;
    auto rss = ReadPeakRssBytes(pid);
    if (rss.ok()) peak_rss_ingest = *rss;
  }
  if (ch_pid > 0) {
    auto c = ReadProcessCpuSeconds(ch_pid);
    if (c.ok()) ch_cpu_after = *c;
  }
  if (!ingest.error.empty()) {
    fprintf(stderr, "server_load: ingest failed after %lld batches:\n  %s\n", static_cast<long long>(ingest.batches),
            ingest.error.c_str());
    if (server)
      fprintf(stderr, "server_load: server log (tail):\n%s\n",
              server->log().substr(server->log().size() > 4000 ? server->log().size() - 4000 : 0).c_str());
    return 1;
  }
  const HttpAnswer status = TimedGet(address, "/api/v1/status");
  const int64_t status_samples = status.status == 200 ? JsonInt(status.body, "samples") : -1;

  // Stop (final flush), measure the data dir.
  testing::ServerExit ingest_exit;
  DirUsage disk;
  bool have_disk = false;
  std::string group_commit_line;  // the ClickHouse store's "ClickHouse ingest: ..." log line at exit
  if (own_server) {
    ingest_exit = server->Stop(600);
    if (ingest_exit.exit_code != 0) {
      fprintf(stderr, "server_load: server exited with %d (signal %d: %s) after SIGTERM; log:\n%s\n",
              ingest_exit.exit_code, ingest_exit.signal, strsignal(ingest_exit.signal), server->log().c_str());
    }
    const std::string log = server->log();
    if (const size_t at = log.find("ClickHouse ingest: "); at != std::string::npos) {
      group_commit_line = log.substr(at + 19, log.find('\n', at) - at - 19);
    }
    server.reset();
  }
  int64_t ch_peak_rss = -1;
  ClickHouseUsage ch_usage;
  bool have_ch_usage = false;
  if (ch) {
    auto c = ReadProcessCpuSeconds(ch_pid);
    if (c.ok()) ch_cpu_at_stop = *c;
    auto rss = ReadPeakRssBytes(ch_pid);
    if (rss.ok()) ch_peak_rss = *rss;
    auto u = MeasureClickHouse(*ch, ch_database);
    if (u.ok()) {
      ch_usage = *u;
      have_ch_usage = true;
    } else {
      fprintf(stderr, "server_load: %s\n", u.status().message().c_str());
    }
  }
  if (!data_dir.empty() && !ch) {  // with ClickHouse the server's data dir stays empty
    auto d = MeasureDirectory(data_dir);
    if (d.ok()) {
      disk = *d;
      have_disk = true;
    } else {
      fprintf(stderr, "server_load: %s\n", d.status().message().c_str());
    }
  }

  // Queries: flame graphs of the last 1 h and 24 h (when loaded), all nodes and one node.
  std::vector<QueryResult> queries;
  double restart_seconds = -1;
  int64_t peak_rss_query = -1;
  if (o.queries) {
    struct Spec {
      std::string range_name;
      int64_t range_ns;
      bool one_node;
    };
    // The last 1 h and 24 h where that much was loaded; else everything loaded.
    std::vector<std::pair<std::string, int64_t>> ranges;
    for (int64_t hours : {1, 24}) {
      const int64_t ns = hours * 3600 * 1'000'000'000LL;
      if (ns <= windows * window_ns) ranges.emplace_back(std::to_string(hours) + " h", ns);
    }
    if (ranges.empty()) ranges.emplace_back(Fmt("%.3g h", windows * window_ns / 3600e9), windows * window_ns);
    std::vector<Spec> specs;
    for (const auto& [name, ns] : ranges) {
      specs.push_back({name, ns, false});
      specs.push_back({name, ns, true});
    }
    const int probe_node = std::min(3, o.nodes - 1);
    for (const Spec& spec : specs) {
      QueryResult q;
      const std::string selector = spec.one_node ? "{node=\"" + fleet.NodeName(probe_node) + "\"}" : "{}";
      q.name = std::string("flame graph, last ") + spec.range_name + ", " +
               (spec.one_node ? "one node `" + selector + "`" : std::string("all nodes"));
      const int64_t from_ns = end_ns - spec.range_ns;
      for (int n = 0; n < o.nodes; ++n) {
        if (spec.one_node && n != probe_node) continue;
        for (int64_t w = 0; w < windows; ++w) {
          if ((bo.first_window + w) * window_ns >= from_ns) q.expected += ingest.window_values[n * windows + w];
        }
      }
      if (own_server) {
        auto restarted =
            testing::ServerProcess::Start(o.server_bin, data_dir, ServerArgs(token, server_args), address.port);
        if (!restarted.ok()) Die("restart: " + restarted.status().message());
        server = std::move(restarted).value();
        restart_seconds = std::max(restart_seconds, server->start_seconds());
      }
      const std::string path = "/api/v1/profile?type=cpu&from=" + std::to_string(from_ns / 1'000'000) +
                               "&to=" + std::to_string(end_ns / 1'000'000) + "&selector=" + testing::UrlEncode(selector) +
                               "&format=json";
      std::vector<double> warm;
      for (int run = 0; run <= o.query_runs; ++run) {
        const HttpAnswer a = TimedGet(address, path);
        if (a.status != 200) {
          q.error = "GET " + path + " -> " + (a.status ? "HTTP " + std::to_string(a.status) + " " : "") +
                    a.body.substr(0, 500);
          break;
        }
        if (run == 0) {
          q.cold_ms = a.ms;
          q.bytes = static_cast<int64_t>(a.body.size());
          q.total = JsonInt(a.body, "total");
        } else {
          warm.push_back(a.ms);
        }
      }
      q.median_ms = Median(warm);
      q.min_ms = warm.empty() ? 0 : *std::min_element(warm.begin(), warm.end());
      if (!q.error.empty()) fprintf(stderr, "server_load: %s\n", q.error.c_str());
      fprintf(stderr, "server_load: %s: cold %.1f ms, median %.1f ms\n", q.name.c_str(), q.cold_ms, q.median_ms);
      queries.push_back(q);
      if (own_server) {
        const testing::ServerExit u = server->Stop(600);
        peak_rss_query = std::max(peak_rss_query, u.peak_rss_bytes);
        server.reset();
      }
    }
  }
  if (own_server && !o.keep_data && o.data_dir.empty()) {
    const std::string cmd = "rm -rf '" + data_dir + "'";
    if (system(cmd.c_str()) != 0) fprintf(stderr, "server_load: could not remove %s\n", data_dir.c_str());
  }
  if (ch) {
    if (Status stopped = ch->Stop(); !stopped.ok()) fprintf(stderr, "server_load: %s\n", stopped.ToString().c_str());
    ch.reset();
    if (!o.keep_data && o.clickhouse_dir.empty()) {
      const std::string cmd = "rm -rf '" + ch_dir + "'";
      if (system(cmd.c_str()) != 0) fprintf(stderr, "server_load: could not remove %s\n", ch_dir.c_str());
    }
  }

  // The summary.
  const double rows = static_cast<double>(ingest.rows);
  const double server_cpu = cpu_before >= 0 && cpu_after >= 0 ? cpu_after - cpu_before : -1;
  const double server_cpu_with_flush = own_server && cpu_before >= 0 ? ingest_exit.cpu_seconds - cpu_before : -1;
  std::string column = o.label;
  if (column.empty() && o.clickhouse) {
    column = "ClickHouse " + ch_version;
  } else if (column.empty() && own_server) {
    column = o.server_bin.substr(o.server_bin.rfind('/') + 1);
    for (const std::string& a : o.server_args) column += " " + a;
  } else if (column.empty()) {
    column = o.server_url;
  }
  char host[256] = "?";
  gethostname(host, sizeof(host));
  printf(
      "\n%d nodes, %.4g h of 10 s windows ending %lld (unix ms), %d connections, seed %llu, on %s (%ld CPUs); "
      "load average %s before ingest, %s after\n\n",
      o.nodes, o.hours, static_cast<long long>(end_ns / 1'000'000), o.clients, static_cast<unsigned long long>(o.seed),
      host, sysconf(_SC_NPROCESSORS_ONLN), load_before.c_str(), load_after.c_str());
  printf("| metric | %s |\n|---|---|\n", column.c_str());
  auto row = [](const std::string& metric, const std::string& value) {
    printf("| %s | %s |\n", metric.c_str(), value.c_str());
  };
  row("batches (node × 10 s window)", Thousands(ingest.batches));
  row("rows ingested ((series, stack) per window)",
      Thousands(ingest.rows) + " (" + Fmt("%.0f", rows / std::max<int64_t>(1, ingest.batches)) + " per batch)");
  row("CPU samples in those rows", Thousands(ingest.sample_values));
  row("server's sample count (/api/v1/status)",
      status_samples < 0
          ? "n/a (" + std::to_string(status.status) + ")"
          : Thousands(status_samples) +
                (status_samples == ingest.rows ? " (= rows sent)" : " (rows sent: " + Thousands(ingest.rows) + ")"));
  row("ingest wall time", Fmt("%.1f s", ingest.wall_seconds));
  row("**ingest rate (wall)**",
      Fmt("%.0f rows/s", rows / ingest.wall_seconds) + Fmt(" (%.0f batches/s)", ingest.batches / ingest.wall_seconds));
  row("ingest latency per batch, median / p99",
      Fmt("%.1f", Median(ingest.latencies_ms)) + Fmt(" / %.1f ms", Percentile(ingest.latencies_ms, 0.99)));
  if (server_cpu >= 0) {
    row("server CPU during ingest",
        Fmt("%.1f s", server_cpu) + Fmt(" (%.2f cores busy)", server_cpu / ingest.wall_seconds));
    row("**ingest rows/s per server core** (rows / server CPU s)", Fmt("%.0f", rows / server_cpu));
    row("**ingest CPU samples/s per server core** (samples in those rows / server CPU s)",
        Fmt("%.0f", static_cast<double>(ingest.sample_values) / server_cpu));
  } else {
    row("server CPU during ingest", "n/a (pass --server-pid)");
  }
  const double ch_cpu = ch_cpu_before >= 0 && ch_cpu_after >= 0 ? ch_cpu_after - ch_cpu_before : -1;
  if (ch_cpu >= 0) {
    row("ClickHouse CPU during ingest (its process, not in the server's)",
        Fmt("%.1f s", ch_cpu) + Fmt(" (%.2f cores busy)", ch_cpu / ingest.wall_seconds));
    if (server_cpu > 0) {
      row("**ingest CPU samples/s per core, server + ClickHouse**",
          Fmt("%.0f", static_cast<double>(ingest.sample_values) / (server_cpu + ch_cpu)));
    }
    if (ch_cpu_at_stop >= 0) {
      row("ClickHouse CPU from ingest start to the server's stop (merges continue)",
          Fmt("%.1f s", ch_cpu_at_stop - ch_cpu_before));
    }
  }
  if (!group_commit_line.empty()) row("ClickHouse store's group commit (its log line at exit)", group_commit_line);
  if (server_cpu_with_flush >= 0) {
    row("server CPU incl. final flush (SIGTERM → exit)",
        Fmt("%.1f s", server_cpu_with_flush) + Fmt(" (flush took %.2f s wall)", ingest_exit.stop_seconds));
    row("ingest rows/s per server core incl. flush", Fmt("%.0f", rows / server_cpu_with_flush));
  }
  row("generator CPU (this process, all threads)", Fmt("%.1f s", ingest.client_cpu_seconds));
  if (peak_rss_ingest > 0) row("server peak RSS during ingest (VmHWM)", Fmt("%.1f MB", peak_rss_ingest / 1e6));
  if (own_server) row("server peak RSS incl. final flush (rusage)", Fmt("%.1f MB", ingest_exit.peak_rss_bytes / 1e6));
  row("request bytes per row on the wire (zstd-" + std::to_string(o.zstd_level) + ")",
      Fmt("%.2f", ingest.wire_bytes / rows) + Fmt(" (%.1f KB per batch)", ingest.wire_bytes / 1024.0 / ingest.batches));
  row("request bytes per row, uncompressed protobuf", Fmt("%.2f", ingest.raw_bytes / rows));
  if (have_ch_usage) {
    const double samples = static_cast<double>(ingest.sample_values);
    const int64_t total = ch_usage.fact_bytes + ch_usage.dictionary_bytes;
    row("data on disk after the server's stop",
        Fmt("%.1f MB", total / 1e6) + " (system.parts bytes_on_disk: " + std::to_string(ch_usage.parts) +
            " active parts)");
    row("**bytes per row on disk** (data dir / rows; ClickHouse: bytes_on_disk / rows)",
        Fmt("%.2f", total / rows) + Fmt(" (facts %.2f, ", ch_usage.fact_bytes / rows) +
            Fmt("dictionaries %.2f)", ch_usage.dictionary_bytes / rows));
    row("**bytes per CPU sample on disk**", Fmt("%.3f", total / samples));
    std::string parts;
    for (size_t i = 0; i < ch_usage.tables.size() && i < 6; ++i) {
      parts += (i ? ", " : "") + ch_usage.tables[i].first + Fmt(" %.2f", ch_usage.tables[i].second / rows);
    }
    row("bytes per row by top-level entry (ClickHouse: by table)", parts);
  }
  if (ch_peak_rss > 0) row("ClickHouse peak RSS (VmHWM)", Fmt("%.1f MB", ch_peak_rss / 1e6));
  if (have_disk) {
    row(own_server ? "data on disk after the server's stop" : "data dir (live, not flushed)",
        Fmt("%.1f MB", disk.apparent_bytes / 1e6) + Fmt(" (%.1f MB allocated)", disk.allocated_bytes / 1e6));
    row("**bytes per row on disk** (data dir / rows; ClickHouse: bytes_on_disk / rows)",
        Fmt("%.2f", disk.apparent_bytes / rows));
    row("**bytes per CPU sample on disk**", Fmt("%.3f", disk.apparent_bytes / static_cast<double>(ingest.sample_values)));
    std::string parts;
    for (size_t i = 0; i < disk.entries.size() && i < 6; ++i) {
      parts += (i ? ", " : "") + disk.entries[i].first + Fmt(" %.2f", disk.entries[i].second / rows);
    }
    row("bytes per row by top-level entry (ClickHouse: by table)", parts);
  }
  if (ingest.retries || ingest.duplicates || ingest.stored_mismatches) {
    row("retries / duplicates / stored_samples ≠ rows", std::to_string(ingest.retries) + " / " +
                                                            std::to_string(ingest.duplicates) + " / " +
                                                            std::to_string(ingest.stored_mismatches));
  }
  if (restart_seconds >= 0) row("server restart to 'serving on' (slowest)", Fmt("%.2f s", restart_seconds));
  for (const QueryResult& q : queries) {
    if (!q.error.empty()) {
      row(q.name, "failed: " + q.error);
      continue;
    }
    std::string check = q.total == q.expected ? "total = samples sent"
                                              : "total " + Thousands(q.total) + " ≠ " + Thousands(q.expected) + " sent";
    row(q.name + ": first (cold) / median / min of " + std::to_string(o.query_runs),
        Fmt("%.0f", q.cold_ms) + Fmt(" / %.0f", q.median_ms) + Fmt(" / %.0f ms", q.min_ms) +
            Fmt(" (%.0f KB, ", q.bytes / 1024.0) + check + ")");
  }
  if (peak_rss_query > 0) row("server peak RSS while querying (rusage)", Fmt("%.1f MB", peak_rss_query / 1e6));
  return 0;
}

}  // namespace warpscope::bench

int main(int argc, char** argv) { return warpscope::bench::Main(argc, argv); }
