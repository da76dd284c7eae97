"""``python -m verify bench [--quick] [--json FILE]``: time one loss-and-gradient step of
the particle engines against their floor, the dense NumPy references and PyTorch.

Protocol (one run, same inputs for every engine of a case):

- inputs from one seed (``numerics.rng.make_rng``); 1-D (docs/conventions.md, section 1): (a, b) ~ U([-1, 1]^2),
  c ~ N(0, 1), x ~ U(-1, 1) (unsorted: the engine pays for its sort), y = sin(pi x),
  alpha = m; d-dim (docs/conventions.md, section 2): a = +-1, b ~ Unif(S^{d-1}), x ~ N(0, I_d / d),
  y = |x_H| (d_H = 5), L = 1/2 mean_i (f(x_i) - y_i)^2;
- engines: "engine" = the public API the simulations use (``numerics.relu1d.loss_and_grad``
  -> ``numerics.fast1d`` sorted kernels; ``numerics.twolayer.loss_and_grad``); "dense" =
  the dense NumPy reference (``relu1d.loss_and_grad_dense``,
  ``twolayer.loss_and_grad_dense_reference``); for d-dim "floor" = the two GEMMs no
  d-dimensional step can avoid, Z = X B^T and Z^T X (the forward pre-activations and the
  backward product with an (n, m) matrix), blocked over samples at the fastest of several
  block sizes and of the two layouts of the second product (Z^T X_s or X_s^T Z; chosen on
  warm-up runs), nothing else; "torch" = the same float64 step
  with PyTorch autograd on the CPU, if ``import torch`` works (optional, never a run-time
  dependency).  Dense and torch are chunked over samples (2^22 entries per m x chunk
  block; sums over samples split exactly), which only bounds their memory;
- fairness: every engine runs on ONE thread: NumPy's BLAS is limited to one thread
  (threadpoolctl) and ``torch.set_num_threads(1)``, as in the claim runs (one BLAS thread
  per task); the machine is shared, so one core per engine is also the reproducible choice;
- then, for the d-dimensional cases, the engine, the floor and PyTorch again at each
  thread count of MULTI_THREADS (2; as far as the CPUs allow): BLAS limited to that many
  threads (the engine follows the limit: ``numerics.twolayer.step_threads``) and
  ``torch.set_num_threads``; the floor is the faster of the blocked GEMMs on that many
  BLAS threads and the samples split among that many threads with one BLAS thread each,
  the best candidate of each timed with the engines (the other kept as "other_floor");
  these columns are judged on wall time (the CPU time adds up the threads), and each
  timed call of a short step there follows untimed calls of the same engine for at least
  MULTI_STEADY_SECONDS (a training loop's steady state: on a virtual machine that packs
  the threads of an idle process onto one vCPU, one untimed call is not enough);
- one untimed warm-up call per engine, which also measures the agreement with "engine"
  (max over loss and gradients of max|u - v| / max|v|) and the peak resident memory of
  the process during the call (VmHWM after resetting it via /proc/self/clear_refs; also
  the increment over the RSS before the call); for seconds-long steps the warm-up call is
  also the first timed repeat;
- before each engine's calls (warm-up and every timed repeat) the process waits until
  its own threads are idle (:func:`verify._bench_process.quiesce`: its CPU time stops
  advancing over a 10 ms sleep, at most 0.5 s): a worker thread that an engine leaves
  spinning (OpenBLAS's on a
  multi-threaded GEMM spin-wait about 0.1 s, PyTorch's OpenMP threads a few ms) would
  otherwise hold a core while the next engine runs (measured: the d-dim step at 2
  threads ran at its one-thread speed, 3.7 ms instead of 2.0 ms, after the floor on 2
  BLAS threads);
- timed calls interleaved round-robin over the engines (so load changes hit all engines
  alike); for short steps each timed call follows an untimed call of the same engine (its
  steady state: its own inputs and buffers in cache, not those another engine left); both the CPU time of the process (``time.process_time``: the work of a one-
  thread step, not inflated while other processes hold the core) and the wall time are
  recorded, min and median over the repeats; ratios = time(other) / time(engine) of the
  minima; the targets are judged on the ratio of CPU-time minima.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
from threadpoolctl import threadpool_limits

from numerics import relu1d, twolayer
from numerics.rng import make_rng
from verify._atomic import atomic_write_bytes
from verify._bench_floor import fastest_floors, keep_fastest_floor
from verify._bench_process import loadavg, measure_peak, quiesce, run_for

__all__ = ["add_arguments", "run", "run_bench", "performance_section", "Case",
           "QUICK_CASES", "FULL_CASES"]

SCHEMA = 3
CHUNK_ELEMENTS = 2 ** 22  # entries of one m x chunk block in the dense / torch steps
THREADS = 1               # BLAS / PyTorch threads of every engine (the main columns)
#: thread counts of the further d-dim columns (engine, floor, PyTorch; wall time)
MULTI_THREADS = (2,)
#: least repeats of a short step (not timed from its warm-up) in those columns: on a
#: virtual machine the second core's availability comes and goes in phases of 0.1-10 s
#: (benchmarks/README.md, "The second core of this virtual machine"), so the minima need
#: repeats spread over seconds
MULTI_MIN_REPEATS = 60
#: untimed calls (seconds) before each timed call of a short step in those columns: a
#: training loop's steady state.  After 30 ms or more without work this machine's kernel
#: runs both threads of a process on one vCPU for its next 10-20 steps; one untimed call
#: does not undo that (benchmarks/README.md, "A helper that keeps its core, and a steady
#: state of many calls")
MULTI_STEADY_SECONDS = 0.05
#: target ratio torch / engine of the d-dimensional step (at every thread count)
TORCH_TARGET = 1.5
#: target ratio engine / floor (CPU-time minima) of the d-dimensional step
FLOOR_TARGET = 1.3


@dataclass(frozen=True)
class Case:
    """One benchmark size: ``problem`` in {"relu1d", "twolayer"}; ``sizes`` m, s (1-D)
    or d, m, n; repeats of the fast engines and of the slow ones (dense, torch)."""
    problem: str
    scale: str
    sizes: tuple[tuple[str, int], ...]
    repeats: int
    slow_repeats: int
    note: str = ""
    time_warmup: bool = False  # count the warm-up call as a repeat (seconds-long steps)

    @property
    def size_dict(self) -> dict[str, int]:
        return dict(self.sizes)


def _c1(scale, m, s, r, rs, note="", warm=False):
    return Case("relu1d", scale, (("m", m), ("s", s)), r, rs, note, warm)


def _c2(scale, d, m, n, r, rs, note="", warm=False):
    return Case("twolayer", scale, (("d", d), ("m", m), ("n", n)), r, rs, note, warm)


QUICK_CASES = (
    _c1("paper", 1000, 10, 200, 200),
    _c1("large (s reduced)", 100_000, 1_000, 5, 1,
        "quick profile: 1-D large scale with s = 1e3 instead of 1e4 (dense and PyTorch cost "
        "O(m s), the engine O((m + s) log(m + s)): the full-size ratio is larger)", True),
    _c2("paper", 30, 1024, 1000, 20, 10),
    _c2("mid", 30, 4096, 10_000, 5, 2, "", True),
    _c2("large (n reduced)", 30, 10_000, 10_000, 5, 2,
        "quick profile: d-dim large scale with n = 1e4 instead of 1e5 (same m, d; every "
        "engine's cost is linear in n)", True),
)
FULL_CASES = (
    _c1("paper", 1000, 10, 500, 500),
    _c1("mid", 10_000, 1_000, 50, 5),
    _c1("large", 100_000, 10_000, 10, 2, "", True),
    _c2("paper", 30, 1024, 1000, 150, 30),
    _c2("mid", 30, 4096, 10_000, 20, 4, "", True),
    _c2("large", 30, 10_000, 100_000, 8, 2, "", True),
)
TINY_CASES = (  # for the unit tests
    _c1("tiny", 50, 7, 2, 2),
    _c2("tiny", 3, 16, 20, 2, 2),
)


# --------------------------------------------------------------------------- machine
def blas_threads() -> int | None:
    """Threads of the OpenBLAS that NumPy loaded (None if it cannot be queried)."""
    libdir = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    names = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
             "openblas_get_num_threads64_", "openblas_get_num_threads")
    for lib in sorted(glob.glob(str(libdir / "*openblas*"))):
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        for name in names:
            fn = getattr(handle, name, None)
            if fn is not None:
                return int(fn())
    return None


def _import_torch(threads: int | None):
    try:
        import torch  # noqa: PLC0415  (optional benchmark extra)
    except Exception:  # noqa: BLE001  (any failure to import means "not available")
        return None
    if threads:
        torch.set_num_threads(int(threads))
    return torch


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _machine(torch, threads) -> dict[str, Any]:
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
            "blas_threads": threads, "torch": None, "torch_threads": None,
            "relu_pass": twolayer.relu_pass_backend(),
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


# --------------------------------------------------------------------------- problems
def _inputs(case: Case, seed: int) -> dict[str, Any]:
    sz = case.size_dict
    if case.problem == "relu1d":
        m, s = sz["m"], sz["s"]
        rng = make_rng(seed, "bench", "relu1d", m, s)
        a, b = rng.uniform(-1.0, 1.0, size=(2, m))
        c = rng.standard_normal(m)
        x = rng.uniform(-1.0, 1.0, size=s)
        return {"a": a, "b": b, "c": c, "x": x, "y": np.sin(np.pi * x), "alpha": float(m)}
    d, m, n = sz["d"], sz["m"], sz["n"]
    rng = make_rng(seed, "bench", "twolayer", d, m, n)
    a = rng.choice([-1.0, 1.0], size=m)
    B = rng.standard_normal((m, d))
    B /= np.linalg.norm(B, axis=1, keepdims=True)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    return {"a": a, "B": B, "X": X, "Y": np.linalg.norm(X[:, :5], axis=1)}


def _dense_relu1d(a, b, c, x, y, alpha):
    """relu1d's dense reference, chunked over samples (loss and gradients are sums)."""
    rows = max(1, CHUNK_ELEMENTS // a.size)
    loss, grads = 0.0, [np.zeros_like(a) for _ in range(3)]
    for s0 in range(0, x.size, rows):
        lo, gs = relu1d.loss_and_grad_dense(a, b, c, x[s0:s0 + rows], y[s0:s0 + rows], alpha)
        loss += lo
        for g, h in zip(grads, gs):
            g += h
    return loss, tuple(grads)


def _torch_relu1d(torch, a, b, c, x, y, alpha):
    """The same step with autograd: f = c relu(a x - b) / alpha, L = 1/2 sum (f - y)^2."""
    a, b, c = (v.detach().requires_grad_(True) for v in (a, b, c))
    rows = max(1, CHUNK_ELEMENTS // a.shape[0])
    total = 0.0
    for s0 in range(0, x.shape[0], rows):
        H = torch.relu(a[:, None] * x[None, s0:s0 + rows] - b[:, None])
        f = (c @ H) / alpha
        loss = 0.5 * torch.sum((f - y[s0:s0 + rows]) ** 2)
        loss.backward()
        total += float(loss.item())
    return total, (a.grad, b.grad, c.grad)


def _torch_twolayer(torch, a, B, X, Y):
    """The same step with autograd: f = relu(X B^T) a / m, L = 1/(2n) sum (f - y)^2."""
    a, B = (v.detach().requires_grad_(True) for v in (a, B))
    m, n = a.shape[0], X.shape[0]
    rows = max(1, CHUNK_ELEMENTS // m)
    total = 0.0
    for s0 in range(0, n, rows):
        f = torch.relu(X[s0:s0 + rows] @ B.T) @ a / m
        loss = torch.sum((f - Y[s0:s0 + rows]) ** 2) / (2 * n)
        loss.backward()
        total += float(loss.item())
    return total, (a.grad, B.grad)


def _engines(case: Case, inp: dict[str, Any], torch, threads: int = 1
             ) -> dict[str, tuple[str, Callable[[], Any]]]:
    """name -> (description, zero-argument step); the d-dim floor at ``threads``."""
    if case.problem == "relu1d":
        a, b, c, x, y, al = (inp[k] for k in ("a", "b", "c", "x", "y", "alpha"))
        fast = "numerics.fast1d sorted kernels" if relu1d._fast() is not None else "DENSE fallback"
        out = {"engine": (f"numerics.relu1d.loss_and_grad ({fast})",
                          lambda: relu1d.loss_and_grad(a, b, c, x, y, al)),
               "dense": ("numerics.relu1d.loss_and_grad_dense (O(m s), chunked)",
                         lambda: _dense_relu1d(a, b, c, x, y, al))}
        if torch is not None:
            T = [torch.from_numpy(v) for v in (a, b, c, x, y)]
            out["torch"] = ("PyTorch float64 autograd (chunked)",
                            lambda: _torch_relu1d(torch, *T, al))
        return out
    a, B, X, Y = (inp[k] for k in ("a", "B", "X", "Y"))
    floors = fastest_floors(B, X, threads, MULTI_STEADY_SECONDS)
    out = {"engine": (f"numerics.twolayer.loss_and_grad (ReLU pass: {twolayer.relu_pass_backend()}"
                      f"; {twolayer.step_threads()} thread(s))",
                      lambda: twolayer.loss_and_grad(a, B, X, Y)),
           **{name: (f"two-GEMM floor: X B^T and Z^T X, {how}", floor)
              for name, (how, floor) in zip(("floor", "floor_alt"), floors)},
           "dense": ("numerics.twolayer.loss_and_grad_dense_reference (chunked)",
                     lambda: twolayer.loss_and_grad_dense_reference(
                         a, B, X, Y, chunk_elements=CHUNK_ELEMENTS))}
    if torch is not None:
        T = [torch.from_numpy(v) for v in (a, B, X, Y)]
        out["torch"] = ("PyTorch float64 autograd (chunked)", lambda: _torch_twolayer(torch, *T))
    return out


def _as_numpy(v) -> np.ndarray:
    if hasattr(v, "detach"):
        v = v.detach().numpy()
    return np.asarray(v, dtype=np.float64)


def _discrepancy(res, ref) -> float | None:
    """max over the loss and the gradients of max|u - v| / max|v| (None for the floor,
    which computes no step)."""
    if res is None:
        return None
    (l1, g1), (l2, g2) = res, ref
    errs = [abs(float(l1) - float(l2)) / max(abs(float(l2)), 1e-300)]
    for u, v in zip(g1, g2):
        u, v = _as_numpy(u), _as_numpy(v)
        errs.append(float(np.max(np.abs(u - v))) / max(float(np.max(np.abs(v))), 1e-300))
    return max(errs)


# --------------------------------------------------------------------------- running
def _time_engines(case: Case, engines: dict[str, tuple[str, Callable[[], Any]]],
                  steady_seconds: float = 0.0
                  ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]], Any]:
    """Warm-up (agreement with "engine", peak memory), then the timed round-robin:
    ``(records by engine, ratios to the engine, the engine's result)``.  A short step's
    timed call follows untimed calls of the same engine for at least ``steady_seconds``
    (at least one call)."""
    rec: dict[str, dict[str, Any]] = {}
    ref = None
    for name, (desc, fn) in engines.items():  # warm-up: agreement and peak memory
        quiesce()
        c0 = time.process_time()
        res, dt, peak, incr = measure_peak(fn)
        cpu = time.process_time() - c0
        if name == "engine":
            ref = res
        rec[name] = {"description": desc, "peak_mib": peak, "peak_increment_mib": incr,
                     "agreement": _discrepancy(res, ref),
                     "times": [dt] if case.time_warmup else [],
                     "cpu_times": [cpu] if case.time_warmup else []}
    # Steady state.  Round-robin, an engine runs right after another engine: after torch
    # or the dense step have evicted the caches, or (the floor) right after the engine has
    # loaded X and B into them.  For short steps (cases whose warm-up is not timed) every
    # timed call is therefore preceded by an untimed call of the same engine: each is
    # timed with its own inputs and buffers in cache, as in a training loop that calls the
    # step again and again (paper scale (30, 1024, 1000): engine / floor 1.43 in plain
    # round-robin, 1.33 in steady state, min of 60, load 5).  Seconds-long steps stream
    # their data through the caches many times over: no pre-call.
    start = 1 if case.time_warmup else 0
    for rep in range(start, max(case.repeats, case.slow_repeats)):
        for name, (_, fn) in engines.items():
            reps = case.repeats if name in ("engine", "floor", "floor_alt") else case.slow_repeats
            if rep < reps:
                quiesce()
                if not case.time_warmup:
                    run_for(fn, steady_seconds)  # untimed: the engine's steady state
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                t1, c1 = time.perf_counter(), time.process_time()
                rec[name]["times"].append(t1 - t0)
                rec[name]["cpu_times"].append(c1 - c0)
    for r in rec.values():
        r["min"] = float(np.min(r["times"]))
        r["median"] = float(np.median(r["times"]))
        r["cpu_min"] = float(np.min(r["cpu_times"]))
        r["cpu_median"] = float(np.median(r["cpu_times"]))
    base = rec["engine"]
    ratios = {name: {"min": r["min"] / base["min"], "median": r["median"] / base["median"],
                     "cpu_min": r["cpu_min"] / base["cpu_min"]}
              for name, r in rec.items() if name != "engine"}
    return rec, ratios, ref


def _same_bits(u, v) -> bool:
    """Whether two (loss, gradients) results are the same float64 words."""
    (l1, g1), (l2, g2) = u, v
    return float(l1) == float(l2) and all(
        _as_numpy(x).tobytes() == _as_numpy(y).tobytes() for x, y in zip(g1, g2))


def _multi_thread_run(case: Case, inp: dict[str, Any], torch, threads: int,
                      one_thread: Any = None) -> dict[str, Any]:
    """The engine, its floor and PyTorch of a d-dimensional case at ``threads`` threads
    (BLAS limit and ``torch.set_num_threads``; a short step at least MULTI_MIN_REPEATS
    times); judged on wall time.  ``one_thread``: the
    engine's one-thread result, compared word for word with this one's."""
    load0 = loadavg()
    with threadpool_limits(limits=threads):
        if torch is not None:
            torch.set_num_threads(threads)
        try:
            engines = {k: v for k, v in _engines(case, inp, torch, threads).items()
                       if k != "dense"}
            if not case.time_warmup:
                case = replace(case, repeats=max(case.repeats, MULTI_MIN_REPEATS))
            rec, ratios, ref = _time_engines(case, engines, MULTI_STEADY_SECONDS)
            keep_fastest_floor(rec, ratios)
        finally:
            if torch is not None:
                torch.set_num_threads(THREADS)
    return {"threads": threads, "blas_threads": threads, "clock": "wall",
            "engine_threads": twolayer_threads(threads), "repeats": case.repeats,
            "steady_seconds": 0.0 if case.time_warmup else MULTI_STEADY_SECONDS,
            "loadavg_before": load0, "loadavg_after": loadavg(), "engines": rec,
            "ratios": ratios,
            "same_bits_as_one_thread": None if one_thread is None else _same_bits(ref, one_thread)}


def twolayer_threads(limit: int) -> int:
    """The threads numerics.twolayer's step uses under a BLAS limit of ``limit``."""
    with threadpool_limits(limits=limit):
        return twolayer.step_threads()


def _bench_case(case: Case, torch, seed: int, log: Callable[[str], None],
                multi: tuple[int, ...] = ()) -> dict[str, Any]:
    """One case on one thread, and (d-dimensional cases) at each thread count of
    ``multi`` (the key "multi_thread": {str(threads): run})."""
    inp = _inputs(case, seed)
    load0 = loadavg()
    rec, ratios, ref = _time_engines(case, _engines(case, inp, torch))
    out = {"problem": case.problem, "scale": case.scale, "sizes": case.size_dict,
           "note": case.note, "repeats": case.repeats, "slow_repeats": case.slow_repeats,
           "warmup_timed": case.time_warmup, "steady_state": not case.time_warmup,
           "loadavg_before": load0, "loadavg_after": loadavg(), "engines": rec,
           "ratios": ratios}
    if case.problem == "twolayer" and multi:
        out["multi_thread"] = {str(t): _multi_thread_run(case, inp, torch, t, ref) for t in multi}
    log(_format_case(out))
    return out


def _target(text: str, required: float, measured: float | None, at_least: bool) -> dict[str, Any]:
    met = None if measured is None else (measured >= required if at_least else measured <= required)
    return {"target": text, "required": required, "measured": measured, "met": met}


def _targets(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The performance targets, judged on the ratio of CPU-time minima (wall-time minima
    for results without CPU times)."""
    def ratio(c, name):
        r = c["ratios"].get(name)
        return None if r is None else r.get("cpu_min", r["min"])

    out = []
    for c in cases:
        sc = c["scale"]
        if c["problem"] == "relu1d" and sc.startswith(("paper", "large")):
            need = 50.0 if sc.startswith("large") else 1.0
            out.append(_target(f"1-D {sc}: torch / engine >= {need:g}", need, ratio(c, "torch"), True))
        if c["problem"] == "twolayer":
            fl = ratio(c, "floor")
            out.append(_target(f"d-dim {sc}: engine / floor <= {FLOOR_TARGET:g}", FLOOR_TARGET,
                               None if fl is None else 1.0 / fl, False))
            out.append(_target(f"d-dim {sc}: dense / engine >= 1", 1.0, ratio(c, "dense"), True))
            out.append(_target(f"d-dim {sc}: torch / engine >= {TORCH_TARGET:g}", TORCH_TARGET,
                               ratio(c, "torch"), True))
            out += _multi_thread_targets(c)
            if sc.startswith("large"):
                pk = c["engines"]["engine"]["peak_mib"]
                out.append(_target(f"d-dim {sc}: peak memory of the engine < 4096 MiB", 4096.0,
                                   pk, False))
    return out


def _multi_thread_targets(c: dict[str, Any]) -> list[dict[str, Any]]:
    """The d-dim targets at each thread count above one, on wall-time minima."""
    out = []
    for t, run in sorted(c.get("multi_thread", {}).items(), key=lambda kv: int(kv[0])):
        fl, pt = run["ratios"].get("floor"), run["ratios"].get("torch")
        out.append(_target(f"d-dim {c['scale']}, {t} threads: engine / floor <= {FLOOR_TARGET:g}",
                           FLOOR_TARGET, None if fl is None else 1.0 / fl["min"], False))
        out.append(_target(f"d-dim {c['scale']}, {t} threads: torch / engine >= {TORCH_TARGET:g}",
                           TORCH_TARGET, None if pt is None else pt["min"], True))
    return out


def _multi_default() -> tuple[int, ...]:
    """The thread counts of the multi-thread column: MULTI_THREADS, if the process may
    run on that many CPUs."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return tuple(t for t in MULTI_THREADS if t <= cpus)


def run_bench(cases=QUICK_CASES, *, seed: int = 0, use_torch: bool = True,
              log: Callable[[str], None] = print,
              multi: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Run the benchmark cases, each on one thread and (d-dim) at the thread counts
    ``multi`` (default: MULTI_THREADS, as far as the CPUs allow); returns the JSON-able
    results dict."""
    multi = _multi_default() if multi is None else tuple(multi)
    with threadpool_limits(limits=THREADS):
        threads = blas_threads()
        torch = _import_torch(THREADS) if use_torch else None
        machine = _machine(torch, threads)
        machine["multi_threads"] = list(multi)
        log(f"machine: {machine['cpu'] or '?'}, {machine['cpu_count']} CPUs; every engine on "
            f"one thread (BLAS threads {threads}, torch {machine['torch'] or 'not available'} "
            f"threads {machine['torch_threads']}; d-dim ReLU pass {machine['relu_pass']}); "
            f"load average {loadavg()}")
        t0 = time.perf_counter()
        results = [_bench_case(c, torch, seed, log, multi) for c in cases]
    data = {"schema": SCHEMA, "seed": seed, "machine": machine, "cases": results,
            "targets": _targets(results), "seconds": time.perf_counter() - t0}
    log(_format_targets(data["targets"]))
    return data


def _ms(t: float) -> str:
    return f"{t * 1e3:.3g}" if t * 1e3 < 100 else f"{t * 1e3:.0f}"


def _peak(r: dict[str, Any]) -> str:
    if r.get("peak_mib") is None:
        return "n/a"
    return f"{r['peak_mib']:.0f} (+{r.get('peak_increment_mib') or 0:.0f})"


def _agree(v: float | None) -> str:
    return "-" if v is None else f"{v:.1e}"


def _cpu_ratio(rt: dict[str, float] | None) -> str:
    return "1" if rt is None else format(rt.get("cpu_min", rt["min"]), ".3g")


def _cpu_ms(r: dict[str, Any]) -> str:
    return "-" if r.get("cpu_min") is None else _ms(r["cpu_min"])


def _format_case(c: dict[str, Any]) -> str:
    sz = ", ".join(f"{k}={v:g}" for k, v in c["sizes"].items())
    lines = [f"\n[{c['problem']} {c['scale']}: {sz}] min of k = {c['repeats']} (engine, floor) / "
             f"{c['slow_repeats']} (dense, torch) repeats; load {c['loadavg_before']} -> "
             f"{c['loadavg_after']}",
             f"  {'engine':8s} {'CPU min ms':>11s} {'wall min ms':>12s} {'wall med ms':>12s} "
             f"{'x engine (CPU/wall)':>20s} {'peak RSS MiB (+call)':>21s} {'agreement':>10s}"]
    for name, r in c["engines"].items():
        rt = c["ratios"].get(name)
        rts = "1" if rt is None else f"{_cpu_ratio(rt)} / {rt['min']:.3g}"
        lines.append(f"  {name:8s} {_cpu_ms(r):>11s} {_ms(r['min']):>12s} "
                     f"{_ms(r['median']):>12s} {rts:>20s} {_peak(r):>21s} "
                     f"{_agree(r['agreement']):>10s}")
    if "floor" in c["ratios"]:
        fl = c["ratios"]["floor"]
        lines.append(f"  engine / floor: {1.0 / fl.get('cpu_min', fl['min']):.3g} (CPU-time "
                     f"minima), {1.0 / fl['min']:.3g} (wall-time minima)")
    for t, run in sorted(c.get("multi_thread", {}).items(), key=lambda kv: int(kv[0])):
        lines.append(f"  at {t} threads (BLAS limit {run['blas_threads']}, the engine on "
                     f"{run['engine_threads']}; its result the one-thread bits: "
                     f"{run.get('same_bits_as_one_thread')}); load {run['loadavg_before']} -> "
                     f"{run['loadavg_after']}; judged on wall time, min of k = "
                     f"{run.get('repeats', c['repeats'])} (engine, floor)")
        for name, r in run["engines"].items():
            rt = run["ratios"].get(name)
            lines.append(f"  {name:8s} {_cpu_ms(r):>11s} {_ms(r['min']):>12s} "
                         f"{_ms(r['median']):>12s} {'1' if rt is None else format(rt['min'], '.3g'):>20s}"
                         f" {_peak(r):>21s} {_agree(r['agreement']):>10s}")
        if "floor" in run["ratios"]:
            lines.append(f"  engine / floor at {t} threads: {1.0 / run['ratios']['floor']['min']:.3g}"
                         " (wall-time minima)")
            floor = run["engines"]["floor"]
            other = floor.get("other_floor")
            if other:
                lines.append(f"  floor: {floor['description'].split(', ', 1)[-1]}; the other "
                             f"timed: {other['description'].split(', ', 1)[-1]}, min "
                             f"{_ms(other['min'])} ms, median {_ms(other['median'])} ms")
    return "\n".join(lines)


def _format_targets(targets: list[dict[str, Any]]) -> str:
    lines = ["\ntargets (ratio of minimum times):"]
    for t in targets:
        v = "n/a (torch not available)" if t["measured"] is None else \
            f"{t['measured']:.3g} -> {'MET' if t['met'] else 'MISSED'}"
        lines.append(f"  {t['target']}: {v}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m verify bench``."""
    parser.add_argument("--quick", action="store_true",
                        help="smaller repeats and a reduced n at the d-dim large scale (about 2.5 min)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even if importable")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")


def run(args: argparse.Namespace) -> int:
    """Entry point of the CLI subcommand; prints the tables, writes ``--json``."""
    seed = int(getattr(args, "seed", 0) or 0)
    if seed < 0:
        print("verify: error: --seed must be a non-negative integer", file=sys.stderr)
        return 2
    cases = QUICK_CASES if getattr(args, "quick", False) else FULL_CASES
    data = run_bench(cases, seed=seed, use_torch=not getattr(args, "no_torch", False))
    data["profile"] = "quick" if getattr(args, "quick", False) else "full"
    if getattr(args, "json", None):
        atomic_write_bytes(args.json, (json.dumps(data, indent=1) + "\n").encode())
        print(f"wrote {args.json}")
    return 0


# --------------------------------------------------------------------------- report
_LABEL = {"engine": "engine", "floor": "two-GEMM floor", "dense": "dense NumPy",
          "torch": "PyTorch autograd"}
_COLOR = {"engine": "C0", "floor": "C7", "dense": "C2", "torch": "C3"}
_ORDER = ("engine", "floor", "dense", "torch")


def performance_section(data: dict[str, Any], outdir: Path) -> tuple[str, list[tuple[str, str]]]:
    """Markdown "Performance" section and a log-log plot (time per step vs m) from a
    bench results dict (the committed ``benchmarks/results.json``)."""
    cases = data.get("cases", [])
    has_cpu = all("cpu_min" in r for c in cases for r in c["engines"].values())
    text = _performance_text(data, has_cpu)
    return text, [_performance_figure(cases, has_cpu, outdir)]


def _multi(c: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return sorted(c.get("multi_thread", {}).items(), key=lambda kv: int(kv[0]))


def _performance_text(data: dict[str, Any], has_cpu: bool) -> str:
    mach = data.get("machine", {})
    cases = data.get("cases", [])
    clock = "CPU time of the process" if has_cpu else "wall time"
    counts = sorted({int(t) for c in cases for t, _ in _multi(c)})
    steady = max((r.get("steady_seconds") or 0.0 for c in cases
                  for r in c.get("multi_thread", {}).values()), default=0.0)
    L = ["## Performance", "",
         f"One loss-and-gradient step, timed by `python -m verify bench` "
         f"(profile {data.get('profile', '?')}, {mach.get('date_utc', '?')} UTC, "
         f"{mach.get('cpu') or 'CPU ?'}, {mach.get('cpu_count', '?')} cores, NumPy "
         f"{mach.get('numpy', '?')} with {mach.get('blas_threads', '?')} BLAS thread(s), "
         f"PyTorch {mach.get('torch') or 'absent'} with {mach.get('torch_threads', '-')} "
         f"thread(s); the d-dimensional engine's ReLU pass: {mach.get('relu_pass', 'numpy')}). "
         "All engines of a row ran in one process on the same inputs, each on one "
         "thread, interleaved round-robin"
         + ("; short steps in their steady state (each timed call after an untimed call of "
            "the same engine)" if any(c.get("steady_state") for c in cases) else "")
         + ", each engine's calls begun once no thread of the process ran (a worker that the "
         "previous engine left spinning would hold a core)"
         + "; the two-GEMM floor is the pair of matrix products "
         "X B^T and Z^T X that any d-dimensional step performs, and nothing else. "
         f"Times are minima over the repeats ({clock}; the wall-time median is shown too); "
         "'x engine' is time(row) / time(engine) (> 1: the engine is faster)"
         + "".join(f"; the '{t} threads' columns: the same d-dimensional engines with a BLAS "
                   f"limit of {t} and torch.set_num_threads({t}), wall-time minima, the "
                   "floor the faster of BLAS's threads and the samples split among threads"
                   + (f", each timed call of a short step after {steady * 1e3:g} ms of untimed "
                      "calls of the same engine (a training loop's steady state)" if steady else "")
                   for t in counts)
         + ". Timings are nondeterministic: this section reads the committed "
         "benchmarks/results.json (see benchmarks/README.md to reproduce).", "",
         "| problem | scale | sizes | engine | min [ms] | wall median [ms] | x engine | "
         + "".join(f"{t} threads: wall min [ms] | x engine ({t} threads) | " for t in counts)
         + "peak RSS [MiB] (+ during call) | agreement |",
         "|---|---|---|---|---|---|---|" + "---|---|" * len(counts) + "---|---|"]
    for c in cases:
        sz = ", ".join(f"{k}={v:g}" for k, v in c["sizes"].items())
        runs = dict(_multi(c))
        for name in [n for n in _ORDER if n in c["engines"]]:
            r = c["engines"][name]
            tmin = r["cpu_min"] if has_cpu else r["min"]
            more = ""
            for t in counts:
                rr = runs.get(str(t), {}).get("engines", {}).get(name)
                rt = runs.get(str(t), {}).get("ratios", {}).get(name)
                more += "- | - | " if rr is None else \
                    f"{_ms(rr['min'])} | {'1' if rt is None else format(rt['min'], '.3g')} | "
            L.append(f"| {c['problem']} | {c['scale']} | {sz} | {_LABEL.get(name, name)} | "
                     f"{_ms(tmin)} | {_ms(r['median'])} | {_cpu_ratio(c['ratios'].get(name))} | "
                     f"{more}{_peak(r)} | {_agree(r['agreement'])} |")
    L += ["", f"Performance targets (ratios of minimum {clock} on one thread, of wall-time "
          "minima on several):", "", "| target | measured | verdict |", "|---|---|---|"]
    for t in data.get("targets", []):
        meas = "n/a" if t["measured"] is None else f"{t['measured']:.3g}"
        verdict = "n/a" if t["met"] is None else ("met" if t["met"] else "MISSED")
        L.append(f"| {t['target']} | {meas} | {verdict} |")
    L.append("")
    L += [f"Note: {n}." for n in sorted({c["note"] for c in cases if c.get("note")})]
    loads = [c.get("loadavg_before") for c in cases if c.get("loadavg_before")]
    if loads:
        L.append(f"Load average (1 min) at the start of the cases: "
                 f"{', '.join(f'{x[0]:.1f}' for x in loads)} (shared machine, "
                 f"{mach.get('cpu_count', '?')} cores).")
    return "\n".join(L) + "\n"


def _performance_figure(cases: list[dict[str, Any]], has_cpu: bool, outdir: Path
                        ) -> tuple[str, str]:
    from verify.plotting import new_figure, save_figure  # noqa: PLC0415

    fig, axes = new_figure(ncols=2, width=4.6, height=3.6)
    for ax, prob, title in ((axes[0], "relu1d", "1-D network (W.1)"),
                            (axes[1], "twolayer", "d-dim network (H.1)")):
        pcases = sorted((c for c in cases if c["problem"] == prob),
                        key=lambda c: (c["sizes"]["m"], c["sizes"].get("n", c["sizes"].get("s", 0))))
        names = [n for n in _ORDER if any(n in c["engines"] for c in pcases)]
        for name in names:
            pts = [(i, (c["engines"][name]["cpu_min"] if has_cpu else c["engines"][name]["min"]) * 1e3)
                   for i, c in enumerate(pcases) if name in c["engines"]]
            if pts:
                xs, ts = zip(*pts)
                ax.semilogy(xs, ts, marker="o", color=_COLOR.get(name), label=_LABEL.get(name, name))
        ax.set_xticks(range(len(pcases)))
        ax.set_xticklabels(["\n".join(f"{k}={v:g}" for k, v in c["sizes"].items() if k != "d")
                            for c in pcases], fontsize=7)
        ax.set_xlabel("problem size")
        ax.set_ylabel(f"time per loss+gradient step [ms] (min, {'CPU' if has_cpu else 'wall'})")
        ax.set_title(title)
        if names:
            ax.legend(fontsize=7)
    name = "performance_time_per_step.png"
    save_figure(fig, Path(outdir) / name)
    cap = ("Time per loss-and-gradient step at each benchmark size (log scale, minimum over "
           "repeats, one thread) for the engines of benchmarks/results.json, the dense NumPy "
           "step, PyTorch and, for the d-dimensional network, the two-GEMM floor.")
    return name, cap
