// nvml_collect_bench: CPU cost of one NvmlReader::CollectInto(),
// reported as the share of one core it takes at a 1 s collection interval
// (the goal: at most 0.2% per GPU).
//
//   nvml_collect_bench                       the fake NVML, 1 and 8 GPUs
//   nvml_collect_bench --library /usr/lib/libnvidia-ml.so.1 --interval-ms 200 --print-readings --per-call
//                                            the real driver (the H200 machine)
//
// Output: one line per configuration, "key=value" words, starting with
// "nvml_collect_bench"; with --per-call, "nvml_call" lines (the cost of each
// NVML query alone on GPU 0); with --print-readings, "reading" lines (the last
// interval) and "disabled" lines. CPU time is the calling thread's
// (CLOCK_THREAD_CPUTIME_ID): what the agent's GPU metrics thread would spend.
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_library.h"
#include "base/logging.h"

namespace warpscope {
namespace {

using namespace nvml;  // NOLINT

struct Flags {
  std::string library;  // empty: the fake
  std::vector<int> fake_gpus = {1, 8};
  int processes_per_gpu = 4;
  int collects = 0;  // 0: 2000 on the fake, 30 on a real driver
  int interval_ms = 0;
  bool print_readings = false;
  bool per_call = false;
  int per_call_repeats = 20;
  int per_call_spacing_ms = 0;  // between repeats: a driver may cache between reads
  int slow_every = -1;          // -1: the collector's defaults
  int gpm_every = -1;
};

int64_t Nanos(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string Quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

// A script like a busy H200 node: GPM on, a few processes per GPU.
std::string FakeScriptText(int gpus, int processes) {
  std::string s = "devices " + std::to_string(gpus) + "\n";
  for (int g = 0; g < gpus; ++g) {
    const std::string i = std::to_string(g);
    s += "device " + i + " name \"NVIDIA H200\" gpm 1\n";
    s += "set " + i + " utilization_gpu 87\nset " + i + " memory_used 60000000000\nset " + i + " power_mw 512345\n";
    s += "set " + i + " gpm_sm_util 70\nset " + i + " gpm_any_tensor_util 40\n";
    for (int p = 0; p < processes; ++p) {
      s += "process " + i + " " + std::to_string(10000 + g * 100 + p) + " sm 20 mem 5 used 1073741824\n";
    }
  }
  return s;
}

int Run(const Flags& flags, const std::string& library, int fake_gpus) {
  GpuMetricsOptions options;
  options.library_path = library;
  if (flags.slow_every > 0) options.slow_metrics_every = flags.slow_every;
  if (flags.gpm_every > 0) options.gpm_every = flags.gpm_every;
  auto opened = NvmlReader::Open(options);
  if (!opened.ok()) {
    std::printf("nvml_collect_bench library=%s error=%s\n", library.c_str(), Quote(opened.status().message()).c_str());
    return 1;
  }
  NvmlReader& collector = **opened;
  const bool fake = flags.library.empty();
  const int collects = flags.collects > 0 ? flags.collects : (fake ? 2000 : 30);
  std::vector<GpuReading> readings;

  auto wall_now = [] { return Nanos(CLOCK_REALTIME); };
  // The first interval also sizes every buffer; measured on its own.
  int64_t cpu0 = Nanos(CLOCK_THREAD_CPUTIME_ID);
  collector.CollectInto(wall_now(), &readings);
  const int64_t first_cpu = Nanos(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  for (int i = 0; i < 2; ++i) collector.CollectInto(wall_now(), &readings);  // GPM pairs, steady buffers

  int64_t cpu_total = 0;
  int64_t wall_total = 0;
  int64_t cpu_max = 0;
  size_t reading_count = 0;
  for (int i = 0; i < collects; ++i) {
    if (flags.interval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.interval_ms));
    const int64_t w = Nanos(CLOCK_MONOTONIC);
    const int64_t c = Nanos(CLOCK_THREAD_CPUTIME_ID);
    collector.CollectInto(wall_now(), &readings);
    const int64_t cpu = Nanos(CLOCK_THREAD_CPUTIME_ID) - c;
    wall_total += Nanos(CLOCK_MONOTONIC) - w;
    cpu_total += cpu;
    cpu_max = std::max(cpu_max, cpu);
    reading_count += readings.size();
  }
  const double cpu_us = cpu_total / 1e3 / collects;
  const double core_percent = cpu_total / 1e9 / collects * 100;  // one Collect per second
  const int gpus = collector.DeviceCount();
  std::printf(
      "nvml_collect_bench library=%s fake=%d gpus=%d collects=%d interval_ms=%d readings_per_collect=%.1f "
      "first_collect_cpu_us=%.1f cpu_us_per_collect=%.2f max_cpu_us=%.1f wall_us_per_collect=%.1f "
      "core_percent_at_1s=%.5f core_percent_per_gpu_at_1s=%.5f errors=%llu disabled=%zu slow_every=%d gpm_every=%d\n",
      library.c_str(), fake ? 1 : 0, gpus, collects, flags.interval_ms, static_cast<double>(reading_count) / collects,
      first_cpu / 1e3, cpu_us, cpu_max / 1e3, wall_total / 1e3 / collects, core_percent, core_percent / gpus,
      static_cast<unsigned long long>(collector.ErrorCount()), collector.DisabledMetrics().size(),
      flags.slow_every, flags.gpm_every);
  (void)fake_gpus;
  if (flags.print_readings) {
    for (const GpuReading& r : readings) {
      std::string labels;
      for (const auto& [k, v] : r.labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
      std::printf("reading metric=%s unit=%s value=%.6g labels=%s\n", r.metric.c_str(), r.unit.c_str(), r.value,
                  Quote(labels).c_str());
    }
    for (const DisabledGpuMetric& d : collector.DisabledMetrics()) {
      std::printf("disabled gpu=%d metric=%s reason=%s\n", d.gpu, d.metric.c_str(), Quote(d.reason).c_str());
    }
  }
  return 0;
}

// The cost of each NVML query alone, on GPU 0: where a Collect's time goes.
void PerCall(const Flags& flags, const std::string& library_path) {
  auto library = NvmlLibrary::Open(library_path);
  if (!library.ok()) return;
  const NvmlFunctions& fn = (*library)->fn();
  nvmlDevice_t h = nullptr;
  if (fn.nvmlDeviceGetHandleByIndex_v2(0, &h) != NVML_SUCCESS) return;
  unsigned int u = 0;
  unsigned long long ull = 0;
  nvmlUtilization_t util = {};
  nvmlMemory_t memory = {};
  std::vector<nvmlProcessUtilizationSample_t> samples(64);
  std::vector<nvmlProcessInfo_t> infos(64);
  nvmlEventSet_t set = nullptr;
  if (fn.nvmlEventSetCreate != nullptr) fn.nvmlEventSetCreate(&set);
  if (set != nullptr) fn.nvmlDeviceRegisterEvents(h, nvmlEventTypeXidCriticalError, set);
  nvmlGpmSample_t s1 = nullptr;
  nvmlGpmSample_t s2 = nullptr;
  if (fn.nvmlGpmSampleAlloc != nullptr) {
    fn.nvmlGpmSampleAlloc(&s1);
    fn.nvmlGpmSampleAlloc(&s2);
  }
  struct Call {
    const char* name;
    std::function<nvmlReturn_t()> run;
  };
  const std::vector<Call> calls = {
      {"nvmlDeviceGetUtilizationRates", [&] { return fn.nvmlDeviceGetUtilizationRates(h, &util); }},
      {"nvmlDeviceGetMemoryInfo", [&] { return fn.nvmlDeviceGetMemoryInfo(h, &memory); }},
      {"nvmlDeviceGetClockInfo(SM)", [&] { return fn.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &u); }},
      {"nvmlDeviceGetPowerUsage", [&] { return fn.nvmlDeviceGetPowerUsage(h, &u); }},
      {"nvmlDeviceGetEnforcedPowerLimit", [&] { return fn.nvmlDeviceGetEnforcedPowerLimit(h, &u); }},
      {"nvmlDeviceGetTotalEnergyConsumption", [&] { return fn.nvmlDeviceGetTotalEnergyConsumption(h, &ull); }},
      {"nvmlDeviceGetTemperatureV",
       [&] {
         nvmlTemperature_v1_t t = {};
         t.version = nvmlTemperature_v1;
         t.sensorType = NVML_TEMPERATURE_GPU;
         return fn.nvmlDeviceGetTemperatureV != nullptr ? fn.nvmlDeviceGetTemperatureV(h, &t)
                                                        : NVML_ERROR_FUNCTION_NOT_FOUND;
       }},
      {"nvmlDeviceGetPcieThroughput(TX)", [&] { return fn.nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_TX_BYTES, &u); }},
      {"nvmlDeviceGetCurrentClocksEventReasons", [&] { return fn.nvmlDeviceGetCurrentClocksEventReasons(h, &ull); }},
      {"nvmlDeviceGetTotalEccErrors",
       [&] {
         return fn.nvmlDeviceGetTotalEccErrors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull);
       }},
      {"nvmlEventSetWait_v2(0)",
       [&] {
         nvmlEventData_t e = {};
         return set != nullptr ? fn.nvmlEventSetWait_v2(set, &e, 0) : NVML_ERROR_FUNCTION_NOT_FOUND;
       }},
      {"nvmlGpmSampleGet", [&] { return s1 != nullptr ? fn.nvmlGpmSampleGet(h, s1) : NVML_ERROR_FUNCTION_NOT_FOUND; }},
      {"nvmlGpmMetricsGet(4)",
       [&] {
         if (s1 == nullptr || fn.nvmlGpmSampleGet(h, s2) != NVML_SUCCESS) return NVML_ERROR_FUNCTION_NOT_FOUND;
         static nvmlGpmMetricsGet_t request;
         request.version = NVML_GPM_METRICS_GET_VERSION;
         request.numMetrics = 4;
         request.sample1 = s1;
         request.sample2 = s2;
         const unsigned int ids[] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                                     NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL};
         for (int i = 0; i < 4; ++i) request.metrics[i].metricId = ids[i];
         const nvmlReturn_t r = fn.nvmlGpmMetricsGet(&request);
         std::swap(s1, s2);
         return r;
       }},
      {"nvmlDeviceGetProcessUtilization",
       [&] {
         unsigned int n = static_cast<unsigned int>(samples.size());
         return fn.nvmlDeviceGetProcessUtilization(h, samples.data(), &n, 0);
       }},
      {"nvmlDeviceGetComputeRunningProcesses_v3",
       [&] {
         unsigned int n = static_cast<unsigned int>(infos.size());
         return fn.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, infos.data());
       }},
  };
  const int repeats = std::max(1, flags.per_call_repeats);
  for (const Call& call : calls) {
    nvmlReturn_t last = NVML_SUCCESS;
    int64_t cpu = 0;
    int64_t wall = 0;
    for (int i = 0; i < repeats; ++i) {
      if (flags.per_call_spacing_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.per_call_spacing_ms));
      const int64_t w = Nanos(CLOCK_MONOTONIC);
      const int64_t c = Nanos(CLOCK_THREAD_CPUTIME_ID);
      last = call.run();
      cpu += Nanos(CLOCK_THREAD_CPUTIME_ID) - c;
      wall += Nanos(CLOCK_MONOTONIC) - w;
    }
    std::printf("nvml_call function=%s repeats=%d spacing_ms=%d cpu_us=%.1f wall_us=%.1f last=%s\n", call.name,
                repeats, flags.per_call_spacing_ms, cpu / 1e3 / repeats, wall / 1e3 / repeats,
                NvmlErrorName(last).c_str());
  }
  if (s1 != nullptr) fn.nvmlGpmSampleFree(s1);
  if (s2 != nullptr) fn.nvmlGpmSampleFree(s2);
  if (set != nullptr) fn.nvmlEventSetFree(set);
}

std::vector<int> ParseList(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != 0;) {
    out.push_back(std::atoi(p));
    const char* comma = std::strchr(p, ',');
    if (comma == nullptr) break;
    p = comma + 1;
  }
  return out;
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  using namespace warpscope;  // NOLINT
  SetMinLogLevel(LogLevel::kWarning);
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--library") {
      flags.library = value();
    } else if (arg == "--gpus") {
      flags.fake_gpus = ParseList(value());
    } else if (arg == "--processes") {
      flags.processes_per_gpu = std::atoi(value());
    } else if (arg == "--collects") {
      flags.collects = std::atoi(value());
    } else if (arg == "--interval-ms") {
      flags.interval_ms = std::atoi(value());
    } else if (arg == "--print-readings") {
      flags.print_readings = true;
    } else if (arg == "--per-call") {
      flags.per_call = true;
    } else if (arg == "--per-call-repeats") {
      flags.per_call_repeats = std::atoi(value());
    } else if (arg == "--per-call-spacing-ms") {
      flags.per_call_spacing_ms = std::atoi(value());
    } else if (arg == "--slow-every") {
      flags.slow_every = std::atoi(value());
    } else if (arg == "--gpm-every") {
      flags.gpm_every = std::atoi(value());
    } else {
      std::fprintf(stderr,
                   "usage: nvml_collect_bench [--library PATH] [--gpus 1,8] [--processes N] [--collects N] "
                   "[--interval-ms MS] [--slow-every N] [--gpm-every N] [--print-readings] "
                   "[--per-call [--per-call-repeats N] [--per-call-spacing-ms MS]]\n");
      return 2;
    }
  }
  int rc = 0;
  if (!flags.library.empty()) {
    rc = Run(flags, flags.library, 0);
    if (flags.per_call) PerCall(flags, flags.library);
    return rc;
  }
  char dir[] = "/tmp/nvml_collect_bench_XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  const std::string script = std::string(dir) + "/script";
  setenv("WS_FAKE_NVML_SCRIPT", script.c_str(), 1);
  for (int gpus : flags.fake_gpus) {
    std::ofstream(script) << FakeScriptText(gpus, flags.processes_per_gpu);
    rc |= Run(flags, WS_FAKE_NVML_PATH, gpus);
  }
  if (flags.per_call) PerCall(flags, WS_FAKE_NVML_PATH);
  unlink(script.c_str());
  rmdir(dir);
  return rc;
}
