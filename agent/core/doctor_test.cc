#include "agent/core/doctor.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "agent/core/cli.h"

namespace warpscope {
namespace {

uint64_t Caps(std::initializer_list<int> caps) {
  uint64_t v = 0;
  for (int c : caps) v |= 1ull << c;
  return v;
}

// A machine where everything is fine: root in the host's namespaces, a GPU
// with a driver, NVML, a CUPTI matching the driver, a server taking the token.
DoctorFacts GoodFacts() {
  DoctorFacts f;
  f.kernel_release = "6.1.0-18-amd64";
  f.bpf_features = {true, true, true, true, true, true, true};
  f.preflight.effective_caps = 0x1ffffffffffull;
  f.preflight.btf_present = true;
  f.preflight.seccomp_mode = 0;
  f.preflight.pid_ns = {kHostPidNamespaceInode, 1, true};
  f.tracefs_mounted = true;
  f.tracefs_path = "/sys/kernel/tracing";
  f.bpffs_mounted = true;
  f.bpffs_path = "/sys/fs/bpf";
  f.uprobe_pmu = true;
  f.perf_event_paranoid = 2;
  f.nvidia_proc_dir = "/proc/driver/nvidia";
  f.driver_version = "550.54.15";
  f.device_nodes = {"/dev/nvidia0", "/dev/nvidiactl"};
  f.profiling_admin_only = 1;
  f.nvml_checked = true;
  f.nvml_library = "libnvidia-ml.so.1";
  f.nvml_loaded = true;
  f.nvml_driver_version = "550.54.15";
  f.cuda_driver_version = 12040;
  f.gpu_count = 8;
  f.gpu_time_checked = true;
  f.cupti_path = "/usr/local/cuda/lib64/libcupti.so.12";
  f.cupti_api_version = 22;  // CUDA 12.4
  f.cuda_socket = "/run/warpscope/cuda.sock";
  f.socket_dir_exists = true;
  f.state_dir = "/var/lib/warpscope-agent";
  f.state_dir_exists = true;
  f.state_dir_free_bytes = 10ull << 30;
  f.server_url = "http://server:7070";
  f.token_given = true;
  f.healthz_status = 200;
  f.api_status = 200;
  f.node_name = "gpu-node-1";
  f.paused_checked = true;
  return f;
}

const CheckResult& Find(const std::vector<CheckResult>& results, const std::string& name) {
  for (const CheckResult& r : results) {
    if (r.name == name) return r;
  }
  static CheckResult none{"<none>", CheckStatus::kSkip, "", ""};
  ADD_FAILURE() << "no check " << name;
  return none;
}

CheckResult Check(const DoctorFacts& f, const std::string& name) { return Find(RunDoctorChecks(f), name); }

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DoctorTest, EverythingFineIsOkAndExitsZero) {
  const auto results = RunDoctorChecks(GoodFacts());
  ASSERT_EQ(results.size(), 17u);
  for (const CheckResult& r : results) EXPECT_EQ(r.status, CheckStatus::kOk) << r.name << ": " << r.found;
  EXPECT_EQ(DoctorExitCode(results), kExitOk);
  EXPECT_TRUE(Has(FormatDoctorReport(results, false), "nothing blocks profiling (0 warnings)"));
}

// A process whose library stood aside for its own profiler (torch.profiler)
// is named with when, and how to keep warpscope out of such a process.
TEST(DoctorTest, ProcessesWhoseGpuTimeWasPausedAreNamed) {
  DoctorFacts f = GoodFacts();
  EXPECT_EQ(Check(f, "gpu-time-paused").status, CheckStatus::kOk);
  f.paused = {{"python3", "4242", 1796640000000}};
  const CheckResult r = Check(f, "gpu-time-paused");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.found, "python3 (pid 4242) until ")) << r.found;
  EXPECT_TRUE(Has(r.todo, "WARPSCOPE_CUDA_DISABLE=1")) << r.todo;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitOk) << "a warning, not a block";
  f.paused_checked = false;
  EXPECT_EQ(Check(f, "gpu-time-paused").status, CheckStatus::kSkip);
  f.gpu_time_checked = false;
  EXPECT_EQ(Check(f, "gpu-time-paused").found, "--no-gpu-time");
}

// The kernel is judged by its probed BPF features, never by its version: a
// 5.15 kernel with bpf_loop (a backport) gets the bpf_loop driver, one without
// it the tail-call driver, and one without program arrays none.
TEST(DoctorTest, Kernel) {
  DoctorFacts f = GoodFacts();
  f.kernel_release = "5.15.0-91-generic";
  CheckResult r = Check(f, "kernel");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "unwinder driver bpf_loop (the kernel has bpf_loop)")) << r.found;
  EXPECT_TRUE(Has(r.found, "task_pt_regs yes")) << r.found;
  f.kernel_release = "5.10.0-35-amd64";
  f.bpf_features.bpf_loop = false;
  f.bpf_features.task_pt_regs = false;
  f.bpf_features.current_task_btf = false;
  r = Check(f, "kernel");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "unwinder driver tail_call (the kernel lacks bpf_loop)")) << r.found;
  EXPECT_TRUE(Has(r.found, "bpf_loop no")) << r.found;
  f.bpf_features.prog_array = false;
  r = Check(f, "kernel");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "lacks BPF program arrays")) << r.found;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitUnsupported);
  f.bpf_features = {};  // no privilege to probe
  EXPECT_EQ(Check(f, "kernel").status, CheckStatus::kWarn);
}

// Unit: which driver the probed features allow, and a forced one.
TEST(BpfFeaturesTest, ChoosesBpfLoopWhereTheKernelHasItElseTailCalls) {
  BpfFeatures f{true, true, true, true, true, true, true};
  EXPECT_EQ(ChooseUnwinderDriver(f).driver, UnwinderDriver::kBpfLoop);
  EXPECT_EQ(ChooseUnwinderDriver(f).name, "bpf_loop");
  EXPECT_EQ(ChooseUnwinderDriver(f, "tail_call").driver, UnwinderDriver::kTailCall);
  EXPECT_EQ(ChooseUnwinderDriver(f, "tail_call").why, "forced");
  EXPECT_EQ(ChooseUnwinderDriver(f, "auto").driver, UnwinderDriver::kBpfLoop);
  EXPECT_EQ(ChooseUnwinderDriver(f, "loop").driver, UnwinderDriver::kNone);
  f.bpf_loop = false;
  EXPECT_EQ(ChooseUnwinderDriver(f).driver, UnwinderDriver::kTailCall);
  const UnwinderDriverChoice forced = ChooseUnwinderDriver(f, "bpf_loop");
  EXPECT_EQ(forced.driver, UnwinderDriver::kNone);
  EXPECT_TRUE(Has(forced.why, "lacks bpf_loop")) << forced.why;
  f.ringbuf = false;
  const UnwinderDriverChoice c = ChooseUnwinderDriver(f);
  EXPECT_EQ(c.driver, UnwinderDriver::kNone);
  EXPECT_TRUE(Has(c.why, "ring buffer")) << c.why;
  EXPECT_EQ(ChooseUnwinderDriver(BpfFeatures{}).driver, UnwinderDriver::kNone);
}

// On this machine (root, a 6.x kernel): every feature the bpf_loop driver needs.
TEST(BpfFeaturesTest, ProbesThisKernel) {
  if (geteuid() != 0) GTEST_SKIP() << "probing needs BPF privilege";
  const BpfFeatures f = ProbeBpfFeatures();
  ASSERT_TRUE(f.probed);
  EXPECT_TRUE(f.bpf_loop && f.current_task_btf && f.task_pt_regs && f.ringbuf && f.prog_array)
      << DescribeBpfFeatures(f);
  EXPECT_EQ(ChooseUnwinderDriver(f).driver, UnwinderDriver::kBpfLoop);
}

TEST(DoctorTest, Btf) {
  DoctorFacts f = GoodFacts();
  f.preflight.btf_present = false;
  f.preflight.btf_path = "/fixture/vmlinux";
  const CheckResult r = Check(f, "btf");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "/fixture/vmlinux is missing"));
  EXPECT_TRUE(Has(r.todo, "CONFIG_DEBUG_INFO_BTF"));
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitUnsupported);
}

TEST(DoctorTest, CapabilitiesNameWhatIsMissingAndHowToGrantIt) {
  DoctorFacts f = GoodFacts();
  f.preflight.effective_caps = 0;
  CheckResult r = Check(f, "capabilities");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "missing CAP_BPF, CAP_PERFMON (no BPF programs, no perf events), CAP_SYS_PTRACE ("))
      << r.found;
  EXPECT_TRUE(Has(r.todo, "grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE: "))
      << r.todo;
  EXPECT_TRUE(Has(r.todo, "--privileged")) << r.todo;
  EXPECT_TRUE(Has(r.todo, "capabilities: {add: [BPF, PERFMON, SYS_PTRACE")) << r.todo;
  EXPECT_TRUE(Has(r.todo, "seccompProfile: {type: Unconfined}")) << r.todo;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitPermission);

  // The minimum: BPF, PERFMON and SYS_PTRACE; the file-access ones only warn.
  f.preflight.effective_caps = Caps({kCapBpf, kCapPerfmon, kCapSysPtrace});
  r = Check(f, "capabilities");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.found, "missing CAP_DAC_READ_SEARCH (")) << r.found;
  EXPECT_TRUE(Has(r.todo, "grant CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE: ")) << r.todo;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitOk);

  // Without SYS_PTRACE the stacks of other users' processes stay unnamed: blocked.
  f.preflight.effective_caps = Caps({kCapSysAdmin, kCapDacReadSearch});
  r = Check(f, "capabilities");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "missing CAP_SYS_PTRACE (")) << r.found;
  EXPECT_TRUE(Has(r.found, "unnamed")) << r.found;

  f.preflight.effective_caps = Caps({kCapBpf, kCapPerfmon, kCapSysPtrace, kCapDacReadSearch, kCapCheckpointRestore});
  EXPECT_EQ(Check(f, "capabilities").status, CheckStatus::kOk);
}

TEST(DoctorTest, BpfSyscalls) {
  DoctorFacts f = GoodFacts();
  f.bpf_errno = EPERM;
  f.preflight.seccomp_mode = 2;
  CheckResult r = Check(f, "bpf-syscalls");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "bpf(BPF_MAP_CREATE): EPERM")) << r.found;
  EXPECT_TRUE(Has(r.found, "Seccomp: 2")) << r.found;
  EXPECT_TRUE(Has(r.todo, "seccompProfile: {type: Unconfined}")) << r.todo;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitPermission);

  f.preflight.seccomp_mode = 0;
  f.bpf_errno = 0;
  f.perf_event_errno = EACCES;
  r = Check(f, "bpf-syscalls");
  EXPECT_TRUE(Has(r.found, "perf_event_open(cpu-clock, CPU 0): EACCES")) << r.found;
  EXPECT_TRUE(Has(r.todo, "AppArmor")) << r.todo;

  f.preflight.effective_caps = 0;
  EXPECT_EQ(Check(f, "bpf-syscalls").todo, "grant the capabilities above");
}

TEST(DoctorTest, HostPidNamespace) {
  DoctorFacts f = GoodFacts();
  f.preflight.pid_ns = {4026532999ull, 1, false};  // unshare --pid --mount-proc: own /proc
  CheckResult r = Check(f, "host-pid-namespace");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "pid:[4026532999]")) << r.found;
  EXPECT_TRUE(Has(r.todo, "hostPID: true")) << r.todo;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitBlocked);

  f.preflight.pid_ns = {0, 2, true};  // ns link unreadable, two NSpid levels
  r = Check(f, "host-pid-namespace");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "2 nested pid namespaces")) << r.found;

  f.preflight.pid_ns = {0, 1, false};  // a /proc of another namespace
  r = Check(f, "host-pid-namespace");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "kthreadd")) << r.found;
}

TEST(DoctorTest, MountsAndParanoid) {
  DoctorFacts f = GoodFacts();
  f.tracefs_mounted = false;
  EXPECT_EQ(Check(f, "tracefs").status, CheckStatus::kOk);
  f.uprobe_pmu = false;
  CheckResult r = Check(f, "tracefs");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.todo, "mount -t tracefs tracefs /sys/kernel/tracing")) << r.todo;
  f.bpffs_mounted = false;
  r = Check(f, "bpffs");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "mount -t bpf bpf /sys/fs/bpf")) << r.found;

  r = Check(f, "perf_event_paranoid");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "= 2: does not apply")) << r.found;
  f.preflight.effective_caps = Caps({kCapBpf});
  EXPECT_EQ(Check(f, "perf_event_paranoid").status, CheckStatus::kWarn);
  f.perf_event_paranoid = -1;
  EXPECT_EQ(Check(f, "perf_event_paranoid").status, CheckStatus::kOk);
  f.perf_event_paranoid = -100;
  EXPECT_EQ(Check(f, "perf_event_paranoid").status, CheckStatus::kSkip);
}

TEST(DoctorTest, NoDriverSkipsTheGpuChecks) {
  DoctorFacts f = GoodFacts();
  f.driver_version.clear();
  f.device_nodes.clear();
  f.nvml_loaded = false;
  f.nvml_error = "libnvidia-ml.so.1 not found (no NVIDIA driver?): libnvidia-ml.so.1: cannot open shared object file";
  const auto results = RunDoctorChecks(f);
  for (const char* name : {"nvidia-driver", "nvml", "cupti", "gpu-profiling-access", "cuda-socket"}) {
    EXPECT_EQ(Find(results, name).status, CheckStatus::kSkip) << name;
  }
  EXPECT_EQ(DoctorExitCode(results), kExitOk);
}

TEST(DoctorTest, DriverWithoutNvmlBlocksGpuProfiling) {
  DoctorFacts f = GoodFacts();
  f.device_nodes.clear();  // the /proc file alone says a driver is there
  f.nvml_loaded = false;
  f.cuda_driver_version = 0;
  f.nvml_error = "/missing/libnvidia-ml.so.1 cannot be loaded: cannot open shared object file";
  const auto results = RunDoctorChecks(f);
  const CheckResult& nvml = Find(results, "nvml");
  EXPECT_EQ(nvml.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(nvml.found, "/missing/libnvidia-ml.so.1")) << nvml.found;
  EXPECT_TRUE(Has(nvml.todo, "--nvml-library")) << nvml.todo;
  EXPECT_EQ(Find(results, "nvidia-driver").status, CheckStatus::kOk);
  EXPECT_EQ(Find(results, "cupti").status, CheckStatus::kWarn);  // nothing to compare CUPTI with
  EXPECT_EQ(DoctorExitCode(results), kExitBlocked);

  f.nvml_checked = false;  // --no-gpu-metrics
  EXPECT_EQ(Check(f, "nvml").status, CheckStatus::kSkip);
}

TEST(DoctorTest, CuptiAgainstTheDriversCuda) {
  EXPECT_EQ(CuptiCudaVersion(22), 12040);
  EXPECT_EQ(CuptiCudaVersion(130001), 13000);
  EXPECT_EQ(CuptiCudaVersion(130100), 13010);
  EXPECT_EQ(CuptiCudaVersion(25), 0);
  DoctorFacts f = GoodFacts();
  CheckResult r = Check(f, "cupti");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "CUPTI API 22 (CUDA 12.4), driver CUDA 12.4")) << r.found;
  f.cupti_api_version = 130001;  // CUDA 13.0's CUPTI on a 12.4 driver
  r = Check(f, "cupti");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.found, "newer than the driver's CUDA 12.4")) << r.found;
  f.cupti_api_version = 18;  // older CUPTI: fine
  EXPECT_EQ(Check(f, "cupti").status, CheckStatus::kOk);
  f.cupti_path.clear();
  f.cupti_tried = {"libcupti.so.13", "/usr/local/cuda/lib64/libcupti.so.13"};
  r = Check(f, "cupti");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.found, "tried libcupti.so.13, /usr/local/cuda/lib64/libcupti.so.13")) << r.found;
  EXPECT_TRUE(Has(r.todo, "WARPSCOPE_CUPTI_PATH")) << r.todo;
  f.cupti_env = "/opt/libcupti.so";
  f.cupti_error = "/opt/libcupti.so: No such file or directory";
  EXPECT_EQ(Check(f, "cupti").found, f.cupti_error);
  f.gpu_time_checked = false;
  EXPECT_EQ(Check(f, "cupti").status, CheckStatus::kSkip);
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitOk);
}

TEST(DoctorTest, ProfilingAdminOnlyDoesNotConcernGpuTime) {
  DoctorFacts f = GoodFacts();
  CheckResult r = Check(f, "gpu-profiling-access");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "RmProfilingAdminOnly: 1")) << r.found;
  EXPECT_TRUE(Has(r.todo, "NVreg_RestrictProfilingToAdminUsers=0")) << r.todo;
  f.profiling_admin_only = 0;
  EXPECT_TRUE(Check(f, "gpu-profiling-access").todo.empty());
  f.profiling_admin_only = -1;
  EXPECT_EQ(Check(f, "gpu-profiling-access").status, CheckStatus::kSkip);
}

TEST(DoctorTest, CudaSocket) {
  DoctorFacts f = GoodFacts();
  f.socket_dir_exists = false;
  CheckResult r = Check(f, "cuda-socket");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_TRUE(Has(r.found, "/run/warpscope will be created")) << r.found;
  f.socket_dir_problem = "the CUDA socket's directory /run/warpscope is owned by uid 1000, who could replace the socket";
  r = Check(f, "cuda-socket");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.found, "uid 1000")) << r.found;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitOk);
}

TEST(DoctorTest, StateDir) {
  DoctorFacts f = GoodFacts();
  EXPECT_TRUE(Has(Check(f, "state-dir").found, "/var/lib/warpscope-agent is writable (10240 MiB free)"));
  f.state_dir_free_bytes = 100ull << 20;
  EXPECT_EQ(Check(f, "state-dir").status, CheckStatus::kWarn);
  f.state_dir_problem = "/var/lib is not writable: Read-only file system";
  const CheckResult r = Check(f, "state-dir");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "`run` would exit 2")) << r.found;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitBlocked);
}

TEST(DoctorTest, ServerAndToken) {
  DoctorFacts f = GoodFacts();
  f.server_url.clear();
  EXPECT_EQ(Check(f, "server").status, CheckStatus::kSkip);
  EXPECT_EQ(Check(f, "server-token").status, CheckStatus::kSkip);

  f = GoodFacts();
  f.healthz_status = 0;
  f.healthz_error = "Failed to connect to server port 7070";
  f.api_status = 0;
  CheckResult r = Check(f, "server");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_TRUE(Has(r.todo, "spools")) << r.todo;
  EXPECT_EQ(Check(f, "server-token").status, CheckStatus::kSkip);
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitOk);

  f = GoodFacts();
  f.api_status = 401;
  r = Check(f, "server-token");
  EXPECT_EQ(r.status, CheckStatus::kBlocked);
  EXPECT_TRUE(Has(r.found, "refuses the token (GET /api/v1/status: 401)")) << r.found;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitBlocked);
  f.token_given = false;
  EXPECT_TRUE(Has(Check(f, "server-token").found, "needs a token and none was given"));

  f = GoodFacts();
  f.token_problem = "--token-file /nope: No such file or directory";
  EXPECT_EQ(Check(f, "server-token").status, CheckStatus::kBlocked);
}

TEST(DoctorTest, ExitCodePrefersPrivilegesThenTheKernel) {
  DoctorFacts f = GoodFacts();
  f.api_status = 401;
  f.preflight.btf_present = false;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitUnsupported);
  f.preflight.effective_caps = 0;
  EXPECT_EQ(DoctorExitCode(RunDoctorChecks(f)), kExitPermission);
}

TEST(DoctorTest, TableHasOneLinePerCheckAndColoursOnlyWhenAsked) {
  std::vector<CheckResult> results = {
      {"kernel", CheckStatus::kOk, "6.1.0", ""},
      {"host-pid-namespace", CheckStatus::kBlocked, "pid:[4026532999]", "hostPID: true"},
      {"cupti", CheckStatus::kWarn, "no libcupti", "install CUPTI"},
      {"server", CheckStatus::kSkip, "no --server given", ""},
  };
  const std::string plain = FormatDoctorReport(results, false);
  EXPECT_EQ(plain,
            "CHECK               STATUS   FOUND              TO DO\n"
            "kernel              ok       6.1.0\n"
            "host-pid-namespace  BLOCKED  pid:[4026532999]   hostPID: true\n"
            "cupti               warn     no libcupti        install CUPTI\n"
            "server              skip     no --server given\n"
            "warpscope-agent doctor: BLOCKED by host-pid-namespace (1 warning; exit code 6)\n");
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  const std::string colored = FormatDoctorReport(results, true);
  EXPECT_TRUE(Has(colored, "\033[1;31mBLOCKED\033[0m  pid:[4026532999]")) << colored;
  EXPECT_TRUE(Has(colored, "\033[32mok\033[0m       6.1.0")) << colored;
}

TEST(DoctorTest, ParsesItsFlags) {
  auto o = ParseDoctorArgs({"--server", "http://s:7070/", "--token-file=/t", "--no-gpu-time", "--btf-path", "/x",
                            "--nvidia-proc-dir", "/d", "--nvml-library", "/n.so", "--kernel-release", "5.10.0"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->server_url, "http://s:7070");
  EXPECT_EQ(o->token_file, "/t");
  EXPECT_FALSE(o->gpu_time);
  EXPECT_EQ(o->paths.btf_path, "/x");
  EXPECT_EQ(o->paths.nvidia_proc_dir, "/d");
  EXPECT_EQ(o->nvml_library, "/n.so");
  EXPECT_EQ(o->paths.kernel_release, "5.10.0");
  EXPECT_FALSE(ParseDoctorArgs({"--server", "s:7070"}).ok());
  EXPECT_FALSE(ParseDoctorArgs({"--token", "a", "--token-file", "b"}).ok());
  EXPECT_FALSE(ParseDoctorArgs({"--bogus"}).ok());
  EXPECT_FALSE(ParseDoctorArgs({"--server"}).ok());
}

// The facts from a fixture tree: a driver's /proc files, a missing BTF file,
// a kernel release, an NVML that is not there.
TEST(DoctorTest, ReadsFactsFromFixturePaths) {
  char tmpl[] = "/tmp/doctor_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(mkdir((root + "/nvidia").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/dev").c_str(), 0755), 0);
  std::ofstream(root + "/nvidia/version")
      << "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)\n"
         "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  std::ofstream(root + "/nvidia/params") << "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n";
  std::ofstream(root + "/dev/nvidia0") << "";
  std::ofstream(root + "/dev/nvidiactl") << "";
  std::ofstream(root + "/dev/nvidia-uvm") << "";
  DoctorOptions o;
  o.paths.btf_path = root + "/no-vmlinux";
  o.paths.nvidia_proc_dir = root + "/nvidia";
  o.paths.dev_root = root + "/dev";
  o.paths.kernel_release = "5.15.0-91-generic";
  o.nvml_library = root + "/libnvidia-ml.so.1";
  o.cuda_socket = root + "/run/cuda.sock";
  o.cupti_library = root + "/libcupti.so";
  o.state_dir = root + "/state/agent";
  const DoctorFacts f = ReadDoctorFacts(o);
  EXPECT_EQ(f.kernel_release, "5.15.0-91-generic");
  EXPECT_FALSE(f.preflight.btf_present);
  EXPECT_EQ(f.driver_version, "550.54.15");
  EXPECT_EQ(f.device_nodes, (std::vector<std::string>{root + "/dev/nvidia0", root + "/dev/nvidiactl"}));
  EXPECT_EQ(f.profiling_admin_only, 1);
  EXPECT_FALSE(f.nvml_loaded);
  EXPECT_TRUE(Has(f.nvml_error, "libnvidia-ml.so.1 cannot be loaded")) << f.nvml_error;
  EXPECT_TRUE(f.cupti_path.empty());
  EXPECT_TRUE(Has(f.cupti_error, "libcupti.so")) << f.cupti_error;
  EXPECT_FALSE(f.socket_dir_exists);
  EXPECT_FALSE(f.state_dir_exists);
  EXPECT_EQ(f.state_dir_problem, "");
  EXPECT_NE(f.state_dir_free_bytes, UINT64_MAX);
  const auto results = RunDoctorChecks(f);
  // The release is only reported: the kernel's probed BPF features decide.
  EXPECT_TRUE(Has(Find(results, "kernel").found, "5.15.0-91-generic")) << Find(results, "kernel").found;
  EXPECT_EQ(Find(results, "btf").status, CheckStatus::kBlocked);
  EXPECT_EQ(Find(results, "nvml").status, CheckStatus::kBlocked);
  EXPECT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

}  // namespace
}  // namespace warpscope
