/* Known answer: spends most of its time in the kernel, reading /dev/zero in
 * large chunks from read_zeros(), for argv[1] seconds (default 3). */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buffer[1 << 20];

/* Keeps read_zeros() from being a leaf (gcc gives leaves no frame). */
__attribute__((noinline, noipa)) void checkpoint(long x) { __asm__ volatile("" : : "r"(x)); }

/* The syscall is issued here, not through libc's read(): libc has no frame
 * pointers, and a frame-pointer walk through it would skip this function. */
__attribute__((noinline, noipa)) long read_zeros(int fd) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"((long)SYS_read), "D"((long)fd), "S"(buffer), "d"(sizeof(buffer))
                   : "rcx", "r11", "memory");
  checkpoint(ret);
  return ret;
}

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  int fd = open("/dev/zero", O_RDONLY);
  if (fd < 0) return 1;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  long total = 0;
  do {
    total += read_zeros(fd);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
  close(fd);
  return total > 0 ? 0 : 1;
}
