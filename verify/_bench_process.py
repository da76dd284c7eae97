"""What the bench (:mod:`verify.bench`) reads off its own process: the load average, the
peak resident memory during a call, the wall and CPU time of a call, and whether any of
its threads still runs (:func:`quiesce`, waited for before each engine's calls), and
the untimed calls that bring a step to its steady state (:func:`run_for`)."""
from __future__ import annotations

import os
import time
from typing import Any, Callable

__all__ = ["QUIET_MAX_WAIT", "QUIET_PROBE", "cpu_call", "loadavg", "measure_peak", "quiesce",
           "run_for", "wall_call"]


def loadavg() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the OS has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def measure_peak(fn: Callable[[], Any]) -> tuple[Any, float, float | None, float | None]:
    """``(fn(), seconds, peak RSS MiB of the process during the call, that peak minus the
    RSS before the call)`` via VmHWM, reset through /proc/self/clear_refs (Linux >= 4.0).
    The increment can undercount memory reused from the allocator's retained heap; the
    absolute peak (inputs, libraries and all) is the conservative figure."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak-RSS high-water mark
        ok = True
    except OSError:
        ok = False
    before = _status_kib("VmRSS")
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    peak = _status_kib("VmHWM")
    if not ok or before is None or peak is None:
        return out, dt, None, None
    return out, dt, peak / 1024.0, max(peak - before, 0) / 1024.0


#: sleep of one idleness probe of :func:`quiesce` (the process CPU clock of the other
#: threads advances in scheduler ticks, 4 ms here: a probe spans at least two), and its
#: longest total wait
QUIET_PROBE = 0.01
QUIET_MAX_WAIT = 0.5


def quiesce() -> float:
    """Wait until no thread of this process runs: the process CPU time advances by less
    than a fifth of a QUIET_PROBE sleep (at most QUIET_MAX_WAIT s); returns the wait (s).
    Spin-waiting worker threads of the previous engine (BLAS, OpenMP) have then gone to
    sleep and leave the cores to the next."""
    t0 = time.perf_counter()
    while True:
        c0 = time.process_time()
        time.sleep(QUIET_PROBE)
        if time.process_time() - c0 < 0.2 * QUIET_PROBE or \
                time.perf_counter() - t0 > QUIET_MAX_WAIT:
            return time.perf_counter() - t0


def run_for(fn: Callable[[], Any], seconds: float) -> None:
    """Call fn once, then again until ``seconds`` have passed since the first call began
    (untimed: a step's steady state before it is timed)."""
    t_end = time.perf_counter() + seconds
    fn()
    while time.perf_counter() < t_end:
        fn()


def wall_call(fn: Callable[[], Any]) -> float:
    """Wall time of one call of fn (s)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def cpu_call(fn: Callable[[], Any]) -> float:
    """CPU time of the process (all its threads) during one call of fn (s)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0
