/* Blocks, 3:1, in two functions: nanosleep in sleep_a_while (30 ms) and poll
 * on a pipe nothing is written to in wait_on_pipe (10 ms timeout). Built
 * without frame pointers: only the .eh_frame unwinder reaches main.
 *
 *   off_cpu_split SECONDS */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void sleep_a_while(void) {
  struct timespec d = {0, 30 * 1000 * 1000};
  nanosleep(&d, NULL);
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

__attribute__((noinline)) static void wait_on_pipe(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  poll(&p, 1, 10);
  __asm__ volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 5;
  int fds[2];
  if (pipe(fds) != 0) return 1;
  const double end = now_seconds() + seconds;
  while (now_seconds() < end) {
    sleep_a_while();
    wait_on_pipe(fds[0]);
  }
  return 0;
}
