# A Python training loop whose backward pass runs on an autograd device
# thread, for the autograd test of GPU time (tests/integration/
# gpu_time_bpf_test.cc). No torch, no GPU: libtorch_cpu.so and
# libtorch_python.so are stand-ins with PyTorch's function names
# (tests/testprogs/fake_torch/), and the fake CUPTI (WARPSCOPE_CUPTI_PATH)
# turns their launches and waits into the injection library's callbacks and
# records.
#
#   python3 autograd_backward.py LIBWARPSCOPE_CUDA FAKE_TORCH_DIR STEPS [TORCH_PYTHON]
#
# TORCH_PYTHON: the libtorch_python stand-in's file name in FAKE_TORCH_DIR
# (default libtorch_python.so, which exports THPEngine_run_backward;
# libtorch_python_static.so has it static, as newer PyTorch does).
#
# Each step: forward launches forward_kernel (100 us) from this thread, then
# backward calls THPEngine_run_backward as torch.autograd.backward does; the
# device thread runs MmBackward0 twice (mm_backward_kernel, 300 us each) and
# AccumulateGrad (accumulate_grad_kernel, 50 us), whose DDP hook waits 1 ms
# in cudaStreamSynchronize (all_reduce_kernel, 800 us, meanwhile); this
# thread runs ToCopyBackward0 (to_copy_kernel, 20 us) itself, then waits.
# Prints "recorded FORWARD MM ACCUMULATE TO_COPY WAITS".
import ctypes
import os
import sys
import time

import fake_cuda

RUNTIME_API = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
THP_ENGINE_RUN_BACKWARD = "_Z22THPEngine_run_backwardP7_objectS0_S0_"

fake = None
run_backward = None
forwards = 0


def forward():
    global forwards
    if fake.ws_fake_cupti_launch(RUNTIME_API, CUDA_LAUNCH_KERNEL, b"forward_kernel", 100000, 0, 0) != 0:
        forwards += 1


def _engine_run_backward():
    run_backward(None, None, None)


def backward():
    _engine_run_backward()


def train_step():
    forward()
    backward()


def main():
    global fake, run_backward
    library_path, torch_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mode = os.RTLD_NOW | os.RTLD_GLOBAL
    torch_cpu = ctypes.CDLL(os.path.join(torch_dir, "libtorch_cpu.so"), mode=mode)
    torch_python_name = sys.argv[4] if len(sys.argv) > 4 else "libtorch_python.so"
    torch_python = ctypes.CDLL(os.path.join(torch_dir, torch_python_name), mode=mode)
    attached = fake_cuda.attach(library_path)  # torch is imported before CUDA starts, as in PyTorch
    if attached is None:
        return 1
    _, fake = attached
    fake.ws_fake_cupti_launch.restype = ctypes.c_uint32
    fake.ws_fake_cupti_launch.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint64,
                                          ctypes.c_uint32, ctypes.c_uint64]
    torch_cpu.ws_fake_torch_set_cuda(ctypes.cast(fake.ws_fake_cupti_launch, ctypes.c_void_p),
                                     ctypes.cast(fake.ws_fake_cupti_synchronize, ctypes.c_void_p))
    torch_cpu.ws_fake_torch_recorded.restype = ctypes.c_int64
    signature = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    if hasattr(torch_python, "ws_fake_run_backward_entry"):  # static: reached through its address
        torch_python.ws_fake_run_backward_entry.restype = ctypes.c_void_p
        run_backward = signature(torch_python.ws_fake_run_backward_entry())
    else:
        run_backward = signature((THP_ENGINE_RUN_BACKWARD, torch_python))
    for _ in range(steps):
        train_step()
        time.sleep(0.001)
    fake.ws_fake_cupti_flush()
    print("recorded %d %d %d %d %d" % (forwards, torch_cpu.ws_fake_torch_recorded(0), torch_cpu.ws_fake_torch_recorded(1),
                                       torch_cpu.ws_fake_torch_recorded(2), torch_cpu.ws_fake_torch_recorded(3)))
    sys.stdout.flush()
    time.sleep(2.5)  # the library's thread sends the last batch
    return 0


if __name__ == "__main__":
    sys.exit(main())
