/* GPU host diagnostics (not part of the product): an LD_PRELOAD library that
 * says where a process died of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT.
 *
 *   cc -shared -fPIC -O1 -o segv_report.so segv_report.c -ldl
 *   LD_PRELOAD=./segv_report.so python3 ...
 *
 * On the signal it writes to stderr, with async-signal-safe calls only: the
 * thread (id and name), the faulting address and the line of
 * /proc/self/maps that holds it (its protection tells a write to a page made
 * read-only from an unmapped address), the instruction pointer, and a
 * backtrace, each frame as object+offset (addr2line -e OBJECT OFFSET names
 * it). Then the previous handler (Python's faulthandler, when it was
 * installed before us) or the default action runs, so the process still dies
 * of the signal. faulthandler installed after us chains to us the same way.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static struct sigaction g_previous[32];
static const int g_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static char g_alt_stack[64 * 1024];

static void put(const char* s) { (void)!write(2, s, strlen(s)); }

static void put_hex(unsigned long v) {
  char b[19];
  int i = 18;
  b[i] = 0;
  do {
    b[--i] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v && i > 2);
  b[--i] = 'x';
  b[--i] = '0';
  put(b + i);
}

static void put_dec(long v) {
  char b[24];
  int i = 23;
  b[i] = 0;
  if (v < 0) v = -v;
  do {
    b[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v && i > 0);
  put(b + i);
}

static void put_where(void* address) {
  Dl_info info;
  put_hex((unsigned long)address);
  if (dladdr(address, &info) != 0 && info.dli_fname != NULL) {
    put(" ");
    put(info.dli_fname);
    put("+");
    put_hex((unsigned long)address - (unsigned long)info.dli_fbase);
    if (info.dli_sname != NULL) {
      put(" (");
      put(info.dli_sname);
      put(")");
    }
  }
  put("\n");
}

/* The line of /proc/self/maps holding `address`, parsed as it is read. */
static void put_mapping(unsigned long address) {
  char buffer[4096], line[512];
  size_t used = 0;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] != '\n') {
        if (used < sizeof(line) - 1) line[used++] = buffer[i];
        continue;
      }
      line[used] = 0;
      used = 0;
      unsigned long lo = 0, hi = 0;
      const char* p = line;
      while (*p && *p != '-') lo = lo * 16 + (unsigned long)(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10), ++p;
      if (*p == '-') ++p;
      while (*p && *p != ' ') hi = hi * 16 + (unsigned long)(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10), ++p;
      if (address >= lo && address < hi) {
        put("segv_report: mapping ");
        put(line);
        put("\n");
        close(fd);
        return;
      }
    }
  }
  put("segv_report: the address is in no mapping\n");
  close(fd);
}

static void on_signal(int sig, siginfo_t* si, void* context) {
  char name[17] = {0};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  put("segv_report: signal ");
  put_dec(sig);
  put(" code ");
  put_dec(si->si_code);
  put(" in pid ");
  put_dec(getpid());
  put(" thread ");
  put_dec(syscall(SYS_gettid));
  put(" (");
  put(name);
  put(") address ");
  put_hex((unsigned long)si->si_addr);
  put("\n");
  if (sig != SIGABRT) put_mapping((unsigned long)si->si_addr);
#if defined(__x86_64__)
  const ucontext_t* uc = (const ucontext_t*)context;
  put("segv_report: ip ");
  put_where((void*)uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  const ucontext_t* uc = (const ucontext_t*)context;
  put("segv_report: pc ");
  put_where((void*)uc->uc_mcontext.pc);
#else
  (void)context;
#endif
  void* frames[64];
  int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) {
    put("segv_report:   #");
    put_dec(i);
    put(" ");
    put_where(frames[i]);
  }
  /* The previous handler, or the default action on return (re-faults). */
  struct sigaction* previous = &g_previous[sig];
  if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction != NULL) {
    sigaction(sig, previous, NULL);
    previous->sa_sigaction(sig, si, context);
    return;
  }
  if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN && previous->sa_handler != NULL) {
    sigaction(sig, previous, NULL);
    previous->sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  if (sig == SIGABRT) raise(sig);
}

__attribute__((constructor)) static void install(void) {
  void* warm[2];
  backtrace(warm, 2); /* loads libgcc_s now, not inside the handler */
  stack_t ss = {.ss_sp = g_alt_stack, .ss_size = sizeof(g_alt_stack), .ss_flags = 0};
  sigaltstack(&ss, NULL);
  for (size_t i = 0; i < sizeof(g_signals) / sizeof(g_signals[0]); ++i) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(g_signals[i], &sa, &g_previous[g_signals[i]]);
  }
}
