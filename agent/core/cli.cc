#include "agent/core/cli.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "agent/unwind/bpf_features.h"
#include "base/duration.h"
#include "base/file_util.h"

namespace warpscope {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

StatusOr<uint64_t> ParseUnsigned(const std::string& flag, const std::string& text, uint64_t max) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v > max) {
    return InvalidArgumentError(flag + " expects a number up to " + std::to_string(max) + ", got '" + text + "'");
  }
  return v;
}

Status AddPids(const std::string& text, std::vector<uint32_t>* pids) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ASSIGN_OR_RETURN(uint64_t pid, ParseUnsigned("--pid", part, 0x3fffffff));
    if (pid == 0) return InvalidArgumentError("--pid 0 is the idle task; use --all for the whole machine");
    pids->push_back(static_cast<uint32_t>(pid));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

constexpr size_t kMaxAgentLabels = 16;

// --label KEY=VALUE: a label name as the selector syntax has it, not one the
// agent sets itself, and a value of at most 256 bytes.
StatusOr<std::pair<std::string, std::string>> ParseLabel(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string key = text.substr(0, eq);
  auto name_char = [](char c, bool first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
  };
  bool valid = eq != std::string::npos && !key.empty() && name_char(key[0], true);
  for (char c : key) valid = valid && name_char(c, false);
  if (!valid) return InvalidArgumentError("--label expects KEY=VALUE with KEY like region or team_1, got '" + text + "'");
  static const char* const kReserved[] = {"node", "pid", "comm", "thread", "tid", "exe", "gpu", "device", "stream"};
  for (const char* r : kReserved) {
    if (key == r) return InvalidArgumentError("--label " + key + ": the agent sets that label itself");
  }
  const std::string value = text.substr(eq + 1);
  if (value.empty() || value.size() > 256) {
    return InvalidArgumentError("--label " + key + ": the value must be 1 to 256 bytes");
  }
  return std::make_pair(key, value);
}

StatusOr<uint64_t> ParseByteSize(const std::string& flag, const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  uint64_t multiplier = 0;
  if (unit.empty() || unit == "b") multiplier = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") multiplier = 1ull << 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") multiplier = 1ull << 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") multiplier = 1ull << 30;
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (digits == 0 || multiplier == 0 || ec != std::errc() || ptr != text.data() + digits ||
      n > (UINT64_MAX >> 1) / multiplier) {
    return InvalidArgumentError(flag + " expects a size like 256MiB, 1G or 1048576, got '" + text + "'");
  }
  return n * multiplier;
}

StatusOr<std::string> TokenFromFileText(const std::string& text) {
  const size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return InvalidArgumentError("the token file is empty");
  const std::string token = text.substr(b, text.find_last_not_of(" \t\r\n") - b + 1);
  for (char c : token) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return InvalidArgumentError("the token file holds more than one word (whitespace inside the token)");
    }
  }
  return token;
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status().WithContext("--token-file");
  auto token = TokenFromFileText(*text);
  if (!token.ok()) return token.status().WithContext("--token-file " + path);
  return token;
}

Status ValidUnwinderDriver(const std::string& name) {
  if (IsUnwinderDriverName(name)) return Status::Ok();
  return InvalidArgumentError("--unwinder-driver expects auto, bpf_loop or tail_call, got '" + name + "'");
}

StatusOr<std::string> ParseServerUrl(const std::string& value) {
  if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
    return InvalidArgumentError("--server expects a URL like http://127.0.0.1:7070, got '" + value + "'");
  }
  std::string url = value;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args) {
  RunOptions o;
  bool spool_dir_given = false;
  FlagCursor c{args, 0, {}, {}, false};
  for (; c.i < args.size(); ++c.i) {
    c.Load();
    const std::string& flag = c.flag;
    if (flag == "--verbose" || flag == "-v") {
      o.verbose = true;
    } else if (flag == "--no-python") {
      o.python_frames = false;
    } else if (flag == "--unwinder-driver") {
      ASSIGN_OR_RETURN(o.unwinder_driver, c.TakeValue());
      RETURN_IF_ERROR(ValidUnwinderDriver(o.unwinder_driver));
    } else if (flag == "--off-cpu") {
      o.off_cpu = true;
    } else if (flag == "--off-cpu-min") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--off-cpu-min");
      if (d->count() < 0) return InvalidArgumentError("--off-cpu-min must not be negative");
      o.off_cpu_min_wait = *d;
    } else if (flag == "--server") {
      ASSIGN_OR_RETURN(std::string value, c.TakeValue());
      ASSIGN_OR_RETURN(o.server_url, ParseServerUrl(value));
      if (o.server_url.find('/', o.server_url.find("//") + 2) != std::string::npos) {
        return InvalidArgumentError("--server takes the server's base URL without a path (the agent adds "
                                    "/api/v1/ingest), got '" + o.server_url + "'");
      }
    } else if (flag == "--token") {
      ASSIGN_OR_RETURN(o.token, c.TakeValue());
      if (o.token.empty()) return InvalidArgumentError("--token is empty");
    } else if (flag == "--token-file") {
      ASSIGN_OR_RETURN(o.token_file, c.TakeValue());
      if (o.token_file.empty()) return InvalidArgumentError("--token-file needs a path");
    } else if (flag == "--frequency" || flag == "-F") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(uint64_t hz, ParseUnsigned("--frequency", v, 10000));
      if (hz == 0) return InvalidArgumentError("--frequency must be at least 1 Hz");
      o.frequency_hz = static_cast<uint32_t>(hz);
    } else if (flag == "--upload-interval") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--upload-interval");
      if (*d < std::chrono::seconds(1) || *d > std::chrono::minutes(10)) {
        return InvalidArgumentError("--upload-interval must be between 1s and 10m, got '" + v + "'");
      }
      o.upload_interval = *d;
    } else if (flag == "--spool-dir") {
      ASSIGN_OR_RETURN(o.spool_dir, c.TakeValue());
      if (o.spool_dir.empty()) return InvalidArgumentError("--spool-dir needs a path");
      spool_dir_given = true;
    } else if (flag == "--spool-max-bytes") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(o.spool_max_bytes, ParseByteSize("--spool-max-bytes", v));
      if (o.spool_max_bytes < (64u << 10)) return InvalidArgumentError("--spool-max-bytes must be at least 64KiB");
    } else if (flag == "--upload-max-batch-bytes") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(o.upload_max_batch_bytes, ParseByteSize("--upload-max-batch-bytes", v));
      if (o.upload_max_batch_bytes < (64u << 10) || o.upload_max_batch_bytes > (60u << 20)) {
        return InvalidArgumentError("--upload-max-batch-bytes must be between 64KiB and 60MiB, got '" + v + "'");
      }
    } else if (flag == "--symbol-cache-bytes") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(o.symbol_cache_bytes, ParseByteSize("--symbol-cache-bytes", v));
    } else if (flag == "--node-name") {
      ASSIGN_OR_RETURN(o.node_name, c.TakeValue());
      if (o.node_name.empty()) return InvalidArgumentError("--node-name is empty");
    } else if (flag == "--label") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(auto label, ParseLabel(v));
      for (const auto& [k, old] : o.labels) {
        if (k == label.first) return InvalidArgumentError("--label " + k + " given twice");
      }
      if (o.labels.size() >= kMaxAgentLabels) {
        return InvalidArgumentError("--label: at most " + std::to_string(kMaxAgentLabels) + " labels");
      }
      o.labels.push_back(std::move(label));
    } else if (flag == "--cpu-watts-per-core") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      char* end = nullptr;
      const double w = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !(w > 0) || w > 1000) {
        return InvalidArgumentError("--cpu-watts-per-core expects watts above 0 and up to 1000, got '" + v + "'");
      }
      o.cpu_watts_per_core = w;
    } else if (flag == "--state-dir") {
      ASSIGN_OR_RETURN(o.state_dir, c.TakeValue());
      if (o.state_dir.empty()) return InvalidArgumentError("--state-dir needs a path");
    } else if (flag == "--pid" || flag == "-p") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      RETURN_IF_ERROR(AddPids(v, &o.pids));
    } else if (flag == "--drain-interval") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--drain-interval");
      o.drain_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else if (flag == "--no-gpu-metrics") {
      o.gpu_metrics = false;
    } else if (flag == "--nvml-library") {
      ASSIGN_OR_RETURN(o.nvml_library, c.TakeValue());
      if (o.nvml_library.empty()) return InvalidArgumentError("--nvml-library needs a path");
    } else if (flag == "--gpu-metrics-interval") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--gpu-metrics-interval");
      if (*d < std::chrono::milliseconds(100) || *d > std::chrono::minutes(1)) {
        return InvalidArgumentError("--gpu-metrics-interval must be between 100ms and 1m, got '" + v + "'");
      }
      o.gpu_metrics_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else if (flag == "--powercap-root") {
      ASSIGN_OR_RETURN(o.powercap_root, c.TakeValue());
      if (o.powercap_root == "none") o.powercap_root.clear();
      while (o.powercap_root.size() > 1 && o.powercap_root.back() == '/') o.powercap_root.pop_back();
    } else if (flag == "--no-gpu-time") {
      o.gpu_time = false;
    } else if (flag == "--cuda-socket") {
      ASSIGN_OR_RETURN(o.cuda_socket, c.TakeValue());
      if (o.cuda_socket.empty() || o.cuda_socket.size() > 100) {
        return InvalidArgumentError("--cuda-socket needs a path of at most 100 characters");
      }
    } else if (flag == "--cuda-library") {
      ASSIGN_OR_RETURN(o.cuda_library, c.TakeValue());
      if (o.cuda_library.empty()) return InvalidArgumentError("--cuda-library needs a path");
    } else if (flag == "--cuda-library-dir") {
      ASSIGN_OR_RETURN(o.cuda_library_dir, c.TakeValue());
      if (o.cuda_library_dir.empty()) return InvalidArgumentError("--cuda-library-dir needs a directory");
    } else if (flag == "--gpu-time-mode") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      if (v == "adaptive") {
        o.gpu_time_mode = RunOptions::GpuTimeMode::kAdaptive;
      } else if (v == "exact") {
        o.gpu_time_mode = RunOptions::GpuTimeMode::kExact;
      } else if (v == "duty") {
        o.gpu_time_mode = RunOptions::GpuTimeMode::kDuty;
      } else {
        return InvalidArgumentError("--gpu-time-mode is adaptive, exact or duty, got '" + v + "'");
      }
    } else if (flag == "--gpu-pc-sampling") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      if (v != "on" && v != "off") return InvalidArgumentError("--gpu-pc-sampling is on or off, got '" + v + "'");
      o.gpu_pc_sampling = v == "on";
    } else if (flag == "--gpu-pc-period") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(uint64_t p, ParseUnsigned("--gpu-pc-period", v, 31));
      if (p < 5) return InvalidArgumentError("--gpu-pc-period is log2 of cycles, 5 to 31; got '" + v + "'");
      o.gpu_pc_period_log2 = static_cast<uint32_t>(p);
    } else if (flag == "--nvdisasm") {
      ASSIGN_OR_RETURN(o.nvdisasm, c.TakeValue());
      if (o.nvdisasm.empty()) return InvalidArgumentError("--nvdisasm needs a path");
    } else if (flag == "--gpu-overhead-budget") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      char* end = nullptr;
      const double pct = std::strtod(v.c_str(), &end);
      if (v.empty() || end == nullptr || (*end != '\0' && std::string(end) != "%") || !(pct >= 0.01) || pct > 50) {
        return InvalidArgumentError("--gpu-overhead-budget expects a percentage from 0.01 to 50, e.g. 1%; got '" + v +
                                    "'");
      }
      o.gpu_overhead_budget_ppm = static_cast<uint32_t>(pct * 10000 + 0.5);
    } else if (flag == "--gpu-duty") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      const size_t slash = v.find('/');
      auto on = ParseDuration(v.substr(0, slash));
      auto period = slash == std::string::npos ? StatusOr<std::chrono::nanoseconds>(InvalidArgumentError("no period"))
                                               : ParseDuration(v.substr(slash + 1));
      if (!on.ok() || !period.ok() || *on < std::chrono::milliseconds(10) || *period > std::chrono::minutes(1) ||
          *on >= *period) {
        return InvalidArgumentError("--gpu-duty expects ON/PERIOD with 10ms <= ON < PERIOD <= 1m, e.g. 100ms/1s; got '" +
                                    v + "'");
      }
      o.gpu_duty_on_ms = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(*on).count());
      o.gpu_duty_period_ms =
          static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(*period).count());
    } else if (flag == "--gpu-launch-samples") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("--gpu-launch-samples", v, 100000));
      if (n == 0) return InvalidArgumentError("--gpu-launch-samples must be at least 1");
      o.gpu_launch_samples = static_cast<uint32_t>(n);
    } else if (flag == "--gpu-trace-per-sec") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("--gpu-trace-per-sec", v, 1000000));
      o.gpu_trace_per_sec = static_cast<uint32_t>(n);
    } else if (flag == "--gpu-connections-per-uid") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("--gpu-connections-per-uid", v, 1024));
      if (n == 0) return InvalidArgumentError("--gpu-connections-per-uid must be at least 1");
      o.gpu_connections_per_uid = static_cast<uint32_t>(n);
    } else if (flag == "--gpu-kernel-name-bytes") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(o.gpu_kernel_name_bytes, ParseByteSize("--gpu-kernel-name-bytes", v));
      if (o.gpu_kernel_name_bytes < (1u << 20) || o.gpu_kernel_name_bytes > (16ull << 30)) {
        return InvalidArgumentError("--gpu-kernel-name-bytes must be between 1MiB and 16GiB, got '" + v + "'");
      }
    } else if (flag == "--gpu-probe-files") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("--gpu-probe-files", v, 1024));
      if (n == 0) return InvalidArgumentError("--gpu-probe-files must be at least 1");
      o.gpu_probe_files = static_cast<uint32_t>(n);
    } else if (flag == "--metrics-listen") {
      ASSIGN_OR_RETURN(o.metrics_listen, c.TakeValue());
      if (o.metrics_listen.empty()) return InvalidArgumentError("--metrics-listen needs HOST:PORT, e.g. 127.0.0.1:9400");
    } else if (flag == "--kubernetes") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      if (v == "auto") {
        o.kubernetes = RunOptions::KubernetesMode::kAuto;
      } else if (v == "off") {
        o.kubernetes = RunOptions::KubernetesMode::kOff;
      } else if (v == "kubelet") {
        o.kubernetes = RunOptions::KubernetesMode::kKubelet;
      } else if (v == "apiserver") {
        o.kubernetes = RunOptions::KubernetesMode::kApiServer;
      } else {
        return InvalidArgumentError("--kubernetes is auto, off, kubelet or apiserver, got '" + v + "'");
      }
    } else if (flag == "--kubernetes-pods-url") {
      ASSIGN_OR_RETURN(o.kubernetes_pods_url, c.TakeValue());
      if (o.kubernetes_pods_url.rfind("http://", 0) != 0 && o.kubernetes_pods_url.rfind("https://", 0) != 0) {
        return InvalidArgumentError("--kubernetes-pods-url expects a URL like https://10.0.0.5:10250/pods, got '" +
                                    o.kubernetes_pods_url + "'");
      }
    } else if (flag == "--kubernetes-token-file") {
      ASSIGN_OR_RETURN(o.kubernetes_token_file, c.TakeValue());
      if (o.kubernetes_token_file.empty()) return InvalidArgumentError("--kubernetes-token-file needs a path");
    } else if (flag == "--kubernetes-ca-file") {
      ASSIGN_OR_RETURN(o.kubernetes_ca_file, c.TakeValue());
      if (o.kubernetes_ca_file.empty()) return InvalidArgumentError("--kubernetes-ca-file needs a path");
    } else if (flag == "--kubernetes-insecure-tls") {
      o.kubernetes_insecure_tls = true;
    } else if (flag == "--kubernetes-refresh" || flag == "--kubernetes-pod-grace") {
      ASSIGN_OR_RETURN(std::string v, c.TakeValue());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext(flag);
      const bool refresh = flag == "--kubernetes-refresh";
      const auto low = refresh ? std::chrono::nanoseconds(std::chrono::seconds(1)) : std::chrono::nanoseconds(0);
      if (*d < low || *d > std::chrono::hours(1)) {
        return InvalidArgumentError(flag + " must be between " + (refresh ? "1s" : "0s") + " and 1h, got '" + v + "'");
      }
      (refresh ? o.kubernetes_refresh : o.kubernetes_pod_grace) =
          std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else {
      return InvalidArgumentError("unknown flag '" + args[c.i] + "' (see: warpscope-agent run --help)");
    }
  }
  if (o.server_url.empty()) return InvalidArgumentError("--server is required, e.g. --server http://127.0.0.1:7070");
  if (!o.token.empty() && !o.token_file.empty()) {
    return InvalidArgumentError("choose either --token or --token-file, not both");
  }
  while (o.state_dir.size() > 1 && o.state_dir.back() == '/') o.state_dir.pop_back();
  if (!spool_dir_given) o.spool_dir = o.state_dir + "/spool";
  if (o.drain_interval > o.upload_interval) {
    return InvalidArgumentError("--drain-interval must not be longer than --upload-interval");
  }
  return o;
}

Status ParseProfileTypes(const std::string& value, bool* cpu, bool* off_cpu) {
  *cpu = *off_cpu = false;
  size_t begin = 0;
  while (begin <= value.size()) {
    const size_t comma = std::min(value.find(',', begin), value.size());
    const std::string type = value.substr(begin, comma - begin);
    if (type == "cpu") {
      *cpu = true;
    } else if (type == "off_cpu") {
      *off_cpu = true;
    } else {
      return InvalidArgumentError("--type takes cpu, off_cpu or cpu,off_cpu, got '" + value + "'");
    }
    begin = comma + 1;
  }
  return Status::Ok();
}

StatusOr<RecordOptions> ParseRecordArgs(const std::vector<std::string>& args) {
  RecordOptions o;
  bool format_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_inline_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline_value = true;
    }
    auto take_value = [&]() -> StatusOr<std::string> {
      if (has_inline_value) return value;
      if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value");
      return args[++i];
    };
    if (flag == "--all" || flag == "-a") {
      o.all = true;
    } else if (flag == "--verbose" || flag == "-v") {
      o.verbose = true;
    } else if (flag == "--frame-pointers") {
      o.frame_pointers_only = true;
    } else if (flag == "--no-python") {
      o.python_frames = false;
    } else if (flag == "--unwinder-driver") {
      ASSIGN_OR_RETURN(o.unwinder_driver, take_value());
      RETURN_IF_ERROR(ValidUnwinderDriver(o.unwinder_driver));
    } else if (flag == "--pid" || flag == "-p") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      RETURN_IF_ERROR(AddPids(v, &o.pids));
    } else if (flag == "--duration" || flag == "-d") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--duration");
      if (d->count() <= 0) return InvalidArgumentError("--duration must be positive");
      o.duration = *d;
    } else if (flag == "--frequency" || flag == "-F") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      ASSIGN_OR_RETURN(uint64_t hz, ParseUnsigned("--frequency", v, 10000));
      if (hz == 0) return InvalidArgumentError("--frequency must be at least 1 Hz");
      o.frequency_hz = static_cast<uint32_t>(hz);
    } else if (flag == "--output" || flag == "-o") {
      ASSIGN_OR_RETURN(o.output, take_value());
      if (o.output.empty()) return InvalidArgumentError("--output needs a path");
    } else if (flag == "--format" || flag == "-f") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      if (v == "pprof") o.format = OutputFormat::kPprof;
      else if (v == "collapsed" || v == "folded") o.format = OutputFormat::kCollapsed;
      else return InvalidArgumentError("--format must be pprof or collapsed, got '" + v + "'");
      format_given = true;
    } else if (flag == "--top") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned("--top", v, 100000));
      o.top = n;
    } else if (flag == "--drain-interval") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--drain-interval");
      o.drain_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else if (flag == "--type" || flag == "-t") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      RETURN_IF_ERROR(ParseProfileTypes(v, &o.cpu, &o.off_cpu));
    } else if (flag == "--off-cpu-min") {
      ASSIGN_OR_RETURN(std::string v, take_value());
      auto d = ParseDuration(v);
      if (!d.ok()) return d.status().WithContext("--off-cpu-min");
      if (d->count() < 0) return InvalidArgumentError("--off-cpu-min must not be negative");
      o.off_cpu_min_wait = *d;
    } else {
      return InvalidArgumentError("unknown flag '" + args[i] + "' (see: warpscope-agent record --help)");
    }
  }
  if (o.off_cpu && o.frame_pointers_only) {
    return InvalidArgumentError("--type off_cpu needs the .eh_frame unwinder: leave out --frame-pointers");
  }
  if (o.cpu && o.off_cpu && o.format == OutputFormat::kCollapsed) {
    return InvalidArgumentError("collapsed stacks hold one value per stack: choose one --type, or --format pprof");
  }
  if (o.all && !o.pids.empty()) return InvalidArgumentError("choose either --pid or --all, not both");
  if (!o.all && o.pids.empty()) return InvalidArgumentError("choose what to record: --pid PID or --all");
  if (!format_given && (EndsWith(o.output, ".folded") || EndsWith(o.output, ".collapsed"))) {
    o.format = OutputFormat::kCollapsed;
  }
  if (o.output.empty()) {
    o.output = std::string(o.cpu ? "cpu" : "off_cpu") + (o.format == OutputFormat::kPprof ? ".pb.gz" : ".folded");
  }
  return o;
}

std::string RecordUsage() {
  return R"(Usage: warpscope-agent record (--pid PID[,PID...] | --all) [options]

Samples CPU stacks (user and kernel) with eBPF and writes a profile.

  -p, --pid PID[,PID...]   record these processes (repeatable)
  -a, --all                record every process on the machine
  -d, --duration D         how long to record: 10, 10s, 500ms, 2m (default 10s)
  -F, --frequency HZ       samples per second per CPU (default 99)
  -o, --output PATH        output file (default cpu.pb.gz, or cpu.folded for collapsed;
                           off_cpu.* for --type off_cpu)
  -f, --format FMT         pprof (gzipped protobuf) or collapsed (folded stacks);
                           default: from the output name (.folded/.collapsed), else pprof
      --top N              print the N hottest functions when done (default 10, 0 = none;
                           --type cpu only)
      --drain-interval D   how often samples are read from the kernel (default 1s)
  -t, --type TYPES         cpu (default), off_cpu, or cpu,off_cpu: off_cpu is the
                           time threads spend blocked (sleep, locks, I/O, poll), in
                           nanoseconds, under the stacks they blocked in; both
                           types go in one pprof (sample types off_cpu and cpu)
      --off-cpu-min D      off_cpu: leave out waits shorter than D (default 0)
      --frame-pointers     walk user stacks with frame pointers only, not .eh_frame
                           (no Python frames either)
      --no-python          no CPython frames: show the interpreter's native frames
      --unwinder-driver D  auto (default: bpf_loop where the kernel has it, else
                           tail_call), bpf_loop or tail_call (for tests)
  -v, --verbose            debug logging

Recording stops early when every --pid has exited, or on Ctrl-C; what was
recorded is written either way.

Exit codes: 0 ok, 1 runtime error, 2 bad arguments or output path,
3 missing privileges (CAP_BPF, CAP_PERFMON), 4 unsupported kernel (no BTF),
5 no such process.
)";
}

std::string RunUsage() {
  return R"(Usage: warpscope-agent run --server URL [options]

Profiles continuously (CPU stacks, user and kernel, with eBPF) and uploads one
batch per interval to warpscope-server (POST URL/api/v1/ingest). Runs until
SIGINT or SIGTERM (then the last partial interval is uploaded or spooled), or
until every --pid has exited.

      --server URL          warpscope-server's base URL, e.g. http://127.0.0.1:7070
      --token T             bearer token (visible in `ps`: prefer --token-file)
      --token-file F        read the bearer token from F (whitespace trimmed)
  -F, --frequency HZ        samples per second per CPU (default 19)
      --upload-interval D   one batch per D: 10s, 1m (default 10s, 1s..10m)
      --state-dir DIR       agent id, last sequence, spool (default /var/lib/warpscope-agent)
      --spool-dir DIR       where batches wait while the server is unreachable
                            (default STATE_DIR/spool)
      --spool-max-bytes N   spool bound; the oldest batches are dropped first
                            (default 256MiB; K/M/G suffixes)
      --upload-max-batch-bytes N
                            largest upload: each interval's CPU profile, GPU-time
                            profile, GPU trace and GPU metrics go in batches of
                            their own, split below N (default 12MiB; keep it
                            below the server's --max-request-bytes)
      --symbol-cache-bytes N
                            symbol tables of binaries no running process maps
                            are dropped, least recently used first, while all
                            tables exceed N (default 256MiB; tables in use are
                            always kept)
      --node-name N         the "node" label (default $WARPSCOPE_NODE_NAME, else the host name)
      --label KEY=VALUE     a label on everything this agent sends (repeatable, at most 16);
                            region=NAME (us-east-1, europe-west4, westeurope, or one the
                            server was given) sets the node's carbon intensity and PUE
                            in energy answers
      --cpu-watts-per-core W
                            watts of one busy CPU thread of this node, for energy
                            answers where RAPL is missing (default: the server's figure
                            for the CPU's family)
  -p, --pid PID[,PID...]    only these processes (default: every process)
      --no-python           no CPython frames: show the interpreter's native frames
      --unwinder-driver D   auto (default: bpf_loop where the kernel has it, else
                            tail_call), bpf_loop or tail_call (for tests)
      --off-cpu             upload off-CPU time too (profile type off_cpu: how long
                            threads stay blocked, under the stacks they block in);
                            off by default: it costs about 1% of each CPU in BPF
                            on a busy node (docs/benchmarks.md)
      --off-cpu-min D       leave out waits shorter than D (default 0)
      --drain-interval D    how often samples are read from the kernel (default 1s)
      --gpu-metrics-interval D
                            how often NVIDIA GPU metrics are read through NVML
                            (default 1s, 100ms..1m)
      --nvml-library PATH   NVML to load (default libnvidia-ml.so.1 from the
                            driver); without a driver GPU metrics are off
      --no-gpu-metrics      do not collect GPU metrics
      --powercap-root DIR   where CPU package and DRAM energy (RAPL) is read
                            (default /sys/class/powercap; '' or none: off);
                            without it CPU energy is estimated by the server
      --no-gpu-time         no GPU-time and GPU-wait profiles: do not open the
                            CUDA socket
      --cuda-socket PATH    where libwarpscope_cuda.so (CUDA_INJECTION64_PATH)
                            finds the agent (default /run/warpscope/cuda.sock);
                            its directory, and those above it, must belong to
                            root and be writable by no one else (sticky ones
                            like /tmp excepted above it)
      --cuda-library-dir DIR
                            copy libwarpscope_cuda.so into DIR at start
                            (unless the same file is there), for containers
                            that mount DIR from the host: with DIR the CUDA
                            socket's directory, one mount gives a pod both
      --cuda-library PATH   the library to copy (default: the one shipped
                            beside this executable, ../lib/warpscope/)
      --gpu-time-mode M     adaptive (default): a process that launches many
                            kernels is recorded in windows (CUPTI detached in
                            between) spaced to keep the cost within
                            --gpu-overhead-budget, its totals scaled and
                            labelled estimate=scaled; one that launches few is
                            recorded all the time. exact: every kernel
                            recorded (costs launch-heavy code ~20%). duty:
                            fixed windows (--gpu-duty)
      --gpu-duty ON/PERIOD  recording window and period (adaptive: the
                            longest period; default 200ms/10s; duty: 100ms/1s)
      --gpu-overhead-budget PCT
                            adaptive mode's estimated cost bound (default 1%)
      --gpu-pc-sampling on|off
                            CUPTI PC sampling inside kernels while kernels
                            are recorded: the gpu_pc profile, down to source
                            lines, SASS instructions and stall reasons
                            (default off)
      --gpu-pc-period N     one PC sample per SM every 2^N cycles (default 20)
      --nvdisasm PATH       NVIDIA's disassembler for SASS text (default:
                            nvdisasm in $PATH or /usr/local/cuda/bin; without
                            it instructions show as offsets)
      --gpu-launch-samples N
                            launch stacks per second per application thread
                            (default 200; other launches share their time)
      --gpu-trace-per-sec N kernels per process and second kept for the kernel
                            table and timeline (default 20000; 0: none)
      --gpu-kernel-name-bytes N
                            CUDA kernel names kept, every process together;
                            names of exited processes are dropped first, and
                            names past it are shown as "[kernel name over the
                            agent's budget]" (default 64MiB)
      --gpu-probe-files N   distinct libwarpscope_cuda.so files whose launch probe
                            is attached at once; a file no connected process
                            maps is detached; past N, launch stacks of
                            processes using another file are missing
                            (default 16)
      --gpu-connections-per-uid N
                            CUDA socket connections one user may hold; more
                            are refused and counted (default 64; root and the
                            agent's user are not limited, 1024 in all)
      --metrics-listen H:P  serve Prometheus metrics at http://H:P/metrics:
                            GPU metrics under dcgm-exporter's names, per-process
                            GPU use and the agent's health (default: off;
                            dcgm-exporter's port is 9400)
      --kubernetes MODE     pod, namespace, container, workload and
                            workload_kind labels for processes in pods, from
                            this node's pod list: auto (default: apiserver
                            when $KUBERNETES_SERVICE_HOST is set and the token
                            file exists, else off), off, apiserver (GET
                            /api/v1/pods of this node; RBAC: pods list), or
                            kubelet (GET https://$NODE_IP:10250/pods; RBAC:
                            nodes/proxy get)
      --kubernetes-pods-url URL
                            fetch the pod list from URL instead (turns auto on)
      --kubernetes-token-file F
                            bearer token, read for every request (default
                            /var/run/secrets/kubernetes.io/serviceaccount/token;
                            a missing file sends none)
      --kubernetes-ca-file F
                            CA of the API server or kubelet certificate
                            (default .../serviceaccount/ca.crt; missing: the
                            system's CAs)
      --kubernetes-insecure-tls
                            no certificate check (kubelets whose serving
                            certificate is self-signed)
      --kubernetes-refresh D
                            pod list refresh (default 15s, 1s..1h; sooner, at
                            most every 2s, for a pod not known yet)
      --kubernetes-pod-grace D
                            how long a pod gone from the list keeps its names
                            (default 2m, 0s..1h)
  -v, --verbose             debug logging

Exit codes: 0 stopped by a signal or the --pid targets exited, 1 runtime error
(BPF, spool locked by another agent), 2 bad arguments, token file or state
directory, 3 missing privileges, 4 unsupported kernel, 5 no such process.
)";
}

std::string MainUsage() {
  return R"(Usage: warpscope-agent <command> [options]

Commands:
  record        record CPU profiles of processes or the whole machine (see: record --help)
  run           profile continuously and upload to warpscope-server (see: run --help)
  doctor        check this machine and deployment for profiling: one line per check, what to do (see: doctor --help)
  probe-stack   whole user stacks at the entry of a function (a uprobe), e.g. cuLaunchKernel
  unwind-table  build the .eh_frame unwind table of binaries and print its size and build time
  version       print the version
  help          print this help
)";
}

}  // namespace warpscope
