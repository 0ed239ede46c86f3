/* Process churn for bench/agent_run_overhead.sh: starts RATE short-lived
 * processes per second for SECONDS, alternating between two commands (the
 * even-numbered starts run A, the odd ones B).
 *
 *   churn RATE SECONDS A [ARG...] -- B [ARG...]
 *
 * Starts follow a fixed schedule: the k-th at start + k / RATE, slept to with
 * clock_nanosleep on absolute times, so a slow start does not shift the ones
 * after it and the rate stays steady however long the children run. On a
 * machine whose CPUs are all busy, a normal-priority driver wakes up late, so
 * it makes itself SCHED_FIFO (priority 1, when allowed) with
 * SCHED_RESET_ON_FORK: its children run at normal priority. A start more
 * than one period late is counted (printed at exit). Children are
 * started with posix_spawn (no copy of this process) with stdout and stderr
 * on /dev/null, and reaped without blocking between starts, so the driver
 * itself costs little; its own CPU time is printed at exit. SIGTERM or
 * SIGINT stops the schedule; the driver then waits for the children it has
 * (they run for milliseconds) and exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t stop;
static void on_stop(int sig) { (void)sig; stop = 1; }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void reap(long *running) {
  while (waitpid(-1, NULL, WNOHANG) > 0) --*running;
}

int main(int argc, char **argv) {
  int sep = 0;
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) { sep = i; break; }
  }
  const double rate = argc > 1 ? atof(argv[1]) : 0;
  const double seconds = argc > 2 ? atof(argv[2]) : 0;
  if (argc < 6 || sep <= 3 || sep + 1 >= argc || !(rate > 0) || !(seconds > 0)) {
    fprintf(stderr, "usage: churn RATE SECONDS A [ARG...] -- B [ARG...]\n");
    return 2;
  }
  argv[sep] = NULL;
  char **const cmds[2] = {argv + 3, argv + sep + 1};

  const struct sched_param rt = {.sched_priority = 1};
  const int realtime = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt) == 0;

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_stop;  /* no SA_RESTART: the sleep returns at once */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  /* The children get the default SIGINT/SIGTERM even if this driver was
   * started with them ignored. */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);

  const int64_t period = (int64_t)(1e9 / rate);
  const int64_t start = now_ns();
  const int64_t end = start + (int64_t)(seconds * 1e9);
  long started = 0, late = 0, failed = 0, running = 0;
  for (int64_t k = 0; !stop; ++k) {
    const int64_t at = start + k * period;
    if (at >= end) break;
    struct timespec ts = {(time_t)(at / 1000000000), (long)(at % 1000000000)};
    while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
    if (stop) break;
    if (now_ns() - at > period) ++late;
    pid_t pid;
    if (posix_spawn(&pid, cmds[k & 1][0], &actions, &attr, cmds[k & 1], environ) == 0) {
      ++started;
      ++running;
    } else {
      ++failed;
    }
    reap(&running);
  }
  while (running > 0 && waitpid(-1, NULL, 0) > 0) --running;
  struct rusage self;
  getrusage(RUSAGE_SELF, &self);
  fprintf(stderr,
          "churn: %ld started in %.1f s (%ld more than one period late, %ld failed to start); "
          "driver CPU %.3f s%s\n",
          started, (now_ns() - start) / 1e9, late, failed,
          self.ru_utime.tv_sec + self.ru_stime.tv_sec + (self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6,
          realtime ? "" : " (not real-time: sched_setscheduler refused)");
  return failed > 0 ? 1 : 0;
}
