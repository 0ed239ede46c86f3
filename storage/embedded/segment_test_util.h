// Helpers shared by the segment file tests: a scratch directory, a reference
// model of what a segment should return, and file byte surgery.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "storage/embedded/segment_file.h"

namespace warpscope::segment_test {

// A fresh directory per test, removed afterwards.
class SegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ScratchBase() + "/segment_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  virtual std::string ScratchBase() const {
    const char* base = getenv("TMPDIR");
    return base && *base ? base : "/tmp";
  }

  std::string dir_;
};

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// (type, series, time, stack) -> summed value: what a segment must return.
using Key = std::tuple<uint32_t, uint64_t, int64_t, uint64_t>;
using Model = std::map<Key, int64_t>;

inline Model BuildModel(const std::vector<SampleRow>& rows) {
  Model m;
  for (const SampleRow& r : rows) m[{r.type_id, r.series_id, r.time_ns, r.stack_id}] += r.value;
  return m;
}

// The model's answer to a Scan, as a multiset keyed like the model.
inline Model Query(const Model& m, uint32_t type, int64_t from, int64_t to,
                   const std::function<bool(uint64_t)>& filter) {
  Model out;
  for (const auto& [k, v] : m) {
    const auto& [t, series, time, stack] = k;
    if (t == type && time >= from && time < to && (!filter || filter(series))) out[k] = v;
  }
  return out;
}

// Scans into a model; fails the test on duplicate keys (merging must be complete).
inline Model ScanToModel(const SegmentReader& reader, uint32_t type, int64_t from, int64_t to,
                         const std::function<bool(uint64_t)>& filter, Status* status) {
  Model out;
  *status = reader.Scan(from, to, filter, type, [&](const SampleRow& r) {
    const bool inserted = out.emplace(Key{r.type_id, r.series_id, r.time_ns, r.stack_id}, r.value).second;
    EXPECT_TRUE(inserted) << "row visited twice: series " << r.series_id << " time " << r.time_ns;
  });
  return out;
}

// Rows shaped like profiles: a few types, series and 10 s buckets, stacks
// from a small set, many exact duplicates.
inline std::vector<SampleRow> RandomRows(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SampleRow> rows(n);
  const int64_t t0 = 1'700'000'000'000'000'000LL;
  for (SampleRow& r : rows) {
    r.type_id = static_cast<uint32_t>(rng() % 3);
    r.series_id = 1 + rng() % 40;
    r.time_ns = t0 + static_cast<int64_t>(rng() % 360) * 10'000'000'000LL;
    r.stack_id = 1 + rng() % 500;
    r.value = 1 + static_cast<int64_t>(rng() % 20);
  }
  return rows;
}

}  // namespace warpscope::segment_test
