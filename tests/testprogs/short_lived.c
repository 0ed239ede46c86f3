/* Known answer: burns CPU in short_lived_work() for argv[1] seconds
 * (default 1.5), then exits: its samples must still be symbolized. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline, noipa)) uint64_t short_lived_work(uint64_t x, double seconds) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    for (int i = 0; i < 100000; i++) {
      x = x * 2862933555777941757ULL + 3037000493ULL;
      __asm__ volatile("" : "+r"(x));
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
  return x;
}

int main(int argc, char **argv) {
  return (int)(short_lived_work(1, argc > 1 ? atof(argv[1]) : 1.5) & 1) * 0;
}
