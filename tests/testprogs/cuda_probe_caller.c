// Stands in for a CUDA application whose launches libwarpscope_cuda.so
// samples: loads the real library (without CUDA: it stays inert, since
// InitializeInjection is never called) and calls its probe function,
// warpscope_cuda_launch_probe(correlation_id, launch_kind, graph_exec_id),
// from a known call chain with known arguments, for the agent's uprobe.
//
//   cuda_probe_caller LIBRARY SECONDS
// Correlation ids count up from 1000; launch kind is 1; graph exec id 77.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*probe_fn)(uint64_t, uint32_t, uint64_t);
static probe_fn probe;

__attribute__((noinline)) static void enqueue_kernel(uint64_t correlation_id) {
  probe(correlation_id, 1, 77);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void training_step(uint64_t correlation_id) {
  enqueue_kernel(correlation_id);
  __asm__ volatile("" ::: "memory");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY SECONDS\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  probe = (probe_fn)dlsym(lib, "warpscope_cuda_launch_probe");
  if (!probe) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  const double end = now_s() + atof(argv[2]);
  uint64_t correlation_id = 1000;
  while (now_s() < end) {
    training_step(correlation_id++);
    struct timespec pause = {0, 1000000};  // ~1,000 launches/s
    nanosleep(&pause, NULL);
  }
  printf("%llu launches\n", (unsigned long long)(correlation_id - 1000));
  return 0;
}
