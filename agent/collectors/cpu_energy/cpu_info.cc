#include "agent/collectors/cpu_energy/cpu_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/unix_time.h"

namespace warpscope {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

CpuModel ParseCpuInfo(const std::string& cpuinfo, const std::string& arch) {
  CpuModel m;
  m.arch = arch;
  std::istringstream lines(cpuinfo);
  std::string model_name, cpu_part;
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, colon));
    const std::string value = Trim(line.substr(colon + 1));
    if (key == "processor") ++m.logical_cpus;
    if (key == "model name" && model_name.empty()) model_name = value;
    if (key == "CPU part" && cpu_part.empty()) cpu_part = value;
  }
  if (!model_name.empty()) {
    m.model = model_name;
  } else if (!cpu_part.empty()) {
    m.model = "arm:" + cpu_part;
  }
  return m;
}

CpuInfoCollector::CpuInfoCollector(const std::string& cpuinfo_path, std::optional<double> watts_per_core)
    : watts_per_core_(watts_per_core) {
  std::ifstream in(cpuinfo_path);
  std::stringstream text;
  text << in.rdbuf();
  utsname u{};
  model_ = ParseCpuInfo(text.str(), uname(&u) == 0 ? u.machine : "");
  if (model_.logical_cpus == 0) model_.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

Status CpuInfoCollector::FinishWindow(Window* window) {
  const int64_t now = UnixNanosNow();
  window->metrics.push_back(
      {"cpu_info", "cpus", {{"arch", model_.arch}, {"cpu_model", model_.model}}, double(model_.logical_cpus), now});
  if (watts_per_core_) window->metrics.push_back({"cpu_watts_per_core", "watts", {}, *watts_per_core_, now});
  return Status::Ok();
}

}  // namespace warpscope
