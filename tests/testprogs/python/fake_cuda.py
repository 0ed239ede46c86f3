"""What the Python "CUDA applications" of the GPU tests share (pc_sites.py,
ranks.py): no GPU; they load the real libwarpscope_cuda.so and the fake
CUPTI (WARPSCOPE_CUPTI_PATH) and start the library as the driver would."""
import ctypes
import os
import sys
import time


def attach(library_path, device=None):
    """Calls InitializeInjection (on fake device `device`, if given), waits up
    to 30 s for an agent to answer on the socket, then 1.5 s for it to attach
    its probe. Returns (library, fake), or None after saying why on stderr."""
    mode = os.RTLD_NOW | os.RTLD_LOCAL
    library = ctypes.CDLL(library_path, mode=mode)
    fake = ctypes.CDLL(os.environ["WARPSCOPE_CUPTI_PATH"], mode=mode)
    if device is not None:
        fake.ws_fake_cupti_set_device(ctypes.c_uint32(device))
    if library.InitializeInjection() != 1:
        print("InitializeInjection failed", file=sys.stderr)
        return None
    fake.ws_fake_cupti_subscribed.restype = ctypes.c_int
    deadline = time.monotonic() + 30
    while not fake.ws_fake_cupti_subscribed() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not fake.ws_fake_cupti_subscribed():
        print("no agent answered on the socket", file=sys.stderr)
        return None
    time.sleep(1.5)  # the agent attaches its probe
    return library, fake
