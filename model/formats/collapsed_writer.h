// Brendan Gregg's folded-stack format ("collapsed stacks"), the input of
// flamegraph.pl, speedscope, inferno and most flame-graph tools.
//
// One line per unique stack: "comm;root;...;leaf COUNT\n" where COUNT is the
// number of samples. The first element is the process name (labels.comm,
// "[unknown]" when empty), frames follow root first, inlined functions are
// expanded outer first, kernel frames get FlameGraph's "_[k]" suffix. ';' in a
// name becomes ':' and control characters (newlines, tabs) become spaces, so a
// name can never break the format. Stacks that differ only in pid, tid or
// thread name are merged; lines are sorted bytewise, so the output is deterministic.
//
// Pure function; safe on any thread that owns the Profile.
#pragma once

#include <string>

#include "model/profile.h"

namespace warpscope {

std::string EncodeCollapsed(const Profile& profile);

// Appends one frame name as the format allows it: ';' -> ':', control
// characters -> ' ', "" -> "[unknown]", and "_[k]" after kernel frames.
// Shared with the server's collapsed answers (query/profile_export.h).
void AppendCollapsedFrame(const std::string& name, bool kernel, std::string* out);

}  // namespace warpscope
