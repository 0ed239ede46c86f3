// Test-only exports of libws_fake_cupti.so beside the CUPTI functions
// (tests/fakes/README.md). Tests reach them with dlsym on the same path the
// injection library dlopens, so both see one instance of the fake.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

extern "C" {
// Calls of a CUPTI function since load (`name` null: of all of them).
typedef uint64_t (*ws_fake_cupti_call_count_fn)(const char* name);
// 1 while a subscriber exists.
typedef int (*ws_fake_cupti_subscribed_fn)(void);
// 1 while activity `kind` (CUpti_ActivityKind) is enabled.
typedef int (*ws_fake_cupti_activity_enabled_fn)(int kind);
// cuptiActivityEnable(kind) calls that turned it on.
typedef uint64_t (*ws_fake_cupti_enable_count_fn)(int kind);
// One launch on the calling thread: the subscriber's callback runs API_ENTER
// for (domain, cbid); with nested_driver_cbid != 0 a driver-domain
// ENTER/EXIT of that id runs inside it; then API_EXIT. If kernel activity is
// enabled, a CUpti_ActivityKernel10 record with `name` and `duration_ns` is
// queued, its correlation id that of the innermost call. Returns that id, or
// 0 when no record was queued (activity off or no buffer). A thread that
// called cuptiFinalize inside a callback gets neither callbacks nor records
// from then on (fake_cupti.cc says why).
typedef uint32_t (*ws_fake_cupti_launch_fn)(int domain, uint32_t cbid, const char* name, uint64_t duration_ns,
                                            uint32_t nested_driver_cbid, uint64_t graph_exec);
// One synchronisation call on the calling thread (e.g. RUNTIME_API,
// cudaStreamSynchronize, nested cuStreamSynchronize): API_ENTER, the nested
// driver call's ENTER/EXIT, a real wait of `wait_ns`, then API_EXIT. While
// the callbacks run, cuptiGetTimestamp on this thread reads exactly the
// call's start and start + wait_ns, so a client measures `wait_ns` exactly.
// `stream` is the call's first parameter (cuptiGetStreamIdEx answers its
// value, 7 for 0). With `kernel_name`, a kernel record (when kernel activity
// is on) of `kernel_ns` starting with the wait, on that stream, as if the GPU
// ran it meanwhile. Returns the outer call's correlation id.
typedef uint32_t (*ws_fake_cupti_synchronize_fn)(int domain, uint32_t cbid, uint32_t nested_driver_cbid,
                                                 uint64_t stream, uint64_t wait_ns, const char* kernel_name,
                                                 uint64_t kernel_ns);
// One launch onto a simulated GPU stream (`stream` as for
// ws_fake_cupti_synchronize), for timelines with known idle time: API_ENTER,
// `call_ns` of the call's own work (the thread spins), API_EXIT; the
// kernel then starts at max(the stream's busy-until, the call's exit +
// `delay_ns`) and runs `duration_ns`, and the stream is busy until its end.
// So launches queued ahead run back to back, and a kernel launched onto an
// idle stream starts `delay_ns` after its call returns (the GPU waited for
// the host). The kernel record (when kernel activity is on) carries those
// times; *start_ns and *end_ns (if not null) receive them in CLOCK_MONOTONIC.
// Returns the record's correlation id, or 0 when none was queued (the stream
// is advanced all the same).
typedef uint32_t (*ws_fake_cupti_stream_launch_fn)(int domain, uint32_t cbid, uint64_t stream, const char* name,
                                                   uint64_t call_ns, uint64_t delay_ns, uint64_t duration_ns,
                                                   uint64_t* start_ns, uint64_t* end_ns);
// One launch of an executable CUDA graph of `nodes` kernel nodes (each
// `duration_ns`, back to back): the (domain, cbid) graph-launch callbacks,
// then, while kernel activity is on, one kernel record per node with the
// launch's correlation id, graphId = graph_exec and graphNodeId =
// graph_exec << 16 | node. Like CUPTI, a graph launched while kernel
// activity is on is instrumented, and cuptiFinalize tears that down: a
// later launch of such a graph raises SIGSEGV, as the application crashes
// on a real GPU. Returns the records queued.
typedef int (*ws_fake_cupti_graph_launch_fn)(int domain, uint32_t cbid, uint64_t graph_exec, uint32_t nodes,
                                             const char* name, uint64_t duration_ns);
// cuptiFinalize calls so far.
typedef uint32_t (*ws_fake_cupti_finalize_generation_fn)(void);
// Queues a memcpy record (when MEMCPY activity is enabled).
typedef void (*ws_fake_cupti_memcpy_fn)(uint64_t bytes, uint64_t duration_ns);
// Hands the current buffer to the completed callback (what FlushAll does).
typedef void (*ws_fake_cupti_flush_fn)(void);
// Records lost because the request callback gave no buffer, since load.
typedef uint64_t (*ws_fake_cupti_records_dropped_fn)(void);
// Another tool (named `tool`; "" frees it) holds the subscription:
// cuptiSubscribe[_v2] answer CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
typedef void (*ws_fake_cupti_occupy_fn)(const char* tool);
// Shortest time from the end of a cuptiFinalize or cuptiUnsubscribe to the
// next subscription (or finalize); UINT64_MAX when there was none.
typedef uint64_t (*ws_fake_cupti_min_detached_ns_fn)(void);
// Makes CUPTI function `name` return `result` from now on (0: succeed again).
typedef void (*ws_fake_cupti_fail_fn)(const char* name, int result);
// The device whose context later calls use (launches' CUpti_CallbackData
// context, resource callbacks, PC samples); 0 at start. Context handles are
// made up: (device + 1) << 12, and cuptiGetDeviceId answers the device.
typedef void (*ws_fake_cupti_set_device_fn)(uint32_t device);
// Resource callbacks (when enabled) for the current device's context:
// CONTEXT_CREATED, CONTEXT_DESTROY_STARTING, and MODULE_LOADED with `size`
// bytes of cubin at `cubin` (cuptiGetCubinCrc: FNV-1a 64 of the bytes).
typedef void (*ws_fake_cupti_context_created_fn)(void);
typedef void (*ws_fake_cupti_context_destroying_fn)(void);
typedef void (*ws_fake_cupti_load_module_fn)(const void* cubin, size_t size);
// `samples` PC samples of `function` at `pc_offset` in the cubin `cubin_crc`
// with stall reason `stall_index` (the fake's reasons: 2 barrier, 5
// long_scoreboard, 6 long_scoreboard_not_issued, which like CUPTI's counts a
// subset of 5's samples, 9 math_pipe_throttle, 14 selected) on the current
// device's context. Returns 1 when PC sampling is enabled and configured
// there (the samples wait for cuptiPCSamplingGetData), else 0 (counted as
// dropped samples at the next read).
typedef int (*ws_fake_cupti_pc_sample_fn)(const char* function, uint64_t cubin_crc, uint64_t pc_offset,
                                          uint32_t stall_index, uint32_t samples);
// The sampling period (log2 cycles) configured on `device`'s context, 0 when
// PC sampling is not enabled and configured there.
typedef uint32_t (*ws_fake_cupti_pc_sampling_period_fn)(uint32_t device);
}

// A made-up cubin of `size` bytes from `seed`, for the module-load tests
// (the host that loads it and the test that checks what arrived).
inline std::string WsFakeCuptiMadeUpCubin(size_t size, uint32_t seed) {
  std::string bytes(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return bytes;
}

// cuptiGetTimestamp() = CLOCK_MONOTONIC + this, so tests can check calibration.
constexpr uint64_t kWsFakeCuptiClockOffsetNs = 1000ull * 1000 * 1000 * 1000;
