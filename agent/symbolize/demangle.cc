#include "agent/symbolize/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace warpscope {

std::string_view StripSymbolVersion(std::string_view name) {
  // '@' never occurs in a mangled C++ name, so the first one starts the version.
  const size_t at = name.find('@');
  return at == std::string_view::npos || at == 0 ? name : name.substr(0, at);
}

std::string Demangle(std::string_view mangled) {
  const std::string name(StripSymbolVersion(mangled));
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
