/* Known answer for signal frames: built -O2 -fomit-frame-pointer, it spends
 * most of its CPU time inside a SIGPROF handler that interrupts
 * interrupted_work(), for argv[1] seconds. Whole stacks run
 * handler_work <- on_signal <- __restore_rt <- interrupted_work <- main. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) uint64_t handler_work(uint64_t x) {
  for (long i = 0; i < 2000000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ volatile("" : "+r"(x));
  }
  return x + 1;
}

static void on_signal(int sig) { sink = handler_work(sink + (uint64_t)sig) + 1; }

__attribute__((noinline)) uint64_t interrupted_work(uint64_t x) {
  for (long i = 0; i < 1000; i++) {
    x = x * 2862933555777941757ULL + 3037000493ULL;
    __asm__ volatile("" : "+r"(x));
  }
  return x + 1;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 5.0;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval timer = {{0, 1000}, {0, 1000}}; /* every 1 ms of CPU time */
  setitimer(ITIMER_PROF, &timer, NULL);
  const double end = now_seconds() + seconds;
  uint64_t x = 1;
  while (now_seconds() < end) x = interrupted_work(x) + 1;
  return (int)(x & 1) * 0;
}
