"""Log-log fits and width studies of a claim: :func:`loglog_slope` (a measured rate) and
:func:`rate_study` (a rate with its confidence interval over seeds, :class:`RateStudy`);
users import them from :mod:`verify.kit`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verify._claim import _real
from verify._subchecks import SubCheck, fmt

__all__ = ["LOGLOG_MAX_POINTS", "RateStudy", "loglog_slope", "rate_study"]


def loglog_slope(x: Any, y: Any, *, floor: float | None = None) -> float:
    """Least-squares slope of log(y) against log(x): the measured rate of a power law
    (e.g. -1/2 for an O(m^-1/2) Monte Carlo error).  With ``floor``, values below it
    (an exact zero, say) count as ``floor``.

    >>> round(loglog_slope([1, 4, 16], [1.0, 0.5, 0.25]), 12)
    -0.5
    """
    x, y = _loglog_arrays("loglog_slope", x, y, floor)
    return _fit_slope(np.log(x), np.log(y))


#: most points (x entries; y entries for a rate study) of one log-log fit
LOGLOG_MAX_POINTS = 2 ** 24


def _loglog_arrays(fn: str, x: Any, y: Any, floor: float | None,
                   names: tuple[str, str] = ("x", "y")) -> tuple[np.ndarray, np.ndarray]:
    nx, ny = names
    for label, arr in ((nx, x), (ny, y)):   # before a copy of a huge (zero-copy) view
        try:
            n = np.size(arr)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{fn}: {label} must be an array of real numbers ({exc})") from None
        if n > LOGLOG_MAX_POINTS:
            raise ValueError(f"{fn}: {label} has {n:.3g} entries, above the limit "
                             f"{LOGLOG_MAX_POINTS}; fit fewer points")
    try:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{fn}: {nx} and {ny} must be arrays of real numbers ({exc})") from None
    if floor is not None:
        try:
            fl = float(floor) if not isinstance(floor, bool) and isinstance(
                floor, (int, float, np.integer, np.floating)) else math.nan
        except OverflowError:
            fl = math.inf
        if not (math.isfinite(fl) and fl > 0):
            raise ValueError(f"{fn}: floor must be a positive number; got {floor!r:.60}")
        y = np.where(y < fl, fl, y)
    if x.ndim != 1 or x.size < 2 or y.shape[:1] != x.shape:
        raise ValueError(f"{fn} needs {nx} with >= 2 values and {ny} with one row per value "
                         f"of {nx}; got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError(f"{fn}: {nx} and {ny} must be finite (a nan or inf distance is a "
                         "failed measurement, not a point of the fit)")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError(f"{fn}: {nx} and {ny} must be positive (give floor= for exact zeros)")
    if np.ptp(np.log(x)) == 0:
        raise ValueError(f"{fn}: {nx} must take at least two distinct values")
    return x, y


def _fit_slope(lx: np.ndarray, ly: np.ndarray) -> float:
    """The least-squares slope of ly (n,) against lx (n,), in closed form (no LAPACK)."""
    cx = lx - lx.mean()
    return float(np.dot(cx, ly - ly.mean()) / np.dot(cx, cx))


@dataclass(frozen=True)
class RateStudy:
    """A width (or step) study: ``distances[i, k]`` at ``widths[i]`` for seed k, its
    log-log slope over the seeds' mean and the confidence interval from the seeds.

    The slope is the mean of the per-seed least-squares slopes of log(distance) against
    log(width) (each seed is an independent study); the interval is a Student-t interval
    of that mean at ``level``.  The study supports the predicted rate when the interval
    contains ``predicted`` and excludes 0 (a plateau, as a near-miss limit gives, is a
    slope whose interval contains 0 or misses the rate)."""
    name: str
    widths: tuple[float, ...]
    distances: np.ndarray = field(repr=False)
    predicted: float
    level: float
    slope: float
    interval: tuple[float, float]
    seed_slopes: tuple[float, ...]

    @property
    def half_width(self) -> float:
        return 0.5 * (self.interval[1] - self.interval[0])

    def contains_predicted(self) -> bool:
        return self.interval[0] <= self.predicted <= self.interval[1]

    def excludes_zero(self) -> bool:
        return not self.interval[0] <= 0.0 <= self.interval[1]

    def passed(self) -> bool:
        return self.contains_predicted() and self.excludes_zero()

    def subcheck(self, reason: str) -> SubCheck:
        """The study as a :class:`SubCheck`: error |slope - predicted|, tolerance the
        interval's half-width, passed iff the interval contains the rate and excludes 0."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("RateStudy.subcheck: reason must say why this rate is predicted")
        lo, hi = self.interval
        text = (f"slope {self.slope:+.3f}, {100 * self.level:g}% interval [{lo:+.3f}, {hi:+.3f}] "
                f"from {len(self.seed_slopes)} seeds at {len(self.widths)} widths "
                f"{fmt(self.widths[0])}..{fmt(self.widths[-1])}; predicted {self.predicted:+.3f}"
                f" ({reason}); passes iff the interval contains it and excludes 0")
        return SubCheck(self.name, abs(self.slope - self.predicted), self.half_width, text,
                        passed=self.passed(), unit="|slope - predicted|",
                        counterexample=None if self.passed() else {
                            "slope": self.slope, "interval": list(self.interval),
                            "predicted": self.predicted,
                            "excludes_zero": self.excludes_zero()})

    def bias_subcheck(self, name: str, error: float, how: str, fraction: float = 0.05) -> SubCheck:
        """A systematic error of the study (its limit reference, its integrator) as a
        :class:`SubCheck`: ``error`` (an estimate, e.g. against a refined reference) must be
        at most ``fraction`` of the smallest mean distance, so that it moves no
        log-distance by more than ~``fraction`` and the slope by far less than its interval."""
        if not isinstance(name, str) or not name or not isinstance(how, str) or not how.strip():
            raise ValueError("RateStudy.bias_subcheck: name and how must be non-empty text")
        err = _real("RateStudy.bias_subcheck", "error", error)
        frac = _real("RateStudy.bias_subcheck", "fraction", fraction)
        if not (err >= 0 and 0 < frac < 1):
            raise ValueError(f"RateStudy.bias_subcheck: error must be >= 0 (a finite estimate) "
                             f"and fraction in (0, 1); got {error!r}, {fraction!r}")
        bound = frac * float(self.distances.mean(axis=1).min())
        return SubCheck(name, err, bound,
                        f"{how}: {fmt(err)}, at most {frac:g} x the smallest mean distance "
                        f"({fmt(bound)}), so it moves no log-distance by more than {frac:g} "
                        "and the slope by far less than its interval", unit="absolute")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "widths": list(self.widths),
                "distances": self.distances.tolist(), "predicted": self.predicted,
                "level": self.level, "slope": self.slope, "interval": list(self.interval),
                "seed_slopes": list(self.seed_slopes)}


def rate_study(name: str, widths: Any, distances: Any, *, predicted: float,
               level: float = 0.999) -> RateStudy:
    """The :class:`RateStudy` of ``distances`` (shape (len(widths), n_seeds), positive,
    finite) against ``widths``.  ``level`` is the interval's confidence: 1 - level is the
    study's false-alarm probability when the rate is right (0.999: a 2% chance that one of
    20 seeds misses it).

    >>> w = np.array([10, 40, 160, 640, 2560.0])
    >>> d = w[:, None] ** -0.5 * np.exp(0.1 * np.cos(np.arange(40)).reshape(5, 8))
    >>> s = rate_study("fluctuations", w, d, predicted=-0.5)
    >>> s.passed(), round(s.slope, 2)
    (True, -0.5)
    """
    if not isinstance(name, str) or not name:
        raise ValueError("rate_study: name must be a non-empty string")
    w, d = _loglog_arrays("rate_study", widths, distances, None, ("widths", "distances"))
    if d.ndim != 2 or d.shape[1] < 3:
        raise ValueError(f"rate_study: distances must have shape (len(widths), n_seeds) with "
                         f">= 3 seeds; got {d.shape}")
    if w.size < 3:
        raise ValueError(f"rate_study needs >= 3 widths; got {w.size}")
    p = _real("rate_study", "predicted", predicted)
    if not math.isfinite(p):
        raise ValueError("rate_study: predicted must be finite")
    lv = _real("rate_study", "level", level)
    if not 0.5 <= lv < 1:
        raise ValueError(f"rate_study: level must be in [0.5, 1); got {level!r}")
    from scipy import stats
    lx = np.log(w)
    slopes = np.array([_fit_slope(lx, np.log(d[:, k])) for k in range(d.shape[1])])
    n = slopes.size
    mean = float(slopes.mean())
    se = float(slopes.std(ddof=1) / math.sqrt(n))
    hw = float(stats.t.ppf(0.5 + lv / 2, n - 1)) * se
    return RateStudy(name, tuple(float(v) for v in w), d.copy(), p, lv, mean,
                     (mean - hw, mean + hw), tuple(float(v) for v in slopes))
