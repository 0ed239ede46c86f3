// Workload c (C++) of bench/gpu/real_suite.sh: CUDA graphs through the runtime
// API, without PyTorch.
//   graph_replay SECONDS [UPDATE_EVERY]
// Graph A (8 kernels adding 1 to an int array) is captured right after CUDA
// starts, before the injection library's link thread has connected to the
// agent, and replayed for the whole run. Graph B (8 kernels adding v to a
// second array) is captured with stream capture, instantiated, and every
// UPDATE_EVERY iterations captured again with a new v and applied with
// cudaGraphExecUpdate (instantiated anew when the update is refused). Every
// iteration launches both and is timed with CUDA events; the arrays are
// checked against the launches counted on the host every 1000 iterations and
// at the end. Every CUDA return code is checked: any error prints it and
// exits 1. The last line is JSON, as the Python workloads print.
// Build: bench/gpu/build_graph_replay.sh [OUTDIR] (nvcc -arch=sm_90, static cudart).
#include <cuda_runtime.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kN = 1 << 16;
constexpr int kKernels = 8;

#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "CUDA error: %s at %s:%d: %s\n", #call, __FILE__, __LINE__,        \
                   cudaGetErrorString(err_));                                                 \
      std::printf("{\"workload\":\"graph_replay\",\"status\":\"error\",\"error\":\"%s\"}\n",  \
                  cudaGetErrorName(err_));                                                    \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__global__ void AddKernel(int* x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

cudaGraph_t Capture(cudaStream_t s, int* x, int v) {
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < kKernels; ++k) AddKernel<<<(kN + 255) / 256, 256, 0, s>>>(x, v, kN);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamEndCapture(s, &g));
  return g;
}

// Every element of x must equal expected.
bool Check(const int* x, long long expected, std::vector<int>* host) {
  CHECK(cudaMemcpy(host->data(), x, kN * sizeof(int), cudaMemcpyDeviceToHost));
  for (int v : *host) {
    if (v != static_cast<int>(expected)) return false;
  }
  return true;
}

long long UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  const long update_every = argc > 2 ? std::atol(argv[2]) : 100;
  const double t_start = NowS();
  const long long start_ms = UnixMs();
  // Graph A: first thing after CUDA starts (cudaSetDevice initialises it).
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* a = nullptr;
  int* b = nullptr;
  CHECK(cudaMalloc(&a, kN * sizeof(int)));
  CHECK(cudaMalloc(&b, kN * sizeof(int)));
  CHECK(cudaMemsetAsync(a, 0, kN * sizeof(int), s));
  CHECK(cudaMemsetAsync(b, 0, kN * sizeof(int), s));
  cudaGraph_t graph_a = Capture(s, a, 1);
  cudaGraphExec_t exec_a;
  CHECK(cudaGraphInstantiate(&exec_a, graph_a, 0));
  const double a_ready_ms = (NowS() - t_start) * 1000;

  int v = 1;
  cudaGraph_t graph_b = Capture(s, b, v);
  cudaGraphExec_t exec_b;
  CHECK(cudaGraphInstantiate(&exec_b, graph_b, 0));
  cudaEvent_t ev0, ev1;
  CHECK(cudaEventCreate(&ev0));
  CHECK(cudaEventCreate(&ev1));
  std::vector<int> host(kN);
  long long expect_a = 0, expect_b = 0;
  long iterations = 0, updates = 0, updates_refused = 0, checks = 0;
  double gpu_ms_sum = 0;
  const double until = NowS() + seconds;
  while (NowS() < until) {
    if (iterations > 0 && iterations % update_every == 0) {
      v = 1 + static_cast<int>((iterations / update_every) % 3);
      cudaGraph_t next = Capture(s, b, v);
      cudaGraphExecUpdateResultInfo info;
      cudaError_t err = cudaGraphExecUpdate(exec_b, next, &info);
      if (err == cudaErrorGraphExecUpdateFailure) {
        (void)cudaGetLastError();  // the refusal is sticky until read; instantiate anew
        ++updates_refused;
        CHECK(cudaGraphExecDestroy(exec_b));
        CHECK(cudaGraphInstantiate(&exec_b, next, 0));
      } else {
        CHECK(err);
      }
      CHECK(cudaGraphDestroy(graph_b));
      graph_b = next;
      ++updates;
    }
    CHECK(cudaEventRecord(ev0, s));
    CHECK(cudaGraphLaunch(exec_a, s));
    CHECK(cudaGraphLaunch(exec_b, s));
    CHECK(cudaEventRecord(ev1, s));
    expect_a += kKernels;
    expect_b += static_cast<long long>(kKernels) * v;
    ++iterations;
    if (iterations % 1000 == 0) {
      CHECK(cudaEventSynchronize(ev1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
      gpu_ms_sum += ms;
      ++checks;
      if (!Check(a, expect_a, &host) || !Check(b, expect_b, &host)) {
        std::fprintf(stderr, "wrong result after %ld iterations\n", iterations);
        std::printf("{\"workload\":\"graph_replay\",\"status\":\"error\",\"error\":\"wrong result\"}\n");
        return 1;
      }
    }
  }
  CHECK(cudaStreamSynchronize(s));
  const bool ok = Check(a, expect_a, &host) && Check(b, expect_b, &host);
  CHECK(cudaGraphExecDestroy(exec_a));
  CHECK(cudaGraphExecDestroy(exec_b));
  CHECK(cudaGraphDestroy(graph_a));
  CHECK(cudaGraphDestroy(graph_b));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaGetLastError());
  std::printf("{\"workload\":\"graph_replay\",\"pid\":%d,\"start_ms\":%lld,\"end_ms\":%lld,\"status\":\"%s\","
              "\"iterations\":%ld,\"updates\":%ld,\"updates_refused\":%ld,\"graph_a_ready_ms\":%.1f,"
              "\"iteration_ms_sampled\":%.4f}\n",
              static_cast<int>(getpid()), start_ms, UnixMs(), ok ? "ok" : "error", iterations, updates,
              updates_refused, a_ready_ms, checks ? gpu_ms_sum / checks : 0.0);
  return ok ? 0 : 1;
}
