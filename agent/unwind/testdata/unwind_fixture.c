/* Frame shapes the unwind-table oracle test checks against readelf: an
 * rsp-based recursive function, functions whose variable-size frames force
 * an rbp-based CFA even under -fomit-frame-pointer, and a call through the
 * PLT into libc (qsort) with a callback. */
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long Recurse(long n) {
  if (n <= 1) return 1;
  return n * Recurse(n - 1) + Recurse(n - 2) % 7;
}

__attribute__((noinline)) long BigAlloca(int n) {
  char* buf = alloca((size_t)n);
  memset(buf, n & 0x7f, (size_t)n);
  long sum = 0;
  for (int i = 0; i < n; i += 64) sum += buf[i];
  return sum;
}

__attribute__((noinline)) long Vla(int n) {
  long values[n];
  for (int i = 0; i < n; ++i) values[i] = Recurse(i % 5);
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += values[i] * i;
  return sum;
}

static int Compare(const void* a, const void* b) {
  const int x = *(const int*)a;
  const int y = *(const int*)b;
  return (x > y) - (x < y);
}

__attribute__((noinline)) void SortMany(int* v, size_t n) { qsort(v, n, sizeof *v, Compare); }

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 1000;
  int* v = malloc(sizeof(int) * (size_t)n);
  if (v == NULL) return 1;
  for (int i = 0; i < n; ++i) v[i] = (i * 7919) % 1009;
  SortMany(v, (size_t)n);
  printf("%ld %ld %ld %d\n", Recurse(20), BigAlloca(n * 16), Vla(n), v[n / 2]);
  free(v);
  return 0;
}
