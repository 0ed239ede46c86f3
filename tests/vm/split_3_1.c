/* The arm64 VM checks' workload (tests/vm/check_arm64.sh), built with
 * -O2 -fomit-frame-pointer: work() calls hot() and cold(), which spin
 * 3000 and 1000 iterations, so hot takes three quarters of the CPU time.
 *   split_3_1 SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) void hot(void) {
  for (int i = 0; i < 3000; ++i) sink += (uint64_t)i * 7;
}

__attribute__((noinline)) void cold(void) {
  for (int i = 0; i < 1000; ++i) sink += (uint64_t)i * 3;
}

__attribute__((noinline)) void work(void) {
  hot();
  cold();
}

int main(int argc, char** argv) {
  const time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 10);
  while (time(NULL) < end) work();
  printf("%llu\n", (unsigned long long)sink);
  return 0;
}
