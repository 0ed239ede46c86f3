#include "query/gpu_kernel_table.h"

#include "base/saturating.h"
#include "query/json_text.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace warpscope::query {

using storage::GpuActivity;
using storage::GpuActivityKind;

const char* GpuActivityKindName(GpuActivityKind kind) {
  switch (kind) {
    case GpuActivityKind::kKernel: return "kernel";
    case GpuActivityKind::kMemcpy: return "memcpy";
    case GpuActivityKind::kMemset: return "memset";
  }
  return "unknown";
}

int64_t NearestRankPercentile(const std::vector<int64_t>& sorted, int p) {
  // rank = ceil(p / 100 * n), 1-based.
  const size_t n = sorted.size();
  const size_t rank = (static_cast<size_t>(p) * n + 99) / 100;
  return sorted[std::clamp<size_t>(rank, 1, n) - 1];
}

KernelTable BuildKernelTable(const storage::GpuActivities& in) {
  using Config = std::array<uint32_t, 6>;  // grid, block
  struct Group {
    uint32_t system_name = 0;
    std::vector<int64_t> durations;
    std::map<Config, uint64_t> configs;
  };
  // Keyed by (kind, name index): names are unique in the answer's table.
  std::map<std::pair<GpuActivityKind, uint32_t>, Group> groups;
  KernelTable out;
  for (const GpuActivity& a : in.activities) {
    auto [it, inserted] = groups.try_emplace({a.kind, a.name});
    Group& g = it->second;
    if (inserted) g.system_name = a.system_name;
    g.durations.push_back(a.duration_ns);
    if (a.kind == GpuActivityKind::kKernel) {
      ++g.configs[Config{a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1], a.block[2]}];
    }
    SaturatingAddTo(out.total_ns, a.duration_ns);
  }
  out.activities = in.activities.size();
  out.kernels.reserve(groups.size());
  for (auto& [key, g] : groups) {
    KernelStats k;
    k.kind = key.first;
    k.name = in.names[key.second];
    k.system_name = in.names[g.system_name];
    std::sort(g.durations.begin(), g.durations.end());
    k.launches = g.durations.size();
    for (int64_t d : g.durations) SaturatingAddTo(k.total_ns, d);
    k.mean_ns = k.total_ns / static_cast<int64_t>(k.launches);
    k.p50_ns = NearestRankPercentile(g.durations, 50);
    k.p95_ns = NearestRankPercentile(g.durations, 95);
    k.max_ns = g.durations.back();
    k.configs = g.configs.size();
    uint64_t best = 0;
    for (const auto& [config, count] : g.configs) {  // ascending: the first of equal counts wins
      if (count > best) {
        best = count;
        std::copy(config.begin(), config.begin() + 3, k.grid.begin());
        std::copy(config.begin() + 3, config.end(), k.block.begin());
      }
    }
    k.share = out.total_ns > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(out.total_ns) : 0;
    out.kernels.push_back(std::move(k));
  }
  std::sort(out.kernels.begin(), out.kernels.end(), [](const KernelStats& a, const KernelStats& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return std::tie(a.kind, a.name) < std::tie(b.kind, b.name);
  });
  return out;
}

std::string RenderKernelTableJson(const storage::GpuActivities& activities, int64_t from_ns, int64_t to_ns) {
  using nlohmann::json;
  const KernelTable table = BuildKernelTable(activities);
  uint64_t recorded = 0, sent = 0;
  for (const storage::GpuTraceCoverage& c : activities.coverage) {
    recorded += c.recorded;
    sent += c.sent;
  }
  json kernels = json::array();
  for (const KernelStats& k : table.kernels) {
    kernels.push_back({{"kind", GpuActivityKindName(k.kind)},
                       {"name", k.name},
                       {"system_name", k.system_name},
                       {"launches", k.launches},
                       {"total_ns", k.total_ns},
                       {"mean_ns", k.mean_ns},
                       {"p50_ns", k.p50_ns},
                       {"p95_ns", k.p95_ns},
                       {"max_ns", k.max_ns},
                       {"grid", k.grid},
                       {"block", k.block},
                       {"configs", k.configs},
                       {"share", k.share}});
  }
  const json out = {{"from_ns", from_ns},          {"to_ns", to_ns}, {"activities", table.activities},
                    {"recorded", recorded},        {"sent", sent},   {"total_ns", table.total_ns},
                    {"kernels", std::move(kernels)}};
  return DumpJson(out);
}

}  // namespace warpscope::query
