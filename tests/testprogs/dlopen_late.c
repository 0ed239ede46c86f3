/* Known answer for tables of libraries loaded after the agent started: burns
 * CPU in main for argv[1] seconds, then dlopen()s libunwind_fixture.so (next
 * to this binary) and burns through it for argv[2] seconds. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t late_burn(uint64_t x) {
  for (long i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));
  }
  return x + 1;
}

int main(int argc, char **argv) {
  const double before = argc > 1 ? atof(argv[1]) : 1.0, after = argc > 2 ? atof(argv[2]) : 3.0;
  uint64_t x = 1;
  double end = now_seconds() + before;
  while (now_seconds() < end) x = late_burn(x);

  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
  if (n <= 0) return 1;
  path[n] = 0;
  strcpy(strrchr(path, '/') + 1, "libunwind_fixture.so");
  void *lib = dlopen(path, RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  uint64_t (*apply)(uint64_t (*)(uint64_t), uint64_t, int) = dlsym(lib, "unwind_lib_apply");
  end = now_seconds() + after;
  while (now_seconds() < end) x = apply(late_burn, x, 10) + 1;
  return (int)(x & 1) * 0;
}
