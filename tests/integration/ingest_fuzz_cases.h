// The cases of the ingest fuzz (ingest_fuzz_test.cc). Four kinds:
//  - semantic: a valid batch, drawn from fixed pools of stacks, processes,
//    metrics and GPU kernels, with 0-3 mutations that keep it parseable:
//    indexes out of range, extreme integers in values, periods, times,
//    sequences and durations, unknown frame and activity kinds, long and
//    invalid-UTF-8 strings, NaN/inf metric values, odd GPU activity and
//    coverage rows, duplicate label keys, deep stacks, and (rarely) thousands
//    of samples of one key at the largest value the server takes, whose sum
//    is past INT64_MAX;
//  - bytes: the serialized batch, or its zstd frame, with bits flipped, cut,
//    extended, spliced with another batch; rarely a 70 MiB zstd bomb;
//  - raw HTTP: bad Content-Length, chunked oddities, wrong Content-Type or
//    Content-Encoding, odd request lines and headers, for a raw socket;
//  - query: every GET route of docs/api.md with random and extreme parameters
//    and random selectors of bounded size (regex repetition at most 8).
//
// A case is a pure function of (seed, phase, index, now): each draws from its
// own random stream, so any case can be made again alone. The pools are fixed
// for every seed, so a long run repeats what it stored (a flat RSS then means
// no leak).
//
// Threading: none; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warpscope::testing::fuzz {

// The bearer token of the fuzzed server; raw requests carry it (or a wrong one).
inline constexpr char kFuzzToken[] = "fuzz-token-7f3a";

enum class Kind { kSemantic, kBytes, kRaw, kQuery };
inline constexpr int kKinds = 4;
const char* KindName(Kind k);

struct FuzzCase {
  Kind kind = Kind::kQuery;
  std::string what;
  // kSemantic, kBytes: a POST /api/v1/ingest.
  std::string body;
  std::string content_encoding = "zstd";
  // kRaw: the bytes of the connection; shut_wr half-closes it right after them.
  std::string raw;
  bool shut_wr = false;
  // kQuery: path and query string.
  std::string path;
};

// One random stream per case (splitmix64), so any case can be made again alone.
class CaseRng {
 public:
  CaseRng(uint64_t seed, uint64_t index) : state_(seed * 0xD1B54A32D192ED03ull ^ (index + 1) * 0x9E3779B97F4A7C15ull) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  bool Chance(double p) { return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  uint64_t state_;
};

// Case `index` of `seed`. `phase` (which seed of a run) only moves the
// sequences up, so each agent's batches arrive in increasing order. When
// `only_kinds` is not empty (names of kinds, e.g. "semantic,query"), cases
// of other kinds are drawn again.
FuzzCase MakeCase(uint64_t seed, int phase, uint64_t index, int64_t now_ns, const std::string& only_kinds = "");

// The query kind (ingest_fuzz_queries.cc), for MakeCase.
FuzzCase MakeQueryCase(CaseRng& r, int64_t now_ns);

}  // namespace warpscope::testing::fuzz
