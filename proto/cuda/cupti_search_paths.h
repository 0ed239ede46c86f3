// Where libwarpscope_cuda.so looks for CUPTI (cupti_library.h has the whole
// order): shared with `warpscope-agent doctor`, which looks in the same
// places on the host. Needs no CUDA header.
#pragma once

namespace warpscope::cuda {

// Set in an application's environment: that libcupti and no other.
inline constexpr char kCuptiPathEnv[] = "WARPSCOPE_CUPTI_PATH";
// Newest first, beside a loaded libcudart, on the loader's path and in the
// toolkit directories.
inline constexpr const char* kCuptiSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
inline constexpr const char* kCuptiToolkitDirs[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64"};

}  // namespace warpscope::cuda
