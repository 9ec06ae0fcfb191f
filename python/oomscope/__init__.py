"""oomscope from Python: why did my XLA / PyTorch job run out of memory?

A thin layer over the `oomscope` command installed with this package (the
Rust analyzer): every function runs it and reads what it prints, so the
answers are exactly the command's and the page's, and a bad input can never
take the interpreter down.

    import oomscope
    report = oomscope.analyze(["oomscope-run-20261128-193501"])
    print(report["diagnosis"]["headline"]["text"])
    print(oomscope.link(report))
    oomscope.show(report)          # in a notebook

The command line does the rest: `oomscope run -- python train.py`,
`oomscope serve [PATH...]`, `oomscope open LINK`.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig

__all__ = ["OomscopeError", "analyze", "compare", "link", "show", "binary", "page_dir"]


class OomscopeError(Exception):
    """The command failed: `message` is what it printed (naming the file and
    the problem); `report` the partial report when there was one (the other
    inputs still load), `returncode` its exit status."""

    def __init__(self, message, report=None, returncode=None):
        super().__init__(message)
        self.message = message
        self.report = report
        self.returncode = returncode


_EXE = "oomscope.exe" if os.name == "nt" else "oomscope"


def binary():
    """The path of the `oomscope` command: $OOMSCOPE_BIN, else the one this
    package installed beside the interpreter's scripts, else PATH's."""
    explicit = os.environ.get("OOMSCOPE_BIN")
    if explicit:
        return explicit
    schemes = [None]
    if sys.platform != "win32":
        schemes.append("posix_user")
    for scheme in schemes:
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidate = os.path.join(scripts, _EXE)
        if os.path.isfile(candidate):
            return candidate
    found = shutil.which("oomscope")
    if found:
        return found
    raise OomscopeError("the oomscope command is not installed (pip install oomscope, or set OOMSCOPE_BIN)")


def page_dir():
    """The bundled page (`<prefix>/share/oomscope/dist`), or None when this
    installation has none (a `pip install .` without scripts/wheel.sh)."""
    for base in (sys.prefix, sysconfig.get_config_var("userbase") or ""):
        candidate = os.path.join(base, "share", "oomscope", "dist")
        if os.path.isfile(os.path.join(candidate, "index.html")):
            return candidate
    return None


def _paths(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise OomscopeError("no input given")
    return out


def _run(args, stdin=None):
    proc = subprocess.run(
        [binary()] + args,
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def _message(stderr, returncode):
    lines = [l for l in stderr.splitlines() if l.strip()]
    text = "\n".join(l[len("oomscope: "):] if l.startswith("oomscope: ") else l for l in lines)
    return text or "oomscope exited with status %d" % returncode


def _json_or_raise(returncode, stdout, stderr):
    report = None
    try:
        report = json.loads(stdout) if stdout.strip() else None
    except ValueError:
        report = None
    if returncode != 0 or report is None:
        raise OomscopeError(_message(stderr, returncode), report=report, returncode=returncode)
    return report


def analyze(paths, device=None, buffers=False):
    """The report of `oomscope analyze --json PATHS` as a dict (files,
    folders, archives). Raises OomscopeError naming the file and the problem
    when an input cannot be read; `.report` then holds what the others gave."""
    args = ["analyze", "--json"]
    if buffers:
        args.append("--buffers")
    if device:
        args += ["--device", device]
    return _json_or_raise(*_run(args + ["--"] + _paths(paths)))


def compare(a_paths, b_paths, label_a=None, label_b=None):
    """Both reports and their comparison (`oomscope compare --json A -- B`)."""
    args = ["compare", "--json"]
    if label_a:
        args += ["--label-a", label_a]
    if label_b:
        args += ["--label-b", label_b]
    return _json_or_raise(*_run(args + _paths(a_paths) + ["--"] + _paths(b_paths)))


def link(report, base_url=None):
    """The permalink of a report (analyze's dict) or a comparison
    (compare's): the page opens on it with nothing uploaded."""
    if not isinstance(report, dict):
        raise OomscopeError("link() takes the dict analyze() or compare() returned")
    args = ["link", "-"]
    if base_url:
        args += ["--base-url", base_url]
    code, out, err = _run(args, stdin=json.dumps(report).encode("utf-8"))
    if code != 0:
        raise OomscopeError(_message(err, code), returncode=code)
    return out.strip()


def show(paths_or_report):
    """The report inline in a notebook (paths, or a dict analyze() or
    compare() returned); see oomscope.notebook."""
    from . import notebook

    return notebook.show(paths_or_report)
