/* Known answer: burns CPU in two functions with a 3:1 split, for argv[1]
 * seconds (default 5). Both functions run the same loop body, so CPU time
 * follows iteration counts exactly. The work comes in equal units, each given
 * to one function at random (3 in 4 to the hot one): a fixed hot-hot-hot-cold
 * cycle let a sampler whose period locked onto the cycle see a biased split
 * (two agents sampling this process at once under load measured 0.71 and
 * 0.80); a random order leaves no phase to lock onto. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 200000

/* Called once per spin() so that spin() is not a leaf: gcc sets up no frame
 * in leaf functions even with -fno-omit-frame-pointer, which would hide the
 * caller from a frame-pointer walk. */
__attribute__((noinline, noipa)) void checkpoint(uint64_t x) { __asm__ volatile("" : : "r"(x)); }

__attribute__((noinline, noipa)) uint64_t spin(uint64_t x, long iterations) {
  for (long i = 0; i < iterations; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));
  }
  checkpoint(x);
  return x;
}

__attribute__((noinline, noipa)) uint64_t hot_three_quarters(uint64_t x) { return spin(x, UNIT) + 1; }
__attribute__((noinline, noipa)) uint64_t cold_one_quarter(uint64_t x) { return spin(x, UNIT) + 2; }

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 5.0;
  const double end = now_seconds() + seconds;
  uint64_t x = 1, r = 0x9e3779b97f4a7c15ULL;
  while (now_seconds() < end) {
    r ^= r << 13; /* xorshift64: which function gets the next unit */
    r ^= r >> 7;
    r ^= r << 17;
    x = (r >> 62) != 0 ? hot_three_quarters(x) : cold_one_quarter(x);
  }
  return (int)(x & 1) * 0;
}
