#include "agent/collectors/gpu_time/gpu_pc_profile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "model/cubin_hash.h"

namespace warpscope::gpu {
namespace {

std::shared_ptr<const InternedKernelName> Name(uint64_t key, const std::string& system_name,
                                               const std::string& name) {
  auto n = std::make_shared<InternedKernelName>();
  n->key = key;
  n->text.system_name = system_name;
  n->text.name = name;
  return n;
}

CudaPcSample Sample(const std::shared_ptr<const InternedKernelName>& function,
                    const std::shared_ptr<const InternedKernelName>& stall, uint64_t pc, uint32_t samples) {
  CudaPcSample s;
  s.record.cubin_crc = 0xc0b;
  s.record.pc_offset = pc;
  s.record.samples = samples;
  s.record.device_id = 1;
  s.function = function;
  s.stall_reason = stall;
  return s;
}

// Folded stacks of a profile, root first, with values.
std::map<std::string, int64_t> Folded(const Profile& p) {
  std::map<std::string, int64_t> out;
  for (const ProfileSample& s : p.samples) {
    std::string stack;
    for (auto it = s.location_ids.rbegin(); it != s.location_ids.rend(); ++it) {
      const ProfileLocation& loc = p.location(*it);
      stack += (stack.empty() ? "" : ";") + p.function(loc.lines.front().function_id).name;
    }
    out[stack + " tid=" + std::to_string(s.labels.tid)] += s.count;
  }
  return out;
}

TEST(StallReasonWordsTest, KnownNotIssuedAndUnknownReasons) {
  EXPECT_EQ(StallReasonWords("smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
            "waiting for global or local memory (long scoreboard)");
  EXPECT_EQ(StallReasonWords("smsp__pcsamp_warps_issue_stalled_barrier_not_issued"),
            "waiting at a block barrier (__syncthreads), not issued");
  EXPECT_EQ(StallReasonWords("smsp__pcsamp_warps_issue_stalled_brand_new_reason"), "brand new reason");
  EXPECT_EQ(StallReasonWords("something_else"), "something else");
}

class GpuPcAggregatorTest : public ::testing::Test {
 protected:
  GpuPcAggregator::Context Context(ProfileBuilder* builder, int64_t now_ns, bool final = false) {
    stacks_.clear();  // location ids are the builder's
    GpuPcAggregator::Context c;
    c.stack = [this, builder](uint64_t key) -> const std::vector<uint64_t>& {
      auto [it, inserted] = stacks_.try_emplace(key);
      if (inserted) {
        const uint64_t fn = builder->InternFunction("site" + std::to_string(key), "site" + std::to_string(key));
        it->second.push_back(builder->InternLocation(0, 0x1000 + key, FrameKind::kNative, {{fn, 0}}));
      }
      return it->second;
    };
    c.labels = [](uint32_t pid, uint32_t tid) {
      SampleLabels l;
      l.pid = pid;
      l.tid = tid;
      return l;
    };
    c.period_log2 = 4;
    c.now_ns = now_ns;
    c.delay_ns = 3'000;
    c.final = final;
    return c;
  }

  std::map<uint64_t, std::vector<uint64_t>> stacks_;
  const std::shared_ptr<const InternedKernelName> kernel_ = Name(10, "_Z6kernelv", "kernel()");
  const std::shared_ptr<const InternedKernelName> other_ = Name(11, "_Z5otherv", "other()");
  const std::shared_ptr<const InternedKernelName> stall_ =
      Name(20, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle", "");
};

// A kernel's samples, as cycles (samples << period), spread over its launch
// stacks by their GPU time; a kernel never seen with GPU time goes under
// "[launch not recorded]"; the instruction is an offset without its cubin.
TEST_F(GpuPcAggregatorTest, SamplesAreSplitByGpuTimeAfterTheDelay) {
  GpuPcAggregator pc;
  pc.Add(1, Sample(kernel_, stall_, 0x40, 5), 1'000, 2'000'000'000);
  pc.Add(2, Sample(other_, stall_, 0x10, 1), 1'000, 2'000'000'000);
  pc.AddGpuTime(1, "_Z6kernelv", 7, 70, 200);
  pc.AddGpuTime(1, "_Z6kernelv", 8, 80, 100);
  pc.AddGpuTime(1, "_Z6kernelv", 7, 70, 100);  // the same stack again: 300 in all
  {
    ProfileBuilder early(0, 0, 0);
    pc.Finish(Context(&early, 2'000), &early);
    EXPECT_TRUE(early.Finish(0).samples.empty()) << "younger than the delay";
  }
  ProfileBuilder builder(0, 0, 0);
  pc.Finish(Context(&builder, 4'000), &builder);  // the split seen before still holds
  const Profile p = builder.Finish(0);
  const std::map<std::string, int64_t> got = Folded(p);
  const std::string inside = "0x0040;math pipe busy (compute bound)";
  EXPECT_EQ(got.at("site7;kernel();" + inside + " tid=70"), 60);
  EXPECT_EQ(got.at("site8;kernel();" + inside + " tid=80"), 20);
  EXPECT_EQ(got.at("[launch not recorded];other();0x0010;math pipe busy (compute bound) tid=0"), 16);
  EXPECT_EQ(got.size(), 3u);
  for (const ProfileSample& s : p.samples) {
    ASSERT_EQ(s.labels.extra.size(), 1u);
    EXPECT_EQ(s.labels.extra[0], (std::pair<std::string, std::string>{"device", "1"}));
    EXPECT_EQ(s.time_nanos, 2'000'000'000);
    EXPECT_EQ(p.location(s.location_ids[0]).kind, FrameKind::kGpuStall);
    EXPECT_EQ(p.location(s.location_ids[1]).kind, FrameKind::kGpuInstruction);
    EXPECT_EQ(p.location(s.location_ids[2]).kind, FrameKind::kCudaKernel);
  }
  EXPECT_EQ(pc.stats().samples, 6u);
  EXPECT_EQ(pc.stats().samples_unjoined, 1u);
  EXPECT_EQ(pc.stats().instructions_unknown, 2u);

  // The last window takes everything, however young.
  pc.Add(1, Sample(kernel_, stall_, 0x40, 1), 10'000, 3'000'000'000);
  ProfileBuilder last(0, 0, 0);
  pc.Finish(Context(&last, 10'001, /*final=*/true), &last);
  int64_t total = 0;
  for (const auto& [stack, v] : Folded(last.Finish(0))) total += v;
  EXPECT_EQ(total, 16);
}

// Each instruction names its cubin: a mapping whose build id is the cubin's
// content hash. Offsets count from each kernel's start, so two kernels'
// instructions at one offset of one cubin stay apart.
TEST_F(GpuPcAggregatorTest, InstructionsPointAtTheirCubinByHash) {
  CubinSymbolsOptions options;
  options.sass = CubinSymbolsOptions::Sass::kDisabled;
  CubinLibrary cubins(1 << 20, options);
  const auto bytes = std::make_shared<const std::string>("not really a cubin");
  cubins.Add(0xc0b, bytes);
  cubins.Add(0xc0b, bytes);  // another process loads it too
  cubins.NoteSampled(0xc0b, "_Z6kernelv");
  ASSERT_TRUE(cubins.WaitIdle(5000));
  EXPECT_TRUE(cubins.TakeAdded().empty()) << "not an ELF: never uploaded";
  EXPECT_EQ(cubins.HashOf(0xc0b), CubinHash(*bytes));
  EXPECT_EQ(cubins.HashOf(0xbad), "");

  GpuPcAggregator pc;
  pc.Add(1, Sample(kernel_, stall_, 0x40, 1), 1'000, 2'000'000'000);
  pc.Add(1, Sample(other_, stall_, 0x40, 2), 1'000, 2'000'000'000);
  ProfileBuilder builder(0, 0, 0);
  GpuPcAggregator::Context context = Context(&builder, 4'000);
  context.cubins = &cubins;
  pc.Finish(context, &builder);
  const Profile p = builder.Finish(0);
  std::map<std::string, int64_t> by_instruction;
  for (const ProfileSample& s : p.samples) {
    const ProfileLocation& inst = p.location(s.location_ids[1]);
    ASSERT_EQ(inst.kind, FrameKind::kGpuInstruction);
    EXPECT_EQ(inst.address, 0x40u);
    ASSERT_NE(inst.mapping_id, 0u);
    EXPECT_EQ(p.mapping(inst.mapping_id).build_id, CubinHash(*bytes));
    EXPECT_EQ(p.mapping(inst.mapping_id).filename, kCubinMappingName);
    by_instruction[p.function(inst.lines.front().function_id).system_name] += s.count;
  }
  EXPECT_EQ(by_instruction, (std::map<std::string, int64_t>{{"_Z6kernelv+0x0040", 16}, {"_Z5otherv+0x0040", 32}}));
}

TEST_F(GpuPcAggregatorTest, DistinctKeysAreBoundedAndCounted) {
  GpuPcAggregator pc(2);
  for (uint64_t pcoff = 0; pcoff < 5; ++pcoff) pc.Add(1, Sample(kernel_, stall_, pcoff * 16, 3), 0, 0);
  EXPECT_EQ(pc.stats().samples, 15u);
  EXPECT_EQ(pc.stats().samples_dropped, 9u);
}

std::shared_ptr<const std::string> RealCubin() {
  std::ifstream in(WS_PC_CUBIN, std::ios::binary);
  return std::make_shared<const std::string>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Any local user can send cubins. One is uploaded only once it parsed as a
// CUDA ELF holding a function PC samples named; the bytes go a window after
// the last process that sent it disconnected; one user holds at most its
// share of the budget. Before, every cubin was uploaded as it came (475 of
// 500 garbage ones reached the server) and kept until the agent exited
// (532 MB pinned by one user, still held after the process had gone).
TEST(CubinLibrary, UploadsOnlySampledElfAndFreesWhatNoProcessHolds) {
  CubinSymbolsOptions options;
  options.sass = CubinSymbolsOptions::Sass::kDisabled;
  CubinLibrary cubins(1 << 30, options, /*max_bytes_per_uid=*/1 << 20);
  const auto real = RealCubin();
  ASSERT_GT(real->size(), 64u);
  const auto garbage = std::make_shared<const std::string>(std::string(4096, 'x'));
  constexpr uint32_t kUser = 1001;
  cubins.Add(1, real, /*connection=*/10, kUser);
  cubins.Add(2, garbage, /*connection=*/10, kUser);
  ASSERT_TRUE(cubins.WaitIdle(10000));
  // Parsed (or found not to parse), both wait in the spill file, not in memory.
  EXPECT_EQ(cubins.stats().memory_bytes, 0u);
  EXPECT_EQ(cubins.stats().bytes, real->size() + garbage->size());
  EXPECT_TRUE(cubins.TakeAdded().empty()) << "no PC sample named a function yet";
  cubins.NoteSampled(2, "_ZN4demo5scaleEPfPKffi");
  cubins.NoteSampled(1, "_Z12not_in_theremv");
  EXPECT_TRUE(cubins.TakeAdded().empty()) << "garbage, and a function the cubin lacks";
  cubins.NoteSampled(1, "_ZN4demo5scaleEPfPKffi");
  const std::vector<WindowCubin> added = cubins.TakeAdded();
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].hash, CubinHash(*real));
  ASSERT_NE(added[0].bytes, nullptr);
  EXPECT_EQ(*added[0].bytes, *real) << "read back whole from the spill file";
  EXPECT_TRUE(cubins.TakeAdded().empty()) << "once";

  // The per-user share: a second megabyte of the same user is refused,
  // root's is not.
  const auto big = std::make_shared<const std::string>(std::string(1 << 20, 'y'));
  cubins.Add(3, big, 11, kUser);
  EXPECT_EQ(cubins.HashOf(3), "");
  EXPECT_EQ(cubins.stats().refused_per_uid, 1u);
  cubins.Add(4, big, 12, /*uid=*/0);
  EXPECT_NE(cubins.HashOf(4), "");

  // Held while a connection that sent it is open; freed at the first window
  // end kKeepAfterReleaseNs after the last one closed.
  constexpr int64_t kKeep = CubinLibrary::kKeepAfterReleaseNs;
  const int64_t t = 1'000'000'000'000;
  cubins.Add(1, real, /*connection=*/13, kUser);  // another process of the same cubin
  cubins.Release(10, t);
  cubins.EndWindow(t + kKeep);
  EXPECT_NE(cubins.HashOf(1), "") << "connection 13 still holds it";
  EXPECT_EQ(cubins.HashOf(2), "") << "only connection 10 held it";
  cubins.Release(13, t + kKeep);
  cubins.EndWindow(t + kKeep + kKeep / 2);
  EXPECT_NE(cubins.HashOf(1), "") << "its last seconds' PC samples may still need it";
  EXPECT_NE(cubins.Find(1), nullptr);
  cubins.EndWindow(t + 2 * kKeep);
  EXPECT_EQ(cubins.HashOf(1), "");
  EXPECT_EQ(cubins.Find(1), nullptr);
  const CubinLibraryStats s = cubins.stats();
  EXPECT_EQ(s.cubins, 1u);  // root's
  EXPECT_EQ(s.bytes, big->size());
  EXPECT_EQ(s.released, 2u);
  EXPECT_EQ(s.not_uploaded, 1u);
  // The user's share is free again.
  cubins.Add(5, big, 14, kUser);
  EXPECT_NE(cubins.HashOf(5), "");
}

// The parsed tables stay within their budget: past it the least recently
// asked for is dropped, and a PC sample asking for it has it parsed again
// from the spill file.
TEST(CubinLibrary, ParsedTablesPastTheBudgetAreDroppedAndParsedAgainWhenAskedFor) {
  CubinSymbolsOptions options;
  options.sass = CubinSymbolsOptions::Sass::kDisabled;
  const auto real = RealCubin();
  CubinLibrary cubins(1 << 30, options, 0, /*max_parsed_bytes=*/1);  // room for one table at a time
  cubins.Add(1, real, 10, 0);
  ASSERT_TRUE(cubins.WaitIdle(10000));
  ASSERT_NE(cubins.Find(1), nullptr);
  cubins.Add(2, real, 10, 0);  // the same bytes under another CRC: a second table
  ASSERT_TRUE(cubins.WaitIdle(10000));
  EXPECT_NE(cubins.Find(2), nullptr);
  EXPECT_EQ(cubins.stats().parsed_evicted, 1u);
  EXPECT_EQ(cubins.Find(1), nullptr) << "dropped for the budget; queued to be parsed again";
  ASSERT_TRUE(cubins.WaitIdle(10000));
  const std::shared_ptr<const CubinSymbols> again = cubins.Find(1);
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again->FindFunction("_ZN4demo5scaleEPfPKffi"), nullptr);
  EXPECT_EQ(cubins.stats().parsed_evicted, 2u);  // 2 went to make room
  EXPECT_EQ(cubins.stats().parsed, 3u);
  EXPECT_EQ(cubins.stats().parsed_bytes, again->MemoryBytes());
}

}  // namespace
}  // namespace warpscope::gpu
