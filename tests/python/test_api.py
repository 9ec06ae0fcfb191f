"""The `oomscope` Python module against the installed command, on real
inputs of the shared corpus. Run with the interpreter the package is
installed in (tests/python/test_wheel.py does, in a fresh venv):

    python tests/python/test_api.py
"""

import os
import sys
import tempfile
import unittest

import oomscope

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def corpus():
    path = os.environ.get("OOMSCOPE_CORPUS") or os.path.join(ROOT, "..", "shared", "corpus")
    if not os.path.isdir(path):
        raise SystemExit("the shared corpus is not at %s (set OOMSCOPE_CORPUS)" % path)
    return path


class Api(unittest.TestCase):
    def test_analyze_is_the_json_report(self):
        log = os.path.join(corpus(), "logs", "01_tpu_compile_hbm.txt")
        report = oomscope.analyze(log)
        self.assertEqual(report["inputs"][0]["name"], "01_tpu_compile_hbm.txt")
        oom = report["oom_events"][0]
        self.assertGreater(oom["used_bytes"], oom["limit_bytes"])
        self.assertTrue(report["diagnosis"]["headline"]["text"])

    def test_a_bad_file_raises_with_its_name_and_the_problem(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "broken.xplane.pb")
            with open(bad, "wb") as f:
                f.write(b"\x0a\xff\xff\xff\xff\x0fnot a profile")
            with self.assertRaises(oomscope.OomscopeError) as caught:
                oomscope.analyze(bad)
            self.assertIn("broken.xplane.pb", str(caught.exception))
            self.assertEqual(caught.exception.returncode, 1)
            # The partial report is kept: the error is listed in it.
            self.assertTrue(caught.exception.report["errors"])
        with self.assertRaises(oomscope.OomscopeError) as caught:
            oomscope.analyze("/no/such/file.txt")
        self.assertIn("/no/such/file.txt", str(caught.exception))

    def test_compare_and_its_link(self):
        runs = os.path.join(corpus(), "xla-runs")
        a = os.path.join(runs, "new-libtpu-fits")
        b = os.path.join(runs, "new-libtpu-oom")
        result = oomscope.compare(a, b, label_a="fits", label_b="oom")
        self.assertIn("modules", result["comparison"])
        self.assertIn("#c=", oomscope.link(result))

    def test_show_embeds_the_bundled_page(self):
        # A wheel with the page (scripts/wheel.sh) puts the page itself in
        # show()'s output; without one, the static fragment alone.
        log = os.path.join(corpus(), "logs", "01_tpu_compile_hbm.txt")
        html = oomscope.show(log)._repr_html_()
        self.assertIn('class="oomscope-static"' if oomscope.page_dir() else 'class="oomscope"', html)
        if oomscope.page_dir():
            self.assertIn('<iframe class="oomscope-page"', html)
            self.assertIn("id=&quot;oomscope-report&quot;", html)
        else:
            self.assertNotIn("<iframe", html)

    def test_link_opens_on_the_page(self):
        report = oomscope.analyze(os.path.join(corpus(), "logs", "01_tpu_compile_hbm.txt"))
        url = oomscope.link(report)
        self.assertTrue(url.startswith("http://127.0.0.1:8080/#r="), url)
        self.assertTrue(oomscope.link(report, base_url="https://example.org/o/").startswith("https://example.org/o/#r="))
        with self.assertRaises(oomscope.OomscopeError):
            oomscope.link({"modules": "not a list"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
