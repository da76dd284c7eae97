"""Acceptance intervals for Monte Carlo laws of squared Gaussian norms (Satterthwaite's
chi-square approximation; used by claims W3a, W3c and W3f of Williams et al. 2019, Sec. 4).

If G is a centred Gaussian vector with covariance C, S = |G|^2 has mean tr C and variance
2 tr C^2; Satterthwaite matches R * mean of R i.i.d. copies of S to g chi^2_nu with
g = tr C^2 / tr C and nu = R (tr C)^2 / tr C^2 (exact when C is a multiple of a projection).
A Monte Carlo estimate of a law E S = tr C * scale is tested by whether the mean of the
squared norms, divided by tr C * scale, lies in the interval.

>>> lo, hi = satterthwaite_interval(2.0, 2.0, 1000, 0.01)
>>> round(lo, 4), round(hi, 4)
(0.9204, 1.0833)
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from numerics.validation import as_float_array, as_float_scalar, require_positive_int

__all__ = ["satterthwaite_interval", "mean_square_ratio_test", "RatioTest", "MAX_REPLICATES"]

#: largest number of replicates accepted
MAX_REPLICATES = 10**12


def _moments(trace: Any, trace_sq: Any) -> tuple[float, float]:
    tr = as_float_scalar(trace, "trace (tr C)", lo=0.0)
    tr2 = as_float_scalar(trace_sq, "trace_sq (tr C^2)", lo=0.0)
    if not (tr > 0 and tr2 > 0):
        raise ValueError(f"trace (tr C = {tr:g}) and trace_sq (tr C^2 = {tr2:g}) must be > 0: "
                         "the covariance must not vanish")
    if not (tr2 <= tr * tr * (1 + 1e-9)) or not np.isfinite(tr * tr):
        raise ValueError(f"trace_sq (tr C^2 = {tr2:g}) must be at most trace^2 (= {tr * tr:g}) "
                         "for a covariance matrix C (and trace^2 finite); check the two traces")
    return tr, tr2


def satterthwaite_interval(trace: Any, trace_sq: Any, replicates: Any,
                           alpha: Any) -> tuple[float, float]:
    """Two-sided level-``alpha`` acceptance interval, relative to tr C, for the mean of
    ``replicates`` i.i.d. copies of S = |G|^2, G ~ N(0, C), tr C = ``trace``,
    tr C^2 = ``trace_sq``: (chi2_nu^-1(alpha/2) / nu, chi2_nu^-1(1 - alpha/2) / nu) with
    nu = replicates (tr C)^2 / tr C^2."""
    tr, tr2 = _moments(trace, trace_sq)
    r = require_positive_int(replicates, "replicates", maximum=MAX_REPLICATES)
    a = as_float_scalar(alpha, "alpha (two-sided level)", lo=0.0, hi=1.0)
    if not 0 < a < 1:
        raise ValueError(f"alpha (two-sided level) must lie strictly between 0 and 1; got {a!r}")
    with np.errstate(over="ignore"):
        nu = r * tr**2 / tr2
    if not np.isfinite(nu):
        raise ValueError(f"trace_sq (tr C^2 = {tr2:g}) is too small for trace = {tr:g} and "
                         f"replicates = {r}: nu = replicates trace^2 / trace_sq overflows "
                         "float64; check the two traces (or rescale both)")
    lo, hi = stats.chi2.ppf([a / 2, 1 - a / 2], nu)
    lo, hi = float(lo / nu), float(hi / nu)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"alpha = {a:g} is too small for nu = {nu:.3g} degrees of freedom "
                         "(the chi-square quantiles are not representable); use a larger alpha")
    if not lo < 1.0 < hi:
        raise ValueError(f"nu = replicates trace^2 / trace_sq = {nu:.3g} degrees of freedom: the "
                         "interval is narrower than float64 resolves around 1; check trace and "
                         "trace_sq (tr C, tr C^2) or use fewer replicates")
    return lo, hi


class RatioTest(NamedTuple):
    """``ratio``: mean of the squared norms / (tr C * scale); ``inside``: whether it lies in
    [``lo``, ``hi``]; ``distance``: |ratio - 1| over the half-width on its side (above 1
    exactly when outside; capped at the largest float64, 1.8e308, where that quotient
    overflows)."""
    ratio: float
    inside: bool
    lo: float
    hi: float
    distance: float


def mean_square_ratio_test(squares: Any, trace: Any, trace_sq: Any, scale: Any,
                           alpha: Any) -> RatioTest:
    """Test the law E S = tr C * ``scale`` on i.i.d. replicates ``squares`` of S = |G|^2
    (G centred Gaussian, tr C = ``trace``, tr C^2 = ``trace_sq``) with the
    :func:`satterthwaite_interval` at level ``alpha``."""
    sq = as_float_array(squares, "squares", ndim=1, allow_empty=False)
    if np.any(sq < 0):
        raise ValueError("squares must be squared norms (>= 0); got a negative entry")
    s = as_float_scalar(scale, "scale", lo=0.0)
    tr, tr2 = _moments(trace, trace_sq)
    if not (s > 0 and np.isfinite(tr * s) and tr * s > 0):
        raise ValueError(f"scale must be > 0 with trace * scale a positive float64; got {s!r}")
    with np.errstate(over="ignore"):
        q = float(sq.mean() / (tr * s))
    if not np.isfinite(q):
        raise ValueError("squares are too large: their mean overflows float64; rescale them")
    lo, hi = satterthwaite_interval(tr, tr2, sq.size, alpha)
    with np.errstate(over="ignore"):
        dist = (q - 1) / (hi - 1) if q >= 1 else (1 - q) / (1 - lo)
    return RatioTest(q, bool(lo <= q <= hi), lo, hi, min(dist, float(np.finfo(float).max)))
