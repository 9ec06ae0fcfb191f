"""The release wheel as a user gets it: built by scripts/wheel.sh, installed
into a fresh venv, then `oomscope --version`, `analyze` on a corpus file,
`serve` (the page and its wasm fetched over HTTP), `open`, one `run` of a
real JAX CPU program, and the Python API's tests (test_api.py).

    python3 tests/python/test_wheel.py            # builds the page with trunk
    OOMSCOPE_DIST=dist python3 tests/python/test_wheel.py   # bundles a built page
    OOMSCOPE_WHEEL=path.whl python3 tests/python/test_wheel.py  # tests that wheel

The venv sees the system's site-packages for jax only; the wheel itself is
installed into the venv, with no index.
"""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = os.environ.get("OOMSCOPE_PYTHON", sys.executable)


def build_wheel():
    explicit = os.environ.get("OOMSCOPE_WHEEL")
    if explicit:
        return explicit
    out = subprocess.run(
        [os.path.join(ROOT, "scripts", "wheel.sh")], cwd=ROOT, check=True, stdout=subprocess.PIPE
    ).stdout.decode()
    path, size = out.strip().splitlines()[-1].split(" ")[:2]
    print("wheel: %s, %s bytes" % (path, size), file=sys.stderr)
    return os.path.join(ROOT, path)


class Wheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="oomscope-wheel-")
        cls.wheel = build_wheel()
        venv = os.path.join(cls.tmp, "venv")
        subprocess.run([PY, "-m", "venv", "--system-site-packages", venv], check=True)
        cls.python = os.path.join(venv, "bin", "python")
        cls.oomscope = os.path.join(venv, "bin", "oomscope")
        subprocess.run([cls.python, "-m", "pip", "install", "--quiet", "--no-index", cls.wheel], check=True)
        cls.corpus = os.environ.get("OOMSCOPE_CORPUS") or os.path.join(ROOT, "..", "shared", "corpus")
        if not os.path.isdir(cls.corpus):
            raise SystemExit("the shared corpus is not at %s (set OOMSCOPE_CORPUS)" % cls.corpus)

    def run_cli(self, *args, **kw):
        return subprocess.run([self.oomscope] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)

    def test_version(self):
        out = self.run_cli("--version")
        self.assertEqual(out.returncode, 0)
        self.assertRegex(out.stdout.decode(), r"^oomscope \d+\.\d+\.\d+")

    def test_analyze_a_corpus_file(self):
        out = self.run_cli("analyze", os.path.join(self.corpus, "logs", "01_tpu_compile_hbm.txt"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Out-of-memory errors: 1", out.stdout.decode())

    def serve(self, *args):
        """Starts `oomscope ARGS --port 0 --no-open`; returns (process, URL)."""
        proc = subprocess.Popen(
            [self.oomscope] + list(args) + ["--port", "0", "--no-open"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        line = proc.stdout.readline().decode()
        match = re.search(r"on (http://127\.0\.0\.1:\d+/\S*)", line)
        self.assertTrue(match, line + proc.stderr.read().decode() if proc.poll() is not None else line)
        return proc, match.group(1)

    def test_serve_the_bundled_page_and_its_wasm(self):
        log = os.path.join(self.corpus, "logs", "01_tpu_compile_hbm.txt")
        _, url = self.serve("serve", log)
        self.assertIn("#r=", url)
        base = url.split("#")[0]
        with urllib.request.urlopen(base) as r:
            page = r.read().decode()
            self.assertTrue(r.headers["Content-Type"].startswith("text/html"))
        wasm = re.search(r'data-wasm="/?([^"]+\.wasm)"', page)
        self.assertTrue(wasm, page[:2000])
        with urllib.request.urlopen(base + wasm.group(1)) as r:
            self.assertEqual(r.headers["Content-Type"], "application/wasm")
            self.assertEqual(r.read(4), b"\0asm")
        # The analysis worker's wasm is served too (the page fetches it on a drop).
        share = subprocess.run(
            [self.python, "-c", "import oomscope; print(oomscope.page_dir())"], stdout=subprocess.PIPE, check=True
        ).stdout.decode().strip()
        workers = [n for n in os.listdir(share) if n.startswith("oomscope-worker") and n.endswith(".wasm")]
        self.assertTrue(workers, os.listdir(share))
        with urllib.request.urlopen(base + workers[0]) as r:
            self.assertEqual(r.read(4), b"\0asm")
        with self.assertRaises(urllib.error.HTTPError):
            urllib.request.urlopen(base + "../../etc/passwd")

    def test_open_a_link(self):
        link = "https://someone.example/oomscope/#r=ABCdef-_"
        _, url = self.serve("open", link)
        self.assertTrue(url.endswith("/#r=ABCdef-_"), url)

    def test_run_a_jax_program(self):
        out_dir = os.path.join(self.tmp, "run")
        program = os.path.join(ROOT, "analyzer", "tests", "run_programs", "fits.py")
        out = self.run_cli("run", "--out", out_dir, "--every", "0.5", "--", self.python, program)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertIn(b"fits ", out.stdout)
        self.assertIn("recorded in %s (rank0)" % out_dir, out.stderr.decode())
        self.assertTrue(os.path.isfile(os.path.join(out_dir, ".oomscope", "report.json")))

    def test_python_api(self):
        out = subprocess.run([self.python, os.path.join(HERE, "test_api.py")], stderr=subprocess.PIPE)
        self.assertEqual(out.returncode, 0, out.stderr.decode())


if __name__ == "__main__":
    unittest.main(verbosity=2)
