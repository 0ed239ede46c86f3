// A probe of one CUPTI behaviour the injection library's windows rest on:
// a kernel launched while CONCURRENT_KERNEL activity is enabled, but still
// queued on the GPU when the kind is disabled: does it still produce its
// record? Loaded into a PyTorch process with ctypes
// (bench/gpu/cupti_disable_probe.py drives it).
// Build: cc -O2 -shared -fPIC -I/usr/local/cuda/include -o cupti_disable_probe.so cupti_disable_probe.c -ldl
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define FN(name) static __typeof__(&name) p_##name;
FN(cuptiActivityRegisterCallbacks)
FN(cuptiActivityEnable)
FN(cuptiActivityDisable)
FN(cuptiActivityFlushAll)
FN(cuptiActivityGetNextRecord)
#undef FN

static _Atomic uint64_t g_records;

static void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8u << 20;
  *buffer = aligned_alloc(8, *size);
  *max_records = 0;
}

static void CUPTIAPI on_complete(CUcontext c, uint32_t s, uint8_t* buffer, size_t size, size_t valid) {
  (void)c;
  (void)s;
  (void)size;
  CUpti_Activity* record = NULL;
  while (p_cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      atomic_fetch_add(&g_records, 1);
    }
  }
  free(buffer);
}

// 0 on success.
int probe_load(const char* cupti) {
  void* h = dlopen(cupti, RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) return -1;
#define LOAD(name) if ((p_##name = (__typeof__(p_##name))dlsym(h, #name)) == NULL) return -2;
  LOAD(cuptiActivityRegisterCallbacks)
  LOAD(cuptiActivityEnable)
  LOAD(cuptiActivityDisable)
  LOAD(cuptiActivityFlushAll)
  LOAD(cuptiActivityGetNextRecord)
#undef LOAD
  return (int)p_cuptiActivityRegisterCallbacks(on_request, on_complete);
}

int probe_enable(void) { return (int)p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); }
int probe_disable(void) { return (int)p_cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); }
int probe_flush(void) { return (int)p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
uint64_t probe_records(void) { return atomic_load(&g_records); }
