// The interval-based part of NvmlReader: per-process utilization
// and memory, XID events, and GPM metrics (each needs state carried from
// the previous Collect()). Runs on the collector's thread.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "agent/collectors/gpu_metrics/nvml/gpu_device_state.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"
#include "base/logging.h"

namespace warpscope {

using namespace nvml;  // NOLINT: the NVML names read best unqualified here
namespace m = gpu_metric;
using Source = GpuMetricSource;

namespace {

// Bounds on what one interval reads, so that a misbehaving driver (or a
// fork bomb on the GPU) cannot make the collector loop or grow without end.
constexpr unsigned int kMaxProcessesPerGpu = 4096;
constexpr int kMaxSizeRetries = 3;
constexpr int kMaxXidEventsPerCollect = 1024;

struct GpmMetricSource {
  nvmlGpmMetricId_t id;
  Source source;
  const m::MetricSpec* spec;
  double scale;  // to the spec's unit
  bool pcie;     // only while GpuDeviceState::pcie_from_gpm
};
constexpr double kMiB = 1024.0 * 1024.0;
constexpr GpmMetricSource kGpmMetrics[] = {
    {NVML_GPM_METRIC_SM_UTIL, Source::kGpmSmActivity, &m::kSmActivity, 1, false},
    {NVML_GPM_METRIC_SM_OCCUPANCY, Source::kGpmSmOccupancy, &m::kSmOccupancy, 1, false},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, Source::kGpmTensorActivity, &m::kTensorActivity, 1, false},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, Source::kGpmDramBandwidth, &m::kDramBandwidth, 1, false},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, Source::kPcieTx, &m::kPcieTx, kMiB, true},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, Source::kPcieRx, &m::kPcieRx, kMiB, true},
};
static_assert(std::size(kGpmMetrics) <= NVML_GPM_METRIC_MAX);
constexpr Source kGpmSources[] = {Source::kGpmSmActivity, Source::kGpmSmOccupancy, Source::kGpmTensorActivity,
                                  Source::kGpmDramBandwidth};

// Decimal text of an integer without allocating (fits the small-string buffer).
struct DecimalText {
  char chars[24];
  std::string_view view;
  explicit DecimalText(unsigned long long v) {
    view = std::string_view(chars, static_cast<size_t>(std::to_chars(chars, chars + sizeof(chars), v).ptr - chars));
  }
};

}  // namespace

void NvmlReader::OpenGpm(GpuDeviceState& d) {
  auto disable_all = [&](const std::string& reason) { DisableAll(d, kGpmSources, std::size(kGpmSources), reason); };
  if (fn_.nvmlGpmQueryDeviceSupport == nullptr || fn_.nvmlGpmSampleAlloc == nullptr ||
      fn_.nvmlGpmSampleFree == nullptr || fn_.nvmlGpmSampleGet == nullptr || fn_.nvmlGpmMetricsGet == nullptr) {
    disable_all(MissingReason("nvmlGpm* (GPM)"));
    return;
  }
  nvmlGpmSupport_t support = {};
  support.version = NVML_GPM_SUPPORT_VERSION;
  const nvmlReturn_t queried = fn_.nvmlGpmQueryDeviceSupport(d.handle, &support);
  if (queried != NVML_SUCCESS) {
    disable_all("nvmlGpmQueryDeviceSupport: " + NvmlErrorName(queried));
    return;
  }
  if (!support.isSupportedDevice) {
    disable_all("GPM not supported by this GPU (needs Hopper or newer)");
    return;
  }
  nvmlReturn_t allocated = fn_.nvmlGpmSampleAlloc(&d.gpm_previous);
  if (allocated == NVML_SUCCESS) allocated = fn_.nvmlGpmSampleAlloc(&d.gpm_current);
  if (allocated != NVML_SUCCESS) {
    disable_all("nvmlGpmSampleAlloc: " + NvmlErrorName(allocated));
    return;
  }
  // GPM counts PCIe bytes over the whole interval; the legacy query sleeps
  // 20 ms in the driver and sees only those 20 ms.
  d.pcie_from_gpm = true;
}

void NvmlReader::StopGpmPcie(GpuDeviceState& d, const std::string& why) {
  d.pcie_from_gpm = false;
  if (fn_.nvmlDeviceGetPcieThroughput == nullptr) {
    const Source pcie[] = {Source::kPcieTx, Source::kPcieRx};
    DisableAll(d, pcie, 2, why);
  } else {
    LOG_INFO() << "GPU " << d.index << ": PCIe throughput from nvmlDeviceGetPcieThroughput: " << why;
  }
}

void NvmlReader::CollectGpm(GpuDeviceState& d, GpuReadingSink& sink) {
  if (d.gpm_current == nullptr) return;
  auto wanted = [&](const GpmMetricSource& g) { return !d.IsOff(g.source) && (!g.pcie || d.pcie_from_gpm); };
  if (std::none_of(std::begin(kGpmMetrics), std::end(kGpmMetrics), wanted)) return;
  // A failed sample or request concerns all four metrics: unsupported turns
  // them all off, anything else counts once.
  auto fail_all = [&](const char* function, nvmlReturn_t code) {
    if (NvmlMeansUnsupported(code)) {
      const std::string reason = std::string(function) + ": " + NvmlErrorName(code);
      DisableAll(d, kGpmSources, std::size(kGpmSources), reason);
      if (d.pcie_from_gpm) StopGpmPcie(d, reason);
    } else {
      ++error_count_;
      LOG_DEBUG() << "GPU " << d.index << ": " << function << ": " << NvmlErrorName(code);
    }
  };
  const nvmlReturn_t sampled = fn_.nvmlGpmSampleGet(d.handle, d.gpm_current);
  if (sampled != NVML_SUCCESS) {
    fail_all("nvmlGpmSampleGet", sampled);
    d.gpm_have_previous = false;
    return;
  }
  if (d.gpm_have_previous) {
    nvmlGpmMetricsGet_t& request = *gpm_request_;
    request.version = NVML_GPM_METRICS_GET_VERSION;
    request.sample1 = d.gpm_previous;
    request.sample2 = d.gpm_current;
    const GpmMetricSource* asked[std::size(kGpmMetrics)];
    unsigned int n = 0;
    for (const GpmMetricSource& g : kGpmMetrics) {
      if (!wanted(g)) continue;
      std::memset(&request.metrics[n], 0, sizeof(request.metrics[n]));
      request.metrics[n].metricId = g.id;
      asked[n++] = &g;
    }
    request.numMetrics = n;
    const nvmlReturn_t got = fn_.nvmlGpmMetricsGet(&request);
    if (got != NVML_SUCCESS) {
      fail_all("nvmlGpmMetricsGet", got);
    } else {
      for (unsigned int i = 0; i < n; ++i) {
        const GpmMetricSource& g = *asked[i];
        const nvmlReturn_t code = request.metrics[i].nvmlReturn;
        if (g.pcie && NvmlMeansUnsupported(code)) {
          StopGpmPcie(d, "nvmlGpmMetricsGet(PCIe): " + NvmlErrorName(code));
          continue;
        }
        // NaN comes back for ratios over an idle interval (DRAM bandwidth on
        // an idle H200): no reading rather than a NaN in the store.
        if (Check(d, g.source, "nvmlGpmMetricsGet", code) && std::isfinite(request.metrics[i].value)) {
          sink.Emit(d, *g.spec, request.metrics[i].value * g.scale);
        }
      }
    }
  }
  std::swap(d.gpm_previous, d.gpm_current);
  d.gpm_have_previous = true;
}

void NvmlReader::CollectProcessUtilization(GpuDeviceState& d, GpuReadingSink& sink,
                                                    int64_t now_unix_nanos) {
  if (d.IsOff(Source::kProcessUtilization)) return;
  std::vector<nvmlProcessUtilizationSample_t>& samples = d.utilization_samples;
  unsigned int count = 0;
  nvmlReturn_t code = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < kMaxSizeRetries && code == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    count = static_cast<unsigned int>(samples.size());
    code = fn_.nvmlDeviceGetProcessUtilization(d.handle, samples.data(), &count, d.process_last_seen_us);
    if (code == NVML_ERROR_INSUFFICIENT_SIZE) {
      samples.resize(std::min(kMaxProcessesPerGpu, std::max(count, static_cast<unsigned int>(samples.size()) * 2)));
    }
  }
  // NOT_FOUND: no process used this GPU since the last query. Normal.
  if (code == NVML_ERROR_NOT_FOUND) return;
  if (!Check(d, Source::kProcessUtilization, "nvmlDeviceGetProcessUtilization", code)) return;
  count = std::min(count, static_cast<unsigned int>(samples.size()));

  // The samples carry the driver's CPU timestamps (Unix µs): one reading per
  // pid per second they fall in (the mean of that second's samples, if the
  // driver returns several), stamped with that second. A timestamp far from
  // now (another clock) puts the pid's samples at now, as one mean.
  constexpr int64_t kSecond = 1'000'000'000;
  auto bucket_of = [&](unsigned long long us) {
    const int64_t ns = static_cast<int64_t>(us) * 1000;
    if (ns > now_unix_nanos + kSecond || ns < now_unix_nanos - 3600 * kSecond) return now_unix_nanos;
    return ns - ns % kSecond;
  };
  std::sort(samples.begin(), samples.begin() + count, [&](const auto& a, const auto& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.timeStamp < b.timeStamp;
  });
  for (unsigned int i = 0; i < count;) {
    const unsigned int pid = samples[i].pid;
    const int64_t bucket = bucket_of(samples[i].timeStamp);
    double sm = 0;
    double mem = 0;
    unsigned int j = i;
    for (; j < count && samples[j].pid == pid && bucket_of(samples[j].timeStamp) == bucket; ++j) {
      sm += samples[j].smUtil;
      mem += samples[j].memUtil;
      d.process_last_seen_us = std::max(d.process_last_seen_us, samples[j].timeStamp);
    }
    const double n = j - i;
    const DecimalText pid_text(pid);
    sink.EmitWithLabel(d, m::kProcessSmUtilization, m::kLabelPid, pid_text.view, sm / n).time_unix_nanos = bucket;
    sink.EmitWithLabel(d, m::kProcessMemoryUtilization, m::kLabelPid, pid_text.view, mem / n).time_unix_nanos = bucket;
    i = j;
  }
}

void NvmlReader::CollectProcessMemory(GpuDeviceState& d, GpuReadingSink& sink) {
  if (d.IsOff(Source::kProcessMemory)) return;
  std::vector<nvmlProcessInfo_t>& processes = d.running_processes;
  // Ask for the count first (NVML's documented protocol), then read with
  // room to spare for processes that start in between.
  unsigned int count = 0;
  nvmlReturn_t code = fn_.nvmlDeviceGetComputeRunningProcesses_v3(d.handle, &count, nullptr);
  for (int attempt = 0; attempt < kMaxSizeRetries && code == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    if (count + 8 > processes.size()) processes.resize(std::min(kMaxProcessesPerGpu, count + 8));
    count = static_cast<unsigned int>(processes.size());
    code = fn_.nvmlDeviceGetComputeRunningProcesses_v3(d.handle, &count, processes.data());
  }
  if (!Check(d, Source::kProcessMemory, "nvmlDeviceGetComputeRunningProcesses_v3", code)) return;
  count = std::min(count, static_cast<unsigned int>(processes.size()));

  std::sort(processes.begin(), processes.begin() + count,
            [](const auto& a, const auto& b) { return a.pid < b.pid; });
  for (unsigned int i = 0; i < count;) {
    const unsigned int pid = processes[i].pid;
    unsigned long long used = 0;
    bool known = false;
    unsigned int j = i;
    for (; j < count && processes[j].pid == pid; ++j) {
      if (processes[j].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ULL) continue;
      used += processes[j].usedGpuMemory;
      known = true;
    }
    if (known) {
      sink.EmitWithLabel(d, m::kProcessMemoryUsed, m::kLabelPid, DecimalText(pid).view, static_cast<double>(used));
    }
    i = j;
  }
}

void NvmlReader::OpenXidEvents() {
  if (fn_.nvmlEventSetCreate == nullptr || fn_.nvmlDeviceRegisterEvents == nullptr ||
      fn_.nvmlEventSetWait_v2 == nullptr || fn_.nvmlEventSetFree == nullptr) {
    return;  // DisableMissingFunctions turned kXid off on every device
  }
  const nvmlReturn_t created = fn_.nvmlEventSetCreate(&xid_event_set_);
  if (created != NVML_SUCCESS) {
    xid_event_set_ = nullptr;
    for (auto& device : devices_) Disable(*device, Source::kXid, "nvmlEventSetCreate: " + NvmlErrorName(created));
    return;
  }
  bool any = false;
  for (auto& device : devices_) {
    GpuDeviceState& d = *device;
    const nvmlReturn_t registered =
        fn_.nvmlDeviceRegisterEvents(d.handle, nvmlEventTypeXidCriticalError, xid_event_set_);
    if (registered == NVML_SUCCESS) {
      any = true;
    } else {
      // Retrying a registration each interval would repeat a costly call; off until restart.
      Disable(d, Source::kXid, "nvmlDeviceRegisterEvents(XidCriticalError): " + NvmlErrorName(registered));
    }
  }
  if (!any) {
    fn_.nvmlEventSetFree(xid_event_set_);
    xid_event_set_ = nullptr;
  }
}

void NvmlReader::CollectXidEvents(GpuReadingSink& sink) {
  if (xid_event_set_ == nullptr) return;
  for (int i = 0; i < kMaxXidEventsPerCollect; ++i) {
    nvmlEventData_t event = {};
    // Timeout 0: return at once; NVML_ERROR_TIMEOUT means no event is pending.
    const nvmlReturn_t code = fn_.nvmlEventSetWait_v2(xid_event_set_, &event, 0);
    if (code == NVML_ERROR_TIMEOUT) break;
    if (NvmlMeansUnsupported(code)) {
      for (auto& device : devices_) Disable(*device, Source::kXid, "nvmlEventSetWait_v2: " + NvmlErrorName(code));
      fn_.nvmlEventSetFree(xid_event_set_);
      xid_event_set_ = nullptr;
      return;
    }
    if (code != NVML_SUCCESS) {
      ++error_count_;
      LOG_DEBUG() << "nvmlEventSetWait_v2: " << NvmlErrorName(code);
      break;
    }
    if ((event.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    for (auto& device : devices_) {
      if (device->handle != event.device) continue;
      auto& counts = device->xid_counts;
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == event.eventData; });
      if (it == counts.end()) {
        counts.emplace_back(event.eventData, 1);
      } else {
        ++it->second;
      }
      break;
    }
  }
  for (auto& device : devices_) {
    auto& counts = device->xid_counts;
    std::sort(counts.begin(), counts.end());
    for (const auto& [xid, n] : counts) {
      sink.EmitWithLabel(*device, m::kXidErrors, m::kLabelXid, DecimalText(xid).view, n);
    }
    counts.clear();
  }
}

}  // namespace warpscope
