# Computes a little, then raises an uncaught exception.
import jax.numpy as jnp

x = jnp.arange(1024.0).reshape(32, 32)
y = (x @ x).block_until_ready()
raise ValueError("the loss became NaN at step 12")
