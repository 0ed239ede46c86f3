#include "agent/collectors/cpu_energy/powercap_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope {
namespace {

// Zones beyond this are ignored (a 2-socket server has 4: two packages,
// two DRAM); it only bounds what a strange tree can make the agent hold.
constexpr size_t kMaxZones = 256;

// "intel-rapl:N" -> {N}, "intel-rapl:N:M" -> {N, M}; anything else (the
// control type "intel-rapl", "intel-rapl-mmio:0", deeper subzones) -> empty.
std::vector<uint32_t> ZoneIndexes(const std::string& entry) {
  static constexpr char kPrefix[] = "intel-rapl:";
  if (entry.rfind(kPrefix, 0) != 0) return {};
  std::vector<uint32_t> out;
  uint64_t n = 0;
  bool digit = false;
  for (size_t i = sizeof(kPrefix) - 1; i <= entry.size(); ++i) {
    if (i == entry.size() || entry[i] == ':') {
      if (!digit) return {};
      out.push_back(static_cast<uint32_t>(n));
      n = 0;
      digit = false;
    } else if (entry[i] >= '0' && entry[i] <= '9' && n < 100'000) {
      n = n * 10 + static_cast<uint64_t>(entry[i] - '0');
      digit = true;
    } else {
      return {};
    }
  }
  if (out.size() > 2) return {};
  return out;
}

// A sysfs attribute's text, without surrounding whitespace, or the errno.
int ReadAttribute(const std::string& path, std::string* text) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  char buf[128];
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno;
  size_t begin = 0, end = static_cast<size_t>(n);
  while (begin < end && (buf[begin] == ' ' || buf[begin] == '\n' || buf[begin] == '\t')) ++begin;
  while (end > begin && (buf[end - 1] == ' ' || buf[end - 1] == '\n' || buf[end - 1] == '\t')) --end;
  text->assign(buf + begin, end - begin);
  return 0;
}

// A decimal counter; nullopt for anything else (empty, a sign, overflow).
std::optional<uint64_t> ParseCounter(const std::string& text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

bool IsGone(int err) { return err == ENOENT || err == ENODEV || err == ENOTDIR; }

}  // namespace

PowercapReader::PowercapReader(std::string root, int rescan_every)
    : root_(std::move(root)), rescan_every_(std::max(1, rescan_every)) {}

StatusOr<std::unique_ptr<PowercapReader>> PowercapReader::Open(const std::string& root, int rescan_every) {
  constexpr char kEstimated[] = "; CPU energy will be estimated from CPU samples";
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) {
    const int err = errno;
    return UnavailableError("CPU energy: no powercap tree at " + root + " (" + std::strerror(err) +
                            ": no RAPL, as in most VMs)" + kEstimated);
  }
  ::closedir(d);
  std::unique_ptr<PowercapReader> reader(new PowercapReader(root, rescan_every));
  reader->Scan();
  std::vector<MetricReading> first;
  reader->ReadInto(0, &first);
  bool package = false;
  for (const MetricReading& r : first) package |= r.metric == cpu_energy_metric::kCpuEnergy;
  if (!package) {
    if (!reader->first_failure_.empty()) {
      return UnavailableError("CPU energy: no RAPL package zone under " + root + " can be read (" +
                              reader->first_failure_ + ")" + kEstimated);
    }
    return UnavailableError("CPU energy: no RAPL package zone (intel-rapl:N) under " + root + kEstimated);
  }
  return reader;
}

void PowercapReader::Scan() {
  std::vector<std::string> entries;
  if (DIR* d = ::opendir(root_.c_str())) {
    while (dirent* e = ::readdir(d)) entries.emplace_back(e->d_name);
    ::closedir(d);
  }
  // Packages first, by index, then each one's subzones.
  std::map<std::vector<uint32_t>, std::string> found;
  for (const std::string& e : entries) {
    std::vector<uint32_t> idx = ZoneIndexes(e);
    if (!idx.empty()) found.emplace(std::move(idx), e);
  }
  std::map<std::string, Zone> known;
  for (Zone& z : zones_) known.emplace(z.dir, std::move(z));
  zones_.clear();
  std::map<uint32_t, std::string> package_names;  // package index -> zone label
  std::set<std::string> labels;
  for (const auto& [idx, dir] : found) {
    const std::string path = root_ + "/" + dir;
    std::string name;
    if (int err = ReadAttribute(path + "/name", &name); err != 0) {
      if (!IsGone(err) && reported_.insert(dir).second) {
        LOG_WARNING() << "CPU energy: cannot read " << path << "/name (" << std::strerror(err) << "): zone skipped";
      }
      continue;
    }
    const char* metric = nullptr;
    std::string label;
    if (idx.size() == 1) {
      if (name.rfind("package", 0) != 0) {
        // psys (the platform, which contains the packages) or a zone of an
        // unknown kind: counting it would count joules twice.
        if (reported_.insert(dir).second) {
          LOG_INFO() << "CPU energy: RAPL zone " << dir << " (" << name << ") not counted: only package zones are";
        }
        continue;
      }
      metric = cpu_energy_metric::kCpuEnergy;
      label = name;
      // Two packages with one name (never seen): the directory keeps them apart.
      if (labels.count(label)) label = name + "@" + dir;
      package_names[idx[0]] = label;
    } else {
      // core and uncore are parts of their package; only DRAM is outside it.
      auto parent = package_names.find(idx[0]);
      if (name != "dram" || parent == package_names.end()) continue;
      metric = cpu_energy_metric::kDramEnergy;
      label = parent->second + "/dram";
    }
    if (zones_.size() >= kMaxZones) break;
    labels.insert(label);
    Zone zone;
    if (auto it = known.find(dir); it != known.end() && it->second.label == label && it->second.metric == metric) {
      zone = std::move(it->second);
    } else {
      zone.dir = dir;
      zone.energy_path = path + "/energy_uj";
      zone.metric = metric;
      zone.label = label;
      std::string range;
      if (ReadAttribute(path + "/max_energy_range_uj", &range) == 0) {
        zone.max_range_uj = ParseCounter(range).value_or(0);
      }
    }
    zones_.push_back(std::move(zone));
  }
  rescan_due_ = false;
}

PowercapReader::ReadOutcome PowercapReader::ReadZone(Zone* zone) {
  std::string text;
  const int err = ReadAttribute(zone->energy_path, &text);
  const std::optional<uint64_t> uj = err == 0 ? ParseCounter(text) : std::nullopt;
  if (!uj) {
    if (zone->read_once && IsGone(err)) {
      ++stats_.zones_lost;
      LOG_INFO() << "CPU energy: RAPL zone " << zone->label << " (" << zone->dir << ") is gone";
      return ReadOutcome::kGone;
    }
    const std::string why =
        zone->energy_path + ": " + (err != 0 ? std::string(std::strerror(err)) : "not a counter: '" + text + "'");
    if (!zone->read_once) {
      // Never read: unreadable (or without a counter), until a rescan finds it readable.
      if (first_failure_.empty()) first_failure_ = why;
      unreadable_.insert(zone->dir);
      if (reported_.insert(zone->dir).second) {
        LOG_WARNING() << "CPU energy: cannot read " << why
                      << (err == EACCES || err == EPERM ? " (energy_uj is readable by root only)" : "")
                      << ": zone " << zone->label << " is not measured";
      }
      return ReadOutcome::kGone;
    }
    ++stats_.read_errors;
    LOG_WARNING_EVERY_N_SEC(60) << "CPU energy: cannot read " << why;
    return ReadOutcome::kFailed;
  }
  if (!zone->read_once) {
    zone->total_uj = *uj;
    zone->read_once = true;
    unreadable_.erase(zone->dir);
  } else if (*uj >= zone->last_uj) {
    zone->total_uj += *uj - zone->last_uj;
  } else if (zone->max_range_uj >= zone->last_uj) {
    // The counter passed max_energy_range_uj and started again from 0.
    zone->total_uj += zone->max_range_uj - zone->last_uj + *uj;
    ++stats_.wraparounds;
  } else {
    ++stats_.resets;
  }
  zone->last_uj = *uj;
  return ReadOutcome::kOk;
}

void PowercapReader::ReadInto(int64_t now_unix_nanos, std::vector<MetricReading>* readings) {
  readings->clear();
  if (rescan_due_ || (reads_ > 0 && reads_ % static_cast<uint64_t>(rescan_every_) == 0)) Scan();
  ++reads_;
  for (auto it = zones_.begin(); it != zones_.end();) {
    const ReadOutcome outcome = ReadZone(&*it);
    if (outcome == ReadOutcome::kGone) {
      // Gone or unreadable: dropped until a rescan finds it readable.
      rescan_due_ |= it->read_once;
      it = zones_.erase(it);
      continue;
    }
    if (outcome == ReadOutcome::kOk) {
      readings->push_back(MetricReading{it->metric, cpu_energy_metric::kUnit,
                                        {{cpu_energy_metric::kLabelZone, it->label}},
                                        static_cast<double>(it->total_uj) / 1e6, now_unix_nanos});
    }
    ++it;
  }
  stats_.zones = zones_.size();
  stats_.unreadable_zones = unreadable_.size();
}

}  // namespace warpscope
