// ws_cuda_kernels: known kernels for a manual check of libwarpscope_cuda.so
// on a GPU host (cuda/README.md). It launches, for `seconds` seconds:
//   - ws_add (runtime <<<>>> launches; CUDA 13 routes them through
//     cudaLaunchKernel / __cudaLaunchKernel), about 2 us each;
//   - ws_spin_100us, through cudaLaunchKernelExC, spinning ~100 us;
//   - ws_graph_kernel, three nodes of a CUDA graph launched with
//     cudaGraphLaunch;
//   - a 1 MiB cudaMemcpy host->device and a cudaMemset each iteration.
// and prints per kernel name how many it launched, so the listener's
// per-name counts can be compared.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void ws_add(float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}

__global__ void ws_spin_100us(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void ws_graph_kernel(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= 1.0001f;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  const int n = 1 << 16;
  float *a, *b;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  float* host = nullptr;
  CHECK(cudaMallocHost(&host, 1 << 20));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  // A graph of three ws_graph_kernel nodes, captured from a stream.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 3; ++i) ws_graph_kernel<<<n / 256, 256, 0, stream>>>(a, n);
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const long long spin_cycles = static_cast<long long>(clock_khz) * 100 / 1000;  // ~100 us

  unsigned long long adds = 0, spins = 0, graphs = 0, copies = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 100; ++i) {
      ws_add<<<n / 256, 256, 0, stream>>>(a, b, n);
      adds++;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(32);
    config.stream = stream;
    CHECK(cudaLaunchKernelEx(&config, ws_spin_100us, spin_cycles));
    spins++;
    CHECK(cudaGraphLaunch(exec, stream));
    graphs++;
    CHECK(cudaMemcpyAsync(a, host, 1 << 18, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemsetAsync(b, 0, n * sizeof(float), stream));
    copies++;
    CHECK(cudaStreamSynchronize(stream));
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("launched: ws_add %llu, ws_spin_100us %llu, ws_graph_kernel %llu (%llu graph launches), "
              "memcpy %llu, memset %llu\n",
              adds, spins, graphs * 3, graphs, copies, copies);
  return 0;
}
