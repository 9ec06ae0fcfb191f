"""`oomscope.show()` in a real notebook: a notebook is executed with
nbclient (an ipykernel kernel), saved, and its saved output opened in
Debian's Chromium (tests/python/notebook_view.mjs, playwright-core as in
tests/e2e/), which checks what it shows.

    python3 tests/python/test_notebook.py

Needs nbclient, nbformat and ipykernel (scripts/install-python.sh
--notebook), the `oomscope` command (OOMSCOPE_BIN, else target/debug/oomscope,
else the installed one), node >= 20 with tests/e2e's npm packages, and
/usr/bin/chromium. Writes the executed notebook and a screenshot to
tests/python/out/.
"""

import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "out")


def corpus():
    path = os.environ.get("OOMSCOPE_CORPUS") or os.path.join(ROOT, "..", "shared", "corpus")
    if not os.path.isdir(path):
        raise SystemExit("the shared corpus is not at %s (set OOMSCOPE_CORPUS)" % path)
    return os.path.abspath(path)


def command():
    if os.environ.get("OOMSCOPE_BIN"):
        return os.environ["OOMSCOPE_BIN"]
    built = os.path.join(ROOT, "target", "debug", "oomscope")
    return built if os.path.isfile(built) else None


# A TPU compile that ran out (log and dump with its HloProto): the embedded
# page draws its buffer timeline.
TRAIN_STEP = os.path.join(ROOT, "fixtures", "oom-aggregate")


class Notebook(unittest.TestCase):
    def test_show_renders_inline_and_in_chromium(self):
        try:
            import nbclient
            import nbformat
        except ImportError as e:
            self.fail("%s: run scripts/install-python.sh --notebook (pip install nbclient nbformat ipykernel)" % e)
        os.makedirs(OUT, exist_ok=True)
        log = os.path.join(corpus(), "logs", "01_tpu_compile_hbm.txt")
        # Device memory profiles of a leaking JAX program (fixtures/), and a
        # step log of another (fixtures/steps/): the two charts.
        series = os.path.join(ROOT, "fixtures", "jax-memory-profiles", "leak")
        steps = os.path.join(ROOT, "fixtures", "steps", "jax_cpu_leak.log")
        train_step = TRAIN_STEP
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("import sys; sys.path.insert(0, %r)\nimport oomscope" % os.path.join(ROOT, "python")),
            nbformat.v4.new_code_cell("oomscope.show(%r)" % log),
            nbformat.v4.new_code_cell("report = oomscope.analyze(%r)\noomscope.show(report)" % [log]),
            nbformat.v4.new_code_cell("oomscope.show(%r)" % series),
            nbformat.v4.new_code_cell("oomscope.show(%r)" % steps),
            nbformat.v4.new_code_cell("oomscope.show(%r)" % train_step),
        ]
        env = dict(os.environ)
        if command():
            env["OOMSCOPE_BIN"] = command()
        old = dict(os.environ)
        os.environ.update(env)
        try:
            nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
        finally:
            os.environ.clear()
            os.environ.update(old)
        path = os.path.join(OUT, "show.ipynb")
        nbformat.write(nb, path)

        # The saved notebook, read back: each show() cell saved its HTML.
        saved = nbformat.read(path, as_version=4)
        htmls = []
        for cell in saved.cells[1:]:
            outputs = [o for o in cell.outputs if o.get("output_type") == "execute_result"]
            self.assertTrue(outputs, cell.outputs)
            htmls.append(outputs[0]["data"]["text/html"])
        self.assertIn("Out of memory", htmls[0])
        # Paths or the report dict: the same view (links differ by their time of making).
        unlinked = [re.sub(r'(href="[^"]*"|data-link=&quot;.*?&quot;)', "", h).strip() for h in htmls[:2]]
        self.assertEqual(unlinked[0], unlinked[1])
        page = os.path.join(OUT, "show.html")
        with open(page, "w") as f:
            f.write("<!doctype html><meta charset=utf-8><title>saved notebook output</title>")
            for i, h in enumerate(htmls):
                f.write('<section id="cell%d">%s</section>' % (i + 1, h))
        out = subprocess.run(
            ["node", os.path.join(HERE, "notebook_view.mjs"), page, os.path.join(OUT, "show.png")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.assertEqual(out.returncode, 0, out.stdout.decode() + out.stderr.decode())
        views = json.loads(out.stdout.decode().strip().splitlines()[-1])
        report = json.loads(subprocess.run([env.get("OOMSCOPE_BIN", "oomscope"), "analyze", "--json", log], stdout=subprocess.PIPE).stdout)
        headline = report["diagnosis"]["headline"]["text"].strip()

        # Scripts off (an untrusted notebook): the static fragment, which
        # holds no script, shows the command's answer.
        seen = views["static"]
        self.assertEqual(seen["cell1"]["headline"], headline)
        self.assertIn("over by", seen["cell1"]["text"])
        self.assertGreater(seen["cell1"]["headlineHeight"], 10)
        self.assertTrue(seen["cell1"]["link"].startswith("http://127.0.0.1:8080/#r="))
        # The profiles' series draws its chart and names the growing line;
        # the step log its memory per step.
        self.assertEqual(seen["cell3"]["polylines"], 1)
        self.assertGreater(seen["cell3"]["chartWidth"], 100)
        self.assertIn("growing line", seen["cell3"]["text"])
        self.assertEqual(seen["cell4"]["polylines"], 1)
        self.assertIn("Memory per step", seen["cell4"]["text"])
        self.assertEqual(seen["scripts"], 0)

        # Scripts on (a trusted notebook): every cell's embedded page
        # started from the output alone (nothing fetched: notebook_view.mjs
        # fails on any request), hid the static fragment, and draws the same
        # answer as the command, with no drop zone.
        for cell in ("cell1", "cell2", "cell3", "cell4", "cell5"):
            self.assertTrue(seen[cell]["embedded"], cell)
            page = views["page"][cell]
            self.assertTrue(page["staticHidden"], cell)
            self.assertGreater(page["frameHeight"], 300, cell)
            self.assertEqual(page["dropZone"], 0, cell)
        for cell in ("cell1", "cell2"):
            self.assertEqual(views["page"][cell]["headline"], headline)
            self.assertEqual(views["page"][cell]["node"], report["diagnosis"]["headline"]["node"])
        # The HloProto's buffers travel with the embedded report: the
        # timeline is drawn, as on the page.
        self.assertIn("Buffers live at the peak", views["page"]["cell5"]["text"])
        # Its largest allocations include 512-byte scalars: a share of the
        # limit never reads as 0.0% for a real allocation.
        shares = views["page"]["cell5"]["shares"]
        self.assertTrue(shares)
        for share in shares:
            self.assertNotRegex(share, r"^0(\.0+)?%$")

if __name__ == "__main__":
    unittest.main(verbosity=2)
