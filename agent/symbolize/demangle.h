// C++ and Rust symbol demangling for display. Pure function, any thread.
#pragma once

#include <string>
#include <string_view>

namespace warpscope {

// Strips a symbol-version suffix ("memcpy@@GLIBC_2.14", "foo@GLIBC") and
// demangles Itanium C++ names ("_ZN3foo3barEv" -> "foo::bar()") and Rust
// names, v0 ("_RNvCs..._5crate4main" -> "crate::main") and legacy (the
// "::h<hash>" suffix dropped). Anything else (C names, malformed manglings)
// comes back as given, minus the version suffix. Never throws.
std::string Demangle(std::string_view mangled);

// The symbol without its version suffix.
std::string_view StripSymbolVersion(std::string_view name);

}  // namespace warpscope
