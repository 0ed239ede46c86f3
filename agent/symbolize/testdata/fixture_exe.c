/* symbolize_test fixture: prints the addresses of two functions, then blocks
 * until its stdin closes, so the test can symbolize a live (then exited) child. */
#include <stdio.h>
#include <unistd.h>

volatile int ws_exe_sink;

static __attribute__((noinline)) int ws_exe_static_work(int x) {
  for (int i = 0; i < x; ++i) ws_exe_sink = ws_exe_sink ^ (i * 11);
  return ws_exe_sink;
}

__attribute__((noinline)) int ws_exe_global_work(int x) {
  for (int i = 0; i < x; ++i) ws_exe_sink = ws_exe_sink + i;
  return ws_exe_static_work(x);
}

int main(void) {
  printf("%p %p\n", (void*)&ws_exe_global_work, (void*)&ws_exe_static_work);
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return ws_exe_global_work(0);
}
