// `warpscope-agent doctor`: checks what a deployment trips on (kernel, BTF,
// capabilities, the host's PID namespace, mounts, NVML, CUPTI, the CUDA
// socket, the server and its token) and prints one line per check with what
// to do. Made to run as a Kubernetes init container: plain text for logs,
// exit code 0 when nothing blocks profiling.
//
// Like preflight.h: every fact is read by ReadDoctorFacts into a value, from
// paths that tests point at fixtures, and the checks are a pure function of
// that value (CONTRIBUTING.md, "State and threads").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/unwind/bpf_features.h"
#include "agent/core/preflight.h"
#include "base/status.h"

namespace warpscope {

enum class CheckStatus { kOk, kWarn, kBlocked, kSkip };

struct CheckResult {
  std::string name;  // one word: "kernel", "capabilities", ...
  CheckStatus status = CheckStatus::kOk;
  std::string found;
  std::string todo;  // empty: nothing to do
};

// Where facts come from. The defaults are the machine's; the hidden flags
// --proc-root, --sys-root, --dev-root, --btf-path, --nvidia-proc-dir and
// --kernel-release point them at fixtures.
struct DoctorPaths {
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  std::string dev_root = "/dev";
  std::string btf_path;         // empty: <sys_root>/kernel/btf/vmlinux
  std::string nvidia_proc_dir;  // empty: <proc_root>/driver/nvidia
  std::string kernel_release;   // empty: uname's release
};

struct DoctorOptions {
  DoctorPaths paths;
  std::string server_url;  // empty: the server checks are skipped
  std::string token;
  std::string token_file;
  bool gpu_metrics = true;   // --no-gpu-metrics: NVML is not checked
  std::string nvml_library;  // empty: libnvidia-ml.so.1
  bool gpu_time = true;      // --no-gpu-time: CUPTI and the CUDA socket are not checked
  std::string cuda_socket = "/run/warpscope/cuda.sock";
  std::string cupti_library;  // empty: $WARPSCOPE_CUPTI_PATH, else where libwarpscope_cuda.so looks
  std::string state_dir = "/var/lib/warpscope-agent";
  bool verbose = false;
};

// Everything the checks look at.
struct DoctorFacts {
  std::string kernel_release;  // "6.1.0-18-amd64"
  BpfFeatures bpf_features;    // probed (bpf_features.h)
  PreflightFacts preflight;    // capabilities, BTF, seccomp, pid namespace
  // errno of the agent's two kinds of syscall tried once each (0: it worked):
  // bpf(BPF_MAP_CREATE) of a one-entry array, and a CPU-wide cpu-clock
  // perf_event_open on CPU 0, as the sampler opens them.
  int bpf_errno = 0;
  int perf_event_errno = 0;
  bool tracefs_mounted = false;  // tracefs, or debugfs with tracing/ under it
  std::string tracefs_path;
  bool bpffs_mounted = false;
  std::string bpffs_path;
  bool uprobe_pmu = false;        // <sys>/bus/event_source/devices/uprobe/type
  int perf_event_paranoid = -100;  // -100: unknown

  // NVIDIA: the kernel driver's traces.
  std::string nvidia_proc_dir;
  std::string driver_version;            // from <nvidia_proc_dir>/version; empty without
  std::vector<std::string> device_nodes;  // /dev/nvidiactl, /dev/nvidia0, ...
  int profiling_admin_only = -1;          // RmProfilingAdminOnly of <nvidia_proc_dir>/params; -1 unknown
  // NVML, as the agent loads it.
  bool nvml_checked = false;  // false with --no-gpu-metrics
  std::string nvml_library;
  bool nvml_loaded = false;
  std::string nvml_error;
  std::string nvml_driver_version;
  int cuda_driver_version = 0;  // 12040 is CUDA 12.4; 0 unknown
  unsigned gpu_count = 0;
  // CUPTI, where libwarpscope_cuda.so looks on this host.
  bool gpu_time_checked = false;  // false with --no-gpu-time
  std::string cupti_env;          // WARPSCOPE_CUPTI_PATH or --cupti-library, if set
  std::vector<std::string> cupti_tried;
  std::string cupti_path;  // the one loaded; empty when none
  std::string cupti_error;
  uint32_t cupti_api_version = 0;  // cuptiGetVersion
  // The CUDA socket's directory.
  std::string cuda_socket;
  bool socket_dir_exists = false;
  std::string socket_dir_problem;  // empty: fine (or creatable)
  // The agent's state directory (its id, the spool).
  std::string state_dir;
  bool state_dir_exists = false;
  std::string state_dir_problem;  // empty: writable (or creatable)
  uint64_t state_dir_free_bytes = UINT64_MAX;  // on its file system; UINT64_MAX unknown
  // The server.
  std::string server_url;  // empty: not checked
  std::string token_problem;  // the token file could not be read
  bool token_given = false;
  int healthz_status = 0;  // 0: no answer
  std::string healthz_error;
  int api_status = 0;  // GET /api/v1/status with the token; 0: no answer
  std::string api_error;
  // This node's processes whose GPU time the server shows paused in the
  // last hour (cuda_profiling_paused_seconds: their injection library stood
  // aside for another CUPTI client such as torch.profiler or Nsight).
  std::string node_name;
  bool paused_checked = false;  // the server answered the query
  struct PausedProcess {
    std::string comm;
    std::string pid;
    int64_t last_ms = 0;  // the last second with a pause
  };
  std::vector<PausedProcess> paused;
};

DoctorFacts ReadDoctorFacts(const DoctorOptions& options);

// One result per check, in the order printed.
std::vector<CheckResult> RunDoctorChecks(const DoctorFacts& facts);

// The table: a header, one line per check, a summary line. `color`: ANSI
// colours for the status words (a terminal only).
std::string FormatDoctorReport(const std::vector<CheckResult>& results, bool color);

// kExitOk when nothing is BLOCKED; else kExitPermission when capabilities or
// the BPF syscalls block, kExitUnsupported when the kernel or BTF does,
// kExitBlocked for the rest (PID namespace, NVML, the server's token).
int DoctorExitCode(const std::vector<CheckResult>& results);

// "12.4" for CUPTI API version 22, "13.0" for 130001; the CUDA toolkit a
// CUPTI version belongs to, as (major * 1000 + minor * 10) like the driver's
// CUDA version; 0 when unknown.
int CuptiCudaVersion(uint32_t cupti_api_version);

// argv excludes the program name and "doctor".
StatusOr<DoctorOptions> ParseDoctorArgs(const std::vector<std::string>& args);
std::string DoctorUsage();

// Reads the facts, prints the report to stdout, returns the exit code.
int RunDoctor(const DoctorOptions& options);

}  // namespace warpscope
