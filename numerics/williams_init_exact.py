"""EXACT references for Thm 5 of Williams et al. (NeurIPS 2019) under its general hypothesis
(claim W3b): A ~ U([-1, 1]), B | A uniform on I_A, a disjoint union of intervals whose
endpoints are affine in |a| on each half a < 0, a > 0.  Rational arithmetic, no quadrature
error: the certified sub-checks of W3b compare the derived closed forms (as Arb balls) with
these values, so agreement is a proof at the instance and disagreement a disproof.

From the DEFINITIONS, independent of the SymPy derivations (``derivations.williams_thm5``):
on the half a = sgn u (u in (0, 1], density p_A), with p = a x, q = a x',

    K_RF(x, x') = sum_sgn int_0^1 p_A / |I_a| sum_k int_{I_k(a)} (p - b)_+ (q - b)_+ db du,
    omega(x)    = sum_sgn int_0^1 p_A u^3 / |I_a| 1{a x in I_a} du.

The integrand in b is the polynomial (p - b)(q - b) below b = min(p, q) = u min(sgn x,
sgn x') and 0 above, so the b-integral over I_k is F(min(hi_k, u m)) - F(lo_k) (or 0), F
its antiderivative: a cubic polynomial in u on every u-interval between the CUTS where
u m meets an endpoint (u = e0 / (m - e1), rational).  |I_a| = L0 + L1 u, so on each
u-interval the integrand is a polynomial (L1 = 0, or L0 = 0 where the polynomial
vanishes at u = 0) and its exact antiderivative gives the value.

With ``side`` = +-1 the point is the germ x = x0 + side t, t -> 0+: every coefficient
above is a power series in t with rational coefficients (the cuts are rational functions
of t), the case on each u-interval is decided by the sign of the germ of its condition at
the interval's midpoint (first non-zero coefficient), and the result is the exact Taylor
series of K(x0 + side t, x') in t: its coefficients give the one-sided derivatives
d^k K / dx^k (x0 side) = k! c_k side^k, hence exact jumps at an edge of omega.  The
quantities whose signs are decided are ratios of polynomials of degree <= 3 in t over
denominators that do not vanish at t = 0, so a germ whose first ``order + 4``
coefficients vanish is identically 0 (and then either case gives the same integral:
a b-interval of length 0).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Sequence

from numerics.validation import as_float_scalar

__all__ = ["affine_intervals", "rf_kernel_intervals_series",
           "rf_kernel_intervals_exact", "rkhs_weight_intervals_exact",
           "one_sided_derivatives", "MAX_SERIES_ORDER"]

#: highest Taylor order of :func:`rf_kernel_intervals_series`
MAX_SERIES_ORDER = 8
_MAX_INTERVALS = 16
_GUARD = 4      # extra series terms for the sign decisions (see the module docstring)

#: one interval of I_a on one half: ((lo0, lo1), (hi0, hi1)), lo(a) = lo0 + lo1 |a|
AffineInterval = tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction]]
_Series = list[Fraction]


# ------------------------------------------------------------- truncated power series in t
def _const(c: Fraction, n: int) -> _Series:
    return [Fraction(c)] + [Fraction(0)] * (n - 1)


def _add(s: _Series, r: _Series) -> _Series:
    return [a + b for a, b in zip(s, r)]


def _sub(s: _Series, r: _Series) -> _Series:
    return [a - b for a, b in zip(s, r)]


def _scale(s: _Series, c: Fraction) -> _Series:
    return [c * a for a in s]


def _mul(s: _Series, r: _Series) -> _Series:
    n = len(s)
    return [sum((s[i] * r[k - i] for i in range(k + 1)), Fraction(0)) for k in range(n)]


def _inv(s: _Series) -> _Series:
    if s[0] == 0:
        raise ZeroDivisionError("series with zero constant term")
    n, out = len(s), [Fraction(1) / s[0]]
    for k in range(1, n):
        out.append(-sum((s[i] * out[k - i] for i in range(1, k + 1)), Fraction(0)) / s[0])
    return out


def _sign(s: _Series) -> int:
    """The sign of the germ for t -> 0+ (0: identically zero to the kept order)."""
    for c in s:
        if c:
            return 1 if c > 0 else -1
    return 0


# ------------------------------------------------ polynomials in u with series coefficients
def _poly_add(P: list[_Series], Q: list[_Series]) -> list[_Series]:
    n = len((P or Q)[0])
    z = _const(Fraction(0), n)
    return [_add(P[i] if i < len(P) else z, Q[i] if i < len(Q) else z) for i in range(max(len(P), len(Q)))]


def _poly_mul(P: list[_Series], Q: list[_Series]) -> list[_Series]:
    n = len(P[0])
    out = [_const(Fraction(0), n) for _ in range(len(P) + len(Q) - 1)]
    for i, p in enumerate(P):
        for j, q in enumerate(Q):
            out[i + j] = _add(out[i + j], _mul(p, q))
    return out


def _poly_at(P: list[_Series], u: _Series) -> _Series:
    acc = P[-1]
    for c in reversed(P[:-1]):
        acc = _add(_mul(acc, u), c)
    return acc


def _affine(c0: Any, c1: Any, n: int) -> list[_Series]:
    """c0 + c1 u (c0, c1: numbers or series)."""
    s0 = c0 if isinstance(c0, list) else _const(c0, n)
    s1 = c1 if isinstance(c1, list) else _const(c1, n)
    return [s0, s1]


# ------------------------------------------------------------------ the family's endpoints
def affine_intervals(intervals: Callable[[Fraction], Sequence[tuple[Any, Any]]]) -> dict[int, list[AffineInterval]]:
    """Per half sgn = +1 (a > 0), -1 (a < 0): the intervals of I_a as exact affine functions
    of u = |a|, read from ``intervals`` (a -> [(lo, hi), ...], EXACT: called with Fractions,
    returning Fractions or ints) at u = 1 and 1/2 and checked at u = 1/4 and 3/4 (else
    ValueError: an endpoint not affine in |a|)."""
    if not callable(intervals):
        raise TypeError(f"intervals must be a callable a -> [(lo, hi), ...]; got {type(intervals).__name__}")

    def at(a: Fraction) -> list[tuple[Fraction, Fraction]]:
        raw = intervals(a)
        try:
            ivs = sorted((_exact(lo), _exact(hi)) for lo, hi in raw)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"intervals(a) must return exact (lo, hi) pairs (Fraction or int) for a "
                            f"Fraction a; {exc}") from None
        if not 1 <= len(ivs) <= _MAX_INTERVALS:
            raise ValueError(f"intervals(a) must return 1..{_MAX_INTERVALS} intervals; got {len(ivs)}")
        for k, (lo, hi) in enumerate(ivs):
            if not lo < hi or (k and lo < ivs[k - 1][1]):
                raise ValueError(f"intervals(a) at a = {a}: need lo < hi and disjoint intervals; "
                                 f"got {ivs}")
        return ivs
    out: dict[int, list[AffineInterval]] = {}
    for sgn in (1, -1):
        v1, vh = at(Fraction(sgn)), at(Fraction(sgn, 2))
        if len(v1) != len(vh):
            raise ValueError("intervals(a) must have the same number of intervals on each half")
        half = []
        for (l1, h1), (lh, hh) in zip(v1, vh):
            slope_l, slope_h = 2 * (l1 - lh), 2 * (h1 - hh)
            half.append(((l1 - slope_l, slope_l), (h1 - slope_h, slope_h)))
        for q in (Fraction(1, 4), Fraction(3, 4)):
            got = at(sgn * q)
            want = [(lo0 + lo1 * q, hi0 + hi1 * q) for (lo0, lo1), (hi0, hi1) in half]
            if got != want:
                raise ValueError(f"an endpoint of I_a is not affine in |a| on the half "
                                 f"{'a > 0' if sgn > 0 else 'a < 0'} (at a = {sgn * q}: {got} != {want})")
        out[sgn] = half
    return out


def _exact(v: Any) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, Fraction)):
        raise TypeError(f"an endpoint must be an int or a Fraction; got {type(v).__name__}")
    return Fraction(v)


def _check_family(family: Any) -> dict[int, list[AffineInterval]]:
    if not isinstance(family, dict) or set(family) != {1, -1}:
        raise TypeError("family must be the dict {1: [...], -1: [...]} of affine_intervals(...)")
    return family


# ----------------------------------------------------------------------- the computation
def _cuts(m: _Series, half: list[AffineInterval], n: int) -> list[_Series]:
    """0, 1 and the u in (0, 1) where u m meets an endpoint, as series, sorted by germ."""
    cuts = [_const(Fraction(0), n), _const(Fraction(1), n)]
    for ends in half:
        for e0, e1 in ends:
            den = _sub(m, _const(e1, n))
            if e0 == 0 or den[0] == 0:
                continue         # u m - e(u) = u (m - e1) has no root in (0, 1) (or -> oo)
            r = _scale(_inv(den), e0)
            if _sign(r) > 0 and _sign(_sub(r, cuts[1])) < 0:
                cuts.append(r)
    out: list[_Series] = []
    # lexicographic order of the coefficients is the order of the germs for t -> 0+
    for c in sorted(cuts, key=lambda s: tuple(s)):
        if not out or _sign(_sub(c, out[-1])) != 0:
            out.append(c)
    return out


def _antiderivative_at(P: list[_Series], lo: _Series, hi: _Series) -> _Series:
    """int_lo^hi P(u) du for the polynomial P (series coefficients), lo, hi series."""
    Q = [_const(Fraction(0), len(lo))] + [_scale(c, Fraction(1, i + 1)) for i, c in enumerate(P)]
    return _sub(_poly_at(Q, hi), _poly_at(Q, lo))


def _divide_by_length(P: list[_Series], L0: Fraction, L1: Fraction) -> list[_Series]:
    """P(u) / (L0 + L1 u) as a polynomial: L1 = 0, or L0 = 0 with P(0) = 0 exactly."""
    if L1 == 0:
        return [_scale(c, 1 / L0) for c in P]
    if L0 == 0:
        if any(P[0]):
            raise ValueError("|I_a| = L1 |a| but the integrand does not vanish at a = 0")
        return [_scale(c, 1 / L1) for c in P[1:]]
    raise ValueError("|I_a| = L0 + L1 |a| with L0, L1 both non-zero: the antiderivative has a "
                     "logarithm; this exact reference covers |I_a| constant or proportional to |a|")


def _length(half: list[AffineInterval]) -> tuple[Fraction, Fraction]:
    return (sum((hi0 - lo0 for (lo0, _), (hi0, _) in half), Fraction(0)),
            sum((hi1 - lo1 for (_, lo1), (_, hi1) in half), Fraction(0)))


def _kernel_series(x0: Fraction, side: int, xp: Fraction, family: dict, density: Fraction, n: int) -> _Series:
    total = _const(Fraction(0), n)
    for sgn in (1, -1):
        half = family[sgn]
        X = [sgn * x0] + ([Fraction(sgn * side)] if n > 1 else []) + [Fraction(0)] * (n - 2)
        XP = _const(sgn * xp, n)
        m = X if _sign(_sub(X, XP)) <= 0 else XP
        cuts = _cuts(m, half, n)
        L0, L1 = _length(half)
        p, q = _affine(0, X, n), _affine(0, XP, n)                 # p = u X, q = u XP
        bm = _affine(0, m, n)                                      # b = u m
        for lo_u, hi_u in zip(cuts[:-1], cuts[1:]):
            mid = _scale(_add(lo_u, hi_u), Fraction(1, 2))
            integrand: list[_Series] = [_const(Fraction(0), n)]
            bm_mid = _poly_at(bm, mid)
            for (lo0, lo1), (hi0, hi1) in half:
                lo, hi = _affine(lo0, lo1, n), _affine(hi0, hi1, n)
                if _sign(_sub(bm_mid, _poly_at(lo, mid))) <= 0:
                    continue                                       # u m <= lo: empty
                top = hi if _sign(_sub(bm_mid, _poly_at(hi, mid))) >= 0 else bm

                def F(b: list[_Series]) -> list[_Series]:          # int (p - b)(q - b) db
                    b2 = _poly_mul(b, b)
                    return _poly_add(_poly_add(_poly_mul(_poly_mul(p, q), b),
                                               [_scale(c, Fraction(-1, 2)) for c in _poly_mul(_poly_add(p, q), b2)]),
                                     [_scale(c, Fraction(1, 3)) for c in _poly_mul(b2, b)])
                integrand = _poly_add(integrand, _poly_add(F(top), [_scale(c, -1) for c in F(lo)]))
            integrand = _divide_by_length([_scale(c, density) for c in integrand], L0, L1)
            total = _add(total, _antiderivative_at(integrand, lo_u, hi_u))
    return total


def _fraction(v: Any, name: str) -> Fraction:
    if isinstance(v, Fraction):
        return v
    return Fraction(as_float_scalar(v, name))


def _side(side: Any) -> int:
    if isinstance(side, bool) or not isinstance(side, int) or side not in (1, -1):
        raise ValueError(f"side must be the int +1 (x > x0) or -1 (x < x0); got {side!r:.40}")
    return side


def _density(density: Any) -> Fraction:
    if isinstance(density, bool) or not isinstance(density, (int, Fraction)) or not density > 0:
        raise ValueError(f"density (p_A on [-1, 1], exact) must be a positive int or Fraction; got {density!r}")
    return Fraction(density)


def rf_kernel_intervals_series(x0: Any, xp: Any, family: dict, side: int, order: int = 3,
                               density: Any = Fraction(1, 2)) -> list[Fraction]:
    """The exact Taylor coefficients c_0..c_order of t -> K_RF(x0 + side t, x') for t -> 0+
    (``side`` = +-1), K_RF of the family (:func:`affine_intervals`), A ~ p_A = ``density``
    on [-1, 1] (claim W3b, general Thm 5).  Floats are taken exactly."""
    side = _side(side)
    if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= MAX_SERIES_ORDER:
        raise ValueError(f"order must be an integer in 0..{MAX_SERIES_ORDER}; got {order!r}")
    s = _kernel_series(_fraction(x0, "x0"), side, _fraction(xp, "x'"), _check_family(family),
                       _density(density), order + 1 + _GUARD)
    return s[:order + 1]


def rf_kernel_intervals_exact(x: Any, xp: Any, family: dict, density: Any = Fraction(1, 2)) -> Fraction:
    """K_RF(x, x') of the family, exactly (a rational number; floats taken exactly)."""
    return _kernel_series(_fraction(x, "x"), 1, _fraction(xp, "x'"), _check_family(family),
                          _density(density), 1)[0]


def one_sided_derivatives(coefficients: Sequence[Fraction], side: int) -> list[Fraction]:
    """d^k/dx^k at x0 from the side ``side`` of a function with Taylor coefficients c_k in
    t = side (x - x0): k! c_k side^k (exact for ints and Fractions)."""
    side = _side(side)
    if not isinstance(coefficients, (list, tuple)) or len(coefficients) > MAX_SERIES_ORDER + 1:
        raise TypeError(f"coefficients must be a list of at most {MAX_SERIES_ORDER + 1} Taylor "
                        f"coefficients; got {type(coefficients).__name__}")
    if not all(isinstance(c, (int, Fraction)) and not isinstance(c, bool) for c in coefficients):
        raise TypeError("coefficients must be exact numbers (int or Fraction)")
    out, fact = [], 1
    for k, c in enumerate(coefficients):
        fact *= max(k, 1)
        out.append(fact * c * side ** k)
    return out


def rkhs_weight_intervals_exact(x: Any, family: dict, density: Any = Fraction(1, 2)) -> Fraction:
    """omega(x) = int |a|^3 p0(a, a x) da of the family, exactly, with the intervals closed
    (p0's value on the null set where a x is an endpoint is a convention; closed, as in
    ``numerics.williams_init``)."""
    X0, dens, fam = _fraction(x, "x"), _density(density), _check_family(family)
    total = Fraction(0)
    for sgn in (1, -1):
        half = fam[sgn]
        X = _const(sgn * X0, 1)
        cuts = _cuts(X, half, 1)
        L0, L1 = _length(half)
        for lo_u, hi_u in zip(cuts[:-1], cuts[1:]):
            mid = (lo_u[0] + hi_u[0]) / 2
            if any(lo0 + lo1 * mid <= mid * X[0] <= hi0 + hi1 * mid for (lo0, lo1), (hi0, hi1) in half):
                cube = [[Fraction(0)], [Fraction(0)], [Fraction(0)], [dens]]
                total += _antiderivative_at(_divide_by_length(cube, L0, L1), lo_u, hi_u)[0]
    return total
