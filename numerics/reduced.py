"""The one-dimensional reduced dynamics of Hajjar & Chizat (2023), Thm 4.3 / Figure 3
(claim H1e, H1g, H1h): target f*(x) = |x_H|, dim H = d_H, data rho = N(0, I_d / d).

Kernel.  phi~(theta; phi) = E[relu(cos(theta) cos(phi) R + sin(theta) sin(phi) S)], R and S
independent first coordinates of Unif(S^{d_H-1}) and Unif(S^{d-d_H-1}) (density of a first
coordinate of Unif(S^{k-1}) proportional to (1 - r^2)^{(k-3)/2}).  Computed by
- the inner expectation over R given by the caller as a ``kernel`` (the derived closed
  form of claim H1e: ``verify.formulas.hajjar.phi_kernel()``; this module holds no copy):
  with c = cos th cos ph, y = s S, ``kernel.inner(k, c, y)`` = E_R[(c R + y)_+] for
  |y| < c, relu(y) otherwise, ``kernel.inner_grad`` its partial derivatives and
  ``kernel.tail_mean(k, a)`` = E[S; S > a];
- the outer expectation over S = cos(psi), density sin^{k-2}(psi) on [0, pi]: the part
  |s S| >= c in closed form, the middle part [psi0, pi - psi0] by tanh-sinh quadrature
  (the kinks |s S| = c sit at its endpoints, where tanh-sinh keeps double-exponential
  convergence; a tensor Gauss rule across the kink would only converge algebraically).
The theta-derivative is the same expectation of d/dc c_theta + d/dy y_theta.  Accuracy
~1e-14 (see tests/test_reduced.py).  The references of the inner expectation are
quadratures of its definition (:func:`numerics.sphere.relu_affine_mean_mp`), not a
second closed form.

Dynamics.  The weight-position discretization tau^{+-} = (1/m) sum_j c_j delta_{theta_j}
(eps_j = +-1 the sign of the output weight), claim H1g: (dc_j/dt, dtheta_j/dt) =
``velocity(eps, c, G, G')``, the derived reduced field passed by the caller (it is
(2 eps c G, eps G') by the H1g derivation),
    G(theta) = E_phi[(cos phi - f~(phi)) phi~(theta; phi)],  f~(phi) = (1/m) sum_j eps_j c_j phi~(theta_j; phi),
where phi = phi_x (cos^2 phi ~ Beta(d_H/2, (d-d_H)/2), E|x|^2 = 1, |x| independent of phi_x).
E_phi uses a Gauss-Jacobi rule in t = cos(2 phi); phi~(., phi_k) is tabulated on a theta
grid with its exact theta-derivative and interpolated by cubic Hermite polynomials (the
field used is the exact gradient of the interpolated loss, so GD/flow decrease it).
phi~ is even about theta = 0 and theta = pi/2 (R, S symmetric), so G' vanishes there and
a GD step leaving [0, pi/2] is folded back by reflection (the quotient map of the circle).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
from scipy.integrate import solve_ivp
from functools import lru_cache
from scipy.special import betainc, roots_jacobi

from numerics.validation import (
    MAX_STEPS, DivergenceError, IntegratorError, RunProgress, as_float_array, as_float_scalar,
    flow_budget, require_broadcast_work, require_callable, require_finite_result,
    require_generator, require_in_range, require_positive_int, require_same_shape, require_size,
    require_time_grid, require_tolerance, require_work, wants_long_run)

__all__ = ["phi_tilde", "phi_tilde_dtheta", "phi_tilde_mp",
           "phi_tilde_mc", "PhiTable", "ReducedState", "initial_state", "fold_angle",
           "reduced_loss_and_field", "simulate_gd", "simulate_flow", "masses",
           "w2_to_dirac", "critical_time", "reduced_predictor", "phi_quadrature", "phi_rule",
           "ReducedRun", "validate_dims", "AngleTrack", "track_angles", "MAX_PARTICLES", "MAX_PHI_NODES", "MAX_DIM"]

HALF_PI, _INT64_MAX = np.pi / 2, 2 ** 63 - 1

#: largest number of particles of :func:`initial_state` (a few arrays of m floats each)
MAX_PARTICLES = 10 ** 7
#: largest phi rule of :func:`phi_quadrature` / :class:`PhiTable` (scipy's Golub-Welsch
#: eigensolver is O(n^2) memory and O(n^3) time: 4096 nodes take ~1 s)
MAX_PHI_NODES = 4096
#: smallest relative tolerance of :func:`simulate_flow` (scipy raises it to 100 ulps)
_MIN_RTOL = 100 * np.finfo(float).eps
#: largest precision of the mpmath reference :func:`phi_tilde_mp`
_MAX_MP_DPS = 200
#: largest d of :func:`phi_quadrature` (hence :class:`PhiTable`): scipy's Gauss-Jacobi
#: weights overflow (nan) from d - d_H ~ 2000, and its nodes lose digits at d = 1000
MAX_DIM = 1000
#: largest d of the mpmath reference :func:`phi_tilde_mp` (~2 s at d = 1e8, d_H = 5)
_MAX_MP_DIM = 10 ** 8


def _require_dim(d: int, limit: int = MAX_DIM) -> int:
    if d > limit:
        raise ValueError(f"d (ambient dimension) must be <= {limit} here (the phi "
                         f"quadrature and the mpmath reference are accurate and bounded in "
                         f"time only up to there); got {d}")
    return d


def validate_dims(d, d_H) -> tuple[int, int]:
    """1 <= d_H <= d - 1 (both a non-trivial H and a non-trivial complement), d < 2^63
    (the int64 range of the suite's integer arguments)."""
    d = require_positive_int(d, "d (ambient dimension)", minimum=2, maximum=_INT64_MAX)
    d_H = require_positive_int(d_H, "d_H (dimension of H)", minimum=1, maximum=_INT64_MAX)
    if d_H >= d:
        raise ValueError(f"d_H must be < d (H a proper subspace, so that theta and S are "
                         f"defined); got d_H = {d_H}, d = {d}")
    return d, d_H


# ------------------------------------------------------------------ sphere marginals
@lru_cache(maxsize=256)
def _beta_half(k: int) -> float:
    """B(1/2, (k-1)/2) = int_0^pi sin^{k-2}: the normalizer of the coordinate density of
    Unif(S^{k-1}), correctly rounded via mpmath (scipy's beta loses ~1e-10 near k = 1e6)."""
    with mpmath.workdps(30):
        return float(mpmath.beta(mpmath.mpf(1) / 2, (mpmath.mpf(k) - 1) / 2))


#: half-width, in standard deviations 1/sqrt(k - 2), beyond which the coordinate density
#: sin^{k-2}(psi) = cos^{k-2}(psi - pi/2) <= exp(-L^2/2) ~ 2e-22 of its peak is dropped
_PEAK_SD = 10.0


def _tanh_sinh(level_h: float = 1 / 16, umax: float = 3.3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes x in (-1, 1), weights, and 1 - |x| (accurate) of the tanh-sinh rule."""
    u = np.arange(-umax, umax + level_h / 2, level_h)
    v = HALF_PI * np.sinh(u)
    x = np.tanh(v)
    w = level_h * HALF_PI * np.cosh(u) / np.cosh(v) ** 2
    one_minus_abs = 2.0 / (1.0 + np.exp(2 * np.abs(v)))
    return x, w, one_minus_abs


_TS = {h: _tanh_sinh(h) for h in (1 / 16, 1 / 32, 1 / 64)}


def _rule_for(kperp: int):
    """Finer steps for large kperp: after truncation to +-10 standard deviations the peak
    of sin^{k-2}(psi) still has a width ~1/10 of the interval."""
    return _TS[1 / 16 if kperp <= 12 else (1 / 32 if kperp <= 60 else 1 / 64)]


def _require_kernel(kernel: Any) -> Any:
    for name in ("inner", "inner_grad", "tail_mean"):
        if not callable(getattr(kernel, name, None)):
            raise TypeError(f"kernel must provide callables inner(k, c, y), inner_grad(k, c, y) "
                            f"and tail_mean(k, a) (the derived inner expectation of phi~, "
                            f"e.g. verify.formulas.hajjar.phi_kernel()); got {type(kernel).__name__} "
                            f"without {name!r}")
    return kernel


def _phi_parts(theta, phi, d: int, d_H: int, derivative: bool, kernel: Any):
    """phi~ (or d phi~/d theta) as the expectation over S of E_R[relu(c R + y)], y = s S,
    with the inner expectation and its partial derivatives from ``kernel`` (|y| < c) and
    relu(y) where |y| >= c; S by the closed tail mean where s S >= c and tanh-sinh between."""
    th, ph = np.broadcast_arrays(np.asarray(theta, dtype=np.float64),
                                 np.asarray(phi, dtype=np.float64))
    shape, th, ph = th.shape, th.ravel(), ph.ravel()
    kH, kP = d_H, d - d_H
    c = np.cos(th) * np.cos(ph)
    s = np.sin(th) * np.sin(ph)
    ct = -np.sin(th) * np.cos(ph)   # dc/dtheta
    st = np.cos(th) * np.sin(ph)    # ds/dtheta

    def g(y, S, cc, cth, sth):
        """E_R[(c R + y)_+] (or its theta-derivative d/dc c_th + d/dy s_th S), any y."""
        out = np.where(y >= cc, sth * S if derivative else y, 0.0)
        inside = np.abs(y) < cc
        if np.any(inside):
            c1 = np.where(inside, cc, 1.0)
            y1 = np.where(inside, y, 0.0)
            if derivative:
                gc, gy = kernel.inner_grad(kH, c1, y1)
                val = np.asarray(gc, float) * cth + np.asarray(gy, float) * (sth * S)
            else:
                val = np.asarray(kernel.inner(kH, c1, y1), float)
            out = np.where(inside, val, out)
        return out

    if kP == 1:  # S = +-1
        one = np.ones_like(s)
        val = 0.5 * (g(s, one, c, ct, st) + g(-s, -one, c, ct, st))
        return val.reshape(shape)
    B = _beta_half(kP)
    # closed part: S >= t0 = c/s (only when s > c), where cR + sS > 0 surely:
    # s E[S; S > t0] from the kernel's tail mean of the S coordinate
    has_out = s > c
    t0 = np.divide(c, s, out=np.ones_like(c), where=has_out & (s > 0))
    tail_m1 = np.where(has_out, np.asarray(kernel.tail_mean(kP, np.minimum(t0, 1.0)), float), 0.0)
    closed = (st if derivative else s) * tail_m1
    # middle part psi = pi/2 + x, |x| <= half = pi/2 - arccos(t0) = arcsin(t0); the
    # density cos^{kP-2}(x) / B concentrates in |x| ~ 1/sqrt(kP - 2): beyond _PEAK_SD
    # standard deviations it is below 1e-21 of its peak and the interval is cut there
    half = np.where(has_out, np.arcsin(np.minimum(t0, 1.0)), HALF_PI)
    if kP > 2:
        half = np.minimum(half, _PEAK_SD / np.sqrt(kP - 2.0))
    middle = np.zeros_like(c)
    for lo, hi, (x, w, _) in _middle_pieces(half, c, s, kH, kP):
        xs = (lo + hi)[:, None] / 2 + ((hi - lo) / 2)[:, None] * x[None, :]
        S = -np.sin(xs)  # cos(pi/2 + x); cos^{kP-2}(x) = exp((kP - 2) log(1 - 2 sin^2(x/2)))
        dens = np.exp((kP - 2) * np.log1p(-2.0 * np.sin(xs / 2) ** 2)) / B
        y = s[:, None] * S
        vals = g(y, S, c[:, None], ct[:, None], st[:, None])
        middle = middle + (hi - lo) / 2 * ((vals * dens) @ w)
    return (closed + middle).reshape(shape)


def _middle_pieces(half, c, s, kH: int, kP: int) -> list:
    """Pieces (lo, hi, rule) of [-half, half]: one rule for kH <= 60, else cut at
    +-arcsin(10 (c/s)/sqrt(kH)), beyond which E_R[(cR + y)_+] = relu(y) to e^-50."""
    if kH <= 60:
        return [(-half, half, _rule_for(max(kP, kH)))]
    with np.errstate(over="ignore"):       # c / s beyond 1.8e308: inf, as for s = 0
        ratio = np.divide(c, s, out=np.full_like(c, np.inf), where=s > 0)
    wx = np.minimum(half, np.arcsin(np.minimum(1.0, _PEAK_SD * ratio / np.sqrt(kH))))
    return [(-half, -wx, _TS[1 / 64]), (-wx, wx, _TS[1 / 64]), (wx, half, _TS[1 / 64])]


def _validate_angles(theta, phi, d: int, d_H: int, name: str = "theta, phi (broadcast points)"):
    nodes = len(_rule_for(max(d - d_H, d_H))[0]) if d_H <= 60 else 3 * len(_TS[1 / 64][0])
    require_broadcast_work(nodes * 400, name, "points x nodes x 400 ns, measured 210-360 at "
                           "d <= 1000", theta, phi)
    th = as_float_array(theta, "theta (angle of the neuron to H)")
    ph = as_float_array(phi, "phi (angle of the input to H)")
    require_in_range(th, "theta", 0.0, HALF_PI)
    require_in_range(ph, "phi", 0.0, HALF_PI)
    return th, ph


def phi_tilde(theta, phi, d: int, d_H: int, kernel: Any) -> np.ndarray:
    """phi~(theta; phi) (Hajjar & Chizat 2023, Thm 4.3; claim H1e), vectorized: the
    expectation over S (tanh-sinh) of the inner expectation over R given by ``kernel``
    (``inner(k, c, y)``, ``inner_grad(k, c, y)``, ``tail_mean(k, a)``: the derived forms,
    see verify.formulas.hajjar.phi_kernel)."""
    d, d_H = validate_dims(d, d_H)
    th, ph = _validate_angles(theta, phi, d, d_H)
    return _phi_parts(th, ph, d, d_H, False, _require_kernel(kernel))


def phi_tilde_dtheta(theta, phi, d: int, d_H: int, kernel: Any) -> np.ndarray:
    """d phi~(theta; phi) / d theta, vectorized (``kernel`` as in :func:`phi_tilde`)."""
    d, d_H = validate_dims(d, d_H)
    th, ph = _validate_angles(theta, phi, d, d_H)
    return _phi_parts(th, ph, d, d_H, True, _require_kernel(kernel))


def _peak_points(lo, hi, k: int) -> list:
    """Breakpoints for mpmath.quad of a function times sin^{k-2}(psi) on [lo, hi]: the
    density peaks at pi/2 with standard deviation 1/sqrt(k - 2), so for large k the
    interval (k > 100) is cut at pi/2 +- j/sqrt(k - 2), j = 1/4, 1/2, 1, 2, 4, 8, 16, 32 (mpmath's
    degree doubling then resolves each piece); far from the peak nothing is added."""
    pts = [lo, hi]
    if k > 100:
        sd = 1 / mpmath.sqrt(k - 2)
        for j in (0, 0.25, 0.5, 1, 2, 4, 8, 16, 32):
            for p in (mpmath.pi / 2 - j * sd, mpmath.pi / 2 + j * sd):
                if lo < p < hi:
                    pts.append(p)
    return sorted(set(pts))


def phi_tilde_mp(theta, phi, d: int, d_H: int, dps: int = 25) -> mpmath.mpf:
    """Independent high-precision reference: the double integral over R = cos(w),
    S = cos(p) with densities sin^{k-2}, integrating c cos(w) + s cos(p) over the
    region where it is positive (inner limit arccos(-s S / c) as a breakpoint), by
    mpmath.quad; the k = 1 marginals are two-point averages.  Inputs taken exactly."""
    d, d_H = validate_dims(d, d_H)
    _require_dim(d, _MAX_MP_DIM)
    theta = as_float_scalar(theta, "theta (angle of the neuron to H)", lo=0.0, hi=HALF_PI)
    phi = as_float_scalar(phi, "phi (angle of the input to H)", lo=0.0, hi=HALF_PI)
    dps = require_positive_int(dps, "dps (decimal digits)", maximum=_MAX_MP_DPS)
    kH, kP = d_H, d - d_H
    with mpmath.workdps(dps + 10):
        th, ph = mpmath.mpf(float(theta)), mpmath.mpf(float(phi))
        c = mpmath.cos(th) * mpmath.cos(ph)
        s = mpmath.sin(th) * mpmath.sin(ph)

        def inner(y):  # E_R[(cR + y)_+]
            if kH == 1:
                return (max(c + y, 0) + max(-c + y, 0)) / 2
            if y >= c:
                return y
            if y <= -c:
                return mpmath.mpf(0)
            wstar = mpmath.acos(-y / c)
            Z = mpmath.beta(mpmath.mpf(1) / 2, mpmath.mpf(kH - 1) / 2)
            f = lambda w: (c * mpmath.cos(w) + y) * mpmath.sin(w) ** (kH - 2)  # noqa: E731
            return mpmath.quad(f, _peak_points(0, wstar, kH), method="gauss-legendre") / Z

        if kP == 1:
            val = (inner(s) + inner(-s)) / 2
        else:
            Z = mpmath.beta(mpmath.mpf(1) / 2, mpmath.mpf(kP - 1) / 2)
            pts = [mpmath.mpf(0), mpmath.pi]
            if s > c and c > 0:
                p0 = mpmath.acos(c / s)
                pts = [mpmath.mpf(0), p0, mpmath.pi - p0, mpmath.pi]
            pts = sorted(set(sum((_peak_points(lo, hi, kP) for lo, hi in zip(pts, pts[1:])), [])))
            val = mpmath.quad(lambda p: inner(s * mpmath.cos(p)) * mpmath.sin(p) ** (kP - 2), pts) / Z
    with mpmath.workdps(dps):
        return +val


def phi_tilde_mc(rng: np.random.Generator, theta: float, phi: float, d: int, d_H: int,
                 n: int) -> tuple[float, float]:
    """Monte Carlo on the actual sphere S^{d-1}: u = (cos th U_H, sin th U_perp) with U_H,
    U_perp uniform on their spheres (normalized Gaussians), x = (cos ph e_1, sin ph e'_1);
    returns (mean of relu(u . x), standard error)."""
    rng = require_generator(rng, "rng")
    d, d_H = validate_dims(d, d_H)
    theta = as_float_scalar(theta, "theta (angle of the neuron to H)", lo=0.0, hi=HALF_PI)
    phi = as_float_scalar(phi, "phi (angle of the input to H)", lo=0.0, hi=HALF_PI)
    n = require_positive_int(n, "n (Monte Carlo samples)", minimum=2, maximum=_INT64_MAX)
    require_size(n * d, "n * d (Monte Carlo sample coordinates)")
    gH = rng.standard_normal((n, d_H))
    gP = rng.standard_normal((n, d - d_H))
    U = np.concatenate([np.cos(theta) * gH / np.linalg.norm(gH, axis=1, keepdims=True),
                        np.sin(theta) * gP / np.linalg.norm(gP, axis=1, keepdims=True)], axis=1)
    x = np.zeros(d)
    x[0], x[d_H] = np.cos(phi), np.sin(phi)
    v = np.maximum(U @ x, 0.0)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(n))


# ------------------------------------------------------------------ phi quadrature
def phi_quadrature(d: int, d_H: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes phi_k in (0, pi/2) and weights W_k (sum 1) for E over phi_x, x ~ N(0, I):
    cos^2 phi ~ Beta(d_H/2, (d-d_H)/2); Gauss-Jacobi in t = cos(2 phi) with weight
    (1 - t)^{(d-d_H)/2 - 1} (1 + t)^{d_H/2 - 1}."""
    d, d_H = validate_dims(d, d_H)
    _require_dim(d)
    n = require_positive_int(n, "n (number of phi nodes)", maximum=MAX_PHI_NODES)
    t, w = roots_jacobi(n, (d - d_H) / 2 - 1, d_H / 2 - 1)
    return np.arccos(t) / 2, w / w.sum()


#: finest tanh-sinh step of :func:`phi_rule` (1/64: ~420 nodes per piece)
_MIN_PHI_STEP = 1 / 64
#: most breakpoints of :func:`phi_rule`
_MAX_BREAKPOINTS = 10 ** 4


def phi_rule(d: int, d_H: int, breakpoints=(), step: float = 1 / 32
             ) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in [0, pi/2] and weights (sum 1) for E over phi_x, x ~ N(0, I): the density of
    phi_x is proportional to cos^{d_H - 1}(phi) sin^{d - d_H - 1}(phi) (analytic), integrated
    by tanh-sinh with step ``step`` on each piece between ``breakpoints`` (the kinks of the
    integrand, e.g. phi = pi/2 - theta_j where phi~(theta_j; .) is not smooth): double-
    exponential convergence on every piece, also with endpoint singularities."""
    d, d_H = validate_dims(d, d_H)
    step = as_float_scalar(step, "step (tanh-sinh step)", lo=_MIN_PHI_STEP, hi=1.0)
    bp = as_float_array(breakpoints, "breakpoints", ndim=1)
    if bp.size > _MAX_BREAKPOINTS:
        raise ValueError(f"breakpoints has {bp.size} entries, above {_MAX_BREAKPOINTS}")
    pts = np.unique(np.concatenate([[0.0, HALF_PI], np.clip(bp, 0.0, HALF_PI)]))
    x, w, _ = _tanh_sinh(step)
    nodes, weights = [], []
    for lo, hi in zip(pts[:-1], pts[1:]):
        if hi - lo <= 1e-15:
            continue
        nodes.append((lo + hi) / 2 + (hi - lo) / 2 * x)
        weights.append((hi - lo) / 2 * w)
    ph = np.clip(np.concatenate(nodes), 0.0, HALF_PI)
    W = np.concatenate(weights) * np.cos(ph) ** (d_H - 1) * np.sin(ph) ** (d - d_H - 1)
    return ph, W / W.sum()


@dataclass
class PhiTable:
    """phi~(theta; phi_k) and its theta-derivative on a uniform theta grid, for the
    Gauss-Jacobi phi nodes; cubic Hermite interpolation in theta.  ``kernel`` (required)
    as in :func:`phi_tilde`."""
    d: int
    d_H: int
    n_theta: int = 513
    n_phi: int = 48
    kernel: Any = None
    phi: np.ndarray = field(init=False)
    weights: np.ndarray = field(init=False)
    grid: np.ndarray = field(init=False)
    values: np.ndarray = field(init=False)
    slopes: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.d, self.d_H = validate_dims(self.d, self.d_H)
        _require_dim(self.d)
        n = require_positive_int(self.n_theta, "n_theta (theta grid size)", minimum=3,
                                 maximum=_INT64_MAX)
        n_phi = require_positive_int(self.n_phi, "n_phi (number of phi nodes)",
                                     maximum=MAX_PHI_NODES)
        require_size(n * n_phi * 200, "n_theta * n_phi * (S-quadrature nodes) (table work)",
                     limit=MAX_STEPS // 64, what="evaluations")
        self.phi, self.weights = phi_quadrature(self.d, self.d_H, self.n_phi)
        self.grid = np.linspace(0.0, HALF_PI, n)
        TH, PH = np.meshgrid(self.grid, self.phi, indexing="ij")
        kernel = _require_kernel(self.kernel)
        self.values = _phi_parts(TH, PH, self.d, self.d_H, False, kernel)
        self.slopes = _phi_parts(TH, PH, self.d, self.d_H, True, kernel)
        self.h = self.grid[1] - self.grid[0]

    def __call__(self, theta) -> tuple[np.ndarray, np.ndarray]:
        """(phi~(theta_j; phi_k), d/dtheta of the interpolant): two (m, n_phi) arrays."""
        th = np.clip(as_float_array(theta, "theta (angles)", ndim=1), 0.0, HALF_PI)
        h = self.h
        i = np.minimum((th / h).astype(np.int64), len(self.grid) - 2)
        u = (th - self.grid[i]) / h
        u = u[:, None]
        p0, p1 = self.values[i], self.values[i + 1]
        m0, m1 = self.slopes[i] * h, self.slopes[i + 1] * h
        u2, u3 = u * u, u * u * u
        val = ((2 * u3 - 3 * u2 + 1) * p0 + (u3 - 2 * u2 + u) * m0
               + (-2 * u3 + 3 * u2) * p1 + (u3 - u2) * m1)
        der = ((6 * u2 - 6 * u) * p0 + (3 * u2 - 4 * u + 1) * m0
               + (-6 * u2 + 6 * u) * p1 + (3 * u2 - 2 * u) * m1) / h
        return val, der


# ------------------------------------------------------------------ dynamics
@dataclass
class ReducedState:
    """tau^{+-} = (1/m) sum_j c_j delta_{theta_j} split by eps_j = +-1."""
    c: np.ndarray
    theta: np.ndarray
    eps: np.ndarray

    def __post_init__(self) -> None:
        self.c = as_float_array(self.c, "c (masses |a||b|)", ndim=1)
        self.theta = as_float_array(self.theta, "theta (angles to H)", ndim=1)
        self.eps = as_float_array(self.eps, "eps (output-weight signs)", ndim=1)
        require_same_shape(c=self.c, theta=self.theta, eps=self.eps)

    def copy(self) -> "ReducedState":
        return ReducedState(self.c.copy(), self.theta.copy(), self.eps.copy())


#: cost of one Euler step / one field evaluation of the reduced dynamics in the work units
#: of ``numerics.validation.require_work`` (~1 ns): a fixed overhead (measured 67 us; inside
#: DOP853 140 us at m = 6) plus ~25 per (particle, phi node) pair (measured 21 ns); a flow's
#: evaluation budget (default 200000) is capped at QUICK_WORK / this unless long_run=True
_STEP_OVERHEAD, _FLOW_EVAL_OVERHEAD, _STEP_PER_PAIR = 80_000, 160_000, 30
_LONG_FLOW_EVALS = 200_000


def _require_state(state: Any) -> ReducedState:
    """A ReducedState with 1-D finite arrays of one length: c >= 0, theta in [0, pi/2]
    (up to rounding), eps in {-1, +1}."""
    if not isinstance(state, ReducedState):
        raise TypeError(f"state must be a numerics.reduced.ReducedState (c, theta, eps); got "
                        f"{type(state).__name__}")
    c = as_float_array(state.c, "state.c (masses |a||b|)", ndim=1, allow_empty=False)
    th = as_float_array(state.theta, "state.theta (angles to H)", ndim=1)
    eps = as_float_array(state.eps, "state.eps (output-weight signs)", ndim=1)
    require_same_shape(**{"state.c": c, "state.theta": th, "state.eps": eps})
    if np.any(c < 0):
        raise ValueError("state.c must be non-negative (c = |a||b|)")
    require_in_range(th, "state.theta", 0.0, HALF_PI + 1e-12)
    if not np.all(np.abs(eps) == 1):
        raise ValueError("state.eps must contain only +1 and -1")
    return state


def initial_state(rng_plus: np.random.Generator, rng_minus: np.random.Generator, m: int,
                  d: int, d_H: int) -> ReducedState:
    """tau_0^{+-} of the default initialization a = +-1, b ~ Unif(S^{d-1}): m particles,
    m/2 with eps = +1 and m/2 with eps = -1 (independent streams), c_j = |a_j||b_j| = 1,
    theta_j = arccos |u_H|, |u_H|^2 ~ Beta(d_H/2, (d - d_H)/2)."""
    rng_plus = require_generator(rng_plus, "rng_plus")
    rng_minus = require_generator(rng_minus, "rng_minus")
    d, d_H = validate_dims(d, d_H)
    m = require_positive_int(m, "m (number of particles)", minimum=2, maximum=MAX_PARTICLES)
    mp = m // 2
    th = [np.arccos(np.sqrt(r.beta(d_H / 2, (d - d_H) / 2, size=k)))
          for r, k in ((rng_plus, mp), (rng_minus, m - mp))]
    eps = np.concatenate([np.ones(mp), -np.ones(m - mp)])
    return ReducedState(np.ones(m), np.concatenate(th), eps)


def fold_angle(theta: np.ndarray) -> np.ndarray:
    """Reflect angles into [0, pi/2] (phi~ is even about 0 and about pi/2)."""
    t = as_float_array(theta, "theta (angles)")
    lo, hi = (float(t.min()), float(t.max())) if t.size else (0.0, 0.0)
    if lo >= 0.0 and hi <= HALF_PI:     # already folded (mod and the reflection are identities)
        return t.copy()
    t = t if lo >= 0.0 and hi < np.pi else np.mod(t, np.pi)
    return np.where(t > HALF_PI, np.pi - t, t)


def reduced_loss_and_field(state: ReducedState, table: PhiTable
                           ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """(loss, G(theta_j), G'(theta_j), f~(phi_k)) with loss = 1/2 E_phi[(cos phi - f~)^2]."""
    state = _require_state(state)
    if not isinstance(table, PhiTable):
        raise TypeError(f"table must be a numerics.reduced.PhiTable; got {type(table).__name__}")
    return _loss_and_field(state, table)


def _loss_and_field(state: ReducedState, table: PhiTable):
    m = state.c.shape[0]
    P, dP = table(state.theta)
    f = (state.eps * state.c) @ P / m
    res = np.cos(table.phi) - f
    wr = table.weights * res
    return 0.5 * float(res @ wr), P @ wr, dP @ wr, f


def masses(state: ReducedState) -> tuple[float, float]:
    """(tau^+([0, pi/2]), tau^-([0, pi/2]))."""
    return _masses(_require_state(state))


def _masses(state: ReducedState) -> tuple[float, float]:
    m = state.c.shape[0]
    return (float(state.c[state.eps > 0].sum() / m), float(state.c[state.eps < 0].sum() / m))


def w2_to_dirac(state: ReducedState, sign: int, point: float) -> float:
    """W_2 between the normalized tau^{sign} and delta_point: sqrt(sum c (theta - p)^2 / sum c)
    (0 when tau^{sign} has no mass)."""
    state = _require_state(state)
    if isinstance(sign, (bool, np.bool_)) or not isinstance(sign, (int, np.integer)):
        raise TypeError(f"sign must be the integer +1 or -1; got {type(sign).__name__}")
    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1; got {sign!r}")
    point = as_float_scalar(point, "point", lo=0.0, hi=HALF_PI)
    return _w2(state, sign, point)


def _w2(state: ReducedState, sign: int, point: float) -> float:
    sel = state.eps == sign
    if not np.any(state.c[sel] > 0):
        return 0.0
    c = state.c[sel]
    return float(np.sqrt(np.sum(c * (state.theta[sel] - point) ** 2) / np.sum(c)))


def critical_time(times, plus_mass, alpha: float, *, never: float | None = None) -> float:
    """First recorded time with tau^+ mass > alpha (claim H1g).

    ``times`` (non-decreasing) and ``plus_mass`` are 1-D arrays of one length.  When the
    mass never exceeds ``alpha`` on ``times`` this raises ValueError (extend the run),
    unless ``never`` is given: then ``never`` is returned (e.g. ``never=float("nan")``
    for a caller that reports "not reached")."""
    times = require_time_grid(times, "times", strictly=False)
    plus_mass = as_float_array(plus_mass, "plus_mass", ndim=1)
    require_same_shape(times=times, plus_mass=plus_mass)
    alpha = as_float_scalar(alpha, "alpha")
    idx = np.flatnonzero(plus_mass > alpha)
    if idx.size:
        return float(times[idx[0]])
    if never is not None:
        return never
    raise ValueError(f"plus_mass never exceeds alpha = {alpha!r} on the given times (up to "
                     f"t = {float(times[-1])!r}, max mass {float(plus_mass.max())!r}): extend times "
                     "(run longer) or pass never=float('nan') to accept a run without t*")


@dataclass
class ReducedRun:
    times: np.ndarray
    losses: np.ndarray
    plus_mass: np.ndarray
    minus_mass: np.ndarray
    w2_plus: np.ndarray
    w2_minus: np.ndarray
    snapshots: list[ReducedState]
    final: ReducedState
    snapshot_times: np.ndarray


def _record(run: dict, t: float, loss: float, st: ReducedState, keep: bool) -> None:
    mp, mm = _masses(st)
    run["times"].append(t)
    run["losses"].append(loss)
    run["plus"].append(mp)
    run["minus"].append(mm)
    run["w2p"].append(_w2(st, 1, 0.0))
    run["w2m"].append(_w2(st, -1, HALF_PI))
    if keep:
        run["snaps"].append(st.copy())


def _finish(run: dict, final: ReducedState) -> ReducedRun:
    return ReducedRun(np.array(run["times"]), np.array(run["losses"]), np.array(run["plus"]),
                      np.array(run["minus"]), np.array(run["w2p"]), np.array(run["w2m"]),
                      run["snaps"], final, np.array(run["snap_times"]))


def simulate_gd(state: ReducedState, table: PhiTable, step: float, steps: int, *,
                record_every: int = 100, snapshot_every: int = 0,
                fisher_rao_sign: float = 1.0, velocity: Any = None,
                long_run: bool | None = None) -> ReducedRun:
    """Forward Euler with step ``step`` (claim H1g); angles folded into [0, pi/2].
    ``fisher_rao_sign = -1`` flips the mass update (a deliberately wrong variant for
    negative controls).  ``velocity(eps, c, G, dG) -> (dc/dt, dtheta/dt)`` is the reduced
    field (required: the derived one, e.g. lambdified from the H1g derivation).  Raises
    :class:`~numerics.validation.DivergenceError` naming the step on divergence.  A run
    above ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (it then shows its
    progress and stops at Ctrl-C)."""
    step = as_float_scalar(step, "step", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0)
    record_every = require_positive_int(record_every, "record_every", minimum=1)
    snapshot_every = require_positive_int(snapshot_every, "snapshot_every", minimum=0)
    fisher_rao_sign = as_float_scalar(fisher_rao_sign, "fisher_rao_sign")
    velocity = require_callable(velocity, "velocity", "(eps, c, G, dG) -> (dc/dt, dtheta/dt)")
    st = _require_state(state).copy()
    if not isinstance(table, PhiTable):
        raise TypeError(f"table must be a numerics.reduced.PhiTable; got {type(table).__name__}")
    require_size((steps // record_every + 2) * 6, "the records (steps / record_every)",
                 hint="raise record_every")
    long = require_work((steps + 1) * (_STEP_PER_PAIR * st.c.size * table.n_phi + _STEP_OVERHEAD),
                        "steps", long_run=long_run, what="work units (steps x (30 m n_phi + "
                        "overhead))", hint="use fewer steps (a larger step reaches the same "
                        "time) or particles")
    run = {k: [] for k in ("times", "losses", "plus", "minus", "w2p", "w2m", "snaps", "snap_times")}
    for k in RunProgress(steps + 1, "reduced.simulate_gd steps", long).steps():
        with np.errstate(over="ignore", invalid="ignore"):
            loss = np.inf if not np.all(np.isfinite(st.c)) else None
            if loss is None:
                loss, G, dG, _ = _loss_and_field(st, table)
        if not np.isfinite(loss) or loss > 1e8:
            raise DivergenceError(f"reduced GD diverged at step {k} with step size step={step:g}: "
                                  "reduce step")
        if k % record_every == 0 or k == steps:
            _record(run, k * step, loss, st, False)
        if snapshot_every and (k % snapshot_every == 0 or k == steps):
            run["snaps"].append(st.copy())
            run["snap_times"].append(k * step)
        if k == steps:
            break
        dc, dth = velocity(st.eps, st.c, G, dG)
        with np.errstate(over="ignore", invalid="ignore"):
            st.c = st.c + step * fisher_rao_sign * np.asarray(dc, dtype=np.float64)
            th = st.theta + step * np.asarray(dth, dtype=np.float64)
        if not (np.all(np.isfinite(st.c)) and np.all(np.isfinite(th))):
            raise DivergenceError(f"reduced GD diverged at step {k + 1} with step size "
                                  f"step={step:g}: non-finite masses or angles; reduce step")
        st.theta = fold_angle(th)
    return _finish(run, st)


def simulate_flow(state: ReducedState, table: PhiTable, t_eval, *, rtol: float = 1e-9,
                  atol: float = 1e-12, velocity: Any = None, max_evals: int | None = None,
                  long_run: bool | None = None) -> ReducedRun:
    """The same dynamics as an error-controlled ODE (DOP853); the field is evaluated at
    folded angles with the derivative's sign flipped on reflection (odd extension).
    ``velocity`` as in :func:`simulate_gd`.  Raises
    :class:`~numerics.validation.DivergenceError` when the field is not finite and
    :class:`~numerics.validation.IntegratorError` after ``max_evals`` field evaluations
    (default 200000, capped at about two seconds of work unless ``long_run=True``) or on a
    solver failure."""
    t_eval = require_time_grid(t_eval, "t_eval", start=0.0)
    rtol = require_tolerance(rtol, "rtol")
    atol = require_tolerance(atol, "atol")
    if rtol < _MIN_RTOL:
        raise ValueError(f"rtol must be >= {_MIN_RTOL:g} (100 float64 ulps: DOP853 cannot "
                         f"resolve less); got {rtol!r}")
    velocity = require_callable(velocity, "velocity", "(eps, c, G, dG) -> (dc/dt, dtheta/dt)")
    state = _require_state(state)
    if not isinstance(table, PhiTable):
        raise TypeError(f"table must be a numerics.reduced.PhiTable; got {type(table).__name__}")
    m = state.c.shape[0]
    cost = _STEP_PER_PAIR * m * table.n_phi + _FLOW_EVAL_OVERHEAD
    require_work(t_eval.size * cost, "t_eval (one loss evaluation per output time)",
                 long_run=long_run, what="work units (len(t_eval) x (30 m n_phi + overhead))",
                 hint="ask for fewer output times")
    max_evals = flow_budget(max_evals, "max_evals", cost, long_run=long_run,
                            long_default=_LONG_FLOW_EVALS)
    more = "" if wants_long_run(long_run) else " (with long_run=True beyond about two seconds)"
    eps = state.eps
    evals = [0]

    def rhs(_t, z):
        evals[0] += 1
        if evals[0] > max_evals:
            raise IntegratorError(f"reduced flow: budget of {max_evals} field evaluations "
                                  f"exhausted at t = {_t:g} (stiff or discontinuous field?); "
                                  f"raise max_evals{more} or shorten t_eval")
        if not np.all(np.isfinite(z)):
            raise DivergenceError(f"reduced flow: non-finite state at t = {_t:g}")
        c, th = z[:m], z[m:]
        tf = fold_angle(th)
        sgn = np.where(np.mod(th, np.pi) > HALF_PI, -1.0, 1.0)
        _, G, dG, _ = _loss_and_field(ReducedState(c, tf, eps), table)
        dc, dth = velocity(eps, c, G, dG)
        out = np.concatenate([np.asarray(dc, dtype=np.float64), sgn * np.asarray(dth, dtype=np.float64)])
        if not np.all(np.isfinite(out)):
            raise DivergenceError(f"reduced flow: non-finite field at t = {_t:g}")
        return out

    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), np.concatenate([state.c, state.theta]),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise IntegratorError(f"reduced flow failed: {sol.message} (rtol = {rtol:g})")
    run = {k: [] for k in ("times", "losses", "plus", "minus", "w2p", "w2m", "snaps", "snap_times")}
    st = state
    for i, t in enumerate(sol.t):
        st = ReducedState(sol.y[:m, i].copy(), fold_angle(sol.y[m:, i]), eps.copy())
        loss = _loss_and_field(st, table)[0]
        _record(run, float(t), loss, st, True)
        run["snap_times"].append(float(t))
    return _finish(run, st)


def reduced_predictor(state: ReducedState, X, d_H: int, kernel: Any) -> np.ndarray:
    """f(x) = |x| int phi~(theta; phi_x) d(tau^+ - tau^-)(theta), phi_x = arccos(|x_H|/|x|),
    H = span(e_1..e_dH), for every row of X (phi~ by :func:`phi_tilde` with ``kernel``, no
    table); f(0) = 0."""
    state = _require_state(state)
    if isinstance(X, np.ndarray) and X.ndim == 2:  # d and the work from the shape, before a scan
        pairs = (np.broadcast_to(0.0, (state.c.shape[0], 1)), np.broadcast_to(0.0, X.shape[0]))
        _validate_angles(*pairs, *validate_dims(X.shape[1], d_H), "m * n (particles x inputs)")
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    d, d_H = validate_dims(X.shape[1], d_H)
    kernel = _require_kernel(kernel)
    require_size(state.c.shape[0] * X.shape[0], "m * n (particles x inputs)")
    with np.errstate(over="ignore"):
        nx = np.linalg.norm(X, axis=1)
    if not np.all(np.isfinite(nx)):
        raise ValueError("|x| overflows float64 for some rows of X; rescale X")
    ratio = np.divide(np.linalg.norm(X[:, :d_H], axis=1), nx, out=np.ones_like(nx), where=nx > 0)
    phx = np.arccos(np.clip(ratio, 0.0, 1.0))
    m = state.c.shape[0]
    TH, PH = np.meshgrid(np.clip(state.theta, 0, HALF_PI), phx, indexing="ij")
    P = _phi_parts(TH, PH, d, d_H, False, kernel)          # (m, n)
    with np.errstate(over="ignore", invalid="ignore"):
        out = nx * ((state.eps * state.c) @ P) / m
    return require_finite_result(out, "reduced_predictor", "rescale X or the masses c")


@dataclass
class AngleTrack:
    """Records of :func:`track_angles` (claims H1l, H1g) at the recorded steps."""
    times: np.ndarray
    min_ratio: np.ndarray       # min_j theta_j(t) / theta_j(0) over particles and tracers
    gronwall: np.ndarray        # prod_n (1 - eta L_n), L_n = sup_theta |G''_n| of the field
    tracer: np.ndarray          # (records, tracers): Euler angles of the massless tracers
    tracer_linear: np.ndarray   # (records, tracers): theta_0 prod_n (1 + eta eps G''_n(0))
    plus_off_h: np.ndarray      # (1/m) sum_{eps > 0} c sin theta  (the tau+ part off H)
    off_h: np.ndarray           # (1/m) sum eps c sin theta
    plus_mass: np.ndarray
    minus_mean_angle: np.ndarray  # mass-weighted mean angle of tau-
    final: ReducedState


def _hermite_curvatures(table: PhiTable) -> np.ndarray:
    """(2 (n_theta - 1), n_phi): d^2/dtheta^2 of the Hermite interpolant at both ends of every
    cell (it is linear in each cell, so these bound it on [0, pi/2])."""
    P, M, h = table.values, table.slopes * table.h, table.h
    left = (-6 * P[:-1] - 4 * M[:-1] + 6 * P[1:] - 2 * M[1:]) / h ** 2
    right = (6 * P[:-1] + 2 * M[:-1] - 6 * P[1:] + 4 * M[1:]) / h ** 2
    return np.concatenate([left, right])


def track_angles(state: ReducedState, table: PhiTable, step: float, steps: int, *,
                 velocity: Any, curvature_at_zero, tracers, record_every: int = 10,
                 long_run: bool | None = None) -> AngleTrack:
    """The Euler scheme of :func:`simulate_gd` (same steps) with the records of claim H1l:
    the Gronwall factor prod (1 - eta L_n), L_n the exact sup of |G''| of the interpolated
    field, massless tracers (eps, theta_0) moved by the same field, and their linearisation
    at theta = 0 from ``curvature_at_zero`` (phi~''(0; phi_k) at the table's phi nodes)."""
    step = as_float_scalar(step, "step", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0)
    record_every = require_positive_int(record_every, "record_every", minimum=1)
    velocity = require_callable(velocity, "velocity", "(eps, c, G, dG) -> (dc/dt, dtheta/dt)")
    st = _require_state(state).copy()
    if not isinstance(table, PhiTable):
        raise TypeError(f"table must be a numerics.reduced.PhiTable; got {type(table).__name__}")
    kap = as_float_array(curvature_at_zero, "curvature_at_zero", ndim=1)
    require_same_shape(curvature_at_zero=kap, **{"table.phi": table.phi})
    tr = as_float_array(tracers, "tracers ((eps, theta_0) rows)", ndim=2)
    if tr.shape[1] != 2 or not np.all(np.abs(tr[:, 0]) == 1) or not np.all(
            (tr[:, 1] > 0) & (tr[:, 1] <= HALF_PI)):
        raise ValueError("tracers must be rows (eps, theta_0) with eps = +-1, 0 < theta_0 <= pi/2")
    require_size((steps // record_every + 2) * (tr.shape[0] + 8), "the records",
                 hint="raise record_every")
    long = require_work((steps + 1) * ((_STEP_PER_PAIR * (st.c.size + tr.shape[0])
                                        + 2 * table.grid.size) * table.n_phi
                                       + 2 * _STEP_OVERHEAD), "steps", long_run=long_run,
                        what="work units", hint="use fewer steps or particles")
    curv = _hermite_curvatures(table)
    m = st.c.size
    th0 = np.concatenate([st.theta, tr[:, 1]])
    te, tth = tr[:, 0], tr[:, 1].copy()
    lin, gron = tr[:, 1].copy(), 1.0
    rec = {k: [] for k in AngleTrack.__dataclass_fields__ if k != "final"}
    for k in RunProgress(steps + 1, "reduced.track_angles steps", long).steps():
        loss, G, dG, f = _loss_and_field(st, table)
        if not np.isfinite(loss) or loss > 1e8:
            raise DivergenceError(f"reduced GD diverged at step {k}: reduce step")
        if k % record_every == 0 or k == steps:
            sel = th0 > 0
            rec["times"].append(k * step)
            rec["min_ratio"].append(float(np.min(np.concatenate([st.theta, tth])[sel] / th0[sel])))
            for key, v in (("gronwall", gron), ("tracer", tth.copy()), ("tracer_linear", lin.copy())):
                rec[key].append(v)
            w = st.c * np.sin(st.theta) / m
            rec["plus_off_h"].append(float(w[st.eps > 0].sum()))
            rec["off_h"].append(float(st.eps @ w))
            rec["plus_mass"].append(float(st.c[st.eps > 0].sum() / m))
            cm = st.c[st.eps < 0]
            rec["minus_mean_angle"].append(float(cm @ st.theta[st.eps < 0] / cm.sum())
                                           if cm.sum() > 0 else HALF_PI)
        if k == steps:
            break
        wr = table.weights * (np.cos(table.phi) - f)
        gron *= 1.0 - step * float(np.max(np.abs(curv @ wr)))
        lin = lin * (1.0 + step * te * float(kap @ wr))
        Pt, dPt = table(tth)
        tth = fold_angle(tth + step * np.asarray(velocity(te, np.zeros_like(tth), Pt @ wr,
                                                          dPt @ wr)[1], dtype=np.float64))
        dc, dth = velocity(st.eps, st.c, G, dG)
        st.c = st.c + step * np.asarray(dc, dtype=np.float64)
        st.theta = fold_angle(st.theta + step * np.asarray(dth, dtype=np.float64))
        if not (np.all(np.isfinite(st.c)) and np.all(np.isfinite(st.theta))):
            raise DivergenceError(f"reduced GD diverged at step {k + 1}: reduce step")
    return AngleTrack(**{k: np.array(v) for k, v in rec.items()}, final=st)
