# Takes this process's recording folder before jax is imported (a file where
# the folder would be): recording must stop, the program must not.
import os

open(os.path.join(os.environ["OOMSCOPE_RUN_DIR"], "pid%d" % os.getpid()), "w").close()

import jax.numpy as jnp

print("still running", float(jnp.ones(10).sum()))
