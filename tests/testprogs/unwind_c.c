/* Known answer for the .eh_frame unwinder: built -O2 -fomit-frame-pointer, it
 * burns CPU under main() through deep recursion, a qsort comparator (a libc
 * callback) and a callback through a shared library, rotating between them
 * for argv[1] seconds. argv[2] picks one path ("recursion", "qsort", "shlib"),
 * argv[3] the recursion depth (default 60). Every sample must unwind to main. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t unwind_lib_apply(uint64_t (*callback)(uint64_t), uint64_t x, int times);

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t burn(uint64_t x, long n) {
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

/* Deep recursion with a variable-length array in every frame, so some frames
 * need rbp-based CFA rules. */
__attribute__((noinline)) uint64_t recurse(int depth, uint64_t x) {
  volatile char pad[16 + (depth & 7) * 8];
  pad[0] = (char)x;
  if (depth == 0) return burn(x, 200000) + pad[0];
  return recurse(depth - 1, x + 1) + pad[0];
}

static int compare_slowly(const void *a, const void *b) {
  uint64_t x = burn(*(const uint64_t *)a, 50), y = burn(*(const uint64_t *)b, 50);
  return x < y ? -1 : x > y;
}

__attribute__((noinline)) void sort_things(uint64_t seed) {
  uint64_t values[256];
  for (int i = 0; i < 256; i++) values[i] = seed = seed * 2862933555777941757ULL + 3037000493ULL;
  qsort(values, 256, sizeof(values[0]), compare_slowly);
}

/* The "+ 1"s keep these calls from becoming tail calls, which would (rightly)
 * leave the caller's frame out of the stack. */
static uint64_t lib_callback(uint64_t x) { return burn(x, 10000) + 1; }

__attribute__((noinline)) uint64_t through_library(uint64_t x) { return unwind_lib_apply(lib_callback, x, 20) + 1; }

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 5.0;
  const char *only = argc > 2 ? argv[2] : "";
  const int depth = argc > 3 ? atoi(argv[3]) : 60;
  const double end = now_seconds() + seconds;
  uint64_t x = 1;
  while (now_seconds() < end) {
    if (!*only || !strcmp(only, "recursion")) x += recurse(depth, x);
    if (!*only || !strcmp(only, "qsort")) sort_things(x);
    if (!*only || !strcmp(only, "shlib")) x = through_library(x);
  }
  return (int)(x & 1) * 0;
}
