// Hand-built MergedProfiles for the render tests (flame graph, diff, top
// table, exports). Stacks are written root first, as people read them.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "storage/profile_store.h"

namespace warpscope::query::testing {

inline storage::ResolvedFrame Native(std::string function, std::string mapping = "/usr/bin/app",
                                     uint64_t address = 0x1000, int64_t line = 0) {
  storage::ResolvedFrame f;
  f.kind = warpscope::v1::FRAME_KIND_NATIVE;
  f.function_name = std::move(function);
  f.mapping_file = std::move(mapping);
  f.address = address;
  f.line = line;
  return f;
}

inline storage::ResolvedFrame Kernel(std::string function, uint64_t address = 0xffffffff81000000) {
  storage::ResolvedFrame f;
  f.kind = warpscope::v1::FRAME_KIND_KERNEL;
  f.function_name = std::move(function);
  f.address = address;
  return f;
}

inline storage::ResolvedFrame Python(std::string qualname, std::string file, int64_t line) {
  storage::ResolvedFrame f;
  f.kind = warpscope::v1::FRAME_KIND_PYTHON;
  f.function_name = std::move(qualname);
  f.file = std::move(file);
  f.line = line;
  return f;
}

// A frame the symbolizer could not name.
inline storage::ResolvedFrame Unsymbolized(std::string mapping, uint64_t address) {
  storage::ResolvedFrame f;
  f.mapping_file = std::move(mapping);
  f.address = address;
  return f;
}

inline storage::ResolvedFrame Inlined(storage::ResolvedFrame f) {
  f.inlined = true;
  return f;
}

// A stack with its frames spelled out; CpuProfile turns them into a frame table.
struct TestStack {
  std::vector<storage::ResolvedFrame> frames;  // leaf first
  int64_t value = 0;
};

// `root_first` in reading order; stored leaf first as storage returns it.
inline TestStack Stack(std::vector<storage::ResolvedFrame> root_first, int64_t value) {
  return TestStack{{root_first.rbegin(), root_first.rend()}, value};
}

// Equal frames share one frame table entry, as in storage's answers.
inline storage::MergedProfile CpuProfile(const std::vector<TestStack>& stacks) {
  storage::MergedProfile p;
  p.type = {"cpu", "samples", 10'000'000};
  for (const TestStack& s : stacks) {
    storage::StackValue value;
    for (const storage::ResolvedFrame& f : s.frames) {
      auto it = std::find(p.frames.begin(), p.frames.end(), f);
      if (it == p.frames.end()) it = p.frames.insert(p.frames.end(), f);
      value.frames.push_back(static_cast<uint32_t>(it - p.frames.begin()));
    }
    value.value = s.value;
    p.total += s.value;
    p.stacks.push_back(std::move(value));
  }
  p.series = 1;
  return p;
}

}  // namespace warpscope::query::testing
