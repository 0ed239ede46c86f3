// What a blocked thread waits on, read off the kernel stack it blocked in
// (the off-CPU profile's `wait_reason` label). Only where the stack makes it
// clear: a stack none of whose functions is decisive has no reason.
//
// Pure functions; any thread.
#pragma once

#include <string_view>

namespace warpscope {

// The reason one kernel function stands for, or "" when it is not decisive
// (the scheduler's own functions, generic waits such as schedule_timeout).
// Suffixes compilers add (".isra.0", ".constprop.0") are ignored. Reasons:
// "futex", "poll" (poll, select, epoll), "pipe", "socket", "disk_io",
// "sleep" (nanosleep and its kin).
std::string_view WaitReasonOfFunction(std::string_view kernel_function);

}  // namespace warpscope
