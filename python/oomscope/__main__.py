"""`python -m oomscope ARGS...` is `oomscope ARGS...` (when the scripts
folder is not on PATH)."""

import os
import subprocess
import sys

from . import binary

if __name__ == "__main__":
    if os.name == "nt":
        sys.exit(subprocess.call([binary()] + sys.argv[1:]))
    os.execv(binary(), [binary()] + sys.argv[1:])
