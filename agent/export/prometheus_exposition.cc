#include "agent/export/prometheus_exposition.h"

#include <cinttypes>
#include <iterator>
#include <string_view>
#include <cmath>
#include <cstdio>
#include <map>

namespace warpscope {
namespace {

struct Family {
  const char* metric;  // ours
  const char* name;    // exported
  const char* type;    // "gauge" / "counter"
  const char* help;
  double scale;        // exported = ours * scale
};

// dcgm-exporter's field names for what it has (its default counters and the
// DCGM field list); the per-process ones are ours.
constexpr Family kFamilies[] = {
    {"gpu_utilization", "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 1},
    {"gpu_memory_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 1},
    {"gpu_memory_used", "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 1.0 / (1 << 20)},
    {"gpu_memory_total", "DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).", 1.0 / (1 << 20)},
    {"gpu_sm_clock", "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1},
    {"gpu_memory_clock", "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 1},
    {"gpu_sm_clock_max", "DCGM_FI_DEV_MAX_SM_CLOCK", "gauge", "Maximum SM clock frequency (in MHz).", 1},
    {"gpu_memory_clock_max", "DCGM_FI_DEV_MAX_MEM_CLOCK", "gauge", "Maximum memory clock frequency (in MHz).", 1},
    {"gpu_power", "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 1},
    {"gpu_power_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Enforced power limit (in W).", 1},
    {"gpu_energy", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
     1000},
    {"gpu_temperature", "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 1},
    {"gpu_temperature_slowdown", "DCGM_FI_DEV_SLOWDOWN_TEMP", "gauge", "Slowdown temperature threshold (in C).", 1},
    {"gpu_pcie_tx", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "gauge", "PCIe TX throughput (in KB/s).", 1.0 / 1024},
    {"gpu_pcie_rx", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "gauge", "PCIe RX throughput (in KB/s).", 1.0 / 1024},
    {"gpu_clock_event_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
     "Current clock event (throttle) reasons (bitmask).", 1},
    {"gpu_xid_last", "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 1},
    {"gpu_ecc_corrected", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     1},
    {"gpu_ecc_uncorrected", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
     "Total number of double-bit volatile ECC errors.", 1},
    {"gpu_sm_activity", "DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.",
     0.01},
    {"gpu_sm_occupancy", "DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
     "The ratio of number of warps resident on an SM to the maximum.", 0.01},
    {"gpu_tensor_activity", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active.", 0.01},
    {"gpu_dram_bandwidth", "DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.", 0.01},
    {"gpu_xid_errors", "warpscope_gpu_xid_errors_total", "counter", "XID errors by code since the agent started.", 1},
    {"gpu_process_sm_utilization", "warpscope_gpu_process_sm_utilization_percent", "gauge",
     "SM utilization of one process on one GPU (in %).", 1},
    {"gpu_process_memory_utilization", "warpscope_gpu_process_memory_utilization_percent", "gauge",
     "Memory-controller utilization of one process on one GPU (in %).", 1},
    {"gpu_process_memory_used", "warpscope_gpu_process_memory_used_bytes", "gauge",
     "GPU memory used by one process.", 1},
    // Joules since the agent started (docs/design/gpu_metrics.md, "Energy per process").
    {"gpu_process_energy", "warpscope_gpu_process_energy_joules_total", "counter",
     "GPU energy apportioned to one process by its share of SM utilization while the GPU was busy (in J).", 1},
    {"gpu_idle_energy", "warpscope_gpu_idle_energy_joules_total", "counter",
     "GPU energy drawn while the GPU was idle (utilization below 1%) (in J).", 1},
    {"gpu_unattributed_energy", "warpscope_gpu_unattributed_energy_joules_total", "counter",
     "GPU energy drawn while busy with no per-process utilization to apportion it by (in J).", 1},
    // RAPL (docs/design/cpu_energy.md).
    {"cpu_energy", "warpscope_cpu_energy_joules_total", "counter",
     "CPU package energy measured by RAPL, carried across counter wraparounds (in J).", 1},
    {"dram_energy", "warpscope_dram_energy_joules_total", "counter",
     "DRAM energy of a CPU package measured by RAPL, carried across counter wraparounds (in J).", 1},
};

void AppendEscaped(const std::string& v, std::string* out) {
  for (char c : v) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '"') {
      out->append("\\\"");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

void AppendValue(double v, std::string* out) {
  char buf[40];
  if (std::isnan(v)) {
    out->append("NaN");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
  } else if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
    std::snprintf(buf, sizeof(buf), "%" PRId64, static_cast<int64_t>(v));
    out->append(buf);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    out->append(buf);
  }
}

using LabelList = std::vector<std::pair<std::string, std::string>>;

void AppendSample(const std::string& name, const LabelList& labels, double value, std::string* out) {
  out->append(name);
  if (!labels.empty()) {
    out->push_back('{');
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out->push_back(',');
      out->append(labels[i].first);
      out->append("=\"");
      AppendEscaped(labels[i].second, out);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  AppendValue(value, out);
  out->push_back('\n');
}

void AppendHeader(const std::string& name, const char* type, const char* help, std::string* out) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

// DCGM's label names for ours; the rest (pid, comm, xid, container...) keep theirs.
LabelList ExportLabels(const LabelList& ours, const std::string& node) {
  LabelList out;
  std::string gpu;
  for (const auto& [k, v] : ours) {
    if (k == "gpu") {
      gpu = v;
      out.emplace_back("gpu", v);
    } else if (k == "uuid") {
      out.emplace_back("UUID", v);
    } else if (k == "gpu_name") {
      out.emplace_back("modelName", v);
    } else if (k == "node") {
      continue;  // Hostname below
    } else {
      out.emplace_back(k, v);
    }
  }
  if (!gpu.empty()) out.emplace_back("device", "nvidia" + gpu);
  out.emplace_back("Hostname", node);
  return out;
}

}  // namespace

std::string RenderPrometheusText(const std::vector<MetricReading>& latest, const AgentHealth& health,
                                 const std::string& node) {
  std::string out;
  out.reserve(4096 + latest.size() * 160);
  // Group readings by family, in the table's order (a family's samples must be contiguous).
  std::map<std::string, std::vector<const MetricReading*>> by_metric;
  for (const MetricReading& r : latest) by_metric[r.metric].push_back(&r);
  for (const Family& f : kFamilies) {
    auto it = by_metric.find(f.metric);
    if (it == by_metric.end()) continue;
    AppendHeader(f.name, f.type, f.help, &out);
    for (const MetricReading* r : it->second) AppendSample(f.name, ExportLabels(r->labels, node), r->value * f.scale, &out);
    // DCGM's FB_FREE: total - used, per GPU.
    if (std::string(f.metric) == "gpu_memory_total") {
      auto used = by_metric.find("gpu_memory_used");
      if (used != by_metric.end()) {
        AppendHeader("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", &out);
        for (const MetricReading* total : it->second) {
          for (const MetricReading* u : used->second) {
            if (u->labels == total->labels) {
              AppendSample("DCGM_FI_DEV_FB_FREE", ExportLabels(total->labels, node),
                           (total->value - u->value) / (1 << 20), &out);
            }
          }
        }
      }
    }
  }

  const LabelList host = {{"Hostname", node}};
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    AppendHeader(name, "counter", help, &out);
    AppendSample(name, host, static_cast<double>(v), &out);
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    AppendHeader(name, "gauge", help, &out);
    AppendSample(name, host, v, &out);
  };
  counter("warpscope_agent_samples_total", "CPU samples the agent encoded into upload batches.", health.samples);
  counter("warpscope_agent_batches_total", "Upload batches the agent made.", health.batches);
  counter("warpscope_agent_upload_batches_sent_total", "Batches the server acknowledged.", health.batches_sent);
  counter("warpscope_agent_upload_batches_rejected_total", "Batches the server rejected (4xx).",
          health.batches_rejected);
  counter("warpscope_agent_upload_batches_dropped_total", "Batches dropped without reaching the server.",
          health.batches_dropped);
  counter("warpscope_agent_upload_send_failures_total", "Failed attempts to send a batch (retried).",
          health.send_failures);
  counter("warpscope_agent_spool_dropped_batches_total", "Batches dropped because the spool was full.",
          health.spool_dropped_batches);
  gauge("warpscope_agent_spooled_batches", "Batches waiting in the spool.", static_cast<double>(health.spooled));
  // Counters named cache_bytes_X, cache_budget_bytes_X and cache_evictions_X
  // are the agent's memory by cache X (kAgentCacheFamilies); the rest are
  // events.
  std::vector<std::pair<std::string, uint64_t>> events;
  std::vector<std::vector<std::pair<std::string, uint64_t>>> caches(std::size(kAgentCacheFamilies));
  for (const auto& [name, v] : health.counters) {
    bool cache = false;
    for (size_t f = 0; f < std::size(kAgentCacheFamilies) && !cache; ++f) {
      const std::string_view prefix = kAgentCacheFamilies[f].prefix;
      if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
        caches[f].emplace_back(name.substr(prefix.size()), v);
        cache = true;
      }
    }
    if (!cache) events.emplace_back(name, v);
  }
  if (!events.empty()) {
    AppendHeader("warpscope_agent_events_total", "counter",
                 "The agent's event counters: BPF map drops, unwinding and symbolization outcomes.", &out);
    for (const auto& [name, v] : events) {
      AppendSample("warpscope_agent_events_total", {{"Hostname", node}, {"event", name}}, static_cast<double>(v), &out);
    }
  }
  for (size_t f = 0; f < caches.size(); ++f) {
    if (caches[f].empty()) continue;
    const AgentCacheFamily& family = kAgentCacheFamilies[f];
    AppendHeader(family.metric, family.type, family.help, &out);
    for (const auto& [cache, v] : caches[f]) {
      AppendSample(family.metric, {{"Hostname", node}, {"cache", cache}}, static_cast<double>(v), &out);
    }
  }
  counter("warpscope_agent_gpu_readings_total", "GPU metric readings collected.", health.gpu_readings);
  counter("warpscope_agent_gpu_errors_total", "NVML calls that failed transiently (the reading was skipped).",
          health.gpu_errors);
  gauge("warpscope_agent_gpu_metrics_enabled", "1 when GPU metrics are collected, 0 when they are off.",
        health.gpu_off_reason.empty() ? 1 : 0);
  if (!health.gpu_disabled.empty()) {
    AppendHeader("warpscope_agent_gpu_metric_disabled", "gauge",
                 "A GPU metric turned off for one device because NVML does not support it there.", &out);
    for (const GpuMetricOff& d : health.gpu_disabled) {
      AppendSample("warpscope_agent_gpu_metric_disabled",
                   {{"Hostname", node}, {"gpu", d.gpu}, {"metric", d.metric}, {"reason", d.reason}}, 1, &out);
    }
  }
  gauge("warpscope_agent_gpu_process_energy_series", "Per-process GPU energy counters kept.",
        static_cast<double>(health.gpu_process_energy_series));
  counter("warpscope_agent_gpu_process_energy_dropped_total",
          "Per-process GPU energy counters dropped: the process left the GPUs, or past the bound.",
          health.gpu_process_energy_dropped);
  gauge("warpscope_agent_cpu_energy_zones", "RAPL zones whose energy is read (0: no RAPL, CPU energy is estimated).",
        static_cast<double>(health.cpu_energy_zones));
  gauge("process_cpu_seconds_total", "Total user and system CPU time of the agent in seconds.", health.cpu_seconds);
  gauge("process_resident_memory_bytes", "Resident memory of the agent in bytes.",
        static_cast<double>(health.resident_bytes));
  return out;
}

}  // namespace warpscope
