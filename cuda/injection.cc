// libwarpscope_cuda.so's entry point: InitializeInjection, called by the CUDA
// driver during cuInit when CUDA_INJECTION64_PATH names this library.
//
// It only creates the state object and starts the link thread (agent_link.h);
// everything else happens there. Any failure leaves the application alone:
// the library says one line on stderr and stays off.
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cuda/agent_link.h"
#include "cuda/injection_state.h"

namespace warpscope::cuda {

namespace {

std::atomic<InjectionState*> g_state{nullptr};
std::atomic<bool> g_said{false};
std::atomic<bool> g_initialized{false};

// In a child of fork() there is no link thread: turn everything off there
// and close the child's copy of the agent connection.
void OnForkChild() noexcept {
  InjectionState* s = g_state.load(std::memory_order_acquire);
  if (s == nullptr) return;
  s->callbacks_live.store(false);
  s->records_wanted.store(false);
  s->kernel_activity_on.store(false);
  const int fd = s->session_fd.exchange(-1);
  if (fd >= 0) close(fd);
}

void* LinkThreadMain(void* arg) noexcept {
  pthread_setname_np(pthread_self(), "warpscope-cuda");
  RunLinkThread(*static_cast<InjectionState*>(arg));
  return nullptr;
}

}  // namespace

InjectionState* GetInjectionState() noexcept { return g_state.load(std::memory_order_acquire); }

namespace {

void Say(const std::string& message) noexcept {
  char line[512];
  const int n = snprintf(line, sizeof(line), "warpscope-cuda: %s\n", message.c_str());
  if (n <= 0) return;
  size_t len = static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1;
  line[len - 1] = '\n';
  (void)!write(STDERR_FILENO, line, len);
}

std::atomic<bool> g_said_pc{false};

}  // namespace

void SayOnce(const std::string& message) noexcept {
  if (!g_said.exchange(true)) Say(message);
}

void SayPcSamplingOnce(const std::string& message) noexcept {
  if (!g_said_pc.exchange(true)) Say(message);
}

uint64_t MonotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Returns 1 when the thread runs (or the library was already initialised).
static int Initialize() noexcept {
  if (g_initialized.exchange(true)) return 1;
  const char* disabled = std::getenv("WARPSCOPE_CUDA_DISABLE");
  if (disabled != nullptr && std::strcmp(disabled, "1") == 0) return 1;
  InjectionState* state = nullptr;
  try {
    state = new InjectionState();  // never freed: see injection_state.h
    const char* path = std::getenv("WARPSCOPE_AGENT_SOCKET");
    state->socket_path = (path != nullptr && path[0] != '\0') ? path : WS_CUDA_DEFAULT_SOCKET_PATH;
  } catch (...) {
    SayOnce("out of memory at start; GPU profiling off");
    return 1;
  }
  state->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);  // -1: no exit drain
  g_state.store(state, std::memory_order_release);
  pthread_atfork(nullptr, nullptr, &OnForkChild);

  // The thread takes no asynchronous signals: the application's handlers
  // stay on its own threads. The synchronous ones stay open: a fault here
  // can only be delivered here, and blocked it would kill the process
  // without the application's crash handler (faulthandler, a crash
  // reporter) saying where.
  sigset_t all, old;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&all, sig);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  pthread_t thread;
  const int err = pthread_create(&thread, &attr, &LinkThreadMain, state);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) SayOnce(std::string("cannot start its thread: ") + std::strerror(err) + "; GPU profiling off");
  return 1;
}

}  // namespace warpscope::cuda

// The CUDA driver's injection entry point. Non-zero means success; we never
// report failure, so that CUDA initialisation continues unaffected.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) noexcept {
  return warpscope::cuda::Initialize();
}
