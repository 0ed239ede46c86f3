#include "bench/server_load/fleet_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/logging.h"

namespace warpscope::bench {
namespace {

// splitmix64: fast, and good enough for synthetic data.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(Mix(seed)) {}
  uint64_t Next() { return Mix(state++); }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>((Next() >> 32) * n >> 32); }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // 0 with probability p, 1 with p(1-p), ... capped at `cap`.
  uint32_t Geometric(double p, uint32_t cap) {
    uint32_t n = 0;
    while (n < cap && Unit() >= p) ++n;
    return n;
  }
};

enum class Lang { kNative, kPython, kJava, kGo };

// The fleet's software. Names are made up but shaped like the real thing.
struct ProgramSpec {
  const char* comm;
  const char* exe;
  Lang lang;
  std::vector<const char*> threads;  // the first is the main thread
  const char* name_space;            // C++ namespace, Java package, Go package or Python package
  std::vector<const char*> libs;     // native libraries on the leaf side of the app frames
  double fleet_weight;               // how often a node runs it (0: every node runs one)
};

const std::vector<ProgramSpec>& Catalogue() {
  static const std::vector<ProgramSpec> kPrograms = {
      {"kubelet", "/usr/bin/kubelet", Lang::kGo, {"kubelet"}, "k8s.io/kubernetes/pkg/kubelet", {}, 0},
      {"containerd", "/usr/bin/containerd", Lang::kGo, {"containerd"}, "github.com/containerd/containerd", {}, 0},
      {"gunicorn",
       "/usr/bin/python3.11",
       Lang::kPython,
       {"gunicorn", "ThreadPoolExecu"},
       "shop",
       {"/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libssl.so.3"},
       3},
      {"celery",
       "/usr/bin/python3.11",
       Lang::kPython,
       {"celery"},
       "tasks",
       {"/usr/lib/x86_64-linux-gnu/libz.so.1"},
       1.5},
      {"java",
       "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
       Lang::kJava,
       {"java", "C2 CompilerThre", "GC Thread#0", "http-nio-8080-e"},
       "com.acme.orders",
       {"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"},
       2},
      {"envoy",
       "/usr/local/bin/envoy",
       Lang::kNative,
       {"envoy", "wrk:worker_0", "wrk:worker_1"},
       "Envoy::Http",
       {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libssl.so.3"},
       2},
      {"postgres",
       "/usr/lib/postgresql/15/bin/postgres",
       Lang::kNative,
       {"postgres"},
       "",
       {"/usr/lib/x86_64-linux-gnu/libz.so.1"},
       1},
      {"redis-server", "/usr/bin/redis-server", Lang::kNative, {"redis-server", "io_thd_1"}, "", {}, 1},
      {"nginx", "/usr/sbin/nginx", Lang::kNative, {"nginx"}, "", {"/usr/lib/x86_64-linux-gnu/libssl.so.3"}, 1},
      {"trainer",
       "/opt/ml/bin/trainer",
       Lang::kNative,
       {"trainer", "pt_data_worker", "pt_autograd_0"},
       "ml::train",
       {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/opt/ml/lib/libtorch_cpu.so"},
       1},
      {"node",
       "/usr/bin/node",
       Lang::kNative,
       {"node", "libuv-worker"},
       "v8::internal",
       {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6"},
       1},
  };
  return kPrograms;
}

constexpr int kServicesPerNode = 8;
constexpr int kSharedStacksPerProgram = 600;
constexpr int kUniqueStacksPerProcess = 40;
constexpr int kAppFunctionsPerProgram = 400;
constexpr int kLibFunctionsPerLib = 120;
constexpr int kTrunkDepth = 6;
constexpr double kBranchP = 0.7;
constexpr int kLayerWidth = 12;
const char* const kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

const char* const kVerbs[] = {"handle",   "process", "parse",  "encode",   "decode",   "read",      "write",    "flush",
                              "lookup",   "insert",  "update", "schedule", "dispatch", "serialize", "compress", "hash",
                              "validate", "render",  "fetch",  "apply",    "merge",    "scan",      "emit",     "poll",
                              "resolve",  "commit",  "load",   "store",    "build",    "visit"};
const char* const kNouns[] = {"Request", "Response", "Header",  "Buffer", "Frame",   "Row",    "Batch", "Index",
                              "Cache",   "Session",  "Token",   "Record", "Chunk",   "Stream", "Query", "Plan",
                              "Tuple",   "Page",     "Block",   "Event",  "Message", "Packet", "Route", "Span",
                              "Metric",  "Order",    "Payment", "User",   "Item",    "Config"};
const char* const kClasses[] = {"Connection", "Codec",   "Router",  "Filter",   "Pool",      "Executor", "Planner",
                                "Scanner",    "Encoder", "Handler", "Registry", "Allocator", "Worker",   "Dispatcher",
                                "Manager",    "Reader",  "Writer",  "Service",  "Client",    "Server"};

template <size_t N>
const char* Pick(const char* const (&list)[N], uint64_t h) {
  return list[h % N];
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string HexId(uint64_t h) {
  char buf[49];
  for (int i = 0; i < 48; i += 16) snprintf(buf + i, 17, "%016llx", static_cast<unsigned long long>(Mix(h + i)));
  return std::string(buf, 40);
}

// Real kernel and libc names so the flame graphs look familiar.
const std::vector<std::vector<const char*>> kKernelChains = {
    {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_read", "ksys_read", "vfs_read", "sock_read_iter",
     "tcp_recvmsg", "tcp_recvmsg_locked", "skb_copy_datagram_iter", "_copy_to_iter"},
    {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_write", "ksys_write", "vfs_write", "sock_write_iter",
     "tcp_sendmsg", "tcp_sendmsg_locked", "tcp_push", "__tcp_push_pending_frames"},
    {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_epoll_wait", "do_epoll_wait", "ep_poll",
     "schedule_hrtimeout_range", "schedule", "__schedule"},
    {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_futex", "do_futex", "futex_wait", "futex_wait_queue",
     "schedule", "__schedule"},
    {"asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault", "__handle_mm_fault",
     "do_anonymous_page", "alloc_pages", "clear_page_erms"},
    {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_openat", "do_sys_openat2", "do_filp_open",
     "path_openat", "link_path_walk", "inode_permission"},
};
const char* const kLibcLeaves[] = {"__memmove_avx_unaligned_erms",
                                   "malloc",
                                   "_int_malloc",
                                   "free",
                                   "_int_free",
                                   "pthread_mutex_lock",
                                   "__lll_lock_wait",
                                   "__strlen_avx2",
                                   "__memcmp_avx2_movbe",
                                   "__memset_avx2_unaligned_erms"};

}  // namespace

struct FleetModel::Program {
  const ProgramSpec* spec = nullptr;
  uint64_t seed = 0;
  uint32_t exe_mapping = 0;
  std::vector<uint32_t> root;            // function ids, root first
  std::vector<uint32_t> app_functions;   // the middle of the stack
  std::vector<uint32_t> lib_functions;   // native libraries leafward of the app frames
  std::vector<uint32_t> leaf_functions;  // the runtime's own leaves (Go runtime, JVM), may be empty
  std::vector<uint32_t> shared_stacks;   // fleet-wide stack ids, in rank order
};

AliasTable::AliasTable(const std::vector<double>& weights) : prob_(weights.size()), alias_(weights.size()) {
  const size_t n = weights.size();
  double sum = 0;
  for (double w : weights) sum += w;
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * n / sum;
    (scaled[i] < 1 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back(), l = large.back();
    small.pop_back();
    prob_[s] = scaled[s];
    alias_[s] = l;
    scaled[l] -= 1 - scaled[s];
    if (scaled[l] < 1) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (uint32_t i : large) prob_[i] = 1, alias_[i] = i;
  for (uint32_t i : small) prob_[i] = 1, alias_[i] = i;
}

uint32_t AliasTable::Draw(uint64_t bits) const {
  const uint32_t i = static_cast<uint32_t>(((bits >> 32) * prob_.size()) >> 32);
  const double u = static_cast<double>(bits & 0xffffffffu) * 0x1.0p-32;
  return u < prob_[i] ? i : alias_[i];
}

FleetModel::FleetModel(const FleetOptions& options) : options_(options) {
  strings_.push_back("");
  string_ids_.emplace("", 0);
  CHECK(String("cpu") == kCpuString && String("samples") == kSamplesString);
  const char* keys[5] = {"comm", "exe", "node", "pid", "thread"};  // sorted: label sets are sorted by key
  for (int i = 0; i < 5; ++i) label_keys_[i] = String(keys[i]);
  BuildCatalogue();
  nodes_.resize(options_.nodes);
  for (int n = 0; n < options_.nodes; ++n) BuildNode(n);
  // Only needed while building.
  string_ids_.clear();
  stack_ids_.clear();
  location_ids_.clear();
}

FleetModel::~FleetModel() = default;

size_t FleetModel::total_series() const {
  size_t n = 0;
  for (const Node& node : nodes_) n += node.series.size();
  return n;
}

uint32_t FleetModel::String(const std::string& s) {
  auto [it, inserted] = string_ids_.emplace(s, static_cast<uint32_t>(strings_.size()));
  if (inserted) strings_.push_back(s);
  return it->second;
}

uint32_t FleetModel::AddMapping(const std::string& filename) {
  for (size_t i = 0; i < mappings_.size(); ++i) {
    if (strings_[mappings_[i].filename] == filename) return static_cast<uint32_t>(i + 1);
  }
  mappings_.push_back({String(filename), String(HexId(std::hash<std::string>()(filename) ^ options_.seed))});
  return static_cast<uint32_t>(mappings_.size());
}

uint32_t FleetModel::AddFunction(uint32_t mapping, const std::string& name, const std::string& file,
                                 v1::FrameKind kind) {
  Function f;
  f.name = String(name);
  f.system_name = f.name;
  if (kind == v1::FRAME_KIND_NATIVE && name.find("::") != std::string::npos) {
    // An Itanium-style mangled name, so system_name differs from name as in real symbol tables.
    std::string mangled = "_ZN";
    size_t start = 0;
    for (size_t pos; (pos = name.find("::", start)) != std::string::npos; start = pos + 2) {
      mangled += std::to_string(pos - start) + name.substr(start, pos - start);
    }
    mangled += std::to_string(name.size() - start) + name.substr(start) + "Ev";
    f.system_name = String(mangled);
  }
  f.filename = String(file);
  f.mapping = kind == v1::FRAME_KIND_NATIVE ? mapping : 0;
  f.kind = kind;
  const uint64_t h = Mix(std::hash<std::string>()(name) ^ mapping);
  f.base_address = kind == v1::FRAME_KIND_KERNEL ? 0xffffffff81000000ULL + (h & 0xffffff0) : 0x1000 + (h & 0x3ffff0);
  f.first_line = kind == v1::FRAME_KIND_PYTHON || !file.empty() ? 10 + static_cast<int64_t>(h % 900) : 0;
  functions_.push_back(f);
  return static_cast<uint32_t>(functions_.size() - 1);
}

uint32_t FleetModel::LocationFor(uint32_t function, uint32_t variant) {
  const uint64_t key = static_cast<uint64_t>(function) << 32 | variant;
  auto [it, inserted] = location_ids_.emplace(key, static_cast<uint32_t>(locations_.size()));
  if (inserted) locations_.push_back({function, variant});
  return it->second;
}

void FleetModel::BuildCatalogue() {
  const uint32_t libc = AddMapping(kLibc);
  for (const auto& chain : kKernelChains) {
    std::vector<uint32_t> fns;
    for (const char* name : chain) fns.push_back(AddFunction(0, name, "", v1::FRAME_KIND_KERNEL));
    kernel_chains_.push_back(std::move(fns));
  }
  for (const char* name : kLibcLeaves) libc_leaves_.push_back(AddFunction(libc, name, "", v1::FRAME_KIND_NATIVE));
  const uint32_t start = AddFunction(libc, "__libc_start_main", "", v1::FRAME_KIND_NATIVE);
  const uint32_t start_call = AddFunction(libc, "__libc_start_call_main", "", v1::FRAME_KIND_NATIVE);
  const uint32_t start_thread = AddFunction(libc, "start_thread", "", v1::FRAME_KIND_NATIVE);
  const uint32_t clone3 = AddFunction(libc, "__clone3", "", v1::FRAME_KIND_NATIVE);

  for (size_t p = 0; p < Catalogue().size(); ++p) {
    const ProgramSpec& spec = Catalogue()[p];
    Program prog;
    prog.spec = &spec;
    prog.seed = Mix(options_.seed * 1000 + p);
    const std::string ns = spec.name_space;
    const uint32_t exe = AddMapping(spec.exe);
    // JIT-compiled Java methods come from perf maps, as an agent sees them.
    prog.exe_mapping = spec.lang == Lang::kJava ? AddMapping("[jit]") : exe;
    // Root prefixes: how each runtime enters its code.
    switch (spec.lang) {
      case Lang::kGo:
        prog.root = {
            AddFunction(exe, "runtime.goexit", "runtime/asm_amd64.s", v1::FRAME_KIND_NATIVE),
            AddFunction(exe, "runtime.main", "runtime/proc.go", v1::FRAME_KIND_NATIVE),
            AddFunction(exe, "main.main", "cmd/" + std::string(spec.comm) + "/main.go", v1::FRAME_KIND_NATIVE)};
        for (const char* n : {"runtime.mallocgc", "runtime.memmove", "runtime.mapaccess2_faststr", "runtime.scanobject",
                              "runtime.findObject", "runtime.futex"}) {
          prog.leaf_functions.push_back(AddFunction(exe, n, "runtime/malloc.go", v1::FRAME_KIND_NATIVE));
        }
        break;
      case Lang::kPython:
        prog.root = {AddFunction(exe, "_start", "", v1::FRAME_KIND_NATIVE),
                     start_call,
                     start,
                     AddFunction(exe, "Py_BytesMain", "Modules/main.c", v1::FRAME_KIND_NATIVE),
                     AddFunction(exe, "Py_RunMain", "Modules/main.c", v1::FRAME_KIND_NATIVE),
                     AddFunction(exe, "_PyRun_SimpleFileObject", "Python/pythonrun.c", v1::FRAME_KIND_NATIVE),
                     AddFunction(exe, "PyEval_EvalCode", "Python/ceval.c", v1::FRAME_KIND_NATIVE)};
        break;
      case Lang::kJava: {
        const uint32_t jvm = AddMapping(spec.libs[0]);
        prog.root = {clone3,
                     start_thread,
                     AddFunction(jvm, "thread_native_entry", "os_linux.cpp", v1::FRAME_KIND_NATIVE),
                     AddFunction(jvm, "Thread::call_run", "thread.cpp", v1::FRAME_KIND_NATIVE),
                     AddFunction(jvm, "JavaThread::thread_main_inner", "thread.cpp", v1::FRAME_KIND_NATIVE),
                     AddFunction(jvm, "JavaCalls::call_helper", "javaCalls.cpp", v1::FRAME_KIND_NATIVE)};
        break;
      }
      case Lang::kNative:
        prog.root = {AddFunction(exe, "_start", "", v1::FRAME_KIND_NATIVE), start_call, start,
                     AddFunction(exe, "main", "src/main.cc", v1::FRAME_KIND_NATIVE)};
        break;
    }
    // The program's own functions.
    for (int i = 0; i < kAppFunctionsPerProgram; ++i) {
      const uint64_t h = Mix(prog.seed + 17 * i);
      const std::string verb = Pick(kVerbs, h), noun = Pick(kNouns, h >> 8), cls = Pick(kClasses, h >> 16);
      const std::string suffix = i >= 200 ? std::to_string(i % 7) : "";  // keep names distinct enough
      switch (spec.lang) {
        case Lang::kGo:
          prog.app_functions.push_back(
              AddFunction(exe, ns + ".(*" + cls + ")." + char(std::toupper(verb[0])) + verb.substr(1) + noun + suffix,
                          Lower(cls) + ".go", v1::FRAME_KIND_NATIVE));
          break;
        case Lang::kPython:
          prog.app_functions.push_back(AddFunction(0, cls + "." + verb + "_" + Lower(noun) + suffix,
                                                   ns + "/" + Lower(cls) + ".py", v1::FRAME_KIND_PYTHON));
          break;
        case Lang::kJava:
          prog.app_functions.push_back(AddFunction(prog.exe_mapping, ns + "." + cls + "." + verb + noun + suffix,
                                                   cls + ".java", v1::FRAME_KIND_NATIVE));
          break;
        case Lang::kNative: {
          const std::string name = ns.empty() ? verb + noun + suffix : ns + "::" + cls + "::" + verb + noun + suffix;
          prog.app_functions.push_back(AddFunction(exe, name, "src/" + Lower(cls) + ".cc", v1::FRAME_KIND_NATIVE));
          break;
        }
      }
    }
    for (size_t l = (spec.lang == Lang::kJava ? 1 : 0); l < spec.libs.size(); ++l) {
      const uint32_t lib = AddMapping(spec.libs[l]);
      std::string base = spec.libs[l];
      base = base.substr(base.rfind('/') + 1);
      base = base.substr(0, base.find('.'));
      for (int i = 0; i < kLibFunctionsPerLib; ++i) {
        const uint64_t h = Mix(std::hash<std::string>()(base) + i);
        prog.lib_functions.push_back(
            AddFunction(lib, base + "_" + Pick(kVerbs, h) + Pick(kNouns, h >> 8) + std::to_string(i % 10), "",
                        v1::FRAME_KIND_NATIVE));
      }
    }
    programs_.push_back(std::move(prog));
  }
  // The shared stack pools (the same software everywhere).
  for (Program& prog : programs_) {
    for (int i = 0; prog.shared_stacks.size() < kSharedStacksPerProgram && i < 50 * kSharedStacksPerProgram; ++i) {
      const size_t before = distinct_stacks();
      const uint32_t id = InternStack(MakeStack(prog, Mix(prog.seed ^ (0x5157ULL << 40) ^ i), false));
      if (distinct_stacks() > before) prog.shared_stacks.push_back(id);
    }
  }
}

// A stack, root first, as location ids. The app frames follow a random walk
// down the program's call tree: frame k's function is a hash of the choices
// so far, so stacks that share a walk prefix share those frames.
std::vector<uint32_t> FleetModel::MakeStack(const Program& prog, uint64_t path_seed, bool node_unique) {
  Rng r(path_seed);
  const uint32_t depth = 20 + r.Below(21);
  const double leaf_kind = r.Unit();
  std::vector<uint32_t> leaf;  // function ids, root first
  if (leaf_kind < 0.35) {
    const auto& chain = kernel_chains_[r.Below(static_cast<uint32_t>(kernel_chains_.size()))];
    leaf.assign(chain.begin(), chain.begin() + 3 + r.Below(static_cast<uint32_t>(chain.size()) - 2));
  } else if (leaf_kind < 0.6) {
    leaf.push_back(libc_leaves_[r.Below(static_cast<uint32_t>(libc_leaves_.size()))]);
  } else if (leaf_kind < 0.75 && !prog.leaf_functions.empty()) {
    leaf.push_back(prog.leaf_functions[r.Below(static_cast<uint32_t>(prog.leaf_functions.size()))]);
  }
  std::vector<uint32_t> libs;
  if (!prog.lib_functions.empty() && r.Unit() < 0.4) {
    const uint32_t n = 1 + r.Below(4);
    uint64_t h = r.Next();
    for (uint32_t i = 0; i < n; ++i, h = Mix(h)) libs.push_back(prog.lib_functions[h % prog.lib_functions.size()]);
  }
  const int fixed = static_cast<int>(prog.root.size() + leaf.size() + libs.size());
  const int middle = std::max(5, static_cast<int>(depth) - fixed);
  const int diverge_at = node_unique ? 2 + static_cast<int>(r.Below(static_cast<uint32_t>(middle - 2))) : -1;

  std::vector<uint32_t> frames;
  frames.reserve(fixed + middle);
  for (uint32_t f : prog.root) frames.push_back(LocationFor(f, 0));
  uint64_t h = prog.seed;
  for (int k = 0; k < middle; ++k) {
    // Few branches near the root (event loop, dispatch), more further down.
    const uint64_t choice = k == diverge_at ? 16 + r.Next() % 100000 : r.Geometric(k < kTrunkDepth ? 0.9 : kBranchP, 4);
    h = Mix(h ^ (choice + 1) * 0x100000001b3ULL);
    // Most functions are called from one site, some from two. Code is layered: frame k calls into the functions of
    // layer k + 1.
    const size_t fn = (k * kLayerWidth + h % kLayerWidth) % prog.app_functions.size();
    frames.push_back(LocationFor(prog.app_functions[fn], (h >> 40) % 4 == 0));
  }
  for (uint32_t f : libs) frames.push_back(LocationFor(f, 0));
  for (size_t i = 0; i < leaf.size(); ++i) {
    frames.push_back(LocationFor(leaf[i], i + 1 == leaf.size() ? 1 + r.Below(8) : 0));
  }
  return frames;
}

uint32_t FleetModel::InternStack(std::vector<uint32_t> frames) {
  std::reverse(frames.begin(), frames.end());  // the wire wants leaf first
  std::string key(reinterpret_cast<const char*>(frames.data()), frames.size() * sizeof(uint32_t));
  auto [it, inserted] = stack_ids_.emplace(std::move(key), static_cast<uint32_t>(distinct_stacks()));
  if (inserted) {
    stack_frames_.insert(stack_frames_.end(), frames.begin(), frames.end());
    stack_offsets_.push_back(static_cast<uint32_t>(stack_frames_.size()));
  }
  return it->second;
}

void FleetModel::BuildNode(int n) {
  Node& node = nodes_[n];
  Rng r(Mix(options_.seed) ^ Mix(0xA0DE0000ULL + n));
  node.busy_cores = 2 + static_cast<int>(r.Below(5));
  const uint32_t node_name = String(NodeName(n));

  // Two infrastructure daemons, then services drawn by fleet weight.
  std::vector<size_t> programs = {0, 1};
  std::vector<double> fleet_weights;
  for (const ProgramSpec& spec : Catalogue()) fleet_weights.push_back(spec.fleet_weight);
  AliasTable pick(fleet_weights);
  for (int i = 0; i < kServicesPerNode; ++i) programs.push_back(pick.Draw(r.Next()));

  std::vector<double> cpu_weights;
  uint32_t pid = 300 + r.Below(2000);
  for (size_t i = 0; i < programs.size(); ++i) {
    Program& prog = programs_[programs[i]];
    const ProgramSpec& spec = *prog.spec;
    Process proc;
    pid += 1 + r.Below(40000);
    proc.first_series = static_cast<uint32_t>(node.series.size());
    std::vector<double> thread_weights;
    const uint32_t threads = 1 + r.Below(static_cast<uint32_t>(spec.threads.size()));
    for (uint32_t t = 0; t < threads; ++t) {
      Series s;
      s.values[0] = String(spec.comm);
      s.values[1] = String(spec.exe);
      s.values[2] = node_name;
      s.values[3] = String(std::to_string(pid));
      s.values[4] = String(spec.threads[t]);
      node.series.push_back(s);
      thread_weights.push_back(1.0 / (t + 1));
    }
    proc.series_count = threads;
    proc.thread_weights = AliasTable(thread_weights);

    // The program's pool in a slightly different order on every process, with
    // this process's own stacks mixed in (every 15th rank from rank 5).
    std::vector<uint32_t> shared = prog.shared_stacks;
    for (size_t k = 0; k + 1 < shared.size(); ++k) {
      if (r.Unit() < 0.5) std::swap(shared[k], shared[k + 1 + r.Below(std::min<uint32_t>(3, shared.size() - k - 1))]);
    }
    std::vector<uint32_t> unique;
    for (int u = 0; unique.size() < kUniqueStacksPerProcess && u < 50 * kUniqueStacksPerProcess; ++u) {
      const size_t before = distinct_stacks();
      const uint32_t id = InternStack(MakeStack(prog, Mix(r.Next()), true));
      if (distinct_stacks() > before) unique.push_back(id);
    }
    size_t next_unique = 0;
    for (size_t k = 0; k < shared.size(); ++k) {
      if (k >= 5 && (k - 5) % 15 == 0 && next_unique < unique.size()) proc.stacks.push_back(unique[next_unique++]);
      proc.stacks.push_back(shared[k]);
    }
    while (next_unique < unique.size()) proc.stacks.push_back(unique[next_unique++]);
    std::vector<double> rank_weights(proc.stacks.size());
    for (size_t k = 0; k < rank_weights.size(); ++k) rank_weights[k] = 1.0 / std::pow(k + 1.0, options_.stack_zipf_s);
    proc.stack_ranks = AliasTable(rank_weights);

    // CPU share: daemons a little, services by a per-node Zipf over a random order.
    cpu_weights.push_back(i < 2 ? 0.08 : 1.0 / (1 + r.Below(kServicesPerNode)));
    node.processes.push_back(std::move(proc));
  }
  node.cpu_share = AliasTable(cpu_weights);
}

void FleetModel::SampleWindow(int n, int64_t window, std::vector<WindowRow>* rows) const {
  const Node& node = nodes_[n];
  Rng r(Mix(options_.seed ^ 0x77ULL) ^ Mix(static_cast<uint64_t>(window) * 4096 + n));
  const double seconds = options_.window_ns / 1e9;
  const int samples = static_cast<int>(node.busy_cores * options_.hz * seconds * (0.85 + 0.3 * r.Unit()));
  std::vector<uint64_t> keys(samples);
  for (int i = 0; i < samples; ++i) {
    const Process& proc = node.processes[node.cpu_share.Draw(r.Next())];
    const uint32_t series = proc.first_series + proc.thread_weights.Draw(r.Next());
    const uint32_t stack = proc.stacks[proc.stack_ranks.Draw(r.Next())];
    keys[i] = static_cast<uint64_t>(series) << 32 | stack;
  }
  std::sort(keys.begin(), keys.end());
  rows->clear();
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    while (j < keys.size() && keys[j] == keys[i]) ++j;
    rows->push_back(
        {static_cast<uint32_t>(keys[i] >> 32), static_cast<uint32_t>(keys[i]), static_cast<int64_t>(j - i)});
    i = j;
  }
}

}  // namespace warpscope::bench
