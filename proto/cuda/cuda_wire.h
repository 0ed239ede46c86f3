/* cuda_wire.h: the protocol between libwarpscope_cuda.so (inside a CUDA
 * application) and the warpscope agent, over a unix SOCK_SEQPACKET socket.
 *
 * Plain C so that both sides (and any future reader in another language) share
 * one definition. Every message is one datagram: a ws_cuda_msg_header followed
 * by `count` fixed-size records of the type's struct (names: variable entries,
 * see WS_CUDA_MSG_NAMES). All integers are little-endian; the structs are laid
 * out so that they have no implicit padding on LP64 (static checks below), and
 * both supported architectures (x86_64, aarch64) are little-endian, so the
 * encoder writes the structs as they are.
 *
 * Conversation (docs/design/cuda_injection.md has the full story):
 *   library -> agent  HELLO   (once, first message)
 *   agent   -> library CONFIG (answer to HELLO; again whenever the agent changes it)
 *   library -> agent  STATS   (baseline right after CONFIG, then about every second)
 *   library -> agent  NAMES, KERNELS, MEMOPS, LAUNCHES, CLOCK (any order, except:
 *                     a name id is always defined in a NAMES message sent before
 *                     the first KERNELS message that uses it)
 *   library -> agent  WINDOW (version 2; detached duty and adaptive modes): one
 *                     recording window closed; every record of that window was
 *                     sent before it, and no record after it belongs to it
 *   library -> agent  WAITS (version 4): host threads' waits in CUDA
 *                     synchronisation calls, sent like LAUNCHES
 *   library -> agent  PC_SAMPLES (version 5): CUPTI PC sampling counts per
 *                     (cubin, function, PC offset, stall reason); function
 *                     and stall-reason names are NAMES ids, defined before use
 *   library -> agent  CUBIN (version 5): the cubins of loaded modules, in
 *                     chunks, each cubin once per connection
 *
 * Versioning: `version` is the protocol version of the sender. A reader accepts
 * every version it knows (1 to 4) and closes the connection on others;
 * a new version adds message types or appends fields to a record (never
 * reorders), and the record size for a type is derived from (version, type) by
 * the reader. Version 2 added WINDOW, WS_CUDA_MODE_ADAPTIVE,
 * WS_CUDA_CONFIG_DUTY_DETACH and ws_cuda_config's last two fields (a version 1
 * CONFIG is the first 48 bytes; the missing fields read as 0). Version 3
 * appended the launch call's time and thread to ws_cuda_kernel (a version 2
 * KERNELS record is its first 88 bytes; the missing fields read as 0).
 * Version 4 added WAITS and appended the wait counters to ws_cuda_stats (a
 * version 3 STATS record is its first 112 bytes).
 * Version 5 added PC_SAMPLES, CUBIN, WS_CUDA_CONFIG_PC_SAMPLING with
 * ws_cuda_config's pc_sampling fields (a version 2-4 CONFIG is its first 56
 * bytes) and the PC sampling counters of ws_cuda_stats (a version 4 STATS
 * record is its first 136 bytes).
 * Version 6 appended the library's hold on CUPTI to ws_cuda_stats (another
 * client stepped aside for, time aside, graph launches; a version 5 STATS
 * record is its first 200 bytes).
 */
#ifndef WARPSCOPE_CUDA_PROTOCOL_CUDA_WIRE_H_
#define WARPSCOPE_CUDA_PROTOCOL_CUDA_WIRE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "WSCU" in memory order. */
#define WS_CUDA_WIRE_MAGIC 0x55435357u
#define WS_CUDA_WIRE_VERSION 6u
/* The CONFIG record of protocol version 1 (before overhead_budget_ppm). */
#define WS_CUDA_CONFIG_V1_SIZE 48u
/* The CONFIG record of protocol versions 2 to 4 (before the PC sampling fields). */
#define WS_CUDA_CONFIG_V4_SIZE 56u
/* The ws_cuda_kernel record of protocol versions 1 and 2. */
#define WS_CUDA_KERNEL_V2_SIZE 88u
/* The ws_cuda_stats record of protocol versions 1 to 3. */
#define WS_CUDA_STATS_V3_SIZE 112u
/* The ws_cuda_stats record of protocol version 4. */
#define WS_CUDA_STATS_V4_SIZE 136u
/* The ws_cuda_stats record of protocol version 5. */
#define WS_CUDA_STATS_V5_SIZE 200u
/* No message is larger; readers receive into a buffer of this size + 1 and
 * treat a longer datagram (MSG_TRUNC) as malformed. */
#define WS_CUDA_WIRE_MAX_MESSAGE 65536u
/* Longest kernel name sent; longer names are cut (flag in ws_cuda_name_entry). */
#define WS_CUDA_WIRE_MAX_NAME 16384u
/* Default socket path; the library reads WARPSCOPE_AGENT_SOCKET first. */
#define WS_CUDA_DEFAULT_SOCKET_PATH "/run/warpscope/cuda.sock"

enum ws_cuda_msg_type {
  WS_CUDA_MSG_HELLO = 1,    /* library -> agent, count 1, ws_cuda_hello */
  WS_CUDA_MSG_CONFIG = 2,   /* agent -> library, count 1, ws_cuda_config */
  WS_CUDA_MSG_KERNELS = 3,  /* library -> agent, ws_cuda_kernel[count] */
  WS_CUDA_MSG_MEMOPS = 4,   /* library -> agent, ws_cuda_memop[count] */
  WS_CUDA_MSG_NAMES = 5,    /* library -> agent, `count` ws_cuda_name_entry + bytes */
  WS_CUDA_MSG_LAUNCHES = 6, /* library -> agent, ws_cuda_launch[count] */
  WS_CUDA_MSG_STATS = 7,    /* library -> agent, count 1, ws_cuda_stats */
  WS_CUDA_MSG_CLOCK = 8,    /* library -> agent, count 1, ws_cuda_clock_pair */
  WS_CUDA_MSG_WINDOW = 9,   /* library -> agent, count 1, ws_cuda_window (version 2) */
  WS_CUDA_MSG_WAITS = 10,   /* library -> agent, ws_cuda_wait[count] (version 4) */
  WS_CUDA_MSG_PC_SAMPLES = 11, /* library -> agent, ws_cuda_pc_sample[count] (version 5) */
  WS_CUDA_MSG_CUBIN = 12,      /* library -> agent, count 1, ws_cuda_cubin_chunk + `length` bytes (version 5) */
};

struct ws_cuda_msg_header {
  uint32_t magic;   /* WS_CUDA_WIRE_MAGIC */
  uint16_t version; /* WS_CUDA_WIRE_VERSION of the sender */
  uint16_t type;    /* enum ws_cuda_msg_type */
  uint32_t length;  /* whole message in bytes, header included; == datagram size */
  uint32_t count;   /* records that follow */
};

/* cuptiGetTimestamp() read between two clock_gettime(CLOCK_MONOTONIC) reads;
 * the tightest (host_after - host_before) of a few tries. The agent maps CUPTI
 * time t to host time as t - cupti_ns + (host_before + host_after) / 2, with an
 * error bound of half the bracket; pairs taken over time give the drift. */
struct ws_cuda_clock_pair {
  uint64_t host_before_ns;
  uint64_t cupti_ns;
  uint64_t host_after_ns;
};

#define WS_CUDA_HELLO_FLAG_CUPTI_GRAPH_IDS 0x1u /* cuptiGetGraphExecId available */

struct ws_cuda_hello {
  uint32_t pid;               /* getpid() in the application's pid namespace */
  uint32_t library_version;   /* major << 16 | minor << 8 | patch */
  uint32_t cupti_version;     /* cuptiGetVersion(), 0 if unknown */
  uint32_t connection_seq;    /* 1 for the process's first connection, then +1 */
  uint32_t flags;             /* WS_CUDA_HELLO_FLAG_* */
  uint32_t max_message_bytes; /* WS_CUDA_WIRE_MAX_MESSAGE of the sender */
  struct ws_cuda_clock_pair clock;
};

enum ws_cuda_mode {
  WS_CUDA_MODE_OFF = 0,   /* connected, but no callbacks and no activity */
  WS_CUDA_MODE_EXACT = 1, /* kernel activity always on */
  WS_CUDA_MODE_DUTY = 2,  /* kernel activity on for duty_on_ms of every duty_period_ms */
  /* Version 2. Windows of duty_on_ms, CUPTI detached in between, and the
   * period sized from the launch rate seen in the last window so that the
   * estimated cost stays within overhead_budget_ppm (at most duty_period_ms;
   * a process that launches little is recorded all the time). */
  WS_CUDA_MODE_ADAPTIVE = 3,
};

#define WS_CUDA_CONFIG_MEMCPY 0x1u /* record memcpy activity */
#define WS_CUDA_CONFIG_MEMSET 0x2u /* record memset activity */
/* Duty mode only: the launch callbacks are enabled only while kernel activity
 * is, so launches outside the windows cost nothing (CUPTI's callbacks alone
 * cost ~15% of a loop launching 100k kernels/s on the H200) and are not
 * counted either: the agent scales by time (ws_cuda_stats.activity_on_ns). */
#define WS_CUDA_CONFIG_DUTY_CALLBACKS 0x4u
/* Duty mode only (version 2): between windows CUPTI is detached altogether
 * (cuptiFinalize at the exit of a launch API, as NVIDIA recommends), because
 * a subscribed CUPTI slows every launch even with nothing enabled; the library
 * sends a WINDOW message when each window closes, and the agent weights that
 * window's kernels by its period over its recording time. Implied by
 * WS_CUDA_MODE_ADAPTIVE. */
#define WS_CUDA_CONFIG_DUTY_DETACH 0x8u
/* Version 5: CUPTI PC sampling in continuous mode (kernels keep running
 * concurrently; samples belong to a kernel function, not to one launch),
 * enabled on each CUDA context while kernel activity is recorded (in the
 * recording windows of the windowed modes), and the cubins of the modules
 * the process loads. */
#define WS_CUDA_CONFIG_PC_SAMPLING 0x10u

/* Except for `mode` and `flags`, zero in a field means "the library's
 * default" (shown in brackets); the library clamps every value to a safe
 * range (cuda/link_config.h). */
struct ws_cuda_config {
  uint32_t mode;                   /* enum ws_cuda_mode */
  uint32_t flags;                  /* WS_CUDA_CONFIG_* */
  uint32_t launch_samples_per_sec; /* per application thread [200] */
  uint32_t launch_sample_burst;    /* token bucket depth [= per_sec] */
  uint32_t duty_on_ms;             /* [100] */
  uint32_t duty_period_ms;         /* [1000] */
  uint32_t flush_interval_ms;      /* cuptiActivityFlushAll period [1000] */
  uint32_t stats_interval_ms;      /* [1000] */
  uint32_t activity_buffer_bytes;  /* one CUPTI buffer [1 MiB], 64 KiB..8 MiB */
  uint32_t activity_buffer_count;  /* pool size [16], 1..64 */
  uint32_t outbox_bytes;           /* unsent data queued at most [8 MiB]; from the first CONFIG of a connection */
  uint32_t stall_timeout_ms;       /* no send progress this long: disconnect [10000] */
  /* Version 2: */
  uint32_t overhead_budget_ppm;    /* adaptive mode's estimated cost bound, of the launching threads' time [10000 = 1%] */
  uint32_t reserved;
  /* Version 5: */
  uint32_t pc_sampling_period_log2; /* one sample per SM every 2^this cycles [20], 5..31 */
  uint32_t pc_sampling_max_pcs;     /* PCs read per CUPTI call [4096], 64..65536 */
};

/* CUPTI gave no valid timestamps (start 0 or end before start: it had no
 * device memory for them); the duration is unknown. */
#define WS_CUDA_RECORD_FLAG_NO_TIME 0x1u

struct ws_cuda_kernel {
  uint64_t start_ns; /* CUPTI clock (ws_cuda_clock_pair maps it) */
  uint64_t end_ns;
  uint64_t graph_node_id; /* 0 unless launched by a graph */
  uint32_t correlation_id;
  uint32_t name_id; /* NAMES dictionary of this connection; 0 = unknown */
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t graph_id; /* 0 unless launched by a graph */
  int32_t grid_x, grid_y, grid_z;
  int32_t block_x, block_y, block_z;
  int32_t static_shared_memory;  /* bytes */
  int32_t dynamic_shared_memory; /* bytes */
  uint16_t registers_per_thread;
  uint8_t launch_type; /* CUpti_ActivityLaunchType */
  uint8_t flags;       /* WS_CUDA_RECORD_FLAG_* */
  /* Version 2 (0 before): the library's attachment of CUPTI the correlation id
   * belongs to. CUPTI's ids start over when it is attached again after a
   * detach, so (attach_epoch, correlation_id) is the launch's key; the probe's
   * correlation argument carries the epoch in its upper 32 bits. */
  uint32_t attach_epoch;
  /* Version 3 (0 before): the launch API call that queued this kernel, on the
   * application thread that made it, for every launch made while kernel
   * activity was on (not only sampled ones). launch_host_ns 0: unknown (the
   * library's table of recent launches no longer held it, or the launch was
   * made before recording began). */
  uint64_t launch_host_ns;     /* CLOCK_MONOTONIC at the outermost API entry */
  uint32_t launch_duration_ns; /* API entry to exit, at most UINT32_MAX */
  uint32_t launch_tid;         /* gettid() in the application's namespace */
  uint16_t launch_kind;        /* enum ws_cuda_launch_kind */
  uint16_t launch_flags;       /* WS_CUDA_LAUNCH_FLAG_* */
  uint32_t launch_reserved;
};

enum ws_cuda_memop_kind {
  WS_CUDA_MEMOP_MEMCPY = 1,
  WS_CUDA_MEMOP_MEMSET = 2,
};

struct ws_cuda_memop {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint64_t graph_node_id;
  uint32_t correlation_id;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t graph_id;
  uint8_t op;       /* enum ws_cuda_memop_kind */
  uint8_t kind;     /* memcpy: CUpti_ActivityMemcpyKind; memset: CUpti_ActivityMemoryKind */
  uint8_t src_kind; /* memcpy: CUpti_ActivityMemoryKind of the source, else 0 */
  uint8_t dst_kind; /* memcpy: of the destination, else 0 */
};

#define WS_CUDA_NAME_FLAG_TRUNCATED 0x1u

/* In a NAMES message: `count` times { ws_cuda_name_entry, `length` bytes of
 * name (no NUL), zero padding to a multiple of 8 }. Ids start at 1 and are
 * unique per connection. */
struct ws_cuda_name_entry {
  uint32_t name_id;
  uint16_t length; /* <= WS_CUDA_WIRE_MAX_NAME */
  uint16_t flags;  /* WS_CUDA_NAME_FLAG_* */
};

enum ws_cuda_launch_kind {
  WS_CUDA_LAUNCH_KERNEL = 1,      /* cudaLaunchKernel, cuLaunchKernel, __cudaLaunchKernel */
  WS_CUDA_LAUNCH_KERNEL_EX = 2,   /* cudaLaunchKernelExC, cuLaunchKernelEx */
  WS_CUDA_LAUNCH_COOPERATIVE = 3, /* cudaLaunchCooperativeKernel, cuLaunchCooperativeKernel */
  WS_CUDA_LAUNCH_GRAPH = 4,       /* cudaGraphLaunch, cuGraphLaunch */
};

#define WS_CUDA_LAUNCH_FLAG_DRIVER_API 0x1u /* the outermost API was the driver's */
#define WS_CUDA_LAUNCH_FLAG_PTSZ 0x2u       /* per-thread default stream variant */

/* One sampled launch: warpscope_cuda_launch_probe(correlation_id, launch_kind,
 * graph_exec_id) was called for it on thread `tid`. Kernel records of this
 * launch carry correlation_id or, when the runtime call nested a driver call
 * with its own id, inner_correlation_id: the agent joins on both. */
struct ws_cuda_launch {
  uint64_t host_time_ns;  /* CLOCK_MONOTONIC at API entry */
  uint64_t graph_exec_id; /* cuptiGetGraphExecId for graph launches, else 0 */
  uint32_t tid;           /* gettid() in the application's namespace */
  uint32_t correlation_id;       /* outermost API call's; the probe's argument */
  uint32_t inner_correlation_id; /* nested driver call's, 0 if none or the same */
  uint16_t launch_kind;          /* enum ws_cuda_launch_kind */
  uint16_t flags;                /* WS_CUDA_LAUNCH_FLAG_* */
};

/* The CUDA call a host thread waited in (ws_cuda_wait.api). Each names one
 * API or a family of the same behaviour; the runtime's calls nest the
 * driver's, and a wait is counted once, under the outermost call. */
enum ws_cuda_wait_api {
  WS_CUDA_WAIT_DEVICE_SYNCHRONIZE = 1, /* cudaDeviceSynchronize, cudaThreadSynchronize */
  WS_CUDA_WAIT_STREAM_SYNCHRONIZE = 2, /* cudaStreamSynchronize */
  WS_CUDA_WAIT_EVENT_SYNCHRONIZE = 3,  /* cudaEventSynchronize */
  WS_CUDA_WAIT_MEMCPY = 4,             /* cudaMemcpy, cudaMemcpy2D, cudaMemcpy{To,From}Symbol: synchronous copies */
  WS_CUDA_WAIT_FREE = 5,               /* cudaFree (synchronises the device) */
  WS_CUDA_WAIT_MALLOC = 6,             /* cudaMalloc */
  WS_CUDA_WAIT_CU_CTX_SYNCHRONIZE = 7, /* cuCtxSynchronize */
  WS_CUDA_WAIT_CU_STREAM_SYNCHRONIZE = 8,
  WS_CUDA_WAIT_CU_EVENT_SYNCHRONIZE = 9,
  WS_CUDA_WAIT_CU_MEMCPY = 10, /* cuMemcpy, cuMemcpy{HtoD,DtoH,DtoD,2D,3D,Peer}: synchronous copies */
  WS_CUDA_WAIT_CU_MEM_FREE = 11,
  WS_CUDA_WAIT_CU_MEM_ALLOC = 12,
};
#define WS_CUDA_WAIT_API_MAX 12u

/* warpscope_cuda_launch_probe's launch_kind for a sampled wait: this bit
 * plus the ws_cuda_wait_api (the agent keeps the stack for the WAITS record
 * of the same correlation id instead of a kernel's). */
#define WS_CUDA_PROBE_WAIT 0x100u

#define WS_CUDA_WAIT_FLAG_SAMPLED 0x1u /* warpscope_cuda_launch_probe was called for it */
#define WS_CUDA_WAIT_FLAG_PTSZ 0x2u    /* per-thread default stream variant */

/* One wait: a host thread's call of a CUDA synchronisation API, from entry
 * to exit, made while the library recorded (its callbacks were on). Times
 * are cuptiGetTimestamp(), the clock of the kernel records, so the kernels
 * that ran during the wait are found without converting clocks. */
struct ws_cuda_wait {
  uint64_t start_ns; /* CUPTI clock at API entry */
  uint64_t end_ns;   /* CUPTI clock at API exit */
  uint32_t tid;            /* gettid() in the application's namespace */
  uint32_t correlation_id; /* outermost call's; with attach_epoch the probe's key */
  uint32_t attach_epoch;   /* as in ws_cuda_kernel */
  uint32_t stream_id;      /* CUPTI stream id the call waited on; 0: every stream (or unknown) */
  uint32_t context_id;     /* CUPTI context id; 0: unknown */
  uint16_t api;            /* enum ws_cuda_wait_api */
  uint16_t flags;          /* WS_CUDA_WAIT_FLAG_* */
};

/* One closed recording window (detached duty and adaptive modes), CLOCK_MONOTONIC.
 * Its kernels stand for the whole time from on_start_ns to covers_until_ns (the
 * planned start of the next window): the agent weights them by
 * (covers_until - on_start) / (on_end - on_start), and, when the process ends
 * before covers_until, by the time it actually ran instead. */
struct ws_cuda_window {
  uint64_t on_start_ns;     /* kernel activity enabled */
  uint64_t on_end_ns;       /* kernel activity disabled */
  uint64_t covers_until_ns; /* the next window's planned start (>= on_end_ns) */
  uint64_t launches_seen;   /* launch API calls seen while recording */
  uint64_t attach_ns;       /* this window's subscribe + enable calls took this long */
  uint64_t detach_ns;       /* the previous detach's cuptiFinalize took this long (0: none) */
  uint64_t kernels_recorded; /* kernel records of this window sent */
  /* Records left out: kernels launched before the window opened (queued on the
   * GPU when recording started, so not of the window's time). */
  uint64_t kernels_before_window;
};

/* One PC's samples with one stall reason over the read interval that ended
 * at read_host_ns (continuous mode: no launch, no correlation id). */
struct ws_cuda_pc_sample {
  uint64_t cubin_crc;     /* CUPTI's cubin CRC (the CUBIN message with it carries the cubin) */
  uint64_t pc_offset;     /* CUPTI's pcOffset of the instruction */
  uint64_t read_host_ns;  /* CLOCK_MONOTONIC of the read that returned it */
  uint32_t function_name_id; /* NAMES id of the function's (mangled) name */
  uint32_t stall_name_id;    /* NAMES id of the stall reason's CUPTI name */
  uint32_t samples;
  uint32_t device_id;     /* CUDA device ordinal of the context, UINT32_MAX unknown */
};

#define WS_CUDA_CUBIN_FLAG_LAST 0x1u /* the cubin's last chunk */

/* One piece of a cubin: `length` bytes at `offset` of the `total_bytes`
 * long cubin follow the record. Chunks of one cubin are sent in order and
 * not interleaved with another cubin's. */
struct ws_cuda_cubin_chunk {
  uint64_t cubin_crc;
  uint64_t total_bytes;
  uint64_t offset;
  uint32_t length;
  uint32_t flags; /* WS_CUDA_CUBIN_FLAG_* */
};

/* What became of PC sampling in the process (ws_cuda_stats.pc_sampling_state). */
enum ws_cuda_pc_sampling_state {
  WS_CUDA_PC_SAMPLING_OFF = 0,          /* not asked for, or no context yet */
  WS_CUDA_PC_SAMPLING_ON = 1,           /* enabled on at least one context */
  WS_CUDA_PC_SAMPLING_NO_PERMISSION = 2, /* the driver restricts profiling to admin users */
  WS_CUDA_PC_SAMPLING_UNSUPPORTED = 3,  /* this CUPTI, driver or device has no PC sampling */
  WS_CUDA_PC_SAMPLING_FAILED = 4,       /* another CUPTI error (pc_sampling_error) */
};

/* Counters since the library was loaded (not per connection: the agent takes
 * differences between two STATS of one connection; a baseline is sent right
 * after CONFIG). */
struct ws_cuda_stats {
  uint64_t host_time_ns;               /* CLOCK_MONOTONIC when taken */
  uint64_t launches_seen;              /* launch API calls, each launch once */
  uint64_t launches_sampled;           /* probe calls */
  uint64_t launches_seen_activity_on;  /* seen while kernel activity was enabled */
  uint64_t launches_seen_activity_off; /* seen while it was disabled (duty mode) */
  uint64_t activity_on_ns;             /* total time kernel activity was enabled */
  uint64_t kernel_records;             /* converted from CUPTI */
  uint64_t memop_records;
  uint64_t cupti_dropped_records;  /* cuptiActivityGetNumDroppedRecords */
  uint64_t buffers_denied;         /* CUPTI asked for a buffer, pool empty */
  uint64_t wire_records_dropped;   /* records not sent: outbox full */
  uint64_t wire_messages_dropped;  /* messages not sent: outbox full */
  uint64_t launch_records_dropped; /* sampled-launch records lost (queue full/busy) */
  uint64_t names_unsent;           /* kernels whose name did not fit the dictionary */
  /* Version 4 (0 before): */
  uint64_t waits_seen;          /* synchronisation calls made while recording */
  uint64_t waits_sampled;       /* of them, probe calls */
  uint64_t wait_records_dropped; /* not sent: queue full or busy */
  /* Version 5 (0 before): */
  uint64_t pc_samples;            /* samples in the records read from CUPTI */
  uint64_t pc_samples_total;      /* CUPTI's totalSamples, non-user kernels and dropped ones included */
  uint64_t pc_samples_dropped;    /* CUPTI's droppedSamples: the hardware buffer overflowed */
  uint64_t pc_records_dropped;    /* PC records not queued: their names did not fit the dictionary
                                   * (records lost to a full outbox count in wire_records_dropped) */
  uint64_t pc_hardware_buffer_full; /* reads that found the hardware buffer full */
  uint64_t cubins_sent;
  uint64_t cubins_dropped;        /* not sent: over the pending-bytes bound, or too large */
  uint32_t pc_sampling_state;     /* enum ws_cuda_pc_sampling_state */
  uint32_t pc_sampling_error;     /* the CUptiResult behind NO_PERMISSION, UNSUPPORTED or FAILED */
  /* Version 6 (0 before): */
  uint64_t cupti_yields;      /* times the library stepped aside for another CUPTI client */
  uint64_t cupti_taken;       /* windows that found CUPTI held by a client it did not see coming */
  uint64_t cupti_aside_ns;    /* time spent aside (another client had CUPTI) */
  uint64_t graph_launches;    /* CUDA graph launches seen while the callbacks were on */
  uint32_t cupti_state;       /* enum ws_cuda_cupti_state */
  uint32_t cupti_flags;       /* WS_CUDA_CUPTI_FLAG_* */
};

/* ws_cuda_stats::cupti_state (version 6). */
enum ws_cuda_cupti_state {
  WS_CUDA_CUPTI_OUT = 0,   /* not subscribed: between windows, or not yet configured */
  WS_CUDA_CUPTI_IN = 1,    /* subscribed and recording */
  WS_CUDA_CUPTI_ASIDE = 2, /* another CUPTI client (torch.profiler, Nsight, ...) has CUPTI; recording waits */
  WS_CUDA_CUPTI_OFF = 3,   /* a CUPTI failure turned the library off for this process */
};
/* ws_cuda_stats::cupti_flags (version 6). */
#define WS_CUDA_CUPTI_FLAG_STAYS_SUBSCRIBED 0x1u /* leaving failed once: CUPTI is held between windows */
#define WS_CUDA_CUPTI_FLAG_GUARD 0x2u            /* other clients' CUPTI imports are watched (client guard) */

#ifdef __cplusplus
} /* extern "C" */
#define WS_CUDA_STATIC_ASSERT static_assert
#else
#define WS_CUDA_STATIC_ASSERT _Static_assert
#endif

/* The CONFIG record's size in protocol `version` (both ends read and write
 * the peer's version). */
static inline uint32_t ws_cuda_config_size(uint16_t version) {
  return version == 1 ? WS_CUDA_CONFIG_V1_SIZE : version <= 4 ? WS_CUDA_CONFIG_V4_SIZE : (uint32_t)sizeof(struct ws_cuda_config);
}

WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_msg_header) == 16, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_clock_pair) == 24, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_hello) == 48, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_config) == 64, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_window) == 64, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_kernel) == 112, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_memop) == 56, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_name_entry) == 8, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_launch) == 32, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_stats) == 240, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_pc_sample) == 40, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_cubin_chunk) == 32, "wire layout");
WS_CUDA_STATIC_ASSERT(sizeof(struct ws_cuda_wait) == 40, "wire layout");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cuda_wire.h: structs are sent as they are; only little-endian hosts are supported"
#endif

#endif /* WARPSCOPE_CUDA_PROTOCOL_CUDA_WIRE_H_ */
