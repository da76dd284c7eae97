"""The helper threads of the d-dimensional step (numerics._step_threads, numerics._spin):
the compiled spin-wait, and the team of helpers that keep their core between steps."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from numerics import _spin, _step_threads as step_threads


def _spin_or_skip():
    pytest.importorskip("numba")
    import sys
    if not sys.platform.startswith("linux"):
        pytest.skip("the compiled spin-wait is built on Linux only")
    spin = _spin.spin_wait()
    assert spin is not None, "numba is installed on Linux, yet the spin-wait failed its self-test"
    return spin


def test_the_spin_wait_sees_another_threads_store_and_keeps_its_budget():
    spin = _spin_or_skip()
    flags = np.zeros(3, np.int64)
    t0 = time.perf_counter()
    assert spin(flags, 2, 0, 20_000_000) == 0                  # nothing changes: 20 ms
    assert 0.019 <= time.perf_counter() - t0 < 2.0
    flags[1] = 7
    assert spin(flags, 1, 0, 10 ** 10) == 7                     # already changed: at once
    timer = threading.Timer(0.02, flags.__setitem__, (0, -3))
    timer.start()
    t0 = time.perf_counter()
    assert spin(flags, 0, 0, 10 ** 10) == -3
    timer.join()
    assert time.perf_counter() - t0 < 2.0


def _helper_threads() -> int:
    return sum(t.name == "twolayer-step-spin" for t in threading.enumerate())


def test_a_threaded_step_runs_on_the_spinning_team(monkeypatch):
    """Where the spin-wait exists, the work runs on the caller and the team's helpers
    (not the sleeping pool), after the helper has gone to sleep as well as while it
    spins; the helper count stays threads - 1."""
    _spin_or_skip()
    monkeypatch.setattr(step_threads, "_executor", None)       # the pool must not be used
    monkeypatch.setattr(step_threads, "HELPER_SPIN_NS", 2_000_000)
    for pause in (0.0, 0.02, 0.0):                              # spinning, asleep, spinning
        time.sleep(pause)
        seen, lock = set(), threading.Lock()

        def work():
            with lock:
                seen.add(threading.get_ident())
            time.sleep(0.005)                                   # both threads take part
        step_threads._on_threads(work, 2)
        assert len(seen) == 2 and threading.get_ident() in seen
    assert len(step_threads._TEAM["helpers"]) >= 1


def test_a_helpers_exception_reaches_the_caller_and_the_team_stays_usable():
    _spin_or_skip()
    main = threading.get_ident()

    def work():
        if threading.get_ident() != main:
            raise ZeroDivisionError("in the helper")
    with pytest.raises(ZeroDivisionError, match="in the helper"):
        step_threads._on_threads(work, 2)
    ran = []
    step_threads._on_threads(lambda: ran.append(1), 2)
    assert ran == [1, 1]


def test_an_interrupted_wait_retires_the_team(monkeypatch):
    """An interrupt while the caller waits for its helpers (Ctrl-C): raised at once, the
    old helpers end after their job, and the next step builds a new team."""
    _spin_or_skip()
    step_threads._on_threads(lambda: None, 2)
    old = list(step_threads._TEAM["helpers"])
    monkeypatch.setattr(step_threads._Helper, "finish",
                        lambda self, job: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        step_threads._on_threads(lambda: time.sleep(0.01), 2)
    monkeypatch.undo()
    assert all(h.retired for h in old) and step_threads._TEAM["helpers"] == []
    ran = []
    step_threads._on_threads(lambda: ran.append(1), 2)
    assert ran == [1, 1]
    deadline = time.time() + 5
    while _helper_threads() > len(step_threads._TEAM["helpers"]) and time.time() < deadline:
        time.sleep(0.01)
    assert _helper_threads() == len(step_threads._TEAM["helpers"])


def test_concurrent_callers_share_out_the_team_and_the_pool():
    """Steps started from several threads at once: one holds the team, the others use
    the pool; each caller's work runs exactly threads times."""
    _spin_or_skip()
    counts = [0] * 6
    lock = threading.Lock()

    def caller(i):
        for _ in range(20):
            def work():
                with lock:
                    counts[i] += 1
            step_threads._on_threads(work, 2)
    workers = [threading.Thread(target=caller, args=(i,)) for i in range(6)]
    [t.start() for t in workers]
    [t.join() for t in workers]
    assert counts == [40] * 6
