#include "query/gpu_ranks.h"

#include "model/gpu_activity.h"
#include "query/gpu_kernel_table.h"
#include "query/json_text.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace warpscope::query {
namespace {

std::string LabelOf(const storage::Labels& labels, const std::string& name) {
  for (const auto& [key, value] : labels) {
    if (key == name) return value;
  }
  return "";
}

struct Collective {
  int64_t start_ns, end_ns;
  size_t rank;
};

}  // namespace

RankComparison CompareRanks(const storage::GpuActivities& activities, const RankOptions& options) {
  RankComparison out;
  std::map<RankKey, size_t> rank_index;
  std::map<uint32_t, std::map<size_t, std::vector<int64_t>>> durations;  // system name -> rank -> durations
  std::vector<Collective> collectives;
  for (const storage::GpuActivity& a : activities.activities) {
    if (a.kind != storage::GpuActivityKind::kKernel) continue;
    const storage::Labels& labels = activities.label_sets[a.labels];
    RankKey key{LabelOf(labels, "node"), LabelOf(labels, "pid"), LabelOf(labels, "comm"), a.device};
    auto [it, added] = rank_index.emplace(key, out.ranks.size());
    if (added) out.ranks.push_back(RankStats{std::move(key)});
    RankStats& rank = out.ranks[it->second];
    ++rank.kernels;
    rank.gpu_ns += a.duration_ns;
    durations[a.system_name][it->second].push_back(a.duration_ns);
    if (IsNcclKernel(activities.names[a.system_name])) {
      rank.communication_ns += a.duration_ns;
      collectives.push_back({a.start_ns, a.start_ns + a.duration_ns, it->second});
    }
  }
  // Ranks in (node, pid, device) order; the indexes follow.
  std::vector<size_t> order(out.ranks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out.ranks[a].rank < out.ranks[b].rank; });
  std::vector<size_t> new_index(order.size());
  std::vector<RankStats> sorted;
  for (size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted.push_back(std::move(out.ranks[order[i]]));
  }
  out.ranks = std::move(sorted);

  // Steps: NCCL kernels of distinct ranks ending together.
  std::sort(collectives.begin(), collectives.end(),
            [](const Collective& a, const Collective& b) { return a.end_ns < b.end_ns; });
  for (size_t i = 0; i < collectives.size();) {
    size_t j = i + 1;
    std::vector<bool> seen(out.ranks.size(), false);
    seen[new_index[collectives[i].rank]] = true;
    while (j < collectives.size() && collectives[j].end_ns - collectives[i].end_ns <= options.step_tolerance_ns &&
           !seen[new_index[collectives[j].rank]]) {
      seen[new_index[collectives[j].rank]] = true;
      ++j;
    }
    if (j - i >= 2) {
      const auto last = std::max_element(collectives.begin() + i, collectives.begin() + j,
                                         [](const Collective& a, const Collective& b) { return a.start_ns < b.start_ns; });
      const auto first = std::min_element(collectives.begin() + i, collectives.begin() + j,
                                          [](const Collective& a, const Collective& b) { return a.start_ns < b.start_ns; });
      RankStats& straggler = out.ranks[new_index[last->rank]];
      ++straggler.straggler_steps;
      for (size_t k = i; k < j; ++k) straggler.caused_wait_ns += last->start_ns - collectives[k].start_ns;
      out.steps.push_back({collectives[i].end_ns, new_index[last->rank], last->start_ns - first->start_ns,
                           static_cast<uint32_t>(j - i)});
    }
    i = j;
  }
  if (out.steps.size() > options.max_steps) out.steps.erase(out.steps.begin(), out.steps.end() - options.max_steps);
  for (size_t i = 0; i < out.ranks.size(); ++i) {
    const RankStats& r = out.ranks[i];
    if (r.straggler_steps == 0) continue;
    if (out.straggler < 0 || r.straggler_steps > out.ranks[out.straggler].straggler_steps ||
        (r.straggler_steps == out.ranks[out.straggler].straggler_steps &&
         r.caused_wait_ns > out.ranks[out.straggler].caused_wait_ns)) {
      out.straggler = static_cast<int>(i);
    }
  }

  // Kernels, the heaviest first, each rank's durations side by side.
  for (auto& [system_name, per_rank] : durations) {
    RankKernel k;
    k.system_name = activities.names[system_name];
    int64_t slowest = 0, fastest = INT64_MAX;
    for (auto& [rank, list] : per_rank) {
      std::sort(list.begin(), list.end());
      int64_t sum = 0;
      for (int64_t d : list) sum += d;
      k.total_ns += sum;
      const int64_t mean = sum / static_cast<int64_t>(list.size());
      k.rows.push_back({new_index[rank], list.size(), mean, NearestRankPercentile(list, 50)});
      slowest = std::max(slowest, mean);
      fastest = std::min(fastest, mean);
    }
    std::sort(k.rows.begin(), k.rows.end(), [](const RankKernelRow& a, const RankKernelRow& b) { return a.rank < b.rank; });
    k.spread = fastest > 0 ? static_cast<double>(slowest) / static_cast<double>(fastest) : 1.0;
    out.kernels.push_back(std::move(k));
  }
  // Display names: any activity's demangled name for the system name.
  std::map<std::string, std::string> display;
  for (const storage::GpuActivity& a : activities.activities) {
    if (a.kind == storage::GpuActivityKind::kKernel) display.emplace(activities.names[a.system_name], activities.names[a.name]);
  }
  for (RankKernel& k : out.kernels) {
    const std::string& name = display[k.system_name];
    k.name = name.empty() ? k.system_name : name;
  }
  std::sort(out.kernels.begin(), out.kernels.end(), [](const RankKernel& a, const RankKernel& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.system_name < b.system_name;
  });
  if (out.kernels.size() > options.max_kernels) out.kernels.resize(options.max_kernels);
  return out;
}

std::string RenderRanksJson(const RankComparison& c, int64_t from_ns, int64_t to_ns) {
  using nlohmann::json;
  json ranks = json::array();
  for (const RankStats& r : c.ranks) {
    ranks.push_back({{"node", r.rank.node},
                     {"pid", r.rank.pid},
                     {"comm", r.rank.comm},
                     {"device", r.rank.device},
                     {"kernels", r.kernels},
                     {"gpu_ns", r.gpu_ns},
                     {"communication_ns", r.communication_ns},
                     {"straggler_steps", r.straggler_steps},
                     {"caused_wait_ns", r.caused_wait_ns}});
  }
  json kernels = json::array();
  for (const RankKernel& k : c.kernels) {
    json rows = json::array();
    for (const RankKernelRow& row : k.rows) {
      rows.push_back({{"rank", row.rank}, {"launches", row.launches}, {"mean_ns", row.mean_ns}, {"p50_ns", row.p50_ns}});
    }
    kernels.push_back({{"name", k.name},
                       {"system_name", k.system_name},
                       {"total_ns", k.total_ns},
                       {"spread", k.spread},
                       {"ranks", std::move(rows)}});
  }
  json steps = json::array();
  for (const RankStep& s : c.steps) {
    steps.push_back({{"end_ns", s.end_ns}, {"straggler", s.straggler}, {"wait_ns", s.wait_ns}, {"ranks", s.ranks}});
  }
  return DumpJson({{"from_ns", from_ns},
                   {"to_ns", to_ns},
                   {"ranks", std::move(ranks)},
                   {"straggler", c.straggler < 0 ? json(nullptr) : json(c.straggler)},
                   {"kernels", std::move(kernels)},
                   {"steps", std::move(steps)}});
}

}  // namespace warpscope::query
