// Hand-built MergedProfiles for the render tests (flame graph, diff, top
// table, exports). Stacks are written root first, as people read them.
#pragma once

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

// `root_first` in reading order; stored leaf first as storage returns it.
inline storage::StackValue Stack(std::vector<storage::ResolvedFrame> root_first, int64_t value) {
  storage::StackValue s;
  s.stack.frames.assign(root_first.rbegin(), root_first.rend());
  s.value = value;
  return s;
}

inline storage::MergedProfile CpuProfile(std::vector<storage::StackValue> stacks) {
  storage::MergedProfile p;
  p.type = {"cpu", "samples", 10'000'000};
  for (storage::StackValue& s : stacks) {
    p.total += s.value;
    p.stacks.push_back(std::move(s));
  }
  p.series = 1;
  return p;
}

}  // namespace warpscope::query::testing
