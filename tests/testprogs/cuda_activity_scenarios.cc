// A "CUDA application" whose GPU timeline is known, for the GPU activity
// analyses (agent/collectors/gpu_time/activity_analyzer.h) and the insights
// that read them (tests/integration/gpu_time_bpf_test.cc). No GPU: like
// cuda_launch_sites it loads the real libwarpscope_cuda.so (argv[1]), calls
// InitializeInjection as the driver would, and launches through the fake
// CUPTI (WARPSCOPE_CUPTI_PATH), here onto its simulated stream
// (ws_fake_cupti_stream_launch): a kernel starts when the stream is free and
// its launch call has returned.
//
//   cuda_activity_scenarios LIBRARY SCENARIO SECONDS
//
// Scenarios, each launching from one call site for SECONDS:
//   gaps          SiteGaps: a 2 ms kernel, then ~8 ms on the CPU: the GPU
//                 idles 80 % of the time waiting for the host.
//   launch_bound  SiteElementwiseChain: three distinct 300 ns elementwise
//                 kernels in a loop, each after ~60 us of "framework" CPU
//                 work and a 5 us launch call: every kernel is shorter than
//                 its launch call, the GPU waits for launches, and the three
//                 run back to back (a fusion candidate).
//   balanced      SiteBalanced: 2 ms kernels kept ~3 deep in the queue (the
//                 thread sleeps while it is ahead): the GPU is busy all along.
//   graph         SiteGraphReplay: launch_bound's three 300 ns kernels, each
//                 from a cudaGraphLaunch of one executable graph, ~60 us of
//                 CPU work apart (ws_fake_cupti_launch: their records carry
//                 the graph's id, as a replay's kernels do): small kernels
//                 one thread launched back to back, but inside a graph, so
//                 no fusion candidate. Not on the simulated stream: each
//                 kernel's record starts as its call returns, so the printed
//                 timeline is approximate (its kernel count is exact).
//
// The truth, from the program's own clock (CLOCK_MONOTONIC read just before
// each launch call, about the library's launch-entry time) and the kernels'
// simulated times, classified as the analyzer does: busy time; idle time
// before a kernel is host wait until its launch call began, then kernel wait
// up to its start when that is within 50 us of the call's end (other
// otherwise). Printed as
//   pid PID
//   launches N recorded R
//   init_ms UNIX_MS first_launch_ms UNIX_MS last_end_ms UNIX_MS
//   life busy B host_wait H kernel_wait K other O     (first launch to last end)
//   range FROM_MS TO_MS busy B host_wait H kernel_wait K other O
// in seconds; `range` is over the whole unix seconds [FROM, TO) between the
// first launch and the last kernel's end, which the agent's per-second
// readings cover exactly (its readings also count, as host wait, the time
// from the connection to the first launch: `life` leaves that out).
#include <cupti.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "tests/fakes/fake_cupti/fake_cupti_hooks.h"

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kStream = 7;
constexpr uint64_t kLaunchCallNs = 5'000;     // a launch call's own time
constexpr uint64_t kLaunchDelayNs = 2'000;    // call's end to kernel start on an idle GPU
constexpr uint64_t kKernelWaitMaxNs = 50'000;  // ActivityAnalysisOptions::kernel_wait_max_ns

ws_fake_cupti_stream_launch_fn g_launch = nullptr;
ws_fake_cupti_launch_fn g_graph_launch = nullptr;
constexpr uint64_t kGraphExec = 0x6000;  // the executable graph's handle

uint64_t Now(clockid_t clock = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void SpinUntil(uint64_t until) {
  while (Now() < until) {
  }
}

struct Launched {
  uint64_t call = 0, exit = 0, start = 0, end = 0;
};
std::vector<Launched> g_launched;
int g_recorded = 0;

// The launch call is written out in each call site (no helper, not even an
// inlined one, which debug info would show as a frame), so that the site is
// the innermost application frame of its kernels' stacks.
#define WS_LAUNCH(name, duration_ns)                                                                                  \
  do {                                                                                                                \
    Launched l;                                                                                                       \
    l.call = Now();                                                                                                   \
    g_recorded += g_launch(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, kStream,    \
                           (name), kLaunchCallNs, kLaunchDelayNs, (duration_ns), &l.start, &l.end) != 0;             \
    l.exit = Now();                                                                                                   \
    g_launched.push_back(l);                                                                                          \
  } while (0)

uint64_t BusyUntil() { return g_launched.empty() ? 0 : g_launched.back().end; }

}  // namespace

extern "C" __attribute__((noinline)) void SiteGaps(uint64_t until) {
  while (Now() < until) {
    const uint64_t began = Now();
    WS_LAUNCH("_Z9gapKernelv", 2 * kMs);
    SpinUntil(began + 10 * kMs);
  }
  __asm__ volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void SiteElementwiseChain(uint64_t until) {
  static const char* const kKernels[] = {
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_3addEEEvi",
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_3mulEEEvi",
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_4reluEEEvi",
  };
  while (Now() < until) {
    for (const char* kernel : kKernels) {
      SpinUntil(Now() + 60'000);  // the framework's own work per operation
      WS_LAUNCH(kernel, 300);
    }
  }
  __asm__ volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void SiteBalanced(uint64_t until) {
  constexpr uint64_t kKernelNs = 2 * kMs;
  while (Now() < until) {
    // Three kernels queued are enough: sleep until one of them is left.
    while (BusyUntil() > Now() + 3 * kKernelNs) {
      const uint64_t left = BusyUntil() - kKernelNs - Now();
      timespec ts{0, static_cast<long>(std::min<uint64_t>(left, kMs))};
      nanosleep(&ts, nullptr);
    }
    WS_LAUNCH("_Z14balancedKernelv", kKernelNs);
  }
  __asm__ volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void SiteGraphReplay(uint64_t until) {
  static const char* const kKernels[] = {
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_3addEEEvi",
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_3mulEEEvi",
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_4reluEEEvi",
  };
  while (Now() < until) {
    for (const char* kernel : kKernels) {
      SpinUntil(Now() + 60'000);
      Launched l;
      l.call = Now();
      g_recorded += g_graph_launch(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, kernel,
                                   300, 0, kGraphExec) != 0;
      l.exit = Now();
      l.start = l.exit;
      l.end = l.start + 300;
      g_launched.push_back(l);
    }
  }
  __asm__ volatile("" ::: "memory");
}

namespace {

struct Truth {
  double busy = 0, host_wait = 0, kernel_wait = 0, other = 0;
};

// The launches' timeline classified over [from, to) (monotonic).
Truth Classify(uint64_t from, uint64_t to) {
  Truth t;
  auto add = [&](double* into, uint64_t a, uint64_t b) {
    a = std::max(a, from);
    b = std::min(b, to);
    if (b > a) *into += static_cast<double>(b - a) / 1e9;
  };
  uint64_t busy_until = 0;  // one stream: kernels start in launch order
  for (const Launched& l : g_launched) {
    if (busy_until != 0 && l.start > busy_until) {
      const uint64_t queued = std::min(std::max(l.call, busy_until), l.start);
      add(&t.host_wait, busy_until, queued);
      const bool overhead = l.start <= std::max(l.exit, busy_until) + kKernelWaitMaxNs;
      add(overhead ? &t.kernel_wait : &t.other, queued, l.start);
    }
    add(&t.busy, std::max(l.start, busy_until), l.end);
    busy_until = std::max(busy_until, l.end);
  }
  return t;
}

void Print(const char* what, const Truth& t) {
  std::printf("%s busy %.9f host_wait %.9f kernel_wait %.9f other %.9f\n", what, t.busy, t.host_wait, t.kernel_wait,
              t.other);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s LIBWARPSCOPE_CUDA gaps|launch_bound|balanced|graph SECONDS\n", argv[0]);
    return 2;
  }
  const std::string_view scenario = argv[2];
  const uint64_t seconds = std::strtoull(argv[3], nullptr, 10);
  const uint64_t init_ns = Now();
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const char* cupti = std::getenv("WARPSCOPE_CUPTI_PATH");
  if (library == nullptr || cupti == nullptr) {
    std::fprintf(stderr, "cannot load %s (or WARPSCOPE_CUPTI_PATH unset): %s\n", argv[1], dlerror());
    return 1;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  void* fake = dlopen(cupti, RTLD_NOW | RTLD_LOCAL);
  if (init == nullptr || fake == nullptr || init() != 1) {
    std::fprintf(stderr, "InitializeInjection failed\n");
    return 1;
  }
  g_launch = reinterpret_cast<ws_fake_cupti_stream_launch_fn>(dlsym(fake, "ws_fake_cupti_stream_launch"));
  g_graph_launch = reinterpret_cast<ws_fake_cupti_launch_fn>(dlsym(fake, "ws_fake_cupti_launch"));
  auto subscribed = reinterpret_cast<ws_fake_cupti_subscribed_fn>(dlsym(fake, "ws_fake_cupti_subscribed"));
  auto flush = reinterpret_cast<ws_fake_cupti_flush_fn>(dlsym(fake, "ws_fake_cupti_flush"));
  if (g_launch == nullptr || g_graph_launch == nullptr || subscribed == nullptr || flush == nullptr) {
    std::fprintf(stderr, "the fake CUPTI lacks its test hooks\n");
    return 1;
  }
  const uint64_t deadline = Now() + 30 * 1'000'000'000ull;
  while (!subscribed() && Now() < deadline) usleep(10'000);
  if (!subscribed()) {
    std::fprintf(stderr, "no agent answered on the socket\n");
    return 1;
  }
  usleep(1'000'000);  // the agent attaches its launch probe
  g_launched.reserve(200'000);
  const uint64_t until = Now() + seconds * 1'000'000'000ull;
  if (scenario == "gaps") {
    SiteGaps(until);
  } else if (scenario == "launch_bound") {
    SiteElementwiseChain(until);
  } else if (scenario == "balanced") {
    SiteBalanced(until);
  } else if (scenario == "graph") {
    SiteGraphReplay(until);
  } else {
    std::fprintf(stderr, "unknown scenario %s\n", argv[2]);
    return 2;
  }
  SpinUntil(BusyUntil());  // the queued kernels have run (their records are complete already)
  flush();
  if (g_launched.empty()) return 1;

  // Unix time of a monotonic one, as the agent places its readings.
  const uint64_t unix_offset = Now(CLOCK_REALTIME) - Now();
  const uint64_t first = g_launched.front().call, last = BusyUntil();
  constexpr uint64_t kSecond = 1'000'000'000;
  const uint64_t from_unix = (first + unix_offset + kSecond - 1) / kSecond * kSecond;
  const uint64_t to_unix = (last + unix_offset) / kSecond * kSecond;
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::printf("launches %zu recorded %d\n", g_launched.size(), g_recorded);
  std::printf("init_ms %llu first_launch_ms %llu last_end_ms %llu\n",
              static_cast<unsigned long long>((init_ns + unix_offset) / kMs),
              static_cast<unsigned long long>((first + unix_offset) / kMs),
              static_cast<unsigned long long>((last + unix_offset) / kMs));
  Print("life", Classify(first, last));
  char range[64];
  std::snprintf(range, sizeof range, "range %llu %llu", static_cast<unsigned long long>(from_unix / kMs),
                static_cast<unsigned long long>(to_unix / kMs));
  Print(range, Classify(from_unix - unix_offset, to_unix - unix_offset));
  std::fflush(stdout);
  usleep(2'000'000);  // the library's sender ships the last batch
  return 0;
}
