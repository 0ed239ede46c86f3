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

// Built twice: as older PyTorch releases export it, and (with
// WS_FAKE_TORCH_STATIC_ENTRY, libtorch_python_static.so) static, as newer
// ones define it: then only .symtab names it, and ws_fake_run_backward_entry
// hands the test its address, as the Python method table does in PyTorch.
#ifdef WS_FAKE_TORCH_STATIC_ENTRY
#define WS_FAKE_ENTRY_LINKAGE static
#else
#define WS_FAKE_ENTRY_LINKAGE __attribute__((visibility("default")))
#endif
__attribute__((noinline)) WS_FAKE_ENTRY_LINKAGE PyObject* THPEngine_run_backward(PyObject* self, PyObject* args,
                                                                                PyObject* kwargs) {
  try {
    ws_fake_torch_execute();
  } catch (...) {
    return nullptr;
  }
  __asm__ volatile("" ::: "memory");
  return self;
}

#ifdef WS_FAKE_TORCH_STATIC_ENTRY
extern "C" __attribute__((visibility("default"))) void* ws_fake_run_backward_entry() {
  return reinterpret_cast<void*>(&THPEngine_run_backward);
}
#endif
