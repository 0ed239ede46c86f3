#include "model/profile.h"

#include <gtest/gtest.h>

#include "tests/support/test_profile.h"

namespace warpscope {
namespace {

TEST(ProfileBuilderTest, InternsDenseOneBasedIds) {
  ProfileBuilder b(1, 10, 100);
  ProfileMapping m{0, 0x1000, 0x2000, 0, "/bin/a", "aa", false};
  EXPECT_EQ(b.InternMapping(m), 1u);
  EXPECT_EQ(b.InternMapping(m), 1u);
  m.build_id = "bb";  // any differing field makes a new mapping
  EXPECT_EQ(b.InternMapping(m), 2u);

  EXPECT_EQ(b.InternFunction("f", "_Z1fv", "a.cc"), 1u);
  EXPECT_EQ(b.InternFunction("f", "_Z1fv", "a.cc"), 1u);
  EXPECT_EQ(b.InternFunction("f", "_Z1fv"), 2u);
  EXPECT_EQ(b.InternFunction("g", "g"), 3u);

  EXPECT_FALSE(b.HasLocation(1, 0x1100, FrameKind::kNative));
  EXPECT_EQ(b.InternLocation(1, 0x1100, FrameKind::kNative, {{1, 5}}), 1u);
  EXPECT_TRUE(b.HasLocation(1, 0x1100, FrameKind::kNative));
  EXPECT_FALSE(b.HasLocation(1, 0x1100, FrameKind::kKernel));
  // Lines are only used on first insertion.
  EXPECT_EQ(b.InternLocation(1, 0x1100, FrameKind::kNative, {{3, 9}}), 1u);
  EXPECT_EQ(b.InternLocation(1, 0x1100, FrameKind::kKernel, {}), 2u);
  EXPECT_EQ(b.InternLocation(0, 0x1100, FrameKind::kNative, {}), 3u);

  const Profile p = b.Finish(5);
  ASSERT_EQ(p.mappings.size(), 2u);
  ASSERT_EQ(p.functions.size(), 3u);
  ASSERT_EQ(p.locations.size(), 3u);
  for (size_t i = 0; i < p.mappings.size(); ++i) EXPECT_EQ(p.mappings[i].id, i + 1);
  for (size_t i = 0; i < p.functions.size(); ++i) EXPECT_EQ(p.functions[i].id, i + 1);
  for (size_t i = 0; i < p.locations.size(); ++i) EXPECT_EQ(p.locations[i].id, i + 1);
  EXPECT_EQ(p.mapping(2).build_id, "bb");
  EXPECT_EQ(p.function(1).system_name, "_Z1fv");
  EXPECT_EQ(p.function(1).filename, "a.cc");
  EXPECT_EQ(p.function(2).filename, "");
  ASSERT_EQ(p.location(1).lines.size(), 1u);
  EXPECT_EQ(p.location(1).lines[0].function_id, 1u);
  EXPECT_EQ(p.location(1).lines[0].line, 5);
  EXPECT_EQ(p.location(2).kind, FrameKind::kKernel);
  EXPECT_EQ(p.location(3).mapping_id, 0u);
  EXPECT_EQ(p.time_nanos, 1);
  EXPECT_EQ(p.period_nanos, 10);
  EXPECT_EQ(p.frequency_hz, 100u);
  EXPECT_EQ(p.duration_nanos, 5);
}

// GPU instructions: an offset of one cubin belongs to each of its kernels,
// so the function is part of the key, also when a stack is copied.
TEST(ProfileBuilderTest, FunctionLocationsAtOneAddressStayApart) {
  ProfileBuilder b(0, 0, 0);
  const uint64_t cubin = b.InternMapping(ProfileMapping{0, 0, 0, 0, "cubin", "8e2b", false});
  const uint64_t k = b.InternFunction("0x0040", "k+0x0040"), j = b.InternFunction("0x0040", "j+0x0040");
  const uint64_t in_k = b.InternFunctionLocation(cubin, 0x40, FrameKind::kGpuInstruction, k);
  const uint64_t in_j = b.InternFunctionLocation(cubin, 0x40, FrameKind::kGpuInstruction, j);
  EXPECT_NE(in_k, in_j);
  EXPECT_EQ(b.InternFunctionLocation(cubin, 0x40, FrameKind::kGpuInstruction, k), in_k);
  b.AddSample({in_k}, 1, {});
  b.AddSample({in_j}, 2, {});
  const Profile src = b.Finish(0);
  ProfileBuilder to(0, 0, 0);
  const std::vector<uint64_t> ids = to.InternStack(src, {in_k, in_j});
  const Profile copied = to.Finish(0);
  ASSERT_EQ(copied.locations.size(), 2u);
  EXPECT_EQ(copied.function(copied.location(ids[1]).lines.front().function_id).system_name, "j+0x0040");
  EXPECT_EQ(copied.mapping(copied.location(ids[1]).mapping_id).build_id, "8e2b");
}

TEST(ProfileBuilderTest, MergesIdenticalSamplesOnly) {
  ProfileBuilder b(0, 10'000'000, 100);
  const uint64_t f = b.InternFunction("f", "f");
  const uint64_t l1 = b.InternLocation(0, 1, FrameKind::kNative, {{f, 0}});
  const uint64_t l2 = b.InternLocation(0, 2, FrameKind::kNative, {{f, 0}});
  const SampleLabels a{1, 1, "p", "t"};
  const SampleLabels other_tid{1, 2, "p", "t"};
  b.AddSample({l1, l2}, 2, a);
  b.AddSample({l2, l1}, 1, a);         // different order: a different stack
  b.AddSample({l1, l2}, 3, a);         // merged with the first
  b.AddSample({l1, l2}, 4, other_tid);  // different labels
  b.AddSample({l1, l2}, 0, a);         // nothing to add
  const Profile p = b.Finish(0);
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.samples[0].location_ids, (std::vector<uint64_t>{l1, l2}));
  EXPECT_EQ(p.samples[0].count, 5);
  EXPECT_EQ(p.samples[0].cpu_nanos, 50'000'000);
  EXPECT_EQ(p.samples[1].count, 1);
  EXPECT_EQ(p.samples[1].cpu_nanos, 10'000'000);
  EXPECT_EQ(p.samples[2].count, 4);
  EXPECT_EQ(p.samples[2].labels.tid, 2u);
}

// A stack of one profile interned into another keeps its frames (mapping,
// functions, Python and kernel frames); two values go where they are given.
TEST(ProfileBuilderTest, InternStackCopiesFramesAndAddValuesKeepsBoth) {
  ProfileBuilder from(0, 10'000'000, 100);
  const uint64_t m = from.InternMapping({0, 0x1000, 0x2000, 0, "/bin/app", "ab12", false});
  const uint64_t native = from.InternLocation(m, 0x1234, FrameKind::kNative, {{from.InternFunction("g", "_Z1gv"), 7}});
  const uint64_t py = from.InternSourceLocation(from.InternFunction("nap", "nap", "t.py"), 3, FrameKind::kPython);
  const uint64_t kernel = from.InternLocation(0, 0xffffffff81000000, FrameKind::kKernel,
                                              {{from.InternFunction("do_nanosleep", "do_nanosleep"), 0}});
  const Profile src = from.Finish(0);

  ProfileBuilder to(0, 0, 0);
  to.InternFunction("unrelated", "unrelated");  // ids differ from the source's
  const std::vector<uint64_t> ids = to.InternStack(src, {kernel, py, native});
  to.AddValues(ids, 5, 0, SampleLabels{1, 1, "p", "t"});
  to.AddValues(ids, 0, 7, SampleLabels{1, 1, "p", "t"});  // merged: both values kept
  to.AddValues(ids, 0, 0, SampleLabels{1, 1, "p", "t"});  // nothing to add
  const Profile p = to.Finish(0);
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].count, 5);
  EXPECT_EQ(p.samples[0].cpu_nanos, 7);
  ASSERT_EQ(p.samples[0].location_ids.size(), 3u);
  const ProfileLocation& k = p.location(p.samples[0].location_ids[0]);
  EXPECT_EQ(k.kind, FrameKind::kKernel);
  EXPECT_EQ(p.function(k.lines[0].function_id).name, "do_nanosleep");
  const ProfileLocation& y = p.location(p.samples[0].location_ids[1]);
  EXPECT_EQ(y.kind, FrameKind::kPython);
  EXPECT_EQ(p.function(y.lines[0].function_id).filename, "t.py");
  EXPECT_EQ(y.lines[0].line, 3);
  const ProfileLocation& n = p.location(p.samples[0].location_ids[2]);
  EXPECT_EQ(n.address, 0x1234u);
  EXPECT_EQ(p.mapping(n.mapping_id).filename, "/bin/app");
  EXPECT_EQ(p.function(n.lines[0].function_id).system_name, "_Z1gv");
}

TEST(ProfileBuilderTest, CountersOverwriteInPlaceAndCommentsAppend) {
  const Profile p = testing::MakeTestProfile();
  ASSERT_EQ(p.counters.size(), 2u);
  EXPECT_EQ(p.counters[0].name, "ringbuf_drops");
  EXPECT_EQ(p.counters[0].value, 3u);
  EXPECT_EQ(p.counters[1].name, "truncated_stacks");
  EXPECT_EQ(p.counters[1].value, 1u);
  EXPECT_EQ(p.comments, (std::vector<std::string>{"warpscope 0.1.0"}));
}

TEST(ProfileBuilderTest, TestProfileHasExpectedShape) {
  const Profile p = testing::MakeTestProfile();
  EXPECT_EQ(p.mappings.size(), 4u);
  EXPECT_EQ(p.functions.size(), 8u);
  EXPECT_EQ(p.locations.size(), 9u);
  EXPECT_EQ(p.samples.size(), 7u);  // 8 added, one merged
  int64_t total = 0;
  for (const ProfileSample& s : p.samples) {
    total += s.count;
    EXPECT_EQ(s.cpu_nanos, s.count * testing::kTestPeriodNanos);
  }
  EXPECT_EQ(total, testing::kTestTotalSamples);
  EXPECT_EQ(p.samples[0].count, 5);
}

}  // namespace
}  // namespace warpscope
