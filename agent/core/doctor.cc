#include "agent/core/doctor.h"

#include <curl/curl.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/core/cli.h"
#include "agent/process/node_name.h"
#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_library.h"
#include "base/ca_bundle.h"
#include "base/file_util.h"
#include "proto/cuda/cupti_search_paths.h"

namespace warpscope {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string ErrnoName(int e) {
  switch (e) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return "errno " + std::to_string(e);
  }
}

// The agent's two kinds of syscall, tried once each. 0 when it worked.
int ProbeBpf() {
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  const long fd = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
  if (fd < 0) return errno;
  close(static_cast<int>(fd));
  return 0;
}

int ProbePerfEvent() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  const long fd = syscall(__NR_perf_event_open, &attr, -1 /* every process */, 0 /* CPU 0 */, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno;
  close(static_cast<int>(fd));
  return 0;
}

void ReadMounts(const std::string& proc_root, DoctorFacts* f) {
  auto mounts = ReadFileToString(proc_root + "/self/mounts");
  if (!mounts.ok()) return;
  std::istringstream in(*mounts);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string device, point, type;
    if (!(words >> device >> point >> type)) continue;
    if (type == "tracefs" && !f->tracefs_mounted) {
      f->tracefs_mounted = true;
      f->tracefs_path = point;
    } else if (type == "debugfs" && !f->tracefs_mounted && Exists(point + "/tracing/events")) {
      f->tracefs_mounted = true;
      f->tracefs_path = point + "/tracing";
    } else if (type == "bpf" && !f->bpffs_mounted) {
      f->bpffs_mounted = true;
      f->bpffs_path = point;
    }
  }
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." (or
// "... Open Kernel Module for x86_64  550.54.15  Release Build ...") -> "550.54.15":
// the first word of the first line made of digits and dots.
std::string DriverVersionFromProc(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  std::istringstream words(first);
  std::string word;
  while (words >> word) {
    if (word.find('.') != std::string::npos && std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find_first_not_of("0123456789.") == std::string::npos) {
      return word;
    }
  }
  return Trim(first);
}

void ReadNvidiaDriver(const DoctorOptions& o, DoctorFacts* f) {
  if (auto version = ReadFileToString(f->nvidia_proc_dir + "/version"); version.ok()) {
    f->driver_version = DriverVersionFromProc(*version);
    if (f->driver_version.empty()) f->driver_version = "unknown version";
  }
  if (DIR* dir = opendir(o.paths.dev_root.c_str())) {
    while (dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      const bool numbered = name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
                            std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (name == "nvidiactl" || numbered) f->device_nodes.push_back(o.paths.dev_root + "/" + name);
    }
    closedir(dir);
    std::sort(f->device_nodes.begin(), f->device_nodes.end());
  }
  if (auto params = ReadFileToString(f->nvidia_proc_dir + "/params"); params.ok()) {
    std::istringstream in(*params);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("RmProfilingAdminOnly:", 0) == 0) f->profiling_admin_only = std::atoi(line.c_str() + 21);
    }
  }
}

void ReadNvml(const DoctorOptions& o, DoctorFacts* f) {
  f->nvml_checked = o.gpu_metrics;
  if (!o.gpu_metrics) return;
  f->nvml_library = o.nvml_library.empty() ? kDefaultNvmlLibrary : o.nvml_library;
  auto nvml = NvmlLibrary::Open(f->nvml_library);
  if (!nvml.ok()) {
    std::string why = nvml.status().message();
    constexpr std::string_view kPrefix = "GPU metrics off: ";
    if (why.rfind(kPrefix, 0) == 0) why = why.substr(kPrefix.size());
    f->nvml_error = why;
    return;
  }
  f->nvml_loaded = true;
  const NvmlFunctions& fn = (*nvml)->fn();
  char version[96] = {};
  if (fn.nvmlSystemGetDriverVersion != nullptr &&
      fn.nvmlSystemGetDriverVersion(version, sizeof(version)) == nvml::NVML_SUCCESS) {
    f->nvml_driver_version = version;
  }
  int cuda = 0;
  if ((fn.nvmlSystemGetCudaDriverVersion_v2 != nullptr &&
       fn.nvmlSystemGetCudaDriverVersion_v2(&cuda) == nvml::NVML_SUCCESS) ||
      (fn.nvmlSystemGetCudaDriverVersion != nullptr &&
       fn.nvmlSystemGetCudaDriverVersion(&cuda) == nvml::NVML_SUCCESS)) {
    f->cuda_driver_version = cuda;
  }
  unsigned count = 0;
  if (fn.nvmlDeviceGetCount_v2 != nullptr && fn.nvmlDeviceGetCount_v2(&count) == nvml::NVML_SUCCESS) {
    f->gpu_count = count;
  }
}

// Where libwarpscope_cuda.so would find CUPTI on this host (cupti_library.h:
// the environment variable, then the loader's path and the toolkit's
// directories; what an application itself loads cannot be seen from here).
void ReadCupti(const DoctorOptions& o, DoctorFacts* f) {
  f->gpu_time_checked = o.gpu_time;
  if (!o.gpu_time) return;
  std::vector<std::string> candidates;
  const char* env = std::getenv(cuda::kCuptiPathEnv);
  f->cupti_env = !o.cupti_library.empty() ? o.cupti_library : env != nullptr ? env : "";
  if (!f->cupti_env.empty()) {
    candidates.push_back(f->cupti_env);
  } else {
    for (const char* soname : cuda::kCuptiSonames) candidates.emplace_back(soname);
    for (const char* dir : cuda::kCuptiToolkitDirs) {
      for (const char* soname : cuda::kCuptiSonames) candidates.push_back(std::string(dir) + "/" + soname);
    }
  }
  for (const std::string& path : candidates) {
    f->cupti_tried.push_back(path);
    if (path.find('/') != std::string::npos && access(path.c_str(), R_OK) != 0) {
      if (f->cupti_env == path) f->cupti_error = path + ": " + std::strerror(errno);
      continue;
    }
    // Never closed: CUPTI does not expect to be unloaded, and doctor exits soon.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      f->cupti_error = e != nullptr ? e : path + ": cannot be loaded";
      continue;
    }
    using GetVersion = int (*)(uint32_t*);
    auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cuptiGetVersion"));
    if (get_version == nullptr) {
      f->cupti_error = path + " has no cuptiGetVersion (not CUPTI?)";
      continue;
    }
    uint32_t version = 0;
    if (get_version(&version) != 0) {
      f->cupti_error = path + ": cuptiGetVersion failed";
      continue;
    }
    f->cupti_api_version = version;
    f->cupti_path = path;
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      f->cupti_path = map->l_name;
    }
    f->cupti_error.clear();
    return;
  }
}

std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// As the agent's CUDA socket server does at start (cuda_socket_server.h),
// without creating anything.
void ReadCudaSocket(const DoctorOptions& o, DoctorFacts* f) {
  f->cuda_socket = o.cuda_socket;
  if (!o.gpu_time) return;
  sockaddr_un addr{};
  if (o.cuda_socket.empty() || o.cuda_socket.size() >= sizeof(addr.sun_path) || o.cuda_socket.back() == '/') {
    f->socket_dir_problem = "'" + o.cuda_socket + "' is empty, too long or a directory";
    return;
  }
  const std::string dir = ParentDirectory(o.cuda_socket);
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    f->socket_dir_exists = true;
    auto trusted = TrustedSocketDirectory(dir);
    if (!trusted.ok()) f->socket_dir_problem = trusted.status().message();
    return;
  }
  // Missing: the agent creates it (one level, mode 0755) in its parent.
  const std::string parent = ParentDirectory(dir);
  if (::stat(parent.c_str(), &st) != 0) {
    f->socket_dir_problem = "neither " + dir + " nor " + parent + " exists (the agent creates only the last directory)";
    return;
  }
  if (access(parent.c_str(), W_OK) != 0) {
    f->socket_dir_problem = dir + " is missing and cannot be created in " + parent + ": " + std::strerror(errno);
    return;
  }
  auto trusted = TrustedSocketDirectory(parent, /*is_socket_directory=*/false);
  if (!trusted.ok()) f->socket_dir_problem = trusted.status().message();
}

// As LoadOrCreateAgentId and the spool would: the directory, or the nearest
// one above it where the missing ones are created, must be writable.
void ReadStateDir(const DoctorOptions& o, DoctorFacts* f) {
  f->state_dir = o.state_dir;
  std::string existing = o.state_dir;
  struct stat st {};
  while (::stat(existing.c_str(), &st) != 0) {
    if (existing == "/" || existing == ".") break;
    existing = ParentDirectory(existing);
  }
  f->state_dir_exists = existing == o.state_dir;
  if (!S_ISDIR(st.st_mode)) {
    f->state_dir_problem = existing + " is not a directory";
  } else if (access(existing.c_str(), W_OK | X_OK) != 0) {
    f->state_dir_problem = (f->state_dir_exists ? existing + " is not writable: "
                                                : o.state_dir + " cannot be created in " + existing + ": ") +
                           std::strerror(errno);
  }
  struct statvfs vfs {};
  if (statvfs(existing.c_str(), &vfs) == 0) {
    f->state_dir_free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  }
}

size_t DiscardBody(char*, size_t size, size_t n, void*) { return size * n; }

size_t KeepBody(char* data, size_t size, size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() + size * n > (4u << 20)) return 0;  // the answers read here are small: stop past 4 MiB
  body->append(data, size * n);
  return size * n;
}

// GET url; the HTTP status, or 0 with `error` set when no answer came. With
// `body`, the answer's body is kept there.
int HttpStatus(const std::string& url, const std::string& token, std::string* error, std::string* body = nullptr) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    *error = "curl_easy_init failed";
    return 0;
  }
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, KeepBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
  } else {
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, DiscardBody);
  }
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "warpscope-agent doctor");
  if (!SystemCaBundle().empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, SystemCaBundle().c_str());
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  if (rc == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  } else {
    *error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return static_cast<int>(status);
}

// This node's processes whose GPU time was paused in the last hour, from
// the server's cuda_profiling_paused_seconds series.
void ReadPausedProcesses(const std::string& server_url, const std::string& token, DoctorFacts* f) {
  f->node_name = NodeName(std::getenv(kNodeNameEnvVar));
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return;
  const std::string selector = "{node=\"" + f->node_name + "\"}";
  char* escaped = curl_easy_escape(curl, selector.c_str(), static_cast<int>(selector.size()));
  const std::string url = server_url +
                          "/api/v1/metrics?name=cuda_profiling_paused_seconds&from=now-1h&to=now&group_by=pid,comm"
                          "&selector=" +
                          (escaped != nullptr ? escaped : "");
  curl_free(escaped);
  curl_easy_cleanup(curl);
  std::string body, error;
  if (HttpStatus(url, token, &error, &body) != 200) return;
  const nlohmann::json answer = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object() || !answer.contains("series") || !answer["series"].is_array()) return;
  f->paused_checked = true;
  for (const nlohmann::json& series : answer["series"]) {
    if (!series.is_object() || !series.contains("points") || !series["points"].is_array() ||
        series["points"].empty() || !series.contains("labels") || !series["labels"].is_object()) {
      continue;
    }
    DoctorFacts::PausedProcess p;
    const nlohmann::json& labels = series["labels"];
    p.comm = labels.value("comm", std::string("?"));
    p.pid = labels.value("pid", std::string("?"));
    const nlohmann::json& last = series["points"].back();
    if (last.is_array() && !last.empty() && last[0].is_number()) p.last_ms = last[0].get<int64_t>();
    if (f->paused.size() < 32) f->paused.push_back(std::move(p));
  }
}

void ReadServer(const DoctorOptions& o, DoctorFacts* f) {
  f->server_url = o.server_url;
  if (o.server_url.empty()) return;
  std::string token = o.token;
  if (!o.token_file.empty()) {
    auto parsed = ReadTokenFile(o.token_file);
    if (!parsed.ok()) {
      f->token_problem = parsed.status().message();
    } else {
      token = *parsed;
    }
  }
  f->token_given = !token.empty();
  f->healthz_status = HttpStatus(o.server_url + "/healthz", "", &f->healthz_error);
  if (f->healthz_status != 0 && f->token_problem.empty()) {
    f->api_status = HttpStatus(o.server_url + "/api/v1/status", token, &f->api_error);
  }
  if (f->api_status == 200 && o.gpu_time) ReadPausedProcesses(o.server_url, token, f);
}

std::string CudaText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

constexpr char kGrantHow[] =
    "run as root (sudo), or docker/podman --privileged, or in Kubernetes securityContext: {capabilities: {add: "
    "[BPF, PERFMON, SYS_PTRACE, DAC_READ_SEARCH, CHECKPOINT_RESTORE]}, seccompProfile: {type: Unconfined}}";

bool HasCap(const PreflightFacts& p, int cap) { return (p.effective_caps >> cap) & 1; }

// The kernel is judged by what its BPF offers (probed), not by its version.
CheckResult CheckKernel(const DoctorFacts& f) {
  const UnwinderDriverChoice driver = ChooseUnwinderDriver(f.bpf_features);
  if (!f.bpf_features.probed) {
    return {"kernel", CheckStatus::kWarn, f.kernel_release + ": " + DescribeBpfFeatures(f.bpf_features),
            "run doctor with the agent's privileges to probe the kernel's BPF features"};
  }
  const std::string probed = "probed: " + DescribeBpfFeatures(f.bpf_features);
  if (driver.driver == UnwinderDriver::kNone) {
    return {"kernel", CheckStatus::kBlocked, f.kernel_release + ": " + driver.why + "; " + probed,
            "run on a kernel with BPF ring buffers and program arrays (Linux 5.10 or newer: Debian 11, Ubuntu "
            "20.04 HWE, 22.04 and 24.04, RHEL 9, Amazon Linux 2 with 5.10, AL2023)"};
  }
  return {"kernel", CheckStatus::kOk,
          f.kernel_release + ": unwinder driver " + driver.name + " (" + driver.why + "); " + probed, ""};
}

CheckResult CheckBtf(const DoctorFacts& f) {
  if (!f.preflight.btf_present) {
    return {"btf", CheckStatus::kBlocked, f.preflight.btf_path + " is missing",
            "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (every major distribution's since 2021), and in a "
            "container mount the host's /sys"};
  }
  return {"btf", CheckStatus::kOk, f.preflight.btf_path, ""};
}

CheckResult CheckCapabilities(const DoctorFacts& f) {
  const PreflightFacts& p = f.preflight;
  // Each missing capability with what it costs; `blocking` ones leave the
  // agent unable to load its programs or to name anything.
  std::vector<std::string> blocking, weak, missing;
  if (!HasCap(p, kCapSysAdmin)) {
    if (!HasCap(p, kCapBpf)) blocking.push_back("CAP_BPF");
    if (!HasCap(p, kCapPerfmon)) blocking.push_back("CAP_PERFMON");
    if (!blocking.empty()) missing.push_back(Join(blocking, ", ") + " (no BPF programs, no perf events)");
  }
  if (!HasCap(p, kCapSysPtrace)) {
    blocking.push_back("CAP_SYS_PTRACE");
    missing.push_back("CAP_SYS_PTRACE (other users' /proc/PID/maps and binaries unreadable: unnamed stacks)");
  }
  if (!HasCap(p, kCapDacReadSearch) && !HasCap(p, kCapDacOverride)) {
    weak.push_back("CAP_DAC_READ_SEARCH");
    missing.push_back("CAP_DAC_READ_SEARCH (binaries only their owner can read are not symbolized)");
  }
  if (!HasCap(p, kCapSysAdmin) && !HasCap(p, kCapCheckpointRestore)) {
    weak.push_back("CAP_CHECKPOINT_RESTORE");
    missing.push_back("CAP_CHECKPOINT_RESTORE (no /proc/PID/map_files: deleted binaries are not symbolized)");
  }
  char caps[32];
  std::snprintf(caps, sizeof(caps), "CapEff %016llx", static_cast<unsigned long long>(p.effective_caps));
  if (missing.empty()) {
    return {"capabilities", CheckStatus::kOk,
            std::string(caps) + ": " + (HasCap(p, kCapSysAdmin) ? "CAP_SYS_ADMIN" : "CAP_BPF, CAP_PERFMON") +
                ", CAP_SYS_PTRACE, " + (HasCap(p, kCapDacReadSearch) ? "CAP_DAC_READ_SEARCH" : "CAP_DAC_OVERRIDE"),
            ""};
  }
  std::vector<std::string> grant = blocking;
  grant.insert(grant.end(), weak.begin(), weak.end());
  return {"capabilities", blocking.empty() ? CheckStatus::kWarn : CheckStatus::kBlocked,
          std::string(caps) + ": missing " + Join(missing, ", "), "grant " + Join(grant, ", ") + ": " + kGrantHow};
}

CheckResult CheckBpfSyscalls(const DoctorFacts& f) {
  if (f.bpf_errno == 0 && f.perf_event_errno == 0) {
    return {"bpf-syscalls", CheckStatus::kOk, "bpf(BPF_MAP_CREATE) and a CPU-wide perf_event_open work", ""};
  }
  std::vector<std::string> failed;
  if (f.bpf_errno != 0) failed.push_back("bpf(BPF_MAP_CREATE): " + ErrnoName(f.bpf_errno));
  if (f.perf_event_errno != 0) failed.push_back("perf_event_open(cpu-clock, CPU 0): " + ErrnoName(f.perf_event_errno));
  std::string found = Join(failed, "; ");
  if (f.preflight.seccomp_mode == 2) found += "; a seccomp filter is on (Seccomp: 2)";
  const PreflightFacts& p = f.preflight;
  const bool caps_missing = !HasCap(p, kCapSysAdmin) && (!HasCap(p, kCapBpf) || !HasCap(p, kCapPerfmon));
  std::string todo;
  if (caps_missing) {
    todo = "grant the capabilities above";
  } else if (f.preflight.seccomp_mode == 2) {
    todo = "run without the seccomp filter: Kubernetes seccompProfile: {type: Unconfined}, docker/podman "
           "--security-opt seccomp=unconfined";
  } else {
    todo = "something other than capabilities refuses them (an LSM such as AppArmor or SELinux, a seccomp "
           "profile of the runtime): run unconfined, e.g. docker --security-opt apparmor=unconfined";
  }
  return {"bpf-syscalls", CheckStatus::kBlocked, found, todo};
}

CheckResult CheckPidNamespace(const DoctorFacts& f) {
  const std::string why = NotInHostPidNamespace(f.preflight.pid_ns);
  if (why.empty()) {
    return {"host-pid-namespace", CheckStatus::kOk, "in the host's PID namespace (kthreadd visible in /proc)", ""};
  }
  return {"host-pid-namespace", CheckStatus::kBlocked,
          why + ": /proc/<pid> of the sampled processes is out of reach, every stack stays unnamed",
          "run in the host's PID namespace: Kubernetes hostPID: true, docker/podman --pid=host"};
}

CheckResult CheckTracefs(const DoctorFacts& f) {
  if (f.tracefs_mounted) return {"tracefs", CheckStatus::kOk, "tracefs at " + f.tracefs_path, ""};
  if (f.uprobe_pmu) {
    return {"tracefs", CheckStatus::kOk,
            "not mounted; not needed (perf events and tp_btf need none; uprobes attach through the uprobe PMU)",
            ""};
  }
  return {"tracefs", CheckStatus::kWarn,
          "not mounted and no uprobe PMU (/sys/bus/event_source/devices/uprobe): uprobes (GPU time's launch "
          "probe, probe-stack) would attach through tracefs",
          "mount -t tracefs tracefs /sys/kernel/tracing (in a container: mount the host's /sys/kernel/tracing)"};
}

CheckResult CheckBpffs(const DoctorFacts& f) {
  if (f.bpffs_mounted) return {"bpffs", CheckStatus::kOk, "bpffs at " + f.bpffs_path + " (the agent pins nothing)", ""};
  return {"bpffs", CheckStatus::kOk,
          "not mounted; not needed (the agent pins nothing; bpftool would need mount -t bpf bpf /sys/fs/bpf)",
          ""};
}

CheckResult CheckParanoid(const DoctorFacts& f) {
  if (f.perf_event_paranoid == -100) {
    return {"perf_event_paranoid", CheckStatus::kSkip, "kernel.perf_event_paranoid unreadable", ""};
  }
  const std::string value = "kernel.perf_event_paranoid = " + std::to_string(f.perf_event_paranoid);
  const PreflightFacts& p = f.preflight;
  if (HasCap(p, kCapPerfmon) || HasCap(p, kCapSysAdmin)) {
    return {"perf_event_paranoid", CheckStatus::kOk,
            value + ": does not apply (it only limits processes without CAP_PERFMON or CAP_SYS_ADMIN)", ""};
  }
  if (f.perf_event_paranoid <= 0) {
    return {"perf_event_paranoid", CheckStatus::kOk, value + ": CPU-wide perf events allowed without CAP_PERFMON",
            ""};
  }
  return {"perf_event_paranoid", CheckStatus::kWarn,
          value + ": without CAP_PERFMON, CPU-wide perf events need 0 or less",
          "grant CAP_PERFMON (see capabilities) rather than lowering it for everyone"};
}

bool GpuPresent(const DoctorFacts& f) {
  return !f.driver_version.empty() || !f.device_nodes.empty() || (f.nvml_loaded && f.gpu_count > 0);
}
bool DriverPresent(const DoctorFacts& f) { return !f.driver_version.empty() || !f.device_nodes.empty(); }

CheckResult CheckDriver(const DoctorFacts& f) {
  if (!DriverPresent(f)) {
    return {"nvidia-driver", CheckStatus::kSkip,
            "no NVIDIA driver (no " + f.nvidia_proc_dir + "/version, no /dev/nvidia*): GPU checks skipped", ""};
  }
  std::string found = f.driver_version.empty() ? "no " + f.nvidia_proc_dir + "/version"
                                               : "kernel module " + f.driver_version;
  if (!f.device_nodes.empty()) {
    found += "; " + Join(f.device_nodes, ", ");
  } else {
    found += "; no /dev/nvidia* device nodes";
  }
  return {"nvidia-driver", CheckStatus::kOk, found, ""};
}

constexpr char kNvmlHow[] =
    "make libnvidia-ml.so.1 loadable: the NVIDIA container toolkit (runtimeClassName: nvidia, "
    "NVIDIA_DRIVER_CAPABILITIES=utility,compute, NVIDIA_VISIBLE_DEVICES=all), or mount the driver's libraries and "
    "pass --nvml-library PATH";

CheckResult CheckNvml(const DoctorFacts& f) {
  if (!f.nvml_checked) return {"nvml", CheckStatus::kSkip, "--no-gpu-metrics", ""};
  if (f.nvml_loaded) {
    std::string found = f.nvml_library + ": driver " +
                        (f.nvml_driver_version.empty() ? std::string("?") : f.nvml_driver_version) + ", CUDA " +
                        (f.cuda_driver_version > 0 ? CudaText(f.cuda_driver_version) : std::string("?")) + ", " +
                        std::to_string(f.gpu_count) + " GPU" + (f.gpu_count == 1 ? "" : "s");
    return {"nvml", CheckStatus::kOk, found, ""};
  }
  if (DriverPresent(f)) {
    return {"nvml", CheckStatus::kBlocked,
            f.nvml_error + "; the driver is present, so GPU metrics and GPU time would be off", kNvmlHow};
  }
  return {"nvml", CheckStatus::kSkip, f.nvml_error, ""};
}

CheckResult CheckCupti(const DoctorFacts& f) {
  if (!f.gpu_time_checked) return {"cupti", CheckStatus::kSkip, "--no-gpu-time", ""};
  if (!GpuPresent(f)) return {"cupti", CheckStatus::kSkip, "no GPU", ""};
  if (f.cupti_path.empty()) {
    const std::string found =
        !f.cupti_env.empty() ? f.cupti_error
                             : "no libcupti on this host's library path or in the CUDA toolkit's directories (tried " +
                                   Join(f.cupti_tried, ", ") + ")";
    return {"cupti", CheckStatus::kWarn, found,
            "GPU time needs CUPTI in each CUDA application: PyTorch's wheels bring theirs (nvidia-cuda-cupti, "
            "found beside libcudart); otherwise install the toolkit's CUPTI or set " +
                std::string(cuda::kCuptiPathEnv) + " in the applications' environment"};
  }
  const int cupti_cuda = CuptiCudaVersion(f.cupti_api_version);
  const std::string found = f.cupti_path + ": CUPTI API " + std::to_string(f.cupti_api_version) +
                            (cupti_cuda > 0 ? " (CUDA " + CudaText(cupti_cuda) + ")" : "");
  if (f.cuda_driver_version == 0) {
    return {"cupti", CheckStatus::kWarn, found + "; the driver's CUDA version is unknown (NVML not loaded)",
            "fix NVML (above) so that CUPTI can be compared with the driver"};
  }
  if (cupti_cuda == 0) {
    return {"cupti", CheckStatus::kWarn, found + ": a CUPTI version this agent does not know",
            "use the CUPTI of a CUDA toolkit no newer than the driver's CUDA " + CudaText(f.cuda_driver_version)};
  }
  if (cupti_cuda > f.cuda_driver_version) {
    return {"cupti", CheckStatus::kWarn,
            found + " is newer than the driver's CUDA " + CudaText(f.cuda_driver_version) +
                ": CUPTI fails to initialize and GPU time stays off",
            "upgrade the driver to one for CUDA " + CudaText(cupti_cuda) +
                " or newer, or use the CUPTI of the toolkit the driver supports"};
  }
  return {"cupti", CheckStatus::kOk, found + ", driver CUDA " + CudaText(f.cuda_driver_version), ""};
}

CheckResult CheckProfilingAccess(const DoctorFacts& f) {
  if (!GpuPresent(f)) return {"gpu-profiling-access", CheckStatus::kSkip, "no GPU", ""};
  if (f.profiling_admin_only < 0) {
    return {"gpu-profiling-access", CheckStatus::kSkip, "no RmProfilingAdminOnly in " + f.nvidia_proc_dir + "/params",
            ""};
  }
  if (f.profiling_admin_only == 0) {
    return {"gpu-profiling-access", CheckStatus::kOk, "RmProfilingAdminOnly: 0 (GPU performance counters for every user)",
            ""};
  }
  return {"gpu-profiling-access", CheckStatus::kOk,
          "RmProfilingAdminOnly: 1: GPU performance counters are for admins only; GPU time needs none (CUPTI's "
          "kernel activity tracing works for every user)",
          "nothing for warpscope; only counter-based tools (PC sampling, metrics) in non-root applications need "
          "the driver option NVreg_RestrictProfilingToAdminUsers=0"};
}

CheckResult CheckCudaSocket(const DoctorFacts& f) {
  if (!f.gpu_time_checked) return {"cuda-socket", CheckStatus::kSkip, "--no-gpu-time", ""};
  if (!GpuPresent(f)) return {"cuda-socket", CheckStatus::kSkip, "no GPU", ""};
  const std::string dir = ParentDirectory(f.cuda_socket);
  if (!f.socket_dir_problem.empty()) {
    return {"cuda-socket", CheckStatus::kWarn, f.cuda_socket + ": " + f.socket_dir_problem + "; GPU time would be off",
            "use a --cuda-socket directory owned by root that only root can write (default /run/warpscope; in "
            "Kubernetes a hostPath /run/warpscope mounted by the agent and the CUDA applications)"};
  }
  return {"cuda-socket", CheckStatus::kOk,
          f.socket_dir_exists ? f.cuda_socket + ": " + dir + " is root's and only root writes to it"
                              : f.cuda_socket + ": " + dir + " will be created (mode 0755)",
          ""};
}

CheckResult CheckStateDir(const DoctorFacts& f) {
  if (!f.state_dir_problem.empty()) {
    return {"state-dir", CheckStatus::kBlocked, f.state_dir_problem + ": `run` would exit 2",
            "mount a writable directory there that outlives the pod (Kubernetes: a hostPath), or pass --state-dir; "
            "the agent's id and the spool live in it"};
  }
  const std::string where = f.state_dir_exists ? f.state_dir + " is writable" : f.state_dir + " will be created";
  constexpr uint64_t kSpoolDefault = 256ull << 20;
  if (f.state_dir_free_bytes != UINT64_MAX && f.state_dir_free_bytes < kSpoolDefault) {
    return {"state-dir", CheckStatus::kWarn,
            where + ", but its file system has only " + std::to_string(f.state_dir_free_bytes >> 20) + " MiB free",
            "free space or lower --spool-max-bytes (default 256MiB): a full disk drops spooled batches"};
  }
  return {"state-dir", CheckStatus::kOk,
          where + (f.state_dir_free_bytes != UINT64_MAX
                       ? " (" + std::to_string(f.state_dir_free_bytes >> 20) + " MiB free)"
                       : std::string()),
          ""};
}

CheckResult CheckServer(const DoctorFacts& f) {
  if (f.server_url.empty()) return {"server", CheckStatus::kSkip, "no --server given", ""};
  if (f.healthz_status == 200) return {"server", CheckStatus::kOk, f.server_url + "/healthz: 200", ""};
  const std::string found = f.healthz_status == 0
                                ? f.server_url + " unreachable: " + f.healthz_error
                                : f.server_url + "/healthz: " + std::to_string(f.healthz_status) + " (not 200)";
  return {"server", CheckStatus::kWarn, found,
          "check the URL, DNS and network policies; meanwhile the agent profiles and spools its batches (up to "
          "--spool-max-bytes, oldest dropped first) and sends them when the server answers"};
}

// Processes of this node whose GPU time was paused for another CUPTI client.
CheckResult CheckPausedGpuTime(const DoctorFacts& f) {
  if (!f.gpu_time_checked) return {"gpu-time-paused", CheckStatus::kSkip, "--no-gpu-time", ""};
  if (!f.paused_checked) {
    return {"gpu-time-paused", CheckStatus::kSkip,
            f.server_url.empty() ? "no --server given" : "the server's metrics could not be read", ""};
  }
  if (f.paused.empty()) {
    return {"gpu-time-paused", CheckStatus::kOk,
            "no process on " + f.node_name + " had its GPU time paused for another CUPTI client in the last hour", ""};
  }
  std::string found = "GPU time paused in the last hour (another CUPTI client in the process had CUPTI):";
  for (const DoctorFacts::PausedProcess& p : f.paused) {
    char when[32] = "?";
    const time_t t = static_cast<time_t>(p.last_ms / 1000);
    tm utc{};
    if (p.last_ms > 0 && gmtime_r(&t, &utc) != nullptr) std::strftime(when, sizeof(when), "%H:%M:%S UTC", &utc);
    found += " " + p.comm + " (pid " + p.pid + ") until " + when + ";";
  }
  found.pop_back();
  return {"gpu-time-paused", CheckStatus::kWarn, found,
          "a profiler inside the process (torch.profiler, Nsight) needed CUPTI: warpscope stepped aside and records "
          "again when it is done. To keep warpscope out of such a process altogether, start it with "
          "WARPSCOPE_CUDA_DISABLE=1"};
}

CheckResult CheckToken(const DoctorFacts& f) {
  if (f.server_url.empty()) return {"server-token", CheckStatus::kSkip, "no --server given", ""};
  if (!f.token_problem.empty()) {
    return {"server-token", CheckStatus::kBlocked, f.token_problem,
            "`run` would exit 2: point --token-file at a readable file holding the token"};
  }
  if (f.api_status == 0) {
    return {"server-token", CheckStatus::kSkip,
            "server unreachable" + (f.api_error.empty() ? std::string() : ": " + f.api_error), ""};
  }
  if (f.api_status == 200) {
    return {"server-token", CheckStatus::kOk,
            f.token_given ? "GET /api/v1/status with the token: 200"
                          : "GET /api/v1/status without a token: 200 (the server needs none)",
            ""};
  }
  if (f.api_status == 401 || f.api_status == 403) {
    return {"server-token", CheckStatus::kBlocked,
            std::string(f.token_given ? "the server refuses the token" : "the server needs a token and none was given") +
                " (GET /api/v1/status: " + std::to_string(f.api_status) +
                "): every upload would be refused and wait in the spool",
            "pass the server's token with --token-file (the same file as the server's --token-file)"};
  }
  return {"server-token", CheckStatus::kWarn, "GET /api/v1/status: " + std::to_string(f.api_status),
          "check that --server is warpscope-server's base URL"};
}

const char* StatusWord(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk: return "ok";
    case CheckStatus::kWarn: return "warn";
    case CheckStatus::kBlocked: return "BLOCKED";
    case CheckStatus::kSkip: return "skip";
  }
  return "?";
}

const char* StatusColor(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk: return "\033[32m";
    case CheckStatus::kWarn: return "\033[33m";
    case CheckStatus::kBlocked: return "\033[1;31m";
    case CheckStatus::kSkip: return "\033[2m";
  }
  return "";
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

int CuptiCudaVersion(uint32_t v) {
  if (v >= 100000) return static_cast<int>(v / 10000) * 1000 + static_cast<int>(v / 100 % 100) * 10;
  // cupti_version.h's list (v25 was never released).
  switch (v) {
    case 13: return 11000;
    case 14: return 11010;
    case 15: return 11020;
    case 16: return 11050;
    case 17: return 11060;
    case 18: return 11080;
    case 19: return 12000;
    case 20: return 12020;
    case 21: return 12030;
    case 22: return 12040;
    case 23: return 12050;
    case 24: return 12060;
    case 26: return 12080;
    case 27:
    case 28: return 12090;
    default: return 0;
  }
}

DoctorFacts ReadDoctorFacts(const DoctorOptions& o) {
  DoctorFacts f;
  f.kernel_release = o.paths.kernel_release;
  if (f.kernel_release.empty()) {
    utsname u{};
    if (uname(&u) == 0) f.kernel_release = u.release;
  }
  PreflightPaths pre;
  pre.proc_root = o.paths.proc_root;
  pre.btf_path = o.paths.btf_path.empty() ? o.paths.sys_root + "/kernel/btf/vmlinux" : o.paths.btf_path;
  f.preflight = ReadPreflightFacts(pre);
  f.bpf_features = ProbeBpfFeatures();
  f.bpf_errno = ProbeBpf();
  f.perf_event_errno = ProbePerfEvent();
  ReadMounts(o.paths.proc_root, &f);
  f.uprobe_pmu = Exists(o.paths.sys_root + "/bus/event_source/devices/uprobe/type");
  if (auto paranoid = ReadFileToString(o.paths.proc_root + "/sys/kernel/perf_event_paranoid"); paranoid.ok()) {
    const std::string v = Trim(*paranoid);
    if (!v.empty()) f.perf_event_paranoid = std::atoi(v.c_str());
  }
  f.nvidia_proc_dir = o.paths.nvidia_proc_dir.empty() ? o.paths.proc_root + "/driver/nvidia" : o.paths.nvidia_proc_dir;
  ReadNvidiaDriver(o, &f);
  ReadNvml(o, &f);
  ReadCupti(o, &f);
  ReadCudaSocket(o, &f);
  ReadStateDir(o, &f);
  ReadServer(o, &f);
  return f;
}

std::vector<CheckResult> RunDoctorChecks(const DoctorFacts& f) {
  return {CheckKernel(f),  CheckBtf(f),   CheckCapabilities(f), CheckBpfSyscalls(f),     CheckPidNamespace(f),
          CheckTracefs(f), CheckBpffs(f), CheckParanoid(f),     CheckDriver(f),          CheckNvml(f),
          CheckCupti(f),   CheckProfilingAccess(f), CheckCudaSocket(f), CheckStateDir(f), CheckServer(f),
          CheckToken(f),   CheckPausedGpuTime(f)};
}

std::string FormatDoctorReport(const std::vector<CheckResult>& results, bool color) {
  constexpr size_t kMaxFoundWidth = 72;
  size_t name_width = 5, found_width = 5;
  for (const CheckResult& r : results) {
    name_width = std::max(name_width, r.name.size());
    if (r.found.size() <= kMaxFoundWidth) found_width = std::max(found_width, r.found.size());
  }
  constexpr size_t kStatusWidth = 7;  // "BLOCKED"
  std::string out = Pad("CHECK", name_width) + "  " + Pad("STATUS", kStatusWidth) + "  " + Pad("FOUND", found_width) +
                    "  TO DO\n";
  std::vector<std::string> blocked;
  int warnings = 0;
  for (const CheckResult& r : results) {
    const std::string word = StatusWord(r.status);
    std::string status = Pad(word, kStatusWidth);
    if (color) status = StatusColor(r.status) + word + "\033[0m" + std::string(kStatusWidth - word.size(), ' ');
    std::string line = Pad(r.name, name_width) + "  " + status + "  ";
    line += r.todo.empty() ? r.found : Pad(r.found, found_width) + "  " + r.todo;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r.status == CheckStatus::kBlocked) blocked.push_back(r.name);
    if (r.status == CheckStatus::kWarn) ++warnings;
  }
  const std::string warned = std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings");
  if (blocked.empty()) {
    out += "warpscope-agent doctor: nothing blocks profiling (" + warned + ")\n";
  } else {
    out += "warpscope-agent doctor: BLOCKED by " + Join(blocked, ", ") + " (" + warned + "; exit code " +
           std::to_string(DoctorExitCode(results)) + ")\n";
  }
  return out;
}

int DoctorExitCode(const std::vector<CheckResult>& results) {
  bool permission = false, unsupported = false, other = false;
  for (const CheckResult& r : results) {
    if (r.status != CheckStatus::kBlocked) continue;
    if (r.name == "capabilities" || r.name == "bpf-syscalls") {
      permission = true;
    } else if (r.name == "kernel" || r.name == "btf") {
      unsupported = true;
    } else {
      other = true;
    }
  }
  // As `run` would fail first: privileges, then the kernel.
  if (permission) return kExitPermission;
  if (unsupported) return kExitUnsupported;
  if (other) return kExitBlocked;
  return kExitOk;
}

StatusOr<DoctorOptions> ParseDoctorArgs(const std::vector<std::string>& args) {
  DoctorOptions o;
  FlagCursor c{args, 0, {}, {}, false};
  for (; c.i < args.size(); ++c.i) {
    c.Load();
    const std::string& flag = c.flag;
    auto take = [&](std::string* out) -> Status {
      ASSIGN_OR_RETURN(*out, c.TakeValue());
      if (out->empty()) return InvalidArgumentError(flag + " is empty");
      return Status::Ok();
    };
    if (flag == "--server") {
      std::string value;
      RETURN_IF_ERROR(take(&value));
      ASSIGN_OR_RETURN(o.server_url, ParseServerUrl(value));
    } else if (flag == "--token") {
      RETURN_IF_ERROR(take(&o.token));
    } else if (flag == "--token-file") {
      RETURN_IF_ERROR(take(&o.token_file));
    } else if (flag == "--nvml-library") {
      RETURN_IF_ERROR(take(&o.nvml_library));
    } else if (flag == "--no-gpu-metrics") {
      o.gpu_metrics = false;
    } else if (flag == "--no-gpu-time") {
      o.gpu_time = false;
    } else if (flag == "--cuda-socket") {
      RETURN_IF_ERROR(take(&o.cuda_socket));
    } else if (flag == "--cupti-library") {
      RETURN_IF_ERROR(take(&o.cupti_library));
    } else if (flag == "--state-dir") {
      RETURN_IF_ERROR(take(&o.state_dir));
      while (o.state_dir.size() > 1 && o.state_dir.back() == '/') o.state_dir.pop_back();
    } else if (flag == "--verbose" || flag == "-v") {
      o.verbose = true;
    } else if (flag == "--proc-root") {  // the hidden fixture flags (doctor.h)
      RETURN_IF_ERROR(take(&o.paths.proc_root));
    } else if (flag == "--sys-root") {
      RETURN_IF_ERROR(take(&o.paths.sys_root));
    } else if (flag == "--dev-root") {
      RETURN_IF_ERROR(take(&o.paths.dev_root));
    } else if (flag == "--btf-path") {
      RETURN_IF_ERROR(take(&o.paths.btf_path));
    } else if (flag == "--nvidia-proc-dir") {
      RETURN_IF_ERROR(take(&o.paths.nvidia_proc_dir));
    } else if (flag == "--kernel-release") {
      RETURN_IF_ERROR(take(&o.paths.kernel_release));
    } else {
      return InvalidArgumentError("unknown flag '" + args[c.i] + "' (see: warpscope-agent doctor --help)");
    }
  }
  if (!o.token.empty() && !o.token_file.empty()) {
    return InvalidArgumentError("choose either --token or --token-file, not both");
  }
  return o;
}

std::string DoctorUsage() {
  return R"(Usage: warpscope-agent doctor [--server URL [--token-file F]] [options]

Checks what profiling needs on this machine, as `run` would meet it, and
prints one line per check: its status (ok, warn, BLOCKED, skip), what was
found and what to do. Changes nothing. Run it where the agent runs (as a
Kubernetes init container: the same image, securityContext and mounts).

Checks: kernel (its BPF features, probed: the unwinder's driver), btf, capabilities, bpf-syscalls (bpf() and
perf_event_open tried once), host-pid-namespace, tracefs, bpffs,
perf_event_paranoid, nvidia-driver, nvml, cupti, gpu-profiling-access,
cuda-socket, state-dir, server (GET /healthz) and server-token
(GET /api/v1/status).

      --server URL          warpscope-server's base URL, e.g. http://127.0.0.1:7070
      --token T             bearer token (visible in `ps`: prefer --token-file)
      --token-file F        read the bearer token from F (whitespace trimmed)
      --nvml-library PATH   NVML to load (default libnvidia-ml.so.1)
      --no-gpu-metrics      do not check NVML
      --no-gpu-time         do not check CUPTI and the CUDA socket
      --cuda-socket PATH    the socket `run` would open (default /run/warpscope/cuda.sock)
      --state-dir DIR       `run`'s state directory (default /var/lib/warpscope-agent)
      --cupti-library PATH  the libcupti the CUDA applications use (default:
                            $WARPSCOPE_CUPTI_PATH, else the loader's path and
                            /usr/local/cuda)

Exit codes: 0 nothing blocks profiling (warnings may remain), 2 bad
arguments, 3 missing privileges (capabilities, bpf-syscalls), 4 unsupported
kernel (kernel, btf), 6 something else blocks (host-pid-namespace, nvml with a
driver present, state-dir, server-token). With several, the first of 3, 4, 6.
)";
}

int RunDoctor(const DoctorOptions& options) {
  const DoctorFacts facts = ReadDoctorFacts(options);
  const std::vector<CheckResult> results = RunDoctorChecks(facts);
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  const bool color = isatty(STDOUT_FILENO) == 1 && (no_color == nullptr || no_color[0] == '\0') &&
                     !(term != nullptr && std::strcmp(term, "dumb") == 0);
  std::cout << FormatDoctorReport(results, color) << std::flush;
  return DoctorExitCode(results);
}

}  // namespace warpscope
