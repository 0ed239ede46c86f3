// Command-line parsing for warpscope-agent. Pure functions over argv so every
// error message is unit-tested; nothing here touches the system.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/export/file_sink.h"
#include "base/status.h"

namespace warpscope {

// Process exit codes, documented in `warpscope-agent help` and docs/getting-started.md.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,         // a runtime failure (BPF load, I/O, ...)
  kExitUsage = 2,         // bad flags or arguments, unwritable output path
  kExitPermission = 3,    // not root / missing CAP_BPF, CAP_PERFMON
  kExitUnsupported = 4,   // kernel without BTF or BPF features we need
  kExitNoSuchProcess = 5, // a --pid that does not exist
  kExitBlocked = 6,       // doctor: a check other than privileges or the kernel blocks profiling
};

struct RecordOptions {
  std::vector<uint32_t> pids;  // empty with all == true: the whole machine
  bool all = false;
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  uint32_t frequency_hz = 99;
  std::string output;          // defaults by format: cpu.pb.gz or cpu.folded
  OutputFormat format = OutputFormat::kPprof;
  size_t top = 10;             // functions printed after recording; 0 prints none
  std::chrono::milliseconds drain_interval{1000};
  bool verbose = false;
  bool frame_pointers_only = false;  // skip .eh_frame unwinding (for comparisons)
  bool python_frames = true;         // walk CPython interpreter frames (--no-python turns it off)
  std::string unwinder_driver;       // --unwinder-driver: "", auto, bpf_loop or tail_call (bpf_features.h)
  // --type: which profiles the file holds (cpu, off_cpu, or both: then one
  // pprof with the sample types off_cpu and cpu).
  bool cpu = true;
  bool off_cpu = false;
  std::chrono::nanoseconds off_cpu_min_wait{0};  // --off-cpu-min
};

// --type's value: "cpu", "off_cpu" or both, comma-separated.
Status ParseProfileTypes(const std::string& value, bool* cpu, bool* off_cpu);

// argv excludes the program name and the "record" subcommand.
StatusOr<RecordOptions> ParseRecordArgs(const std::vector<std::string>& args);

// `warpscope-agent run`: continuous profiling, uploaded to warpscope-server.
struct RunOptions {
  std::string server_url;  // http(s)://host:port, without a trailing '/'
  std::string token;       // from --token; never printed
  std::string token_file;  // from --token-file; read (and trimmed) by the run command
  uint32_t frequency_hz = 19;
  std::chrono::nanoseconds upload_interval = std::chrono::seconds(10);
  std::string state_dir = "/var/lib/warpscope-agent";
  std::string spool_dir;  // default: <state_dir>/spool
  uint64_t spool_max_bytes = 256ull << 20;
  // One upload batch at most (serialized); a window's sources are split below it.
  uint64_t upload_max_batch_bytes = 12ull << 20;
  uint64_t symbol_cache_bytes = 256ull << 20;  // Symbolizer's budget for symbol tables
  std::string node_name;  // empty: $WARPSCOPE_NODE_NAME, else the host name
  // --label KEY=VALUE: on every series the agent sends (region=us-east-1
  // gives the node its region's carbon intensity in energy answers).
  std::vector<std::pair<std::string, std::string>> labels;
  // --cpu-watts-per-core: this node's watts per busy CPU thread for energy
  // answers where it has no RAPL (unset: its CPU family's, on the server).
  std::optional<double> cpu_watts_per_core;
  std::vector<uint32_t> pids;  // empty: every process
  std::chrono::milliseconds drain_interval{1000};
  bool python_frames = true;
  std::string unwinder_driver;  // --unwinder-driver: "", auto, bpf_loop or tail_call (bpf_features.h)
  bool off_cpu = false;  // --off-cpu: upload off-CPU time too
  std::chrono::nanoseconds off_cpu_min_wait{0};
  bool verbose = false;
  bool gpu_metrics = true;                             // --no-gpu-metrics turns NVML off
  std::string nvml_library;                            // empty: libnvidia-ml.so.1
  std::chrono::milliseconds gpu_metrics_interval{1000};
  // --powercap-root: where RAPL's CPU and DRAM energy is read (empty: off).
  std::string powercap_root = "/sys/class/powercap";
  std::string metrics_listen;                          // empty: no Prometheus endpoint
  // GPU time (CUDA kernels through libwarpscope_cuda.so): see RunUsage().
  bool gpu_time = true;                                // --no-gpu-time: no CUDA socket, no probe
  std::string cuda_socket = "/run/warpscope/cuda.sock";
  // --cuda-library-dir: copy the injection library (cuda_library, empty: the
  // one beside the executable) there at start, for pods that mount it.
  std::string cuda_library;
  std::string cuda_library_dir;
  enum class GpuTimeMode { kAdaptive, kExact, kDuty } gpu_time_mode = GpuTimeMode::kAdaptive;
  // Windowed modes: kernels recorded for gpu_duty_on_ms of every period; the
  // period is gpu_duty_period_ms in duty mode, at most that in adaptive mode.
  // 0: the library's defaults (200 ms / 10 s adaptive, 100 ms / 1 s duty).
  uint32_t gpu_duty_on_ms = 0;
  uint32_t gpu_duty_period_ms = 0;
  uint32_t gpu_overhead_budget_ppm = 10000;  // adaptive mode's cost bound (1%)
  uint32_t gpu_launch_samples = 200;   // launch stacks per second per application thread
  uint32_t gpu_trace_per_sec = 20000;  // activities per process and second kept in the trace
  // --gpu-pc-sampling: CUPTI PC sampling inside kernels (gpu_pc profile),
  // one sample per SM every 2^gpu_pc_period_log2 cycles; --nvdisasm: the
  // disassembler for SASS text ("" searches $PATH and /usr/local/cuda/bin).
  bool gpu_pc_sampling = false;
  uint32_t gpu_pc_period_log2 = 20;
  std::string nvdisasm;
  uint32_t gpu_connections_per_uid = 64;  // CUDA socket connections one non-root user may hold
  uint64_t gpu_kernel_name_bytes = 64ull << 20;  // all CUDA kernel names held, every connection together
  uint32_t gpu_probe_files = 16;  // distinct libwarpscope_cuda.so files probed at once
  // Kubernetes pod metadata (pod, namespace, container, workload labels):
  // see RunUsage() and agent/kubernetes/pod_metadata_source.h.
  enum class KubernetesMode { kAuto, kOff, kKubelet, kApiServer } kubernetes = KubernetesMode::kAuto;
  std::string kubernetes_pods_url;  // empty: from the mode
  std::string kubernetes_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string kubernetes_ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  bool kubernetes_insecure_tls = false;
  std::chrono::milliseconds kubernetes_refresh{15000};
  std::chrono::milliseconds kubernetes_pod_grace{120000};
};

// argv excludes the program name and the "run" subcommand.
StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args);
// One flag of a command line: "--flag value" or "--flag=value". Load() reads
// args[i]; TakeValue() gives the inline value or consumes the next argument.
struct FlagCursor {
  const std::vector<std::string>& args;
  size_t i = 0;
  std::string flag;
  std::string value;
  bool has_inline_value = false;

  void Load() {
    flag = args[i];
    has_inline_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline_value = true;
    }
  }
  StatusOr<std::string> TakeValue() {
    if (has_inline_value) return value;
    if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value");
    return args[++i];
  }
};

// --server's value (run, doctor): http:// or https://, trailing '/' removed.
StatusOr<std::string> ParseServerUrl(const std::string& value);

// A --token-file's token: the file read, then TokenFromFileText. Errors never
// contain the token.
StatusOr<std::string> ReadTokenFile(const std::string& path);

// The token from a token file's text: surrounding whitespace (the trailing
// newline editors add) removed. InvalidArgument when nothing is left or the
// token has inner whitespace or control characters (it would corrupt the header).
StatusOr<std::string> TokenFromFileText(const std::string& text);
// "256MiB", "1G", "4096", "64k": bytes.
StatusOr<uint64_t> ParseByteSize(const std::string& flag, const std::string& text);

std::string RecordUsage();
std::string RunUsage();
std::string MainUsage();

}  // namespace warpscope
