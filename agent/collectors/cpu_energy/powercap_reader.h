// PowercapReader: the CPU packages' and their DRAM's energy, measured by
// RAPL and read from the kernel's powercap tree (/sys/class/powercap), as
// counters of joules that the agent carries across the hardware counters'
// wraparound (docs/design/cpu_energy.md).
//
// Which zones: every package zone `intel-rapl:N` whose name starts with
// "package" (cpu_energy, label zone=<its name>) and every subzone
// `intel-rapl:N:M` of one named "dram" (dram_energy, label
// zone=<package name>/dram). Skipped: "psys" (the platform: it contains the
// packages and more), "core" and "uncore" (parts of their package), and
// `intel-rapl-mmio:*` (a second interface to the same package counter).
//
// A zone's counter starts at its energy_uj at the first read and grows by
// every increase since, a decrease being a wraparound (+ max_energy_range_uj).
// A zone that cannot be read (energy_uj is root-only since Linux 5.10) is
// reported once and skipped; a zone that goes away drops out, and the tree
// is scanned again every `rescan_every` reads for zones that came (back).
//
// Threading: owned by one thread (the sampling thread, through
// CpuEnergyCollector). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/metric_reading.h"

namespace warpscope {

// The series' names, unit and label: a contract with the server
// (docs/design/cpu_energy.md). Add names; never rename one.
namespace cpu_energy_metric {
inline constexpr char kCpuEnergy[] = "cpu_energy";    // per package zone
inline constexpr char kDramEnergy[] = "dram_energy";  // per DRAM subzone of a package
inline constexpr char kUnit[] = "joules";
inline constexpr char kLabelZone[] = "zone";  // "package-0", "package-0/dram"
}  // namespace cpu_energy_metric

struct PowercapStats {
  uint64_t zones = 0;             // zones read now
  uint64_t unreadable_zones = 0;  // zones whose energy_uj could never be read (each reported once)
  uint64_t read_errors = 0;       // failed reads of a zone read before (that interval joins the next)
  uint64_t wraparounds = 0;       // counter wraparounds carried
  uint64_t resets = 0;            // decreases with no known range: that interval is not counted
  uint64_t zones_lost = 0;        // zones whose files went away
};

class PowercapReader {
 public:
  // Scans `root` and reads every zone once (the counters' origin).
  // Unavailable, with a message that says CPU energy will be estimated,
  // when the tree is missing or no package zone can be read.
  static StatusOr<std::unique_ptr<PowercapReader>> Open(const std::string& root, int rescan_every = 30);

  // One reading per zone read, stamped now_unix_nanos, into `readings`
  // (replaced): {cpu_energy|dram_energy, "joules", {{"zone", ...}}, joules}.
  void ReadInto(int64_t now_unix_nanos, std::vector<MetricReading>* readings);

  const PowercapStats& stats() const { return stats_; }

 private:
  struct Zone {
    std::string dir;  // "intel-rapl:0", "intel-rapl:0:2"
    std::string energy_path;
    const char* metric = nullptr;
    std::string label;
    uint64_t max_range_uj = 0;  // 0: unknown (then a decrease is a reset)
    bool read_once = false;
    uint64_t last_uj = 0;
    uint64_t total_uj = 0;  // what the series shows, in µJ
  };

  explicit PowercapReader(std::string root, int rescan_every);
  // Finds the zones; keeps the state of those already known.
  void Scan();
  // Reads one zone; false when it is gone or cannot be read.
  enum class ReadOutcome { kOk, kGone, kFailed };
  ReadOutcome ReadZone(Zone* zone);

  const std::string root_;
  const int rescan_every_;
  std::vector<Zone> zones_;  // sorted by package, then subzone
  std::set<std::string> reported_;    // dirs whose failure or skip was logged once
  std::set<std::string> unreadable_;  // dirs whose energy_uj could not be read yet
  std::string first_failure_;       // why the first unreadable zone could not be read
  uint64_t reads_ = 0;
  bool rescan_due_ = false;
  PowercapStats stats_;
};

}  // namespace warpscope
