# oomscope run's recording hook. `oomscope run` writes this file as
# `DIR/.oomscope/hook/sitecustomize.py` and puts that folder first on
# PYTHONPATH, so every Python process of the run loads it at start-up.
#
# It does nothing until the program imports jax, torch or torch_xla. Every step is
# guarded: a hook that fails leaves the program running as if unwrapped and
# says what could not be recorded in its process's notes
# (`DIR/.oomscope/pid<PID>.json`, which `oomscope run` prints at the end).
#
# What it records, per process, into `DIR/pid<PID>/` (renamed `rank<N>/` by
# `oomscope run` once every process has ended, from the rank noted here):
# - JAX: XLA dumps (XLA_FLAGS, merged with the user's own), a device memory
#   profile (`jax.profiler.device_memory_profile()`) every OOMSCOPE_RUN_EVERY
#   seconds and at exit, named `memory_<seq>_step<step>.prof` so that the
#   analyzer reads them as one series in order;
# - PyTorch on CUDA: `_record_memory_history` (bounded), a snapshot from the
#   allocator's OOM observer and at exit, `memory_stats()` samples as a
#   `step,...` CSV per device. Without CUDA it records nothing and notes so.
# - PyTorch/XLA: XLA dumps (the same XLA_FLAGS, set before its runtime
#   starts), and `xm.get_memory_info()` every OOMSCOPE_RUN_EVERY seconds and
#   at exit, printed as the user would print it, one `step=N DEVICE: {...}`
#   line each in `xla_memory_steps.log` (the step-log reader reads every
#   version's keys). Never before the program has started the runtime; a
#   device that has no memory info (the CPU) is noted once.
#
# Nothing is written outside DIR. The standard library only.

import os
import sys

_RUN_DIR = os.environ.get("OOMSCOPE_RUN_DIR", "")
_HOOK_DIR = os.path.dirname(os.path.abspath(__file__))


def _chain_previous_sitecustomize():
    # This file shadows any other `sitecustomize` (Debian ships one, so may
    # the user's environment): load the next one on the path, as Python
    # would have without us.
    try:
        import importlib.machinery
        import importlib.util

        path = [p for p in sys.path if os.path.abspath(p or ".") != _HOOK_DIR]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception as e:  # the user's sitecustomize failing is theirs to see
        sys.stderr.write("oomscope: the previous sitecustomize failed: %r\n" % (e,))


# Names of the training loop's step counter, looked up in the main thread's
# frames when a profile is taken ("step numbers where visible").
_STEP_NAMES = ("step", "global_step", "step_num", "train_step", "iteration", "it")
# Profiles kept per process: past this, every second one is deleted and the
# interval doubles, so a long run keeps its whole span at a coarser grain.
_MAX_PROFILES = 64
# Uncaught exception text kept in the notes.
_MAX_EXCEPTION_CHARS = 64 * 1024
# Rank variables of launchers, global ranks only (LOCAL_RANK repeats per host).
_RANK_VARS = (
    "OOMSCOPE_RANK",
    "RANK",
    "JAX_PROCESS_ID",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
    "CLOUD_TPU_TASK_ID",
    "TPU_WORKER_ID",
)


import threading

_META_LOCK = threading.Lock()


class _Recorder(object):
    def __init__(self):
        self.reset()

    def reset(self):
        self.pid = os.getpid()
        self.folder = os.path.join(_RUN_DIR, "pid%d" % self.pid)
        self.meta_path = os.path.join(_RUN_DIR, ".oomscope", "pid%d.json" % self.pid)
        self.rank = None
        self.rank_from = None
        self.frameworks = []
        self.notes = []
        self.exception = None
        self.profiles = []
        self.seq = 0
        self.step = 0
        self.stopped = None
        self.exited = False
        self.every = _every()
        self.sampler = None
        self.xla_memory_info = True
        self._rank_from_env()

    # -- bookkeeping -----------------------------------------------------
    def _rank_from_env(self):
        for name in _RANK_VARS:
            value = os.environ.get(name)
            if value is not None and value.strip().isdigit():
                self.rank, self.rank_from = int(value), name
                return

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)
        self.save_meta()

    def stop(self, why):
        # A full disk or an unwritable folder stops recording, never the program.
        if self.stopped is None:
            self.stopped = why
            self.note("recording stopped: %s" % why)

    def save_meta(self):
        # The sampler thread and the main thread both note things.
        with _META_LOCK:
            self._save_meta()

    def _save_meta(self):
        try:
            import json

            meta = {
                "pid": self.pid,
                "folder": os.path.basename(self.folder),
                "rank": self.rank,
                "rank_from": self.rank_from,
                "frameworks": self.frameworks,
                "notes": self.notes,
                "exception": self.exception,
                "profiles": len(self.profiles),
            }
            tmp = self.meta_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(meta, f)
            os.replace(tmp, self.meta_path)
        except Exception:
            pass  # the notes are best effort; the program goes on

    def ensure_folder(self):
        os.makedirs(self.folder, exist_ok=True)

    def write_file(self, name, data):
        """Writes `data` as `name` in this process's folder, atomically; False
        (and recording stops) when it cannot."""
        if self.stopped is not None:
            return False
        try:
            self.ensure_folder()
            path = os.path.join(self.folder, name)
            tmp = os.path.join(self.folder, "." + name + ".tmp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            return True
        except Exception as e:
            self.stop("cannot write %s: %s" % (name, e))
            try:
                os.remove(tmp)
            except Exception:
                pass
            return False

    # -- JAX and PyTorch/XLA: the XLA dumps ----------------------------------
    def before_xla(self):
        # XLA reads XLA_FLAGS when its first backend starts, after this
        # import: the flags as the program has them now (it may have set
        # some itself), less the dump folder a parent process of this run
        # left there, plus ours.
        current = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = merge_xla_flags(
            without_run_dump(current), os.path.join(self.folder, "xla_dump")
        )

    def after_jax(self, jax):
        self.frameworks.append("jax")
        self.save_meta()
        # jax's own atexit handler (api.clean_up) clears its backends, and
        # atexit runs handlers last-registered first: registered again now,
        # after jax's, the final sample runs while the backends still exist.
        import atexit

        atexit.register(self.at_exit)
        try:
            import jax.distributed as dist

            original = dist.initialize

            def initialize(*args, **kwargs):
                result = original(*args, **kwargs)
                try:
                    from jax._src import distributed as _d

                    pid = _d.global_state.process_id
                    if pid is not None:
                        self.rank, self.rank_from = int(pid), "jax.distributed"
                        self.save_meta()
                except Exception as e:
                    self.note("the rank could not be read after jax.distributed.initialize: %r" % (e,))
                return result

            initialize.__wrapped__ = original
            initialize.__doc__ = original.__doc__
            dist.initialize = initialize
            jax.distributed.initialize = initialize
        except Exception as e:
            self.note("jax.distributed.initialize is not watched: %r" % (e,))
        self.start_sampler()

    def jax_backends_ready(self):
        # Never start a backend ourselves: jax.distributed.initialize must
        # come first, and the program decides when.
        try:
            from jax._src import xla_bridge

            return bool(xla_bridge.backends_are_initialized())
        except Exception:
            return False

    def jax_profile(self):
        if "jax" not in self.frameworks or not self.jax_backends_ready():
            return
        try:
            import jax

            if self.rank is None:
                self.rank, self.rank_from = int(jax.process_index()), "jax.process_index"
                self.save_meta()
            data = jax.profiler.device_memory_profile()
        except Exception as e:
            self.note("a device memory profile could not be taken: %r" % (e,))
            return
        name = "memory_%04d_step%d.prof" % (self.seq, self.step)
        if self.write_file(name, data):
            self.seq += 1
            self.profiles.append(name)
            self.thin_profiles()
            self.save_meta()

    def thin_profiles(self):
        if len(self.profiles) <= _MAX_PROFILES:
            return
        # Keep the first, the last and every second one between them.
        keep = self.profiles[:1] + self.profiles[2:-1:2] + self.profiles[-1:]
        for name in self.profiles:
            if name not in keep:
                try:
                    os.remove(os.path.join(self.folder, name))
                except Exception:
                    pass
        self.profiles = keep
        self.every *= 2

    # -- PyTorch -----------------------------------------------------------
    # -- PyTorch/XLA -------------------------------------------------------
    def after_torch_xla(self, torch_xla):
        self.frameworks.append("torch_xla")
        self.save_meta()
        # torch_xla's own atexit handler shuts its runtime down: ours,
        # registered after it, runs first (as after jax's import).
        import atexit

        atexit.register(self.at_exit)
        self.start_sampler()

    def torch_xla_sample(self):
        if "torch_xla" not in self.frameworks or self.stopped is not None or not self.xla_memory_info:
            return
        try:
            import torch_xla

            started = getattr(torch_xla._XLAC, "_xla_runtime_is_initialized", None)
            if started is None:
                self.xla_memory_info = False
                self.note("this torch_xla cannot tell whether its runtime has started: its memory is not sampled")
                return
            # Never start the runtime ourselves: the program decides when.
            if not started():
                return
            import torch_xla.core.xla_model as xm

            device = xm.xla_device()
            info = dict(xm.get_memory_info(device))
        except Exception as e:
            self.xla_memory_info = False
            reason = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
            self.note("torch_xla get_memory_info() gives nothing on this device, so no memory samples: %s" % reason)
            return
        self.append_line("xla_memory_steps.log", None, xla_memory_line(self.step, device, info))

    def append_line(self, name, header, line):
        """Appends `line` to `name` in this process's folder (`header` first
        when the file is new); recording stops when it cannot."""
        if self.stopped is not None:
            return
        try:
            self.ensure_folder()
            path = os.path.join(self.folder, name)
            new = not os.path.exists(path)
            with open(path, "a") as f:
                if new and header:
                    f.write(header)
                f.write(line)
        except Exception as e:
            self.stop("cannot write %s: %s" % (name, e))

    # -- PyTorch on CUDA ---------------------------------------------------
    def after_torch(self, torch):
        self.frameworks.append("torch")
        try:
            cuda = torch.cuda.is_available()
        except Exception as e:
            cuda = False
            self.note("torch.cuda.is_available() failed: %r" % (e,))
        if not cuda:
            self.note("PyTorch without CUDA: no CUDA memory to record (PyTorch/XLA is recorded when torch_xla is imported)")
            return
        try:
            torch.cuda.memory._record_memory_history(max_entries=100000)
        except Exception as e:
            self.note("torch.cuda.memory._record_memory_history failed: %r" % (e,))
        try:
            def on_oom(device, alloc, device_alloc, device_free):
                self.torch_snapshot("snapshot_oom.pickle")

            torch._C._cuda_attach_out_of_memory_observer(on_oom)
        except Exception as e:
            self.note("the CUDA allocator's OOM observer could not be attached: %r" % (e,))
        self.start_sampler()

    def torch_snapshot(self, name):
        try:
            import pickle
            import torch

            data = pickle.dumps(torch.cuda.memory._snapshot())
        except Exception as e:
            self.note("a CUDA memory snapshot could not be taken: %r" % (e,))
            return
        self.write_file(name, data)

    def torch_sample(self):
        if "torch" not in self.frameworks or self.stopped is not None:
            return
        try:
            import torch

            if not torch.cuda.is_initialized():
                return
            rows = [(d, cuda_stats_row(self.step, torch.cuda.memory_stats(d))) for d in range(torch.cuda.device_count())]
        except Exception as e:
            self.note("torch.cuda.memory_stats failed: %r" % (e,))
            return
        for device, row in rows:
            # One file per device: every column but the step is a series of bytes.
            self.append_line("cuda%d_memory_steps.csv" % device, CUDA_STATS_HEADER, row)

    # -- sampling ----------------------------------------------------------
    def visible_step(self):
        try:
            import threading

            frame = sys._current_frames().get(threading.main_thread().ident)
        except Exception:
            return
        depth = 0
        while frame is not None and depth < 64:
            code = frame.f_code
            filename = code.co_filename
            # The user's frames only: libraries' own counters are not the loop's.
            if "site-packages" not in filename and "dist-packages" not in filename and not filename.startswith("<frozen"):
                try:
                    local = frame.f_locals
                    for name in _STEP_NAMES:
                        value = local.get(name)
                        if type(value) is int and value >= 0:
                            self.step = value
                            return
                except Exception:
                    pass
            frame = frame.f_back
            depth += 1

    def sample(self):
        self.visible_step()
        self.jax_profile()
        self.torch_sample()
        self.torch_xla_sample()

    def start_sampler(self):
        if self.sampler is not None or self.every <= 0:
            return
        import threading

        def loop():
            while True:
                stop.wait(self.every)
                if stop.is_set() or self.stopped is not None:
                    return
                try:
                    self.sample()
                except Exception as e:
                    self.note("sampling failed: %r" % (e,))

        stop = threading.Event()
        thread = threading.Thread(target=loop, name="oomscope-sampler", daemon=True)
        thread.start()
        self.sampler = (thread, stop)

    def at_exit(self):
        # Registered at start-up and again after jax's import: once is enough.
        if self.exited:
            return
        self.exited = True
        if self.sampler is not None:
            self.sampler[1].set()
        try:
            self.sample()
            if "torch" in self.frameworks:
                import torch

                if torch.cuda.is_available() and torch.cuda.is_initialized():
                    self.torch_snapshot("snapshot_exit.pickle")
        except Exception as e:
            self.note("the final sample failed: %r" % (e,))
        self.save_meta()


CUDA_STATS_HEADER = "step,allocated_bytes,reserved_bytes,active_bytes\n"


def cuda_stats_row(step, stats):
    """One `cuda<D>_memory_steps.csv` row from `torch.cuda.memory_stats(D)`'s
    flat dict (keys as PyTorch names them)."""
    get = lambda key: int(stats.get(key, 0))
    return "%d,%d,%d,%d\n" % (
        step,
        get("allocated_bytes.all.current"),
        get("reserved_bytes.all.current"),
        get("active_bytes.all.current"),
    )


def xla_memory_line(step, device, info):
    """One `xla_memory_steps.log` line: `xm.get_memory_info()`'s dict as
    Python prints it (`{'bytes_used': N, 'bytes_limit': N}`; older
    torch_xla `{'kb_free': N, 'kb_total': N}`), after the step and device."""
    return "step=%d %s: %r\n" % (step, device, info)


def without_run_dump(flags):
    """`flags` without a `--xla_dump_to` into this run's folder (a parent
    process of the run set it; this process dumps into its own)."""
    inside = "--xla_dump_to=" + os.path.join(_RUN_DIR, "")
    return " ".join(w for w in flags.split() if not w.startswith(inside))


def merge_xla_flags(user, dump_to):
    """The user's XLA_FLAGS plus the dump flags oomscope reads; a flag the
    user set wins (their `--xla_dump_to` included)."""
    ours = [
        ("--xla_dump_to", dump_to),
        ("--xla_dump_hlo_as_text", None),
        ("--xla_dump_hlo_as_proto", None),
        # A bound on the disk a program that compiles without end can use.
        ("--xla_dump_max_hlo_modules", "500"),
    ]
    names = set()
    for word in user.split():
        names.add(word.split("=", 1)[0].lstrip("-").replace("-", "_"))
    words = user.split()
    for flag, value in ours:
        if flag.lstrip("-") in names:
            continue
        words.append(flag if value is None else "%s=%s" % (flag, value))
    return " ".join(words)


def _every():
    try:
        return float(os.environ.get("OOMSCOPE_RUN_EVERY", "5"))
    except ValueError:
        return 5.0


class _ImportWatcher(object):
    """A meta path finder that runs our set-up around the first import of
    jax, torch and torch_xla, and otherwise finds nothing (Python asks the
    next one)."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.seen = set()

    def find_spec(self, name, path=None, target=None):
        if name not in ("jax", "torch", "torch_xla") or name in self.seen:
            return None
        self.seen.add(name)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            recorder = self.recorder
            if name in ("jax", "torch_xla"):
                recorder.before_xla()
            original = spec.loader.exec_module

            def exec_module(module):
                original(module)
                try:
                    if name == "jax":
                        recorder.after_jax(module)
                    elif name == "torch_xla":
                        recorder.after_torch_xla(module)
                    else:
                        recorder.after_torch(module)
                except Exception as e:
                    recorder.note("the %s hook failed: %r" % (name, e))

            spec.loader.exec_module = exec_module
            return spec
        except Exception as e:
            self.recorder.note("the import of %s is not watched: %r" % (name, e))
            return None


def _install():
    if not _RUN_DIR or not os.path.isdir(_RUN_DIR):
        return
    recorder = _Recorder()
    sys.meta_path.insert(0, _ImportWatcher(recorder))

    import atexit

    atexit.register(recorder.at_exit)

    previous_hook = sys.excepthook

    def excepthook(kind, value, tb):
        try:
            import traceback

            text = "".join(traceback.format_exception(kind, value, tb))
            recorder.exception = text[-_MAX_EXCEPTION_CHARS:]
            if recorder.frameworks:
                recorder.save_meta()
        except Exception:
            pass
        previous_hook(kind, value, tb)

    sys.excepthook = excepthook

    def after_fork():
        # A forked child is another process: its own folder and sampler
        # (threads do not survive a fork), the frameworks it inherited, and
        # a fresh lock (another thread may have held it at the fork).
        global _META_LOCK
        _META_LOCK = threading.Lock()
        frameworks = recorder.frameworks
        recorder.reset()
        recorder.frameworks = list(frameworks)
        if frameworks:
            recorder.save_meta()
            recorder.start_sampler()

    try:
        os.register_at_fork(after_in_child=after_fork)
    except Exception:
        pass


try:
    _install()
except Exception as e:
    sys.stderr.write("oomscope: the recording hook could not start: %r\n" % (e,))
_chain_previous_sitecustomize()
