# A small program that fits: a few steps of a jitted update, nothing kept.
import time

import jax
import jax.numpy as jnp


@jax.jit
def train_step(w, x):
    return w - 0.01 * jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)


w = jnp.ones((128, 128), jnp.float32)
x = jnp.ones((64, 128), jnp.float32)
for step in range(20):
    w = train_step(w, x)
    time.sleep(0.02)
print("fits", float(w.sum()))
