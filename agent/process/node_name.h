// The "node" label every sample carries.
#pragma once

#include <string>
#include <string_view>

namespace warpscope {

// Name of the environment variable that overrides the node name. main() reads
// it once (CONTRIBUTING.md, "State and threads": no global state below main) and passes the value in.
inline constexpr char kNodeNameEnvVar[] = "WARPSCOPE_NODE_NAME";

// Returns `override_value` when it is non-empty, else gethostname(), else "".
// The override exists because an agent running as a Kubernetes DaemonSet
// without hostNetwork sees its pod name as hostname; the manifest sets
// WARPSCOPE_NODE_NAME from the downward API (spec.nodeName) instead.
// Pass getenv(kNodeNameEnvVar) or nullptr; tests pass literals.
std::string NodeName(const char* override_value);

}  // namespace warpscope
