// The names, units and label keys of the GPU metrics the agent reads from
// NVML. A fixed contract: the server stores series under these names, the
// UI and the Prometheus exporter show them. Add names; never rename one.
#pragma once

namespace warpscope::gpu_metric {

struct MetricSpec {
  const char* name;
  const char* unit;
};

// Labels of every GPU series, sorted by key. "gpu" is NVML's device index.
inline constexpr char kLabelGpu[] = "gpu";
inline constexpr char kLabelGpuName[] = "gpu_name";      // "NVIDIA H200"
inline constexpr char kLabelPciBusId[] = "pci_bus_id";   // "00000000:01:00.0"
inline constexpr char kLabelUuid[] = "uuid";             // "GPU-8f35106d-..."
// Extra labels: per-process series carry "pid", XID counts carry "xid".
inline constexpr char kLabelPid[] = "pid";
inline constexpr char kLabelXid[] = "xid";

// Per GPU.
inline constexpr MetricSpec kUtilization{"gpu_utilization", "percent"};
inline constexpr MetricSpec kMemoryUtilization{"gpu_memory_utilization", "percent"};
inline constexpr MetricSpec kMemoryUsed{"gpu_memory_used", "bytes"};
inline constexpr MetricSpec kMemoryTotal{"gpu_memory_total", "bytes"};
// The driver's reservation (not in gpu_memory_used); drivers with _v2 only.
inline constexpr MetricSpec kMemoryReserved{"gpu_memory_reserved", "bytes"};
inline constexpr MetricSpec kSmClock{"gpu_sm_clock", "mhz"};
inline constexpr MetricSpec kMemoryClock{"gpu_memory_clock", "mhz"};
inline constexpr MetricSpec kSmClockMax{"gpu_sm_clock_max", "mhz"};
inline constexpr MetricSpec kMemoryClockMax{"gpu_memory_clock_max", "mhz"};
inline constexpr MetricSpec kPower{"gpu_power", "watts"};
inline constexpr MetricSpec kPowerLimit{"gpu_power_limit", "watts"};
inline constexpr MetricSpec kEnergy{"gpu_energy", "joules"};  // since the driver loaded
inline constexpr MetricSpec kTemperature{"gpu_temperature", "celsius"};
inline constexpr MetricSpec kTemperatureSlowdown{"gpu_temperature_slowdown", "celsius"};
inline constexpr MetricSpec kPcieTx{"gpu_pcie_tx", "bytes_per_second"};
inline constexpr MetricSpec kPcieRx{"gpu_pcie_rx", "bytes_per_second"};
inline constexpr MetricSpec kClockEventReasons{"gpu_clock_event_reasons", "bitmask"};
// 1 while the clocks are held down for `reason` (power: software power cap
// or hardware power brake; thermal: software or hardware thermal slowdown;
// hw_slowdown: any other hardware slowdown), else 0: its average over a
// range is the share of readings throttled so.
inline constexpr MetricSpec kClocksThrottled{"gpu_clocks_throttled", "ratio"};
inline constexpr char kLabelReason[] = "reason";
inline constexpr MetricSpec kEccCorrected{"gpu_ecc_corrected", "count"};      // volatile
inline constexpr MetricSpec kEccUncorrected{"gpu_ecc_uncorrected", "count"};  // volatile
inline constexpr MetricSpec kXidErrors{"gpu_xid_errors", "count"};  // events since the last reading
// GPM (Hopper and newer), averaged over the collection interval.
inline constexpr MetricSpec kSmActivity{"gpu_sm_activity", "percent"};
inline constexpr MetricSpec kSmOccupancy{"gpu_sm_occupancy", "percent"};
inline constexpr MetricSpec kTensorActivity{"gpu_tensor_activity", "percent"};
inline constexpr MetricSpec kDramBandwidth{"gpu_dram_bandwidth", "percent"};

// Per process on a GPU (the GPU's labels plus "pid").
inline constexpr MetricSpec kProcessSmUtilization{"gpu_process_sm_utilization", "percent"};
inline constexpr MetricSpec kProcessMemoryUtilization{"gpu_process_memory_utilization", "percent"};
inline constexpr MetricSpec kProcessMemoryUsed{"gpu_process_memory_used", "bytes"};

}  // namespace warpscope::gpu_metric
