"""Threads for the blocked d-dimensional step (:mod:`numerics.twolayer`, claims H1a-H1e,
H1h): sample blocks run on worker threads, each GEMM on ONE BLAS thread, and the
per-block partial gradients are summed in fixed block order, so that the result is bit
for bit the one-thread step's at any thread count.

Why not BLAS's own threads: the step's GEMMs are thin, (c x d) @ (d x m_block) and
(m_block x c) @ (c x d) with d = 30 and c = 128, 50-200 us each.  OpenBLAS splits each
such call over its threads and synchronises them at its end, and between the calls
(the ReLU pass, the GEMV, Python) its idle threads spin on the other cores; measured in
benchmarks/README.md ("Threads"), two BLAS threads made the step up to twice as slow as
one.  A multi-threaded BLAS also splits dot and GEMV reductions by thread count, which
changes the last bits.

How many threads: the BLAS thread limit in force (``threadpoolctl.threadpool_limits``,
``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS``, or the BLAS default: the CPU count),
capped by the CPUs this process may run on.  ``threadpool_limits(1)`` (as the claim runner
sets for every task) therefore runs the step serially.  While a step runs, the BLAS limit
is 1 (restored afterwards, also when several threads run steps at once).

Where the helpers wait: with numba on Linux, a team of helpers that keep their core for
HELPER_SPIN_NS after each job (:class:`_Helper`, :mod:`numerics._spin`), so that the next
step of a training loop starts without a wake-up through the kernel (on a virtual machine
that packs a just-woken thread onto its waker's vCPU, such a wake-up can put both threads
of a step on one core); otherwise, or while another thread's step holds the team, a pool
whose threads sleep between jobs.
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

from numerics._spin import spin_wait

__all__ = ["threads_in_force", "serial_blas", "ordered_block_sum", "run_blocks",
           "blas_architectures"]

_CONTROL: list = []                  # [the BLAS thread controllers (threadpoolctl), or None]
_CONTROL_LOCK = threading.Lock()
#: callers inside serial_blas() and the BLAS limits saved by the first of them
_ACTIVE = {"depth": 0, "saved": None, "threads": 1}
_POOL: dict = {"pid": None, "executor": None, "workers": 0}
#: least number of partial sums in flight (computed, not yet added): a thread that the OS
#: deschedules mid-block (a shared machine) holds up the others only after this many blocks
_WINDOW = 8
_POOL_LOCK = threading.Lock()


def _controllers():
    """The loaded BLAS libraries' thread controllers (threadpoolctl), or None."""
    if not _CONTROL:
        with _CONTROL_LOCK:
            if not _CONTROL:
                try:
                    from threadpoolctl import ThreadpoolController
                    libs = ThreadpoolController().select(user_api="blas").lib_controllers
                except Exception:        # noqa: BLE001  (no threadpoolctl: one thread)
                    libs = []
                _CONTROL.append(libs or None)
    return _CONTROL[0]


def blas_architectures() -> frozenset[str]:
    """The kernel families of the loaded BLAS libraries (OpenBLAS's core name, e.g.
    "Haswell" or "SkylakeX", as threadpoolctl reports it; empty if unknown)."""
    libs = _controllers() or []
    return frozenset(str(a) for a in (getattr(lc, "architecture", None) for lc in libs) if a)


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def threads_in_force() -> int:
    """The step's thread count: the smallest BLAS thread limit in force (1 without
    threadpoolctl or a detectable BLAS), at most the CPUs available to the process."""
    if _ACTIVE["depth"]:
        return _ACTIVE["threads"]
    libs = _controllers()
    if libs is None:
        return 1
    return max(1, min(min(int(lc.num_threads) for lc in libs), _cpus()))


@contextlib.contextmanager
def serial_blas() -> Iterator[int]:
    """Run the block with every BLAS call on one thread; yields the thread count that was
    in force before (the threads the step may use itself).  Re-entrant and safe when
    several threads enter it: the first sets the limit to 1, the last restores it."""
    libs = _controllers()
    if libs is None:
        yield 1
        return
    with _CONTROL_LOCK:
        if _ACTIVE["depth"] == 0:
            saved = [int(lc.num_threads) for lc in libs]
            _ACTIVE["saved"] = saved
            _ACTIVE["threads"] = max(1, min(min(saved), _cpus()))
            for lc, k in zip(libs, saved):
                if k != 1:
                    lc.set_num_threads(1)
        _ACTIVE["depth"] += 1
        threads = _ACTIVE["threads"]
    try:
        yield threads
    finally:
        with _CONTROL_LOCK:
            _ACTIVE["depth"] -= 1
            if _ACTIVE["depth"] == 0:
                for lc, k in zip(libs, _ACTIVE["saved"]):
                    if k != 1:
                        lc.set_num_threads(k)


def _reset_pool() -> None:
    _POOL.update(pid=None, executor=None, workers=0)
    _TEAM.update(pid=None, helpers=[], lock=threading.Lock())


if hasattr(os, "register_at_fork"):      # a forked child has none of the parent's threads
    os.register_at_fork(after_in_child=_reset_pool)


def _executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool of helper threads (daemon-like, created on first use), with at
    least ``workers`` threads."""
    with _POOL_LOCK:
        ex = _POOL["executor"]
        if ex is None or _POOL["pid"] != os.getpid() or _POOL["workers"] < workers:
            if ex is not None and _POOL["pid"] == os.getpid():
                ex.shutdown(wait=False)
            ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="twolayer-step")
            _POOL.update(pid=os.getpid(), executor=ex, workers=workers)
        return ex


class _Helper:
    """A helper thread that, after each job, keeps its core for HELPER_SPIN_NS
    (:func:`numerics._spin.spin_wait`, no GIL held) before it sleeps, so that the next
    step's job starts without a wake-up through the kernel.  ``flags``: 0 the job
    posted last, 1 the job finished last, 2 the helper sleeps, 3 the caller sleeps
    (each written under the GIL, so a post and a sleep cannot miss each other)."""

    def __init__(self, spin) -> None:
        self.spin, self.flags = spin, np.zeros(4, np.int64)
        self.wake, self.done = threading.Event(), threading.Event()
        self.job: Callable[[], None] | None = None
        self.error: BaseException | None = None
        self.retired = False
        threading.Thread(target=self._loop, name="twolayer-step-spin", daemon=True).start()

    def _loop(self) -> None:
        fl, seen = self.flags, 0
        while not self.retired:
            posted = int(self.spin(fl, 0, seen, HELPER_SPIN_NS))
            if posted == seen:
                self.wake.clear()
                fl[2] = 1
                if int(fl[0]) == seen and not self.retired:
                    self.wake.wait()
                fl[2] = 0
                continue
            seen = posted
            try:
                self.job()
            except BaseException as exc:     # noqa: BLE001  (re-raised by the caller)
                self.error = exc
            self.job = None
            fl[1] = seen
            if fl[3]:
                self.done.set()

    def post(self, work: Callable[[], None]) -> int:
        fl = self.flags
        self.job, self.error = work, None
        job = int(fl[0]) + 1
        fl[0] = job
        if fl[2]:
            self.wake.set()
        return job

    def finish(self, job: int) -> BaseException | None:
        """Wait for the job posted as ``job``; its exception, or None."""
        fl = self.flags
        if int(self.spin(fl, 1, job - 1, CALLER_SPIN_NS)) != job:
            self.done.clear()
            fl[3] = 1
            if int(fl[1]) != job:
                self.done.wait()
            fl[3] = 0
        return self.error


#: how long a helper keeps its core after a job (ns): far longer than the Python between
#: two steps of gradient descent (tens of microseconds), far shorter than a pause
HELPER_SPIN_NS = 1_000_000
#: how long the caller waits for its helpers on its core before it sleeps (ns)
CALLER_SPIN_NS = 100_000
_TEAM: dict = {"pid": None, "helpers": [], "lock": threading.Lock()}


def _team_run(work: Callable[[], None], helpers_needed: int) -> bool:
    """Run ``work`` on the caller and the spinning helpers (:class:`_Helper`); False
    (nothing run) if there is no compiled spin-wait or another thread is using the team."""
    spin = spin_wait()
    if spin is None or not _TEAM["lock"].acquire(blocking=False):
        return False
    try:
        if _TEAM["pid"] != os.getpid():
            _TEAM.update(pid=os.getpid(), helpers=[])
        helpers = _TEAM["helpers"]
        while len(helpers) < helpers_needed:
            helpers.append(_Helper(spin))
        jobs = [(h, h.post(work)) for h in helpers[:helpers_needed]]
        err = None
        try:
            work()
        except BaseException as exc:         # noqa: BLE001  (re-raised below, after the helpers)
            err = exc
        for h, job in jobs:
            try:
                failed = h.finish(job)
            except BaseException:             # interrupted while waiting: a fresh team next time
                for old in helpers:
                    old.retired = True
                    old.wake.set()
                _TEAM["helpers"] = []
                raise
            err = err or failed
        if err is not None:
            raise err
        return True
    finally:
        _TEAM["lock"].release()


def _on_threads(work: Callable[[], None], threads: int) -> None:
    """Run ``work`` on the calling thread and on threads - 1 helpers (the spinning team,
    :func:`_team_run`, or else the shared pool); re-raise the first exception."""
    if _team_run(work, threads - 1):
        return
    futures = [_executor(threads - 1).submit(work) for _ in range(threads - 1)]
    err = None
    try:
        work()
    except BaseException as exc:         # noqa: BLE001  (re-raised below, after the helpers)
        err = exc
    for fu in futures:
        try:
            fu.result()
        except BaseException as exc:     # noqa: BLE001
            err = err or exc
    if err is not None:
        raise err


def run_blocks(block: Callable[[int, int], None], n: int, c: int, threads: int) -> None:
    """``block(s, e)`` for the row blocks [s, e) = [k c, min(n, (k + 1) c)), on up to
    ``threads`` threads (blocks claimed in order; each must write only its own rows)."""
    nb = -(-n // c)
    threads = max(1, min(threads, nb))
    if threads == 1:
        for s in range(0, n, c):
            block(s, min(n, s + c))
        return
    state = {"next": 0, "stop": False}
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                k = state["next"]
                if state["stop"] or k >= nb:
                    return
                state["next"] = k + 1
            try:
                block(k * c, min(n, k * c + c))
            except BaseException:
                state["stop"] = True
                raise
    _on_threads(work, threads)


def ordered_block_sum(block: Callable[[int, int, np.ndarray], None], n: int, c: int,
                      shape: tuple[int, ...], threads: int,
                      slots: Callable[[int], np.ndarray]) -> np.ndarray:
    """G = ((0 + T_0) + T_1) + ... over the row blocks k of c rows, ``block(s, e, T)``
    writing T_k into T (and anything of its own rows elsewhere).  On several threads the
    T_k are computed concurrently and added in block order, so G is bit for bit the
    serial sum.  ``slots(W)`` returns a (W,) + shape scratch array for the blocks in
    flight (W = max(_WINDOW, 2 threads), at most the block count)."""
    nb = -(-n // c)
    threads = max(1, min(threads, nb))
    G = np.zeros(shape)
    if threads == 1:
        T = slots(1)[0]
        for s in range(0, n, c):
            block(s, min(n, s + c), T)
            np.add(G, T, out=G)
        return G
    buf = slots(min(nb, max(_WINDOW, 2 * threads)))
    st = {"claim": 0, "added": 0, "stop": False, "free": list(range(buf.shape[0])),
          "pending": {}}
    cond = threading.Condition()

    def work() -> None:
        while True:
            with cond:
                while not st["stop"] and st["claim"] < nb and not st["free"]:
                    cond.wait()
                if st["stop"] or st["claim"] >= nb:
                    return
                k, slot = st["claim"], st["free"].pop()
                st["claim"] = k + 1
            try:
                block(k * c, min(n, k * c + c), buf[slot])
            except BaseException:
                with cond:
                    st["stop"] = True
                    cond.notify_all()
                raise
            with cond:
                st["pending"][k] = slot
                while st["added"] in st["pending"]:      # the next block in order is ready
                    done = st["pending"].pop(st["added"])
                    np.add(G, buf[done], out=G)
                    st["free"].append(done)
                    st["added"] += 1
                cond.notify_all()
    _on_threads(work, threads)
    return G
