"""The two-GEMM floor of the d-dimensional step for ``python -m verify bench``
(:mod:`verify.bench`): the pair of matrix products X B^T and Z^T X that any step performs,
blocked over samples, on one thread, on BLAS's threads or with the samples split over
threads; the choice of the fastest block size and layout; and, at several threads, the
faster of the two timed floors."""
from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

from verify._bench_process import cpu_call, run_for, wall_call

__all__ = ["FLOOR_COLS", "FLOOR_ROWS", "FLOOR_TRIALS", "FLOOR_LONG_FINALISTS", "FLOOR_LONG_TRIALS_MULTI",
           "fastest_floors",
           "floor_twolayer", "keep_fastest_floor", "split_floor"]

#: block sizes (rows) tried for the floor; the fastest on warm-up runs is timed
FLOOR_ROWS = (64, 128, 256, 512, 1024)
#: widths of the column blocks (neurons) also tried where m is at least twice as wide (the
#: engine's wide-network path, numerics._twolayer_blocked._COL_BLOCK = 256): at
#: (30, 1e4, 2e4) the floor's best whole-width candidate took 675 ms, the best of these
#: 576 ms (one thread, 2026-12-05)
FLOOR_COLS = (256, 512)
#: warm-up runs per floor candidate of a short step (min of them; one for long steps): on
#: 2 threads a single slow run (the helper thread woken late) picks the wrong candidate
FLOOR_TRIALS = 10
#: further runs of the fastest FLOOR_LONG_FINALISTS candidates of each way of threading of a
#: long step at several threads (min of all their runs): with two runs of every candidate
#: the large scale's 2-thread floor was 1.44 s in one full run of three and 1.66-1.70 s
#: in the others (2026-12-05)
FLOOR_LONG_TRIALS_MULTI = 3
FLOOR_LONG_FINALISTS = 3


def floor_twolayer(B: np.ndarray, X: np.ndarray, rows: int, transposed: bool = False,
                   cols: int | None = None) -> Callable[[], None]:
    """The two GEMMs of a d-dimensional step, blocked over ``rows`` samples (and, given
    ``cols``, over that many neurons, as the engine's wide-network path is): Z = X_s B^T
    and Z^T X_s (``transposed``: X_s^T Z, d x m) into preallocated buffers (their sum over
    blocks is not even formed)."""
    m, d = B.shape
    n = X.shape[0]
    rows = max(1, min(rows, n))
    width = m if cols is None else max(1, min(cols, m))
    Z = np.empty(rows * width)
    T = np.empty(m * d)
    spans = [(j, min(m, j + width)) for j in range(0, m, width)]

    def step() -> None:
        for s0 in range(0, n, rows):
            e = min(n, s0 + rows)
            Xs = X[s0:e]
            for j0, j1 in spans:
                Zk = Z[: (e - s0) * (j1 - j0)].reshape(e - s0, j1 - j0)
                np.dot(Xs, B[j0:j1].T, out=Zk)
                if transposed:
                    np.dot(Xs.T, Zk, out=T[d * j0:d * j1].reshape(d, j1 - j0))
                else:
                    np.dot(Zk.T, Xs, out=T[d * j0:d * j1].reshape(j1 - j0, d))
    return step


_FLOOR_POOL: dict[int, Any] = {}  # threads -> the helper threads of the split floor


def split_floor(B: np.ndarray, X: np.ndarray, rows: int, threads: int,
                transposed: bool = False, cols: int | None = None) -> Callable[[], None]:
    """The floor with the samples split into ``threads`` contiguous parts, each on its own
    thread with one BLAS thread (the engine's own scheme)."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415
    from threadpoolctl import ThreadpoolController  # noqa: PLC0415

    n = X.shape[0]
    cuts = [n * k // threads for k in range(threads + 1)]
    parts = [floor_twolayer(B, X[cuts[k]:cuts[k + 1]], rows, transposed, cols)
             for k in range(threads) if cuts[k + 1] > cuts[k]]
    if _FLOOR_POOL.get(threads) is None:
        _FLOOR_POOL[threads] = ThreadPoolExecutor(max_workers=threads - 1)
    pool = _FLOOR_POOL[threads]
    blas = ThreadpoolController()

    def step() -> None:
        with blas.limit(limits=1, user_api="blas"):
            futures = [pool.submit(fn) for fn in parts[1:]]
            parts[0]()
            for fu in futures:
                fu.result()
    return step


def fastest_floors(B: np.ndarray, X: np.ndarray, threads: int = 1, steady_seconds: float = 0.0
                   ) -> list[tuple[str, Callable[[], None]]]:
    """The floor at the block size (among FLOOR_ROWS and n; whole width or column blocks
    of FLOOR_COLS neurons) and layout of the second GEMM (Z^T X_s or its transpose) with
    the least time over
    FLOOR_TRIALS untimed runs each (CPU time on one thread; wall time on several, where the
    candidates are also the samples split among threads with one BLAS thread each, and a
    short step's runs follow ``steady_seconds`` of calls of the same candidate; a long
    step's candidates run once, and on several threads the FLOOR_LONG_FINALISTS fastest of
    each way of threading FLOOR_LONG_TRIALS_MULTI more times, in turn):
    ``[(description, step)]``, the fastest first, one per way of threading (on several
    threads: BLAS's threads, the split samples), since a choice by a few runs is not
    reliable there: both are timed."""
    n = X.shape[0]
    clock = cpu_call if threads == 1 else wall_call
    short = B.shape[0] * n <= 2 ** 24
    trials = FLOOR_TRIALS if short else 1
    steady = steady_seconds if short and threads > 1 else 0.0
    runs: dict[bool, list[list]] = {False: [], True: []}     # split -> [[cost, desc, fn]]
    widths = [None] + [w for w in FLOOR_COLS if 2 * w <= B.shape[0]]
    for rows, transposed, cols in itertools.product(sorted({min(r, n) for r in FLOOR_ROWS}),
                                                    (False, True), widths):
        how = (f"blocks of {rows} samples{'' if cols is None else f' x {cols} neurons'}, "
               f"{'X_s^T Z' if transposed else 'Z^T X_s'}")
        cands = [(False, how, floor_twolayer(B, X, rows, transposed, cols))]
        if threads > 1:
            cands[0] = (False, f"{how}, {threads} BLAS threads", cands[0][2])
            cands.append((True, f"{how}, the samples split among {threads} threads with one "
                          "BLAS thread each",
                          split_floor(B, X, rows, threads, transposed, cols)))
        for split, desc, fn in cands:
            run_for(fn, steady)
            runs[split].append([min(clock(fn) for _ in range(trials)), desc, fn])
    if not short and threads > 1:
        finalists = [c for family in runs.values()
                     for c in sorted(family, key=lambda c: c[0])[:FLOOR_LONG_FINALISTS]]
        for _ in range(FLOOR_LONG_TRIALS_MULTI):
            for cand in finalists:
                cand[0] = min(cand[0], clock(cand[2]))
    best = [min(family, key=lambda c: c[0]) for family in runs.values() if family]
    return [(desc, fn) for _, desc, fn in sorted(best, key=lambda c: c[0])]


def keep_fastest_floor(rec: dict[str, dict[str, Any]], ratios: dict[str, dict[str, float]]
                       ) -> None:
    """Of the timed floors "floor" and "floor_alt" keep the one with the smaller minimum
    as "floor" (ratios to the engine as ``verify.bench._time_engines`` computes them); the other's
    description, min and median are kept under the floor's key "other_floor"."""
    if "floor_alt" not in rec:
        return
    alt, ratios_alt = rec.pop("floor_alt"), ratios.pop("floor_alt")
    if alt["min"] < rec["floor"]["min"]:
        rec["floor"], alt = alt, rec["floor"]
        ratios["floor"] = ratios_alt
    rec["floor"]["other_floor"] = {k: alt[k] for k in ("description", "min", "median")}
