#include "agent/collectors/cpu/wait_reason.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

TEST(WaitReasonTest, DecisiveFunctions) {
  EXPECT_EQ(WaitReasonOfFunction("futex_wait_queue"), "futex");
  EXPECT_EQ(WaitReasonOfFunction("do_epoll_wait"), "poll");
  EXPECT_EQ(WaitReasonOfFunction("do_sys_poll"), "poll");
  EXPECT_EQ(WaitReasonOfFunction("do_select"), "poll");
  EXPECT_EQ(WaitReasonOfFunction("pipe_read"), "pipe");
  EXPECT_EQ(WaitReasonOfFunction("unix_stream_read_generic"), "socket");
  EXPECT_EQ(WaitReasonOfFunction("tcp_recvmsg_locked"), "socket");
  EXPECT_EQ(WaitReasonOfFunction("io_schedule"), "disk_io");
  EXPECT_EQ(WaitReasonOfFunction("folio_wait_bit_common"), "disk_io");
  EXPECT_EQ(WaitReasonOfFunction("do_nanosleep"), "sleep");
  EXPECT_EQ(WaitReasonOfFunction("hrtimer_nanosleep"), "sleep");
}

TEST(WaitReasonTest, CompilerSuffixesAreIgnored) {
  EXPECT_EQ(WaitReasonOfFunction("do_nanosleep.constprop.0"), "sleep");
  EXPECT_EQ(WaitReasonOfFunction("pipe_read.isra.0"), "pipe");
}

// The scheduler's functions and generic waits decide nothing: the reason
// comes from a caller further up.
TEST(WaitReasonTest, GenericFunctionsAreNotDecisive) {
  for (const char* f : {"finish_task_switch.isra.0", "__schedule", "schedule", "schedule_timeout",
                        "schedule_hrtimeout_range_clock", "do_syscall_64", "entry_SYSCALL_64_after_hwframe",
                        "wait_woken", "", "[unknown]"}) {
    EXPECT_EQ(WaitReasonOfFunction(f), "") << f;
  }
}

}  // namespace
}  // namespace warpscope
