#include "cuda/cupti_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "proto/cuda/cupti_search_paths.h"

namespace warpscope::cuda {

namespace {


// Paths of loaded objects whose file name starts with `prefix`.
std::vector<std::string> LoadedObjects(const char* prefix) {
  struct Search {
    const char* prefix;
    std::vector<std::string> found;
  } search{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
        const char* base = std::strrchr(info->dlpi_name, '/');
        base = base != nullptr ? base + 1 : info->dlpi_name;
        if (std::strncmp(base, s->prefix, std::strlen(s->prefix)) == 0) s->found.emplace_back(info->dlpi_name);
        return 0;
      },
      &search);
  return search.found;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool TryOpen(const std::string& path, CuptiLibrary* out, std::string* last_error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    *last_error = e != nullptr ? e : path + ": cannot be loaded";
    return false;
  }
  CuptiFunctions fn;
#define WS_CUPTI_LOOKUP(name) fn.name = reinterpret_cast<decltype(fn.name)>(dlsym(handle, #name));
  WS_CUPTI_REQUIRED_FUNCTIONS(WS_CUPTI_LOOKUP)
  WS_CUPTI_OPTIONAL_FUNCTIONS(WS_CUPTI_LOOKUP)
#undef WS_CUPTI_LOOKUP
#define WS_CUPTI_CHECK(name)                                   \
  if (fn.name == nullptr) {                                    \
    *last_error = path + " has no " #name " (CUPTI too old?)"; \
    return false;                                              \
  }
  WS_CUPTI_REQUIRED_FUNCTIONS(WS_CUPTI_CHECK)
#undef WS_CUPTI_CHECK
  out->handle = handle;
  out->path = path;
  out->fn = fn;
  return true;
}

}  // namespace

bool LoadCuptiLibrary(CuptiLibrary* out, std::string* why) noexcept {
  try {
    std::string last_error;
    const char* env = std::getenv(kCuptiPathEnv);
    if (env != nullptr && env[0] != '\0') {
      if (TryOpen(env, out, &last_error)) return true;
      *why = "WARPSCOPE_CUPTI_PATH=" + std::string(env) + ": " + last_error;
      return false;
    }
    std::vector<std::string> candidates = LoadedObjects("libcupti.so");
    for (const std::string& cudart : LoadedObjects("libcudart.so")) {
      for (const char* soname : kCuptiSonames) candidates.push_back(DirName(cudart) + "/" + soname);
    }
    for (const char* soname : kCuptiSonames) candidates.emplace_back(soname);
    for (const char* dir : kCuptiToolkitDirs) {
      for (const char* soname : kCuptiSonames) candidates.push_back(std::string(dir) + "/" + soname);
    }
    for (const std::string& path : candidates) {
      // A missing file is the common case; skip it without a dlopen.
      if (path.find('/') != std::string::npos && access(path.c_str(), R_OK) != 0) continue;
      if (TryOpen(path, out, &last_error)) return true;
    }
    *why = "no usable libcupti found (set WARPSCOPE_CUPTI_PATH)";
    if (!last_error.empty()) *why += "; last error: " + last_error;
    return false;
  } catch (...) {
    *why = "out of memory while looking for libcupti";
    return false;
  }
}

std::string CuptiResultText(const CuptiFunctions& fn, CUptiResult result) noexcept {
  try {
    const char* text = nullptr;
    if (fn.cuptiGetResultString != nullptr && fn.cuptiGetResultString(result, &text) == CUPTI_SUCCESS &&
        text != nullptr) {
      return text;
    }
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  } catch (...) {
    return "CUPTI error";
  }
}

}  // namespace warpscope::cuda
