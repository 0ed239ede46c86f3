#include "model/frame_names.h"

#include <cinttypes>
#include <cstdio>

namespace warpscope {

std::string HexAddress(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
  return buf;
}

namespace {
constexpr char kKernelBinary[] = "[kernel.kallsyms]";
// The "binary" of CUDA kernel frames (gpu_time leaves).
constexpr char kCudaKernelBinary[] = "[cuda kernel]";

}  // namespace

std::string BinaryBasename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string UnsymbolizedFrameName(const Profile& profile, const ProfileLocation& location) {
  if (location.mapping_id == 0 || location.mapping_id > profile.mappings.size()) {
    return HexAddress(location.address);
  }
  const ProfileMapping& mapping = profile.mapping(location.mapping_id);
  // Kernel addresses are absolute and what kallsyms/System.map list; user
  // addresses are shown as file offsets, which survive ASLR and match
  // `addr2line -e libfoo.so`-style tooling on the same binary.
  if (mapping.is_kernel || location.kind == FrameKind::kKernel || mapping.filename.empty() ||
      location.address < mapping.memory_start) {
    return HexAddress(location.address);
  }
  return BinaryBasename(mapping.filename) + "+" +
         HexAddress(location.address - mapping.memory_start + mapping.file_offset);
}

std::vector<std::string> FrameNamesInnermostFirst(const Profile& profile, const ProfileLocation& location) {
  std::vector<std::string> names;
  names.reserve(location.lines.empty() ? 1 : location.lines.size());
  for (const ProfileLine& line : location.lines) {
    if (line.function_id != 0 && line.function_id <= profile.functions.size()) {
      const ProfileFunction& function = profile.function(line.function_id);
      if (!function.name.empty()) {
        names.push_back(function.name);
        continue;
      }
      if (!function.system_name.empty()) {
        names.push_back(function.system_name);
        continue;
      }
    }
    // Keep the inline depth even when one level has no usable name.
    names.push_back(UnsymbolizedFrameName(profile, location));
  }
  if (names.empty()) names.push_back(UnsymbolizedFrameName(profile, location));
  return names;
}

std::string FrameBinary(const Profile& profile, const ProfileLocation& location) {
  if (location.mapping_id != 0 && location.mapping_id <= profile.mappings.size()) {
    const ProfileMapping& mapping = profile.mapping(location.mapping_id);
    if (!mapping.filename.empty()) return mapping.filename;
    if (mapping.is_kernel) return kKernelBinary;
  }
  if (location.kind == FrameKind::kPython && !location.lines.empty()) {
    const uint64_t fn = location.lines.front().function_id;
    if (fn != 0 && fn <= profile.functions.size()) return profile.function(fn).filename;  // the source file
  }
  if (location.kind == FrameKind::kCudaKernel || location.kind == FrameKind::kGpuInstruction ||
      location.kind == FrameKind::kGpuStall) {
    return kCudaKernelBinary;
  }
  if (location.kind == FrameKind::kGpuLine && !location.lines.empty()) {
    const uint64_t fn = location.lines.front().function_id;
    if (fn != 0 && fn <= profile.functions.size()) return profile.function(fn).filename;  // the source file
  }
  return location.kind == FrameKind::kKernel ? kKernelBinary : "";
}

}  // namespace warpscope
