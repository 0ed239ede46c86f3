"""The PC sampling check's workload (bench/gpu/pc_sampling_check.sh): two
Python call sites interleaved in every step,

  model_step    a PyTorch matmul + softmax (4096² bf16 GEMM, then a row softmax)
  triton_step   a Triton kernel compiled with line information (Triton's
                default) whose inner loop walks a row of a matrix in blocks

  pc_loop.py SECONDS        runs for SECONDS and prints its Unix start and end (ms)
  pc_loop.py --steps N      runs N steps (for Nsight Compute, which replays kernels)
  pc_loop.py --lines        prints the Triton kernel's file and inner-loop line

The inner loop's load and accumulate carry the marker "LINE:inner"."""
import inspect
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def row_dot_kernel(a_ptr, b_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)  # LINE:inner
        b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0)  # LINE:inner
        acc += a * b  # LINE:inner
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def model_step(x, w):
    return torch.softmax(x @ w, dim=-1)


def triton_step(a, b, out):
    row_dot_kernel[(a.shape[0],)](a, b, out, a.shape[1], BLOCK=1024)
    return out


def inner_lines():
    source, first = inspect.getsourcelines(row_dot_kernel.fn)
    return [first + i for i, text in enumerate(source) if "LINE:inner" in text]


def main():
    if sys.argv[1] == "--lines":
        print("file", inspect.getsourcefile(row_dot_kernel.fn), "inner", *inner_lines())
        return
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64
    a = torch.randn(4096, 1 << 16, device="cuda")
    b = torch.randn(1 << 16, device="cuda")
    out = torch.empty(4096, device="cuda")
    steps = int(sys.argv[2]) if sys.argv[1] == "--steps" else None
    seconds = float(sys.argv[1]) if steps is None else 0.0
    torch.cuda.synchronize()
    start = time.time()
    n = 0
    while (n < steps) if steps is not None else (time.time() - start < seconds):
        y = model_step(x, w)
        triton_step(a, b, out)
        torch.cuda.synchronize()
        n += 1
    print(f"start_ms {int(start * 1000)} end_ms {int(time.time() * 1000)} steps {n} "
          f"checksum {float(y.sum()) + float(out.sum()):.3f}", flush=True)


if __name__ == "__main__":
    main()
