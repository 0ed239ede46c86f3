#include "bench/server_load/server_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
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

StatusOr<pid_t> FindChildProcess(const std::string& exe_part) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return ErrnoError(errno, "opendir /proc");
  const pid_t self = getpid();
  pid_t found = 0;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 2));  // 3 state, 4 ppid
    std::string state;
    pid_t ppid = 0;
    if (!(fields >> state >> ppid) || ppid != self) continue;
    char exe[4096];
    const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof(exe) - 1);
    if (n > 0 && std::string(exe, n).find(exe_part) != std::string::npos) {
      found = pid;
      break;
    }
  }
  closedir(proc);
  if (found == 0) return NotFoundError("no child process running " + exe_part);
  return found;
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

StatusOr<ClickHouseUsage> MeasureClickHouse(const clickhouse::testing::ClickHouseInstance& ch, const std::string& db) {
  ASSIGN_OR_RETURN(std::string tsv,
                   ch.Query("SELECT table, sum(bytes_on_disk), count() FROM system.parts WHERE database = '" + db +
                            "' AND active GROUP BY table FORMAT TabSeparated"));
  // The fact tables of docs/design/clickhouse.md §5 (and any *_1h rollup);
  // everything else is written once per distinct value.
  auto is_fact = [](const std::string& t) {
    return t == "samples" || t == "metric_points" || t == "gpu_activities" || t == "gpu_trace_coverage" ||
           (t.size() > 3 && t.compare(t.size() - 3, 3, "_1h") == 0);
  };
  ClickHouseUsage u;
  std::istringstream lines(tsv);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string table;
    int64_t bytes = 0, parts = 0;
    if (!std::getline(fields, table, '\t') || !(fields >> bytes >> parts)) continue;
    (is_fact(table) ? u.fact_bytes : u.dictionary_bytes) += bytes;
    u.parts += parts;
    u.tables.emplace_back(table, bytes);
  }
  std::sort(u.tables.begin(), u.tables.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (u.tables.empty()) return NotFoundError("no parts of database " + db + " in system.parts: " + tsv);
  return u;
}

}  // namespace warpscope::bench
