# Exits with the code given (or dies of the signal given, "signal:15").
import os
import sys

import jax.numpy as jnp

jnp.ones(1000).sum().block_until_ready()
print("exiting with", sys.argv[1], flush=True)
if sys.argv[1].startswith("signal:"):
    os.kill(os.getpid(), int(sys.argv[1].split(":")[1]))
sys.exit(int(sys.argv[1]))
