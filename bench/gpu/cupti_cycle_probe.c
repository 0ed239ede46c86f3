// A probe of how CUPTI behaves when a tool records in windows and leaves
// between them, loaded into a PyTorch process with ctypes
// (bench/gpu/cupti_cycle_probe.py drives it). It answers, on a real GPU,
// the questions the injection library's session design rests on
// (docs/design/cuda_injection.md, "Leaving CUPTI between windows"):
//   - does an application that replays CUDA graphs survive each way of
//     leaving (cuptiFinalize at a launch's API exit, cuptiUnsubscribe, or
//     staying subscribed with callbacks and activity off);
//   - after each way of leaving and coming back, do kernels launched by
//     threads other than the one that attached (PyTorch's autograd threads)
//     still produce callbacks and records;
//   - what each idle state costs a launch-heavy loop.
// Strategies:
//   0 finalize: cuptiFinalize at the next launch's API exit, then register
//     and subscribe again (what the library did until now);
//   1 unsubscribe: callbacks off, cuptiUnsubscribe; subscribe again;
//   2 stay: subscribed throughout, callbacks and kernel activity toggled.
// Build: cc -O2 -shared -fPIC -I/usr/local/cuda/include -o cupti_cycle_probe.so cupti_cycle_probe.c -ldl -lpthread
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FN(name) static __typeof__(&name) p_##name;
FN(cuptiSubscribe)
FN(cuptiUnsubscribe)
FN(cuptiEnableCallback)
FN(cuptiActivityRegisterCallbacks)
FN(cuptiActivityEnable)
FN(cuptiActivityDisable)
FN(cuptiActivityFlushAll)
FN(cuptiActivityGetNextRecord)
FN(cuptiFinalize)
FN(cuptiGetVersion)
#undef FN

enum { kMaxWindows = 512, kTable = 1 << 20 };
struct window_stats {
  uint64_t callbacks_main, callbacks_other, records_main, records_other, records_unknown;
  int32_t attach_result, other_threads;
};
static struct window_stats g_windows[kMaxWindows];
static _Atomic int g_window = -1;       // index of the window callbacks count into
static _Atomic int g_detach_requested;  // strategy 0: the next API exit finalizes
static _Atomic int g_live;              // callbacks count only while set
static _Atomic uint32_t g_corr_tid[kTable];
static _Atomic uint32_t g_corr_id[kTable];
static pid_t g_main_tid;
static CUpti_SubscriberHandle g_sub;
static int g_strategy, g_window_ms, g_period_ms, g_max_windows;
static _Atomic int g_stop, g_errors, g_finalizes, g_last_error;
static pthread_t g_thread;
static _Atomic uint32_t g_other_tids[64];

static const struct { CUpti_CallbackDomain d; CUpti_CallbackId id; } kApis[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch},
};

static void note_error(CUptiResult r) {
  if (r != CUPTI_SUCCESS) {
    atomic_fetch_add(&g_errors, 1);
    atomic_store(&g_last_error, (int)r);
  }
}

static void CUPTIAPI on_callback(void* u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  (void)u;
  (void)d;
  (void)id;
  const CUpti_CallbackData* cb = data;
  if (cb->callbackSite == CUPTI_API_EXIT) {
    int expected = 1;
    if (atomic_compare_exchange_strong(&g_detach_requested, &expected, 2)) {
      p_cuptiFinalize();
      atomic_fetch_add(&g_finalizes, 1);
      atomic_store(&g_detach_requested, 3);
    }
    return;
  }
  if (!atomic_load(&g_live)) return;
  const int w = atomic_load(&g_window);
  if (w < 0 || w >= kMaxWindows) return;
  const pid_t tid = (pid_t)syscall(SYS_gettid);
  const uint32_t slot = cb->correlationId & (kTable - 1);
  atomic_store(&g_corr_tid[slot], (uint32_t)tid);
  atomic_store(&g_corr_id[slot], cb->correlationId);
  if (tid == g_main_tid) {
    __atomic_fetch_add(&g_windows[w].callbacks_main, 1, __ATOMIC_RELAXED);
  } else {
    __atomic_fetch_add(&g_windows[w].callbacks_other, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 64; ++i) {
      uint32_t cur = atomic_load(&g_other_tids[i]);
      if (cur == (uint32_t)tid) break;
      uint32_t zero = 0;
      if (cur == 0 && atomic_compare_exchange_strong(&g_other_tids[i], &zero, (uint32_t)tid)) break;
    }
  }
}

static void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 4u << 20;
  *buffer = aligned_alloc(8, *size);
  *max_records = 0;
}

static void CUPTIAPI on_complete(CUcontext c, uint32_t s, uint8_t* buffer, size_t size, size_t valid) {
  (void)c;
  (void)s;
  (void)size;
  const int w = atomic_load(&g_window);
  CUpti_Activity* rec = NULL;
  while (valid > 0 && p_cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (w < 0 || w >= kMaxWindows) continue;
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const uint32_t corr = ((const CUpti_ActivityKernel10*)rec)->correlationId;
    const uint32_t slot = corr & (kTable - 1);
    if (atomic_load(&g_corr_id[slot]) != corr) {
      __atomic_fetch_add(&g_windows[w].records_unknown, 1, __ATOMIC_RELAXED);
    } else if (atomic_load(&g_corr_tid[slot]) == (uint32_t)g_main_tid) {
      __atomic_fetch_add(&g_windows[w].records_main, 1, __ATOMIC_RELAXED);
    } else {
      __atomic_fetch_add(&g_windows[w].records_other, 1, __ATOMIC_RELAXED);
    }
  }
  free(buffer);
}

static void set_callbacks(int on) {
  for (size_t i = 0; i < sizeof(kApis) / sizeof(kApis[0]); ++i) {
    (void)p_cuptiEnableCallback(on, g_sub, kApis[i].d, kApis[i].id);
  }
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int attach(int first) {
  CUptiResult r = CUPTI_SUCCESS;
  if (first || g_strategy == 0) {
    r = p_cuptiActivityRegisterCallbacks(on_request, on_complete);
    if (r != CUPTI_SUCCESS) return (int)r;
  }
  if (first || g_strategy != 2) {
    r = p_cuptiSubscribe(&g_sub, on_callback, NULL);
    if (r != CUPTI_SUCCESS) return (int)r;
  }
  set_callbacks(1);
  r = p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  return (int)r;
}

static void* cycle(void* arg) {
  (void)arg;
  for (int w = 0; w < g_max_windows && w < kMaxWindows && !atomic_load(&g_stop); ++w) {
    atomic_store(&g_window, w);
    const int r = attach(w == 0);
    g_windows[w].attach_result = r;
    if (r != CUPTI_SUCCESS) {
      note_error((CUptiResult)r);
      break;
    }
    atomic_store(&g_live, 1);
    sleep_ms(g_window_ms);
    note_error(p_cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    atomic_store(&g_live, 0);
    sleep_ms(20);
    note_error(p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    int others = 0;
    for (int i = 0; i < 64; ++i) others += atomic_load(&g_other_tids[i]) != 0;
    g_windows[w].other_threads = others;
    if (g_strategy == 0) {
      atomic_store(&g_detach_requested, 1);  // callbacks still on: a launch's exit finalizes
      for (int i = 0; i < 2000 && atomic_load(&g_detach_requested) != 3; ++i) sleep_ms(1);
      atomic_store(&g_detach_requested, 0);
    } else if (g_strategy == 1) {
      set_callbacks(0);
      note_error(p_cuptiUnsubscribe(g_sub));
    } else {
      set_callbacks(0);
    }
    if (w + 1 < g_max_windows) sleep_ms(g_period_ms > g_window_ms ? g_period_ms - g_window_ms : 0);
  }
  return NULL;
}

int probe_load(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return -1;
#define LOAD(name) if ((p_##name = (__typeof__(p_##name))dlsym(h, #name)) == NULL) return -2;
  LOAD(cuptiSubscribe)
  LOAD(cuptiUnsubscribe)
  LOAD(cuptiEnableCallback)
  LOAD(cuptiActivityRegisterCallbacks)
  LOAD(cuptiActivityEnable)
  LOAD(cuptiActivityDisable)
  LOAD(cuptiActivityFlushAll)
  LOAD(cuptiActivityGetNextRecord)
  LOAD(cuptiFinalize)
  LOAD(cuptiGetVersion)
#undef LOAD
  uint32_t v = 0;
  p_cuptiGetVersion(&v);
  return (int)v;
}

int probe_start(int strategy, int window_ms, int period_ms, int max_windows) {
  g_strategy = strategy;
  g_window_ms = window_ms;
  g_period_ms = period_ms;
  g_max_windows = max_windows;
  g_main_tid = (pid_t)syscall(SYS_gettid);
  return pthread_create(&g_thread, NULL, cycle, NULL);
}

void probe_stop(void) {
  atomic_store(&g_stop, 1);
  pthread_join(g_thread, NULL);
}

// Per window: callbacks_main, callbacks_other, records_main, records_other,
// records_unknown, attach_result, other_threads; returns the windows used.
int probe_window(int w, int64_t out[7]) {
  if (w < 0 || w >= kMaxWindows) return -1;
  out[0] = (int64_t)g_windows[w].callbacks_main;
  out[1] = (int64_t)g_windows[w].callbacks_other;
  out[2] = (int64_t)g_windows[w].records_main;
  out[3] = (int64_t)g_windows[w].records_other;
  out[4] = (int64_t)g_windows[w].records_unknown;
  out[5] = g_windows[w].attach_result;
  out[6] = g_windows[w].other_threads;
  return atomic_load(&g_window) + 1;
}

int probe_errors(void) { return atomic_load(&g_errors); }
int probe_last_error(void) { return atomic_load(&g_last_error); }
int probe_finalizes(void) { return atomic_load(&g_finalizes); }

// A second subscriber's answer now (0: CUPTI is free), unsubscribed again.
int probe_try_subscribe(void) {
  CUpti_SubscriberHandle h = NULL;
  const CUptiResult r = p_cuptiSubscribe(&h, on_callback, NULL);
  if (r == CUPTI_SUCCESS) p_cuptiUnsubscribe(h);
  return (int)r;
}
