// A bounded, seeded fuzz of the cubin routes (PUT, HEAD and GET
// /api/v1/gpu/cubins/<hash>) of the real warpscope-server on loopback
// (CONTRIBUTING.md, "Tests"), beside the ingest fuzz (ingest_fuzz_test.cc).
// Each case is one raw HTTP request on its own connection: a hash that is
// the body's, another's, malformed or percent-encoded oddly; a body that is
// an ELF cubin, a mutated one, too short, without the ELF magic, empty, over
// --cubin-max-bytes, garbage; sent plain, as zstd, as a broken zstd frame
// or with an encoding or type the route refuses; with the token, a wrong
// one or none; by PUT, HEAD, GET or a method the route does not take.
//
// Checks: every request is answered (no connection dropped or timed out: a
// crash or a hang), no answer is a 5xx, /healthz answers every few hundred
// cases, every cubin acknowledged is read back byte for byte, every refusal
// is counted in /api/v1/status, and the server stops cleanly.
//
// Reproducing: a failure names its case as "seed:index". WS_FUZZ_SEEDS=a,b
// picks the seeds (default: one fixed, one from the clock), WS_FUZZ_SECONDS
// the budget (default 6, shared by the seeds).
//
// Threading: the test's one thread generates, sends and checks every case.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "model/cubin_hash.h"
#include "tests/integration/server_process.h"
#include "tests/support/loopback_client.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kToken[] = "cubin-fuzz-token-0123456789";
constexpr uint64_t kFixedSeed = 0xc0b1f022;
constexpr size_t kMaxCubinBytes = 64 * 1024;  // --cubin-max-bytes: over it is a cheap 413
constexpr int kHealthEvery = 200;

struct Answer {
  int status = 0;  // 0: no answer (closed or timed out)
  std::string body;
};

// Sends one request on a fresh connection (Connection: close) and reads the
// answer until the server closes.
Answer Exchange(int port, const std::string& request) {
  Answer a;
  const int fd = ConnectLoopback(port);
  if (fd < 0) return a;
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may refuse early (413) and close: read its answer
    sent += static_cast<size_t>(n);
  }
  bool closed = false;
  const std::string wire = ReadUntilClosed(fd, 10s, &closed);
  ::close(fd);
  if (wire.rfind("HTTP/1.1 ", 0) != 0 || wire.size() < 12) return a;
  a.status = std::atoi(wire.substr(9, 3).c_str());
  const size_t body = wire.find("\r\n\r\n");
  if (body != std::string::npos) a.body = wire.substr(body + 4);
  return a;
}

std::string PercentDecoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string Zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 1));
  return out;
}

class CubinFuzz {
 public:
  CubinFuzz(uint64_t seed, int port) : seed_(seed), rng_(seed), port_(port) {}

  std::string Bytes(size_t n) {
    std::string b(n, '\0');
    for (char& c : b) c = static_cast<char>(rng_());
    return b;
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  // An ELF-looking cubin: the magic, then random bytes (or a run of one
  // byte, which compresses well).
  std::string Cubin() {
    const size_t size = 64 + Below(OneIn(4) ? 20'000 : 2'000);
    std::string b = OneIn(3) ? std::string(size, static_cast<char>(rng_())) : Bytes(size);
    b.replace(0, 4, "\x7f" "ELF");
    return b;
  }

  // `valid`: an ELF-looking cubin within the size limit, as generated.
  std::string Body(bool* valid) {
    *valid = false;
    switch (Below(9)) {
      case 0: return "";
      case 1: return Cubin().substr(0, Below(64));  // shorter than an ELF header
      case 2: return Bytes(64 + Below(3000));       // no ELF magic (almost surely)
      case 3: return std::string("\x7f" "ELF") + Bytes(kMaxCubinBytes);  // over the limit
      case 4: {
        std::string b = Cubin();
        b[Below(b.size())] ^= static_cast<char>(1 + Below(255));
        return b;  // valid form; the hash below is usually of the unmutated copy
      }
      default: *valid = true; return Cubin();
    }
  }

  std::string Hash(const std::string& body) {
    const std::string good = CubinHash(body);
    switch (Below(14)) {
      case 0: return CubinHash(Bytes(10));
      case 1: return good.substr(0, 31);
      case 2: return good + "0";
      case 3: {
        std::string up = good;
        for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return up;
      }
      case 4: return "..%2f..%2fLOCK";
      case 5: return "%2e%2e/" + good.substr(0, 20);
      case 6: return good.substr(0, 16) + "%00" + good.substr(16);
      case 7: {
        std::string encoded;  // every digit percent-encoded: decodes to the good hash
        for (char c : good) {
          static const char kHex[] = "0123456789ABCDEF";
          encoded += std::string("%") + kHex[(c >> 4) & 15] + kHex[c & 15];
        }
        return encoded;
      }
      case 8: return std::string(100 + Below(6000), 'a');
      case 9: return "";
      case 10: return good + "/x";
      default: return good;
    }
  }

  std::string Request(std::string* method_out, std::string* hash_out, std::string* body_out, bool* valid) {
    static const char* kMethods[] = {"PUT", "PUT", "PUT", "PUT", "PUT", "HEAD", "GET", "GET", "POST", "DELETE",
                                     "PATCH", "OPTIONS"};
    const std::string method = kMethods[Below(sizeof(kMethods) / sizeof(kMethods[0]))];
    std::string body = Body(valid);
    // Known hashes sometimes, so HEAD and GET find what PUT stored.
    std::string hash = !stored_.empty() && method != "PUT" && OneIn(2)
                           ? std::next(stored_.begin(), static_cast<long>(Below(stored_.size())))->first
                           : Hash(body);
    std::string head = method + " /api/v1/gpu/cubins/" + hash + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    switch (Below(12)) {
      case 0: break;  // no token
      case 1: head += "Authorization: Bearer wrong-token-wrong-token\r\n"; break;
      default: head += std::string("Authorization: Bearer ") + kToken + "\r\n";
    }
    std::string sent = body;
    if (method == "PUT" || method == "POST" || method == "PATCH" || OneIn(8)) {
      switch (Below(10)) {
        case 0: head += "Content-Type: text/html\r\n"; break;
        case 1: head += "Content-Type: application/octet-stream; charset=binary\r\n"; break;
        case 2: break;
        default: head += "Content-Type: application/octet-stream\r\n";
      }
      switch (Below(8)) {
        case 0: case 1: case 2:
          head += "Content-Encoding: zstd\r\n";
          sent = Zstd(body);
          if (OneIn(4) && !sent.empty()) sent[Below(sent.size())] ^= 0x5a;  // a broken frame
          break;
        case 3: head += "Content-Encoding: gzip\r\n"; break;
        case 4: head += "Content-Encoding: identity\r\n"; break;
        default: break;
      }
      head += "Content-Length: " + std::to_string(sent.size()) + "\r\n";
    } else {
      sent.clear();
    }
    *method_out = method;
    *hash_out = hash;
    *body_out = std::move(body);
    return head + "Connection: close\r\n\r\n" + sent;
  }

  // Runs cases until `deadline`; false once a check failed (the failure is
  // reported by gtest with the case's name).
  bool Run(std::chrono::steady_clock::time_point deadline, int* cases) {
    for (uint64_t index = 0; std::chrono::steady_clock::now() < deadline; ++index, ++*cases) {
      const std::string name = std::to_string(seed_) + ":" + std::to_string(index);
      std::string method, hash, body;
      bool valid = false;
      const std::string request = Request(&method, &hash, &body, &valid);
      const Answer a = Exchange(port_, request);
      if (a.status == 0) {
        ADD_FAILURE() << name << ": no answer to " << request.substr(0, 200);
        return false;
      }
      if (a.status >= 500) {
        ADD_FAILURE() << name << ": " << a.status << " " << a.body.substr(0, 300) << " for " << request.substr(0, 200);
        return false;
      }
      ++statuses_[a.status];
      if (method == "PUT" && (a.status == 201 || a.status == 200)) {
        const bool elf = body.size() >= 64 && body.size() <= kMaxCubinBytes && body.compare(0, 4, "\x7f" "ELF") == 0;
        if (!elf || PercentDecoded(hash) != CubinHash(body)) {
          ADD_FAILURE() << name << ": stored a body that is not a cubin, or under another hash: " << hash;
          return false;
        }
        stored_[CubinHash(body)] = body;
      }
      if (index % kHealthEvery == 0) {
        const HttpResult health = HttpGet(port_, "/healthz");
        if (health.status != 200) {
          ADD_FAILURE() << name << ": /healthz answered " << health.status;
          return false;
        }
      }
    }
    return true;
  }

  const std::map<std::string, std::string>& stored() const { return stored_; }
  const std::map<int, int>& statuses() const { return statuses_; }

 private:
  uint64_t seed_;
  std::mt19937_64 rng_;
  int port_;
  std::map<std::string, std::string> stored_;  // hash -> bytes acknowledged
  std::map<int, int> statuses_;
};

std::vector<uint64_t> Seeds() {
  if (const char* env = std::getenv("WS_FUZZ_SEEDS")) {
    std::vector<uint64_t> seeds;
    for (std::string s = env; !s.empty();) {
      const size_t comma = s.find(',');
      seeds.push_back(std::strtoull(s.substr(0, comma).c_str(), nullptr, 0));
      s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
    return seeds;
  }
  return {kFixedSeed, static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count())};
}

TEST(CubinFuzzTest, CubinRoutesAnswerEveryRequestWithoutA5xxAndKeepWhatTheyAcknowledge) {
  char dir_template[] = "/tmp/ws_cubin_fuzz_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto server = ServerProcess::Start(WS_SERVER_BIN, dir + "/data",
                                     {"--token", kToken, "--retention", "0", "--cubin-max-bytes", "64K"});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();

  const char* seconds_env = std::getenv("WS_FUZZ_SECONDS");
  const double budget_s = seconds_env != nullptr ? std::atof(seconds_env) : 6.0;
  const std::vector<uint64_t> seeds = Seeds();
  std::map<std::string, std::string> stored;
  int cases = 0;
  for (uint64_t seed : seeds) {
    std::cerr << "cubin fuzz: seed " << seed << "\n";
    CubinFuzz fuzz(seed, port);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(budget_s / seeds.size()));
    const bool ok = fuzz.Run(deadline, &cases);
    for (const auto& [status, n] : fuzz.statuses()) std::cerr << "  " << status << ": " << n << "\n";
    stored.insert(fuzz.stored().begin(), fuzz.stored().end());
    if (!ok) break;
  }
  EXPECT_GT(cases, 100);

  // Everything acknowledged reads back byte for byte.
  for (const auto& [hash, bytes] : stored) {
    const HttpResult got = HttpGet(port, "/api/v1/gpu/cubins/" + hash, kToken);
    ASSERT_EQ(got.status, 200) << hash;
    EXPECT_TRUE(got.body == bytes) << hash;
  }
  const HttpResult status = HttpGet(port, "/api/v1/status", kToken);
  ASSERT_EQ(status.status, 200);
  const json cubins = json::parse(status.body)["cubins"];
  EXPECT_EQ(cubins["stored"].get<size_t>(), stored.size());
  if (cases > 500) {
    EXPECT_GT(cubins["refused_invalid"].get<int>(), 0) << cubins.dump();
    EXPECT_GT(cubins["refused_too_large"].get<int>(), 0) << cubins.dump();
  }
  const ServerExit exit = (*server)->Stop();
  EXPECT_EQ(exit.exit_code, 0) << (*server)->log().substr(0, 4000);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace warpscope::testing
