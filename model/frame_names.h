// How exporters name frames and binaries, so that pprof, the collapsed stacks
// and the top-functions table all say the same thing for the same frame.
// Pure functions of a finished Profile; safe on any thread that owns it.
#pragma once

#include <string>
#include <vector>

#include "model/profile.h"

namespace warpscope {

// "libfoo.so+0x1a2b" (file offset inside the mapped binary) for a frame the
// symbolizer could not name; "0xffffffff81001234" when no mapping is known.
std::string UnsymbolizedFrameName(const Profile& profile, const ProfileLocation& location);

// The function names at a location, innermost inlined function first (the
// order of ProfileLocation::lines). A location without lines yields one
// UnsymbolizedFrameName; a function without a name falls back to its
// system_name, then to the unsymbolized name. Never returns an empty name.
std::vector<std::string> FrameNamesInnermostFirst(const Profile& profile, const ProfileLocation& location);

// The binary a frame belongs to: the mapping's filename, "[kernel.kallsyms]"
// for kernel frames without a mapping, the source file for Python frames, "" when
// unknown.
std::string FrameBinary(const Profile& profile, const ProfileLocation& location);

// "0x1a2b": how an address without a symbol is written everywhere.
std::string HexAddress(uint64_t address);

// "/usr/lib/libfoo.so.1" -> "libfoo.so.1"; "[kernel.kallsyms]" unchanged.
std::string BinaryBasename(const std::string& path);

}  // namespace warpscope
