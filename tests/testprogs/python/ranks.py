# One "rank" of a data-parallel job (one process per GPU, as torchrun runs
# them), for the multi-GPU test (tests/integration/gpu_time_bpf_test.cc).
# No GPU: it loads the real libwarpscope_cuda.so and calls
# InitializeInjection as the driver would; the fake CUPTI
# (WARPSCOPE_CUPTI_PATH) turns each launch into the library's launch
# callback and a kernel record on the device made current, on one simulated
# stream (kernels run back to back, never overlapping).
#
#   python3 ranks.py LIBWARPSCOPE_CUDA DEVICE ITERATIONS COMPUTE_NS
#
# Each iteration launches gemm_step (COMPUTE_NS) from forward and NCCL's
# all-reduce kernel (ALL_REDUCE_NS) from all_reduce, on DEVICE. Prints
# "recorded GEMM ALL_REDUCE" (launches whose kernel record was queued).
import ctypes
import sys
import time

import fake_cuda

GEMM = b"gemm_step"
ALL_REDUCE = b"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ALL_REDUCE_NS = 200000
RUNTIME_API = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000


def main():
    library_path, device, iterations, compute_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    attached = fake_cuda.attach(library_path, device)
    if attached is None:
        return 1
    library, fake = attached
    fake.ws_fake_cupti_stream_launch.restype = ctypes.c_uint32
    fake.ws_fake_cupti_stream_launch.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_char_p,
                                                 ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
                                                 ctypes.c_void_p]

    def launch(kernel, ns):
        # On one simulated stream: the all-reduce waits for the GEMM, as on a GPU.
        return fake.ws_fake_cupti_stream_launch(RUNTIME_API, CUDA_LAUNCH_KERNEL, 0, kernel, 5000, 10000, ns,
                                                None, None) != 0

    def forward():
        return launch(GEMM, compute_ns)

    def all_reduce():
        return launch(ALL_REDUCE, ALL_REDUCE_NS)

    gemm = reduced = 0
    for _ in range(iterations):
        gemm += forward()
        reduced += all_reduce()
        time.sleep(0.0002)
    fake.ws_fake_cupti_flush()
    print("recorded %d %d" % (gemm, reduced))
    sys.stdout.flush()
    time.sleep(2.5)  # the library's thread sends the last batch
    return 0


if __name__ == "__main__":
    sys.exit(main())
