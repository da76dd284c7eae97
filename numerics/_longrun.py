"""The long-run mechanism of ``numerics.validation`` (re-exported there; see its module
docstring): a run above :data:`QUICK_WORK` of work is refused at once naming its
argument unless asked for (``long_run=True`` or :func:`long_runs`); an asked run shows its
progress (:class:`RunProgress`) and stops at Ctrl-C; a run of unknown length gets the same
work as a cap on its steps (:func:`flow_budget`).  :data:`QUICK_WORK` and
:data:`MAX_LONG_WORK` are read here, at each call: to lower them (in a test), patch this
module's names."""
from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from typing import Any

from numerics._checks import (_count_text, _flag, _label, require_callable,
                              require_positive_int, require_size)

__all__ = ["long_runs", "wants_long_run", "require_work", "flow_budget", "RunProgress",
           "QUICK_WORK", "MAX_LONG_WORK"]

#: work (units of about a nanosecond of one core: steps x width x samples, weighted by
#: each engine's measured cost, plus a measured per-step overhead) that one call runs
#: without being asked to run long: about two seconds of one core (the engines' costs were
#: measured on a loaded core, so well below 5 s of CPU)
QUICK_WORK = 2 ** 31
#: largest work of a run that was asked to run long (about ten hours of one core)
MAX_LONG_WORK = 2 ** 45


_LONG_RUNS: contextvars.ContextVar[tuple[bool, Any]] = contextvars.ContextVar(
    "numerics_long_runs", default=(False, None))


@contextlib.contextmanager
def long_runs(enabled: bool = True, progress: Any = None):
    """Inside the block every engine runs work above QUICK_WORK as if called with
    ``long_run=True`` (a run explicitly asked for: a claim at its full profile, an
    experiment at paper scale).  ``progress(done, total, what)``, when given, receives the
    progress of such runs instead of the display on stderr."""
    enabled = _flag(enabled, "enabled")
    if progress is not None:
        require_callable(progress, "progress", "(done, total, what)")
    token = _LONG_RUNS.set((enabled, progress))
    try:
        yield
    finally:
        _LONG_RUNS.reset(token)


def wants_long_run(long_run: Any = None) -> bool:
    """``long_run`` (True/False), or for None whether the call runs inside
    :func:`long_runs`."""
    if long_run is None:
        return bool(_LONG_RUNS.get()[0])
    return _flag(long_run, "long_run")


def require_work(work: Any, name: str, *, long_run: Any = None, what: str = "elementary updates",
                 hint: str = "use fewer steps or smaller sizes",
                 remedy: str = "pass long_run=True to run it anyway") -> bool:
    """Whether a run of ``work`` elementary updates is a long run (above
    :data:`QUICK_WORK`, allowed only when ``long_run`` is True or inside
    :func:`long_runs`); otherwise a ValueError naming ``name`` raised before any work, which
    offers ``hint`` and then ``remedy`` (how the caller asks for a long run: a function
    without a ``long_run`` argument names :func:`long_runs`).  A long run should show its
    progress (:class:`RunProgress`).  Work above :data:`MAX_LONG_WORK` is refused in any
    case."""
    name = _label(name)
    if not isinstance(remedy, str) or not remedy.strip():
        raise TypeError(f"remedy must be a non-empty string (how to ask for a long run); got "
                        f"{type(remedy).__name__} {remedy!r:.60}")
    long_run = wants_long_run(long_run)
    work = require_size(work, name, limit=10 ** 4000, what=what, hint=hint)
    secs = work // 10 ** 9
    seconds = (f"~{_count_text(secs).lstrip('~')} s of one core" if secs >= 10 ** 6
               else f"~{work * 1e-9:.3g} s of one core")
    require_size(work, name, limit=MAX_LONG_WORK, what=f"{what} ({seconds})", hint=hint)
    if work > QUICK_WORK and not long_run:
        raise ValueError(f"{name} is too large for a quick call: it needs {_count_text(work)} "
                         f"{what} ({seconds}), above {_count_text(QUICK_WORK)}; {hint}, or "
                         f"{remedy} (it then shows its progress on stderr and stops at Ctrl-C)")
    return work > QUICK_WORK


def flow_budget(budget: Any, name: str, cost: Any, *, long_run: Any = None,
                long_default: int = 1_000_000) -> int:
    """The step or field-evaluation budget of a run whose length is not known in advance
    (an error-controlled flow), each step costing ``cost`` work units: ``budget`` (None:
    ``long_default`` for a long run), capped at QUICK_WORK / cost (at least 100) unless the
    run is long (``long_run`` or :func:`long_runs`), where work above MAX_LONG_WORK is
    refused.  Exhausting it is the engine's named IntegratorError, which says to pass
    ``long_run=True`` for a longer run."""
    name = _label(name)
    cost = require_size(cost, "cost (work units of one step)", limit=MAX_LONG_WORK)
    long = wants_long_run(long_run)
    if budget is None:
        budget = long_default if long else 10 ** 18
    budget = require_positive_int(budget, name)
    if long:
        require_work(budget * max(cost, 1), name, long_run=True, what="work units (budget x "
                     "the cost of a step)", hint=f"use a smaller {name}")
        return budget
    return min(budget, max(100, QUICK_WORK // max(cost, 1)))


def _hms(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class RunProgress:
    """The progress of a long run: ``update(done)`` once per step (cheap: it looks at the
    clock every ``every`` calls), ``close()`` at the end; or iterate over
    :meth:`steps`.  Enabled, it reports to the hook of :func:`long_runs` if one is set
    (the command line's rich display), else on stderr: one line rewritten in place on a
    terminal, a plain line at most every 10 s otherwise, with the time elapsed and the
    ETA.  Nothing runs in the background, so Ctrl-C (``KeyboardInterrupt``) stops the
    run at once and leaves nothing behind; as a context manager it also prints the step
    reached."""

    def __init__(self, total: int, what: str, enabled: bool = True, *, every: int = 64):
        self.total = require_positive_int(total, "total", minimum=0)
        self.what = _label(what)
        self.enabled = _flag(enabled, "enabled")
        self.every = require_positive_int(every, "every")
        self.done = 0
        self._hook = _LONG_RUNS.get()[1]
        self._tty = bool(self.enabled and sys.stderr is not None and hasattr(sys.stderr, "isatty")
                         and sys.stderr.isatty())
        self._t0 = self._last = time.monotonic()
        self._shown = False

    def steps(self, start: int = 0):
        """``range(start, total)``, reporting each step; closes at the end."""
        for k in range(start, self.total):
            self.update(k)
            yield k
        self.close()

    def _line(self, now: float) -> str:
        rate = self.done / max(now - self._t0, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        return (f"{self.what}: {self.done}/{self.total} "
                f"({100 * self.done / max(self.total, 1):.0f}%), elapsed "
                f"{_hms(now - self._t0)}, ETA {_hms(eta)} (Ctrl-C stops it)")

    def update(self, done: int) -> None:
        if type(done) is not int:
            done = require_positive_int(done, "done", minimum=0)
        self.done = done
        if not self.enabled or done % self.every:
            return
        now = time.monotonic()
        if self._hook is not None:
            try:
                self._hook(int(done), self.total, self.what)
            except Exception:  # noqa: BLE001 - a display problem never breaks a run
                pass
        elif now - self._last >= (0.5 if self._tty else 10.0):
            print(("\r" if self._tty else "") + self._line(now), end="" if self._tty else "\n",
                  file=sys.stderr, flush=True)
            self._last, self._shown = now, True

    def close(self) -> None:
        if self._shown and self._tty:
            print(file=sys.stderr, flush=True)
        self._shown = False

    def __enter__(self) -> "RunProgress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()
        if self.enabled and exc_type is KeyboardInterrupt and sys.stderr is not None:
            print(f"{self.what}: interrupted at {self.done}/{self.total}", file=sys.stderr,
                  flush=True)
