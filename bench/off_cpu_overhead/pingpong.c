/* Context-switch load for bench/off_cpu_overhead.sh: two processes pass a
 * byte back and forth over two pipes, so each pass blocks the one waiting
 * for it. Paced to about RATE blocking switches per second (two per round
 * trip), checked every 50 round trips against the clock.
 *
 *   pingpong RATE SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pingpong RATE SECONDS\n");
    return 2;
  }
  const double rate = atof(argv[1]), seconds = atof(argv[2]);
  int ping[2], pong[2];
  if (rate <= 0 || seconds <= 0 || pipe(ping) != 0 || pipe(pong) != 0) return 2;
  const pid_t child = fork();
  if (child < 0) return 1;
  char c = 0;
  if (child == 0) {
    close(ping[1]);
    close(pong[0]);
    while (read(ping[0], &c, 1) == 1) {
      if (write(pong[1], &c, 1) != 1) break;
    }
    return 0;
  }
  close(ping[0]);
  close(pong[1]);
  const double start = now(), end = start + seconds;
  long trips = 0;
  while (now() < end) {
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
    if (++trips % 50 == 0) {
      const double due = start + (double)trips * 2 / rate;  /* when this many trips are due */
      const double ahead = due - now();
      if (ahead > 0) {
        struct timespec d = {(time_t)ahead, (long)((ahead - (double)(time_t)ahead) * 1e9)};
        nanosleep(&d, NULL);
      }
    }
  }
  close(ping[1]);
  waitpid(child, NULL, 0);
  printf("%.0f round trips per second\n", (double)trips / seconds);
  return 0;
}
