// Test helper: decodes a gzipped pprof file into stacks of function names, so
// integration tests can assert on what a user would see.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "proto/pprof/profile.pb.h"

namespace warpscope::testing {

struct DecodedFrame {
  std::string function;
  std::string mapping;  // mapping filename, "" when none
  bool kernel = false;
  std::string filename;  // the function's source file, "" when unknown
  int64_t line = 0;
};

struct DecodedSample {
  std::vector<DecodedFrame> frames;  // leaf first
  std::map<std::string, std::string> labels;
  int64_t count = 0;
  int64_t cpu_nanos = 0;
  bool Contains(const std::string& function) const;
};

struct DecodedProfile {
  perftools::profiles::Profile raw;
  std::vector<DecodedSample> samples;
  // Samples whose labels["pid"] == pid (all when pid is empty).
  std::vector<DecodedSample> ForPid(const std::string& pid) const;
  int64_t TotalCount(const std::string& pid = "") const;
  int64_t CountContaining(const std::string& function, const std::string& pid = "") const;
};

StatusOr<std::string> Gunzip(const std::string& data);
StatusOr<DecodedProfile> ReadPprofFile(const std::string& path);

}  // namespace warpscope::testing
