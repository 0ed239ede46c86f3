"""Workload d of bench/gpu/real_suite.sh: a jitted JAX training step (a small
MLP, SGD) for STEPS steps, timed per step with block_until_ready. Without a
JAX GPU backend it prints status "skipped" with the reason and exits 0.

  real_jax.py STEPS
"""
import os
import sys
import time

import real_common

# Other workloads share the GPU: no preallocation of 75 % of its memory.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def main(result):
    steps = int(sys.argv[1])
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        result.update(status="skipped", note=f"jax missing: {e}")
        return
    try:
        gpus = jax.devices("gpu")
    except RuntimeError as e:
        gpus = []
        result["note"] = f"no GPU backend: {e}"[:200]
    if not gpus:
        result.update(status="skipped", jax=jax.__version__)
        return
    result.update(jax=jax.__version__, device=str(gpus[0]))
    key = jax.random.key(0)
    k1, k2, k3, kx = jax.random.split(key, 4)
    params = [jax.random.normal(k1, (1024, 2048)) * 0.02, jax.random.normal(k2, (2048, 2048)) * 0.02,
              jax.random.normal(k3, (2048, 10)) * 0.02]
    x = jax.random.normal(kx, (512, 1024))
    y = jax.nn.one_hot(jnp.arange(512) % 10, 10)

    def loss_fn(p, x, y):
        h = jax.nn.gelu(x @ p[0])
        h = jax.nn.gelu(h @ p[1])
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ p[2]) * y, axis=-1))

    @jax.jit
    def train_step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return [w - 0.01 * g for w, g in zip(p, grads)], loss

    t0 = time.perf_counter()
    params, loss = train_step(params, x, y)
    loss.block_until_ready()
    result["compile_s"] = round(time.perf_counter() - t0, 2)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        params, loss = train_step(params, x, y)
        loss.block_until_ready()
        times.append((time.perf_counter() - t) * 1000)
    result.update(steps=steps, step_ms_median=round(real_common.median(times), 4), loss=float(loss))
    if not loss == loss:
        raise RuntimeError("loss is NaN")


if __name__ == "__main__":
    real_common.run(main)
