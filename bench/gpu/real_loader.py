"""Workload e of bench/gpu/real_suite.sh: a DataLoader with 4 worker
processes (forked after the parent started CUDA, so they inherit the
injection library's state) running a CPU-side transform per sample, pinned
memory, feeding a small convolutional model on the GPU for SECONDS.

  real_loader.py SECONDS
"""
import sys
import time

import torch

import real_common


class NoisyImages(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 64, 64, generator=g)
        img = cpu_transform(img)
        return img, i % 10


def cpu_transform(img):
    """The CPU work of each sample: normalise, flip, blur a little."""
    img = (img - img.mean()) / (img.std() + 1e-6)
    img = torch.flip(img, dims=[2])
    return (img + torch.roll(img, 1, dims=1) + torch.roll(img, 1, dims=2)) / 3


def main(result):
    seconds = float(sys.argv[1])
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3, padding=1),
                                torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.cuda.synchronize()  # CUDA is up before the workers fork
    loader = torch.utils.data.DataLoader(NoisyImages(), batch_size=64, num_workers=4, pin_memory=True,
                                         multiprocessing_context="fork", persistent_workers=False)
    steps, pairs, wait_s = 0, [], 0.0
    until = time.perf_counter() + seconds
    t_wait = time.perf_counter()
    for img, label in loader:
        wait_s += time.perf_counter() - t_wait
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        loss = torch.nn.functional.cross_entropy(model(img.cuda(non_blocking=True)), label.cuda(non_blocking=True))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        e.record()
        pairs.append((s, e))
        steps += 1
        if time.perf_counter() > until:
            break
        t_wait = time.perf_counter()
    torch.cuda.synchronize()
    result.update(steps=steps, loader_wait_s=round(wait_s, 2), loss=float(loss), workers=4,
                  **real_common.cuda_event_ms(pairs))


if __name__ == "__main__":
    real_common.run(main)
