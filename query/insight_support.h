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

// The one severity rule, for every kind (docs/design/insights.md): severity
// follows the GPU time an insight could save over the queried range, and
// nothing else. high: the saving is at least kHighSavingShare of the range's
// GPU-seconds of its target; medium: at least kMediumSavingShare; low
// otherwise. Below kMinSavingSeconds it is low whatever its share, so that
// an insight saving (next to) nothing is never ranked above low, even over a
// short range.
inline constexpr double kHighSavingShare = 0.25;
inline constexpr double kMediumSavingShare = 0.10;
inline constexpr double kMinSavingSeconds = 1.0;

inline std::string Severity(double saving_gpu_seconds, double saving_share) {
  if (saving_gpu_seconds < kMinSavingSeconds) return "low";
  return saving_share >= kHighSavingShare ? "high" : saving_share >= kMediumSavingShare ? "medium" : "low";
}

// Every finder states its saving through this: the GPU-seconds, their share
// of the range (`range_seconds` of the target's one GPU) and the severity
// that follows from them.
inline void SetSaving(double saving_gpu_seconds, double range_seconds, Insight* x) {
  x->saving_gpu_seconds = std::max(0.0, saving_gpu_seconds);
  x->saving_share = range_seconds > 0 ? x->saving_gpu_seconds / range_seconds : 0;
  x->severity = Severity(x->saving_gpu_seconds, x->saving_share);
}

// Which flagged steps an insight rests on. Problems come steady (a GPU
// underused most of the time) or in dips (a 25 s stall every few minutes,
// which is a small share of the steps but can be the largest saving of the
// range), so a flagged step counts when it belongs to a dip (a run of
// consecutive flagged steps) lasting at least min_duration_ns, or when the
// flagged steps are at least min_share of the `observed` steps. The insight
// needs min_duration_ns of counted steps in all. Returns the counted steps
// (all false when there is no insight) and their seconds in *counted_s.
inline std::vector<bool> CountedSteps(const InsightInputs& in, const InsightOptions& o,
                                      const std::vector<bool>& flagged, size_t observed, double* counted_s) {
  std::vector<bool> counted(flagged.size(), false);
  *counted_s = 0;
  int64_t counted_ns = 0;
  const size_t n = static_cast<size_t>(std::count(flagged.begin(), flagged.end(), true));
  if (n == 0 || observed == 0) return counted;
  const bool steady = static_cast<double>(n) / static_cast<double>(observed) >= o.min_share;
  for (size_t i = 0; i < flagged.size();) {
    if (!flagged[i]) {
      ++i;
      continue;
    }
    size_t end = i;
    int64_t dip_ns = 0;
    for (; end < flagged.size() && flagged[end]; ++end) dip_ns += StepLength(in, end);
    if (steady || dip_ns >= o.min_duration_ns) {
      for (size_t k = i; k < end; ++k) counted[k] = true;
      counted_ns += dip_ns;
    }
    i = end;
  }
  if (counted_ns < o.min_duration_ns) {
    counted.assign(flagged.size(), false);
    return counted;
  }
  *counted_s = static_cast<double>(counted_ns) / kNsPerSecond;
  return counted;
}

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
