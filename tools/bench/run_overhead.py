"""Time per training step of a real JAX CPU program, for measuring what
`oomscope run` costs (README, "Recording a run"):

    python3 tools/bench/run_overhead.py [STEPS]                  # unwrapped
    oomscope run --every 1 -- python3 tools/bench/run_overhead.py [STEPS]

A 4-layer MLP (1024 wide, batch 256, f32) trained with SGD; 200 live
parameter and optimizer arrays, as a small model has. Prints the median and
mean milliseconds per step after 20 warm-up steps.
"""
import statistics
import sys
import time

import jax
import jax.numpy as jnp

WIDTH, DEPTH, BATCH = 1024, 4, 256


def init(key):
    params = []
    for i in range(DEPTH):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (WIDTH, WIDTH)) / WIDTH**0.5, jnp.zeros(WIDTH)))
    return params


def loss_fn(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return jnp.mean(x**2)


@jax.jit
def train_step(params, x):
    loss, grads = jax.value_and_grad(loss_fn)(params, x)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
params = init(jax.random.PRNGKey(0))
x = jnp.ones((BATCH, WIDTH))
times = []
for step in range(steps + 20):
    t = time.perf_counter()
    params, loss = train_step(params, x)
    loss.block_until_ready()
    times.append(time.perf_counter() - t)
times = times[20:]
print(
    "steps %d median %.3f ms mean %.3f ms loss %.6f"
    % (len(times), 1e3 * statistics.median(times), 1e3 * statistics.mean(times), float(loss))
)
