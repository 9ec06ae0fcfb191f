# One process of a two-process jax.distributed job on the CPU.
import sys
import time

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")
process_id, port = int(sys.argv[1]), int(sys.argv[2])
jax.distributed.initialize(
    coordinator_address="127.0.0.1:%d" % port, num_processes=2, process_id=process_id
)
import jax.numpy as jnp
from jax.experimental import multihost_utils

x = jnp.ones((64, 64)) * (process_id + 1)
total = multihost_utils.process_allgather(x).sum()
for step in range(5):
    x = x @ x / 64
    time.sleep(0.05)
multihost_utils.sync_global_devices("done")
print("process", jax.process_index(), "of", jax.process_count(), float(total))
