#include "agent/symbolize/demangle.h"

#include <cxxabi.h>
#include <libiberty/demangle.h>

#include <cstdlib>

namespace warpscope {

std::string_view StripSymbolVersion(std::string_view name) {
  // '@' never occurs in a mangled C++ name, so the first one starts the version.
  const size_t at = name.find('@');
  return at == std::string_view::npos || at == 0 ? name : name.substr(0, at);
}

namespace {

// Rust, through libiberty (Debian's libiberty-dev, the GNU toolchain's own
// demangler): v0 names ("_RNv...") and legacy ones, which are Itanium-shaped
// ("_ZN...17h<16 hex>E") and would otherwise show their hash. "" when `name`
// is neither.
std::string DemangleRust(const std::string& name) {
  char* out = cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
  if (out == nullptr) return "";
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace

std::string Demangle(std::string_view mangled) {
  const std::string name(StripSymbolVersion(mangled));
  if (name.starts_with("_R") || name.starts_with("_ZN")) {
    if (std::string rust = DemangleRust(name); !rust.empty()) return rust;
  }
  // "_Z" for functions, "___Z" for blocks; everything else is not Itanium C++.
  if (!name.starts_with("_Z") && !name.starts_with("___Z")) return name;
  int status = 0;
  // __cxa_demangle reports failure through `status`; it does not throw.
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return name;
  }
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace warpscope
