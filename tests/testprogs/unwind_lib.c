/* Shared library for the unwinding tests: a frame in another object, built
 * without frame pointers, that calls back into the executable. */
#include <stdint.h>

__attribute__((noinline)) uint64_t unwind_lib_apply(uint64_t (*callback)(uint64_t), uint64_t x, int times) {
  for (int i = 0; i < times; i++) x = callback(x) ^ (uint64_t)i;
  return x + 1;
}
