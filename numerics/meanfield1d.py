"""The mean-field limit of the univariate ReLU network at alpha(m) = m (Williams, Trager,
Silva, Panozzo, Zorin, Bruna, NeurIPS 2019; claim W2i): a deterministic quadrature of the
initial measure mu_0, evolved as a weighted particle system by mean-field gradient descent.

Mean-field GD at flow step h moves every particle w = (a, b, c) by h V(w; rho) with

    V(w; rho) = -sum_j rho_j grad_w [c (a x_j - b)_+],   rho_j = f(x_j) - y_j,
    f(x) = int c (a x - b)_+ dmu(w),

the limit as m -> inf of GD on z = (a_i, b_i, c_i) with alpha(m) = m at z-step T(m) h
(T derived in ``derivations.williams_dynamics``, claim W2i).  ReLU(0) = 0, ReLU'(0) = 0.

The reference rule.  phi(w; x) = c (a x - b)_+ is 2-homogeneous and V(.; rho) is
1-homogeneous in w, so a particle varrho * omega (omega on the unit sphere S^2) moves as
varrho times the particle omega, and f = int_{S^2} phi(Phi(omega)) W(omega) dsigma with
W(omega) = int_0^inf varrho^k p_0(varrho omega) dvarrho (k = 4, derived: the caller passes
it).  For mu_0 = U([-1, 1]^2) x N(0, sigma_c^2) the sphere is parametrized by
omega = (cos beta cos theta, cos beta sin theta, sin beta), dsigma = cos beta dbeta dtheta;
theta is split at the sample lines' angles atan(x_j), atan(x_j) - pi (where the initial
integrand has kinks) and at the square's corner angles (where W has kinks), each piece
into equal panels with the midpoint rule (second order also across the kinks that the
particles' motion creates later, which no fixed split can follow); beta into equal
midpoint panels; W by 60-point Gauss-Legendre in varrho (an entire integrand, truncated
where the Gaussian factor is below e^-72).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial.legendre import leggauss

from numerics.validation import (MAX_ELEMENTS, DivergenceError, as_float_array,
                                 require_finite_result, require_size, require_work)

__all__ = ["sphere_rule", "meanfield_velocity", "meanfield_gd", "weighted_forward",
           "MAX_RULE_PANELS", "MAX_RULE_SAMPLES"]

#: the largest panels-per-piece of :func:`sphere_rule` (2.7e6 nodes at s = 6 samples)
MAX_RULE_PANELS = 160
_RADIAL_NODES = 60
#: work units (~1 ns) of one node of the sphere rule (60 radial nodes: 0.9 us measured at
#: 1.7e6 nodes, 1.3 us on a loaded core) and the largest sample count (x.size) it splits
#: at: beyond 2^17 distinct samples even one panel exceeds a quick call
_NODE_COST = 1000
MAX_RULE_SAMPLES = 2 ** 17
_CHUNK = 1 << 16
#: work units (~1 ns) of one particle-sample pair of one GD step (26.6 ns measured at
#: 2e5 particles and 6 samples) and of one step's fixed overhead
_PAIR_COST = 30
_STEP_OVERHEAD = 20_000


def _samples(x: Any, name: str = "x") -> np.ndarray:
    return as_float_array(x, name, ndim=1, allow_empty=False)


def _positive(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number; got {type(v).__name__}")
    v = float(v)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number; got {v!r}")
    return v


def _count(v: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer; got {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}]; got {v}")
    return int(v)


def _theta_breaks(x: np.ndarray) -> np.ndarray:
    """[-pi, pi] split at the sample lines' angles and the square's corner angles."""
    lines = np.concatenate([np.arctan(x), np.arctan(x) - np.pi])
    corners = np.array([-0.75, -0.25, 0.25, 0.75]) * np.pi
    inner = np.mod(np.concatenate([lines, corners]) + np.pi, 2 * np.pi) - np.pi
    br = np.unique(np.concatenate([inner, [-np.pi, np.pi]]))
    return br[np.concatenate([[True], np.diff(br) > 1e-12])]


def _midpoints(breaks: np.ndarray, panels: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = breaks[:-1, None], breaks[1:, None]
    width = (hi - lo) / panels
    nodes = lo + width * (np.arange(panels) + 0.5)
    return nodes.ravel(), np.broadcast_to(width, nodes.shape).ravel()


def _radial_weight(oa, ob, oc, exponent: float, sigma_c: float) -> np.ndarray:
    """W(omega) = int_0^inf varrho^k p_0(varrho omega) dvarrho for
    p_0 = (1/4) 1[|a|, |b| <= 1] N(c; 0, sigma_c^2)."""
    t, wt = leggauss(_RADIAL_NODES)
    out = np.empty(oa.size)
    for lo in range(0, oa.size, _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        rmax = 1.0 / np.maximum(np.abs(oa[sl]), np.abs(ob[sl]))
        s = np.abs(oc[sl]) / sigma_c
        with np.errstate(divide="ignore"):
            upper = np.minimum(rmax, np.where(s > 0, 12.0 / s, np.inf))
        rr = upper[:, None] * (t + 1) / 2
        dens = 0.25 * np.exp(-0.5 * (rr * s[:, None]) ** 2) / (np.sqrt(2 * np.pi) * sigma_c)
        out[sl] = (rr ** exponent * dens * (upper[:, None] / 2 * wt)).sum(axis=1)
    return out


def sphere_rule(x: Any, panels: int, weight_exponent: float, sigma_c: float = 1.0, *,
                long_run: bool | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Weighted particles ``(a, b, c, weights)`` representing mu_0 = U([-1, 1]^2) x
    N(0, sigma_c^2) for 2-homogeneous test functions (claim W2i; module docstring):
    ``sum_k weights_k phi(w_k) = int phi dmu_0`` up to the rule's error, exact in the
    limit ``panels -> inf`` (second order).  ``panels`` per theta piece (and 6 * panels
    in beta); ``weight_exponent`` the derived k of W(omega) = int varrho^k p_0 dvarrho.
    A rule above ~2 s of one core (~1.6e6 nodes) needs ``long_run=True`` (or
    ``numerics.long_runs``); weights beyond float64 (a huge ``weight_exponent``) raise."""
    xs = _samples(x)
    require_size(xs.size, "x (samples the rule splits at)", limit=MAX_RULE_SAMPLES,
                 hint="pass fewer samples")
    panels = _count(panels, "panels", 1, MAX_RULE_PANELS)
    k = _positive(weight_exponent, "weight_exponent")
    sigma_c = _positive(sigma_c, "sigma_c")
    th_breaks = _theta_breaks(xs)
    n_nodes = (th_breaks.size - 1) * panels * 6 * panels
    require_size(n_nodes * _RADIAL_NODES // 16, "the sphere rule's nodes x radial nodes / 16",
                 limit=MAX_ELEMENTS, hint="use fewer panels")
    require_work(n_nodes * _NODE_COST, "panels (the rule's nodes: pieces x 6 panels^2)",
                 long_run=long_run, hint="use fewer panels or samples")
    th, wth = _midpoints(th_breaks, panels)
    be, wbe = _midpoints(np.array([-np.pi / 2, 0.0, np.pi / 2]), 3 * panels)
    TH, BE = np.meshgrid(th, be, indexing="ij")
    area = np.outer(wth, wbe * np.cos(be)).ravel()
    TH, BE = TH.ravel(), BE.ravel()
    a, b, c = np.cos(BE) * np.cos(TH), np.cos(BE) * np.sin(TH), np.sin(BE)
    with np.errstate(over="ignore", invalid="ignore"):
        weights = area * _radial_weight(a, b, c, k, sigma_c)
    require_finite_result(weights, "the sphere rule's weights",
                          "weight_exponent too large (varrho^k overflows float64)")
    return a, b, c, weights


def _particles(a: Any, b: Any, c: Any, weights: Any) -> tuple[np.ndarray, ...]:
    arrs = []
    for name, v in (("a", a), ("b", b), ("c", c), ("weights", weights)):
        arrs.append(_samples(v, name))
    if len({v.size for v in arrs}) != 1:
        raise ValueError(f"a, b, c, weights must have one entry per particle; got sizes "
                         f"{[v.size for v in arrs]}")
    if np.any(arrs[3] < 0):
        raise ValueError("weights must be >= 0")
    return tuple(arrs)


def _velocity(a, b, c, w, x, y) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    pre = np.multiply.outer(a, x) - b[:, None]
    act = pre > 0
    rho = (w * c) @ np.where(act, pre, 0.0) - y
    R0 = act @ rho
    R1 = act @ (rho * x)
    return -c * R1, c * R0, b * R0 - a * R1, rho


def meanfield_velocity(a: Any, b: Any, c: Any, weights: Any, x: Any, y: Any
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(V_a, V_b, V_c, rho)``: the mean-field velocity V(w; rho) of every particle and
    the residual rho_j = sum_k weights_k c_k (a_k x_j - b_k)_+ - y_j (module docstring)."""
    a, b, c, w = _particles(a, b, c, weights)
    xs, ys = _samples(x), _samples(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x and y must have the same size; got {xs.size} and {ys.size}")
    require_size(a.size * xs.size, "particles x samples", hint="use fewer particles")
    return _velocity(a, b, c, w, xs, ys)


def meanfield_gd(a: Any, b: Any, c: Any, weights: Any, x: Any, y: Any, *, step: float,
                 steps: int, long_run: bool | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The particles after ``steps`` steps of mean-field GD w <- w + step V(w; rho)
    (claim W2i), at flow time ``step * steps``; weights are unchanged.  A run above
    ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (or
    ``numerics.validation.long_runs()``); a non-finite state raises DivergenceError."""
    a, b, c, w = (v.copy() for v in _particles(a, b, c, weights))
    xs, ys = _samples(x), _samples(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x and y must have the same size; got {xs.size} and {ys.size}")
    h = _positive(step, "step")
    n = _count(steps, "steps", 0, 1 << 20)
    require_size(a.size * xs.size * max(n, 1), "particles x samples x steps",
                 limit=1 << 34, hint="use fewer particles or steps")
    require_work(n * (_PAIR_COST * a.size * xs.size + _STEP_OVERHEAD), "steps",
                 long_run=long_run, what="work units (steps x (30 particles x samples + "
                 "overhead))", hint="use fewer particles or steps")
    for _ in range(n):
        va, vb, vc, _rho = _velocity(a, b, c, w, xs, ys)
        a += h * va
        b += h * vb
        c += h * vc
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
        raise DivergenceError(f"mean-field GD diverged (step {h:g}, {n} steps): a non-finite "
                              "particle; reduce the step")
    return a, b, c


def weighted_forward(a: Any, b: Any, c: Any, weights: Any, points: Any) -> np.ndarray:
    """f(x) = sum_k weights_k c_k (a_k x - b_k)_+ at ``points``."""
    a, b, c, w = _particles(a, b, c, weights)
    p = _samples(points, "points")
    require_size(a.size * p.size, "particles x points", hint="use fewer points")
    out = np.zeros(p.size)
    for lo in range(0, a.size, _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        out += (w[sl] * c[sl]) @ np.maximum(np.multiply.outer(a[sl], p) - b[sl, None], 0.0)
    return out
