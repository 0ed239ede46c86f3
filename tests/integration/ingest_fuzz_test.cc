// A bounded, seeded mutation fuzz of the real warpscope-server on loopback
// (CONTRIBUTING.md, "Tests": the real binary over HTTP, the embedded store on disk).
// The cases (ingest_fuzz_cases.h) mix mutated batches, mutated bytes of
// batches and of their zstd frames, raw HTTP oddities and query strings for
// every GET route, so queries run against what the fuzz stored.
//
// Checks: no answer is a 5xx; every request is answered (a connection that
// fails or times out is a crash or a hang); every few hundred cases the
// process is alive and /healthz answers within 2 s; RSS at the end within
// kRssGrowthBound of RSS after the warm-up; 200 JSON answers parse, and
// profile, top, diff and series answers never show a negative total; the log
// shows no failed flush or compaction and no handler exception. After the
// fuzz, a canary batch is stored and found, the server stops cleanly (its
// final flush) and restarts from its files, serving the canary again.
//
// Reproducing: every failure names its case as "seed:index". Knobs:
//   WS_FUZZ_SEEDS=a,b    the seeds (default: one fixed, one from the clock);
//   WS_FUZZ_SECONDS=64   the fuzzing budget, shared by the seeds;
//   WS_FUZZ_MAX_CASES=N  the case cap (default 400000);
//   WS_FUZZ_KINDS=semantic,query  only these kinds (semantic, bytes, raw-http, query);
//   WS_FUZZ_LOG_ACCEPTED=1  prints every ingest case answered 200 (what a
//     state-dependent failure, such as a wrong total, was built from);
//   WS_FUZZ_CASE=seed:index  runs that one case on a fresh server and writes
//     its request to $TMPDIR/ws-fuzz-<seed>-<index>.req. A failure that
//     depends on what earlier cases stored (a merge across batches) needs the
//     whole seed: WS_FUZZ_SEEDS=<seed>.
//
// Threading: the test's one thread generates, sends and checks every case.
#include <arpa/inet.h>
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/batch_factory.h"
#include "tests/integration/ingest_fuzz_cases.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using fuzz::FuzzCase;
using fuzz::Kind;
using fuzz::KindName;

constexpr const char* kToken = fuzz::kFuzzToken;
constexpr int64_t kSec = 1'000'000'000;
constexpr uint64_t kFixedSeed = 0x5eed2026;
// How often (in cases) the process and /healthz are checked and RSS is read.
constexpr uint64_t kLivenessEvery = 250;
constexpr double kHealthzLimitS = 2.0;
// The RSS check. A leak raises the floor of the RSS, transient buffers (a
// 64 MiB decompression, a query's working set) only its peaks; so the check
// compares floors: the lowest RSS of the checks in the last kRssWindowShare
// of the warm-up (the first kWarmupShare of the budget) with the lowest of
// the checks in the last kRssWindowShare of the run (the server's allocator
// is set to return freed memory: IngestFuzzTest::Start). After the warm-up
// the fuzz repeats what it did: batches come from the same fixed pools, so
// the store's dictionary cache (every content it interned stays in memory,
// by design) grows only by what mutations invent (functions named by the odd
// strings, up to 4 KB each, stacks and series from flipped bytes: a few MB),
// the head holds one flush interval (5 s) of rows, and the stored rows make
// each query's transient working set grow by a few MB. Measured on the 2-core
// VM: floors of 21.7 MB and 28.9 MB. 32 MiB is several times that growth; a
// leak of about 4 KB per case (8,000-14,000 cases follow the warm-up there),
// a leaked request body or parsed batch per ingest, passes it.
constexpr int64_t kRssGrowthBound = 32 << 20;
constexpr double kWarmupShare = 0.25;
constexpr double kRssWindowShare = 0.125;  // of the budget: 8 s of 64, ~8 checks
constexpr double kRequestTimeoutS = 60;

double NowS() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------------------
// Sending.

struct Answer {
  std::vector<int> statuses;  // more than one when a raw connection got several responses
  std::string body;
  std::string content_type;
  std::string error;  // why no answer came
};

// One request on a raw socket; collects every response until the server
// closes, or 300 ms pass without more after a complete response. A request
// the server is still waiting on after 250 ms (a Content-Length past the
// body, an unterminated chunk) gets a half-close, so the server sees the end
// of it; `shut_wr` half-closes at once.
Answer SendRaw(int port, const std::string& bytes, bool shut_wr) {
  Answer a;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    a.error = std::string("connect: ") + strerror(errno);
    if (fd >= 0) close(fd);
    return a;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading everything (413, 400)
    sent += static_cast<size_t>(n);
  }
  if (shut_wr) shutdown(fd, SHUT_WR);
  std::string in;
  const double sent_at = NowS(), deadline = sent_at + 15;
  size_t parsed = 0;
  bool closed = false;
  for (;;) {
    // Parse what is complete: status line, headers, Content-Length body.
    for (;;) {
      const size_t end = in.find("\r\n\r\n", parsed);
      if (end == std::string::npos || in.compare(parsed, 5, "HTTP/") != 0) break;
      const std::string head = in.substr(parsed, end - parsed);
      size_t length = 0;
      for (size_t p = 0; (p = head.find("\r\n", p)) != std::string::npos;) {
        p += 2;
        if (strncasecmp(head.c_str() + p, "Content-Length:", 15) == 0) length = strtoull(head.c_str() + p + 15, nullptr, 10);
      }
      if (in.size() < end + 4 + length) break;
      a.statuses.push_back(atoi(head.c_str() + 9));
      a.body = in.substr(end + 4, std::min<size_t>(length, 4096));
      parsed = end + 4 + length;
    }
    if (closed) break;
    const double left = deadline - NowS();
    if (left <= 0) {
      if (a.statuses.empty()) a.error = "no answer within 15 s";
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int wait_ms = !a.statuses.empty() ? 300 : shut_wr ? static_cast<int>(left * 1000) + 1 : 250;
    if (poll(&p, 1, wait_ms) <= 0) {
      if (!a.statuses.empty()) break;  // quiet after a response: done
      if (!shut_wr && in.empty()) {
        shutdown(fd, SHUT_WR);
        shut_wr = true;
        continue;
      }
      if (NowS() - sent_at < 15 && !in.empty()) continue;  // a response in pieces
      a.error = "no answer within 15 s";
      break;
    }
    char buf[65536];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      closed = true;
    } else {
      in.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  // A connection closed without a response is an answer too (the server
  // refused the framing); only silence is a hang.
  return a;
}

Answer Send(int port, const FuzzCase& c) {
  Answer a;
  if (c.kind == Kind::kRaw) return SendRaw(port, c.raw, c.shut_wr);
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(static_cast<time_t>(kRequestTimeoutS), 0);
  client.set_write_timeout(static_cast<time_t>(kRequestTimeoutS), 0);
  httplib::Headers headers = {{"Authorization", std::string("Bearer ") + kToken}};
  httplib::Result res = [&] {
    if (c.kind == Kind::kQuery) return client.Get(c.path.c_str(), headers);
    if (!c.content_encoding.empty()) headers.emplace("Content-Encoding", c.content_encoding);
    return client.Post("/api/v1/ingest", headers, c.body, "application/x-protobuf");
  }();
  if (!res) {
    a.error = "no answer: " + httplib::to_string(res.error());
    return a;
  }
  a.statuses.push_back(res->status);
  a.body = std::move(res->body);
  a.content_type = res->get_header_value("Content-Type");
  return a;
}

// A property of a 200 answer that must hold: {category, why} when it does not.
std::pair<std::string, std::string> CheckAnswerBody(const FuzzCase& c, const Answer& a) {
  if (c.kind != Kind::kQuery || a.statuses.empty() || a.statuses[0] != 200) return {};
  if (a.content_type.find("application/json") == std::string::npos || a.body.size() > (8u << 20)) return {};
  const json j = json::parse(a.body, nullptr, false);
  if (j.is_discarded()) return {"invalid JSON", "a 200 answer is not valid JSON (UTF-8): " + a.body.substr(0, 200)};
  for (const char* key : {"total", "base_total", "target_total"}) {
    if (j.contains(key) && j[key].is_number() && j[key].get<double>() < 0) {
      return {"negative total", std::string(key) + " " + j[key].dump()};
    }
  }
  if (c.path.rfind("/api/v1/series", 0) == 0 && j.contains("series")) {
    for (const json& s : j["series"]) {
      for (const json& p : s["points"]) {
        if (p.size() == 2 && p[1].is_number() && p[1].get<double>() < 0) return {"negative total", "series point " + p.dump()};
      }
    }
  }
  return {};
}

struct ProcInfo {
  bool alive = false;
  int64_t rss_bytes = 0, rss_anon_bytes = 0, rss_file_bytes = 0;
};

ProcInfo ReadProc(pid_t pid) {
  ProcInfo info;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0) info.alive = line.find('Z') == std::string::npos && line.find('X') == std::string::npos;
    if (line.rfind("VmRSS:", 0) == 0) info.rss_bytes = std::atoll(line.c_str() + 6) * 1024;
    if (line.rfind("RssAnon:", 0) == 0) info.rss_anon_bytes = std::atoll(line.c_str() + 8) * 1024;
    if (line.rfind("RssFile:", 0) == 0) info.rss_file_bytes = std::atoll(line.c_str() + 8) * 1024;
  }
  return info;
}

// ---------------------------------------------------------------------------
// The run: phases (one per seed), counters, failures.

struct KindStats {
  uint64_t cases = 0;
  std::map<int, uint64_t> statuses;  // 0: a raw connection closed without an answer
};

class FuzzRun {
 public:
  FuzzRun(ServerProcess* server, std::string only_kinds, bool log_accepted)
      : server_(server), only_kinds_(std::move(only_kinds)), log_accepted_(log_accepted) {}

  // Runs cases of `seed` until `until_s` (steady clock) or the case cap; false
  // when the server died or stopped answering (the run cannot go on).
  bool Phase(uint64_t seed, int phase, double until_s, uint64_t max_cases) {
    for (uint64_t index = 0; NowS() < until_s && total_cases_ < max_cases; ++index) {
      const std::string id = std::to_string(seed) + ":" + std::to_string(index);
      FuzzCase c = fuzz::MakeCase(seed, phase, index, WallNs(), only_kinds_);
      const double begin = NowS();
      Answer a = Send(server_->port(), c);
      const double took = NowS() - begin;
      slowest_s_ = std::max(slowest_s_, took);
      KindStats& k = stats_[static_cast<int>(c.kind)];
      ++k.cases;
      ++total_cases_;
      for (int s : a.statuses) ++k.statuses[s];
      if (log_accepted_ && c.kind != Kind::kQuery && !a.statuses.empty() && a.statuses[0] == 200) {
        std::fprintf(stderr, "accepted %s [%s] %s\n", id.c_str(), KindName(c.kind), c.what.substr(0, 300).c_str());
      }
      if (a.statuses.empty()) ++k.statuses[0];
      for (int s : a.statuses) {
        if (s >= 500) Fail("5xx answer", id, c, "answered " + std::to_string(s) + ": " + a.body.substr(0, 300));
      }
      if (!a.error.empty()) Fail("no answer", id, c, a.error + " after " + std::to_string(took) + " s");
      if (auto [category, why] = CheckAnswerBody(c, a); !category.empty()) Fail(category, id, c, why);
      if (++since_liveness_ >= kLivenessEvery || !a.error.empty()) {
        since_liveness_ = 0;
        if (!CheckLiveness(id)) return false;
      }
    }
    return CheckLiveness(std::to_string(seed) + ":end");
  }

  // The lowest RSS read by the checks in [from_s, to_s] (steady clock); 0 if none.
  int64_t RssFloor(double from_s, double to_s) const {
    int64_t floor = 0;
    for (const auto& [t, rss] : rss_samples_) {
      if (t >= from_s && t <= to_s && (floor == 0 || rss < floor)) floor = rss;
    }
    return floor;
  }

  // The process exists and /healthz answers within kHealthzLimitS; reads RSS.
  bool CheckLiveness(const std::string& after) {
    const ProcInfo info = ReadProc(server_->pid());
    if (!info.alive) {
      FailRun("crash", after, "the server process is gone (crashed); log tail: " + LogTail());
      return false;
    }
    last_rss_ = info.rss_bytes;
    rss_samples_.push_back({NowS(), info.rss_bytes});
    if (NowS() >= next_trace_s_) {  // an RSS trace every 5 s, to tell a leak from a step
      next_trace_s_ = NowS() + 5;
      std::fprintf(stderr, "  after %7" PRIu64 " cases: RSS %" PRId64 " KiB (anon %" PRId64 ", file %" PRId64 ")\n",
                   total_cases_, info.rss_bytes / 1024, info.rss_anon_bytes / 1024, info.rss_file_bytes / 1024);
    }
    max_rss_ = std::max(max_rss_, info.rss_bytes);
    httplib::Client client("127.0.0.1", server_->port());
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(2, 0);
    const double begin = NowS();
    auto res = client.Get("/healthz");
    const double took = NowS() - begin;
    ++liveness_checks_;
    max_healthz_s_ = std::max(max_healthz_s_, took);
    if (!res || res->status != 200 || took > kHealthzLimitS) {
      FailRun("healthz", after, "/healthz did not answer 200 within 2 s (" + std::to_string(took) + " s" +
                          (res ? ", status " + std::to_string(res->status) : ", " + httplib::to_string(res.error())) +
                          ")");
      return false;
    }
    return true;
  }

  // A case that broke a check; `category` groups them in the report (a few
  // examples of each are kept, every one is counted).
  void Fail(const std::string& category, const std::string& id, const FuzzCase& c, const std::string& why) {
    Record(category, "case " + id + " [" + KindName(c.kind) + "] " + c.what.substr(0, 400) + " -> " + why);
  }

  // A failure of the server rather than of one case: `after` names the last case sent.
  void FailRun(const std::string& category, const std::string& after, const std::string& why) {
    Record(category, "after case " + after + ": " + why);
  }

  std::string LogTail() const {
    const std::string log = server_->log();
    return log.size() > 2000 ? log.substr(log.size() - 2000) : log;
  }

  void Report() const {
    std::cerr << "\nkind        cases   statuses (code: count; 0 = closed without an answer)\n";
    for (int k = 0; k < fuzz::kKinds; ++k) {
      const KindStats& s = stats_[k];
      std::fprintf(stderr, "%-10s %6" PRIu64 "  ", KindName(static_cast<Kind>(k)), s.cases);
      for (const auto& [code, n] : s.statuses) std::fprintf(stderr, " %d: %" PRIu64, code, n);
      std::fprintf(stderr, "\n");
    }
    std::fprintf(stderr,
                 "total %" PRIu64 " cases, %" PRIu64 " liveness checks (slowest /healthz %.3f s), slowest case %.2f s; "
                 "RSS max %" PRId64 " KiB\n",
                 total_cases_, liveness_checks_, max_healthz_s_, slowest_s_, max_rss_ / 1024);
    for (const auto& [category, f] : failures_) {
      std::fprintf(stderr, "FAILURES: %s: %" PRIu64 " cases\n", category.c_str(), f.count);
      for (const std::string& e : f.examples) std::cerr << "  FAILURE " << e << "\n";
    }
  }

  uint64_t failure_count() const { return failure_count_; }
  uint64_t total_cases() const { return total_cases_; }

 private:
  ServerProcess* server_;
  const std::string only_kinds_;
  const bool log_accepted_;
  KindStats stats_[fuzz::kKinds];
  uint64_t total_cases_ = 0, since_liveness_ = 0, liveness_checks_ = 0, failure_count_ = 0;
  int64_t last_rss_ = 0, max_rss_ = 0;
  std::vector<std::pair<double, int64_t>> rss_samples_;  // (steady clock, RSS) of every check
  double slowest_s_ = 0, max_healthz_s_ = 0, next_trace_s_ = 0;
  struct Failures {
    uint64_t count = 0;
    std::vector<std::string> examples;  // the first kExamples
  };
  static constexpr size_t kExamples = 6;
  void Record(const std::string& category, std::string text) {
    ++failure_count_;
    Failures& f = failures_[category];
    ++f.count;
    if (f.examples.size() < kExamples) f.examples.push_back(std::move(text));
  }
  std::map<std::string, Failures> failures_;
};

double EnvDouble(const char* name, double fallback) {
  const char* v = getenv(name);
  return v && *v ? std::atof(v) : fallback;
}

std::string OnlyKinds() {
  const char* v = getenv("WS_FUZZ_KINDS");
  return v ? v : "";
}

// The cases serialize invalid UTF-8 in string fields on purpose; libprotobuf
// logs an ERROR for each. Those lines are dropped, any other is kept.
void QuietProtobufLog(google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
  if (message.find("invalid UTF-8") != std::string::npos) return;
  std::fprintf(stderr, "[libprotobuf %d %s:%d] %s\n", static_cast<int>(level), file, line, message.c_str());
}

std::vector<uint64_t> Seeds() {
  std::vector<uint64_t> seeds;
  if (const char* v = getenv("WS_FUZZ_SEEDS"); v && *v) {
    for (const char* p = v; *p;) {
      char* end = nullptr;
      seeds.push_back(std::strtoull(p, &end, 0));
      p = *end ? end + 1 : end;
    }
    return seeds;
  }
  const uint64_t clock_seed = static_cast<uint64_t>(WallNs()) % 1'000'000'007;
  return {kFixedSeed, clock_seed};
}

// Lines of the server's log that mean the store is stuck or a handler broke.
std::vector<std::string> StoreFailuresInLog(const std::string& log) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < log.size()) {
    const size_t end = std::min(log.find('\n', start), log.size());
    const std::string line = log.substr(start, end - start);
    for (const char* needle : {"flush: ", "compaction: ", "retention: ", "threw", "flush at close"}) {
      if (line.find(needle) != std::string::npos) {
        out.push_back(line.substr(0, 400));
        break;
      }
    }
    start = end + 1;
  }
  return out;
}

class IngestFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    Start();
  }
  void TearDown() override {
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  void Start() {
    // The server's allocator is told to give memory back, so that its RSS
    // follows its live heap, which is what a leak check needs (the child
    // inherits the variables; production runs glibc's defaults). With the
    // defaults, each thread (8 HTTP workers, the store's) gets an arena of
    // its own that keeps its own high-water mark of freed memory, and the
    // fuzz's lone client hands consecutive requests to different workers:
    // measured after 60 s of this fuzz, 15 arenas held 74 MB, 61 MB of it
    // free. Two arenas fix that; a fixed mmap threshold (glibc raises it to
    // 32 MiB after freeing a large block, such as a 64 MiB decompression)
    // and a low trim threshold keep large freed blocks from staying resident.
    setenv("MALLOC_ARENA_MAX", "2", 1);
    setenv("MALLOC_MMAP_THRESHOLD_", "262144", 1);
    setenv("MALLOC_TRIM_THRESHOLD_", "1048576", 1);
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/data", {"--token", kToken}, port_);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
    port_ = server_->port();
  }
  // A batch only the canary label selects; its total must come back exactly.
  void ExpectCanary(bool post) {
    const int64_t now_s = WallNs() / kSec * kSec;
    if (post) {
      BatchFactory f("fuzz-canary", 1, now_s - kSec, now_s);
      f.Add("main@app;canary@app", {{"node", "canary"}, {"comm", "canary"}}, 4242, now_s - 30 * kSec);
      HttpResult r = PostBatch(port_, f.batch(), kToken);
      ASSERT_EQ(r.status, 200) << r.body;
    }
    // In samples, or in nanoseconds (value x period) when the stored cpu
    // batches disagree on the period: both are the canary's exact total.
    HttpResult r = HttpGet(port_, "/api/v1/profile?from=now-1h&to=now%2B1m&selector=" + UrlEncode("{node=\"canary\"}"),
                           kToken);
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body.substr(0, 300);
    const std::string unit = j.value("unit", "");
    const int64_t expected = unit == "nanoseconds" ? int64_t{4242} * (1'000'000'000 / 19) : 4242;
    EXPECT_TRUE(unit == "samples" || unit == "nanoseconds") << unit;
    EXPECT_EQ(j.value("total", int64_t{0}), expected) << "unit " << unit;
    std::fprintf(stderr, "canary found: total %" PRId64 " %s\n", j.value("total", int64_t{0}), unit.c_str());
  }

  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ServerProcess> server_;
};

// WS_FUZZ_CASE=seed:index: one case, written to a file, sent, answered.
void ReplayOne(const std::string& spec, ServerProcess* server) {
  const size_t colon = spec.find(':');
  ASSERT_NE(colon, std::string::npos) << "WS_FUZZ_CASE=seed:index";
  const uint64_t seed = std::strtoull(spec.substr(0, colon).c_str(), nullptr, 0);
  const uint64_t index = std::strtoull(spec.substr(colon + 1).c_str(), nullptr, 0);
  const FuzzCase c = fuzz::MakeCase(seed, 0, index, WallNs(), OnlyKinds());
  const char* tmp = getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/ws-fuzz-" + std::to_string(seed) + "-" +
                           std::to_string(index) + ".req";
  std::ofstream(path, std::ios::binary) << (c.kind == Kind::kRaw ? c.raw : c.kind == Kind::kQuery ? c.path : c.body);
  std::cerr << "case " << spec << " [" << KindName(c.kind) << "] " << c.what << "\nrequest written to " << path
            << (c.kind == Kind::kSemantic || c.kind == Kind::kBytes
                    ? " (POST body, Content-Encoding: " + c.content_encoding + ")"
                    : "")
            << "\n";
  const Answer a = Send(server->port(), c);
  for (int s : a.statuses) std::cerr << "answer " << s << "\n";
  std::cerr << a.error << a.body.substr(0, 2000) << "\n";
  for (int s : a.statuses) EXPECT_LT(s, 500) << a.body;
  EXPECT_TRUE(a.error.empty() || c.kind == Kind::kRaw) << a.error;
  EXPECT_EQ(CheckAnswerBody(c, a).second, "");
  EXPECT_TRUE(ReadProc(server->pid()).alive);
}

TEST_F(IngestFuzzTest, MutatedIngestAndQueriesNeverBreakTheServer) {
  google::protobuf::SetLogHandler(&QuietProtobufLog);
  if (const char* one = getenv("WS_FUZZ_CASE"); one && *one) {
    ReplayOne(one, server_.get());
    return;
  }
  const std::vector<uint64_t> seeds = Seeds();
  const double budget_s = EnvDouble("WS_FUZZ_SECONDS", 64);
  const uint64_t max_cases = static_cast<uint64_t>(EnvDouble("WS_FUZZ_MAX_CASES", 400'000));
  std::cerr << "fuzz seeds:";
  for (uint64_t s : seeds) std::cerr << " " << s;
  std::cerr << " (WS_FUZZ_SEEDS to repeat), " << budget_s << " s, at most " << max_cases << " cases\n";

  FuzzRun run(server_.get(), OnlyKinds(), getenv("WS_FUZZ_LOG_ACCEPTED") != nullptr);
  const double begin = NowS();
  bool alive = true;
  for (size_t p = 0; p < seeds.size() && alive; ++p) {
    const double until = begin + budget_s * static_cast<double>(p + 1) / static_cast<double>(seeds.size());
    alive = run.Phase(seeds[p], static_cast<int>(p), until, max_cases);
  }
  const double end = NowS();
  run.Report();
  const double warmup_end = begin + budget_s * kWarmupShare, window = budget_s * kRssWindowShare;
  const int64_t warmup_rss = run.RssFloor(warmup_end - window, warmup_end);
  const int64_t end_rss = run.RssFloor(end - window, end);
  std::fprintf(stderr,
               "fuzzed %.1f s; RSS floor at the end of the warm-up (%.0f-%.0f s) %" PRId64
               " KiB, in the last %.0f s %" PRId64 " KiB (bound: +%" PRId64 " KiB)\n",
               end - begin, warmup_end - window - begin, warmup_end - begin, warmup_rss / 1024, window,
               end_rss / 1024, kRssGrowthBound / 1024);
  EXPECT_EQ(run.failure_count(), 0u) << "see FAILURES above; each example names its case as seed:index";
  ASSERT_TRUE(alive) << "the server died or stopped answering; log tail:\n" << run.LogTail();
  EXPECT_GT(run.total_cases(), 1000u) << "too few cases to mean anything";
  ASSERT_GT(warmup_rss, 0);
  ASSERT_GT(end_rss, 0);
  EXPECT_LE(end_rss - warmup_rss, kRssGrowthBound)
      << "RSS floor grew from " << warmup_rss / 1024 << " KiB after the warm-up to " << end_rss / 1024 << " KiB";

  // The store still takes and answers data, and its maintenance never failed.
  ExpectCanary(/*post=*/true);
  for (const std::string& line : StoreFailuresInLog(server_->log())) ADD_FAILURE() << "server log: " << line;
  const ServerExit exit = server_->Stop(60);
  EXPECT_EQ(exit.exit_code, 0) << "signal " << exit.signal;
  for (const std::string& line : StoreFailuresInLog(server_->log())) {
    if (line.find("flush at close") != std::string::npos) ADD_FAILURE() << "server log at stop: " << line;
  }
  std::fprintf(stderr, "stop (final flush) took %.2f s; server used %.1f s of CPU, peak RSS %" PRId64 " KiB\n",
               exit.stop_seconds, exit.cpu_seconds, exit.peak_rss_bytes / 1024);
  // Restart from the files the fuzz left (WAL replay, segments, dictionary).
  Start();
  ExpectCanary(/*post=*/false);
  std::fprintf(stderr, "restart took %.2f s\n", server_->start_seconds());
}

}  // namespace
}  // namespace warpscope::testing
