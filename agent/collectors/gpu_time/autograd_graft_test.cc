#include "agent/collectors/gpu_time/autograd_graft.h"

#include <gtest/gtest.h>

namespace warpscope::gpu {
namespace {

CapturedFrame Native(const std::string& name) {
  CapturedFrame f;
  f.frame.has_mapping = true;
  f.frame.functions.push_back({name, name, "", 0});
  return f;
}

CapturedFrame Python(const std::string& name) {
  CapturedFrame f;
  f.kind = FrameKind::kPython;
  f.frame.functions.push_back({name, name, "train.py", 1});
  return f;
}

// What the shared unwinder gives for a launch on a PyTorch device thread (leaf first).
std::vector<CapturedFrame> WorkerStack() {
  return {Native("cudaLaunchKernel"),
          Native("at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&)"),
          Native("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"),
          Native("torch::autograd::generated::(anonymous namespace)::mm_mat1_backward(at::Tensor const&)"),
          Native("torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"),
          Native("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
          Native("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
          Native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
          Native("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"),
          Native("torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> "
                 "const&, bool)"),
          Native("execute_native_thread_routine"),
          Native("start_thread"),
          Native("clone3")};
}

TEST(AutogradNodeName, NamesTheNodeClass) {
  EXPECT_EQ(AutogradNodeName("torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, "
                             "std::allocator<at::Tensor> >&&)"),
            "MmBackward0");
  EXPECT_EQ(AutogradNodeName("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"), "AccumulateGrad");
  EXPECT_EQ(AutogradNodeName("torch::autograd::PyNode::apply(std::vector<at::Tensor>&&)"), "PyNode");
  EXPECT_EQ(AutogradNodeName("torch::autograd::CppNode<my::Fn<int> >::apply(std::vector<at::Tensor>&&)"),
            "CppNode<my::Fn<int> >");
  EXPECT_EQ(AutogradNodeName("torch::autograd::generated::(anonymous namespace)::Foo::apply(int)"), "Foo");
  EXPECT_EQ(AutogradNodeName("torch::autograd::generated::MmBackward0::apply"), "MmBackward0");
  EXPECT_EQ(AutogradNodeName("torch::autograd::generated::MmBackward0::apply_with_saved(int)"), "");
  EXPECT_EQ(AutogradNodeName("std::apply(int)"), "");
  EXPECT_EQ(AutogradNodeName("at::native::apply(int)"), "");
}

TEST(ClassifyAutogradStack, AWorkerStackIsCutAtItsNodesApply) {
  const AutogradShape s = ClassifyAutogradStack(WorkerStack());
  EXPECT_TRUE(s.worker);
  EXPECT_EQ(s.keep, 5u);  // cudaLaunchKernel .. MmBackward0::apply
  EXPECT_EQ(s.node, "MmBackward0");
}

TEST(ClassifyAutogradStack, WithoutAnApplyTheFramesAboveThreadMainAreKept) {
  // DDP's reducer hook runs as a post hook of AccumulateGrad, outside its apply.
  std::vector<CapturedFrame> frames = {Native("cudaStreamSynchronize"), Native("c10d::Reducer::autograd_hook(unsigned long)"),
                                       Native("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&)"),
                                       Native("torch::autograd::Engine::evaluate_function(int)"),
                                       Native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
                                       Native("torch::autograd::Engine::thread_init(int, bool)"), Native("start_thread")};
  const AutogradShape s = ClassifyAutogradStack(frames);
  EXPECT_TRUE(s.worker);
  EXPECT_EQ(s.keep, 4u);
  EXPECT_EQ(s.node, "");
}

TEST(ClassifyAutogradStack, TheCallersOwnThreadRunningCpuNodesIsNotAWorker) {
  // The thread that called backward() runs thread_main itself, under its
  // Python frames and THPEngine_run_backward.
  std::vector<CapturedFrame> frames = {
      Native("cudaLaunchKernel"),
      Native("torch::autograd::generated::ToCopyBackward0::apply(std::vector<at::Tensor>&&)"),
      Native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
      Native("torch::autograd::Engine::execute_with_graph_task(int)"),
      Native("torch::autograd::Engine::execute(std::vector<torch::autograd::Edge> const&)"),
      Native("THPEngine_run_backward(_object*, _object*, _object*)"),
      Python("_engine_run_backward"),
      Python("train_step"),
      Native("main")};
  EXPECT_FALSE(ClassifyAutogradStack(frames).worker);
  // A C++ caller (libtorch without Python) is not a worker either.
  frames.erase(frames.begin() + 5, frames.begin() + 8);
  EXPECT_FALSE(ClassifyAutogradStack(frames).worker);
  EXPECT_FALSE(ClassifyAutogradStack({Native("cudaLaunchKernel"), Python("forward"), Native("main")}).worker);
}

TEST(ClassifyAutogradStack, AReentrantBackwardOnAWorkerIsCutAtTheOuterNode) {
  // Checkpointing: a Python node (PyNode) on the worker runs backward again,
  // whose nodes this worker runs itself (reentrant).
  std::vector<CapturedFrame> frames = {
      Native("cudaLaunchKernel"),
      Native("torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"),
      Native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
      Native("torch::autograd::Engine::execute(std::vector<torch::autograd::Edge> const&)"),
      Native("THPEngine_run_backward(_object*, _object*, _object*)"),
      Python("backward"),
      Native("torch::autograd::PyNode::apply(std::vector<at::Tensor>&&)"),
      Native("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
      Native("torch::autograd::Engine::thread_init(int, bool)"),
      Native("start_thread")};
  const AutogradShape s = ClassifyAutogradStack(frames);
  EXPECT_TRUE(s.worker);
  EXPECT_EQ(s.node, "PyNode");
  EXPECT_EQ(s.keep, 7u);
}

TEST(AutogradCalls, ALaunchMatchesTheCallRunningAtItsTime) {
  AutogradCalls calls;
  calls.Enter(1, 10, 100, 7, {Python("train_step")});
  EXPECT_EQ(calls.Match(1, 20, 99).call, nullptr) << "before the call";
  AutogradMatch m = calls.Match(1, 20, 150);
  ASSERT_NE(m.call, nullptr);
  EXPECT_EQ(m.call->caller_key, 7u);
  EXPECT_FALSE(m.ambiguous);
  calls.Return(1, 10, 200);
  EXPECT_NE(calls.Match(1, 20, 200).call, nullptr);
  EXPECT_EQ(calls.Match(1, 20, 201).call, nullptr) << "after its return";
  EXPECT_EQ(calls.Match(2, 20, 150).call, nullptr) << "another process";
  // The next step's call.
  calls.Enter(1, 10, 300, 8, {Python("train_step")});
  ASSERT_NE(calls.Match(1, 20, 350).call, nullptr);
  EXPECT_EQ(calls.Match(1, 20, 350).call->caller_key, 8u);
  EXPECT_EQ(calls.stats().calls, 2u);
}

TEST(AutogradCalls, ConcurrentCallsAreAmbiguousAndTheLatestWins) {
  AutogradCalls calls;
  calls.Enter(1, 10, 100, 7, {Python("a")});
  calls.Enter(1, 11, 120, 8, {Python("b")});
  AutogradMatch m = calls.Match(1, 20, 150);
  ASSERT_NE(m.call, nullptr);
  EXPECT_TRUE(m.ambiguous);
  EXPECT_EQ(m.call->caller_key, 8u);
  // A stack on a caller's own thread is that caller's.
  m = calls.Match(1, 10, 150);
  EXPECT_EQ(m.call->caller_key, 7u);
  EXPECT_FALSE(m.ambiguous);
  // Once one returned, the other alone covers later times.
  calls.Return(1, 11, 160);
  m = calls.Match(1, 20, 170);
  EXPECT_EQ(m.call->caller_key, 7u);
  EXPECT_FALSE(m.ambiguous);
}

TEST(AutogradCalls, NestedCallsOnOneThreadEndWithTheOuterOne) {
  AutogradCalls calls;
  calls.Enter(1, 10, 100, 7, {Native("THPEngine_run_backward(_object*, _object*, _object*)"), Python("step")});
  // A hook on the caller's thread calls backward again: its stack holds the outer entry.
  calls.Enter(1, 10, 120,  9,
              {Native("THPEngine_run_backward(_object*, _object*, _object*)"), Python("hook"),
               Native("THPEngine_run_backward(_object*, _object*, _object*)"), Python("step")});
  calls.Return(1, 10, 130);
  ASSERT_NE(calls.Match(1, 20, 140).call, nullptr);
  EXPECT_EQ(calls.Match(1, 20, 140).call->caller_key, 7u);
  calls.Return(1, 10, 150);
  EXPECT_EQ(calls.Match(1, 20, 160).call, nullptr);
  EXPECT_EQ(calls.stats().calls, 1u);
  // A lost return: the next entry on the thread (not nested) ends the old call.
  calls.Enter(1, 10, 200, 7, {Python("step")});
  calls.Enter(1, 10, 300, 7, {Python("step")});
  EXPECT_EQ(calls.stats().returns_lost, 1u);
  EXPECT_FALSE(calls.Match(1, 20, 310).ambiguous);
}

TEST(AutogradCalls, BoundedPerProcessAndEndedCallsExpire) {
  AutogradCalls calls(/*max_calls_per_process=*/4, /*keep_ns=*/1000);
  for (uint32_t t = 0; t < 6; ++t) calls.Enter(1, 100 + t, 10 * t, t + 1, {});
  EXPECT_EQ(calls.stats().calls_dropped, 2u);
  EXPECT_EQ(calls.stats().calls_without_stack, 6u);
  for (uint32_t t = 0; t < 6; ++t) calls.Return(1, 100 + t, 100);
  calls.Expire(1100);
  EXPECT_EQ(calls.processes(), 1u);
  calls.Expire(1101);
  EXPECT_EQ(calls.processes(), 0u);
}

}  // namespace
}  // namespace warpscope::gpu
