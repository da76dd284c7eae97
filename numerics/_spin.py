"""A compiled spin-wait for the helper threads of the d-dimensional step
(:mod:`numerics._step_threads`, claims H1a-H1e, H1h): ``spin_until_changed(flags, i, seen,
budget_ns)`` reads ``flags[i]`` (an atomic acquire load) until it differs from ``seen`` or
``budget_ns`` nanoseconds (CLOCK_MONOTONIC) have passed, yielding the core
(``sched_yield``) between reads, and returns the last value read.  It holds no GIL.

Why: a helper that sleeps between steps is woken through the kernel at the next step,
and a kernel that packs threads of a lightly loaded process onto one CPU (this project's
2-vCPU virtual machine: both threads of a step on one vCPU in most calls after an idle
spell) then runs both threads of the step on one core.  A helper that keeps its core for
a millisecond after each step, as OpenBLAS's and OpenMP's workers do, picks the next step
up without a wake-up; the yield leaves the core to any other thread that wants it
(benchmarks/README.md, "A helper that keeps its core").

Compiled with numba on Linux (``sched_yield`` and ``clock_gettime`` from the C library);
None elsewhere, without numba, or if the compiled wait fails its self-test (then the
helpers sleep between steps).
"""
from __future__ import annotations

import ctypes
import sys
import threading
import time

import numpy as np

__all__ = ["spin_wait"]

_SPIN: list = []                    # [the compiled wait, or None], once decided
_SPIN_LOCK = threading.Lock()
_CLOCK_MONOTONIC = 1                # Linux's clock id


def _compile(numba):
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def atomic_load(typingctx, arr, idx):
        """arr[idx] of a C-contiguous int64 array as an atomic acquire load: another
        thread's store is seen (an ordinary load may be hoisted out of the loop)."""
        sig = types.int64(arr, idx)

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            return builder.load_atomic(builder.gep(ary.data, [args[1]]), ordering="acquire",
                                       align=8)
        return sig, codegen

    libc = ctypes.CDLL(None)
    sched_yield, clock_gettime = libc.sched_yield, libc.clock_gettime
    sched_yield.argtypes, sched_yield.restype = [], ctypes.c_int
    clock_gettime.argtypes, clock_gettime.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_int
    clock = _CLOCK_MONOTONIC

    @numba.njit("int64(int64[::1], int64, int64, int64)", nogil=True, cache=False)
    def spin_until_changed(flags, i, seen, budget_ns):
        ts = np.zeros(2, np.int64)
        clock_gettime(clock, ts.ctypes)
        end = ts[0] * 1_000_000_000 + ts[1] + budget_ns
        while True:
            v = atomic_load(flags, i)
            if v != seen:
                return v
            sched_yield()
            clock_gettime(clock, ts.ctypes)
            if ts[0] * 1_000_000_000 + ts[1] >= end:
                return atomic_load(flags, i)
    return spin_until_changed


def _works(spin) -> bool:
    """The wait sees another thread's store, and gives up after its budget."""
    flags = np.zeros(2, np.int64)
    t0 = time.perf_counter()
    if spin(flags, 0, 0, 2_000_000) != 0 or time.perf_counter() - t0 < 1e-3:
        return False
    timer = threading.Timer(0.01, flags.__setitem__, (1, 5))
    timer.start()
    try:
        t0 = time.perf_counter()
        return spin(flags, 1, 0, 5_000_000_000) == 5 and time.perf_counter() - t0 < 1.0
    finally:
        timer.join()


def spin_wait():
    """The compiled ``spin_until_changed`` (see the module's docstring), or None."""
    if not _SPIN:
        with _SPIN_LOCK:
            if not _SPIN:
                _SPIN.append(_decide())
    return _SPIN[0]


def _decide():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import numba
    except ImportError:
        return None
    try:
        spin = _compile(numba)
        return spin if _works(spin) else None
    except Exception:                # noqa: BLE001  (a broken numba/LLVM: helpers sleep)
        return None
