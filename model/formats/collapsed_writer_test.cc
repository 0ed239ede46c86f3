#include "model/formats/collapsed_writer.h"

#include <gtest/gtest.h>

#include "tests/support/test_profile.h"

namespace warpscope {
namespace {

TEST(CollapsedWriterTest, FoldsTestProfile) {
  const std::string want =
      "app;main;compute();compute();inline_helper 4\n"
      "app;main;compute();inline_helper 5\n"
      "app;main;compute();inline_helper;libfoo.so+0x1a2b 2\n"
      "app;main;compute();inline_helper;libfoo.so+0x1a2b;"
      "entry_SYSCALL_64_[k];do_syscall_64_[k];__x64_sys_write_[k] 1\n"
      "worker;entry_SYSCALL_64_[k];do_syscall_64_[k] 2\n"
      "worker;worker_main;spin 7\n";  // tids 200 and 201 merged
  EXPECT_EQ(EncodeCollapsed(testing::MakeTestProfile()), want);
}

TEST(CollapsedWriterTest, NamesCannotBreakTheFormat) {
  ProfileBuilder b(0, 1, 1);
  const uint64_t f_bad = b.InternFunction("operator;\nweird\tname", "x");
  const uint64_t f_empty = b.InternFunction("", "");
  const uint64_t f_inner = b.InternFunction("inner", "inner");
  const uint64_t f_outer = b.InternFunction("outer", "outer");
  const uint64_t f_kinner = b.InternFunction("kinner", "kinner");
  const uint64_t f_kouter = b.InternFunction("kouter", "kouter");
  const uint64_t l_bad = b.InternLocation(0, 0x10, FrameKind::kNative, {{f_bad, 0}});
  const uint64_t l_empty = b.InternLocation(0, 0x20, FrameKind::kNative, {{f_empty, 0}});
  const uint64_t l_inline = b.InternLocation(0, 0x30, FrameKind::kNative, {{f_inner, 0}, {f_outer, 0}});
  // Inlined kernel frames: each expanded frame carries the kernel suffix.
  const uint64_t l_kernel = b.InternLocation(0, 0x40, FrameKind::kKernel, {{f_kinner, 0}, {f_kouter, 0}});
  b.AddSample({l_kernel, l_inline, l_empty, l_bad}, 3, SampleLabels{1, 1, "my;proc\n", "t"});
  b.AddSample({l_bad}, 1, SampleLabels{2, 2, "", ""});
  b.AddSample({}, 1, SampleLabels{3, 3, "idle", ""});
  const std::string want =
      "[unknown];operator: weird name 1\n"
      "idle 1\n"
      "my:proc ;operator: weird name;0x20;outer;inner;kouter_[k];kinner_[k] 3\n";
  EXPECT_EQ(EncodeCollapsed(b.Finish(1)), want);
}

TEST(CollapsedWriterTest, EmptyProfileIsEmpty) {
  EXPECT_EQ(EncodeCollapsed(ProfileBuilder(0, 1, 1).Finish(0)), "");
}

}  // namespace
}  // namespace warpscope
