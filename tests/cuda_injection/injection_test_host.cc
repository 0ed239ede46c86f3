// cuda_injection_host: the "CUDA application" of injection_test.cc.
//
// It loads libwarpscope_cuda.so (argv[1]) with dlopen and calls
// InitializeInjection as the CUDA driver would, then obeys one command per
// line on stdin and answers one line on stdout ("ok ..." or "err ...").
// Launches go through the fake CUPTI's hooks (the fake is the library named
// by WARPSCOPE_CUPTI_PATH; dlopen of the same path gives the same instance).
// It links neither CUDA nor CUPTI.
#include <cupti.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/fake_cupti/fake_cupti_hooks.h"

namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Hooks {
  ws_fake_cupti_call_count_fn call_count = nullptr;
  ws_fake_cupti_subscribed_fn subscribed = nullptr;
  ws_fake_cupti_activity_enabled_fn activity_enabled = nullptr;
  ws_fake_cupti_enable_count_fn enable_count = nullptr;
  ws_fake_cupti_launch_fn launch = nullptr;
  ws_fake_cupti_memcpy_fn memcpy = nullptr;
  ws_fake_cupti_flush_fn flush = nullptr;
  ws_fake_cupti_records_dropped_fn records_dropped = nullptr;
  ws_fake_cupti_fail_fn fail = nullptr;
  ws_fake_cupti_occupy_fn occupy = nullptr;
  ws_fake_cupti_min_detached_ns_fn min_detached_ns = nullptr;
  ws_fake_cupti_set_device_fn set_device = nullptr;
  ws_fake_cupti_context_created_fn context_created = nullptr;
  ws_fake_cupti_context_destroying_fn context_destroying = nullptr;
  ws_fake_cupti_load_module_fn load_module = nullptr;
  ws_fake_cupti_pc_sample_fn pc_sample = nullptr;
  ws_fake_cupti_pc_sampling_period_fn pc_period = nullptr;
  ws_fake_cupti_graph_launch_fn graph_launch = nullptr;
};

// Another CUPTI client (libws_fake_cupti_client.so), when loaded.
struct Client {
  int (*start)() = nullptr;
  int (*stop)(int finalize) = nullptr;
  uint64_t (*records)() = nullptr;
  uint64_t (*callbacks)() = nullptr;
};

uint64_t Fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (char c : bytes) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

bool LoadHooks(Hooks* h) {
  const char* path = std::getenv("WARPSCOPE_CUPTI_PATH");
  if (path == nullptr) return false;
  void* fake = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (fake == nullptr) return false;
#define WS_HOOK(member, name) h->member = reinterpret_cast<decltype(h->member)>(dlsym(fake, name));
  WS_HOOK(call_count, "ws_fake_cupti_call_count")
  WS_HOOK(subscribed, "ws_fake_cupti_subscribed")
  WS_HOOK(activity_enabled, "ws_fake_cupti_activity_enabled")
  WS_HOOK(enable_count, "ws_fake_cupti_enable_count")
  WS_HOOK(launch, "ws_fake_cupti_launch")
  WS_HOOK(memcpy, "ws_fake_cupti_memcpy")
  WS_HOOK(flush, "ws_fake_cupti_flush")
  WS_HOOK(records_dropped, "ws_fake_cupti_records_dropped")
  WS_HOOK(fail, "ws_fake_cupti_fail")
  WS_HOOK(min_detached_ns, "ws_fake_cupti_min_detached_ns")
  WS_HOOK(occupy, "ws_fake_cupti_occupy")
  WS_HOOK(set_device, "ws_fake_cupti_set_device")
  WS_HOOK(context_created, "ws_fake_cupti_context_created")
  WS_HOOK(context_destroying, "ws_fake_cupti_context_destroying")
  WS_HOOK(load_module, "ws_fake_cupti_load_module")
  WS_HOOK(pc_sample, "ws_fake_cupti_pc_sample")
  WS_HOOK(pc_period, "ws_fake_cupti_pc_sampling_period")
  WS_HOOK(graph_launch, "ws_fake_cupti_graph_launch")
#undef WS_HOOK
  return h->launch != nullptr;
}

void Reply(const std::string& line) {
  std::cout << line << std::endl;  // flushes: the test reads line by line
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBWARPSCOPE_CUDA\n", argv[0]);
    return 2;
  }
  void* library = nullptr;
  Hooks hooks;
  Client client;
  bool have_hooks = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "init") {
      library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
      if (library == nullptr) {
        Reply(std::string("err ") + dlerror());
        continue;
      }
      auto init = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
      if (init == nullptr) {
        Reply("err no InitializeInjection");
        continue;
      }
      const int result = init();
      have_hooks = LoadHooks(&hooks);
      Reply("ok " + std::to_string(result));
    } else if (cmd == "client_load") {
      // client_load PATH: another CUPTI client, loaded the way the
      // application loads its libraries (torch loads Kineto's before cuInit).
      std::string path;
      in >> path;
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        Reply(std::string("err ") + dlerror());
        continue;
      }
      client.start = reinterpret_cast<int (*)()>(dlsym(handle, "ws_fake_client_start"));
      client.stop = reinterpret_cast<int (*)(int)>(dlsym(handle, "ws_fake_client_stop"));
      client.records = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "ws_fake_client_records"));
      client.callbacks = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "ws_fake_client_callbacks"));
      Reply(client.start != nullptr ? "ok" : "err no client functions");
    } else if (cmd == "client_start") {
      Reply(client.start != nullptr ? "ok " + std::to_string(client.start()) : "err no client");
    } else if (cmd == "client_stop") {
      int finalize = 0;
      in >> finalize;
      Reply(client.stop != nullptr ? "ok " + std::to_string(client.stop(finalize)) : "err no client");
    } else if (cmd == "client_records") {
      Reply(client.records != nullptr ? "ok " + std::to_string(client.records()) : "err no client");
    } else if (cmd == "client_callbacks") {
      Reply(client.callbacks != nullptr ? "ok " + std::to_string(client.callbacks()) : "err no client");
    } else if (cmd == "quit") {
      Reply("ok");
      return 0;
    } else if (cmd == "ping") {
      Reply("ok");
    } else if (cmd == "probe") {
      const bool exported = library != nullptr && dlsym(library, "warpscope_cuda_launch_probe") != nullptr;
      Reply("ok " + std::to_string(exported ? 1 : 0));
    } else if (!have_hooks) {
      Reply("err no fake CUPTI");
    } else if (cmd == "calls") {
      std::string name;
      in >> name;
      Reply("ok " + std::to_string(hooks.call_count(name.empty() ? nullptr : name.c_str())));
    } else if (cmd == "min_detached_ms") {
      const uint64_t ns = hooks.min_detached_ns();
      Reply("ok " + std::to_string(ns == UINT64_MAX ? 999999 : ns / 1000000));
    } else if (cmd == "subscribed") {
      Reply("ok " + std::to_string(hooks.subscribed()));
    } else if (cmd == "enabled") {
      int kind = 0;
      in >> kind;
      Reply("ok " + std::to_string(hooks.activity_enabled(kind)));
    } else if (cmd == "enables") {
      int kind = 0;
      in >> kind;
      Reply("ok " + std::to_string(hooks.enable_count(kind)));
    } else if (cmd == "wait_subscribed") {
      int want = 0, timeout_ms = 0;
      in >> want >> timeout_ms;
      const uint64_t deadline = NowNs() + static_cast<uint64_t>(timeout_ms) * 1000000ull;
      while (hooks.subscribed() != want && NowNs() < deadline) usleep(5000);
      Reply(hooks.subscribed() == want ? "ok" : "err timeout");
    } else if (cmd == "launch") {
      // launch THREADS COUNT PACE_US DOMAIN CBID NESTED_CBID NAME DURATION_NS
      int threads = 1, count = 0, pace_us = 0, domain = 0;
      uint32_t cbid = 0, nested = 0;
      std::string name;
      uint64_t duration = 0;
      in >> threads >> count >> pace_us >> domain >> cbid >> nested >> name >> duration;
      std::atomic<uint64_t> recorded{0};
      const uint64_t start = NowNs();
      std::vector<std::thread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
          uint64_t mine = 0;
          for (int i = 0; i < count; ++i) {
            const uint64_t graph = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ? 0x5000 : 0;
            if (hooks.launch(domain, cbid, name.c_str(), duration, nested, graph) != 0) mine++;
            if (pace_us > 0) usleep(static_cast<useconds_t>(pace_us));
          }
          recorded.fetch_add(mine);
        });
      }
      for (auto& w : workers) w.join();
      Reply("ok " + std::to_string(NowNs() - start) + " " + std::to_string(recorded.load()));
    } else if (cmd == "launch_pair") {
      // launch_pair COUNT_A PACE_A_US NAME_A COUNT_B PACE_B_US NAME_B: two
      // native threads launching at once (a main thread and a busier
      // worker, like PyTorch's autograd thread); replies the records queued
      // for each.
      int count_a = 0, count_b = 0, pace_a = 0, pace_b = 0;
      std::string name_a, name_b;
      in >> count_a >> pace_a >> name_a >> count_b >> pace_b >> name_b;
      std::atomic<uint64_t> recorded_a{0}, recorded_b{0};
      auto run = [&](int count, int pace_us, const std::string& name, std::atomic<uint64_t>* recorded) {
        for (int i = 0; i < count; ++i) {
          if (hooks.launch(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, name.c_str(),
                           1000, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0) != 0) {
            recorded->fetch_add(1);
          }
          if (pace_us > 0) usleep(static_cast<useconds_t>(pace_us));
        }
      };
      std::thread a(run, count_a, pace_a, name_a, &recorded_a);
      std::thread b(run, count_b, pace_b, name_b, &recorded_b);
      a.join();
      b.join();
      Reply("ok " + std::to_string(recorded_a.load()) + " " + std::to_string(recorded_b.load()));
    } else if (cmd == "graph") {
      // graph COUNT PACE_US GRAPH_EXEC NODES NAME DURATION_NS: replays of an
      // executable graph from this thread; replies the records queued.
      int count = 0, pace_us = 0;
      uint64_t exec = 0, duration = 0;
      uint32_t nodes = 0;
      std::string name;
      in >> count >> pace_us >> exec >> nodes >> name >> duration;
      uint64_t queued = 0;
      for (int i = 0; i < count; ++i) {
        queued += static_cast<uint64_t>(hooks.graph_launch(CUPTI_CB_DOMAIN_RUNTIME_API,
                                                           CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, exec,
                                                           nodes, name.c_str(), duration));
        if (pace_us > 0) usleep(static_cast<useconds_t>(pace_us));
      }
      Reply("ok " + std::to_string(queued));
    } else if (cmd == "memcpy") {
      uint64_t bytes = 0, duration = 0;
      in >> bytes >> duration;
      hooks.memcpy(bytes, duration);
      Reply("ok");
    } else if (cmd == "flush") {
      hooks.flush();
      Reply("ok");
    } else if (cmd == "occupy") {
      std::string tool;
      in >> tool;
      hooks.occupy(tool.c_str());
      Reply("ok");
    } else if (cmd == "device") {
      uint32_t device = 0;
      in >> device;
      hooks.set_device(device);
      Reply("ok");
    } else if (cmd == "context_created") {
      hooks.context_created();
      Reply("ok");
    } else if (cmd == "context_destroying") {
      hooks.context_destroying();
      Reply("ok");
    } else if (cmd == "module") {
      // module SIZE SEED: loads a made-up cubin; replies its CRC.
      size_t size = 0;
      uint32_t seed = 0;
      in >> size >> seed;
      const std::string cubin = WsFakeCuptiMadeUpCubin(size, seed);
      hooks.load_module(cubin.data(), cubin.size());
      Reply("ok " + std::to_string(Fnv1a(cubin)));
    } else if (cmd == "pc") {
      // pc FUNCTION CRC PC_OFFSET STALL_INDEX SAMPLES
      std::string function;
      uint64_t crc = 0, pc = 0;
      uint32_t stall = 0, samples = 0;
      in >> function >> crc >> pc >> stall >> samples;
      Reply("ok " + std::to_string(hooks.pc_sample(function.c_str(), crc, pc, stall, samples)));
    } else if (cmd == "pc_period") {
      uint32_t device = 0;
      in >> device;
      Reply("ok " + std::to_string(hooks.pc_period(device)));
    } else if (cmd == "dropped") {
      Reply("ok " + std::to_string(hooks.records_dropped()));
    } else if (cmd == "fail") {
      std::string name;
      int code = 0;
      in >> name >> code;
      hooks.fail(name.c_str(), code);
      Reply("ok");
    } else {
      Reply("err unknown command " + cmd);
    }
  }
  return 0;
}
