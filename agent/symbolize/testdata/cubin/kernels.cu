// Fixture for agent/symbolize/cubin_symbols_test.cc (see README.md here).
// The test finds lines by the "MARK:" comments; keep each marker unique.

__device__ __forceinline__ float Bias(float y) {
  return sqrtf(y) + 1.0f;  // MARK: bias_sqrt
}

__device__ __forceinline__ float Scale(float x, float k) {
  float y = x * k;  // MARK: scale_mul
  return Bias(y);   // MARK: scale_calls_bias
}

extern "C" __global__ void add_one(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // MARK: add_one_index
  if (i < n) {
    out[i] = in[i] + 1.0f;  // MARK: add_one_store
  }
}

namespace demo {
__global__ void scale(float* out, const float* in, float k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // MARK: scale_index
  if (i < n) {
    out[i] = Scale(in[i], k);  // MARK: scale_calls_scale
  }
}
}  // namespace demo
