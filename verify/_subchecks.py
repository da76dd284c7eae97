"""The sub-checks of a claim and their helpers (combination, instances drawn by Hypothesis,
fits, margins, formatting); users import them from :mod:`verify.kit`."""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from verify._claim import Outcome, RunContext, Table, jsonable

__all__ = ["Margin", "SubCheck", "combine", "control_margin", "fmt", "loglog_slope",
           "for_all_instances", "margin", "no_shrinking", "without_local_constants"]


@dataclass
class SubCheck:
    """One condition of a multi-part check: measured ``error`` vs ``tolerance``, and why."""
    name: str
    error: float
    tolerance: float
    reason: str
    passed: bool | None = None
    # Set by for_all_instances: how many instances were run and, when one failed, the
    # minimal (shrunk) failing instance with its error.
    instances: int | None = None
    counterexample: dict[str, Any] | None = field(default=None)

    def ok(self) -> bool:
        if self.passed is not None:
            return bool(self.passed)
        return bool(np.isfinite(self.error) and self.error <= self.tolerance)


def combine(compared: str, subchecks: list[SubCheck], *, headline: int = 0,
            details: dict[str, Any] | None = None, tables: list[Table] | None = None,
            notes: list[str] | None = None, artifacts: dict[str, Any] | None = None) -> Outcome:
    """An :class:`Outcome` that passes only if every sub-check passes; the headline error
    and tolerance are those of ``subchecks[headline]``; all sub-checks go into the first
    table and into ``details["subchecks"]``."""
    table = Table("Sub-checks", ["check", "measured error", "tolerance", "why this tolerance", "verdict"],
                  [[s.name, fmt(s.error), fmt(s.tolerance), s.reason, "pass" if s.ok() else "FAIL"]
                   for s in subchecks])
    det = dict(details or {})
    det["subchecks"] = [{"name": s.name, "error": s.error, "tolerance": s.tolerance,
                         "reason": s.reason, "passed": s.ok(),
                         **({"instances": s.instances} if s.instances is not None else {}),
                         **({"counterexample": s.counterexample}
                            if s.counterexample is not None else {})}
                        for s in subchecks]
    failed = [s for s in subchecks if not s.ok() and s.counterexample is not None]
    if failed:
        det["counterexample"] = {"subcheck": failed[0].name, **failed[0].counterexample}
    h = subchecks[headline]
    return Outcome(compared=compared, error=h.error, tolerance=h.tolerance,
                   tolerance_reason=h.reason, details=det, tables=[table] + list(tables or []),
                   notes=list(notes or []), passed=all(s.ok() for s in subchecks),
                   artifacts=dict(artifacts or {}))


def fmt(x: Any, digits: int = 3) -> str:
    """Compact, deterministic number formatting for tables."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not np.isfinite(f):
        return str(f)
    if f == 0:
        return "0"
    if 1e-3 <= abs(f) < 1e5:
        return f"{f:.{digits + 1}g}"
    return f"{f:.{digits - 1}e}"


@dataclass(frozen=True)
class Margin:
    """Where a measured ``error`` lies against its ``tolerance``, in one direction for every
    kind of bound: ``factor`` above 1 (or ``excess`` above 0) means the bound is broken.

    ``sense`` is the bound the verdict implies: ``"at most"`` (passes iff error <=
    tolerance), ``"at least"`` (passes iff error >= tolerance, e.g. a separation that must
    be large enough) or ``"condition"`` (an explicit verdict neither reading explains).
    For a positive bound ``factor`` is error/tolerance ("at most") or tolerance/error
    ("at least"); for a signed one (a fitted rate that must stay below -1/4) ``excess`` is
    error - tolerance ("at most") or tolerance - error ("at least")."""
    name: str | None
    error: float
    tolerance: float
    passed: bool
    sense: str
    factor: float | None = None
    excess: float | None = None

    def severity(self) -> float:
        """A number above 1 exactly when the bound is broken (comparable across kinds)."""
        if self.factor is not None:
            return self.factor if self.factor == self.factor else math.inf
        if self.excess is not None:
            if self.excess != self.excess:
                return math.inf
            return 1.0 + self.excess / max(abs(self.tolerance), 1e-300)
        return 0.0 if self.passed else math.inf

    def factor_text(self) -> str:
        """``x7.98`` (a factor), ``excess +0.245`` (a signed bound) or ``-``."""
        if self.factor is not None:
            return f"x{fmt(self.factor, 2)}"
        if self.excess is not None:
            return f"excess {'+' if self.excess >= 0 else ''}{fmt(self.excess, 2)}"
        return "-"

    def comparison(self) -> str:
        """``measured error 7.98e-09 vs tolerance 1.00e-09``, or for other bounds
        ``measured -0.00501, required at most -0.25``."""
        if self.sense == "at most" and self.tolerance >= 0 and not self.error < 0:
            return f"measured error {fmt(self.error)} vs tolerance {fmt(self.tolerance)}"
        if self.sense == "condition":
            return (f"measured {fmt(self.error)} (tolerance {fmt(self.tolerance)}), "
                    f"condition {'met' if self.passed else 'not met'}")
        return f"measured {fmt(self.error)}, required {self.sense} {fmt(self.tolerance)}"


def margin(error: Any, tolerance: Any, passed: Any, name: str | None = None) -> Margin:
    """The :class:`Margin` of one measured error against its bound and verdict.

    >>> margin(7.98e-9, 1e-9, False).factor_text()
    'x7.98'
    >>> margin(-0.005, -0.25, False).factor_text()   # a rate that must be <= -0.25
    'excess +0.245'
    >>> margin(0.02, 1.0, False).factor_text()       # must be at least 1
    'x50'
    """
    try:
        e, t = float(error), float(tolerance)
    except (TypeError, ValueError):
        return Margin(name, math.nan, math.nan, bool(passed), "condition")
    ok = bool(passed)
    if ok == (e <= t) or (e != e and not ok):
        sense = "at most"
    elif ok == (e >= t):
        sense = "at least"
    else:
        return Margin(name, e, t, ok, "condition")
    if t >= 0 and not e < 0:  # a positive bound: a factor
        num, den = (e, t) if sense == "at most" else (t, e)
        factor = (0.0 if num == 0 else math.inf) if den == 0 else num / den
        return Margin(name, e, t, ok, sense, factor=factor)
    return Margin(name, e, t, ok, sense, excess=(e - t) if sense == "at most" else (t - e))


def control_margin(evidence: Any, target: str = "") -> Margin:
    """The margin of the sub-check a negative control targets: the sub-checks whose name
    starts with ``target`` (a claim's ``negative_target``), else the failing ones, else
    all; among them a failing one first, then the one furthest beyond its bound.  An
    evidence without sub-checks gives its headline error and tolerance."""
    details = getattr(evidence, "details", None) or {}
    subs = [margin(d["error"], d["tolerance"], d.get("passed", True), str(d.get("name", "")))
            for d in (details.get("subchecks") or [])
            if isinstance(d, dict) and "error" in d and "tolerance" in d]
    pool = ([m for m in subs if target and m.name.startswith(target)]
            or [m for m in subs if not m.passed] or subs)
    if not pool:
        return margin(evidence.error, evidence.tolerance, evidence.passed)
    return max(pool, key=lambda m: (not m.passed, m.severity()))


def loglog_slope(x: Any, y: Any, *, floor: float | None = None) -> float:
    """Least-squares slope of log(y) against log(x): the measured rate of a power law
    (e.g. -1/2 for an O(m^-1/2) Monte Carlo error).  With ``floor``, values below it
    (an exact zero, say) count as ``floor``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if floor is not None:
        if not (np.isfinite(floor) and floor > 0):
            raise ValueError(f"loglog_slope: floor must be a positive number; got {floor!r}")
        y = np.maximum(y, floor)
    if x.size < 2 or x.shape != y.shape or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("loglog_slope needs >= 2 matching positive values of x and y")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _ratio(sc: SubCheck) -> float:
    if not sc.ok():
        return np.inf
    if sc.tolerance > 0 and np.isfinite(sc.error):
        return float(sc.error / sc.tolerance)
    return 0.0


def _describe(instance: Any) -> Any:
    """A compact JSON-able description of a drawn instance for the evidence: arrays
    rounded to 12 decimals, or summarised when large; everything else as :func:`jsonable`."""
    if isinstance(instance, dict):
        return {str(k): _describe(v) for k, v in instance.items()}
    if isinstance(instance, (list, tuple)):
        return [_describe(v) for v in instance]
    if isinstance(instance, np.ndarray):
        if instance.size <= 64:
            return jsonable(np.round(instance, 12))
        return f"array{instance.shape}(min={instance.min():.6g}, max={instance.max():.6g})"
    return jsonable(instance)


@contextlib.contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis-drawn instances that depend only on the seed.

    Hypothesis (6.13x and later) mixes literals harvested from every *loaded* module of the
    project into the values it draws (with probability ~5% per draw), so the same seed drew
    different instances depending on which modules a process had imported before (the
    command line imports the plotting module, a Dask worker does not).  Inside this block
    that pool is empty; the constants cache is cleared on entry and exit."""
    try:
        from hypothesis.internal.conjecture import providers as hp
        original, cache = hp._get_local_constants, hp.CONSTANTS_CACHE
        empty = hp.Constants()
    except (ImportError, AttributeError):  # another Hypothesis: nothing to neutralize
        yield
        return
    hp._get_local_constants = lambda: empty
    cache.cache.clear()
    try:
        yield
    finally:
        hp._get_local_constants = original
        cache.cache.clear()


_SHRINK_BUDGET = 25  # measure calls spent shrinking after the first failure
_SHRINKING = [True]


class no_shrinking:
    """Within the block, :func:`for_all_instances` reports the first failing instance
    without shrinking it (the mutation harness: a mutant only needs to be caught)."""

    def __enter__(self) -> None:
        self._prev = _SHRINKING[0]
        _SHRINKING[0] = False

    def __exit__(self, *exc: Any) -> None:
        _SHRINKING[0] = self._prev


def _key(instance: Any) -> bytes:
    import pickle
    try:
        return pickle.dumps(instance)
    except Exception:  # an unpicklable instance: its repr
        return repr(instance).encode()


def for_all_instances(ctx: RunContext, name: str, strategy: Any,
                      measure: Callable[[Any], SubCheck], *, quick: int = 5, full: int = 25,
                      pinned: Sequence[Any] = ()) -> SubCheck:
    """Run ``measure`` on instances drawn from the Hypothesis ``strategy`` and return the
    worst :class:`SubCheck` (largest error/tolerance), renamed ``name``.

    ``ctx.examples`` (``--examples N``) or the profile's ``quick``/``full`` count sets the
    number of drawn instances; ``pinned`` instances (found regressions) always run first.
    The draw is seeded from the run's seed and the claim id (same seed, same instances;
    no example database).  When an instance fails, Hypothesis shrinks it (not in the
    negative control, which is expected to fail) and the returned sub-check carries the
    minimal counterexample and its error in ``.counterexample``; an exception raised by
    ``measure`` counts as a failure with its message.  Shrinking spends at most
    ``_SHRINK_BUDGET`` further measurements; after that, only instances already seen
    to fail are run again (so Hypothesis's final replay is consistent).
    """
    from hypothesis import HealthCheck, Phase, given, reject, settings
    from hypothesis import seed as hseed

    n = ctx.n_examples(quick, full)
    records: list[tuple[Any, SubCheck]] = []
    last_failure: list[tuple[Any, SubCheck]] = []

    def run_one(instance: Any) -> SubCheck:
        try:
            sc = measure(instance)
        except Exception as exc:  # reported as a failing instance, not a crash
            sc = SubCheck(name, float("inf"), 0.0,
                          f"{type(exc).__name__}: {exc}", passed=False)
        return sc

    for inst in pinned:
        sc = run_one(inst)
        records.append((inst, sc))
        if not sc.ok():
            last_failure.append((inst, sc))

    if not last_failure:
        shrink = _SHRINKING[0] and not ctx.negative_control
        phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
        failing: set[bytes] = set()
        after_failure = [0]
        seed_int = int(ctx.rng("hypothesis", name).integers(0, 2**63 - 1))

        @hseed(seed_int)
        @settings(max_examples=n, database=None, deadline=None, derandomize=False,
                  phases=phases, suppress_health_check=list(HealthCheck),
                  print_blob=False, report_multiple_bugs=False)
        @given(strategy)
        def _property(instance: Any) -> None:
            if last_failure:
                key = _key(instance)
                if after_failure[0] >= _SHRINK_BUDGET:
                    if key in failing:
                        raise AssertionError("known failing instance")
                    reject()
                after_failure[0] += 1
            sc = run_one(instance)
            records.append((instance, sc))
            if not sc.ok():
                last_failure.append((instance, sc))
                failing.add(_key(instance))
                raise AssertionError(sc.reason)

        try:
            with without_local_constants(), warnings.catch_warnings():
                # Hypothesis compares the global `random` state before and after each draw;
                # a Dask worker's own threads (heartbeats) use `random` meanwhile, which it
                # misreads as a strategy using `random`.  Our strategies never do
                # (draws come from Hypothesis only), so that warning is a false alarm here.
                warnings.filterwarnings("ignore", message=r"Do not use the `random` module")
                _property()
        except AssertionError:
            pass
        except Exception as exc:  # Hypothesis itself failed (e.g. an unsatisfiable strategy)
            return SubCheck(name, float("inf"), 0.0,
                            f"instance generation failed: {type(exc).__name__}: {exc}",
                            passed=False, instances=len(records))

    if not records:
        return SubCheck(name, float("inf"), 0.0, "no instance was drawn", passed=False,
                        instances=0)
    if last_failure:
        inst, sc = last_failure[-1]  # Hypothesis replays the minimal example last
        return SubCheck(name, sc.error, sc.tolerance, sc.reason, passed=False,
                        instances=len(records),
                        counterexample={"instance": _describe(inst), "error": sc.error,
                                        "tolerance": sc.tolerance, "reason": sc.reason})
    inst, worst = max(records, key=lambda r: _ratio(r[1]))
    return SubCheck(name, worst.error, worst.tolerance,
                    f"worst of {len(records)} drawn instances: {worst.reason}",
                    passed=True, instances=len(records))
