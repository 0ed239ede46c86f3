// e2e_seed_hour: fills a running warpscope-server with one hour of synthetic
// CPU samples (a 10 s step, a few hundred distinct stacks whose mix drifts
// over the hour) for the web UI's "select a range of 1 h of data" measurement
// (tests/e2e/ui_e2e.mjs), and four seconds of GPU work with known numbers
// (GpuSeconds) for the GPU kernels view, 15 minutes of a node whose
// graph has 25,073 nodes, and four seconds of two threads' on-CPU, off-CPU
// and GPU-wait time (ThreadSeconds) for the threads view, and a node with
// two insights (InsightSeconds: a GPU starved by its CPU, a thread heavy in
// CUDA synchronisation) for the insights view, and ten minutes of a node's
// GPU energy, power and utilization, per-process SM utilization, CPU
// samples and GPU time in two pods (EnergySeconds) for the energy view and
// the gpu_energy flame graph. Prints `gpu_from_ms=<ms>`,
// `threads_from_ms=<ms>` and `energy_from_ms=<ms>`, the first of those seconds.
// Usage: e2e_seed_hour PORT TOKEN NODE
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"

namespace {

using warpscope::testing::BatchFactory;
using Labels = std::vector<std::pair<std::string, std::string>>;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kMs = 1'000'000;

// One kernel (or copy) that a process launches `per_second` times a second,
// the i-th at i * spacing_ns from the second's start.
struct GpuWork {
  warpscope::v1::GpuActivityKind kind;
  std::string name;  // demangled; "" for copies
  std::string system_name;
  std::string launch_stack;  // root first, up to the launching call (gpu_time stacks add the kernel)
  uint32_t stream;
  int per_second;
  int64_t spacing_ns;
  int64_t duration_ns;
  int64_t long_duration_ns;  // every 10th launch (i % 10 == 9) takes this long
  uint32_t grid[3];
  uint32_t block[3];
};

int64_t Duration(const GpuWork& w, int i) { return i % 10 == 9 ? w.long_duration_ns : w.duration_ns; }

// Four seconds from gpu_from_ns on node `node`: process "trainer" (pid 4343)
// runs gemm_kernel on stream 7 (100/s, 2 ms, every 10th 4 ms: 400 launches,
// 880 ms, mean 2.2 ms, p50 2 ms, p95 4 ms), an elementwise kernel on stream 13
// (200/s x 100 us: 800, 80 ms) and a 1 ms memcpy on stream 14 (4/s: 16);
// its trace is complete. Process "loader" (pid 4344) runs copy_kernel on
// stream 20 (50/s x 3 ms); in its third second the agent kept only the
// first 25 (complete until 500 ms): 1416 activities recorded, 1391 sent.
// gpu_time samples (every kernel counted) end in a CUDA-kernel frame.
warpscope::v1::IngestBatch GpuSeconds(const std::string& node, int64_t gpu_from_ns) {
  using warpscope::v1::GPU_ACTIVITY_KERNEL;
  using warpscope::v1::GPU_ACTIVITY_MEMCPY;
  const std::string train = "py:train_step@train.py:10;py:forward@model.py:20;";
  const std::vector<std::pair<Labels, std::vector<GpuWork>>> processes = {
      {{{"node", node}, {"comm", "trainer"}, {"pid", "4343"}},
       {{GPU_ACTIVITY_KERNEL, "void gemm_kernel<float>(float*, int)", "_Z11gemm_kernelIfEvPfi",
         train + "at::native::gemm@libtorch_cuda.so;cudaLaunchKernel@libcudart.so.12", 7, 100, 10 * kMs, 2 * kMs, 4 * kMs,
         {128, 64, 1}, {256, 1, 1}},
        {GPU_ACTIVITY_KERNEL, "elementwise_add_kernel(float*, float*, float*)", "_Z22elementwise_add_kernelPfS_S_",
         train + "py:add@model.py:30;cudaLaunchKernel@libcudart.so.12", 13, 200, 5 * kMs, 100'000, 100'000, {40, 1, 1},
         {512, 1, 1}},
        {GPU_ACTIVITY_MEMCPY, "", "", "", 14, 4, 250 * kMs, kMs, kMs, {0, 0, 0}, {0, 0, 0}}}},
      {{{"node", node}, {"comm", "loader"}, {"pid", "4344"}},
       {{GPU_ACTIVITY_KERNEL, "void copy_kernel(char*)", "_Z11copy_kernelPc",
         "py:load@loader.py:5;cudaLaunchKernel@libcudart.so.12", 20, 50, 20 * kMs, 3 * kMs, 3 * kMs, {1024, 1, 1},
         {128, 1, 1}}}},
  };
  constexpr int kSeconds = 4;
  BatchFactory f("e2e-seed-gpu-" + node, 1, gpu_from_ns, gpu_from_ns + kSeconds * kSec);
  // gpu_time: each kernel's time per second under its launch stack.
  std::vector<uint32_t> label_sets;
  for (const auto& [labels, work] : processes) {
    for (int sec = 0; sec < kSeconds; ++sec) {
      for (const GpuWork& w : work) {
        if (w.kind != GPU_ACTIVITY_KERNEL) continue;
        int64_t ns = 0;
        for (int i = 0; i < w.per_second; ++i) ns += Duration(w, i);
        f.Add(w.launch_stack + ";" + w.name, labels, ns, gpu_from_ns + sec * kSec, "gpu_time");
      }
    }
    label_sets.push_back(f.batch().samples(f.batch().samples_size() - 1).label_set());
  }
  // gpu_pc: PC samples inside the trainer's gemm_kernel, estimated cycles a
  // second: four instructions on four lines of gemm.cu with their stall
  // reasons (frames leafward of the kernel; their kinds are set below); 55 %
  // on memory, under the memory_bound insight's 60 %, so the insights the
  // test expects stay the same.
  struct PcRow {
    const char* line;
    const char* instruction;
    const char* stall;
    int64_t cycles;
  };
  const PcRow pc_rows[] = {
      {"py:gemm.cu:40@/src/gemm.cu:40", "0x0040 IMAD R2, R0, R3, RZ", "math pipe busy (compute bound)", 150'000},
      {"py:gemm.cu:42@/src/gemm.cu:42", "0x0080 LDG.E.128 R4, desc[UR4][R2.64]",
       "waiting for global or local memory (long scoreboard)", 550'000},
      {"py:gemm.cu:42@/src/gemm.cu:42", "0x0080 LDG.E.128 R4, desc[UR4][R2.64]", "issuing (not stalled)", 50'000},
      {"py:gemm.cu:44@/src/gemm.cu:44", "0x00c0 HMMA.16816.F32 R8, R4, R6, R8", "math pipe busy (compute bound)", 200'000},
      {"py:gemm.cu:45@/src/gemm.cu:45", "0x0100 BAR.SYNC.DEFER_BLOCKING 0x0", "waiting at a block barrier (__syncthreads)",
       50'000},
  };
  const GpuWork& gemm = processes[0].second[0];
  for (int sec = 0; sec < kSeconds; ++sec) {
    for (const PcRow& r : pc_rows) {
      f.Add(gemm.launch_stack + ";" + gemm.name + ";" + r.line + ";" + r.instruction + "@[cuda kernel];" + r.stall +
                "@[cuda kernel]",
            processes[0].first, r.cycles, gpu_from_ns + sec * kSec, "gpu_pc");
    }
  }
  // In its third second the trainer's library stood aside for half a second
  // for another CUPTI client (torch.profiler): the kernels view says so.
  f.AddMetric("cuda_profiling_paused_seconds", "seconds",
              {{"node", node}, {"comm", "trainer"}, {"pid", "4343"}, {"reason", "cupti_client"}}, 0.5,
              gpu_from_ns + 2 * kSec);
  // CPU samples of the two processes' main threads in the same seconds (the
  // kernels view's CPU lanes): the trainer 60 a second, the loader 20.
  for (int sec = 0; sec < kSeconds; ++sec) {
    f.Add(train + "at::native::gemm@libtorch_cuda.so",
          {{"comm", "trainer"}, {"node", node}, {"pid", "4343"}, {"thread", "trainer"}}, 60, gpu_from_ns + sec * kSec);
    f.Add("py:load@loader.py:5;read@libc.so.6", {{"comm", "loader"}, {"node", node}, {"pid", "4344"}, {"thread", "loader"}},
          20, gpu_from_ns + sec * kSec);
  }
  warpscope::v1::IngestBatch batch = f.batch();
  const auto add_string = [&batch](const std::string& text) {
    batch.add_strings(text);
    return static_cast<uint32_t>(batch.strings_size() - 1);
  };
  // The kernel leaves become CUDA-kernel frames (no mapping, mangled system name).
  for (auto& loc : *batch.mutable_locations()) {
    auto* fn = batch.mutable_functions(static_cast<int>(loc.lines(0).function()));
    for (const auto& [labels, work] : processes) {
      for (const GpuWork& w : work) {
        if (w.name.empty() || batch.strings(static_cast<int>(fn->name())) != w.name) continue;
        loc.set_kind(warpscope::v1::FRAME_KIND_CUDA_KERNEL);
        loc.set_mapping(0);
        loc.set_address(0);
        fn->set_system_name(add_string(w.system_name));
      }
    }
  }
  // Inside the kernel: source lines, instructions (at their offsets) and
  // stall reasons (CUPTI's names as system names).
  const std::map<std::string, std::string> cupti_stalls = {
      {"math pipe busy (compute bound)", "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"},
      {"waiting for global or local memory (long scoreboard)", "smsp__pcsamp_warps_issue_stalled_long_scoreboard"},
      {"issuing (not stalled)", "smsp__pcsamp_warps_issue_stalled_selected"},
      {"waiting at a block barrier (__syncthreads)", "smsp__pcsamp_warps_issue_stalled_barrier"}};
  for (auto& loc : *batch.mutable_locations()) {
    auto* fn = batch.mutable_functions(static_cast<int>(loc.lines(0).function()));
    const std::string name = batch.strings(static_cast<int>(fn->name()));
    if (name.rfind("gemm.cu:", 0) == 0) {
      loc.set_kind(warpscope::v1::FRAME_KIND_GPU_LINE);
      fn->set_system_name(add_string(""));  // the kernel's own code: no inlined function
    } else if (name.rfind("0x0", 0) == 0) {
      loc.set_kind(warpscope::v1::FRAME_KIND_GPU_INSTRUCTION);
      loc.set_mapping(0);
      loc.set_address(std::stoull(name.substr(0, name.find(' ')), nullptr, 16));
      fn->set_system_name(add_string("_Z11gemm_kernelIfEvPfi+" + name.substr(0, name.find(' '))));
    } else if (auto stall = cupti_stalls.find(name); stall != cupti_stalls.end()) {
      loc.set_kind(warpscope::v1::FRAME_KIND_GPU_STALL);
      loc.set_mapping(0);
      loc.set_address(0);
      fn->set_system_name(add_string(stall->second));
    }
  }
  // The trace and its coverage; the loader's third second is cut at 500 ms.
  uint64_t correlation = 1;
  for (size_t p = 0; p < processes.size(); ++p) {
    const bool thinned_process = p == 1;
    for (int sec = 0; sec < kSeconds; ++sec) {
      const int64_t second_ns = gpu_from_ns + sec * kSec;
      const int64_t complete_until = thinned_process && sec == 2 ? second_ns + 500 * kMs : second_ns + kSec;
      uint64_t recorded = 0;
      uint64_t sent = 0;
      for (const GpuWork& w : processes[p].second) {
        const uint32_t name = w.name.empty() ? 0 : add_string(w.name);
        const uint32_t system_name = w.system_name.empty() ? 0 : add_string(w.system_name);
        for (int i = 0; i < w.per_second; ++i) {
          const int64_t start = second_ns + i * w.spacing_ns;
          ++recorded;
          if (start >= complete_until) continue;
          ++sent;
          auto* a = batch.add_gpu_activities();
          a->set_start_unix_nanos(start);
          a->set_duration_nanos(Duration(w, i));
          a->set_label_set(label_sets[p]);
          a->set_kind(w.kind);
          a->set_name(name);
          a->set_system_name(system_name);
          a->set_device(0);
          a->set_stream(w.stream);
          a->set_correlation_id(correlation++);
          a->set_grid_x(w.grid[0]);
          a->set_grid_y(w.grid[1]);
          a->set_grid_z(w.grid[2]);
          a->set_block_x(w.block[0]);
          a->set_block_y(w.block[1]);
          a->set_block_z(w.block[2]);
          if (w.kind == GPU_ACTIVITY_MEMCPY) {
            a->set_bytes(1 << 20);
            a->set_copy_kind(1);  // HtoD
          }
        }
      }
      auto* c = batch.add_gpu_trace_coverage();
      c->set_second_unix_nanos(second_ns);
      c->set_label_set(label_sets[p]);
      c->set_recorded(recorded);
      c->set_sent(sent);
      c->set_complete_until_unix_nanos(complete_until);
    }
  }
  return batch;
}

// Four seconds from from_ns on node `node` of process "trainer" (pid 4646)
// and two of its threads, for the threads view (numbers per second; cpu
// samples are 1/19 s each, BatchFactory's period):
//   "trainer"      on CPU 15 samples, off CPU 50 ms poll, GPU wait 120 ms
//                  (cudaStreamSynchronize, gemm_kernel ran meanwhile);
//   "data-loader"  on CPU 2 samples, off CPU 800 ms futex and 100 ms disk_io.
// Over the four seconds: trainer 60 samples (3,157,894,680 ns) + 200 ms off
// = 3,357,894,680 ns wall; data-loader 8 samples (421,052,624 ns) + 3.6 s
// off = 4,021,052,624 ns wall, so it comes first.
warpscope::v1::IngestBatch ThreadSeconds(const std::string& node, int64_t from_ns) {
  constexpr int kSeconds = 4;
  BatchFactory f("e2e-seed-threads-" + node, 1, from_ns, from_ns + kSeconds * kSec);
  const Labels trainer = {{"node", node}, {"comm", "trainer"}, {"pid", "4646"}, {"thread", "trainer"}};
  const Labels loader = {{"node", node}, {"comm", "trainer"}, {"pid", "4646"}, {"thread", "data-loader"}};
  const auto with_label = [](Labels labels, const std::string& name, const std::string& value) {
    labels.emplace_back(name, value);
    return labels;
  };
  const auto with_reason = [&with_label](const Labels& labels, const std::string& reason) {
    return with_label(labels, "wait_reason", reason);
  };
  const std::string step = "py:train_step@train.py:10;";
  const std::string load = "py:load_batch@loader.py:12;";
  for (int sec = 0; sec < kSeconds; ++sec) {
    const int64_t t = from_ns + sec * kSec;
    f.Add(step + "py:forward@model.py:20;at::native::gemm@libtorch_cuda.so", trainer, 15, t);
    f.Add(step + "py:poll_workers@train.py:40;poll@libc.so.6;k:do_sys_poll", with_reason(trainer, "poll"), 50 * kMs, t,
          "off_cpu");
    f.Add(step + "cudaStreamSynchronize@libcudart.so.12;void gemm_kernel<float>(float*, int)",
          with_label(trainer, "wait_api", "cudaStreamSynchronize"), 120 * kMs, t, "gpu_wait");
    f.Add(load + "py:decode@loader.py:30;decode_jpeg@libjpeg.so.62", loader, 2, t);
    f.Add(load + "py:get@queue.py:180;pthread_cond_wait@libc.so.6;k:futex_wait_queue", with_reason(loader, "futex"),
          800 * kMs, t, "off_cpu");
    f.Add(load + "py:read@loader.py:22;read@libc.so.6;k:io_schedule", with_reason(loader, "disk_io"), 100 * kMs, t,
          "off_cpu");
  }
  warpscope::v1::IngestBatch batch = f.batch();
  // The gpu_wait leaf is the kernel that ran during the wait: a CUDA-kernel frame.
  for (auto& loc : *batch.mutable_locations()) {
    const auto& fn = batch.functions(static_cast<int>(loc.lines(0).function()));
    if (batch.strings(static_cast<int>(fn.name())) != "void gemm_kernel<float>(float*, int)") continue;
    loc.set_kind(warpscope::v1::FRAME_KIND_CUDA_KERNEL);
    loc.set_mapping(0);
    loc.set_address(0);
  }
  return batch;
}

// Two insights (GET /api/v1/insights, query/insights.h) on node `node`, with
// numbers that do not depend on where the request's 5 s steps fall:
//  * gpu_starved_by_cpu: process "python3" (pid 4747) on GPU 0, NVML every 5 s
//    from metrics_from_ns for 72 points (6 min); in points 24..59 (3 min) its
//    SM utilization is 10 % (the GPU's 12 %), else 90 % (93 %). Its thread
//    "python3" runs 18 CPU samples a second (0.95 of a core at 1/19 s) from
//    110 s to 310 s, wider than the low points so every step holding one is
//    CPU-bound, and 2 a second otherwise: 36 starved steps of 72, 36 × 5 s ×
//    90 % = 162 GPU-seconds idle. Its self time: tokenize 10 of the 18
//    samples, decode_jpeg 5, collate 3.
//  * sync_heavy: thread "train_loop" of "python3" (pid 4748) waits 800 ms a
//    second in CUDA synchronisation for the 20 minutes from waits_from_ns:
//    500 ms in read_loss's cudaStreamSynchronize while gemm_kernel ran, 300
//    ms in log_metrics's cudaDeviceSynchronize with no GPU work: 960 s of
//    waiting, 360 s of it the saving.
warpscope::v1::IngestBatch InsightSeconds(const std::string& node, int64_t metrics_from_ns, int64_t waits_from_ns) {
  BatchFactory f("e2e-seed-insights-" + node, 1, waits_from_ns, metrics_from_ns + 400 * kSec);
  const Labels gpu = {{"node", node}, {"gpu", "0"}, {"uuid", "GPU-e2e00000-0000-0000-0000-000000000001"},
                      {"gpu_name", "NVIDIA H100 80GB HBM3"}, {"pci_bus_id", "00000000:1B:00.0"}};
  Labels process = gpu;  // as the agent sends them: the GPU's labels and the process's
  process.insert(process.end(), {{"comm", "python3"}, {"pid", "4747"}});
  for (int k = 0; k < 72; ++k) {
    const bool starved = k >= 24 && k < 60;
    const int64_t at = metrics_from_ns + k * 5 * kSec;
    f.AddMetric("gpu_utilization", "percent", gpu, starved ? 12 : 93, at);
    f.AddMetric("gpu_memory_used", "bytes", gpu, 40e9, at);
    f.AddMetric("gpu_power", "watts", gpu, starved ? 160 : 590, at);
    f.AddMetric("gpu_process_sm_utilization", "percent", process, starved ? 10 : 90, at);
    f.AddMetric("gpu_process_memory_used", "bytes", process, 38e9, at);
  }
  const Labels feeder = {{"node", node}, {"comm", "python3"}, {"pid", "4747"}, {"thread", "python3"}};
  const std::string loop = "python3@python3;py:<module>@train.py:1;py:train@train.py:60;py:next_batch@data.py:40;";
  for (int64_t s = 0; s < 360; ++s) {
    const int64_t at = metrics_from_ns + s * kSec;
    if (s >= 110 && s < 310) {
      f.Add(loop + "py:collate@data.py:88;py:tokenize@tokenizer.py:12", feeder, 10, at);
      f.Add(loop + "py:collate@data.py:88;decode_jpeg@libjpeg.so.62", feeder, 5, at);
      f.Add(loop + "py:collate@data.py:88", feeder, 3, at);
    } else {
      f.Add(loop + "py:collate@data.py:88", feeder, 2, at);
    }
  }
  const Labels waiter = {{"node", node}, {"comm", "python3"}, {"pid", "4748"}, {"thread", "train_loop"}};
  const std::string step = "python3@python3;py:<module>@train.py:1;py:train_step@train.py:120;";
  for (int64_t s = 0; s < 1200; ++s) {
    const int64_t at = waits_from_ns + s * kSec;
    f.Add(step + "py:read_loss@train.py:88;cudaStreamSynchronize@libcudart.so.12;void gemm_kernel<float>(float*, int)",
          waiter, 500 * kMs, at, "gpu_wait");
    f.Add(step + "py:log_metrics@train.py:140;cudaDeviceSynchronize@libcudart.so.12", waiter, 300 * kMs, at,
          "gpu_wait");
  }
  warpscope::v1::IngestBatch batch = f.batch();
  for (auto& loc : *batch.mutable_locations()) {
    const auto& fn = batch.functions(static_cast<int>(loc.lines(0).function()));
    if (batch.strings(static_cast<int>(fn.name())) != "void gemm_kernel<float>(float*, int)") continue;
    loc.set_kind(warpscope::v1::FRAME_KIND_CUDA_KERNEL);
    loc.set_mapping(0);
    loc.set_address(0);
  }
  return batch;
}

// Ten minutes from from_ns on node `node`, for the energy view (GET
// /api/v1/energy) and the gpu_energy profile, with numbers that do not
// depend on where a range inside them starts:
//  * GPU 0: NVML's energy counter every 10 s rising 3,000 J each (300 W),
//    gpu_power 300 W and gpu_utilization 80 % every second: busy, 300 J a second.
//  * GPU 1: the counter rising 600 J each 10 s, 60 W, utilization 0 %: idle,
//    60 J a second.
//  * Process "trainer" (pid 6161, pod ml/trainer-0): SM utilization 60 % of
//    GPU 0 every 5 s, 19 CPU samples a second (one core at 1/19 s: 7 J a
//    second at the default 7 W per core), and 500 ms of GPU time a second in
//    energy_gemm_kernel under train_step;forward;cudaLaunchKernel: the only
//    kernels on GPU 0, so by GPU time all of GPU 0's busy joules are its.
//  * Process "loader" (pid 6162, pod ml/loader-0): SM utilization 20 % of
//    GPU 0, 10 CPU samples a second, no kernels.
// So any 300 s inside them hold 90,000 J of GPU 0 (busy), 18,000 J of GPU 1
// (idle), 2,100 J of the trainer's CPU and 1,105.26 J of the loader's.
warpscope::v1::IngestBatch EnergySeconds(const std::string& node, int64_t from_ns) {
  constexpr int kSeconds = 600;
  BatchFactory f("e2e-seed-energy-" + node, 1, from_ns, from_ns + kSeconds * kSec);
  const auto gpu = [&node](const std::string& index) -> Labels {
    return {{"node", node}, {"gpu", index}, {"uuid", "GPU-e2e00000-0000-0000-0000-000000000e0" + index},
            {"gpu_name", "NVIDIA H100 80GB HBM3"}, {"pci_bus_id", "00000000:1" + index + ":00.0"}};
  };
  const auto process = [&gpu](const std::string& comm, const std::string& pid, const std::string& pod) {
    Labels labels = gpu("0");  // as the agent sends them: the GPU's labels and the process's
    labels.insert(labels.end(), {{"comm", comm}, {"pid", pid}, {"namespace", "ml"}, {"pod", pod}});
    return labels;
  };
  const Labels trainer_gpu = process("trainer", "6161", "trainer-0");
  const Labels loader_gpu = process("loader", "6162", "loader-0");
  const Labels trainer = {{"node", node}, {"comm", "trainer"}, {"pid", "6161"}, {"thread", "trainer"},
                          {"namespace", "ml"}, {"pod", "trainer-0"}};
  const Labels loader = {{"node", node}, {"comm", "loader"}, {"pid", "6162"}, {"thread", "loader"},
                         {"namespace", "ml"}, {"pod", "loader-0"}};
  const std::string kernel = "void energy_gemm_kernel<float>(float*, int)";
  const std::string step = "py:train_step@train.py:10;py:forward@model.py:20;cudaLaunchKernel@libcudart.so.12;";
  for (int s = 0; s < kSeconds; ++s) {
    const int64_t at = from_ns + s * kSec;
    f.AddMetric("gpu_power", "watts", gpu("0"), 300, at);
    f.AddMetric("gpu_utilization", "percent", gpu("0"), 80, at);
    f.AddMetric("gpu_power", "watts", gpu("1"), 60, at);
    f.AddMetric("gpu_utilization", "percent", gpu("1"), 0, at);
    if (s % 10 == 0) {
      f.AddMetric("gpu_energy", "joules", gpu("0"), 1'000'000 + 300.0 * s, at);
      f.AddMetric("gpu_energy", "joules", gpu("1"), 2'000'000 + 60.0 * s, at);
    }
    if (s % 5 == 0) {
      f.AddMetric("gpu_process_sm_utilization", "percent", trainer_gpu, 60, at);
      f.AddMetric("gpu_process_sm_utilization", "percent", loader_gpu, 20, at);
      f.AddMetric("gpu_process_memory_used", "bytes", trainer_gpu, 30e9, at);
      f.AddMetric("gpu_process_memory_used", "bytes", loader_gpu, 2e9, at);
    }
    f.Add("py:train_step@train.py:10;py:forward@model.py:20;at::native::gemm@libtorch_cuda.so", trainer, 19, at);
    f.Add("py:load@loader.py:5;decode_jpeg@libjpeg.so.62", loader, 10, at);
    Labels kernel_labels = trainer;
    kernel_labels.emplace_back("device", "0");
    kernel_labels.emplace_back("stream", "7");
    f.Add(step + kernel, kernel_labels, 500 * kMs, at, "gpu_time");
  }
  warpscope::v1::IngestBatch batch = f.batch();
  for (auto& loc : *batch.mutable_locations()) {
    const auto& fn = batch.functions(static_cast<int>(loc.lines(0).function()));
    if (batch.strings(static_cast<int>(fn.name())) != kernel) continue;
    loc.set_kind(warpscope::v1::FRAME_KIND_CUDA_KERNEL);
    loc.set_mapping(0);
    loc.set_address(0);
  }
  return batch;
}

// Sends one batch; false, with what failed on stderr, unless the server stored it.
bool Post(int port, const std::string& token, const warpscope::v1::IngestBatch& batch, const std::string& what) {
  auto r = warpscope::testing::PostBatch(port, batch, token);
  if (r.status == 200) return true;
  std::fprintf(stderr, "e2e_seed_hour: %s: HTTP %d %s\n", what.c_str(), r.status, r.body.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: e2e_seed_hour PORT TOKEN NODE\n");
    return 2;
  }
  const int port = std::stoi(argv[1]);
  const std::string token = argv[2];
  const std::string node = argv[3];
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t start_ns = now_ns - 3600 * kSec;
  // One batch per 5 minutes, as an agent with a long upload interval would send.
  constexpr int kBatches = 12;
  constexpr int64_t kBatchNs = 300 * kSec;
  for (int b = 0; b < kBatches; ++b) {
    BatchFactory f("e2e-seed-" + node, b + 1, start_ns + b * kBatchNs, start_ns + (b + 1) * kBatchNs);
    for (int64_t t = 0; t < kBatchNs; t += 10 * kSec) {
      const int minute = static_cast<int>((b * kBatchNs + t) / (60 * kSec));
      for (int s = 0; s < 240; ++s) {
        const std::string stack = "main@server;serve_" + std::to_string(s % 6) + "@server;handle_" +
                                  std::to_string(s % 24) + "@server;work_" + std::to_string(s) +
                                  "@libwork.so;leaf_" + std::to_string(s % 17) + "@libc.so.6";
        // The mix drifts: early in the hour low stacks dominate, later high ones.
        const int64_t value = 1 + ((s * 7 + minute * (s % 5 + 1)) % 9) + (minute > 30 && s > 120 ? 4 : 0);
        f.Add(stack, {{"node", node}, {"comm", "synthetic"}, {"pid", "4242"}}, value, start_ns + b * kBatchNs + t);
      }
    }
    if (!Post(port, token, f.batch(), "batch " + std::to_string(b))) return 1;
  }
  // A big node: 15 minutes whose flame graph has 25,073 nodes (the root, main,
  // 8 services, 63 handlers, 1,000 functions, 6,000 workers, 18,000 leaves),
  // past the UI's default of 20,000, for the drag and page-load measurements
  // and the folded-nodes note. Each leaf stack appears every 150 s.
  {
    constexpr int kLeaves = 18'000;
    constexpr int64_t kBigNs = 900 * kSec;
    const int64_t big_from = (now_ns / kSec - 900) * kSec;
    for (int b = 0; b < 3; ++b) {
      BatchFactory f("e2e-seed-" + node + "-20k", b + 1, big_from + b * kBigNs / 3, big_from + (b + 1) * kBigNs / 3);
      const Labels labels = {{"node", node + "-20k"}, {"comm", "bigservice"}, {"pid", "5151"}};
      for (int64_t t = b * kBigNs / 3; t < (b + 1) * kBigNs / 3; t += 10 * kSec) {
        const int step = static_cast<int>(t / (10 * kSec));
        for (int i = step % 15; i < kLeaves; i += 15) {
          // Nested, so each level's count is its distinct nodes.
          const int work = i / 3, fn = work / 6, handler = fn / 16;
          const std::string stack = "main@big;svc_" + std::to_string(handler / 8) + "@big;handler_" +
                                    std::to_string(handler) + "@big;fn_" + std::to_string(fn) + "@libbig.so;work_" +
                                    std::to_string(work) + "@libbig.so;leaf_" + std::to_string(i) + "@libc.so.6";
          f.Add(stack, labels, 1 + i % 3, big_from + t);
        }
      }
      if (!Post(port, token, f.batch(), "big-node batch " + std::to_string(b))) return 1;
    }
  }
  // Two scripts under one python3, each with a <module>: the zoom must land on
  // the one clicked (train.py's, 78 samples), not the first of that name.
  {
    BatchFactory f("e2e-seed-" + node + "-dup", 1, now_ns - 120 * kSec, now_ns - 60 * kSec);
    const std::vector<std::pair<std::string, std::string>> labels = {
        {"node", node + "-dup"}, {"comm", "python3"}, {"pid", "4545"}};
    f.Add("python3@python3;py:<module>@other.py:1;py:setup@other.py:3", labels, 3, now_ns - 90 * kSec);
    f.Add("python3@python3;py:<module>@train.py:1;py:train_step@train.py:10", labels, 78, now_ns - 90 * kSec);
    if (!Post(port, token, f.batch(), "duplicate-names batch")) return 1;
  }
  // The GPU seconds: whole seconds, ending 16 s ago (inside now-5m, now-1m).
  const int64_t gpu_from_ns = (now_ns / kSec - 20) * kSec;
  if (!Post(port, token, GpuSeconds(node + "-gpu", gpu_from_ns), "GPU batch")) return 1;
  // Five minutes of NVML metrics of GPU 0 on the GPU node, every 5 s, for the
  // GPUs view: utilization and power dip in the middle minute.
  {
    const int64_t metrics_from = (now_ns / kSec - 300) * kSec;
    BatchFactory f("e2e-seed-" + node + "-gpu-metrics", 1, metrics_from, metrics_from + 300 * kSec);
    const Labels gpu = {{"node", node + "-gpu"}, {"gpu", "0"}, {"uuid", "GPU-e2e00000-0000-0000-0000-000000000000"},
                        {"gpu_name", "NVIDIA H200"}, {"pci_bus_id", "00000000:19:00.0"}};
    for (int64_t t = 0; t < 300 * kSec; t += 5 * kSec) {
      const bool dip = t >= 120 * kSec && t < 180 * kSec;
      const int64_t at = metrics_from + t;
      f.AddMetric("gpu_utilization", "percent", gpu, dip ? 12 : 93, at);
      f.AddMetric("gpu_power", "watts", gpu, dip ? 180 : 610, at);
      f.AddMetric("gpu_power_limit", "watts", gpu, 700, at);
      f.AddMetric("gpu_memory_used", "bytes", gpu, 80e9, at);
      f.AddMetric("gpu_sm_clock", "mhz", gpu, dip ? 1200 : 1980, at);
      f.AddMetric("gpu_temperature", "celsius", gpu, dip ? 48 : 71, at);
    }
    if (!Post(port, token, f.batch(), "GPU metrics batch")) return 1;
  }
  // A node with eight GPUs, one rank of a job on each, over the same five
  // minutes, every 10 s: GPU 5 is the slow one (35 % busy, 250 W; the others
  // 90 %, 600 W), for the GPUs view's small multiples.
  {
    const int64_t metrics_from = (now_ns / kSec - 300) * kSec;
    BatchFactory f("e2e-seed-" + node + "-8gpu", 1, metrics_from, metrics_from + 300 * kSec);
    for (int i = 0; i < 8; ++i) {
      char uuid[64], pci[32];
      std::snprintf(uuid, sizeof(uuid), "GPU-e2e00000-0000-0000-0000-0000000008%02d", i);
      std::snprintf(pci, sizeof(pci), "00000000:%02x:00.0", 0x19 + 0x10 * i);
      const Labels gpu = {{"node", node + "-8gpu"}, {"gpu", std::to_string(i)}, {"uuid", uuid},
                          {"gpu_name", "NVIDIA H200"}, {"pci_bus_id", pci}};
      Labels rank = gpu;  // as the agent sends them: the GPU's labels and the process's
      rank.insert(rank.end(), {{"pid", std::to_string(7000 + i)}, {"comm", "python3"}});
      std::sort(rank.begin(), rank.end());
      const bool slow = i == 5;
      for (int64_t t = 0; t < 300 * kSec; t += 10 * kSec) {
        const int64_t at = metrics_from + t;
        f.AddMetric("gpu_utilization", "percent", gpu, slow ? 35 : 90, at);
        f.AddMetric("gpu_power", "watts", gpu, slow ? 250 : 600, at);
        f.AddMetric("gpu_memory_used", "bytes", gpu, 60e9, at);
        f.AddMetric("gpu_memory_total", "bytes", gpu, 141e9, at);
        f.AddMetric("gpu_process_sm_utilization", "percent", rank, slow ? 30 : 85, at);
      }
    }
    if (!Post(port, token, f.batch(), "eight-GPU batch")) return 1;
  }
  // The threads view's four seconds, ending 36 s ago.
  const int64_t threads_from_ns = (now_ns / kSec - 40) * kSec;
  if (!Post(port, token, ThreadSeconds(node + "-threads", threads_from_ns), "threads batch")) return 1;
  // The insights' node: NVML and CPU samples over the 6 min 40 s ending 40 s
  // ago, GPU waits over the 20 minutes ending 5 minutes ago.
  const int64_t insights_metrics_ns = (now_ns / kSec - 400) * kSec;
  const int64_t insights_waits_ns = (now_ns / kSec - 1500) * kSec;
  if (!Post(port, token, InsightSeconds(node + "-insights", insights_metrics_ns, insights_waits_ns), "insights batch")) {
    return 1;
  }
  // The energy node's ten minutes, ending a minute ago.
  const int64_t energy_from_ns = (now_ns / kSec - 660) * kSec;
  if (!Post(port, token, EnergySeconds(node + "-energy", energy_from_ns), "energy batch")) return 1;
  std::printf("gpu_from_ms=%lld\n", static_cast<long long>(gpu_from_ns / kMs));
  std::printf("threads_from_ms=%lld\n", static_cast<long long>(threads_from_ns / kMs));
  std::printf("energy_from_ms=%lld\n", static_cast<long long>(energy_from_ns / kMs));
  return 0;
}
