// A stand-in for libtorch_cpu.so's autograd engine, for the autograd test
// of GPU time (tests/integration/gpu_time_bpf_test.cc, driven by
// tests/testprogs/python/autograd_backward.py). No torch, no GPU: the
// functions are named as in PyTorch (torch::autograd::Engine::thread_init,
// thread_main, evaluate_function, call_function, the nodes' apply), so the
// agent's BPF unwinder and symbolizer see a backward pass in the shapes a
// real one has:
//   * the caller's thread (THPEngine_run_backward in libtorch_python.so ->
//     Engine::execute) hands the graph task to the device thread, then runs
//     thread_main itself for the CPU nodes (ToCopyBackward0 here) and
//     blocks until the device thread is done;
//   * the device thread (started at the first backward, as PyTorch's are,
//     in Engine::thread_init) runs MmBackward0 twice and AccumulateGrad,
//     whose post hook (DDP's c10d::Reducer::autograd_hook) waits for an
//     all-reduce in cudaStreamSynchronize.
// Launches and waits go through the fake CUPTI (ws_fake_torch_set_cuda).
#include <cupti.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/fakes/fake_cupti/fake_cupti_hooks.h"

#define WS_NOINLINE __attribute__((noinline, visibility("default")))
// After a call: no tail call, so the caller's frame stays on the stack.
#define WS_KEEP_FRAME() __asm__ volatile("" ::: "memory")

namespace {

ws_fake_cupti_launch_fn g_launch = nullptr;
ws_fake_cupti_synchronize_fn g_synchronize = nullptr;

// Kernel records queued, per kernel: what the test expects in the profile.
enum Kernel { kMm = 0, kAccumulate, kToCopy, kAllReduceWaits, kKernels };
std::atomic<int64_t> g_recorded[kKernels];

void Launch(Kernel which, const char* name, uint64_t ns) {
  if (g_launch(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, name, ns, 0, 0) != 0) {
    ++g_recorded[which];
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void ws_fake_torch_set_cuda(void* launch, void* synchronize) {
  g_launch = reinterpret_cast<ws_fake_cupti_launch_fn>(launch);
  g_synchronize = reinterpret_cast<ws_fake_cupti_synchronize_fn>(synchronize);
}

// Kernel records queued so far for kernel `which` (0 mm, 1 accumulate,
// 2 to_copy; 3: all-reduce waits made).
extern "C" __attribute__((visibility("default"))) int64_t ws_fake_torch_recorded(int which) {
  return which >= 0 && which < kKernels ? g_recorded[which].load() : -1;
}

namespace at {
struct Tensor {
  int64_t id = 0;
};
}  // namespace at

namespace c10d {
struct Reducer {
  WS_NOINLINE void autograd_hook(size_t index);
};
// DDP's hook: the gradient is ready, its bucket is all-reduced (the wait
// stands for NCCL's kernel and the stream synchronisation after it).
void Reducer::autograd_hook(size_t index) {
  g_synchronize(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 7, 1'000'000, "all_reduce_kernel", 800'000);
  ++g_recorded[kAllReduceWaits];
  WS_KEEP_FRAME();
}
}  // namespace c10d

namespace torch::autograd {

using variable_list = std::vector<at::Tensor>;

struct Node {
  virtual ~Node() = default;
  virtual variable_list apply(variable_list&& inputs) = 0;
  bool has_post_hook = false;
};

namespace generated {
struct MmBackward0 : Node {
  WS_NOINLINE variable_list apply(variable_list&& grads) override;
};
variable_list MmBackward0::apply(variable_list&& grads) {
  Launch(kMm, "mm_backward_kernel", 300'000);
  WS_KEEP_FRAME();
  return std::move(grads);
}
struct ToCopyBackward0 : Node {
  WS_NOINLINE variable_list apply(variable_list&& grads) override;
};
variable_list ToCopyBackward0::apply(variable_list&& grads) {
  Launch(kToCopy, "to_copy_kernel", 20'000);
  WS_KEEP_FRAME();
  return std::move(grads);
}
}  // namespace generated

struct AccumulateGrad : Node {
  WS_NOINLINE variable_list apply(variable_list&& grads) override;
};
variable_list AccumulateGrad::apply(variable_list&& grads) {
  Launch(kAccumulate, "accumulate_grad_kernel", 50'000);
  WS_KEEP_FRAME();
  return std::move(grads);
}

struct GraphTask {
  std::vector<Node*> device_nodes;  // run by the device thread
  std::vector<Node*> cpu_nodes;     // run by the caller's thread
  std::mutex mu;
  std::condition_variable cv;
  bool device_done = false;
};

struct ReadyQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<GraphTask>> tasks;
  WS_NOINLINE std::shared_ptr<GraphTask> pop();
};
std::shared_ptr<GraphTask> ReadyQueue::pop() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return !tasks.empty(); });
  std::shared_ptr<GraphTask> task = std::move(tasks.front());
  tasks.pop_front();
  return task;
}

struct Edge {
  int64_t input_nr = 0;
};
using edge_list = std::vector<Edge>;

c10d::Reducer g_reducer;

// engine.cpp's static call_function: the node, then its post hooks.
WS_NOINLINE variable_list call_function(std::shared_ptr<GraphTask>& graph_task, Node* func, variable_list& inputs) {
  variable_list outputs = func->apply(std::move(inputs));
  if (func->has_post_hook) g_reducer.autograd_hook(0);
  WS_KEEP_FRAME();
  return outputs;
}

class Engine {
 public:
  static Engine& get_default_engine();
  virtual ~Engine() = default;
  WS_NOINLINE virtual variable_list execute(const edge_list& roots, const variable_list& inputs, bool keep_graph,
                                            bool create_graph, bool accumulate_grad, const edge_list& outputs);
  WS_NOINLINE virtual void thread_init(int device, const std::shared_ptr<ReadyQueue>& ready_queue,
                                       bool should_increment);
  WS_NOINLINE void thread_main(const std::shared_ptr<GraphTask>& graph_task);
  WS_NOINLINE void evaluate_function(std::shared_ptr<GraphTask>& graph_task, Node* func, variable_list& inputs,
                                     const std::shared_ptr<ReadyQueue>& cpu_ready_queue);

 private:
  std::once_flag start_device_threads_;
  std::shared_ptr<ReadyQueue> device_queue_ = std::make_shared<ReadyQueue>();
  std::shared_ptr<ReadyQueue> cpu_queue_ = std::make_shared<ReadyQueue>();
  generated::MmBackward0 mm_[2];
  AccumulateGrad accumulate_;
  generated::ToCopyBackward0 to_copy_;
};

Engine& Engine::get_default_engine() {
  static Engine* engine = new Engine();
  return *engine;
}

void Engine::evaluate_function(std::shared_ptr<GraphTask>& graph_task, Node* func, variable_list& inputs,
                               const std::shared_ptr<ReadyQueue>& cpu_ready_queue) {
  variable_list outputs = call_function(graph_task, func, inputs);
  WS_KEEP_FRAME();
}

// On the device thread: every task its queue gets, forever. On the caller's
// thread (graph_task given): the task's CPU nodes, then it waits until the
// device thread finished the task.
void Engine::thread_main(const std::shared_ptr<GraphTask>& graph_task) {
  if (graph_task != nullptr) {
    std::shared_ptr<GraphTask> task = graph_task;
    for (Node* node : task->cpu_nodes) {
      variable_list inputs(1);
      evaluate_function(task, node, inputs, cpu_queue_);
    }
    std::unique_lock<std::mutex> lock(task->mu);
    task->cv.wait(lock, [&] { return task->device_done; });
    return;
  }
  for (;;) {
    std::shared_ptr<GraphTask> task = device_queue_->pop();
    for (Node* node : task->device_nodes) {
      variable_list inputs(1);
      evaluate_function(task, node, inputs, cpu_queue_);
    }
    std::lock_guard<std::mutex> lock(task->mu);
    task->device_done = true;
    task->cv.notify_all();
  }
}

void Engine::thread_init(int device, const std::shared_ptr<ReadyQueue>& ready_queue, bool should_increment) {
  thread_main(nullptr);
  WS_KEEP_FRAME();
}

variable_list Engine::execute(const edge_list& roots, const variable_list& inputs, bool keep_graph, bool create_graph,
                              bool accumulate_grad, const edge_list& outputs) {
  std::call_once(start_device_threads_, [this] {
    accumulate_.has_post_hook = true;
    std::thread(&Engine::thread_init, this, 0, device_queue_, true).detach();
  });
  auto task = std::make_shared<GraphTask>();
  task->device_nodes = {&mm_[0], &mm_[1], &accumulate_};
  task->cpu_nodes = {&to_copy_};
  {
    std::lock_guard<std::mutex> lock(device_queue_->mu);
    device_queue_->tasks.push_back(task);
  }
  device_queue_->cv.notify_one();
  thread_main(task);
  WS_KEEP_FRAME();
  return {};
}

}  // namespace torch::autograd

// For libtorch_python.so's THPEngine_run_backward.
__attribute__((visibility("default"))) torch::autograd::variable_list ws_fake_torch_execute() {
  torch::autograd::edge_list roots(1);
  torch::autograd::variable_list inputs(1);
  return torch::autograd::Engine::get_default_engine().execute(roots, inputs, false, false, true, {});
}
