"""Workload b of bench/gpu/real_suite.sh: torch.compile(mode="reduce-overhead")
of a small MLP (inductor's Triton kernels replayed through CUDA graphs), an
inference step and a training-ish step (forward, backward, SGD), each for
SECONDS after compiling (a second compile of the training step: a process
replays graphs recorded by two compiled functions); checks the compiled
output against eager.

  real_compile.py SECONDS
"""
import sys
import time

import torch

import real_common


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 2048),
                               torch.nn.GELU(), torch.nn.Linear(2048, 1024), torch.nn.LayerNorm(1024)).cuda()


def timed_loop(fn, seconds):
    pairs, n, out = [], 0, None
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        torch.compiler.cudagraph_mark_step_begin()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = fn()
        e.record()
        pairs.append((s, e))
        n += 1
    torch.cuda.synchronize()
    return n, real_common.cuda_event_ms(pairs), out


def main(result):
    seconds = float(sys.argv[1])
    torch.manual_seed(0)
    model = mlp()
    x = torch.randn(256, 1024, device="cuda")
    t0 = time.perf_counter()
    infer = torch.compile(model, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):  # compile, then record the CUDA graph
            torch.compiler.cudagraph_mark_step_begin()
            y = infer(x)
        err = (y.float() - model(x).float()).abs().max().item()
    result["compile_inference_s"] = round(time.perf_counter() - t0, 2)
    result["max_abs_err_inference"] = err
    with torch.no_grad():
        n, ms, _ = timed_loop(lambda: infer(x), seconds)
    result["inference"] = {"steps": n, **ms}

    train_model = mlp()
    opt = torch.optim.SGD(train_model.parameters(), lr=1e-3)
    train = torch.compile(train_model, mode="reduce-overhead")

    def train_step():
        loss = train(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    t0 = time.perf_counter()
    for _ in range(3):
        torch.compiler.cudagraph_mark_step_begin()
        train_step()
    torch.cuda.synchronize()
    result["compile_training_s"] = round(time.perf_counter() - t0, 2)
    n, ms, out = timed_loop(train_step, seconds)
    loss = float(out)
    result["training"] = {"steps": n, **ms, "loss": loss}
    if not (err < 0.05 and loss == loss):
        raise RuntimeError(f"compiled results wrong: max abs error {err}, loss {loss}")


if __name__ == "__main__":
    real_common.run(main)
