#include "model/formats/top_functions.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <utility>

#include "model/frame_names.h"

namespace warpscope {

namespace {

// Long C++ names would push the binary column off screen; the full names are
// in the pprof file.
constexpr size_t kMaxFunctionColumn = 72;

struct AllFunctionCosts {
  std::vector<FunctionCost> costs;
  int64_t total_samples = 0;
};

AllFunctionCosts ComputeAllCosts(const Profile& profile) {
  AllFunctionCosts result;
  std::map<std::pair<std::string, std::string>, size_t> index;
  // Per location: the cost rows of its frames, innermost first (lazily filled).
  std::vector<std::vector<size_t>> location_rows(profile.locations.size());
  std::vector<bool> location_ready(profile.locations.size(), false);
  auto rows_of = [&](uint64_t location_id) -> const std::vector<size_t>& {
    const size_t i = location_id - 1;
    if (!location_ready[i]) {
      const ProfileLocation& location = profile.location(location_id);
      std::string binary = FrameBinary(profile, location);
      for (std::string& name : FrameNamesInnermostFirst(profile, location)) {
        auto [it, inserted] = index.try_emplace(std::make_pair(name, binary), result.costs.size());
        if (inserted) result.costs.push_back(FunctionCost{std::move(name), binary, 0, 0});
        location_rows[i].push_back(it->second);
      }
      location_ready[i] = true;
    }
    return location_rows[i];
  };

  std::vector<size_t> seen;  // rows in the current stack, to count recursion once
  for (const ProfileSample& sample : profile.samples) {
    result.total_samples += sample.count;
    seen.clear();
    bool leaf = true;
    for (uint64_t id : sample.location_ids) {
      if (id == 0 || id > profile.locations.size()) continue;
      const std::vector<size_t>& rows = rows_of(id);
      if (leaf && !rows.empty()) result.costs[rows.front()].self += sample.count;
      leaf = false;
      seen.insert(seen.end(), rows.begin(), rows.end());
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (size_t row : seen) result.costs[row].total += sample.count;
  }
  return result;
}

void SortAndTruncate(std::vector<FunctionCost>* costs, size_t n) {
  auto by_self = [](const FunctionCost& a, const FunctionCost& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.name != b.name) return a.name < b.name;
    return a.binary < b.binary;
  };
  if (costs->size() > n) {
    std::partial_sort(costs->begin(), costs->begin() + static_cast<std::ptrdiff_t>(n), costs->end(), by_self);
    costs->resize(n);
  } else {
    std::sort(costs->begin(), costs->end(), by_self);
  }
}

// 1234567 -> "1,234,567"
std::string WithThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

std::string HumanDuration(int64_t nanos) {
  char buf[32];
  const double seconds = static_cast<double>(nanos) / 1e9;
  if (seconds >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  } else if (seconds >= 1) {
    std::snprintf(buf, sizeof(buf), "%.1fs", seconds);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0fms", seconds * 1e3);
  }
  return buf;
}

// Cuts at kMaxFunctionColumn on a UTF-8 character boundary, marking the cut.
std::string FitFunctionName(const std::string& name) {
  if (name.size() <= kMaxFunctionColumn) return name;
  size_t cut = kMaxFunctionColumn - 3;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return name.substr(0, cut) + "...";
}

double Percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

std::vector<FunctionCost> TopFunctions(const Profile& profile, size_t n) {
  std::vector<FunctionCost> costs = ComputeAllCosts(profile).costs;
  SortAndTruncate(&costs, n);
  return costs;
}

std::string FormatTopFunctions(const Profile& profile, size_t n) {
  AllFunctionCosts all = ComputeAllCosts(profile);
  const size_t function_count = all.costs.size();
  if (all.total_samples <= 0) {
    return "No samples were recorded in " + HumanDuration(profile.duration_nanos) + ".\n";
  }
  SortAndTruncate(&all.costs, n);

  int64_t cpu_nanos = 0;
  for (const ProfileSample& sample : profile.samples) cpu_nanos += sample.cpu_nanos;

  std::string out = WithThousands(all.total_samples) + (all.total_samples == 1 ? " sample" : " samples") +
                    " over " + HumanDuration(profile.duration_nanos);
  if (profile.frequency_hz > 0) out += " at " + std::to_string(profile.frequency_hz) + " Hz";
  if (cpu_nanos > 0) out += " (" + HumanDuration(cpu_nanos) + " of CPU time)";
  out += ". Top " + std::to_string(all.costs.size());
  if (all.costs.size() < function_count) out += " of " + WithThousands(static_cast<int64_t>(function_count));
  out += all.costs.size() == 1 ? " function by self time:\n" : " functions by self time:\n";

  std::vector<std::string> names;
  size_t width = std::string("FUNCTION").size();
  for (const FunctionCost& cost : all.costs) {
    names.push_back(FitFunctionName(cost.name));
    width = std::max(width, names.back().size());
  }

  char line[256];
  std::snprintf(line, sizeof(line), "%9s  %8s  %9s  ", "SELF%", "TOTAL%", "SAMPLES");
  out += line;
  out += "FUNCTION" + std::string(width - 8, ' ') + "  [binary]\n";
  for (size_t i = 0; i < all.costs.size(); ++i) {
    const FunctionCost& cost = all.costs[i];
    std::snprintf(line, sizeof(line), "%8.2f%%  %7.2f%%  %9s  ", Percent(cost.self, all.total_samples),
                  Percent(cost.total, all.total_samples), WithThousands(cost.self).c_str());
    out += line;
    out += names[i];
    if (!cost.binary.empty()) {
      out += std::string(width - names[i].size(), ' ');
      // "[kernel.kallsyms]" is already bracketed.
      std::string base = BinaryBasename(cost.binary);
      if (base.empty()) base = cost.binary;
      out += base.front() == '[' ? "  " + base : "  [" + base + "]";
    }
    out += '\n';
  }
  return out;
}

}  // namespace warpscope
