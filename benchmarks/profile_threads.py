"""Where the d-dimensional step spends its wall time at 1 and 2 threads.

    PYTHONPATH=$PWD python benchmarks/profile_threads.py [--repeats 100] [--sizes paper mid]

Per bench size (``verify.bench.QUICK_CASES``) and thread count (the BLAS limit, which the
engine follows), the public step ``numerics.twolayer.loss_and_grad`` is timed with
timestamps at the edges of its phases:

- ``before``: from the call to the first row block (validation, tiny-factor scan, the
  BLAS limit, buffers): one core, the other idle;
- ``blocks``: the row blocks (GEMM, ReLU pass, GEMV, residuals, gradient GEMM, the
  ordered additions of the partial gradients), per thread its busy time, its start
  after the phase began (the helper's wake-up) and its idle time up to the phase's end;
- ``after``: from the end of the block phase to the return (dL/da, scaling, the
  finiteness test): one core;

and the two-GEMM floor of ``verify.bench`` at the same thread count.  Each timed call
follows an untimed one (the bench's steady state); the repeat with the least wall time
is shown, and the medians.  Timings are wall-clock: run it on an idle machine (the
script prints the load average).
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np
from threadpoolctl import threadpool_limits

from numerics import _twolayer_blocked as blocked, twolayer
from verify import bench
from verify._bench_floor import fastest_floors


def _traced_sum(log: list):
    """``numerics._twolayer_blocked.ordered_block_sum`` with per-block timestamps."""
    inner = blocked.ordered_block_sum

    def traced(block, n, c, shape, threads, slots):
        def timed(s, e, T):
            t0 = time.perf_counter()
            block(s, e, T)
            log.append((threading.get_ident(), t0, time.perf_counter()))
        log.append(("enter", time.perf_counter()))
        G = inner(timed, n, c, shape, threads, slots)
        log.append(("exit", time.perf_counter()))
        return G
    return inner, traced


def _phases(t0: float, t1: float, log: list) -> dict[str, float]:
    enter = next(x[1] for x in log if x[0] == "enter")
    leave = next(x[1] for x in log if x[0] == "exit")
    blocks = [x for x in log if x[0] not in ("enter", "exit")]
    out = {"step": t1 - t0, "before": enter - t0, "blocks": leave - enter, "after": t1 - leave}
    main = threading.get_ident()              # t0: the calling thread, t1: the helper
    for k, tid in enumerate(sorted({b[0] for b in blocks}, key=lambda t: t != main)):
        mine = [b for b in blocks if b[0] == tid]
        busy = sum(b[2] - b[1] for b in mine)
        out[f"t{k} start"] = min(b[1] for b in mine) - enter
        out[f"t{k} busy"] = busy
        out[f"t{k} idle"] = (leave - enter) - busy
        out[f"t{k} blocks"] = float(len(mine))
    return out


def profile(case: bench.Case, threads: int, repeats: int) -> dict[str, dict[str, float]]:
    """``{"engine": {phase: min-run value}, "engine median": {...}, "floor": {...}}`` in
    seconds (block counts as numbers) for one case at ``threads`` threads."""
    inp = bench._inputs(case, 0)
    a, B, X, Y = (inp[k] for k in ("a", "B", "X", "Y"))
    log: list = []
    inner, traced = _traced_sum(log)
    runs, floors = [], []
    with threadpool_limits(limits=threads):
        _, floor = fastest_floors(B, X, threads, bench.MULTI_STEADY_SECONDS)[0]
        blocked.ordered_block_sum = traced
        try:
            for _ in range(repeats):
                twolayer.loss_and_grad(a, B, X, Y)
                log.clear()
                t0 = time.perf_counter()
                twolayer.loss_and_grad(a, B, X, Y)
                runs.append(_phases(t0, time.perf_counter(), log))
                floor()
                t0 = time.perf_counter()
                floor()
                floors.append(time.perf_counter() - t0)
        finally:
            blocked.ordered_block_sum = inner
    best = min(runs, key=lambda r: r["step"])
    keys = [k for k in best if all(k in r for r in runs)]
    median = {k: float(np.median([r[k] for r in runs])) for k in keys}
    return {"engine": best, "engine median": median,
            "floor": {"min": min(floors), "median": float(np.median(floors))}}


def _show(name: str, threads: int, res: dict[str, dict[str, float]]) -> str:
    fl = res["floor"]
    lines = [f"{name}, {threads} thread(s): floor min {fl['min'] * 1e3:.3f} ms, median "
             f"{fl['median'] * 1e3:.3f} ms"]
    for label in ("engine", "engine median"):
        r = res[label]
        parts = ", ".join(f"{k} {v:.0f}" if k.endswith("blocks") and k != "blocks"
                          else f"{k} {v * 1e3:.3f}" for k, v in r.items())
        ref = fl["min"] if label == "engine" else fl["median"]
        lines.append(f"  {label:13s} [ms] {parts}; step / floor {r['step'] / ref:.3f}, "
                     f"(before + after) / floor {(r['before'] + r['after']) / ref:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--sizes", nargs="+", default=["paper", "mid"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()}; ReLU pass {twolayer.relu_pass_backend()}")
    for size in args.sizes:
        case = next(c for c in bench.QUICK_CASES
                    if c.problem == "twolayer" and c.scale.startswith(size))
        reps = args.repeats if case.repeats >= 10 else max(3, args.repeats // 20)
        for t in args.threads:
            print(_show(f"{size} {dict(case.sizes)}", t, profile(case, t, reps)))
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
