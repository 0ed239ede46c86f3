#include "query/gpu_kernel_source.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "query/insight_support.h"
#include "query/json_text.h"

namespace warpscope::query {

namespace {

constexpr std::string_view kStallPrefix = "smsp__pcsamp_warps_issue_stalled_";
constexpr std::string_view kNotIssued = "_not_issued";

// Nsight Compute's grouping of the warp states: waiting on the memory
// system, on a math pipe or a fixed-latency dependency, on other warps.
const std::pair<std::string_view, StallClass> kClasses[] = {
    {"long_scoreboard", StallClass::kMemory},  {"short_scoreboard", StallClass::kMemory},
    {"lg_throttle", StallClass::kMemory},      {"mio_throttle", StallClass::kMemory},
    {"tex_throttle", StallClass::kMemory},     {"imc_miss", StallClass::kMemory},
    {"drain", StallClass::kMemory},            {"math_pipe_throttle", StallClass::kCompute},
    {"wait", StallClass::kCompute},            {"dispatch_stall", StallClass::kCompute},
    {"math", StallClass::kCompute},            {"gmma", StallClass::kCompute},
    {"not_selected", StallClass::kCompute},    {"barrier", StallClass::kSync},
    {"membar", StallClass::kSync},             {"warpgroup_arrive", StallClass::kSync},
    {"sleeping", StallClass::kSync},           {"selected", StallClass::kIssuing},
};

bool IsKind(const storage::ResolvedFrame& f, warpscope::v1::FrameKind kind) { return f.kind == kind; }

// The frames of a gpu_pc stack leafward of its kernel (indexes into the
// profile's frames; -1 when absent).
struct Inside {
  int kernel = -1, line = -1, instruction = -1, stall = -1;
};

Inside Split(const storage::MergedProfile& p, const storage::StackValue& s) {
  Inside in;
  for (uint32_t f : s.frames) {  // leaf first
    const storage::ResolvedFrame& frame = p.frame(f);
    if (IsKind(frame, warpscope::v1::FRAME_KIND_GPU_STALL) && in.stall < 0) in.stall = static_cast<int>(f);
    else if (IsKind(frame, warpscope::v1::FRAME_KIND_GPU_INSTRUCTION) && in.instruction < 0) in.instruction = static_cast<int>(f);
    else if (IsKind(frame, warpscope::v1::FRAME_KIND_GPU_LINE) && in.line < 0) in.line = static_cast<int>(f);
    else if (IsKind(frame, warpscope::v1::FRAME_KIND_CUDA_KERNEL)) {
      in.kernel = static_cast<int>(f);
      break;
    }
  }
  return in;
}

const std::string& Name(const storage::ResolvedFrame& f) { return f.function_name.empty() ? f.system_name : f.function_name; }

// Calls fn(stack, its frames leafward of the kernel) for each sampled
// instruction of the kernel named `kernel` (mangled or display name).
template <typename Fn>
void ForEachInstructionOf(const storage::MergedProfile& p, std::string_view kernel, Fn fn) {
  for (const storage::StackValue& s : p.stacks) {
    const Inside in = Split(p, s);
    if (in.kernel < 0 || in.instruction < 0 || in.stall < 0) continue;
    const storage::ResolvedFrame& k = p.frame(in.kernel);
    if (k.system_name != kernel && k.function_name != kernel) continue;
    fn(s, in);
  }
}

void AddShare(KernelStalls* k, StallClass c, int64_t v) {
  const double d = static_cast<double>(v);
  switch (c) {
    case StallClass::kMemory: k->memory += d; break;
    case StallClass::kCompute: k->compute += d; break;
    case StallClass::kSync: k->sync += d; break;
    case StallClass::kIssuing: k->issuing += d; break;
    case StallClass::kOther: k->other += d; break;
  }
}

}  // namespace

StallClass ClassifyStall(std::string_view name) {
  if (name.substr(0, kStallPrefix.size()) == kStallPrefix) name.remove_prefix(kStallPrefix.size());
  if (name.size() > kNotIssued.size() && name.substr(name.size() - kNotIssued.size()) == kNotIssued) {
    name.remove_suffix(kNotIssued.size());
  }
  for (const auto& [reason, c] : kClasses) {
    if (name == reason) return c;
  }
  return StallClass::kOther;
}

const char* StallClassName(StallClass c) {
  switch (c) {
    case StallClass::kMemory: return "memory";
    case StallClass::kCompute: return "compute";
    case StallClass::kSync: return "sync";
    case StallClass::kIssuing: return "issuing";
    case StallClass::kOther: break;
  }
  return "other";
}

std::vector<KernelStalls> KernelStallShares(const storage::MergedProfile& p) {
  std::map<std::string, KernelStalls> by_kernel;  // by system name
  for (const storage::StackValue& s : p.stacks) {
    const Inside in = Split(p, s);
    if (in.kernel < 0 || in.stall < 0) continue;
    const storage::ResolvedFrame& kernel = p.frame(in.kernel);
    KernelStalls& k = by_kernel[kernel.system_name];
    k.kernel = Name(kernel);
    k.system_name = kernel.system_name;
    k.value += s.value;
    AddShare(&k, ClassifyStall(p.frame(in.stall).system_name), s.value);
  }
  std::vector<KernelStalls> out;
  for (auto& [name, k] : by_kernel) {
    const double total = std::max<double>(static_cast<double>(k.value), 1);
    k.memory /= total;
    k.compute /= total;
    k.sync /= total;
    k.issuing /= total;
    k.other /= total;
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelStalls& a, const KernelStalls& b) { return a.value > b.value; });
  return out;
}

std::vector<Insight> FindMemoryBoundKernels(const storage::MergedProfile& p, const InsightInputs& in,
                                            const InsightOptions& o, const std::string& selector) {
  using insight_support::Percent;
  std::vector<Insight> out;
  const std::vector<KernelStalls> kernels = KernelStallShares(p);
  int64_t total = 0;
  for (const KernelStalls& k : kernels) total += k.value;
  for (const KernelStalls& k : kernels) {
    const double share = static_cast<double>(k.value) / static_cast<double>(total);
    if (share < o.memory_bound_kernel_share || k.memory < o.memory_bound_stall_share) continue;
    Insight x;
    x.kind = "memory_bound";
    x.target = {{"kernel", k.kernel}};
    // A hint with no saving estimated: low by the one severity rule, however
    // large the kernel's share of the cycles (that share is a number below).
    insight_support::SetSaving(0, static_cast<double>(in.to_ns - in.from_ns) / insight_support::kNsPerSecond, &x);
    // Samples: cycles over the smallest sampling period's (2^5); only the
    // order of magnitude matters for the wording.
    x.confidence = k.value >= (int64_t{10000} << 5) ? "high" : k.value >= (int64_t{1000} << 5) ? "medium" : "low";
    x.confidence_reason = "from PC samples inside the kernel (" + Percent(share) +
                          " of the range's sampled GPU cycles); the saving is not estimated (it depends on the kernel)";
    x.summary = k.kernel + " spent " + Percent(k.memory) + " of its sampled cycles with warps waiting on memory (" +
                Percent(k.compute) + " on math, " + Percent(k.sync) + " on synchronisation): it is memory bound.";
    x.fix = "Read each byte fewer times: fuse it with the kernels around it (torch.compile), coalesce its loads, use "
            "shared memory or lower precision for what it streams, and give it more work per byte (a larger batch).";
    x.fix_reason = "Its warps wait for loads, not for math: a faster math path does not help, fewer or wider memory "
                   "accesses do. The kernel's source view shows which instructions and lines wait.";
    x.ranges = {{in.from_ns, in.to_ns}};
    x.numbers = {{"memory_stall_share", k.memory}, {"compute_stall_share", k.compute}, {"sync_stall_share", k.sync},
                 {"kernel_share", share}};
    x.kernels = {{k.kernel, "[cuda kernel]", 4, k.value, share}};
    x.evidence_type = "gpu_pc";
    x.evidence_selector = selector;
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<std::string> KernelCubinHashes(const storage::MergedProfile& p, std::string_view kernel) {
  std::set<std::string> hashes;
  ForEachInstructionOf(p, kernel, [&](const storage::StackValue&, const Inside& in) {
    const std::string& hash = p.frame(in.instruction).build_id;
    if (!hash.empty()) hashes.insert(hash);
  });
  return {hashes.begin(), hashes.end()};
}

StatusOr<std::string> RenderKernelSourceJson(const storage::MergedProfile& p, std::string_view kernel,
                                             const std::vector<KernelCubin>& cubins) {
  // Stall reasons by CUPTI name, with their totals.
  std::map<std::string, std::pair<std::string, int64_t>> stalls;  // cupti name -> (words, value)
  struct Instruction {
    std::string text;
    int64_t value = 0;
    std::map<std::string, int64_t> by_stall;
  };
  struct Line {
    std::string file, function;
    int64_t line = 0;
    int64_t value = 0;
    std::map<uint64_t, Instruction> instructions;  // by offset
  };
  std::map<std::tuple<std::string, int64_t, std::string>, Line> lines;  // (file, line, inlined function)
  std::string display, system;
  int64_t total = 0;
  bool sass = false;
  ForEachInstructionOf(p, kernel, [&](const storage::StackValue& s, const Inside& in) {
    const storage::ResolvedFrame& k = p.frame(in.kernel);
    display = Name(k);
    system = k.system_name;
    total += s.value;
    const storage::ResolvedFrame& stall = p.frame(in.stall);
    auto& st = stalls[stall.system_name];
    st.first = stall.function_name;
    st.second += s.value;
    std::tuple<std::string, int64_t, std::string> key{"", 0, ""};
    if (in.line >= 0) {
      const storage::ResolvedFrame& l = p.frame(in.line);
      key = {l.file, l.line, l.system_name};
    }
    Line& line = lines[key];
    line.file = std::get<0>(key);
    line.line = std::get<1>(key);
    line.function = std::get<2>(key);
    line.value += s.value;
    const storage::ResolvedFrame& inst = p.frame(in.instruction);
    Instruction& i = line.instructions[inst.address];
    // "0x01a0 LDG.E ..." (the offset alone without a disassembler).
    const std::string& name = inst.function_name;
    const size_t space = name.find(' ');
    if (space != std::string::npos) {
      i.text = name.substr(space + 1);
      sass = true;
    }
    i.value += s.value;
    i.by_stall[stall.system_name] += s.value;
  });
  if (total == 0) return NotFoundError("no gpu_pc samples in kernel '" + std::string(kernel) + "' in this range");

  nlohmann::json j;
  j["kernel"] = display;
  j["system_name"] = system;
  j["total"] = total;
  j["sass"] = sass;
  // Stall reasons, the most sampled first; instructions refer to them by index.
  std::vector<std::pair<std::string, std::pair<std::string, int64_t>>> ordered(stalls.begin(), stalls.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::unordered_map<std::string, size_t> index;
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& [cupti, words_value] : ordered) {
    index[cupti] = reasons.size();
    reasons.push_back({{"name", words_value.first},
                       {"cupti_name", cupti},
                       {"class", StallClassName(ClassifyStall(cupti))},
                       {"value", words_value.second}});
  }
  j["stalls"] = std::move(reasons);
  // Lines in the order of their first instruction; instructions in order.
  std::vector<const Line*> by_offset;
  for (const auto& [key, line] : lines) by_offset.push_back(&line);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Line* a, const Line* b) {
    return a->instructions.begin()->first < b->instructions.begin()->first;
  });
  nlohmann::json out_lines = nlohmann::json::array();
  for (const Line* line : by_offset) {
    nlohmann::json instructions = nlohmann::json::array();
    for (const auto& [offset, i] : line->instructions) {
      nlohmann::json by = nlohmann::json::array();
      for (const auto& [cupti, v] : i.by_stall) by.push_back({index.at(cupti), v});
      instructions.push_back({{"offset", offset}, {"text", i.text}, {"value", i.value}, {"stalls", std::move(by)}});
    }
    out_lines.push_back({{"file", line->file},
                         {"line", line->line},
                         {"function", line->function},
                         {"value", line->value},
                         {"instructions", std::move(instructions)}});
  }
  j["lines"] = std::move(out_lines);
  // The kernel's cycles by stall class, from its reasons.
  KernelStalls shares;
  for (const auto& [cupti, words_value] : stalls) AddShare(&shares, ClassifyStall(cupti), words_value.second);
  const double t = static_cast<double>(total);
  j["shares"] = {{"memory", shares.memory / t}, {"compute", shares.compute / t}, {"sync", shares.sync / t},
                 {"issuing", shares.issuing / t}, {"other", shares.other / t}};
  nlohmann::json out_cubins = nlohmann::json::array();
  for (const KernelCubin& c : cubins) out_cubins.push_back({{"hash", c.hash}, {"stored", c.stored}, {"bytes", c.bytes}});
  j["cubins"] = std::move(out_cubins);
  return DumpJson(j);
}

}  // namespace warpscope::query
