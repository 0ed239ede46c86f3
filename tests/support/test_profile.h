// A small synthetic profile with known answers, shared by the export tests.
//
// Two processes: "app" (pid 100; threads 100 "app" and 101 "app-worker") and
// "worker" (pid 200; threads 200 "worker" and 201 "worker-2"). Period 10ms.
// Stacks (root first), with their sample counts:
//   app:    main;compute;inline_helper                                   3+2 (added twice, merged)
//   app:    main;compute;inline_helper;libfoo.so+0x1a2b                  2   (unsymbolized frame)
//   app:    main;compute;inline_helper;libfoo.so+0x1a2b;
//             entry_SYSCALL_64[k];do_syscall_64[k];__x64_sys_write[k]    1
//   app:    main;compute;compute;inline_helper                           4   (recursion)
//   worker: worker_main;spin                                             6 (tid 200) + 1 (tid 201)
//   worker: entry_SYSCALL_64[k];do_syscall_64[k]                         2
// inline_helper is inlined into compute at one address (a two-line location).
#pragma once

#include "model/profile.h"

namespace warpscope::testing {

inline constexpr int64_t kTestTimeNanos = 1'700'000'000'000'000'000;
inline constexpr int64_t kTestDurationNanos = 2'000'000'000;
inline constexpr int64_t kTestPeriodNanos = 10'000'000;
inline constexpr uint32_t kTestFrequencyHz = 100;
inline constexpr int64_t kTestTotalSamples = 21;

Profile MakeTestProfile();

}  // namespace warpscope::testing
