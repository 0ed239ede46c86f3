// `warpscope-agent probe-stack`: whole user stacks at the entry of a function
// (a uprobe), symbolized and aggregated. Answers "who calls cuLaunchKernel?"
// and checks that the unwinder reaches main from deep inside a library.
#pragma once

#include <string>
#include <vector>

namespace warpscope {

// args exclude the program name and the subcommand; returns the exit code.
int RunProbeStack(const std::vector<std::string>& args);

}  // namespace warpscope
