// Helpers the insight finders share (query/insights.cc,
// query/gpu_activity_insights.cc): labels, steps, ranges and wording.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "query/insights.h"

namespace warpscope::query::insight_support {

using storage::Labels;

constexpr double kNsPerSecond = 1e9;

inline std::string LabelOf(const Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "";
}

inline Labels Pick(const Labels& labels, std::initializer_list<const char*> names) {
  Labels out;
  for (const char* name : names) {
    const std::string v = LabelOf(labels, name);
    if (!v.empty()) out.emplace_back(name, v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A Prometheus-style selector of exactly these labels.
inline std::string SelectorOf(const Labels& labels) {
  std::string s = "{";
  for (const auto& [k, v] : labels) {
    if (s.size() > 1) s += ",";
    s += k + "=\"";
    for (char c : v) {
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    s += "\"";
  }
  return s + "}";
}

inline size_t StepIndex(const InsightInputs& in, int64_t t) { return static_cast<size_t>((t - in.from_ns) / in.step_ns); }

inline size_t StepCount(const InsightInputs& in) {
  return static_cast<size_t>((in.to_ns - in.from_ns + in.step_ns - 1) / in.step_ns);
}

// The length of step i (the last one may be cut by the range's end).
inline int64_t StepLength(const InsightInputs& in, size_t i) {
  const int64_t start = in.from_ns + static_cast<int64_t>(i) * in.step_ns;
  return std::min(in.step_ns, in.to_ns - start);
}

// Consecutive flagged steps as time ranges, longest first, at most 20.
inline std::vector<InsightRange> Ranges(const InsightInputs& in, const std::vector<bool>& flagged) {
  std::vector<InsightRange> out;
  for (size_t i = 0; i < flagged.size(); ++i) {
    if (!flagged[i]) continue;
    const int64_t start = in.from_ns + static_cast<int64_t>(i) * in.step_ns;
    const int64_t end = start + StepLength(in, i);
    if (!out.empty() && out.back().to_ns == start) {
      out.back().to_ns = end;
    } else {
      out.push_back({start, end});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const InsightRange& a, const InsightRange& b) {
    return a.to_ns - a.from_ns > b.to_ns - b.from_ns;
  });
  if (out.size() > 20) out.resize(20);
  return out;
}

inline std::string Severity(double share) { return share >= 0.25 ? "high" : share >= 0.10 ? "medium" : "low"; }

inline std::string Confidence(size_t steps) { return steps >= 12 ? "high" : steps >= 4 ? "medium" : "low"; }

inline std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 10 ? "%.0f s" : "%.1f s", s);
  return buf;
}

// "python3 (pid 42)", or "pid 42" without a name.
inline std::string ProcessName(const std::string& comm, const std::string& pid) {
  return comm.empty() ? "pid " + pid : comm + " (pid " + pid + ")";
}

inline std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
  return buf;
}


}  // namespace warpscope::query::insight_support
