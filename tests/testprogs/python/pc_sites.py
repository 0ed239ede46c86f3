# A Python "CUDA application" with known PC samples, for the gpu_pc test
# (tests/integration/gpu_time_bpf_test.cc). No GPU: it loads the real
# libwarpscope_cuda.so and calls InitializeInjection as the driver would;
# the fake CUPTI (WARPSCOPE_CUPTI_PATH) turns each launch into the library's
# launch callback and a kernel record, and each scripted PC sample into what
# CUPTI's PC sampling would report.
#
#   python3 pc_sites.py LIBWARPSCOPE_CUDA CUBIN ITERATIONS
#
# It loads CUBIN as a module (the library captures it), waits until PC
# sampling is on, then each iteration launches demo::scale (300 us) from
# site_scale and add_one (100 us) from site_add_one, and scripts PC samples
# for each kernel at fixed offsets (SAMPLES below). Prints "recorded SCALE
# ADD_ONE" (launches whose kernel record was queued) and "sampled N" (PC
# samples CUPTI took while sampling was on).
import ctypes
import sys
import time

import fake_cuda

SCALE = b"_ZN4demo5scaleEPfPKffi"
ADD_ONE = b"add_one"
# Per iteration: (kernel, PC offset, CUPTI stall index, samples). The fake's
# stall indexes: 2 barrier, 5 long_scoreboard, 9 math_pipe_throttle, 14 selected.
SAMPLES = [
    (SCALE, 0x40, 5, 3),
    (SCALE, 0x80, 9, 1),
    (ADD_ONE, 0x30, 5, 2),
]
RUNTIME_API = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    library_path, cubin_path, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    attached = fake_cuda.attach(library_path)
    if attached is None:
        return 1
    library, fake = attached
    fake.ws_fake_cupti_launch.restype = ctypes.c_uint32
    fake.ws_fake_cupti_launch.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint64,
                                          ctypes.c_uint32, ctypes.c_uint64]
    fake.ws_fake_cupti_pc_sample.restype = ctypes.c_int
    fake.ws_fake_cupti_pc_sample.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32,
                                             ctypes.c_uint32]
    fake.ws_fake_cupti_pc_sampling_period.restype = ctypes.c_uint32
    fake.ws_fake_cupti_load_module.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

    with open(cubin_path, "rb") as f:
        cubin = f.read()
    fake.ws_fake_cupti_load_module(cubin, len(cubin))
    crc = fnv1a(cubin)

    def launch(kernel, ns):
        return fake.ws_fake_cupti_launch(RUNTIME_API, CUDA_LAUNCH_KERNEL, kernel, ns, 0, 0) != 0

    def site_scale():
        return launch(SCALE, 300000)

    def site_add_one():
        return launch(ADD_ONE, 100000)

    # The first launch notes the context; the library's thread enables PC
    # sampling on it.
    launch(ADD_ONE, 1000)
    deadline = time.monotonic() + 30
    while fake.ws_fake_cupti_pc_sampling_period(0) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    scale = add_one = sampled = 0
    for _ in range(iterations):
        scale += site_scale()
        add_one += site_add_one()
        for kernel, pc, stall, n in SAMPLES:
            if fake.ws_fake_cupti_pc_sample(kernel, crc, pc, stall, n):
                sampled += n
        time.sleep(0.0002)
    fake.ws_fake_cupti_flush()
    print("recorded %d %d" % (scale, add_one))
    print("sampled %d" % sampled)
    sys.stdout.flush()
    time.sleep(2.5)  # the library's thread sends the last batch
    return 0


if __name__ == "__main__":
    sys.exit(main())
