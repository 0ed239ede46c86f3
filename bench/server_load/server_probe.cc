#include "bench/server_load/server_probe.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace warpscope::bench {

StatusOr<double> ReadProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return NotFoundError("no /proc/" + std::to_string(pid) + "/stat");
  // Fields after "(comm)": 3 state ... 14 utime 15 stime (man 5 proc).
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

StatusOr<int64_t> ReadPeakRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return NotFoundError("no VmHWM in /proc/" + std::to_string(pid) + "/status");
}

StatusOr<DirUsage> MeasureDirectory(const std::string& dir) {
  // nftw takes a plain function: collect into a thread-local scratch.
  struct Scratch {
    std::string root;
    DirUsage usage;
    std::map<std::string, int64_t> entries;
  };
  static thread_local Scratch* scratch = nullptr;
  Scratch s;
  s.root = dir;
  while (s.root.size() > 1 && s.root.back() == '/') s.root.pop_back();
  scratch = &s;
  const int rc = nftw(
      s.root.c_str(),
      [](const char* path, const struct stat* st, int type, FTW*) {
        if (type != FTW_F) return 0;
        scratch->usage.apparent_bytes += st->st_size;
        scratch->usage.allocated_bytes += static_cast<int64_t>(st->st_blocks) * 512;
        std::string rel = std::string(path).substr(scratch->root.size() + 1);
        scratch->entries[rel.substr(0, rel.find('/'))] += st->st_size;
        return 0;
      },
      64, FTW_PHYS);
  scratch = nullptr;
  if (rc != 0) return ErrnoError(errno, "walking " + dir);
  s.usage.entries.assign(s.entries.begin(), s.entries.end());
  std::sort(s.usage.entries.begin(), s.usage.entries.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return s.usage;
}

}  // namespace warpscope::bench
