"""The mean-field flow of a two-layer ReLU network on a multi-index target f*(x) = g(x_H),
g a small ReLU network on H = span(e_1, ..., e_dH), and its reduction to (a, b_H, |b_perp|)
(Hajjar & Chizat 2023, Sec. 4, Lemma 4.2; claim H1d).

Definitions (docs/conventions.md, section 2): data x ~ N(0, s2 I_d); a weighted particle
measure mu = sum_i w_i delta_(a_i, b_i), f(x) = sum_i w_i a_i relu(b_i . x); the teacher
g(x_H) = sum_t c_t relu(v_t . x_H); L = 1/2 E (f - f*)^2; every particle moves with minus
the gradient of L in its coordinates divided by its mass w_i (the mean-field velocity of
:mod:`numerics.meanfield`):

    da_i/dt = E[(f* - f) relu(b_i . x)],   db_i/dt = a_i E[(f* - f) 1{b_i . x > 0} x].

- the FULL flow in R^(1+d): :func:`full_velocity`, :func:`full_population_loss`,
  :func:`full_flow`, every Gaussian expectation the exact arc-cosine kernel
  (:mod:`numerics.gaussian_relu`); :func:`circle_orbit` builds the initial particle set, for
  k = d - d_H = 2, a regular n-gon orbit of b_perp for each reduced particle (closed under
  the dihedral group D_n of H^perp, which the flow preserves), and for k = 3
  :func:`sphere_product_set`, a product rule on S^2 (invariant in the limit only);
- the REDUCED flow of particles (a_j, b_H,j, r_j) in 1 + d_H + 1 dimensions, with
  f(x) = sum_j w_j a_j h(b_H,j . x_H, r_j |x_perp|) for a GIVEN Haar average h and its
  partials (callables): :func:`reduced_velocity`, :func:`reduced_loss`,
  :func:`reduced_flow`, :func:`reduced_predictor`.  Every integrand of the reduced loss and
  velocity is 2-homogeneous in x, so E_x = d s2 times the average over the direction of x,
  parametrised (d_H = 2) by x_H = cos psi (cos phi, sin phi), |x_perp| = sin psi with
  density k cos psi sin^(k-1) psi / (2 pi): :func:`direction_rule`, a product rule split at
  every kink |y_j| = z_j (in psi, for each phi) and at every phi where the kinks' order or
  a sign of b_H . x_H changes, Gauss-Legendre in the cosine-substituted variable on each
  piece (square-root endpoint behaviour becomes analytic);
- :func:`haar_averaged_predictor`: the full predictor averaged over the rotations of
  x_perp (k = 2, 3), by Gauss-Legendre over the law of S split at each neuron's kink.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import roots_legendre

from numerics.gaussian_relu import gaussian_relu_kernel, gaussian_relu_kernel_grad
from numerics.validation import (as_float_array, as_float_scalar, require_callable,
                                 require_finite_result, require_positive_int, require_size,
                                 require_time_grid, require_tolerance)

__all__ = ["circle_orbit", "sphere_product_set", "full_population_loss", "full_velocity",
           "full_flow",
           "direction_rule", "reduced_velocity", "reduced_loss", "reduced_flow",
           "reduced_predictor", "haar_averaged_predictor", "MAX_RULE_NODES"]

#: largest number of Gauss-Legendre nodes per piece of :func:`direction_rule`
MAX_RULE_NODES = 256
#: largest number of particles of the full flow (the kernel matrix is N x N per step)
_MAX_FULL_PARTICLES = 4096
#: largest number of reduced particles (the rule has ~(2 m^2 + 2 m + 2 T) n^2 (m + 1) nodes)
_MAX_REDUCED_PARTICLES = 16
Haar = Callable[[np.ndarray, np.ndarray], np.ndarray]


# ----------------------------------------------------------------------------- validation
def _measure(a, B, w, name_b: str = "B (input weights, shape (N, d))"):
    a = as_float_array(a, "a (output weights, shape (N,))", ndim=1, allow_empty=False)
    B = as_float_array(B, name_b, ndim=2, allow_empty=False)
    w = as_float_array(w, "w (particle masses, shape (N,))", ndim=1)
    if B.shape[0] != a.shape[0] or w.shape != a.shape:
        raise ValueError(f"a, w and the rows of B must agree (one per particle); got shapes "
                         f"{a.shape}, {w.shape}, {B.shape}")
    if np.any(w <= 0):
        raise ValueError("w (particle masses) must be positive")
    return a, B, w


def _teacher(c, V, d: int):
    c = as_float_array(c, "c (teacher output weights, shape (T,))", ndim=1, allow_empty=False)
    V = as_float_array(V, "V (teacher input weights in H, shape (T, d_H))", ndim=2)
    if V.shape[0] != c.shape[0] or not 1 <= V.shape[1] < d:
        raise ValueError(f"V must have one row per entry of c ({c.shape[0]}) and d_H < d = {d} "
                         f"columns; got shape {V.shape}")
    return c, np.pad(V, ((0, 0), (0, d - V.shape[1])))


def _s2(s2) -> float:
    return as_float_scalar(s2, "s2 (data variance per coordinate)", lo=0.0, lo_open=True)


# ----------------------------------------------------------------------------- full flow
def circle_orbit(a, b_H, r, w, n: int, offset: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a', B', w') in R^(d_H + 2) (k = 2): for each reduced particle (a_j, b_H,j, r_j, w_j),
    n copies b = (b_H,j, r_j (cos t_l, sin t_l)), t_l = 2 pi l / n + offset, of mass w_j / n,
    rows ordered particle-major (copy l of particle j is row j n + l)."""
    a, bH, w = _measure(a, b_H, w, "b_H (reduced input weights in H, shape (m, d_H))")
    r = as_float_array(r, "r (|b_perp| of each reduced particle, shape (m,))", ndim=1)
    if r.shape != a.shape or np.any(r <= 0):
        raise ValueError(f"r must be positive with one entry per particle; got shape {r.shape}")
    n = require_positive_int(n, "n (orbit size)", minimum=2, maximum=_MAX_FULL_PARTICLES)
    offset = as_float_scalar(offset, "offset (angle of the first copy)")
    m = a.shape[0]
    require_size(m * n, "m * n (particles of the full flow)", limit=_MAX_FULL_PARTICLES)
    t = 2 * np.pi * np.arange(n) / n + offset
    perp = r[:, None, None] * np.stack([np.cos(t), np.sin(t)], axis=1)[None]   # (m, n, 2)
    B = np.concatenate([np.broadcast_to(bH[:, None, :], (m, n, bH.shape[1])), perp], axis=2)
    return np.repeat(a, n), B.reshape(m * n, -1), np.repeat(w / n, n)


def sphere_product_set(a, b_H, r, w, n: int, offset: float = 0.0
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a', B', w') in R^(d_H + 3) (k = 3): for each reduced particle, n^2 / 2 copies
    b = (b_H,j, r_j u), u = (sqrt(1 - t^2) cos p, sqrt(1 - t^2) sin p, t) on the product rule
    of S^2 (t: n / 2 Gauss-Legendre nodes, p: n equispaced azimuths + offset), of mass w_j
    times the rule's weight; rows ordered particle-major.  Closed under the dihedral group
    D_n about the third axis and t -> -t, not under O(3): it tends to the O(3)-invariant
    measure as n grows (measured, not exact)."""
    a, bH, w = _measure(a, b_H, w, "b_H (reduced input weights in H, shape (m, d_H))")
    r = as_float_array(r, "r (|b_perp| of each reduced particle, shape (m,))", ndim=1)
    if r.shape != a.shape or np.any(r <= 0):
        raise ValueError(f"r must be positive with one entry per particle; got shape {r.shape}")
    n = require_positive_int(n, "n (azimuths; n / 2 polar nodes)", minimum=2,
                             maximum=_MAX_FULL_PARTICLES)
    if n % 2:
        raise ValueError(f"n (azimuths; n / 2 polar nodes) must be even; got {n}")
    offset = as_float_scalar(offset, "offset (angle of the first azimuth)")
    m, q = a.shape[0], n * (n // 2)
    require_size(m * q, "m * n^2 / 2 (particles of the full flow)", limit=_MAX_FULL_PARTICLES)
    t, wt = roots_legendre(n // 2)
    T, P = np.meshgrid(t, 2 * np.pi * np.arange(n) / n + offset, indexing="ij")
    s = np.sqrt(1 - T ** 2)
    U = np.stack([s * np.cos(P), s * np.sin(P), T], axis=-1).reshape(q, 3)
    wu = np.repeat(wt / 2, n) / n
    perp = (r[:, None, None] * U[None]).reshape(m * q, 3)
    B = np.concatenate([np.repeat(bH, q, axis=0), perp], axis=1)
    return np.repeat(a, q), B, (w[:, None] * wu[None]).ravel()


def full_population_loss(a, B, w, c, V, s2: float) -> float:
    """L = 1/2 E (f - f*)^2 for f = sum_i w_i a_i relu(b_i . x), f* = sum_t c_t relu(v_t . x_H),
    x ~ N(0, s2 I_d), from the arc-cosine kernel (exact)."""
    a, B, w = _measure(a, B, w)
    c, Vd = _teacher(c, V, B.shape[1])
    s2 = _s2(s2)
    wa = w * a
    with np.errstate(over="ignore", invalid="ignore"):
        loss = 0.5 * (wa @ gaussian_relu_kernel(B, B, s2) @ wa
                      - 2 * wa @ gaussian_relu_kernel(B, Vd, s2) @ c
                      + c @ gaussian_relu_kernel(Vd, Vd, s2) @ c)
    return float(require_finite_result(loss, "full_population_loss", "a, B, c or V too large"))


def full_velocity(a, B, w, c, V, s2: float) -> tuple[np.ndarray, np.ndarray]:
    """(da/dt, dB/dt) of every particle: minus the gradient of :func:`full_population_loss`
    in (a_i, b_i) divided by w_i (exact Gaussian expectations)."""
    a, B, w = _measure(a, B, w)
    c, Vd = _teacher(c, V, B.shape[1])
    s2 = _s2(s2)
    require_size(B.shape[0] ** 2, "N^2 (kernel matrix of the full flow)")
    N, T = B.shape[0], c.shape[0]
    wa = w * a
    with np.errstate(over="ignore", invalid="ignore"):
        da = gaussian_relu_kernel(B, Vd, s2) @ c - gaussian_relu_kernel(B, B, s2) @ wa
        grad = (gaussian_relu_kernel_grad(B, Vd, s2, np.broadcast_to(c, (N, T)))
                - gaussian_relu_kernel_grad(B, B, s2, np.broadcast_to(wa, (N, N))))
        dB = a[:, None] * grad
    require_finite_result((da, dB), "full_velocity", "a, B, c or V too large")
    return da, dB


def full_flow(a, B, w, c, V, s2: float, t_eval, *, rtol: float = 1e-10, atol: float = 1e-12
              ) -> tuple[np.ndarray, np.ndarray]:
    """(a(t), B(t)) at the times ``t_eval`` (from t = 0) of the full flow, DOP853."""
    a, B, w = _measure(a, B, w)
    c, _ = _teacher(c, V, B.shape[1])
    s2 = _s2(s2)
    t_eval = require_time_grid(t_eval, "t_eval", start=0.0)
    rtol, atol = require_tolerance(rtol, "rtol"), require_tolerance(atol, "atol")
    N, d = B.shape

    def rhs(_t, y):
        da, dB = full_velocity(y[:N], y[N:].reshape(N, d), w, c, V, s2)
        return np.concatenate([da, dB.ravel()])

    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), np.concatenate([a, B.ravel()]),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise ValueError(f"full_flow: the integrator failed ({sol.message}); shorten t_eval")
    Y = sol.y.T
    return Y[:, :N], Y[:, N:].reshape(-1, N, d)


# ----------------------------------------------------------------------------- reduced flow
def _gauss_cos(lo: np.ndarray, hi: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [lo, hi] (broadcast, new last axis of length n): Gauss-Legendre
    in theta in [0, pi] after t = lo + (hi - lo)(1 - cos theta)/2."""
    x, wx = roots_legendre(n)
    th = np.pi * (x + 1) / 2
    L = (hi - lo)[..., None]
    return lo[..., None] + L * (1 - np.cos(th)) / 2, L * (np.pi / 4) * np.sin(th) * wx


def _phi_breaks(b_H: np.ndarray, r: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Sorted angles in [0, 2 pi] where some b_H,j . x_H or v_t . x_H changes sign or two
    kink curves tan psi = |b_H,i . e_phi| / r_i cross."""
    pts = [0.0, 2 * np.pi]
    for v in np.concatenate([b_H, V]):
        if np.any(v != 0):
            p0 = np.arctan2(v[1], v[0])
            pts += [p0 + np.pi / 2, p0 - np.pi / 2]
    A = b_H / r[:, None]
    for i in range(len(A)):
        for j in range(i):
            for sgn in (1.0, -1.0):
                P, Q = A[i] - sgn * A[j]              # P cos phi + Q sin phi = 0
                if np.hypot(P, Q) > 1e-14 * (np.abs(A[i]).sum() + np.abs(A[j]).sum()):
                    p0 = np.arctan2(-P, Q)
                    pts += [p0, p0 + np.pi]
    return np.unique(np.mod(pts[2:], 2 * np.pi).tolist() + pts[:2])


def direction_rule(b_H, r, V, k: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U_H (Q, 2), u_perp (Q,), W (Q,)): a rule for the average over the direction
    x / |x| of x ~ N(0, s2 I_(2 + k)), U_H = cos psi e_phi, u_perp = sin psi, weights
    summing to 1, split at every kink of h(b_H,j . x_H, r_j |x_perp|) and of the teacher
    relu(v_t . x_H) (see the module docstring); n Gauss-Legendre nodes per piece."""
    bH = as_float_array(b_H, "b_H (reduced input weights in H, shape (m, 2))", ndim=2,
                        allow_empty=False)
    r = as_float_array(r, "r (|b_perp| of each reduced particle, shape (m,))", ndim=1)
    V = as_float_array(V, "V (teacher input weights in H, shape (T, 2))", ndim=2)
    if bH.shape[1] != 2 or V.shape[1:] != (2,):
        raise ValueError(f"direction_rule needs d_H = 2: b_H and V must have 2 columns; got "
                         f"{bH.shape}, {V.shape}")
    if r.shape != (bH.shape[0],) or np.any(r <= 0):
        raise ValueError(f"r must be positive with one entry per row of b_H; got {r.shape}")
    if bH.shape[0] > _MAX_REDUCED_PARTICLES:
        raise ValueError(f"b_H has {bH.shape[0]} rows; at most {_MAX_REDUCED_PARTICLES} "
                         "reduced particles (the rule grows like m^3)")
    k = require_positive_int(k, "k (dimension of H^perp)", maximum=10 ** 6)
    n = require_positive_int(n, "n (nodes per piece)", minimum=2, maximum=MAX_RULE_NODES)
    m = bH.shape[0]
    brk = _phi_breaks(bH, r, V)
    require_size((brk.size - 1) * n * n * (m + 1), "the direction rule's nodes")
    phi, wphi = _gauss_cos(brk[:-1], brk[1:], n)
    phi, wphi = phi.ravel(), wphi.ravel()
    e = np.stack([np.cos(phi), np.sin(phi)], axis=1)                    # (P, 2)
    psi_k = np.arctan(np.abs(e @ bH.T) / r)                             # (P, m)
    ends = np.sort(np.concatenate([np.zeros((phi.size, 1)), psi_k,
                                   np.full((phi.size, 1), np.pi / 2)], axis=1), axis=1)
    psi, wpsi = _gauss_cos(ends[:, :-1], ends[:, 1:], n)                # (P, m + 1, n)
    dens = k * np.cos(psi) * np.sin(psi) ** (k - 1) / (2 * np.pi)
    W = (wphi[:, None, None] * wpsi * dens).ravel()
    cp = np.cos(psi)
    U_H = (cp[..., None] * e[:, None, None, :]).reshape(-1, 2)
    return U_H, np.sin(psi).ravel(), W


def _reduced_state(a, b_H, r, w):
    a, bH, w = _measure(a, b_H, w, "b_H (reduced input weights in H, shape (m, d_H))")
    r = as_float_array(r, "r (|b_perp| of each reduced particle, shape (m,))", ndim=1)
    if r.shape != a.shape or np.any(r <= 0):
        raise ValueError(f"r must be positive with one entry per particle; got shape {r.shape}")
    return a, bH, r, w


def _haar_eval(fn: Haar, Y: np.ndarray, Z: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = np.asarray(fn(Y, Z), float)
    out = np.broadcast_to(out, Y.shape)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name}(y, z) returned non-finite values at z > 0; give a callable "
                         "defined for every real y and z > 0")
    return out


def _reduced_terms(a, b_H, r, w, c, V, s2, d, haar, n):
    """(W d s2, the residual f* - f, h, d h/dy, d h/dz, U_H, u_perp) on the rule's nodes."""
    h = require_callable(haar[0], "h", "(y, z)")
    h_y, h_z = (f if f is None else require_callable(f, nm, "(y, z)") for f, nm in
                zip(haar[1:], ("h_y", "h_z")))
    U_H, u_p, W = direction_rule(b_H, r, V, d - 2, n)
    Y, Z = U_H @ b_H.T, np.outer(u_p, r)
    H = _haar_eval(h, Y, Z, "h")
    f_star = np.maximum(U_H @ V.T, 0.0) @ c
    res = f_star - H @ (w * a)
    dy = _haar_eval(h_y, Y, Z, "h_y") if h_y is not None else None
    dz = _haar_eval(h_z, Y, Z, "h_z") if h_z is not None else None
    return W * (d * s2), res, H, dy, dz, U_H, u_p


def _reduced_args(a, b_H, r, w, c, V, s2, d, n):
    a, bH, r, w = _reduced_state(a, b_H, r, w)
    d = require_positive_int(d, "d (ambient dimension)", minimum=3, maximum=10 ** 6)
    c, Vd = _teacher(c, V, d)
    if bH.shape[1] != 2:
        raise ValueError(f"the reduced flow is implemented for d_H = 2; b_H has {bH.shape[1]} "
                         "columns")
    return a, bH, r, w, c, Vd[:, :2], _s2(s2), d, n


def reduced_loss(a, b_H, r, w, c, V, s2: float, d: int, h: Haar, n: int = 24) -> float:
    """L = 1/2 E (f - f*)^2 of the reduced predictor f(x) = sum_j w_j a_j h(b_H,j . x_H,
    r_j |x_perp|), x ~ N(0, s2 I_d), d_H = 2, by the :func:`direction_rule`."""
    args = _reduced_args(a, b_H, r, w, c, V, s2, d, n)
    W, res, *_ = _reduced_terms(*args[:-1], (h, None, None), args[-1])
    return float(0.5 * W @ res ** 2)


def reduced_velocity(a, b_H, r, w, c, V, s2: float, d: int, h: Haar, h_y: Haar, h_z: Haar,
                     n: int = 24) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(da_j/dt, db_H,j/dt, dr_j/dt): minus the gradient of :func:`reduced_loss` in
    (a_j, b_H,j, r_j) divided by w_j, i.e. E[(f* - f) h], a_j E[(f* - f) h_y x_H] and
    a_j E[(f* - f) h_z |x_perp|] (Lemma 4.2)."""
    args = _reduced_args(a, b_H, r, w, c, V, s2, d, n)
    a = args[0]
    W, res, H, dy, dz, U_H, u_p = _reduced_terms(*args[:-1], (h, h_y, h_z), args[-1])
    Wr = W * res
    da = Wr @ H
    dbH = a[:, None] * np.einsum("q,qj,qi->ji", Wr, dy, U_H)
    dr = a * ((Wr * u_p) @ dz)
    return da, dbH, dr


def reduced_flow(a, b_H, r, w, c, V, s2: float, d: int, h: Haar, h_y: Haar, h_z: Haar,
                 t_eval, *, n: int = 24, rtol: float = 1e-10, atol: float = 1e-12
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a(t), b_H(t), r(t)) at the times ``t_eval`` of the reduced flow
    (:func:`reduced_velocity`), DOP853."""
    a, bH, r, w, c, V2, s2, d, n = _reduced_args(a, b_H, r, w, c, V, s2, d, n)
    t_eval = require_time_grid(t_eval, "t_eval", start=0.0)
    rtol, atol = require_tolerance(rtol, "rtol"), require_tolerance(atol, "atol")
    m = a.shape[0]

    def rhs(_t, y):
        if np.any(y[3 * m:] <= 0):
            raise ValueError("reduced_flow: some r_j reached 0 (the reduction needs "
                             "b_perp != 0); shorten t_eval")
        da, dbH, dr = reduced_velocity(y[:m], y[m:3 * m].reshape(m, 2), y[3 * m:], w, c, V2,
                                       s2, d, h, h_y, h_z, n)
        return np.concatenate([da, dbH.ravel(), dr])

    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), np.concatenate([a, bH.ravel(), r]),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise ValueError(f"reduced_flow: the integrator failed ({sol.message}); shorten t_eval")
    Y = sol.y.T
    return Y[:, :m], Y[:, m:3 * m].reshape(-1, m, 2), Y[:, 3 * m:]


def reduced_predictor(a, b_H, r, w, X_H, rho, h: Haar) -> np.ndarray:
    """f(x) = sum_j w_j a_j h(b_H,j . x_H, r_j rho) at the points (x_H, rho = |x_perp| > 0)."""
    a, bH, r, w = _reduced_state(a, b_H, r, w)
    XH = as_float_array(X_H, "X_H (points' components in H, shape (p, d_H))", ndim=2)
    rho = as_float_array(rho, "rho (|x_perp| of each point, shape (p,))", ndim=1)
    if XH.shape[1] != bH.shape[1] or rho.shape != (XH.shape[0],) or np.any(rho <= 0):
        raise ValueError(f"X_H must have d_H = {bH.shape[1]} columns and rho one positive "
                         f"entry per row; got {XH.shape}, {rho.shape}")
    h = require_callable(h, "h", "(y, z)")
    return _haar_eval(h, XH @ bH.T, np.outer(rho, r), "h") @ (w * a)


def haar_averaged_predictor(a, B, w, X, d_H: int, n: int = 32) -> np.ndarray:
    """E_g f(x_H, g x_perp), g uniform on SO(k), k = d - d_H in {2, 3}, of the full
    predictor f = sum_i w_i a_i relu(b_i . x): for each neuron the mean of relu(y + z S)
    over the law of S, the first coordinate of Unif(S^(k-1)): S = cos t, t uniform on
    [0, pi] (k = 2), S uniform on [-1, 1] (k = 3, Archimedes); Gauss-Legendre on the two
    pieces split at the kink y + z S = 0 (analytic on each: exact to rounding for n >= 24
    when z <= |y| + 10)."""
    a, B, w = _measure(a, B, w)
    X = as_float_array(X, "X (points, shape (p, d))", ndim=2, allow_empty=False)
    d_H = require_positive_int(d_H, "d_H (dimension of H)", maximum=B.shape[1])
    k = B.shape[1] - d_H
    if X.shape[1] != B.shape[1] or k not in (2, 3):
        raise ValueError(f"X must have d = {B.shape[1]} columns and d - d_H must be 2 or 3; "
                         f"got X {X.shape}, d_H = {d_H}")
    n = require_positive_int(n, "n (nodes per piece)", minimum=2, maximum=MAX_RULE_NODES)
    require_size(X.shape[0] * B.shape[0] * n, "p * N * n (quadrature table)")
    y = X[:, :d_H] @ B[:, :d_H].T                                         # (p, N)
    z = np.outer(np.linalg.norm(X[:, d_H:], axis=1), np.linalg.norm(B[:, d_H:], axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        s0 = np.clip(-y / np.where(z > 0, z, 1), -1, 1)       # the kink in S
    if k == 2:   # t in [0, pi], S = cos t, positive part for t < arccos(s0)
        lo, hi, S = 0.0, np.pi, np.cos
        tk = np.where(z > np.abs(y), np.arccos(s0), np.where(y >= 0, np.pi, 0.0))
    else:        # S in [-1, 1], positive part for S > s0
        lo, hi, S = -1.0, 1.0, (lambda s: s)
        tk = np.where(z > np.abs(y), s0, np.where(y >= 0, -1.0, 1.0))
    t1, w1 = _gauss_cos(np.full_like(tk, lo), tk, n)
    t2, w2 = _gauss_cos(tk, np.full_like(tk, hi), n)
    g1 = np.maximum(y[..., None] + z[..., None] * S(t1), 0.0)
    g2 = np.maximum(y[..., None] + z[..., None] * S(t2), 0.0)
    mean = ((g1 * w1).sum(-1) + (g2 * w2).sum(-1)) / (hi - lo)
    return mean @ (w * a)
