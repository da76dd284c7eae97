"""Numerics of the kernel regime of 1-D ReLU networks (Williams et al. 2019, Sec. 4, Fig. 4;
claims W3a-W3f), independent of the SymPy derivations:

- mpmath references at >= 30 digits of the DEFINING expectations
  K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+], P(a x > b, a x' > b) and
  omega(x) = int |a|^3 p_0(a, a x) da, by nested quadrature with every kink as a breakpoint;
- weighted quadrature particles for each init (polar Gauss-Legendre rule on the uniform box,
  polar Gauss-Laguerre x equispaced-angle rule for the gaussian) and i.i.d. particles;
- empirical RF / NTK kernels (1/m) sum phi_i(x) phi_i(x') (chunked, vectorized);
- training only the output layer c by GD (alpha(m) = 1, c(0) = 0), its closed form through
  the s x s reduction, and the min-norm solution;
- training all layers with alpha(m) = sqrt(m) (uses ``numerics.relu1d.loss_and_grad``).

Inits (docs/conventions.md, section 1): "uniform": (a, b) ~ U([-1, 1]^2); "gaussian": (a, b) ~ N(0, I_2).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import mpmath
import numpy as np

from numerics.validation import (MAX_ELEMENTS, MAX_STEPS, ArgumentTypeError, DivergenceError,
                                 RunProgress, as_float_array, as_float_scalar, require_callable,
                                 require_choice, require_dps, require_finite_result,
                                 require_generator, require_positive_int, require_same_shape,
                                 require_size, require_work)

__all__ = [
    "INITS", "rf_kernel_quad_mp", "active_probability_quad_mp", "rkhs_weight_quad_mp",
    "abs_moment_kernel_mp", "sample_init", "quadrature_particles", "features",
    "empirical_rf_kernel", "empirical_ntk_kernel", "min_norm_output_layer",
    "output_layer_gd", "OutputLayerFit", "fit_output_layer", "min_norm_output_values",
    "feature_product_moments", "MAX_PARTICLES",
]

INITS = ("uniform", "gaussian")
#: largest number of particles (a, b) drawn at once by :func:`sample_init` (1 GiB of (a, b))
MAX_PARTICLES = MAX_ELEMENTS // 2
#: Gauss-Legendre nodes per angular panel / radial nodes of :func:`quadrature_particles`
#: (numpy's rules cost O(n^2)-O(n^3); Gauss-Laguerre weights underflow to nan beyond ~180)
_MAX_RULE_NODES = 1024
_MAX_RADIAL = 100
_CHUNK = 1 << 22  # max entries of one m x n feature block
#: cost of one GD step of :func:`output_layer_gd` in the work units of
#: ``numerics.validation.require_work`` (~1 ns): a fixed Python/NumPy overhead (measured
#: 4-5 us) plus two matrix-vector products of len(x) x len(a) (measured ~1 ns per entry)
_STEP_OVERHEAD = 6000
_STEP_PER_ENTRY = 2
#: fixed cost of one replicate of :func:`min_norm_output_values` (draws, a small solve), in
#: the same units; each (point, feature) pair adds 2 len(x) + 10 (measured 12.4 ms per
#: replicate at 31 points x 16000 features, len(x) = 10)
_REPLICATE_OVERHEAD = 20_000


def _init(init: str) -> str:
    return require_choice(init, "init", INITS)


# =============================================================== mpmath references
def _mp_real(v: Any, name: str) -> mpmath.mpf:
    """A finite real number as an mpf: an mpmath.mpf is taken exactly (any precision),
    anything else must be a finite float64 scalar."""
    if isinstance(v, mpmath.mpf):
        if not mpmath.isfinite(v):
            raise ValueError(f"{name} must be finite; got {v}")
        return v
    return mpmath.mpf(as_float_scalar(v, name))


def _mp_points(**vals: Any) -> list[mpmath.mpf]:
    return [_mp_real(v, k) for k, v in vals.items()]


def _nested(nested: Any) -> bool:
    if not isinstance(nested, (bool, np.bool_)):
        raise ArgumentTypeError(f"nested must be True or False; got {nested!r:.40}")
    return bool(nested)


def _uniform_quad(integrand: Callable, x: mpmath.mpf, xp: mpmath.mpf) -> mpmath.mpf:
    """(1/4) int_{-1}^1 da int_{-1}^1 db integrand(a, b); the b-kinks are b = a x, b = a x'
    (clipped to [-1, 1]), the a-kinks where those lines leave the box (a = +-1/x, +-1/x')
    and a = 0 (where min(a x, a x') switches).  Between breakpoints the integrands of this
    module are polynomials, so Gauss-Legendre is exact up to the working precision."""
    one = mpmath.mpf(1)

    def inner(aa):
        pts = sorted({-one, one, *[p for p in (aa * x, aa * xp) if -one < p < one]})
        return mpmath.quad(lambda bb: integrand(aa, bb), pts, method="gauss-legendre")

    apts = {-one, mpmath.mpf(0), one}
    for v in (x, xp):
        if abs(v) > 1:
            apts |= {1 / v, -1 / v}
    return mpmath.quad(inner, sorted(apts), method="gauss-legendre") / 4


_GAUSS_CUT = 12  # |a|, |b| <= 12 keeps all but exp(-72) ~ 5e-32 of the mass (2-D nested rule)


def _gaussian_quad(integrand: Callable, x: mpmath.mpf, xp: mpmath.mpf,
                   inner_exact: Callable | None = None) -> mpmath.mpf:
    """E over (a, b) ~ N(0, I_2) in Cartesian coordinates (no polar step, no symmetry used).

    ``inner_exact is None``: true 2-D nested Gauss-Legendre on the truncated square
    |a|, |b| <= 12 (truncation error < 1e-30 relative for these polynomially growing
    integrands), the inner b-integral over [-12, min(a x, a x')] (its support; the kink
    is the end point), the outer a-integral with a breakpoint at 0 where the order of
    a x and a x' switches.  About 7 s per value at 30 digits.
    Otherwise ``inner_exact(a)`` gives the inner b-integral (truncated-normal moments) and
    only the outer integral is a quadrature (tanh-sinh on (-inf, 0] and [0, inf)): ~0.1 s."""
    c = 1 / (2 * mpmath.pi)
    if inner_exact is not None:
        return mpmath.quad(lambda aa: inner_exact(aa) * mpmath.exp(-aa * aa / 2) / mpmath.sqrt(2 * mpmath.pi),
                           [-mpmath.inf, 0, mpmath.inf])
    B = mpmath.mpf(_GAUSS_CUT)

    def inner(aa):
        top = min(aa * x, aa * xp)
        if top <= -B:
            return mpmath.mpf(0)
        return mpmath.quad(lambda bb: integrand(aa, bb) * mpmath.exp(-bb * bb / 2), [-B, min(top, B)],
                           method="gauss-legendre")

    return c * mpmath.quad(lambda aa: inner(aa) * mpmath.exp(-aa * aa / 2), [-B, 0, B],
                           method="gauss-legendre")


#: |t| beyond which phi(t) and Phi(t) (resp. 1 - Phi(t)) are below exp(-5e199): t is clipped
#: there, since mpmath's erfc overflows a float in its series test for |t| >~ 1e154
_T_CLIP = mpmath.mpf(10) ** 100


def _clip(t: mpmath.mpf) -> mpmath.mpf:
    return max(min(t, _T_CLIP), -_T_CLIP)


def _npdf(t: mpmath.mpf) -> mpmath.mpf:
    t = _clip(t)
    return mpmath.exp(-t * t / 2) / mpmath.sqrt(2 * mpmath.pi)


def _ncdf(t: mpmath.mpf) -> mpmath.mpf:
    return mpmath.erfc(-_clip(t) / mpmath.sqrt(2)) / 2


def rf_kernel_quad_mp(x: float, xp: float, init: str = "uniform", dps: int = 30,
                      nested: bool = False) -> mpmath.mpf:
    """K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+] by quadrature at ``dps`` digits (claims
    W3a, W3c), kinks as breakpoints.  uniform: always 2-D nested Gauss-Legendre (exact on
    the polynomial pieces).  gaussian: ``nested=True`` 2-D nested rule (slow, ~7 s);
    default: the inner b-integral by the truncated-normal moments
    int_{-inf}^t (p - b)(q - b) phi(b) db = (p q + 1) Phi(t) + max(p, q) phi(t),
    t = min(p, q), p = a x, q = a x', and a 1-D quadrature over a."""
    init = _init(init)
    dps = require_dps(dps)
    nested = _nested(nested)
    X, XP = _mp_points(x=x, xp=xp)
    with mpmath.workdps(dps + 5):
        # mpmath's quadrature stops on an ABSOLUTE error estimate, so the integrand is
        # divided by its scale S = (1 + |x|)(1 + |x'|) (for |a|, |b| <= 1 the integrand is
        # <= S; gaussian tails alike) and the integral multiplied back: for |x| >> 1 the
        # unscaled rule never meets the tolerance and runs to its maximal degree.
        S = (1 + abs(X)) * (1 + abs(XP))

        def g(aa, bb):
            u, v = aa * X - bb, aa * XP - bb
            return u * v / S if (u > 0 and v > 0) else mpmath.mpf(0)

        def inner(aa):
            p, q = aa * X, aa * XP
            t = min(p, q)
            return ((p * q + 1) * _ncdf(t) + max(p, q) * _npdf(t)) / S
        if init == "uniform":
            val = _uniform_quad(g, X, XP) * S
        else:
            val = _gaussian_quad(g, X, XP, None if nested else inner) * S
    with mpmath.workdps(dps):  # rounded to dps digits (not to the ambient precision)
        return +val


def active_probability_quad_mp(x: float, xp: float, init: str = "uniform", dps: int = 30,
                               nested: bool = False) -> mpmath.mpf:
    """P(a x > b, a x' > b) by quadrature (claim W3d); as :func:`rf_kernel_quad_mp`, the
    gaussian default has the inner integral Phi(min(a x, a x')) in closed form."""
    init = _init(init)
    dps = require_dps(dps)
    nested = _nested(nested)
    X, XP = _mp_points(x=x, xp=xp)
    with mpmath.workdps(dps + 5):

        def g(aa, bb):
            return mpmath.mpf(1) if (aa * X - bb > 0 and aa * XP - bb > 0) else mpmath.mpf(0)
        if init == "uniform":
            val = _uniform_quad(g, X, XP)
        else:
            val = _gaussian_quad(g, X, XP, None if nested else (lambda aa: _ncdf(min(aa * X, aa * XP))))
    with mpmath.workdps(dps):  # rounded to dps digits (not to the ambient precision)
        return +val


def rkhs_weight_quad_mp(x: float, init: str = "uniform", exponent: int = 3, dps: int = 30) -> mpmath.mpf:
    """omega(x) = int |a|^exponent p_0(a, a x) da by 1-D quadrature (claim W3e);
    ``exponent`` > -1 (integrable at a = 0) and <= 20."""
    init = _init(init)
    dps = require_dps(dps)
    X = _mp_real(x, "x")
    k = as_float_scalar(exponent, "exponent (of |a|)", lo=-1.0, hi=20.0, lo_open=True)
    exponent = int(k) if float(k).is_integer() else mpmath.mpf(k)
    with mpmath.workdps(dps + 5):
        # a = L t with L the scale of p_0(a, a x) in a, so that the integrand is O(1) on
        # t in O(1) (mpmath's quadrature stops on an ABSOLUTE error estimate):
        # omega = L^(k+1) int |t|^k p_0(L t, L t x) dt
        if init == "uniform":
            # p_0(a, a x) = 1/4 on {|a| <= 1, |a x| <= 1}: L = min(1, 1/|x|), t in [-1, 1]
            L = min(mpmath.mpf(1), 1 / abs(X)) if X != 0 else mpmath.mpf(1)
            tops = [mpmath.mpf(1)]

            def p0(t):
                return mpmath.mpf(1) / 4
        else:
            # p_0(a, a x) = exp(-a^2 (1 + x^2) / 2) / (2 pi): L = (1 + x^2)^(-1/2)
            L = 1 / mpmath.sqrt(1 + X * X)
            tops = [mpmath.mpf(1), mpmath.inf]

            def p0(t):
                return mpmath.exp(-t * t / 2) / (2 * mpmath.pi)
        if isinstance(exponent, int):
            # |t|^k p_0 is smooth on each half (a polynomial for the uniform init, exact in
            # Gauss-Legendre)
            method = "gauss-legendre" if init == "uniform" else "tanh-sinh"
            val = sum(mpmath.quad(lambda t, s=s: abs(t) ** exponent * p0(s * t), [0, *tops], method=method)
                      for s in (-1, 1))
        else:
            # |t|^k is singular at t = 0 for non-integer k, where no rule converges at 30+
            # digits (tanh-sinh stalls at 1e-4 for k = -0.9): substitute |t| = u^(1/(k+1)),
            # |t|^k dt = du / (k+1), leaving a bounded integrand on t in [0, 1] (u = 1 at
            # t = 1); the gaussian tail t > 1 is smooth and integrated in t
            k1 = exponent + 1
            val = sum(mpmath.quad(lambda u, s=s: p0(s * u ** (1 / k1)) / k1, [0, 1])
                      for s in (-1, 1))
            if init == "gaussian":
                val += sum(mpmath.quad(lambda t, s=s: t ** exponent * p0(s * t), [1, mpmath.inf])
                           for s in (-1, 1))
        val *= L ** (exponent + 1)
    with mpmath.workdps(dps):  # rounded to dps digits (not to the ambient precision)
        return +val


def abs_moment_kernel_mp(z: float, zp: float, omega: Callable[[Any], Any], sigma2: Any,
                         breakpoints: tuple[float, ...] = (), dps: int = 30) -> mpmath.mpf:
    """(1/4) int_R omega(x) |x - z| |x - z'| dx + (sigma2/4)(1 + z z') by 1-D quadrature
    (claim W3e: with omega the RKHS weight and sigma2 = E a^2 = E b^2 this equals K_RF).
    ``omega`` maps an mpf to a real number; ``breakpoints``: its kinks (a 1-D array)."""
    dps = require_dps(dps)
    Z, ZP = _mp_points(z=z, zp=zp)
    omega = require_callable(omega, "omega", "(t) -> real number")
    s2 = _mp_real(sigma2, "sigma2")
    if s2 < 0:
        raise ValueError(f"sigma2 (= E a^2 = E b^2) must be >= 0; got {s2}")
    bps = as_float_array(breakpoints, "breakpoints", ndim=1)
    require_size(bps.size, "breakpoints", limit=10_000, what="breakpoints")
    with mpmath.workdps(dps + 5):
        pts = sorted({Z, ZP, *(mpmath.mpf(float(p)) for p in bps)})
        val = mpmath.quad(lambda t: omega(t) * abs(t - Z) * abs(t - ZP), [-mpmath.inf, *pts, mpmath.inf]) / 4
        try:
            val += s2 * (1 + Z * ZP) / 4
        except TypeError as exc:
            raise ArgumentTypeError(f"omega must return real numbers; {exc}") from None
        if not isinstance(val, mpmath.mpf) or not mpmath.isfinite(val):
            raise ValueError(f"the integral of omega(t) |t - z| |t - z'| is not a finite real "
                             f"number ({val}); omega must decay faster than |t|^-3")
    with mpmath.workdps(dps):  # rounded to dps digits (not to the ambient precision)
        return +val


# ================================================================ particles
def sample_init(rng: np.random.Generator, m: int, init: str = "uniform") -> tuple[np.ndarray, np.ndarray]:
    """m i.i.d. hidden-layer parameters (a, b) from the init (m <= MAX_PARTICLES)."""
    rng = require_generator(rng)
    m = require_positive_int(m, "m (number of particles)", maximum=MAX_PARTICLES)
    if _init(init) == "uniform":
        ab = rng.uniform(-1.0, 1.0, size=(2, m))
    else:
        ab = rng.standard_normal((2, m))
    return ab[0], ab[1]


@lru_cache(maxsize=32)
def _leggauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights (cached: O(n^3) eigenvalue computation)."""
    g, w = np.polynomial.legendre.leggauss(n)
    g.setflags(write=False), w.setflags(write=False)
    return g, w


def quadrature_particles(init: str, n_angle: int, n_radial: int = 2, kinks_at: Any = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic weighted particles (a, b, w), sum w = 1, discretizing the init.

    The kinks of (a x - b)_+ lie on lines THROUGH THE ORIGIN of the (a, b) plane, so a
    tensor rule in (a, b) converges only algebraically and slowly; in polar coordinates
    (a, b) = r (cos t, sin t) the kinks sit at fixed angles and the integrands of K_RF
    (degree 2 homogeneous) and P (degree 0) are polynomials in r, integrated exactly by
    ``n_radial`` >= 2 radial nodes.  Only the angular rule errs (O(n_angle^-2) at the kinks
    of K_RF's integrand, O(n_angle^-1) at the jumps of P's).

    - uniform: 4 angular panels between the box corners (+-pi/4, +-3pi/4), where the box
      radius R(t) = 1/max(|cos t|, |sin t|) is smooth, Gauss-Legendre in each; radial
      Gauss-Legendre on [0, R(t)] with the Jacobian r; weights times the density 1/4.
    - gaussian: n_angle equispaced angles (offset half a step) with weights 1/n_angle;
      radial Gauss-Laguerre in u = r^2/2 ~ Exp(1), r = sqrt(2 u).

    ``kinks_at`` (optional 1-D array of points x, at most 64): the angular panels are also
    split at the kink angles t = atan(x), atan(x) -+ pi of every (a x - b)_+, and each panel
    gets a Gauss-Legendre rule (both inits): integrands of K_RF, P and K_NTK at those x
    are then smooth on every panel and the rule converges exponentially.
    """
    init = _init(init)
    n_max = 4 * _MAX_RULE_NODES if init == "uniform" else MAX_PARTICLES
    n_angle = require_positive_int(n_angle, "n_angle", minimum=4, maximum=n_max)
    n_radial = require_positive_int(n_radial, "n_radial", minimum=1, maximum=_MAX_RADIAL)
    require_size(n_angle * n_radial * 8, "n_angle * n_radial", what="float64 entries of work arrays",
                 hint="use fewer angular or radial nodes")
    if kinks_at is not None:
        xk = as_float_array(kinks_at, "kinks_at", ndim=1)
        require_size(xk.size, "kinks_at", limit=64, what="points")
        t0 = np.arctan(xk)
        edges = np.concatenate([t0, np.where(t0 > 0, t0 - np.pi, t0 + np.pi), [-np.pi, np.pi]])
        if init == "uniform":
            edges = np.concatenate([edges, [-0.75 * np.pi, -0.25 * np.pi, 0.25 * np.pi, 0.75 * np.pi]])
        edges = np.unique(np.clip(edges, -np.pi, np.pi))
        edges = edges[np.concatenate([[True], np.diff(edges) > 1e-12])]
        lo, hi = edges[:-1], edges[1:]
        per = min(_MAX_RULE_NODES, max(2, -(-n_angle // lo.size)))
        g, gw = _leggauss(per)
        th = (lo[:, None] + 0.5 * (hi - lo)[:, None] * (g[None, :] + 1)).ravel()
        wth = (0.5 * (hi - lo)[:, None] * gw[None, :]).ravel()
    elif init == "uniform":
        per = -(-n_angle // 4)
        g, gw = _leggauss(per)
        starts = -0.75 * np.pi + 0.5 * np.pi * np.arange(4)
        th = (starts[:, None] + 0.25 * np.pi * (g[None, :] + 1)).ravel()
        wth = np.tile(0.25 * np.pi * gw, 4)
    else:
        th = 2 * np.pi * (np.arange(n_angle) + 0.5) / n_angle
        wth = np.full(n_angle, 2 * np.pi / n_angle)
    if init == "uniform":
        R = 1.0 / np.maximum(np.abs(np.cos(th)), np.abs(np.sin(th)))
        gr, gwr = _leggauss(n_radial)
        r = 0.5 * R[:, None] * (gr[None, :] + 1)
        w = 0.25 * wth[:, None] * 0.5 * R[:, None] * gwr[None, :] * r
    else:
        u, wu = np.polynomial.laguerre.laggauss(n_radial)
        r = np.broadcast_to(np.sqrt(2 * u)[None, :], (th.size, n_radial))
        w = (wth / (2 * np.pi))[:, None] * wu[None, :]
    a = (r * np.cos(th)[:, None]).ravel()
    b = (r * np.sin(th)[:, None]).ravel()
    return a, b, w.ravel()


def _features(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`features` on validated arrays.  If a_i x - b_i overflows, it is recomputed
    halved (exact) and a value beyond float64 raises a ValueError naming the overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.maximum(np.multiply.outer(x, a) - b, 0.0)
    if not np.all(np.isfinite(out)):
        with np.errstate(over="ignore", invalid="ignore"):
            half = np.maximum(np.multiply.outer(0.5 * x, a) - 0.5 * b, 0.0)
        if np.any(half > np.finfo(np.float64).max / 2):
            raise ValueError("features overflow float64: a_i x - b_i exceeds 1.8e308; rescale "
                             f"a, b or x (max |a| = {np.abs(a).max():.3g}, max |x| = "
                             f"{np.abs(x).max() if x.size else 0.0:.3g})")
        out = np.where(np.isfinite(out), out, 2.0 * half)
    return out


def features(a: Any, b: Any, x: Any) -> np.ndarray:
    """phi_i(x) = (a_i x - b_i)_+ as an (n_x, m) array (x 1-D)."""
    a, b = _ab(a, b)
    x = as_float_array(x, "x", ndim=1)
    require_size(x.size * a.size, "the feature matrix (len(x) * len(a))",
                 hint="evaluate fewer points or particles per call")
    return _features(a, b, x)


def _weights(a: np.ndarray, weights: Any) -> np.ndarray:
    if weights is None:
        return np.full(a.shape, 1.0 / a.size)
    w = as_float_array(weights, "weights", ndim=1)
    require_same_shape(a=a, weights=w)
    if np.any(w < 0):
        raise ValueError(f"weights must be >= 0 (quadrature or probability weights); got "
                         f"{w[w < 0][:5].tolist()}")
    return w


def _ab(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a = as_float_array(a, "a", ndim=1, allow_empty=False)
    b = as_float_array(b, "b", ndim=1)
    require_same_shape(a=a, b=b)
    return a, b


def _pair_work(a: np.ndarray, x: np.ndarray, xp: np.ndarray) -> None:
    """Refuse sizes whose output or work would explode (before any work)."""
    require_size(x.size * xp.size, "the kernel matrix (len(x) * len(xp))",
                 hint="evaluate fewer points per call")
    require_size(a.size * (x.size + xp.size), "the work len(a) * (len(x) + len(xp))",
                 limit=MAX_STEPS, what="feature evaluations", hint="use fewer particles or points")


def _finite_kernel(out: np.ndarray, name: str) -> np.ndarray:
    return require_finite_result(out, name, "products of features or weights beyond 1.8e308; "
                                 "rescale a, b, x or the weights")


def empirical_rf_kernel(a: Any, b: Any, x: Any, xp: Any, weights: Any = None) -> np.ndarray:
    """sum_i w_i phi_i(x) phi_i(x') for all pairs: an (n_x, n_x') matrix (w_i = 1/m by
    default).  Chunked over particles."""
    a, b = _ab(a, b)
    w = _weights(a, weights)
    x = as_float_array(x, "x", ndim=1)
    xp = as_float_array(xp, "xp", ndim=1)
    _pair_work(a, x, xp)
    out = np.zeros((x.size, xp.size))
    step = max(1, _CHUNK // max(1, x.size + xp.size))
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(0, a.size, step):
            sl = slice(i, i + step)
            fx = _features(a[sl], b[sl], x)
            fxp = _features(a[sl], b[sl], xp)
            out += (fx * w[sl]) @ fxp.T
    return _finite_kernel(out, "the empirical RF kernel")


def empirical_ntk_kernel(a: Any, b: Any, x: Any, xp: Any, c2: Any = 1.0,
                         weights: Any = None) -> np.ndarray:
    """sum_i w_i [phi_i(x) phi_i(x') + c_i^2 (1 + x x') 1{a_i x > b_i} 1{a_i x' > b_i}]
    (the tangent kernel of f = m^{-1/2} sum c_i (a_i x - b_i)_+, divided by nothing: with
    w_i = 1/m it is the finite-width NTK; ``c2`` a scalar (E c^2 = sigma_c^2) or per particle)."""
    a, b = _ab(a, b)
    w = _weights(a, weights)
    c2v = as_float_array(c2, "c2 (squared output weights)")
    if c2v.ndim > 1 or (c2v.ndim == 1 and c2v.shape != a.shape):
        raise ValueError(f"c2 must be a scalar or a 1-D array of the shape of a {a.shape}; "
                         f"got shape {c2v.shape}")
    if np.any(c2v < 0):
        raise ValueError("c2 (squared output weights) must be >= 0")
    c2 = np.broadcast_to(c2v, a.shape)
    x = as_float_array(x, "x", ndim=1)
    xp = as_float_array(xp, "xp", ndim=1)
    out = empirical_rf_kernel(a, b, x, xp, w)
    step = max(1, _CHUNK // max(1, x.size + xp.size))
    P = np.zeros_like(out)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(0, a.size, step):
            sl = slice(i, i + step)
            ix = (np.multiply.outer(x, a[sl]) - b[sl] > 0).astype(np.float64)
            ixp = (np.multiply.outer(xp, a[sl]) - b[sl] > 0).astype(np.float64)
            P += (ix * (w[sl] * c2[sl])) @ ixp.T
        out = out + (1.0 + np.multiply.outer(x, xp)) * P
    return _finite_kernel(out, "the empirical NTK")


# ================================================================= output-layer training
def min_norm_output_layer(a: Any, b: Any, x: Any, y: Any) -> np.ndarray:
    """argmin |c| subject to Phi c = y (least squares if no exact solution), Phi_ji = phi_i(x_j)."""
    a, b = _ab(a, b)
    x = as_float_array(x, "x", ndim=1)
    y = as_float_array(y, "y", ndim=1)
    require_same_shape(x=x, y=y)
    require_size(x.size * a.size, "the feature matrix (len(x) * len(a))")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        try:
            c = np.linalg.lstsq(_features(a, b, x), y, rcond=None)[0]
        except np.linalg.LinAlgError as exc:  # SVD did not converge (extreme scales)
            raise ValueError(f"the least-squares problem Phi c = y has no accurate solution "
                             f"({exc}); rescale a, b, x or y") from None
    return require_finite_result(c, "the min-norm output layer c",
                                 "features phi_i(x_j) so small that |c| = |Phi^+ y| exceeds "
                                 "float64; rescale a, b or y")


def output_layer_gd(a: Any, b: Any, x: Any, y: Any, eta: float, steps: int, *,
                    long_run: bool | None = None) -> np.ndarray:
    """Plain GD on c only, alpha(m) = 1, c(0) = 0: c <- c - eta Phi^T (Phi c - y).  A run
    above ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (then it shows its
    progress); a diverging run raises :class:`~numerics.validation.DivergenceError`
    naming ``eta``."""
    a, b = _ab(a, b)
    x = as_float_array(x, "x", ndim=1)
    y = as_float_array(y, "y", ndim=1)
    require_same_shape(x=x, y=y)
    eta = as_float_scalar(eta, "eta", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0)
    require_size(x.size * a.size, "the feature matrix (len(x) * len(a))")
    long = require_work(steps * (_STEP_PER_ENTRY * x.size * a.size + _STEP_OVERHEAD), "steps",
                        long_run=long_run, what="work units (steps x (2 len(x) len(a) + "
                        "overhead))", hint="use fewer steps (or fit_output_layer, which "
                        "evaluates converged GD in closed form)")
    Phi = _features(a, b, x)
    c = np.zeros(a.size)
    for k in RunProgress(steps, "output_layer_gd steps", long).steps():
        with np.errstate(over="ignore", invalid="ignore"):
            c -= eta * (Phi.T @ (Phi @ c - y))
        if k % 256 == 0 and not np.all(np.isfinite(c)):
            raise DivergenceError(f"output-layer GD diverged at step {k} with step size "
                                  f"eta={eta:g}; reduce eta (below 2 / lambda_max(Phi^T Phi))")
    if not np.all(np.isfinite(c)):
        raise DivergenceError(f"output-layer GD diverged with step size eta={eta:g}; reduce "
                              "eta (below 2 / lambda_max(Phi^T Phi))")
    return c


def _output_layer_gd_closed_form(Phi: np.ndarray, y: np.ndarray, eta: float, steps: float
                                ) -> np.ndarray:
    """The GD iterate c_T of :func:`output_layer_gd` without iterating: from c(0) = 0 every
    iterate is c_t = Phi^T beta_t with beta_{t+1} = beta_t + eta (y - G beta_t),
    G = Phi Phi^T (s x s), so beta_T = V diag((1 - (1 - eta l)^T) / l) V^T y."""
    return Phi.T @ _kernel_gd_coefficients(Phi @ Phi.T, y, eta, steps)


def _kernel_gd_coefficients(G: np.ndarray, y: np.ndarray, eta: float, steps: float) -> np.ndarray:
    """beta_T of kernel GD beta_{t+1} = beta_t + eta (y - G beta_t), beta_0 = 0, in closed
    form: beta_T = V diag((1 - (1 - eta l)^T) / l) V^T y (G = V diag(l) V^T, symmetric PSD).
    Requires 0 < eta l <= 1 for the top eigenvalue (monotone, non-oscillating GD)."""
    lam, V = np.linalg.eigh(G)
    if eta * lam.max() > 1 + 1e-9:
        raise FloatingPointError(f"GD step size eta={eta:g} exceeds 1 / lambda_max = "
                                 f"{1 / lam.max():.3g} (use eta <= 1/lambda_max)")
    keep = lam > lam.max() * 1e-15
    coef = np.zeros_like(lam)
    z = np.clip(eta * lam[keep], 0.0, 1.0)  # eta l <= 1 up to rounding when eta = 1/lambda_max
    with np.errstate(divide="ignore"):
        coef[keep] = -np.expm1(steps * np.log1p(-z)) / lam[keep]
    coef[~keep] = eta * steps  # (1 - (1 - eta l)^T)/l -> eta T as l -> 0
    return V @ (coef * (V.T @ y))


@dataclass
class OutputLayerFit:
    """Result of :func:`fit_output_layer`."""
    c: np.ndarray
    steps: float          # number of GD steps T to convergence
    eta: float
    train_residual: float  # max_j |f(x_j) - y_j| after T steps
    condition: float      # lambda_max / lambda_min of Phi Phi^T


def fit_output_layer(a: Any, b: Any, x: Any, y: Any, tol: float = 1e-12) -> OutputLayerFit:
    """GD on c only (alpha(m) = 1, c(0) = 0, eta = 1/lambda_max(Phi Phi^T)) run until every
    eigen-component of the residual has shrunk by ``tol`` in (0, 1); evaluated exactly
    through the s x s kernel form of the iteration (the number of steps T is returned).
    Eigen-directions of Phi Phi^T below 1e-15 of the largest are treated as null."""
    a, b = _ab(a, b)
    x = as_float_array(x, "x", ndim=1, allow_empty=False)
    y = as_float_array(y, "y", ndim=1)
    require_same_shape(x=x, y=y)
    tol = as_float_scalar(tol, "tol", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    require_size(x.size * a.size, "the feature matrix (len(x) * len(a))")
    require_size(x.size ** 3, "len(x)^3 (eigen-decomposition of Phi Phi^T)", limit=MAX_STEPS)
    Phi = _features(a, b, x)
    with np.errstate(over="ignore", invalid="ignore"):
        G = Phi @ Phi.T
    if not np.all(np.isfinite(G)):
        raise ValueError("Phi Phi^T overflows float64 (features beyond ~1e154); rescale a, b or x")
    lam = np.linalg.eigvalsh(G)
    if not lam.max() > 0:
        raise ValueError("every feature phi_i(x_j) = (a_i x_j - b_i)_+ vanishes at the data x: "
                         "the output layer cannot fit y (f = 0 for every c); use more "
                         "particles (a, b) or data inside their active region")
    eta = 1.0 / lam.max()
    if not np.isfinite(eta):
        raise ValueError(f"features too small: lambda_max(Phi Phi^T) = {lam.max():.3g} makes the "
                         "GD step 1/lambda_max overflow; rescale a, b or x")
    lmin = max(lam.min(), lam.max() * 1e-15)
    steps = float(np.ceil(np.log(tol) / np.log1p(-eta * lmin)))
    with np.errstate(over="ignore", invalid="ignore"):
        c = _output_layer_gd_closed_form(Phi, y, eta, steps)
        res = float(np.max(np.abs(Phi @ c - y)))
    require_finite_result(c, "the fitted output layer c", "y too large for these features; "
                          "rescale y")
    return OutputLayerFit(c, steps, eta, res, float(lam.max() / lmin))


# ==================================================================== all-layer training
def _symmetric_init(rng: np.random.Generator, m: int, init: str = "uniform", sigma_c: float = 1.0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m (even) neurons in m/2 mirrored pairs (a_i, b_i, c_i), (a_i, b_i, -c_i) with
    c ~ N(0, sigma_c^2): f_z = 0 at init exactly, so the NTK limit is the NTK interpolant
    of the data itself (no random initial function)."""
    m = require_positive_int(m, "m", minimum=2)
    if m % 2:
        raise ValueError(f"m must be even for the mirrored init; got {m}")
    a, b = sample_init(rng, m // 2, init)
    c = sigma_c * rng.standard_normal(m // 2)
    return np.concatenate([a, a]), np.concatenate([b, b]), np.concatenate([c, -c])


@dataclass
class _AllLayerFit:
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    steps: int
    loss: float
    eta: float


def _train_all_layers(a: Any, b: Any, c: Any, x: Any, y: Any, eta: float, *, max_steps: int,
                     loss_tol: float = 1e-12, alpha: str | float = "sqrt") -> _AllLayerFit:
    """GD on all layers, f = (1/alpha) sum c_i (a_i x - b_i)_+ (default alpha = sqrt(m)),
    until L < ``loss_tol`` or ``max_steps``.  Gradients from ``numerics.relu1d``.
    Raises ``FloatingPointError`` naming ``eta`` on divergence."""
    from numerics.relu1d import loss_and_grad
    a, b = _ab(a, b)
    a, b = a.copy(), b.copy()
    c = as_float_array(c, "c", ndim=1).copy()
    x = as_float_array(x, "x", ndim=1)
    y = as_float_array(y, "y", ndim=1)
    max_steps = require_positive_int(max_steps, "max_steps")
    loss0, loss, k = None, np.inf, 0
    for k in range(max_steps + 1):
        loss, (ga, gb, gc) = loss_and_grad(a, b, c, x, y, alpha)
        loss0 = loss if loss0 is None else loss0
        if not np.isfinite(loss) or loss > 1e6 * max(loss0, 1.0):
            raise FloatingPointError(f"all-layer GD diverged at step {k} with step size eta={eta:g}; "
                                     "reduce eta")
        if loss < loss_tol or k == max_steps:
            break
        a -= eta * ga
        b -= eta * gb
        c -= eta * gc
    return _AllLayerFit(a, b, c, k, float(loss), eta)


def _trained_output_layer_values(rng: np.random.Generator, m: int, x: Any, y: Any, x_eval: Any,
                                replicates: int, init: str = "uniform", *,
                           long_run: bool | None = None) -> np.ndarray:
    """f_m(x_eval) for ``replicates`` independent draws of m i.i.d. features, each trained
    by GD on c only (alpha(m) = 1, c(0) = 0) to convergence (:func:`fit_output_layer`):
    an (replicates, n_eval) array (claim W3f)."""
    m = require_positive_int(m, "m")
    replicates = require_positive_int(replicates, "replicates")
    x_eval = as_float_array(x_eval, "x_eval", ndim=1)
    out = np.empty((replicates, x_eval.size))
    for r in range(replicates):
        a, b = sample_init(rng, m, init)
        fit = fit_output_layer(a, b, x, y)
        out[r] = _features(a, b, x_eval) @ fit.c
    return out


def feature_product_moments(a: Any, b: Any, w: Any, xs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of the products phi(x_i) phi(x_j) (all pairs, flattened) under
    the weighted particles (a, b, w): the exact law of one random feature's contribution
    to the empirical kernel (claims W3a, W3c: E m |K_m - K|_F^2 = trace of the covariance)."""
    a, b = _ab(a, b)
    w = _weights(a, w)
    xs = as_float_array(xs, "xs", ndim=1, allow_empty=False)
    require_size(xs.size ** 2 * a.size, "the products (len(xs)^2 * len(a))",
                 hint="use fewer points xs or particles")
    require_size(xs.size ** 4, "the covariance (len(xs)^4 entries)", hint="use fewer points xs")
    F = _features(a, b, xs)                      # (n, M)
    with np.errstate(over="ignore", invalid="ignore"):
        P = (F[:, None, :] * F[None, :, :]).reshape(xs.size ** 2, -1)
        mu = P @ w
        cov = (P * w) @ P.T - np.outer(mu, mu)
    require_finite_result((mu, cov), "the feature-product moments",
                          "features beyond ~1e77; rescale a, b or xs")
    return mu, cov


def min_norm_output_values(rng: np.random.Generator, m: int, x: Any, y: Any, x_eval: Any,
                           replicates: int, init: str = "uniform", *,
                           long_run: bool | None = None) -> np.ndarray:
    """The limit of GD on c only (alpha(m) = 1, c(0) = 0), i.e. the min-norm fit
    f_m(x) = Phi(x) Phi_X^T (Phi_X Phi_X^T)^{-1} y, at ``x_eval`` for ``replicates``
    independent draws of m i.i.d. features: an (replicates, n_eval) array.  Per draw only
    the (s + n_eval) x s block of the feature Gram matrix is formed (O((s + n_eval) s m)
    flops), draws batched so that a batch holds <= 2^22 feature entries; equal to GD on c
    to convergence up to its tolerance (claim W3f).  A draw whose Gram block is singular
    (e.g. no feature active at some x_j) gets the least-squares min-norm fit
    Phi(x) Phi_X^+ y instead.  A run above ``numerics.validation.QUICK_WORK`` needs
    ``long_run=True`` (then it shows its progress)."""
    rng = require_generator(rng)
    m = require_positive_int(m, "m", maximum=MAX_PARTICLES)
    replicates = require_positive_int(replicates, "replicates", maximum=MAX_PARTICLES)
    init = _init(init)
    x = as_float_array(x, "x", ndim=1, allow_empty=False)
    y = as_float_array(y, "y", ndim=1)
    require_same_shape(x=x, y=y)
    x_eval = as_float_array(x_eval, "x_eval", ndim=1)
    pts = np.concatenate([x, x_eval])
    s = x.size
    require_size(pts.size * m, "one draw's feature matrix ((len(x) + len(x_eval)) * m)",
                 hint="use fewer features m or points")
    require_size(replicates * pts.size * s * m, "replicates * (len(x) + len(x_eval)) * len(x) * m",
                 limit=MAX_STEPS, what="multiply-adds", hint="use fewer replicates, features or points")
    require_size(replicates * x_eval.size, "the output (replicates * len(x_eval))")
    long = require_work(replicates * (pts.size * m * (2 * s + 10) + _REPLICATE_OVERHEAD),
                        "replicates", long_run=long_run, what="work units (replicates x "
                        "((len(x) + len(x_eval)) m (2 len(x) + 10) + overhead))",
                        hint="use fewer replicates, features or points")
    out = np.empty((replicates, x_eval.size))
    batch = max(1, _CHUNK // (pts.size * m))
    prog = RunProgress(replicates, "min_norm_output_values replicates", long, every=1)
    for r0 in range(0, replicates, batch):
        prog.update(r0)
        nb = min(batch, replicates - r0)
        ab = sample_init(rng, nb * m, init)
        a, b = ab[0].reshape(nb, m), ab[1].reshape(nb, m)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            Phi = np.maximum(pts[None, :, None] * a[:, None, :] - b[:, None, :], 0.0)   # (nb, n, m)
            G = np.matmul(Phi, Phi[:, :s, :].transpose(0, 2, 1))                        # (nb, n, s)
            try:
                beta = np.linalg.solve(G[:, :s, :], np.broadcast_to(y, (nb, s))[..., None])
                out[r0:r0 + nb] = (G[:, s:, :] @ beta)[..., 0]
            except np.linalg.LinAlgError:   # a singular draw: min-norm least squares per draw
                for k in range(nb):
                    c = np.linalg.lstsq(Phi[k, :s, :], y, rcond=None)[0]
                    out[r0 + k] = Phi[k, s:, :] @ c
    prog.close()
    return require_finite_result(out, "the min-norm fits f_m(x_eval)", "y too large for these "
                                 "features; rescale y")
