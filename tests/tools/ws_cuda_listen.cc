// ws_cuda_listen: a stand-in agent for manual checks on a GPU host. It
// listens on the CUDA socket (default /run/warpscope/cuda.sock), sends the
// config given on the command line, and prints what each process sends: the
// hello, a per-kernel-name table every few seconds, launches sampled, and the
// library's counters.
//
//   ws_cuda_listen [--socket PATH] [--mode exact|duty|off] [--rate N]
//                  [--duty-on MS] [--duty-period MS] [--duty-callbacks] [--memcpy]
//                  [--print-kernels N] [--alternate MS]
// --alternate MS: every MS switches every connected process between
// configurations in turn (off, exact, duty with callbacks: the paired
// overhead benchmark, bench/gpu/cuda_phase_check.sh), printing
// "phase NAME at NS" with CLOCK_MONOTONIC nanoseconds.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <thread>

#include "agent/collectors/gpu_time/socket/cuda_socket_server.h"

namespace {

volatile sig_atomic_t g_stop = 0;

struct NameTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
};

struct ProcessTotals {
  std::map<std::string, NameTotals> by_name;
  // Which correlation id of a sampled launch its kernels carry: the outer
  // (runtime) call's or the nested driver call's (GPU-FACTS check).
  // Kept whole (a manual check of seconds), compared at each report because
  // a launch's record may arrive before or after its kernels'.
  std::set<uint32_t> outer_ids, inner_ids, kernel_ids;
  uint64_t launches = 0;
  uint64_t memops = 0;
  ws_cuda_stats stats{};
  ws_cuda_stats first_stats{};  // the connection's baseline
  bool have_first = false;
};

}  // namespace

int main(int argc, char** argv) {
  warpscope::CudaSocketServerOptions options;
  options.config.mode = WS_CUDA_MODE_EXACT;
  int print_kernels = 5;
  int alternate_ms = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--socket") {
      options.socket_path = next();
    } else if (a == "--mode") {
      const std::string m = next();
      options.config.mode = m == "duty" ? WS_CUDA_MODE_DUTY : m == "off" ? WS_CUDA_MODE_OFF : WS_CUDA_MODE_EXACT;
    } else if (a == "--rate") {
      options.config.launch_samples_per_sec = static_cast<uint32_t>(std::atoi(next()));
    } else if (a == "--duty-on") {
      options.config.duty_on_ms = static_cast<uint32_t>(std::atoi(next()));
    } else if (a == "--duty-period") {
      options.config.duty_period_ms = static_cast<uint32_t>(std::atoi(next()));
    } else if (a == "--alternate") {
      alternate_ms = std::atoi(next());
    } else if (a == "--duty-callbacks") {
      options.config.flags |= WS_CUDA_CONFIG_DUTY_CALLBACKS;
    } else if (a == "--memcpy") {
      options.config.flags |= WS_CUDA_CONFIG_MEMCPY | WS_CUDA_CONFIG_MEMSET;
    } else if (a == "--print-kernels") {
      print_kernels = std::atoi(next());
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::mutex mu;
  std::map<int32_t, ProcessTotals> processes;
  int printed = 0;
  auto server = warpscope::CudaSocketServer::Start(options, [&](warpscope::CudaProcessEvent&& e) {
    std::lock_guard<std::mutex> lock(mu);
    using Kind = warpscope::CudaProcessEvent::Kind;
    if (e.kind == Kind::kConnected) {
      const ws_cuda_clock_pair& c = e.hello.clock;
      std::printf("pid %d connected: cupti %u, library 0x%06x, seq %u, clock bracket %llu ns, cupti-host %lld ns\n",
                  e.pid, e.hello.cupti_version, e.hello.library_version, e.hello.connection_seq,
                  static_cast<unsigned long long>(c.host_after_ns - c.host_before_ns),
                  static_cast<long long>(c.cupti_ns - (c.host_before_ns + c.host_after_ns) / 2));
    } else if (e.kind == Kind::kDisconnected) {
      std::printf("pid %d disconnected: %s\n", e.pid, e.reason.c_str());
    }
    ProcessTotals& p = processes[e.pid];
    for (const auto& l : e.launches) {
      p.outer_ids.insert(l.correlation_id);
      if (l.inner_correlation_id != 0) p.inner_ids.insert(l.inner_correlation_id);
    }
    for (const auto& k : e.kernels) {
      if (p.kernel_ids.size() < 20'000'000) p.kernel_ids.insert(k.record.correlation_id);
      NameTotals& t = p.by_name[k.name->text.system_name];
      t.count++;
      t.total_ns += k.record.end_ns - k.record.start_ns;
      if (printed < print_kernels) {
        printed++;
        std::printf("  kernel corr %u dev %u stream %u grid %d,%d,%d block %d,%d,%d regs %u %llu ns %s\n",
                    k.record.correlation_id, k.record.device_id, k.record.stream_id, k.record.grid_x, k.record.grid_y,
                    k.record.grid_z, k.record.block_x, k.record.block_y, k.record.block_z,
                    k.record.registers_per_thread,
                    static_cast<unsigned long long>(k.record.end_ns - k.record.start_ns), k.name->text.system_name.c_str());
      }
    }
    p.launches += e.launches.size();
    p.memops += e.memops.size();
    if (e.stats) {
      if (!p.have_first) p.first_stats = *e.stats;
      p.have_first = true;
      p.stats = *e.stats;
    }
  });
  if (!server.ok()) {
    std::fprintf(stderr, "ws_cuda_listen: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on %s\n", options.socket_path.c_str());
  std::fflush(stdout);
  signal(SIGINT, [](int) { g_stop = 1; });
  signal(SIGTERM, [](int) { g_stop = 1; });
  if (alternate_ms > 0) {
    struct Phase {
      const char* name;
      ws_cuda_config config;
    };
    std::vector<Phase> phases(3, Phase{"", options.config});
    phases[0].name = "off";
    phases[0].config.mode = WS_CUDA_MODE_OFF;
    phases[1].name = "exact";
    phases[1].config.mode = WS_CUDA_MODE_EXACT;
    phases[2].name = "duty_cb";
    phases[2].config.mode = WS_CUDA_MODE_DUTY;
    phases[2].config.flags |= WS_CUDA_CONFIG_DUTY_CALLBACKS;
    if (phases[2].config.duty_on_ms == 0) phases[2].config.duty_on_ms = 50;
    for (size_t k = 0; !g_stop; ++k) {
      const Phase& p = phases[k % phases.size()];
      (*server)->PostConfig(p.config);
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      std::printf("phase %s at %lld\n", p.name, static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec);
      std::fflush(stdout);
      for (int waited = 0; waited < alternate_ms && !g_stop; waited += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return 0;
  }
  while (!g_stop) {
    for (int i = 0; i < 50 && !g_stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [pid, p] : processes) {
      const ws_cuda_stats& s = p.stats;
      std::printf("pid %d: seen %llu (on %llu, off %llu) sampled %llu, kernels %llu, memops %llu, launch records %llu, "
                  "dropped: cupti %llu, buffers %llu, wire %llu, launch %llu\n",
                  pid, (unsigned long long)s.launches_seen, (unsigned long long)s.launches_seen_activity_on,
                  (unsigned long long)s.launches_seen_activity_off, (unsigned long long)s.launches_sampled,
                  (unsigned long long)s.kernel_records, (unsigned long long)p.memops, (unsigned long long)p.launches,
                  (unsigned long long)s.cupti_dropped_records, (unsigned long long)s.buffers_denied,
                  (unsigned long long)s.wire_records_dropped, (unsigned long long)s.launch_records_dropped);
      size_t outer = 0, inner = 0;
      for (uint32_t id : p.outer_ids) outer += p.kernel_ids.count(id);
      for (uint32_t id : p.inner_ids) inner += p.kernel_ids.count(id);
      std::printf("    sampled launches %zu (with a nested driver id: %zu); a kernel record carries the outer (runtime) "
                  "id of %zu of them, the inner (driver) id of %zu\n",
                  p.outer_ids.size(), p.inner_ids.size(), outer, inner);
      // Duty modes: what the counts scale to over the whole connection, by time.
      const double elapsed = static_cast<double>(s.host_time_ns - p.first_stats.host_time_ns);
      const double on = static_cast<double>(s.activity_on_ns - p.first_stats.activity_on_ns);
      const double scale = on > 0 && elapsed > 0 ? elapsed / on : 1.0;
      std::printf("    activity on %.3f of %.3f s: time scale %.3f\n", on / 1e9, elapsed / 1e9, scale);
      for (const auto& [name, t] : p.by_name) {
        std::printf("    %8llu x %12llu ns  (scaled %10.0f x %14.0f ns)  %s\n", (unsigned long long)t.count,
                    (unsigned long long)t.total_ns, t.count * scale, t.total_ns * scale, name.c_str());
      }
    }
    std::fflush(stdout);
  }
  return 0;
}
