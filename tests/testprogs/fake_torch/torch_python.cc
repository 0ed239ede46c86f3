// A stand-in for libtorch_python.so (see torch_cpu.cc): the function that
// torch.autograd.backward and torch.autograd.grad call
// (Variable._execution_engine.run_backward), with its real signature, so
// its C++ symbol is PyTorch's: _Z22THPEngine_run_backwardP7_objectS0_S0_.
// It catches everything its callee throws, as the real one does
// (HANDLE_TH_ERRORS): the agent's uretprobe on it relies on that.
#include <cstdint>
#include <vector>

namespace at {
struct Tensor {
  int64_t id = 0;
};
}  // namespace at
namespace torch::autograd {
using variable_list = std::vector<at::Tensor>;
}
torch::autograd::variable_list ws_fake_torch_execute();

struct _object;
using PyObject = _object;

__attribute__((noinline, visibility("default"))) PyObject* THPEngine_run_backward(PyObject* self, PyObject* args,
                                                                                  PyObject* kwargs) {
  try {
    ws_fake_torch_execute();
  } catch (...) {
    return nullptr;
  }
  __asm__ volatile("" ::: "memory");
  return self;
}
