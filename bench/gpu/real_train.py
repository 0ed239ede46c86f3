"""Workload a of bench/gpu/real_suite.sh: a transformers-style training loop,
GPT-2-like (transformers' GPT2Config: 6 layers, n_embd 512, 8 heads, seq 256,
batch 8, vocab 16384, random init; a hand-written transformer of the same
shape when transformers is missing), bf16 autocast, loss.backward(), fused
AdamW. Call sites: train_step -> forward_pass, backward_pass (loss.backward()),
optimizer_step.

  real_train.py plain SECONDS        steps for SECONDS after a warm-up (what warpscope watches)
  real_train.py torch_profiler STEPS the reference: STEPS steps under torch.profiler
                                     (CPU + CUDA, a record_function per site)
The reference sums kernel durations per name and per site (a kernel's launch
call falls inside the site's record_function range, whichever thread launched
it: backward's kernels come from the autograd thread while the main thread
waits inside backward_pass)."""
import contextlib
import json
import os
import sys
import time

import torch

import real_common

SEQ, BATCH, VOCAB, WIDTH, LAYERS, HEADS = 256, 8, 16384, 512, 6, 8
SITES = ("forward_pass", "backward_pass", "optimizer_step")
annotate = lambda name: contextlib.nullcontext()  # noqa: E731 - record_function under the reference


class TinyGPT(torch.nn.Module):
    """The fallback when transformers is missing: pre-norm blocks, causal."""

    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Embedding(SEQ, WIDTH)
        layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.1, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = torch.nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, input_ids, labels):
        n = input_ids.shape[1]
        x = self.tok(input_ids) + self.pos(torch.arange(n, device=input_ids.device))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(n, device=input_ids.device)
        logits = self.head(self.blocks(x, mask=mask, is_causal=True))
        return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB).float(),
                                                 labels[:, 1:].reshape(-1))


def build_model():
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return TinyGPT(), "hand-written (transformers missing)"
    import transformers
    config = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS)
    return GPT2LMHeadModel(config), f"transformers {transformers.__version__} GPT2LMHeadModel"


def forward_pass(model, ids):
    with annotate("forward_pass"), torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(input_ids=ids, labels=ids)
    return out.loss if hasattr(out, "loss") else out


def backward_pass(loss):
    with annotate("backward_pass"):
        loss.backward()


def optimizer_step(opt):
    with annotate("optimizer_step"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def train_step(model, opt, ids):
    loss = forward_pass(model, ids)
    backward_pass(loss)
    optimizer_step(opt)
    return loss


def reference_from_trace(path, steps):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    ranges = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
              if e.get("cat") == "user_annotation" and e.get("name") in SITES]
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels, sites, other_ns, n = {}, {s: 0.0 for s in SITES + ("other",)}, {}, 0
    for e in events:
        if "dur" not in e:
            continue
        ns = float(e["dur"]) * 1000.0
        if e.get("cat") in ("gpu_memcpy", "gpu_memset"):
            other_ns[e["cat"]] = other_ns.get(e["cat"], 0.0) + ns
        if e.get("cat") != "kernel":
            continue
        n += 1
        kernels[e["name"]] = kernels.get(e["name"], 0.0) + ns
        ts = launch_ts.get(e.get("args", {}).get("correlation"))
        site = next((name for lo, hi, name in ranges if ts is not None and lo <= ts <= hi), "other")
        sites[site] += ns
    total = sum(kernels.values())
    return {"kernels_ns": kernels, "sites_ns": sites, "copies_ns": other_ns, "kernel_count": n,
            "kernel_ns_total": total, "kernel_ns_per_step": total / steps, "kernels_per_step": n / steps}


def main(result):
    mode, amount = sys.argv[1], float(sys.argv[2])
    torch.manual_seed(0)
    model, result["model"] = build_model()
    model = model.cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    batches = [torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda") for _ in range(4)]
    for i in range(10):  # warm-up: cuBLAS heuristics, the allocator, the optimizer's state
        train_step(model, opt, batches[i % 4])
    torch.cuda.synchronize()
    time.sleep(2.5)  # the warm-up's kernels land in earlier seconds than the measured ones
    if mode == "torch_profiler":
        global annotate
        from torch.profiler import ProfilerActivity, profile, record_function
        annotate = record_function
        steps = int(amount)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(steps):
                train_step(model, opt, batches[i % 4])
            torch.cuda.synchronize()
        trace = f"/tmp/ws-real-train-ref-{os.getpid()}.json"
        prof.export_chrome_trace(trace)
        result.update(reference_from_trace(trace, steps))
        os.unlink(trace)
        result["steps"] = steps
        return
    pairs, steps = [], 0
    result["measured_start_ms"] = int(time.time() * 1000)
    until = time.perf_counter() + amount
    while time.perf_counter() < until:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = train_step(model, opt, batches[steps % 4])
        end.record()
        pairs.append((start, end))
        steps += 1
        if steps % 50 == 0:
            result["loss"] = round(float(loss), 4)  # a sync now and then, as a logging loop does
    torch.cuda.synchronize()
    result["measured_end_ms"] = int(time.time() * 1000)
    result["steps"] = steps
    result.update(real_common.cuda_event_ms(pairs))


if __name__ == "__main__":
    real_common.run(main)
