// A "CUDA application" with known GPU time per call site, for the GPU-time
// pipeline test (tests/integration/gpu_time_bpf_test.cc). No GPU: it loads
// the real libwarpscope_cuda.so (argv[1]) and calls InitializeInjection as
// the driver would; the fake CUPTI (WARPSCOPE_CUPTI_PATH) turns each launch
// into the library's launch callback and a kernel record of a chosen duration.
//
//   cuda_launch_sites LIBRARY ITERATIONS [WAIT_SECONDS [waits]]   (env WS_SPIN_BEFORE_CUPTI_MS: see main)
// Each iteration launches alphaKernel (300 us) from SiteAlpha and betaKernel
// (100 us) from SiteBeta, so alpha holds 75% of the GPU time. Prints
// "recorded ALPHA BETA": the launches whose kernel record was queued, and
// "left N F": how often the library left CUPTI between windows
// (cuptiUnsubscribe) and how often it tore CUPTI down (cuptiFinalize: never).
// With "waits", each iteration instead waits in two synchronisation calls:
// SiteStreamWait in cudaStreamSynchronize (nesting cuStreamSynchronize) for
// 3 ms while gammaKernel runs 2 ms on that stream, and SiteDeviceWait in
// cudaDeviceSynchronize (nesting cuCtxSynchronize) for 1 ms while deltaKernel
// runs 400 us; it prints "waited STREAM DEVICE" (the calls made).
#include <cupti.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fakes/fake_cupti/fake_cupti_hooks.h"

namespace {

ws_fake_cupti_launch_fn g_launch = nullptr;
ws_fake_cupti_synchronize_fn g_synchronize = nullptr;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t Launch(const char* name, uint64_t duration_ns) {
  return g_launch(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, name, duration_ns, 0,
                  0);
}

}  // namespace

extern "C" __attribute__((noinline)) int SiteAlpha() {
  const int recorded = Launch("_Z11alphaKernelv", 300'000) != 0;
  __asm__ volatile("" ::: "memory");
  return recorded;
}

extern "C" __attribute__((noinline)) int SiteBeta() {
  const int recorded = Launch("_Z10betaKernelv", 100'000) != 0;
  __asm__ volatile("" ::: "memory");
  return recorded;
}

extern "C" __attribute__((noinline)) int SiteStreamWait() {
  g_synchronize(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 7, 3'000'000, "_Z11gammaKernelv", 2'000'000);
  __asm__ volatile("" ::: "memory");
  return 1;
}

extern "C" __attribute__((noinline)) int SiteDeviceWait() {
  g_synchronize(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 0, 1'000'000, "_Z11deltaKernelv", 400'000);
  __asm__ volatile("" ::: "memory");
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LIBWARPSCOPE_CUDA ITERATIONS\n", argv[0]);
    return 2;
  }
  const int iterations = std::atoi(argv[2]);
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const char* cupti = std::getenv("WARPSCOPE_CUPTI_PATH");
  if (library == nullptr || cupti == nullptr) {
    std::fprintf(stderr, "cannot load %s (or WARPSCOPE_CUPTI_PATH unset): %s\n", argv[1], dlerror());
    return 1;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  // WS_SPIN_BEFORE_CUPTI_MS: burn CPU between loading the injection library
  // and CUPTI, so that the agent samples this process, and reads its maps,
  // while CUPTI is not mapped yet (it must read them again at the connect).
  if (const char* spin = std::getenv("WS_SPIN_BEFORE_CUPTI_MS")) {
    const uint64_t until = NowNs() + static_cast<uint64_t>(std::atoi(spin)) * 1'000'000ull;
    while (NowNs() < until) {
    }
  }
  void* fake = dlopen(cupti, RTLD_NOW | RTLD_LOCAL);
  if (init == nullptr || fake == nullptr || init() != 1) {
    std::fprintf(stderr, "InitializeInjection failed\n");
    return 1;
  }
  g_launch = reinterpret_cast<ws_fake_cupti_launch_fn>(dlsym(fake, "ws_fake_cupti_launch"));
  auto subscribed = reinterpret_cast<ws_fake_cupti_subscribed_fn>(dlsym(fake, "ws_fake_cupti_subscribed"));
  g_synchronize = reinterpret_cast<ws_fake_cupti_synchronize_fn>(dlsym(fake, "ws_fake_cupti_synchronize"));
  auto flush = reinterpret_cast<ws_fake_cupti_flush_fn>(dlsym(fake, "ws_fake_cupti_flush"));
  auto calls = reinterpret_cast<ws_fake_cupti_call_count_fn>(dlsym(fake, "ws_fake_cupti_call_count"));
  // The agent answers, then attaches its probe (within its poll interval).
  const uint64_t wait_s = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 30;
  const uint64_t deadline = NowNs() + wait_s * 1'000'000'000ull;
  while (!subscribed() && NowNs() < deadline) usleep(10'000);
  if (!subscribed()) {
    std::fprintf(stderr, "no agent answered on the socket\n");
    return 1;
  }
  usleep(1'500'000);
  if (argc > 4 && std::string_view(argv[4]) == "waits") {
    int stream = 0, device = 0;
    for (int i = 0; i < iterations; ++i) {
      stream += SiteStreamWait();
      device += SiteDeviceWait();
    }
    flush();
    std::printf("waited %d %d\n", stream, device);
    std::fflush(stdout);
    usleep(2'500'000);  // the library's sender ships the last batch
    return 0;
  }
  int alpha = 0, beta = 0;
  for (int i = 0; i < iterations; ++i) {
    alpha += SiteAlpha();
    beta += SiteBeta();
    usleep(200);
  }
  flush();
  std::printf("recorded %d %d\n", alpha, beta);
  std::printf("left %llu %llu\n", static_cast<unsigned long long>(calls("cuptiUnsubscribe")),
              static_cast<unsigned long long>(calls("cuptiFinalize")));
  std::fflush(stdout);
  usleep(2'500'000);  // the library's sender ships the last batch
  return 0;
}
