"""`oomscope.show()`: the report inline in a notebook.

The HTML is made by the command (`analyze --html`, `link --html`), and is
self-contained: nothing is fetched, so it shows offline and stays in the
saved notebook. It holds two things:

- the page itself, in an `<iframe srcdoc>`: the page's own WebAssembly, JS
  and CSS travel inside the output with the report's JSON, and draw the
  whole interactive report (timeline, charts, decision tree) where the
  notebook runs scripts (a trusted notebook in Jupyter, JupyterLab,
  VS Code, Colab). It is there when the page is installed with the command
  (the wheel of scripts/wheel.sh; `$OOMSCOPE_DIST`);
- a static fragment (inline CSS and SVG, no script): what shows where
  scripts do not run, and what the page replaces where they do.

The link in it opens the whole report on the page (`oomscope serve` serves
it locally).
"""

import json

from . import OomscopeError, _message, _paths, _run


class Shown(object):
    """What show() returns: notebooks display it through `_repr_html_`."""

    def __init__(self, html, errors=""):
        self.html = html
        self.errors = errors

    def _repr_html_(self):
        return self.html

    def __repr__(self):
        return "<oomscope report: display it in a notebook, or read .html>"


def show(paths_or_report):
    """The report of PATHs (a path or a list of them, as analyze takes), or
    of a dict analyze() or compare() returned, as inline HTML. Inputs that
    cannot be read are listed in it; nothing at all to show raises."""
    if isinstance(paths_or_report, dict):
        code, out, err = _run(["link", "--html", "-"], stdin=json.dumps(paths_or_report).encode("utf-8"))
    else:
        code, out, err = _run(["analyze", "--html", "--link", "--"] + _paths(paths_or_report))
    if not out.strip():
        raise OomscopeError(_message(err, code), returncode=code)
    return Shown(out, err)
