"""Where the work runs: in this process (the default) or on a Dask cluster.

The unit of work is a :class:`Task`: (claim or experiment, profile, seed, negative
control, examples, parameters).  :func:`run_task` turns it into a :class:`TaskResult`
(the evidence or the experiment's data, the figures as PNG bytes, or the error) and is the
same function wherever it runs, so a distributed run produces the same bytes as a serial
one.  :class:`Executor` runs a list of tasks

- serially in this process (no Dask import, no start-up cost),
- on a ``LocalCluster`` of ``workers`` processes with one thread each and BLAS pinned to
  one thread per worker (``Executor(workers=N)``), or
- on an existing cluster (``Executor(scheduler="tcp://host:8786")``),

and returns the results in the order of the tasks, whatever order they finished in.

Failure semantics (distributed): a task whose worker dies is run once more (scheduler
setting ``allowed-failures`` = 1 on a local cluster, ``retries=1`` on submission), then
reported as that task's error and the run goes on; an unreachable scheduler raises
:class:`ExecutionError` (the command line prints one line and exits 2); Ctrl-C cancels the
submitted tasks before the interrupt propagates.

Example (serial)::

    >>> from verify.runner import Executor, Task
    >>> with Executor() as ex:                                   # doctest: +SKIP
    ...     [r] = ex.run([Task("claim", "H1f", seed=3)])
    >>> r.evidence.passed, r.evidence.seed                       # doctest: +SKIP
    (True, 3)
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import dataclasses
import hashlib
import re
import tempfile
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Sequence

from numerics.validation import long_runs
from verify.kit import without_local_constants

__all__ = ["Task", "TaskResult", "Executor", "ExecutionError", "TimeBudgetExceeded",
           "run_task", "describe_exception", "derivation_self_test_site", "one_blas_thread", "keep_freed_memory", "without_local_constants", "parse_ids", "parse_seeds", "format_seeds", "time_budget", "report_progress",
           "progress_hook", "code_fingerprint", "write_experiment", "experiment_payload", "BLAS_ENV", "CONNECT_TIMEOUT", "MAX_SEEDS"]

MAX_SEEDS = 10_000
MAX_SEED = 2 ** 63 - 1
CONNECT_TIMEOUT = 5.0  # seconds to reach a scheduler (and to see its first worker)
# One BLAS thread per worker process: N single-threaded workers use N cores, not N^2.
BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class ExecutionError(RuntimeError):
    """The execution layer cannot run the work (no scheduler, no workers, workers with
    other code, Dask not installed): a one-line message saying what to do."""


class TimeBudgetExceeded(BaseException):
    """Raised inside a task whose time budget (``--timeout``) has run out.  A
    BaseException, so that ``except Exception`` in a check (or Hypothesis's shrinking)
    does not swallow it."""


# ----------------------------------------------------------------------------- seeds

_SEED_PART = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse_ids(spec: str) -> list[str]:
    """Claim ids from ``"H1f,W3a"`` (a comma list, as for seeds; the command line also takes
    them separated by spaces), stripped; an empty item is refused with an
    ``argparse.ArgumentTypeError`` (this is the command line's ``type=`` for ids).

    >>> parse_ids("H1f, W3a")
    ['H1f', 'W3a']
    """
    import argparse
    if not isinstance(spec, str):
        raise argparse.ArgumentTypeError(f"claim ids must be text such as H1f,W3a; got "
                                         f"{type(spec).__name__}")
    ids = [t.strip() for t in spec.split(",")]
    if not all(ids):
        raise argparse.ArgumentTypeError(f"claim ids are separated by commas or spaces, with no empty item; "
                         f"got {spec!r}")
    return ids


def parse_seeds(spec: str) -> list[int]:
    """Seeds from ``"0-19"``, ``"1,5,9"`` or a mix such as ``"0-3,7,10-12"``: sorted,
    without duplicates.

    >>> parse_seeds("0-3,7,2")
    [0, 1, 2, 3, 7]
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("--seeds needs a list such as 0-19, 1,5,9 or 0-3,7; got an empty value")
    seeds: set[int] = set()
    for part in spec.split(","):
        m = _SEED_PART.fullmatch(part)
        if not m:
            raise ValueError(f"--seeds: {part.strip()!r} is not a seed or a range a-b of "
                             "non-negative integers (e.g. 0-19, 1,5,9)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"--seeds: the range {part.strip()} is empty; write it as {hi}-{lo}")
        if hi > MAX_SEED:
            raise ValueError(f"--seeds: {hi} exceeds the largest seed {MAX_SEED}")
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds: more than {MAX_SEEDS} seeds; run fewer at a time")
        seeds.update(range(lo, hi + 1))
    return sorted(seeds)


def format_seeds(seeds: Sequence[int]) -> str:
    """The shortest spec for ``seeds`` (inverse of :func:`parse_seeds`).

    >>> format_seeds([0, 1, 2, 3, 7, 9, 10])
    '0-3,7,9-10'
    """
    out, run = [], []
    for s in sorted(set(seeds)):
        if run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [s]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


# ----------------------------------------------------------------------------- time budget

@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Raise :class:`TimeBudgetExceeded` in this thread once ``seconds`` have passed.

    The exception is delivered between Python bytecodes (``PyThreadState_SetAsyncExc``), so
    it works in Dask's worker threads too; a single long native call (one large LAPACK or
    SciPy routine) finishes before it is delivered."""
    if seconds is None:
        yield
        return
    tid = threading.get_ident()
    lock = threading.Lock()
    state = {"active": True, "fired": False}

    def fire() -> None:
        with lock:
            if state["active"]:
                state["fired"] = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(tid), ctypes.py_object(TimeBudgetExceeded))

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            state["active"] = False
        timer.cancel()
        if state["fired"]:  # clear an exception that was set but not yet delivered
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)


# ----------------------------------------------------------------------------- BLAS threads

@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (threadpoolctl).  A multi-threaded BLAS splits
    reductions (dot, gemv) by thread count, which changes the last bits of a result; with
    one thread in every task the numbers are the same in this process, on a local cluster
    and on any worker, whatever its core count.  The d-dimensional step shares its sample
    blocks among the BLAS thread limit in force (``numerics.twolayer.step_threads``): one
    thread per task here too, so N workers never run more than N threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # without threadpoolctl: the BLAS's own thread count
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ----------------------------------------------------------------------------- memory

#: glibc ``mallopt`` parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MALLOC_TUNED = False


def keep_freed_memory() -> None:
    """Let this process reuse freed large blocks instead of returning them to the system
    (glibc only; elsewhere a no-op).  The particle simulations allocate and free arrays of
    0.1-30 MB at every step; with glibc's defaults (and Dask's worker setting
    ``MALLOC_TRIM_THRESHOLD_=65536``) each one is a fresh mmap whose pages fault in again:
    on the full profile 40 % of the CPU time was the kernel zeroing pages (4e8 minor page
    faults), and one M1c step at N = 5000 took 10 ms instead of 4.5.  Blocks up to 32 MB
    now come from the heap, which is trimmed only above 1 GB free.  Called once per
    process by :func:`run_task`; numbers do not depend on it."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 1 << 30)


# ----------------------------------------------------------------------------- progress

_PROGRESS: contextvars.ContextVar[Callable[[int, int, str], None] | None] = \
    contextvars.ContextVar("verify_progress", default=None)


def report_progress(done: int, total: int, what: str = "") -> None:
    """Called by long checks (e.g. once per drawn instance) to show their own progress;
    a no-op unless the command line is showing a progress display in this process."""
    hook = _PROGRESS.get()
    if hook is not None:
        try:
            hook(int(done), int(total), str(what))
        except Exception:  # a display problem never breaks a check
            pass


@contextlib.contextmanager
def progress_hook(fn: Callable[[int, int, str], None] | None) -> Iterator[None]:
    """Route :func:`report_progress` calls made inside the block to ``fn``."""
    token = _PROGRESS.set(fn)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


# ----------------------------------------------------------------------------- tasks

@dataclass(frozen=True)
class Task:
    """One unit of work.  ``kind="claim"``: run claim ``name``'s check (or its negative
    control) at ``profile``/``seed`` with ``examples`` instances; ``figures`` also renders
    the claim's figures from the evidence.  ``kind="experiment"``: run experiment
    ``name`` with the full parameter dict ``params``; ``figures`` keeps its figure.
    ``timeout``: time budget in seconds (None: unbounded)."""
    kind: Literal["claim", "experiment"]
    name: str
    profile: str = "quick"
    seed: int = 0
    negative_control: bool = False
    examples: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    figures: bool = False
    timeout: float | None = None

    @property
    def label(self) -> str:
        neg = " (negative control)" if self.negative_control else ""
        return f"{self.name} seed {self.seed}{neg}"

    def key_prefix(self) -> str:
        """Readable task-key prefix for the Dask dashboard ("verify-claim-W2a")."""
        return f"verify-{self.kind}-{self.name}" + ("-negative" if self.negative_control else "")


@dataclass
class TaskResult:
    """What :func:`run_task` returns.  ``evidence`` (claims; its in-memory artifacts
    dropped, the figures already rendered) or ``data`` (experiments, JSON-ready);
    ``files`` maps figure file names to PNG bytes and ``figures`` lists
    ``(file name, caption)``; ``error`` is the exception text when the task raised
    (``traceback`` the full one), ``None`` otherwise."""
    task: Task
    evidence: Any = None
    data: dict[str, Any] | None = None
    figures: list[tuple[str, str]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    seconds: float = 0.0

    @property
    def error_line(self) -> str | None:
        """The first line of the error, at most 160 characters."""
        if self.error is None:
            return None
        return self.error.strip().splitlines()[0][:160] if self.error.strip() else "error"


#: Seconds of the claims' (check, negative control) at the full profile on one worker of a
#: 2-worker local cluster (2 cores; measured 2026-12-04 in a full report at load ~3, so
#: about 1.5x a quiet machine; H1g, H1l, W2k: 1.5x their own full runs at load ~2; M1f: 1.5x
#: its quiet full run of 2026-12-04, 380 s; H1m: 1.5x its quiet full run of 2026-12-05,
#: 103 s).  A control that reuses the simulations its check cached (it starts after the
#: check, on the same worker) is counted in the check.  Only a
#: scheduling hint: on a cluster the longest tasks start first, so that the workers finish
#: together instead of one long claim starting last; results are gathered in task order.
FULL_PROFILE_SECONDS: dict[str, tuple[float, float]] = {
    "M1c": (382, 433), "M1f": (570, 20), "H1k": (322, 1), "W3f": (270, 23), "W2j": (214, 10),
    "H1i": (234, 39), "M1d": (189, 1), "W2i": (77, 66), "H1g": (150, 43), "H1f": (74, 4),
    "W2g": (58, 2), "H1e": (44, 12), "H1d": (14, 29), "M1a": (17, 17), "H1c": (17, 16),
    "W3c": (15, 14), "H1b": (26, 1), "W3b": (16, 5), "H1j": (20, 1), "M1e": (8, 7),
    "M1g": (8, 4), "H1h": (9, 2), "W3d": (3, 5), "W2c": (6, 1), "W3a": (4, 1), "W3e": (2, 3),
    "W2b": (2, 2), "W2a": (2, 1), "W2h": (1, 2), "H1a": (3, 1), "W2e": (2, 1), "W2d": (1, 1),
    "W2f": (1, 1), "M1b": (1, 1), "W2k": (15, 15), "H1l": (52, 52), "H1m": (155, 10)}


def expected_seconds(task: Task) -> float:
    """A rough cost estimate of ``task`` for scheduling (longest first on a cluster)."""
    if task.kind == "claim" and task.profile == "full":
        check, control = FULL_PROFILE_SECONDS.get(task.name, (10.0, 10.0))
        return control if task.negative_control else check
    return 1.0


def _collect_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _run_claim(task: Task, result: TaskResult) -> None:
    from verify.claims import get
    claim = get(task.name)
    kw = {} if task.examples is None else {"examples": task.examples}
    ev = claim.run(task.profile, task.seed, negative_control=task.negative_control, **kw)
    try:
        if task.figures and claim.figures is not None and not task.negative_control:
            with tempfile.TemporaryDirectory(prefix="verify-figures-") as tmp:
                result.figures = [tuple(f) for f in claim.figures(ev, Path(tmp))]
                result.files = _collect_files(Path(tmp))
    finally:
        result.evidence = dataclasses.replace(ev, artifacts={})


def _run_experiment(task: Task, result: TaskResult) -> None:
    from verify import experiments
    from verify.kit import jsonable as _jsonable
    exp = experiments.get(task.name)
    data, fig = exp.fn(dict(task.params), task.profile, task.seed)
    result.data = _jsonable(data)
    if fig is None:
        return
    from verify.plotting import plt, save_figure
    if not task.figures:
        plt.close(fig)
        return
    with tempfile.TemporaryDirectory(prefix="verify-figures-") as tmp:
        name = f"{task.name}.png"
        save_figure(fig, Path(tmp) / name)
        result.files = _collect_files(Path(tmp))
        result.figures = [(name, exp.description)]


def run_task(task: Task) -> TaskResult:
    """Run one task here (in this process or on a Dask worker); exceptions of the work
    become ``result.error`` (KeyboardInterrupt and SystemExit propagate)."""
    result = TaskResult(task)
    keep_freed_memory()
    t0 = time.perf_counter()
    try:
        with one_blas_thread(), without_local_constants(), time_budget(task.timeout), \
                long_runs(progress=report_progress):
            if task.kind == "claim":
                _run_claim(task, result)
            elif task.kind == "experiment":
                _run_experiment(task, result)
            else:
                raise ValueError(f"unknown task kind {task.kind!r}")
    except TimeBudgetExceeded:
        result.error = (f"TimeBudgetExceeded: {task.label} ran longer than its time budget "
                        f"of {task.timeout:g} s (--timeout)")
    except Exception as exc:
        result.error = describe_exception(exc)
        result.traceback = traceback.format_exc()
    result.seconds = time.perf_counter() - t0
    return result


def derivation_self_test_site(exc: BaseException) -> str | None:
    """Where a derivation's self-test failed, as ``derivations/sphere.py:123``, when
    ``exc`` is a :class:`derivations.base.DerivationSelfTestError` or was raised inside a
    module of ``derivations`` (its innermost frame there: a 40-digit test, ``float()`` of
    a symbolic value, a TypeError of a wrong closed form); ``None`` otherwise."""
    from derivations.base import DerivationSelfTestError
    site = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        path = Path(frame.f_code.co_filename)
        if path.parent.name == "derivations" and path.name != "base.py":
            site = f"derivations/{path.name}:{lineno}"
    if site is None and isinstance(exc, DerivationSelfTestError):
        return "derivations"
    return site


def describe_exception(exc: BaseException) -> str:
    """The text of a task's exception; a failure inside a derivation is said to be one:
    ``derivation self-test failed (derivations/sphere.py:123): AssertionError: ...``."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    site = derivation_self_test_site(exc)
    return text if site is None else f"derivation self-test failed ({site}): {text}"


def experiment_payload(result: TaskResult) -> dict[str, Any]:
    """The JSON document of one experiment run (what ``NAME.json`` holds)."""
    t = result.task
    return {"experiment": t.name, "profile": t.profile, "seed": t.seed,
            "params": t.params, "data": result.data}


def write_experiment(result: TaskResult, outdir: str | Path) -> list[Path]:
    """Write ``outdir/NAME.json`` and the figure files of an experiment result; returns
    the paths written."""
    import json
    from verify._atomic import atomic_write_bytes
    from verify.kit import jsonable as _jsonable
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"{result.task.name}.json"
    atomic_write_bytes(path, json.dumps(_jsonable(experiment_payload(result)), indent=1,
                                        sort_keys=True).encode())
    written = [path]
    for name, data in result.files.items():
        atomic_write_bytes(outdir / name, data)
        written.append(outdir / name)
    return written


# ----------------------------------------------------------------------------- code identity

@functools.lru_cache(maxsize=1)
def code_fingerprint() -> dict[str, str]:
    """SHA-256 over the suite's source (packages verify, numerics, derivations) and the
    versions of the numerical libraries: workers must run the same code for the results to
    equal the serial run's."""
    import importlib
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for pkg in ("verify", "numerics", "derivations"):
        for p in sorted((root / pkg).rglob("*.py")):
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    libs = {}
    for name in ("numpy", "scipy", "sympy", "mpmath", "matplotlib", "hypothesis"):
        try:
            libs[name] = getattr(importlib.import_module(name), "__version__", "?")
        except ImportError:
            libs[name] = "missing"
    import platform
    return {"source": h.hexdigest()[:16], "python": platform.python_version(),
            "libraries": ", ".join(f"{k} {v}" for k, v in libs.items())}


# ----------------------------------------------------------------------------- executor

def _pair_key(task: Task) -> tuple:
    """What a claim's check and its negative control share (the run context's draws)."""
    return (task.kind, task.name, task.profile, task.seed, task.examples)


def _call_after(fn: Callable[[Any], Any], item: Any, _previous: Any) -> Any:
    """``fn(item)``, scheduled by Dask after the task whose result is ``_previous``."""
    return fn(item)


def _failure_result(task: Task, exc: BaseException) -> TaskResult:
    name = type(exc).__name__
    if name == "KilledWorker":
        msg = (f"KilledWorker: the worker running {task.label} died twice (tried on two "
               "workers); the run went on without it")
    else:
        msg = "".join(traceback.format_exception_only(type(exc), exc)).strip() or name
    return TaskResult(task, error=msg)


def _import_dask():
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError:
        raise ExecutionError("--workers/--scheduler need Dask: pip install 'dask[distributed]' "
                             "(or the extra: pip install 'meanfield-verify[distributed]')") from None
    return distributed


class Executor:
    """Runs tasks serially (default), on a new ``LocalCluster`` (``workers=N``) or on an
    existing scheduler (``scheduler=ADDRESS``).  Use as a context manager; the cluster (or
    the connection) lives until the block ends."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        if workers is not None and scheduler is not None:
            raise ExecutionError("give either --workers N (a local cluster) or --scheduler "
                                 "ADDRESS (an existing one), not both")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or not 1 <= workers <= 256):
            raise ExecutionError(f"--workers must be an integer in 1..256; got {workers!r}")
        if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
            raise ExecutionError("--scheduler needs an address such as tcp://127.0.0.1:8786")
        self.workers, self.scheduler = workers, scheduler
        self.connect_timeout = connect_timeout
        self.client = None
        self.cluster = None

    @property
    def distributed(self) -> bool:
        return self.workers is not None or self.scheduler is not None

    @property
    def description(self) -> str:
        if self.scheduler is not None:
            return f"Dask scheduler {self.scheduler}"
        if self.workers is not None:
            return f"local Dask cluster of {self.workers} worker process(es)"
        return "this process"

    # -- set-up / tear-down
    def __enter__(self) -> "Executor":
        if not self.distributed:
            return self
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self) -> None:
        import logging
        distributed = _import_dask()
        import dask
        for name in ("distributed", "distributed.client", "distributed.core",
                     "distributed.comm", "distributed.scheduler", "distributed.nanny",
                     "distributed.worker", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        if self.scheduler is not None:
            address = self.scheduler.strip()
            try:
                from distributed.comm import get_address_host_port
                get_address_host_port(address if "://" in address else f"tcp://{address}")
            except Exception as exc:
                raise ExecutionError(f"--scheduler {address}: not a scheduler address ({exc}); "
                                     "expected e.g. tcp://127.0.0.1:8786") from None
            try:
                self.client = distributed.Client(address, timeout=self.connect_timeout,
                                                 set_as_default=False)
            except Exception as exc:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                if len(reason) > 120:
                    reason = reason[:117] + "..."
                raise ExecutionError(
                    f"cannot connect to the Dask scheduler at {address} within "
                    f"{self.connect_timeout:g} s ({reason}); start one with `dask scheduler` "
                    "or check the address") from None
        else:
            # a task whose worker dies is tried once more; a worker holds one task at a
            # time, so a dying worker takes no queued innocent task with it
            # dashboard on a free port (":0"): None still binds 8787, and a second cluster on
            # the machine then warns that the port is taken
            with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                                  "distributed.scheduler.worker-saturation": 1.0}):
                self.cluster = distributed.LocalCluster(
                    n_workers=self.workers, threads_per_worker=1, processes=True,
                    dashboard_address=":0", silence_logs=logging.CRITICAL, env=dict(BLAS_ENV))
            self.client = distributed.Client(self.cluster, set_as_default=False)
        self._check_workers()

    def _check_workers(self) -> None:
        """At least one worker, and every worker runs this code (same fingerprint)."""
        n = self.workers or 1
        try:
            self.client.wait_for_workers(n, timeout=max(self.connect_timeout, 60.0)
                                         if self.cluster is not None else self.connect_timeout)
        except Exception:
            raise ExecutionError(f"the Dask scheduler {self.scheduler or ''} has no workers; start "
                                 f"some with `dask worker {self.scheduler or 'ADDRESS'} --nthreads 1`"
                                 ) from None
        try:
            prints = self.client.run(code_fingerprint)
        except Exception as exc:
            raise ExecutionError(
                f"the Dask workers cannot run the suite ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); install this version of "
                "meanfield-verify on the workers (pip install -e .) or start them from the "
                "repository root") from None
        if self.cluster is not None:
            return  # our own worker processes read the very same files
        mine = code_fingerprint()
        for worker, fp in sorted(prints.items()):
            if fp["source"] != mine["source"]:
                raise ExecutionError(
                    f"the Dask worker {worker} runs other code than this process (source "
                    f"{fp['source']} vs {mine['source']}); install the same version of "
                    "meanfield-verify on every worker")
            if fp["libraries"] != mine["libraries"] or fp["python"] != mine["python"]:
                raise ExecutionError(
                    f"the Dask worker {worker} has other library versions (Python "
                    f"{fp['python']}, {fp['libraries']}) than this process (Python "
                    f"{mine['python']}, {mine['libraries']}); results would not be "
                    "reproducible: use one environment everywhere")

    def close(self) -> None:
        client, cluster = self.client, self.cluster
        self.client = self.cluster = None
        for obj in (client, cluster):
            if obj is not None:
                with contextlib.suppress(Exception):
                    obj.close()

    # -- work
    def run(self, tasks: Sequence[Task],
            on_result: Callable[[int, TaskResult], None] | None = None) -> list[TaskResult]:
        """Run ``tasks``; ``on_result(i, result)`` is called as each one finishes; the
        returned list is in the order of ``tasks``.  On a cluster a claim's negative control
        starts after its check (same name, profile, seed) when both are in ``tasks``: Dask
        runs it where the check's result lives, so the simulations the check cached in that
        worker (width studies keyed on the shared run context) serve the control."""
        tasks = list(tasks)
        checks = {_pair_key(t): i for i, t in enumerate(tasks)
                  if t.kind == "claim" and not t.negative_control}
        after = [checks.get(_pair_key(t)) if t.kind == "claim" and t.negative_control else None
                 for t in tasks]
        return self.map(run_task, tasks, keys=[t.key_prefix() for t in tasks],
                        priorities=[expected_seconds(t) for t in tasks],
                        on_result=on_result, on_failure=_failure_result, after=after)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], *,
            keys: Sequence[str] | None = None,
            priorities: Sequence[float] | None = None,
            on_result: Callable[[int, Any], None] | None = None,
            on_failure: Callable[[Any, BaseException], Any] | None = None,
            after: Sequence[int | None] | None = None) -> list[Any]:
        """``[fn(x) for x in items]`` here or on the cluster (``fn`` must be importable by
        the workers: a module-level function).  A task lost to dying workers (or failing
        outside ``fn``) becomes ``on_failure(item, exc)``; without ``on_failure`` the
        exception propagates.  ``priorities`` (distributed only): larger starts earlier;
        the results keep the order of ``items`` whatever the priorities.  ``after[i] = j``
        (distributed only; ``j < i``): item i starts once item j has finished (serially,
        items run in order anyway)."""
        items = list(items)
        after = list(after) if after is not None else [None] * len(items)
        if len(after) != len(items) or any(j is not None and not 0 <= j < i
                                           for i, j in enumerate(after)):
            raise ValueError("after must give, per item, None or the index of an earlier item")
        if not self.distributed:
            out = []
            for i, x in enumerate(items):
                r = fn(x)
                out.append(r)
                if on_result is not None:
                    on_result(i, r)
            return out
        if self.client is None:
            raise ExecutionError("Executor.map outside its `with` block")
        from distributed import as_completed
        prefixes = list(keys) if keys is not None else ["verify-task"] * len(items)
        prio = list(priorities) if priorities is not None else [0.0] * len(items)
        # Dask priorities are integers; ranks keep the order of the estimates
        rank = {i: r for r, i in enumerate(sorted(range(len(items)), key=lambda i: prio[i]))}
        futures: list[Any] = []
        for i, (x, p) in enumerate(zip(items, prefixes)):
            key = f"{p}-{uuid.uuid4().hex}"
            if after[i] is None:
                futures.append(self.client.submit(fn, x, key=key, pure=False, retries=1,
                                                  priority=rank[i]))
            else:
                futures.append(self.client.submit(_call_after, fn, x, futures[after[i]], key=key,
                                                  pure=False, retries=1, priority=rank[i]))
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(items)
        try:
            for fut in as_completed(futures, loop=self.client.loop):
                i = index[fut.key]
                try:
                    r = fut.result()
                except Exception as exc:
                    if on_failure is None:
                        raise
                    r = on_failure(items[i], exc)
                out[i] = r
                fut.release()
                if on_result is not None:
                    on_result(i, r)
        except BaseException:
            with contextlib.suppress(Exception):
                self.client.cancel(futures, force=True)
            raise
        return out
