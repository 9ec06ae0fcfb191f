# Starts two jax.distributed processes on 127.0.0.1 (gloo collectives on the
# CPU) the way a launcher that forks does, with no rank in their
# environment: the hook must learn each rank from jax.distributed.
import os
import socket
import subprocess
import sys

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
env = {k: v for k, v in os.environ.items() if k not in ("RANK", "JAX_PROCESS_ID")}
procs = [
    subprocess.Popen([sys.executable, worker, str(i), str(port)], env=env)
    for i in (1, 0)
]
codes = [p.wait() for p in procs]
print("workers exited", codes)
sys.exit(max(codes))
