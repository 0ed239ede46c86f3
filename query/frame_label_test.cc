#include "query/frame_label.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "query/render_test_frames.h"

namespace warpscope::query {
namespace {

using testing::Kernel;
using testing::Native;
using testing::Python;
using testing::Unsymbolized;

TEST(FrameLabelTest, NativeFrames) {
  const FrameLabel l = LabelFrame(Native("std::vector<int>::push_back(int&&)", "/usr/lib/libfoo.so.1", 0x42));
  EXPECT_EQ(l.name, "std::vector<int>::push_back(int&&)");
  EXPECT_EQ(l.binary, "libfoo.so.1");
  EXPECT_EQ(l.kind, FrameKind::kNative);

  storage::ResolvedFrame mangled = Native("", "/usr/bin/app");
  mangled.system_name = "_Z3foov";
  EXPECT_EQ(FrameDisplayName(mangled), "_Z3foov");
}

TEST(FrameLabelTest, UnsymbolizedFramesAreNamedByFileOffset) {
  // As model/frame_names.h: basename + file offset, or the bare address.
  EXPECT_EQ(FrameDisplayName(Unsymbolized("/usr/lib/libfoo.so", 0x1a2b)), "libfoo.so+0x1a2b");
  EXPECT_EQ(FrameBinaryName(Unsymbolized("/usr/lib/libfoo.so", 0x1a2b)), "libfoo.so");
  EXPECT_EQ(FrameDisplayName(Unsymbolized("", 0x7f0012345678)), "0x7f0012345678");
  EXPECT_EQ(FrameBinaryName(Unsymbolized("", 0x7f0012345678)), "");
}

TEST(FrameLabelTest, KernelFrames) {
  EXPECT_EQ(LabelFrame(Kernel("do_syscall_64")).name, "do_syscall_64");
  EXPECT_EQ(LabelFrame(Kernel("do_syscall_64")).binary, "[kernel.kallsyms]");
  EXPECT_EQ(LabelFrame(Kernel("do_syscall_64")).kind, FrameKind::kKernel);
  EXPECT_EQ(FrameDisplayName(Kernel("", 0xffffffff81001234)), "0xffffffff81001234");
  storage::ResolvedFrame module = Kernel("nvidia_ioctl");
  module.mapping_file = "/lib/modules/nvidia.ko";
  EXPECT_EQ(FrameBinaryName(module), "nvidia.ko");
}

TEST(FrameLabelTest, PythonFrames) {
  const FrameLabel l = LabelFrame(Python("Model.forward", "/srv/app/model.py", 42));
  EXPECT_EQ(l.name, "Model.forward");  // the qualified name, as the agent's pprof shows it
  EXPECT_EQ(l.binary, "/srv/app/model.py");
  EXPECT_EQ(l.kind, FrameKind::kPython);
  EXPECT_EQ(FrameDisplayName(Python("", "/srv/app/model.py", 42)), "model.py:42");
  EXPECT_EQ(FrameDisplayName(Python("", "", 0)), "[unknown]");
}

TEST(FrameLabelTest, InternerMergesLinesAndAddressesOfOneFunction) {
  FrameLabelInterner interner;
  const uint32_t a = interner.Intern(Native("compute", "/usr/bin/app", 0x10, 5));
  EXPECT_EQ(interner.Intern(Native("compute", "/usr/bin/app", 0x20, 6)), a);
  EXPECT_EQ(interner.Intern(Native("compute", "/opt/other/app", 0x20, 6)), a);  // same basename
  EXPECT_NE(interner.Intern(Native("compute", "/usr/bin/tool")), a);
  EXPECT_NE(interner.Intern(Kernel("compute")), a);
  EXPECT_EQ(interner.Intern(Python("f", "/a.py", 1)), interner.Intern(Python("f", "/a.py", 9)));
  EXPECT_NE(interner.Intern(Python("f", "/a.py", 1)), interner.Intern(Python("f", "/b.py", 1)));
  // Unnamed frames are told apart by address (and Python ones by line).
  EXPECT_NE(interner.Intern(Unsymbolized("/usr/bin/app", 1)), interner.Intern(Unsymbolized("/usr/bin/app", 2)));
  EXPECT_NE(interner.Intern(Python("", "/a.py", 1)), interner.Intern(Python("", "/a.py", 2)));
  EXPECT_EQ(interner.label(a).name, "compute");
  EXPECT_EQ(interner.size(), 9u);
  EXPECT_EQ(interner.InternSynthetic("other"), interner.InternSynthetic("other"));
  EXPECT_TRUE(interner.label(interner.InternSynthetic("other")).synthetic);
  EXPECT_EQ(interner.label(interner.InternSynthetic("other")).JsonKind(), 3);
}

TEST(StackLabelerTest, NamesEachFrameTableEntryOnceAndKeepsInlinedLinesApart) {
  // compute with helper inlined: one location (id 7), two frames.
  storage::ResolvedFrame helper = Native("helper", "/usr/bin/app", 0x40);
  helper.location_id = 7;
  helper.inlined = true;
  storage::ResolvedFrame compute = Native("compute", "/usr/bin/app", 0x40);
  compute.location_id = 7;
  storage::ResolvedFrame main = Native("main", "/usr/bin/app", 0x10);
  main.location_id = 3;
  storage::MergedProfile profile;
  profile.frames = {helper, compute, main};
  storage::StackValue stack{{0, 1, 2}, 1};

  FrameLabelInterner interner;
  StackLabeler labeler(&interner, profile);
  std::vector<uint32_t> ids;
  labeler.Label(stack, &ids);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(interner.label(ids[0]).name, "helper");
  EXPECT_EQ(interner.label(ids[1]).name, "compute");
  EXPECT_EQ(interner.label(ids[2]).name, "main");

  // Again, from the cache; then the same location called from itself.
  storage::StackValue recursive{{0, 1, 0, 1, 2}, 1};
  labeler.Label(recursive, &ids);
  std::vector<std::string> names;
  for (uint32_t id : ids) names.push_back(interner.label(id).name);
  EXPECT_EQ(names, (std::vector<std::string>{"helper", "compute", "helper", "compute", "main"}));
  EXPECT_EQ(interner.size(), 3u);
}

}  // namespace
}  // namespace warpscope::query
