# A training loop that keeps every step's activations on the device (the
# torchtitan loss-logging bug, in JAX): device memory grows by 256 KiB per
# step. `oomscope run` must find the line that allocates them.
import sys
import time

import jax
import jax.numpy as jnp


@jax.jit
def train_step(w, x):
    def loss_fn(w):
        return jnp.mean((x @ w) ** 2)

    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.01 * g, loss, x @ w


w = jnp.ones((256, 256), jnp.float32) / 256
x = jnp.ones((256, 256), jnp.float32)
kept = []
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
for step in range(steps):
    w, loss, activations = train_step(w, x)  # LEAK LINE
    kept.append(activations)
    activations.block_until_ready()
    time.sleep(0.03)
print("done", len(kept), float(loss))
