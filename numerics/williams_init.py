"""Quadrature references for Thm 5 of Williams et al. (NeurIPS 2019) under its general
hypothesis (claim W3b): A ~ U([-1, 1]) and B | A uniform on I_A, a finite disjoint union of
intervals [lo_k(a), hi_k(a)] whose endpoints are affine in a on each half a < 0, a > 0.

From the DEFINITIONS, independent of the SymPy derivations:

- K_RF(x, x') = E[(A x - B)_+ (A x' - B)_+] = int_{-1}^{1} (1/2) int_{I_a}
  (a x - b)_+ (a x' - b)_+ db / |I_a| da: the b-integral over each interval, cut at
  b = min(a x, a x') (above it the integrand vanishes), is the exact antiderivative of the
  polynomial (a x - b)(a x' - b) (the definition integrated in b, no closed form of K); the
  a-integral is ``mpmath.quad`` (Gauss-Legendre) cut at a = 0 and at every a where a x or
  a x' meets an endpoint of I_a (between the cuts the integrand is a polynomial in a for
  endpoints homogeneous in a, and smooth in general);
- omega(x) = int |a|^3 p0(a, a x) da with p0(a, b) = (1/2) 1{b in I_a} / |I_a|, cut alike.

``intervals`` is a callable a -> sequence of (lo, hi) (mpmath numbers, a != 0).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import mpmath

from numerics.validation import as_float_scalar, require_callable, require_dps

__all__ = ["interval_breakpoints", "rf_kernel_intervals_mp", "rkhs_weight_intervals_mp",
           "MAX_INTERVALS"]

#: most intervals in I_a (each adds breakpoints and terms)
MAX_INTERVALS = 16
_Intervals = Callable[[Any], Sequence[tuple[Any, Any]]]


def _mp_real(v: Any, name: str) -> mpmath.mpf:
    if isinstance(v, mpmath.mpf):
        if not mpmath.isfinite(v):
            raise ValueError(f"{name} must be finite; got {v}")
        return v
    return mpmath.mpf(as_float_scalar(v, name))


def _pieces(intervals: _Intervals, aa: mpmath.mpf) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    """The intervals at a = aa as mpf pairs, validated (finite, lo < hi, at most
    MAX_INTERVALS, disjoint)."""
    raw = intervals(aa)
    try:
        ivs = [(mpmath.mpf(lo), mpmath.mpf(hi)) for lo, hi in raw]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"intervals(a) must return a sequence of (lo, hi) real pairs; {exc}") from None
    if not 1 <= len(ivs) <= MAX_INTERVALS:
        raise ValueError(f"intervals(a) must return 1..{MAX_INTERVALS} intervals; got {len(ivs)}")
    ivs.sort()
    for k, (lo, hi) in enumerate(ivs):
        if not (mpmath.isfinite(lo) and mpmath.isfinite(hi) and lo < hi):
            raise ValueError(f"intervals(a) at a = {mpmath.nstr(aa, 8)}: interval {k} = "
                             f"({mpmath.nstr(lo, 8)}, {mpmath.nstr(hi, 8)}) must be finite with lo < hi")
        if k and lo < ivs[k - 1][1]:
            raise ValueError(f"intervals(a) at a = {mpmath.nstr(aa, 8)} overlap: give a disjoint union")
    return ivs


def interval_breakpoints(intervals: _Intervals, zs: Sequence[mpmath.mpf]) -> list[mpmath.mpf]:
    """a in (-1, 1) where a z equals an endpoint of I_a (z in ``zs``), plus 0 and +-1.

    Each endpoint e(a) must be affine on each half: e = e0 + e1 a is read from a = +-1,
    +-1/2 and checked at a = +-1/4 (else ValueError); the root a = e0 / (z - e1)."""
    intervals = require_callable(intervals, "intervals", "(a) -> [(lo, hi), ...]")
    if isinstance(zs, (str, bytes)) or not isinstance(zs, Sequence):
        raise TypeError(f"zs must be a sequence of real numbers (the inputs x, x'); got "
                        f"{type(zs).__name__}")
    if len(zs) > MAX_INTERVALS:
        raise ValueError(f"zs must hold at most {MAX_INTERVALS} inputs; got {len(zs)}")
    zs = [_mp_real(z, "zs entry") for z in zs]
    one, half, quarter = mpmath.mpf(1), mpmath.mpf(1) / 2, mpmath.mpf(1) / 4
    pts = {-one, mpmath.mpf(0), one}
    tol = mpmath.mpf(10) ** (-mpmath.mp.dps + 8)
    for sgn in (1, -1):
        e_1, e_h, e_q = (_pieces(intervals, sgn * v) for v in (one, half, quarter))
        if not len(e_1) == len(e_h) == len(e_q):
            raise ValueError("intervals(a) must have the same number of intervals on each half")
        for k in range(len(e_1)):
            for j in range(2):
                v1, vh, vq = e_1[k][j], e_h[k][j], e_q[k][j]
                e1 = (v1 - vh) / (sgn * half)        # slope in a
                e0 = v1 - e1 * sgn
                if abs(e0 + e1 * sgn * quarter - vq) > tol * (1 + abs(v1)):
                    raise ValueError("an endpoint of I_a is not affine in a on the half "
                                     f"{'a > 0' if sgn > 0 else 'a < 0'}; this module needs affine endpoints")
                for z in zs:
                    if z != e1:
                        r = e0 / (z - e1)
                        if 0 < sgn * r < 1:
                            pts.add(r)
    return sorted(pts)


def _inner_rf(intervals: _Intervals, aa: mpmath.mpf, X: mpmath.mpf, XP: mpmath.mpf) -> mpmath.mpf:
    """(1/2) int_{I_a} (a x - b)_+ (a x' - b)_+ db / |I_a| (exact antiderivative per piece)."""
    p, q = aa * X, aa * XP
    m = min(p, q)
    F = lambda t: p * q * t - (p + q) * t * t / 2 + t**3 / 3  # noqa: E731
    ivs = _pieces(intervals, aa)
    length = sum(hi - lo for lo, hi in ivs)
    val = mpmath.mpf(0)
    for lo, hi in ivs:
        top = min(hi, m)
        if top > lo:
            val += F(top) - F(lo)
    return val / (2 * length)


def rf_kernel_intervals_mp(x: float, xp: float, intervals: _Intervals, dps: int = 40) -> mpmath.mpf:
    """K_RF(x, x') = E[(A x - B)_+ (A x' - B)_+], A ~ U[-1, 1], B | A ~ U(I_A), by quadrature
    of the definition at ``dps`` digits (claim W3b, general Thm 5)."""
    dps = require_dps(dps)
    intervals = require_callable(intervals, "intervals", "(a) -> [(lo, hi), ...]")
    X, XP = _mp_real(x, "x"), _mp_real(xp, "x'")
    with mpmath.workdps(dps + 10):
        # mpmath's quadrature stops on an ABSOLUTE error estimate: scale the integrand to O(1)
        S = (1 + abs(X)) * (1 + abs(XP))
        pts = interval_breakpoints(intervals, (X, XP))
        val = mpmath.quad(lambda aa: _inner_rf(intervals, aa, X, XP) / S, pts,
                          method="gauss-legendre") * S
    with mpmath.workdps(dps):
        return +val


def rkhs_weight_intervals_mp(x: float, intervals: _Intervals, dps: int = 40) -> mpmath.mpf:
    """omega(x) = int |a|^3 p0(a, a x) da, p0(a, b) = (1/2) 1{b in I_a} / |I_a|, by
    quadrature at ``dps`` digits cut where a x meets an endpoint of I_a (claim W3b)."""
    dps = require_dps(dps)
    intervals = require_callable(intervals, "intervals", "(a) -> [(lo, hi), ...]")
    X = _mp_real(x, "x")
    with mpmath.workdps(dps + 10):
        def f(aa: mpmath.mpf) -> mpmath.mpf:
            ivs = _pieces(intervals, aa)
            inside = any(lo <= aa * X <= hi for lo, hi in ivs)
            return abs(aa) ** 3 / (2 * sum(hi - lo for lo, hi in ivs)) if inside else mpmath.mpf(0)
        val = mpmath.quad(f, interval_breakpoints(intervals, (X,)), method="gauss-legendre")
    with mpmath.workdps(dps):
        return +val
