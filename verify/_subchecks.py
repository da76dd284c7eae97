"""The sub-checks of a claim and their helpers (combination, instances drawn by Hypothesis,
the comparators, margins, formatting; the log-log fits are in :mod:`verify._rate_study`);
users import them from :mod:`verify.kit`."""
from __future__ import annotations

import contextlib
import contextvars
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from numerics.validation import require_choice
from verify._claim import (Outcome, RunContext, Table, _flag, _instance, _real, _text,
                           _verdict_fields, _whole, jsonable)

from verify._units import UNITS, is_unit

__all__ = ["Margin", "SubCheck", "combine", "compare", "compare_derivative", "control_margin",
           "fmt", "for_all_instances", "margin", "no_shrinking", "without_local_constants"]


def fails_by_measurement(error: Any, tolerance: Any) -> bool:
    """A finite measured error beyond a finite tolerance (not an exception, not a verdict)."""
    try:
        e, t = float(error), float(tolerance)
    except (TypeError, ValueError):
        return False
    return math.isfinite(e) and math.isfinite(t) and e > t


_STOP_AT_FIRST_FAILURE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "stop_at_first_failure", default=False)


class FirstFailure(BaseException):
    """Raised by the first sub-check that fails by measurement inside
    :func:`stop_at_first_failure` (a BaseException, so that no check's own ``except
    Exception`` turns it into an instance failure)."""

    def __init__(self, subcheck: "SubCheck"):
        super().__init__(subcheck.name)
        self.subcheck = subcheck


@contextlib.contextmanager
def stop_at_first_failure() -> Iterator[None]:
    """Inside, a :class:`SubCheck` that fails by measurement raises :class:`FirstFailure`:
    a mutant's check stops as soon as it is caught (the verdict "caught by measurement" is
    the same; the later sub-checks are not run).  This thread only."""
    token = _STOP_AT_FIRST_FAILURE.set(True)
    try:
        yield
    finally:
        _STOP_AT_FIRST_FAILURE.reset(token)


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
    # What ``error`` and ``tolerance`` are measured in: one of UNITS (their meanings are
    # listed there) or "mixed (...)" (the summary shows it; the kit's constructors set it,
    # this repository's claims must; "" lets the report guess from the reason).
    unit: str = ""

    def __post_init__(self) -> None:
        o = "SubCheck"
        # an empty name is a measurement of one instance, named by for_all_instances
        _text(o, "name", self.name, "the sub-check's name", empty_ok=True)
        _verdict_fields(o, self.error, "the measured error", self.tolerance, "reason",
                        self.reason, self.passed)
        _whole(o, "instances", self.instances, 0, none_ok=True)
        _instance(o, "counterexample", self.counterexample, dict, "a dict or None",
                  none_ok=True)
        _text(o, "unit", self.unit, "a unit name", empty_ok=True)
        if not (self.unit == "" or is_unit(self.unit)):
            raise ValueError(f"{o}: unit must be one of {UNITS}, 'mixed (...)' naming the "
                             f"components' units, or '' (unstated); got {self.unit!r:.40}")
        if _STOP_AT_FIRST_FAILURE.get() and self.passed is not True \
                and fails_by_measurement(self.error, self.tolerance):
            raise FirstFailure(self)

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
    if not isinstance(compared, str) or not compared:
        raise ValueError("combine: compared must be a non-empty string saying what was compared")
    if isinstance(subchecks, (str, bytes)) or not isinstance(subchecks, (list, tuple)):
        raise TypeError(f"combine: subchecks must be a list of SubCheck; got "
                        f"{type(subchecks).__name__}")
    if not subchecks:
        raise ValueError("combine: give at least one SubCheck (an empty check proves nothing)")
    bad = [type(x).__name__ for x in subchecks if not isinstance(x, SubCheck)]
    if bad:
        raise TypeError(f"combine: subchecks must be SubCheck objects; got {', '.join(bad)}")
    unnamed = [i for i, x in enumerate(subchecks) if not x.name.strip()]
    if unnamed:
        raise ValueError(f"combine: subchecks {unnamed} have an empty name; name each sub-check "
                         "(its name is its row of the report)")
    for label, v, kinds, what in (("tables", tables, (list, tuple), "a list of Table"),
                                  ("notes", notes, (list, tuple), "a list of strings"),
                                  ("details", details, (dict,), "a dict"),
                                  ("artifacts", artifacts, (dict,), "a dict")):
        if v is not None and not isinstance(v, kinds):
            raise TypeError(f"combine: {label} must be {what} or None; got {type(v).__name__}")
    if tables is not None and not all(isinstance(t, Table) for t in tables):
        raise TypeError("combine: tables must be Table objects")
    if isinstance(headline, bool) or not isinstance(headline, (int, np.integer)) \
            or not -len(subchecks) <= headline < len(subchecks):
        raise ValueError(f"combine: headline must index subchecks (0..{len(subchecks) - 1}); "
                         f"got {headline!r}")
    table = Table("Sub-checks", ["check", "measured error", "tolerance", "why this tolerance", "verdict"],
                  [[s.name, fmt(s.error), fmt(s.tolerance), s.reason, "pass" if s.ok() else "FAIL"]
                   for s in subchecks])
    det = dict(details or {})
    det["subchecks"] = [{"name": s.name, "error": s.error, "tolerance": s.tolerance,
                         "reason": s.reason, "passed": s.ok(),
                         **({"unit": s.unit} if s.unit else {}),
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
    """Compact, deterministic number formatting for tables (``digits`` in 1..17)."""
    if isinstance(digits, bool) or not isinstance(digits, (int, np.integer)) \
            or not 1 <= digits <= 17:
        raise ValueError(f"fmt: digits must be an integer in 1..17; got {digits!r}")
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


#: the senses of a :class:`Margin`: the bound its verdict implies
MARGIN_SENSES = ("at most", "at least", "condition")


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

    def __post_init__(self) -> None:
        o = "Margin"
        _instance(o, "name", self.name, str, "the sub-check's name (text) or None",
                  none_ok=True)
        _real(o, "error", self.error, " (the measured error)")
        _real(o, "tolerance", self.tolerance, " (the bound)", nan_ok=False)
        _flag(o, "passed", self.passed, "the verdict")
        require_choice(self.sense, f"{o}: sense", MARGIN_SENSES)
        if self.factor is not None and _real(o, "factor", self.factor, " (error/tolerance "
                                             "or its inverse) or None") < 0:
            raise ValueError(f"{o}: factor must be >= 0 (a ratio of a non-negative error and "
                             f"bound) or None; got {self.factor!r}")
        if self.excess is not None:
            _real(o, "excess", self.excess, " (error - tolerance or its negative) or None")
        if self.factor is not None and self.excess is not None:
            raise ValueError(f"{o}: give factor (a positive bound) or excess (a signed one), "
                             "not both")
        if self.sense == "condition" and (self.factor, self.excess) != (None, None):
            raise ValueError(f"{o}: a 'condition' margin has neither factor nor excess (no "
                             "reading of the bound explains the verdict)")

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
    e, t = _real("margin", "error", error), _real("margin", "tolerance", tolerance)
    if not isinstance(passed, (bool, np.bool_)):
        raise TypeError(f"margin: passed must be a bool (the verdict); got {type(passed).__name__}")
    if t != t:
        raise ValueError("margin: tolerance must not be nan")
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


def _as_float(x: Any) -> float:
    """A number read back from evidence (JSON writes non-finite floats as text)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def control_margin(evidence: Any, target: str = "") -> Margin:
    """The margin of the sub-check a negative control targets: the sub-checks whose name
    starts with ``target`` (a claim's ``negative_target``), else the failing ones, else
    all; among them a failing one first, then the one furthest beyond its bound.  An
    evidence without sub-checks gives its headline error and tolerance."""
    if not all(hasattr(evidence, a) for a in ("error", "tolerance", "passed")):
        raise TypeError(f"control_margin: evidence must be an Evidence (a claim's run); got "
                        f"{type(evidence).__name__}")
    if not isinstance(target, str):
        raise TypeError(f"control_margin: target must be a sub-check name (text); got "
                        f"{type(target).__name__}")
    details = getattr(evidence, "details", None)
    details = details if isinstance(details, dict) else {}
    subs = [margin(_as_float(d["error"]), _as_float(d["tolerance"]), bool(d.get("passed", True)),
                   str(d.get("name", "")))
            for d in (details.get("subchecks") or [])
            if isinstance(d, dict) and "error" in d and "tolerance" in d]
    pool = ([m for m in subs if target and m.name.startswith(target)]
            or [m for m in subs if not m.passed] or subs)
    if not pool:
        return margin(_as_float(evidence.error), _as_float(evidence.tolerance),
                      bool(evidence.passed))
    return max(pool, key=lambda m: (not m.passed, m.severity()))


def compare(name: str, value: Any, reference: Any, *, rtol: float, atol: float = 0.0,
            reason: str, unit: str | None = None) -> SubCheck:
    """One sub-check comparing ``value`` with ``reference`` elementwise (broadcast), in the
    style of scipy's ``assert_mpmath_equal``.

    The measured error is ``max |value - reference| / (atol / rtol + |reference|)``, a
    relative error with an absolute floor ``atol`` (``max |value - reference|`` when
    ``rtol = 0``), and the tolerance is ``rtol`` (``atol`` when ``rtol = 0``).  ``reason``
    says why those tolerances (a rounding analysis, a quadrature error bound, ...); it is
    required.  A non-finite value where the reference is finite is an infinite error.  The
    worst point goes into the sub-check's ``counterexample``.  ``unit`` (one of
    :data:`UNITS`) names what the error is measured in when the compared values are
    already scaled or normalised (default: "relative" when ``rtol > 0``, else "absolute").
    """
    if not isinstance(name, str) or not name:
        raise ValueError("compare: name must be a non-empty string naming the sub-check")
    if unit is not None and not is_unit(unit):
        raise ValueError(f"compare: unit must be one of {UNITS} or 'mixed (...)'; got {unit!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("compare: reason must say why rtol/atol are what they are")
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    if rtol == 0 and atol == 0:
        raise ValueError("compare: give rtol > 0 or atol > 0")
    v, r = _compared_arrays(value, reference)
    # chunks bound the temporaries; a contiguous array is sliced as a view, a broadcast
    # (zero-copy) one through .flat, which copies only the chunk
    vf = v.reshape(-1) if v.flags.c_contiguous else v.flat
    rf = r.reshape(-1) if r.flags.c_contiguous else r.flat
    worst_err, i = -1.0, 0
    for start in range(0, v.size, _COMPARE_CHUNK):
        stop = min(start + _COMPARE_CHUNK, v.size)
        err = _relative_errors(np.asarray(vf[start:stop], dtype=np.float64),
                               np.asarray(rf[start:stop], dtype=np.float64), rtol, atol)
        k = int(np.argmax(err))
        if err[k] > worst_err:
            worst_err, i = float(err[k]), start + k
    worst = {"index": [int(j) for j in np.unravel_index(i, v.shape)] if v.ndim else [],
             "value": float(v.flat[i]), "reference": float(r.flat[i])}
    bound = rtol if rtol > 0 else atol
    return SubCheck(name, worst_err, bound, reason,
                    counterexample=worst if worst_err > bound else None,
                    unit=unit or ("relative" if rtol > 0 else "absolute"))


#: most points of one :func:`compare_derivative` (five Python calls of f and df each)
COMPARE_DERIVATIVE_MAX_POINTS = 2 ** 16
#: largest broadcast size :func:`compare` accepts (about 2 s of one core, chunked)
COMPARE_MAX_ENTRIES = 2 ** 26
_COMPARE_CHUNK = 2 ** 18


def _tolerance(label: str, tol: Any) -> float:
    """``rtol``/``atol`` of :func:`compare` as a finite float >= 0 (an integer too large for
    float64 is refused, not an unnamed numpy error)."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise ValueError(f"compare: {label} must be a finite number >= 0; got {tol!r:.60}")
    try:
        t = float(tol)
    except OverflowError:
        t = math.inf
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"compare: {label} must be a finite number >= 0; got {tol!r:.60}")
    return t


def _compared_arrays(value: Any, reference: Any) -> tuple[np.ndarray, np.ndarray]:
    """``value`` and ``reference`` as real arrays broadcast against each other WITHOUT a
    copy (a zero-copy view stays one; :func:`compare` converts chunk by chunk); their
    broadcast size is checked before any conversion.  None entries, strings, a boolean scalar,
    complex numbers and ragged lists are a TypeError naming the argument."""
    raw = []
    for label, arr in (("value", value), ("reference", reference)):
        bad = f"compare: {label} must be real numbers or an array of them; got "
        if arr is None or isinstance(arr, (str, bytes, bool, np.bool_)):
            raise TypeError(bad + type(arr).__name__)
        try:
            a = np.asarray(arr)
            if a.dtype == object:   # Python integers beyond int64; None would become nan
                if any(e is None or isinstance(e, (str, bytes, bool, np.bool_)) for e in a.flat):
                    raise TypeError("an entry is None, text or a boolean")
                a = a.astype(np.float64)
        except (TypeError, ValueError, OverflowError) as exc:
            raise TypeError(f"{bad}{type(arr).__name__} ({exc})"[:300]) from None
        if a.dtype.kind not in "biuf":   # a boolean array counts 0/1, as np.asarray did
            raise TypeError(f"{bad}{type(arr).__name__} of dtype {a.dtype}")
        raw.append(a)
    try:
        shape = np.broadcast_shapes(raw[0].shape, raw[1].shape)
    except ValueError as exc:
        raise TypeError(f"compare: value and reference must be real (rectangular) arrays of "
                        f"broadcastable shapes ({exc})") from None
    size = math.prod(shape)
    if size == 0:
        raise ValueError(f"compare: nothing to compare: value and reference broadcast to the "
                         f"empty shape {shape}")
    if size > COMPARE_MAX_ENTRIES:
        raise ValueError(f"compare: value and reference broadcast to {size:.3g} entries "
                         f"(shape {shape}), above the limit {COMPARE_MAX_ENTRIES:.3g}; compare "
                         "fewer points (or summarise them first)")
    v, r = np.broadcast_arrays(raw[0], raw[1])
    return v, r


def _relative_errors(v: np.ndarray, r: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """|v - r| / (atol / rtol + |r|) (|v - r| for rtol = 0), inf where v is not finite; a
    finite difference whose ratio to a tiny reference overflows is the largest finite
    float64 (the largest error float64 can state; inf is kept for a non-finite value)."""
    if not np.all(np.isfinite(r)):
        raise ValueError("compare: the reference has non-finite entries; a reference must be "
                         "a number")
    diff = np.where(np.isfinite(v), np.abs(v - r), np.inf)
    scale = (atol / rtol + np.abs(r)) if rtol > 0 else np.ones_like(r)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        err = np.where(diff == 0, 0.0, diff / scale)
    return np.where(np.isfinite(diff) & ~np.isfinite(err), np.finfo(np.float64).max, err)


def compare_derivative(name: str, f: Callable[[float], Any], df: Callable[[float], Any],
                       points: Any, *, step: float, rtol: float, atol: float = 0.0,
                       reason: str) -> SubCheck:
    """A derived derivative ``df`` against the Richardson-extrapolated central difference
    of ``f`` at ``points`` (fourth order: (8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / 12h,
    truncation ~ h^4 |f^(5)| / 30).  ``f`` may return mpmath numbers (evaluate it in high
    precision to keep the rounding error ~ eps_f / h small); ``reason`` states the
    truncation and rounding bound that makes ``rtol``/``atol`` the right tolerance."""
    h = _real("compare_derivative", "step", step)
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"compare_derivative: step must be a positive number; got {step!r}")
    if not callable(f) or not callable(df):
        raise TypeError("compare_derivative: f and df must be callables of one point")
    try:
        n_points = np.size(points)
    except (TypeError, ValueError) as exc:   # ragged lists
        raise TypeError(f"compare_derivative: points must be real numbers ({exc})") from None
    if n_points > COMPARE_DERIVATIVE_MAX_POINTS:   # before a copy of a huge view
        raise ValueError(f"compare_derivative: points has {n_points:.3g} entries, above "
                         f"the limit {COMPARE_DERIVATIVE_MAX_POINTS} (five calls of f and df "
                         "per point); pass fewer points")
    try:
        xs = np.asarray(points, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"compare_derivative: points must be real numbers ({exc})") from None
    if xs.size == 0 or not np.all(np.isfinite(xs)):
        raise ValueError("compare_derivative: points must be a non-empty array of finite numbers")
    fd, dv = [], []
    with np.errstate(over="ignore", invalid="ignore"):   # a non-finite difference is named below
        for x in xs:
            d1 = f(x + h) - f(x - h)
            d2 = f(x + 2 * h) - f(x - 2 * h)
            fd.append(float((8 * d1 - d2) / (12 * h)))
            dv.append(float(df(x)))
    bad = [float(x) for x, v in zip(xs, fd) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"compare_derivative: the finite difference of f is not finite at "
                         f"points {bad[:3]} (f overflows within 2 step of them); choose points "
                         "and a step where f is finite")
    return compare(name, np.array(dv), np.array(fd), rtol=rtol, atol=atol,
                   reason=f"{reason} (fourth-order central difference, step {h:g})")


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
                      count: int | None = None, pinned: Sequence[Any] = ()) -> SubCheck:
    """Run ``measure`` on instances drawn from the Hypothesis ``strategy`` and return the
    worst :class:`SubCheck` (largest error/tolerance), renamed ``name``.

    ``ctx.examples`` (``--examples N``), else ``count`` (a declared size, e.g.
    ``count=ctx.size("instances")``), else the profile's ``quick``/``full`` count sets the
    number of drawn instances; ``pinned`` instances (found regressions) always run first.
    The draw is seeded from the run's seed and the claim id (same seed, same instances;
    no example database).  When an instance fails, Hypothesis shrinks it (not in the
    negative control, which is expected to fail) and the returned sub-check carries the
    minimal counterexample and its error in ``.counterexample``; an exception raised by
    ``measure`` counts as a failure with its message.  Shrinking spends at most
    ``_SHRINK_BUDGET`` further measurements; after that, only instances already seen
    to fail are run again (so Hypothesis's final replay is consistent).
    """
    if not isinstance(ctx, RunContext):
        raise TypeError(f"for_all_instances: ctx must be the check's RunContext; got "
                        f"{type(ctx).__name__}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"for_all_instances: name must be a non-empty string naming the "
                        f"sub-check; got {type(name).__name__} {name!r:.40}")
    from hypothesis.strategies import SearchStrategy
    if not isinstance(strategy, SearchStrategy):
        raise TypeError(f"for_all_instances: strategy must be a Hypothesis strategy (e.g. "
                        f"st.integers(1, 9)); got {type(strategy).__name__}")
    if isinstance(pinned, (str, bytes)) or not isinstance(pinned, (list, tuple)):
        raise TypeError(f"for_all_instances: pinned must be a list of instances; got "
                        f"{type(pinned).__name__}")
    if not callable(measure):
        raise TypeError(f"for_all_instances: measure must be a callable (instance) -> SubCheck; "
                        f"got {type(measure).__name__}")
    for label, v in (("quick", quick), ("full", full)) + ((("count", count),) if count is not None else ()):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 10 ** 5:
            raise ValueError(f"for_all_instances: {label} must be an integer in 1..100000; "
                             f"got {v!r:.40}")
    if count is not None:
        quick = full = int(count)
    n = ctx.n_examples(quick, full)
    records: list[tuple[Any, SubCheck]] = []
    last_failure: list[tuple[Any, SubCheck]] = []

    def run_one(instance: Any) -> SubCheck:
        try:
            sc = measure(instance)
        except Exception as exc:  # reported as a failing instance, not a crash
            sc = SubCheck(name, float("inf"), 0.0,
                          f"{type(exc).__name__}: {exc}", passed=False)
        records.append((instance, sc))
        if not sc.ok():
            last_failure.append((instance, sc))
        return sc

    for inst in pinned:
        run_one(inst)
    if not last_failure:
        broken = _draw_instances(ctx, name, strategy, n, run_one, last_failure)
        if broken is not None:
            return SubCheck(name, float("inf"), 0.0, broken, passed=False,
                            instances=len(records))
    if not records:
        return SubCheck(name, float("inf"), 0.0, "no instance was drawn", passed=False,
                        instances=0)
    if last_failure:
        inst, sc = last_failure[-1]  # Hypothesis replays the minimal example last
        return SubCheck(name, sc.error, sc.tolerance, sc.reason, passed=False,
                        instances=len(records), unit=sc.unit,
                        counterexample={"instance": _describe(inst), "error": sc.error,
                                        "tolerance": sc.tolerance, "reason": sc.reason})
    inst, worst = max(records, key=lambda r: _ratio(r[1]))
    return SubCheck(name, worst.error, worst.tolerance,
                    f"worst of {len(records)} drawn instances: {worst.reason}",
                    passed=True, instances=len(records), unit=worst.unit)


def _draw_instances(ctx: RunContext, name: str, strategy: Any, n: int,
                    run_one: Callable[[Any], SubCheck],
                    last_failure: list[tuple[Any, SubCheck]]) -> str | None:
    """Draw ``n`` instances from ``strategy`` (seeded from the run) and run each, shrinking
    a failure within the budget; returns a message when Hypothesis itself failed."""
    from hypothesis import HealthCheck, Phase, given, reject, settings
    from hypothesis import seed as hseed

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
        if not sc.ok():
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
        return f"instance generation failed: {type(exc).__name__}: {exc}"
    return None
