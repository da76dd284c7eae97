"""Certified (Arb ball) integrals of the DEFINITIONS behind the closed forms: the kernels of
Williams et al. (2019, Sec. 4; claims W3a, W3c, W3d, W3e) and the sphere constant of
Hajjar & Chizat (2023, Thm 4.3; claim H1f).

Every value is an ``flint.arb`` ball guaranteed to contain the true value (python-flint's
``acb.integral``, FLINT's rigorous Gauss-Legendre integration with error bounds from
analyticity on ellipses).  The integrands are piecewise analytic: each ReLU unit
``(a x - b)_+`` has a kink, and the integration domain is cut EXACTLY at the kinks
(their order is decided in exact rational arithmetic from the float inputs, their
locations enter as balls), so every piece is analytic and the activity pattern of the
units on it is decided once, at an interior point.  A pattern a ball cannot decide raises
:class:`UndecidableCondition`; an enclosure that is not finite or too wide raises
:class:`UncertifiedError`; never a guess.

- :func:`rf_kernel_ball` K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+];
- :func:`active_probability_ball` P(a x > b, a x' > b);
- :func:`ntk_kernel_ball` K_NTK(x, x') = E <grad_theta f(x), grad_theta f(x')> for one unit
  f = c (a x - b)_+, theta = (c, a, b), from its gradient (never K_RF + ... P);
- :func:`rkhs_weight_ball` omega(x) = int |a|^k p_0(a, a x) da;
- :func:`second_moment_ball` E a^2 of the init;
- :func:`positive_part_mean_ball` E_{u ~ Unif(S^{k-1})}[(u . e)_+];
- :func:`phi_tilde_ball` phi~(theta; phi) = E[(cos th cos ph R + sin th sin ph S)_+] and its
  theta-derivative (H1e);
- :func:`inner_expectation_ball` its inner expectation E_R[(c R + y)_+] and partials (H1e).

This module imports neither SymPy nor the ``verify`` package.
"""
from __future__ import annotations

import contextlib
from fractions import Fraction
from functools import lru_cache, wraps
from typing import Any, Callable, Iterator, Sequence

import numpy as np

__all__ = ["UndecidableCondition", "UncertifiedError", "working_precision", "exact_ball",
           "certified_integral", "rf_kernel_ball", "active_probability_ball", "ntk_kernel_ball",
           "rkhs_weight_ball", "second_moment_ball", "positive_part_mean_ball", "phi_tilde_ball",
           "inner_expectation_ball", "flint_module", "ball_cache",
           "clear_ball_caches", "INITS", "MAX_PREC", "MAX_SPHERE_DIM"]

INITS = ("uniform", "gaussian")
MAX_PREC = 8192            # bits; beyond, one special-function call takes seconds
MAX_SPHERE_DIM = 10 ** 7   # sin^(k-2) integrals beyond: seconds per value
MAX_PIECES = 10 ** 4
MAX_EVAL_LIMIT = 10 ** 8
_GAUSS_CUT = 24            # |a|, r <= 24 for the gaussian init; tails bounded below


class UndecidableCondition(ValueError):
    """A condition (a comparison of balls) that the balls cannot decide: refused, never
    guessed.  Raise the precision or move the point off the boundary."""


class UncertifiedError(ValueError):
    """An enclosure that is not finite or wider than asked (the integral did not converge
    within the work limits at this precision)."""


def flint_module() -> Any:
    """The python-flint module (Arb), imported on first use: importing ``numerics`` or
    ``verify`` does not load it.  The one place the suite imports it."""
    import flint
    return flint


@contextlib.contextmanager
def working_precision(prec: int) -> Iterator[int]:
    """Set Arb's working precision (bits) within the block, restoring it after; the block
    starts and ends with FLINT's caches empty, so its balls' bits depend on its inputs only.

    FLINT caches per thread the Gauss-Legendre nodes of ``acb.integral`` and constants
    (pi, log 2, ...) at the highest precision asked so far (the nodes at max(prec, 2 old + 30)
    bits) and rounds them to each later request: without the reset, a ball's midpoint and
    radius differ in their last bits (~1e-35 relative at 128 bits) with the computations
    that ran earlier in the process.  The reset costs the recomputation of those caches
    (measured: no change in H1e's CPU time); see docs/certification.md."""
    if isinstance(prec, bool) or not isinstance(prec, (int, np.integer)) or not 16 <= prec <= MAX_PREC:
        raise ValueError(f"prec (Arb working precision in bits) must be an integer in "
                         f"16..{MAX_PREC}; got {prec!r}")
    ctx = flint_module().ctx
    old = ctx.prec
    ctx.cleanup()
    ctx.prec = int(prec)
    try:
        yield int(prec)
    finally:
        ctx.cleanup()
        ctx.prec = old


def ball_cache(maxsize: int | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``functools.lru_cache(maxsize)`` for a function of hashable arguments returning
    Arb balls, with FLINT's caches emptied before and after every call, hit or miss: a
    miss computes from empty caches (the value depends on the arguments only) and a hit
    leaves the caller in the same state as a miss (see :func:`working_precision`).  Not
    for functions called inside an integrand (the reset would drop the integral's nodes)."""
    if maxsize is not None and (isinstance(maxsize, bool) or not isinstance(maxsize, int)
                                or maxsize < 1):
        raise ValueError(f"ball_cache: maxsize must be None or a positive integer; got {maxsize!r}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        cached = lru_cache(maxsize=maxsize)(fn)

        @wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            ctx = flint_module().ctx
            ctx.cleanup()
            try:
                return cached(*args, **kwargs)
            finally:
                ctx.cleanup()
        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        call.cache_info = cached.cache_info  # type: ignore[attr-defined]
        _BALL_CACHES.append(cached)
        return call
    return decorate


_BALL_CACHES: list[Any] = []


def clear_ball_caches() -> None:
    """Empty every :func:`ball_cache` (a later call recomputes from empty FLINT caches)."""
    for cached in _BALL_CACHES:
        cached.cache_clear()


def exact_ball(v: Any, name: str = "value") -> Any:
    """The exact ``arb`` of a finite float / int / Fraction (a Fraction p/q is exact only
    when q is a power of 2; otherwise a ball of the working precision)."""
    flint = flint_module()
    if isinstance(v, flint.arb):
        return v
    if isinstance(v, bool):
        raise TypeError(f"{name} must be a number, not a bool")
    if isinstance(v, (int, np.integer)):
        return flint.arb(int(v))
    if isinstance(v, Fraction):
        return flint.arb(v.numerator) / v.denominator
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number; got {type(v).__name__}") from None
    if not np.isfinite(f):
        raise ValueError(f"{name} must be finite; got {f!r}")
    return flint.arb(f)


def _finite_input(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number (float or int); got {type(v).__name__}")
    f = float(v)
    if not np.isfinite(f) or abs(f) > 1e12:
        raise ValueError(f"{name} must be finite with |{name}| <= 1e12; got {f!r}")
    return f


def _init(init: Any) -> str:
    if not isinstance(init, str) or init not in INITS:
        raise ValueError(f"init must be one of {INITS}; got {init!r}")
    return init


def _rel_radius(v: Any) -> float | None:
    """``max_rel_radius``: None (no bound) or a real number in (0, 1]."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"max_rel_radius must be None or a real number in (0, 1]; got "
                        f"{type(v).__name__}")
    if not 0 < float(v) <= 1:
        raise ValueError(f"max_rel_radius must be in (0, 1] (a relative radius); got {v!r}")
    return float(v)


def _pieces(pieces: Any) -> list[tuple[Any, Any, Callable]]:
    if not isinstance(pieces, (list, tuple)) or not pieces:
        raise TypeError("pieces must be a non-empty list of (lo, hi, f) triples; got "
                        f"{type(pieces).__name__}")
    if len(pieces) > MAX_PIECES:
        raise ValueError(f"pieces has {len(pieces)} entries (at most {MAX_PIECES}): one "
                         "acb.integral per piece; merge pieces that share an analytic integrand")
    out = []
    for i, p in enumerate(pieces):
        if not isinstance(p, (list, tuple)) or len(p) != 3 or not callable(p[2]):
            raise TypeError(f"pieces[{i}] must be a triple (lo, hi, f) with f(z, analytic) "
                            f"callable; got {p!r:.80}")
        out.append(tuple(p))
    return out


def _check_ball(v: Any, what: str, max_rel_radius: float | None) -> Any:
    max_rel_radius = _rel_radius(max_rel_radius)
    if not v.is_finite():
        raise UncertifiedError(f"{what}: the enclosure {v} is not finite (the integral did "
                               "not converge within the work limits; raise prec)")
    if max_rel_radius is not None:
        mid = abs(float(v.mid()))
        rad = float(v.rad())
        if rad > max_rel_radius * mid:
            raise UncertifiedError(f"{what}: the enclosure {v} has relative radius "
                                   f"{rad / max(mid, 1e-300):.3g} > {max_rel_radius:g}; raise prec")
    return v


def certified_integral(pieces: Sequence[tuple[Any, Any, Callable[[Any, bool], Any]]], *,
                       what: str = "integral", max_rel_radius: float | None = None,
                       eval_limit: int | None = None) -> Any:
    """sum over ``pieces`` (lo, hi, f) of int_lo^hi f, each by ``acb.integral`` (f(z,
    analytic) must be analytic on a neighbourhood of [lo, hi]: cut at every kink); the
    endpoints may be balls.  Returns the real ``arb`` ball; raises :class:`UncertifiedError`
    if it is not finite, has a non-zero imaginary part, or is wider than
    ``max_rel_radius`` (relative)."""
    flint = flint_module()
    pieces = _pieces(pieces)
    if not isinstance(what, str):
        raise TypeError(f"what must be a string (the integral's name); got {type(what).__name__}")
    max_rel_radius = _rel_radius(max_rel_radius)
    if eval_limit is not None and (isinstance(eval_limit, bool) or not isinstance(
            eval_limit, (int, np.integer)) or not 1 <= eval_limit <= MAX_EVAL_LIMIT):
        raise ValueError(f"eval_limit must be None or an integer in 1..{MAX_EVAL_LIMIT}; "
                         f"got {eval_limit!r}")
    total = flint.acb(0)
    # acb.integral's default absolute goal 2^-prec would stop a small integral (omega(1e3)
    # ~ 1e-13) at a relative radius 2^-prec / value: ask for 2^-(2 prec) absolute
    kw: dict[str, Any] = {"abs_tol": flint.arb(2) ** (-2 * flint.ctx.prec)}
    if eval_limit is not None:
        kw["eval_limit"] = int(eval_limit)
    for lo, hi, f in pieces:
        lo, hi = (x if isinstance(x, (flint.arb, flint.acb)) else exact_ball(x, "a piece's endpoint")
                  for x in (lo, hi))
        total += flint.acb.integral(f, lo, hi, **kw)
    if not total.imag.contains(0):
        raise UncertifiedError(f"{what}: the integral of a real integrand has imaginary part "
                               f"{total.imag}")
    return _check_ball(total.real, what, max_rel_radius)


# ------------------------------------------------------------------ one ReLU unit
def _relu_unit_gradient(a: Any, b: Any, c: Any, x: Any, active: bool) -> tuple[Any, Any, Any]:
    """(d/dc, d/da, d/db) of the unit c (a x - b)_+ at a point (a, b) where the unit is
    ``active`` (a x > b) or not (the derivative of (u)_+ is 1[u > 0])."""
    if not active:
        return (0, 0, 0)
    return (a * x - b, c * x, -c)


def _rf_integrand(xs: tuple[float, float]) -> Callable:
    X, XP = (exact_ball(v) for v in xs)

    def g(a: Any, b: Any, act: tuple[bool, bool]) -> Any:
        u = (a * X - b) if act[0] else 0
        v = (a * XP - b) if act[1] else 0
        return u * v
    return g


def _prob_integrand(xs: tuple[float, float]) -> Callable:
    def g(a: Any, b: Any, act: tuple[bool, bool]) -> Any:
        return 1 if (act[0] and act[1]) else 0
    return g


def _ntk_integrand(xs: tuple[float, float], sigma_c: float) -> Callable:
    # <grad f(x), grad f(x')> is affine in c^2, and c is independent of (a, b): the
    # expectation over c replaces c^2 by E c^2 = sigma_c^2, i.e. evaluate at c = sigma_c.
    X, XP = (exact_ball(v) for v in xs)
    C = exact_ball(sigma_c, "sigma_c")

    def g(a: Any, b: Any, act: tuple[bool, bool]) -> Any:
        gx = _relu_unit_gradient(a, b, C, X, act[0])
        gxp = _relu_unit_gradient(a, b, C, XP, act[1])
        return gx[0] * gxp[0] + gx[1] * gxp[1] + gx[2] * gxp[2]
    return g


# ----------------------------------------------------- (a, b) ~ U([-1, 1]^2), density 1/4
def _uniform_expectation(xs: tuple[float, ...], g: Callable, what: str) -> Any:
    """E g(a, b, activity) over (a, b) ~ U([-1, 1]^2): outer integral over a cut at 0 and at
    a = +-1/x_i (where the kink b = a x_i leaves [-1, 1]), inner over b cut at b = a x_i.
    The cut structure on an a-piece is decided exactly at its rational midpoint."""
    flint = flint_module()
    Xq = [Fraction(v) for v in xs]
    cuts = {Fraction(-1), Fraction(0), Fraction(1)}
    for v in Xq:
        if abs(v) > 1:
            cuts |= {1 / v, -1 / v}
    cuts_sorted = sorted(cuts)
    pieces = []
    for lo, hi in zip(cuts_sorted[:-1], cuts_sorted[1:]):
        pieces.append((_frac_ball(lo), _frac_ball(hi), _uniform_inner(Xq, g, (lo + hi) / 2)))
    return certified_integral(pieces, what=what) / 4


def _frac_ball(q: Fraction) -> Any:
    return flint_module().arb(q.numerator) / q.denominator


def _uniform_inner(Xq: list[Fraction], g: Callable, a_mid: Fraction) -> Callable:
    """F(a) = int_{-1}^{1} g db on an a-piece whose interior point is ``a_mid``: b cut at
    the kinks a x_i inside (-1, 1); each b-piece's activity pattern decided at its
    (exact) midpoint."""
    flint = flint_module()
    # b-breakpoints as (value at a_mid, function of a)
    bps = [(Fraction(-1), lambda a: -1), (Fraction(1), lambda a: 1)]
    for i, v in enumerate(Xq):
        if -1 < a_mid * v < 1:
            bps.append((a_mid * v, lambda a, v=v: a * _frac_ball(v)))
    bps.sort(key=lambda t: t[0])
    segs = []
    for (lo_v, lo_f), (hi_v, hi_f) in zip(bps[:-1], bps[1:]):
        if lo_v == hi_v:
            continue
        b_mid = (lo_v + hi_v) / 2
        act = tuple(a_mid * v > b_mid for v in Xq)
        segs.append((lo_f, hi_f, act))

    def F(a: Any, analytic: bool) -> Any:
        total = flint.acb(0)
        for lo_f, hi_f, act in segs:
            total += flint.acb.integral(lambda b, _an, act=act: flint.acb(g(a, b, act)),
                                        lo_f(a), hi_f(a))
        return total
    return F


# ---------------------------------------------------------- (a, b) ~ N(0, I_2), polar
@ball_cache(maxsize=16)
def _radial_moments(prec: int, degree: int) -> tuple[Any, ...]:
    """M_k = int_0^oo r^(k+1) e^(-r^2/2) dr, k = 0..degree: acb.integral on [0, 24] plus
    the tail as a ball [0, 2 e^(-144)] (for r >= 24 and k <= 8, r^k <= e^(r^2/4), so the
    tail is <= int_24^oo r e^(-r^2/4) dr = 2 e^(-144))."""
    flint = flint_module()
    if degree > 8:
        raise ValueError("radial degree must be <= 8 (the tail bound assumes it)")
    tail = flint.arb(0, 2 * flint.arb(-144).exp().upper())  # [-t, t] contains [0, t]
    return tuple(certified_integral([(0, _GAUSS_CUT, lambda r, _, k=k: r ** (k + 1) * (-r * r / 2).exp())],
                                    what=f"radial moment M_{k}") + tail for k in range(degree + 1))


def _radial_rule(prec: int, degree: int) -> tuple[list[int], list[Any]]:
    """Nodes r_j = 1..degree+1 and weights w_j with sum_j w_j h(r_j) = int_0^oo h(r) r
    e^(-r^2/2) dr / (2 pi) EXACTLY for every polynomial h of degree <= ``degree`` (Lagrange
    interpolation against the certified moments)."""
    flint = flint_module()
    M = _radial_moments(prec, degree)
    nodes = list(range(1, degree + 2))
    weights = []
    for j in nodes:
        # coefficients of the Lagrange basis polynomial L_j(r) = prod_{m != j} (r - m)/(j - m)
        coef = [flint.arb(1)]
        for m in nodes:
            if m == j:
                continue
            new = [flint.arb(0)] * (len(coef) + 1)
            for p, cp in enumerate(coef):
                new[p + 1] += cp / (j - m)
                new[p] -= cp * m / (j - m)
            coef = new
        weights.append(sum((cp * M[p] for p, cp in enumerate(coef)), flint.arb(0)) / (2 * flint.arb.pi()))
    return nodes, weights


def _gaussian_expectation(xs: tuple[float, ...], g: Callable, degree: int, what: str) -> Any:
    """E g(a, b, activity) over (a, b) ~ N(0, I_2) in polar coordinates (a, b) = r (cos t,
    sin t), density e^(-r^2/2) r dr dt / (2 pi).  The unit a x - b = r (x cos t - sin t)
    is positively homogeneous, so on each angular piece g is a polynomial in r of degree
    <= ``degree``, integrated exactly by :func:`_radial_rule`; the angle by acb.integral over
    one period (-3 pi/2, pi/2), where the unit at x is active exactly on the arc
    (atan x - pi, atan x).  The cuts are ordered exactly (all arc starts precede all arc
    ends; both follow the order of the x), so each piece's activity is known exactly."""
    flint = flint_module()
    pi = flint.arb.pi()
    xs_u = sorted(set(xs))
    atans = [flint.arb(v).atan() for v in xs_u]
    cuts = [-3 * pi / 2] + [t - pi for t in atans] + atans + [pi / 2]
    n = len(xs_u)
    # active set after each cut: starts add the unit (in x order), ends remove it
    patterns, active = [], set()
    for j in range(len(cuts) - 1):
        if 1 <= j <= n:
            active.add(xs_u[j - 1])
        elif j > n:
            active.discard(xs_u[j - n - 1])
        patterns.append(tuple(v in active for v in xs))
    nodes, weights = _radial_rule(flint.ctx.prec, degree)
    pieces = []
    for lo, hi, act in zip(cuts[:-1], cuts[1:], patterns):
        def f(t: Any, _an: bool, act: tuple = act) -> Any:
            ct, st = t.cos(), t.sin()
            return sum((w * g(r * ct, r * st, act) for r, w in zip(nodes, weights)), flint.acb(0))
        pieces.append((lo, hi, f))
    return certified_integral(pieces, what=what)


# ------------------------------------------------------------------ public entries
def _kernel(kind: str, x: Any, xp: Any, init: Any, prec: int, sigma_c: Any = None,
            max_rel_radius: float | None = 1e-30) -> Any:
    max_rel_radius = _rel_radius(max_rel_radius)
    p, q = _finite_input(x, "x"), _finite_input(xp, "xp")
    init = _init(init)
    xs = (p, q)
    if kind == "rf":
        g, deg = _rf_integrand(xs), 2
    elif kind == "prob":
        g, deg = _prob_integrand(xs), 0
    else:
        sc = _finite_input(sigma_c, "sigma_c")
        if sc < 0:
            raise ValueError(f"sigma_c must be >= 0; got {sc}")
        g, deg = _ntk_integrand(xs, sc), 2
    what = f"{kind} kernel ({init}) at (x, x') = ({p!r}, {q!r})"
    with working_precision(prec):
        if init == "uniform":
            v = _uniform_expectation(xs, g, what)
        else:
            v = _gaussian_expectation(xs, g, deg, what)
        return _check_ball(v, what, max_rel_radius)


def rf_kernel_ball(x: float, xp: float, init: str = "uniform", prec: int = 128,
                   max_rel_radius: float | None = 1e-30) -> Any:
    """Certified K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+] (Williams et al. 2019; W3a, W3c)
    at float inputs (taken exactly); an ``arb`` ball.  ``max_rel_radius`` (None: no limit)
    refuses a wider ball with :class:`UncertifiedError`."""
    return _kernel("rf", x, xp, init, prec, max_rel_radius=max_rel_radius)


def active_probability_ball(x: float, xp: float, init: str = "uniform", prec: int = 128,
                            max_rel_radius: float | None = 1e-30) -> Any:
    """Certified P(a x > b, a x' > b) (W3d); an ``arb`` ball."""
    return _kernel("prob", x, xp, init, prec, max_rel_radius=max_rel_radius)


def ntk_kernel_ball(x: float, xp: float, init: str = "uniform", sigma_c: float = 1.0,
                    prec: int = 128, max_rel_radius: float | None = 1e-30) -> Any:
    """Certified K_NTK(x, x') = E <grad_theta f(x), grad_theta f(x')> for one unit
    f = c (a x - b)_+, theta = (c, a, b), (a, b) from the init, E c^2 = sigma_c^2 (W3d):
    the expectation of the gradient inner product (:func:`relu_unit_gradient`)."""
    return _kernel("ntk", x, xp, init, prec, sigma_c=sigma_c, max_rel_radius=max_rel_radius)


def rkhs_weight_ball(x: float, init: str = "uniform", exponent: int = 3, prec: int = 128,
                     max_rel_radius: float | None = 1e-30) -> Any:
    """Certified omega(x) = int |a|^exponent p_0(a, a x) da (W3e), p_0 the density of the
    init; the integral cut at a = 0 (|a|) and, uniform, at the support's ends
    |a| = min(1, 1/|x|); gaussian: |a| <= 24 and the tail as a ball (|a|^k e^(-a^2 (1+x^2)/2)
    <= |a| e^(-a^2/4) for |a| >= 24, k <= 8: tail <= 2 e^(-144) / (2 pi) per side)."""
    max_rel_radius = _rel_radius(max_rel_radius)
    flint = flint_module()
    xv = _finite_input(x, "x")
    init = _init(init)
    if isinstance(exponent, bool) or not isinstance(exponent, (int, np.integer)) or not 0 <= exponent <= 8:
        raise ValueError(f"exponent must be an integer in 0..8; got {exponent!r}")
    k = int(exponent)
    what = f"omega({xv!r}) ({init}, exponent {k})"
    with working_precision(prec):
        X = flint.arb(xv)
        if init == "uniform":
            A = _frac_ball(min(Fraction(1), 1 / abs(Fraction(xv))) if xv != 0 else Fraction(1))
            pieces = [(-A, 0, lambda a, _: (-a) ** k / 4), (0, A, lambda a, _: a ** k / 4)]
            v = certified_integral(pieces, what=what)
        else:
            dens = lambda a: (-(a * a + a * a * X * X) / 2).exp() / (2 * flint.arb.pi())  # noqa: E731
            pieces = [(-_GAUSS_CUT, 0, lambda a, _: (-a) ** k * dens(a)),
                      (0, _GAUSS_CUT, lambda a, _: a ** k * dens(a))]
            tail = 2 * flint.arb(-144).exp().upper() / flint.arb.pi()
            v = certified_integral(pieces, what=what) + flint.arb(0, tail.upper())
        return _check_ball(v, what, max_rel_radius)


def second_moment_ball(init: str = "uniform", prec: int = 128) -> Any:
    """Certified E a^2 of the init (W3e): int a^2 p(a) da, p the marginal density of a
    (uniform 1/2 on [-1, 1]; gaussian e^(-a^2/2)/sqrt(2 pi), |a| <= 24 plus the tail ball)."""
    flint = flint_module()
    init = _init(init)
    with working_precision(prec):
        if init == "uniform":
            return certified_integral([(-1, 1, lambda a, _: a * a / 2)], what="E a^2 (uniform)")
        v = certified_integral([(-_GAUSS_CUT, _GAUSS_CUT,
                                 lambda a, _: a * a * (-a * a / 2).exp())], what="E a^2 (gaussian)")
        tail = 4 * flint.arb(-144).exp().upper()
        return (v + flint.arb(0, tail.upper())) / (2 * flint.arb.pi()).sqrt()


def positive_part_mean_ball(k: int, prec: int = 128, max_rel_radius: float | None = 1e-30) -> Any:
    """Certified E_{u ~ Unif(S^{k-1})}[(u . e)_+] (Hajjar & Chizat 2023, H1f).  k = 1:
    S^0 = {-1, 1} with mass 1/2 each, so 1/2 exactly.  k >= 2: the polar angle theta of u
    from e has density proportional to sin^(k-2) theta on [0, pi] (the Jacobian of
    spherical coordinates), and (u . e)_+ = cos(theta)_+, cut at its kink pi/2:
    int_0^(pi/2) cos sin^(k-2) / int_0^pi sin^(k-2)."""
    flint = flint_module()
    max_rel_radius = _rel_radius(max_rel_radius)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_SPHERE_DIM:
        raise ValueError(f"k (the sphere dimension d_H) must be an integer in 1..{MAX_SPHERE_DIM}; "
                         f"got {k!r}")
    k = int(k)
    with working_precision(prec):
        if k == 1:
            return flint.arb(1) / 2
        n = k - 2
        half = flint.arb.pi() / 2
        num = certified_integral([(0, half, lambda t, _: t.cos() * t.sin() ** n)],
                                 what=f"int cos sin^{n} (k = {k})")
        den = certified_integral([(0, half, lambda t, _: t.sin() ** n),
                                  (half, 2 * half, lambda t, _: t.sin() ** n)],
                                 what=f"int sin^{n} (k = {k})")
        return _check_ball(num / den, f"E[(u.e)_+] at k = {k}", max_rel_radius)


# ------------------------------------------------------------------ phi~ (H1e)
#: d beyond which phi_tilde_ball takes minutes per value (its sin-power polynomial has
#: d/2 terms, evaluated at each of the integrand's thousands of nodes)
MAX_PHI_DIM = 100_000


# up to d_H/2 balls each (a few MB at d_H = 10^5); a plain lru_cache, not ball_cache: rational
# arithmetic at the block's precision reads none of FLINT's caches, and it runs inside integrands
@lru_cache(maxsize=16)
def _sin_power_polynomial(n: int, prec: int) -> tuple[Any, Any]:
    """(R_n, P_n) with int_0^T sin^n = R_n J_(n mod 2)(T) - cos T sin^(1 - n mod 2) T
    P_n(sin^2 T), J_0 = T, J_1 = 1 - cos T: the recurrence J_j = -sin^(j-1) T cos T / j
    + (j-1)/j J_(j-2) (integration by parts) unrolled, its coefficients as balls at ``prec``
    bits, so one value is one polynomial evaluation in C, not n/2 Python steps."""
    flint = flint_module()
    par = n % 2
    coef = [flint.arb(0)] * ((n - par) // 2 + par)
    prod = flint.arb(1)   # prod_{i = j+2, j+4, .., n} (i - 1)/i
    for j in range(n, par + 1, -2):
        coef[(j - 2 + par) // 2] = prod / j
        prod = prod * (j - 1) / j
    return prod, flint.acb_poly(coef)


def _sin_power_integral(n: int, z: Any, sigma: Any, T: Any) -> Any:
    """J_n(T) = int_0^T sin^n, for cos T = z, sin T = sigma (:func:`_sin_power_polynomial`)."""
    if n < 2:
        return T if n == 0 else 1 - z
    R, P = _sin_power_polynomial(n, flint_module().ctx.prec)
    head = R * (T if n % 2 == 0 else 1 - z)
    return head - z * (sigma if n % 2 == 0 else 1) * P(sigma * sigma)


def _phi_inner(k: int, c: Any, dc: Any, z: Any, dv: Any, w_k: Any, derivative: bool,
               analytic: bool, T: Any = None) -> Any:
    """E_R[(c R + v)_+] at v = -c z, |z| < 1 (or its theta-derivative dc E_R[R; cR + v > 0]
    + dv P(cR + v > 0)), R the first coordinate of Unif(S^(k-1)): its polar angle t has
    density sin^(k-2) t / W_k and the kink is at cos t* = z, so the expectation is
    int_0^t* (c cos t + v) sin^(k-2) t dt / W_k = (c sin^(k-1) t* / (k-1) + v J_(k-2)(t*)) / W_k.
    With ``T`` (= t*, z = cos T) no acos / square root is taken: the value is entire in T."""
    flint = flint_module()
    v = -c * z
    if k == 1:  # R = +-1
        return ((dc + dv) if derivative else (c + v)) / 2
    if T is None:
        if analytic and z.imag.contains(0) and (z.real.upper() >= 1 or z.real.lower() <= -1):
            return flint.acb("nan")  # on the branch cut of acos / sqrt(1 - z^2)
        sigma, T = (1 - z * z).sqrt(), z.acos()
    else:
        sigma = T.sin()
    J = _sin_power_integral(k - 2, z, sigma, T)
    top = sigma ** (k - 1) / (k - 1)
    return ((dc * top + dv * J) if derivative else (c * top + v * J)) / w_k


def inner_expectation_ball(k: int, c: float, y: float, prec: int = 128) -> tuple[Any, Any, Any]:
    """Certified (E_R[(c R + y)_+], E_R[R; c R + y > 0], P(c R + y > 0)) for R the first
    coordinate of Unif(S^(k-1)), c > 0, |y| < c: the inner expectation of phi~ (H1e) and
    its partial derivatives d/dc, d/dy, from R's polar-angle law cut at the kink
    (:func:`_phi_inner`); ``arb`` balls at ``prec`` bits (floats taken exactly)."""
    flint = flint_module()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_PHI_DIM:
        raise ValueError(f"k (the sphere dimension) must be an integer in 1..{MAX_PHI_DIM}; got {k!r}")
    cf, yf = _finite_input(c, "c"), _finite_input(y, "y")
    if not (cf > 0 and abs(yf) < cf):
        raise ValueError(f"need c > 0 and |y| < c (the kink inside R's range); got c = {cf!r}, "
                         f"y = {yf!r}")
    with working_precision(prec):
        C, Y = exact_ball(cf), exact_ball(yf)
        z = flint.acb(-Y / C)
        w_k = _sphere_normalizer(int(k)) if k >= 2 else None
        one, zero = flint.acb(1), flint.acb(0)
        vals = (_phi_inner(int(k), C, zero, z, zero, w_k, False, False),
                _phi_inner(int(k), C, one, z, zero, w_k, True, False),
                _phi_inner(int(k), C, zero, z, one, w_k, True, False))
        return tuple(flint.arb(v.real) if isinstance(v, flint.acb) else flint.arb(v) for v in vals)


def _sphere_normalizer(k: int) -> Any:
    """W_k = int_0^pi sin^(k-2) = sqrt(pi) Gamma((k-1)/2) / Gamma(k/2), k >= 2."""
    flint = flint_module()
    return flint.arb.pi().sqrt() * (flint.arb(k - 1) / 2).gamma() / (flint.arb(k) / 2).gamma()


def _phi_ball(th: Any, ph: Any, kH: int, kP: int, derivative: bool) -> Any:
    flint = flint_module()
    c, y = th.cos() * ph.cos(), th.sin() * ph.sin()
    dc, dy = -th.sin() * ph.cos(), th.cos() * ph.sin()
    # the integrals' absolute tolerance is 2^-(2 prec): integrate the problem normalized to
    # max(c, y) = 1 (phi~ is 1-homogeneous in (c, y), the indicator 0-homogeneous) and
    # |dc| + |dy| = 1 (the derivative is linear in (dc, dy)), then scale back
    s0 = c.max(y) if hasattr(c, "max") else (c if c > y else y)
    s1 = abs(dc) + abs(dy)
    if derivative and s1 == 0:
        return flint.arb(0)
    factor = s1 if derivative else s0
    return factor * _phi_normalized(c / s0, y / s0, dc / s1 if derivative else dc,
                                    dy / s1 if derivative else dy, kH, kP, derivative)


def _phi_normalized(c: Any, y: Any, dc: Any, dy: Any, kH: int, kP: int, derivative: bool) -> Any:
    flint = flint_module()
    w_k = _sphere_normalizer(kH) if kH >= 2 else None

    def inner(z, dv, analytic=False, T=None):  # z = -v / c, v = y S
        return _phi_inner(kH, c, dc, z, dv, w_k, derivative, analytic, T)
    if kP == 1:  # S = +-1
        total = flint.arb(0)
        for sgn in (1, -1):
            v, dv = sgn * y, sgn * dy
            if v > c:
                total += dv if derivative else v
            elif abs(v) < c:
                total += inner(flint.acb(-v / c), flint.acb(dv)).real
            elif not v < -c:
                raise UndecidableCondition("phi_tilde_ball: |y| = c undecided (S = +-1)")
        return total / 2
    w_m, n = _sphere_normalizer(kP), kP - 2
    pi = flint.arb.pi()
    if y < c:  # the kink inside R's range for every S: integrate over S's polar angle u
        def middle(u, analytic):
            cu = u.cos()
            return inner(-y * cu / c, dy * cu, analytic) * u.sin() ** n / w_m
        cuts = [pi * j / 16 for j in range(17)]  # sin^n u peaks sharply for large n
        return certified_integral([(lo, hi, middle) for lo, hi in zip(cuts, cuts[1:])],
                                  what="phi~ (|y| < c)")
    if not y > c:
        raise UndecidableCondition("phi_tilde_ball: sin th sin ph = cos th cos ph undecided")
    # y cos u >= c on [0, u1] (all of R active), <= -c on [pi - u1, pi] (none); between, the
    # kink z = -y cos u / c = cos t runs over (-1, 1) (the interval in u can be as narrow as
    # 2 c / y): du = (c / y) sin t dt / sin u, sin u = sqrt(1 - (c cos t / y)^2) > 0, and in t
    # the integrand has no branch point on [0, pi] (R's kink angle is t itself)
    u1 = (c / y).acos()
    closed = (dy if derivative else y) * u1.sin() ** (n + 1) / (n + 1) / w_m
    rho = c / y

    def middle_t(t, analytic):
        z = t.cos()
        q = 1 - (rho * z) ** 2
        if analytic and q.imag.contains(0) and q.real.lower() <= 0:
            return flint.acb("nan")
        return (inner(z, -dy * rho * z, analytic, T=t) * q.sqrt() ** (n - 1) * rho * t.sin()
                / w_m)
    cuts = [pi * j / 8 for j in range(9)]
    return closed + certified_integral([(lo, hi, middle_t) for lo, hi in zip(cuts, cuts[1:])],
                                       what="phi~ (|y cos u| < c)")


def phi_tilde_ball(theta: float, phi: float, d: int, d_H: int, derivative: bool = False,
                   prec: int = 96) -> Any:
    """Certified phi~(theta; phi) = E[(cos th cos ph R + sin th sin ph S)_+] (Hajjar & Chizat
    2023, Thm 4.3; claim H1e), or with ``derivative`` its theta-derivative
    E[(c' R + y' S) 1{c R + y S > 0}] (the integrand is continuous in theta, so no kink
    term), R, S the first coordinates of independent Unif(S^(d_H - 1)), Unif(S^(d-d_H-1)).
    The expectation over R is exact (polar angle, cut at the kink, the sin-power integral by
    its integration-by-parts recurrence, unrolled once per (d_H, precision) into a
    polynomial in sin^2); the one over S (polar angle u, density sin^(d-d_H-2) u / W) is
    ``acb.integral`` cut exactly where |y cos u| = c (beyond, all of R is active or none),
    between those cuts in R's kink angle (no branch point on the path).  Cost: ~10 ms at
    d <= 40, ~0.1 s at d = 1000, seconds at d = 30000 (the polynomial has d_H/2 terms and
    the integrand is steeper)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 2 <= d <= MAX_PHI_DIM:
        raise ValueError(f"d must be an integer in 2..{MAX_PHI_DIM}; got {d!r}")
    if isinstance(d_H, bool) or not isinstance(d_H, (int, np.integer)) or not 1 <= d_H < d:
        raise ValueError(f"d_H must be an integer in 1..d-1; got {d_H!r}")
    if (isinstance(prec, bool) or not isinstance(prec, (int, np.integer))
            or not 16 <= prec <= MAX_PREC - 32):
        raise ValueError(f"prec (Arb working precision in bits) must be an integer in "
                         f"16..{MAX_PREC - 32}; got {prec!r}")
    t, p = _finite_input(theta, "theta"), _finite_input(phi, "phi")
    if not (0 <= t <= np.pi / 2 and 0 <= p <= np.pi / 2):
        raise ValueError(f"theta and phi must lie in [0, pi/2]; got {t!r}, {p!r}")
    flint = flint_module()
    # cos th cos ph near th or ph = pi/2 cancels, and so does the sin-power polynomial for
    # large d_H: start 32 bits above prec and double until the radius is <= 2^(8 - prec) of
    # max(|value|, 1e-6 |scale|) (the derivative can be exactly 0)
    goal = flint.arb(2) ** (8 - prec)
    work = int(prec) + 32
    while True:
        with working_precision(work):
            th, ph = exact_ball(t), exact_ball(p)
            b = _phi_ball(th, ph, int(d_H), int(d - d_H), bool(derivative))
            scale = (abs(th.sin() * ph.cos()) + abs(th.cos() * ph.sin())) if derivative else abs(b)
            ok = b.rad() <= goal * abs(b).max(scale / 10 ** 6)
        if ok or b.rad() == 0:
            return b
        if work >= 8 * prec:
            raise UncertifiedError(f"phi_tilde_ball: no radius <= 2^{8 - prec} of the value "
                                   f"within {work} bits at theta = {t!r}, phi = {p!r}")
        work *= 2
