#include "tests/support/test_profile.h"

namespace warpscope::testing {

Profile MakeTestProfile() {
  ProfileBuilder b(kTestTimeNanos, kTestPeriodNanos, kTestFrequencyHz);

  ProfileMapping app{0, 0x400000, 0x500000, 0, "/usr/bin/app", "abcdef0123456789", false};
  ProfileMapping libfoo{0, 0x7f0000000000, 0x7f0000100000, 0x1000, "/usr/lib/libfoo.so", "", false};
  ProfileMapping kernel{0, 0xffffffff81000000, 0xffffffff82000000, 0, "[kernel.kallsyms]", "0badc0de", true};
  ProfileMapping worker{0, 0x400000, 0x480000, 0, "/opt/bin/worker", "feedface", false};
  const uint64_t m_app = b.InternMapping(app);
  const uint64_t m_libfoo = b.InternMapping(libfoo);
  const uint64_t m_kernel = b.InternMapping(kernel);
  const uint64_t m_worker = b.InternMapping(worker);

  const uint64_t f_main = b.InternFunction("main", "main", "app.cc");
  const uint64_t f_compute = b.InternFunction("compute()", "_Z7computev", "app.cc");
  const uint64_t f_inline = b.InternFunction("inline_helper", "inline_helper", "helper.h");
  const uint64_t f_entry = b.InternFunction("entry_SYSCALL_64", "entry_SYSCALL_64");
  const uint64_t f_do_syscall = b.InternFunction("do_syscall_64", "do_syscall_64");
  const uint64_t f_write = b.InternFunction("__x64_sys_write", "__x64_sys_write");
  const uint64_t f_worker_main = b.InternFunction("worker_main", "worker_main");
  const uint64_t f_spin = b.InternFunction("spin", "spin");

  const uint64_t l_main = b.InternLocation(m_app, 0x401000, FrameKind::kNative, {{f_main, 10}});
  // inline_helper (innermost) inlined into compute at one address.
  const uint64_t l_inlined =
      b.InternLocation(m_app, 0x402000, FrameKind::kNative, {{f_inline, 42}, {f_compute, 30}});
  // Unsymbolized: file offset 0xa2b - start + 0x1000 = 0x1a2b.
  const uint64_t l_libfoo = b.InternLocation(m_libfoo, 0x7f0000000a2b, FrameKind::kNative, {});
  const uint64_t l_entry = b.InternLocation(m_kernel, 0xffffffff81000100, FrameKind::kKernel, {{f_entry, 0}});
  const uint64_t l_do_syscall =
      b.InternLocation(m_kernel, 0xffffffff81000200, FrameKind::kKernel, {{f_do_syscall, 0}});
  const uint64_t l_write = b.InternLocation(m_kernel, 0xffffffff81000300, FrameKind::kKernel, {{f_write, 0}});
  const uint64_t l_worker_main = b.InternLocation(m_worker, 0x401100, FrameKind::kNative, {{f_worker_main, 0}});
  const uint64_t l_spin = b.InternLocation(m_worker, 0x401200, FrameKind::kNative, {{f_spin, 0}});
  const uint64_t l_compute = b.InternLocation(m_app, 0x401050, FrameKind::kNative, {{f_compute, 31}});

  const SampleLabels app_main{100, 100, "app", "app"};
  const SampleLabels app_thread{100, 101, "app", "app-worker"};
  const SampleLabels worker_main{200, 200, "worker", "worker"};
  const SampleLabels worker_second{200, 201, "worker", "worker-2"};

  b.AddSample({l_inlined, l_main}, 3, app_main);
  b.AddSample({l_libfoo, l_inlined, l_main}, 2, app_thread);
  b.AddSample({l_inlined, l_main}, 2, app_main);  // merged into the first sample
  b.AddSample({l_write, l_do_syscall, l_entry, l_libfoo, l_inlined, l_main}, 1, app_main);
  b.AddSample({l_inlined, l_compute, l_main}, 4, app_thread);
  b.AddSample({l_spin, l_worker_main}, 6, worker_main);
  b.AddSample({l_spin, l_worker_main}, 1, worker_second);
  b.AddSample({l_do_syscall, l_entry}, 2, worker_main);

  b.SetCounter("ringbuf_drops", 7);
  b.SetCounter("truncated_stacks", 1);
  b.SetCounter("ringbuf_drops", 3);  // overwrites, keeps its position
  b.AddComment("warpscope 0.1.0");
  return b.Finish(kTestDurationNanos);
}

}  // namespace warpscope::testing
