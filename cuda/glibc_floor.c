/* libwarpscope_cuda.so runs inside the user's CUDA application, on that
   application's glibc, which can be as old as 2.28 (RHEL 8; Ubuntu 20.04 and
   Debian 11 have 2.31). The library is built on a newer glibc, so this file
   keeps it to the symbol versions 2.28 has:

   - Functions that moved from libpthread/libdl into libc in 2.34 (and
     pthread_sigmask, re-versioned in 2.32) are bound to their older versions.
     Every reference to them, in our objects and in the static libstdc++ and
     libgcc alike, is redirected here by the linker (-Wl,--wrap=NAME, the list
     in CMakeLists.txt) to a jump to NAME@OLD-VERSION. On glibc 2.34+ that is
     the compatibility symbol in libc.so.6; on older glibc it is the one in
     libpthread.so.0 or libdl.so.2, which the library therefore lists as
     NEEDED.
   - What exists only in newer glibc is defined here, hidden:
     __libc_single_threaded (2.32; read by libstdc++'s reference counts),
     arc4random (2.36; libstdc++'s std::random_device) and _dl_find_object
     (2.35; libgcc's unwinder looks up a frame's .eh_frame_hdr with it).
   - pthread_cond_clockwait (2.30; std::condition_variable's waits on
     steady_clock) is glibc's where it exists, else a wait until the same
     deadline on the realtime clock.

   cuda_glibc_floor_test checks the result: no GLIBC version above 2.28 and
   no unexpected NEEDED library. A new reference to a moved function shows up
   there; pin it with one more WS_PIN line and one more --wrap in
   CMakeLists.txt. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define WS_HIDDEN __attribute__((visibility("hidden")))

/* __wrap_NAME: a tail jump to NAME@VERSION (arguments untouched). */
#define WS_PIN(name, version)                                  \
  __asm__(".symver ws_pinned_" #name ", " #name "@" version "\n" \
          ".pushsection .text\n"                               \
          ".globl __wrap_" #name "\n"                          \
          ".hidden __wrap_" #name "\n"                         \
          ".type __wrap_" #name ", @function\n"                \
          "__wrap_" #name ":\n"                                \
          "  jmp ws_pinned_" #name "@PLT\n"                    \
          ".size __wrap_" #name ", . - __wrap_" #name "\n"     \
          ".popsection\n");

WS_PIN(dlopen, "GLIBC_2.2.5")
WS_PIN(dlsym, "GLIBC_2.2.5")
WS_PIN(dlerror, "GLIBC_2.2.5")
WS_PIN(dlvsym, "GLIBC_2.2.5")
WS_PIN(dladdr, "GLIBC_2.2.5")
WS_PIN(dlclose, "GLIBC_2.2.5")
WS_PIN(dlinfo, "GLIBC_2.3.3")
WS_PIN(pthread_create, "GLIBC_2.2.5")
WS_PIN(pthread_attr_setstacksize, "GLIBC_2.2.5")
WS_PIN(pthread_once, "GLIBC_2.2.5")
WS_PIN(pthread_key_create, "GLIBC_2.2.5")
WS_PIN(__pthread_key_create, "GLIBC_2.2.5")
WS_PIN(pthread_key_delete, "GLIBC_2.2.5")
WS_PIN(pthread_getspecific, "GLIBC_2.2.5")
WS_PIN(pthread_setspecific, "GLIBC_2.2.5")
WS_PIN(pthread_mutex_trylock, "GLIBC_2.2.5")
WS_PIN(pthread_sigmask, "GLIBC_2.2.5")
WS_PIN(pthread_setname_np, "GLIBC_2.12")

typedef int (*ws_clockwait_fn)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);

static int ClockwaitOnRealtime(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                               const struct timespec* abstime) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, abstime);
  if (clock != CLOCK_MONOTONIC) return EINVAL;
  struct timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t left = (int64_t)(abstime->tv_sec - mono.tv_sec) * 1000000000 + (abstime->tv_nsec - mono.tv_nsec);
  if (left < 0) left = 0;
  const int64_t at = (int64_t)real.tv_nsec + left % 1000000000;
  struct timespec deadline = {real.tv_sec + (time_t)(left / 1000000000) + (time_t)(at / 1000000000),
                              (long)(at % 1000000000)};
  return pthread_cond_timedwait(cond, mutex, &deadline);
}

static ws_clockwait_fn ws_clockwait;

WS_HIDDEN int __wrap_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                                            const struct timespec* abstime) {
  ws_clockwait_fn wait = __atomic_load_n(&ws_clockwait, __ATOMIC_ACQUIRE);
  if (wait == NULL) {  // first use; every thread finds the same
    wait = (ws_clockwait_fn)dlvsym(RTLD_DEFAULT, "pthread_cond_clockwait", "GLIBC_2.30");
    if (wait == NULL) wait = ClockwaitOnRealtime;
    __atomic_store_n(&ws_clockwait, wait, __ATOMIC_RELEASE);
  }
  return wait(cond, mutex, clock, abstime);
}

/* Never "single threaded": libstdc++ then always uses atomic operations,
   which is right for a library that starts a thread of its own anyway. */
WS_HIDDEN char __libc_single_threaded = 0;

WS_HIDDEN uint32_t arc4random(void) {
  uint32_t value;
  for (;;) {
    const ssize_t n = getrandom(&value, sizeof value, 0);
    if (n == (ssize_t)sizeof value) return value;
    if (n < 0 && errno != EINTR) break;
  }
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && read(fd, &value, sizeof value) == (ssize_t)sizeof value) {
    close(fd);
    return value;
  }
  abort();
}

struct ws_find_object {
  uintptr_t pc;
  struct dl_find_object* result;
  int found;
};

static int FindObject(struct dl_phdr_info* info, size_t size, void* data) {
  struct ws_find_object* find = data;
  uintptr_t start = UINTPTR_MAX, end = 0;
  const void* eh_frame = NULL;
  int contains = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD) {
      if (lo < start) start = lo;
      if (lo + ph->p_memsz > end) end = lo + ph->p_memsz;
      if (find->pc >= lo && find->pc < lo + ph->p_memsz) contains = 1;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (const void*)lo;
    }
  }
  if (!contains) return 0;
  memset(find->result, 0, sizeof *find->result);
  find->result->dlfo_map_start = (void*)start;
  find->result->dlfo_map_end = (void*)end;
  find->result->dlfo_eh_frame = (void*)eh_frame;
  find->found = eh_frame != NULL;
  return 1;
}

/* What the unwinder needs of glibc's: the mapping around `address` and its
   PT_GNU_EH_FRAME (no link map). */
WS_HIDDEN int _dl_find_object(void* address, struct dl_find_object* result) {
  struct ws_find_object find = {(uintptr_t)address, result, 0};
  dl_iterate_phdr(FindObject, &find);
  return find.found ? 0 : -1;
}
