"""Hajjar & Chizat (2023): the studies that claims and experiments share (docs/conventions.md §2).

- :func:`alpha_by_quadrature`: alpha(k) = 1 / E[(u . e)_+] from its definition by quadrature
  (H1f checks it against the derived closed form);
- :func:`target_rule`, :func:`init_particles`: the target term's rule and the default
  initialization of the width-m network;
- the odd target of claim H1c: :func:`h1c_target`, :func:`h1c_population`,
  :func:`h1c_particles_and_sample`, :func:`derived_s_of_t` (its infinite-width trajectory);
- the mean-field limit of claim H1i: :func:`limit_initial_state` (a quadrature of the
  initial law in the reduced variables (c, theta, eps): weighted reduced particles, not
  Monte Carlo), :func:`limit_predictor` (that quadrature evolved by the reduced flow of
  Thm 4.3, read on test inputs), :func:`width_predictor` (the d-dimensional width-m
  population gradient flow from an i.i.d. initialization, run at the derived time change),
  :func:`l2_distance`.

Why the reduced flow is the limit: mu_0 (a = +-1 with probability 1/2, b ~ Unif(S^{d-1})) is
invariant under O(d_H) x O(d - d_H), which fixes f* = |x_H| and the data law; by Prop. 2.1
the mean-field flow mu_t stays invariant, hence (Thm 4.3) it is the orbit of the reduced
measure tau_t^+- on theta in [0, pi/2], driven by the reduced field.  Under mu_0,
c = |a||b| = 1, eps = sign a is +-1 with probability 1/2 independent of b, and
cos^2 theta = |u_H|^2 ~ Beta(d_H/2, (d - d_H)/2): a Gauss-Jacobi rule in cos(2 theta)
(numerics.reduced.phi_quadrature, the same law as phi_x) with n nodes for each sign
discretizes tau_0^+- exactly on polynomials of degree 2n - 1 in cos(2 theta).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp
from scipy.optimize import brentq
from scipy.special import roots_jacobi

from derivations import hajjar as dh
from numerics import population as pop
from numerics import reduced as rd
from numerics.sphere import sample_sphere
from numerics.twolayer import forward
from numerics.validation import (as_float_array, as_float_scalar, require_callable,
                                 require_generator, require_positive_int, require_size)

__all__ = ["alpha_by_quadrature", "target_rule", "init_particles", "limit_initial_state",
           "limit_predictor", "width_predictor", "l2_distance", "parameter_step",
           "full_reduced_velocity", "derived_reduced_velocity", "phi_table",
           "derived_velocity", "h1c_target", "h1c_population", "derived_s_of_t",
           "h1c_particles_and_sample", "odd_subspace_target", "symmetric_sample",
           "sample_rk4_flow", "sample_width_predictor", "moment_field", "moment_limit",
           "width_table", "width_study_outcome", "width_study_figure"]


@lru_cache(maxsize=None)
def alpha_by_quadrature(k: int) -> float:
    """alpha(k) = 1 / E[(u.e)_+], u ~ Unif(S^{k-1}) (claim H1f) by the mpmath coordinate
    quadrature of numerics.sphere (30 digits; H1f checks it against the derived closed
    form); 2 for k = 1."""
    from numerics.sphere import positive_part_mean_coordinate_mp
    k = require_positive_int(k, "k (dimension of the sphere's ambient space)", maximum=10 ** 6)
    return 2.0 if k == 1 else float(1 / positive_part_mean_coordinate_mp(k))


def target_rule(d_H: int, n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """The rule of the target term of numerics.population / numerics.gaussian_relu: nodes of
    R = w . e_1, w ~ Unif(S^{d_H-1}) (Gauss-Jacobi, exact on polynomials of degree 2n - 1),
    weights summing to alpha(d_H), so that |x_H| = alpha E_w relu(w . x_H)."""
    d_H = require_positive_int(d_H, "d_H (dimension of H)", maximum=10 ** 6)
    n = require_positive_int(n, "n (nodes)", maximum=4096)
    if d_H == 1:
        return np.array([-1.0, 1.0]), np.ones(2)
    r, w = roots_jacobi(n, (d_H - 3) / 2, (d_H - 3) / 2)
    return np.asarray(r, float), np.asarray(w / w.sum() * alpha_by_quadrature(d_H), float)


def init_particles(rng: np.random.Generator, m: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The default initialization (docs/conventions.md §2), i.i.d. over particles: a = +-1 with
    probability 1/2, b ~ Unif(S^{d-1}), so |a| = |b|."""
    rng = require_generator(rng, "rng")
    m = require_positive_int(m, "m (width)", maximum=10 ** 7)
    d = require_positive_int(d, "d (input dimension)", minimum=2, maximum=10 ** 6)
    B = sample_sphere(rng, m, d)
    return rng.choice([-1.0, 1.0], size=m), B


def limit_initial_state(d: int, d_H: int, n: int) -> rd.ReducedState:
    """tau_0^+- of the default initialization as 2n weighted reduced particles: theta_k the
    n Gauss-Jacobi nodes of the law of theta (cos^2 theta ~ Beta(d_H/2, (d - d_H)/2)) with
    weights W_k, each with eps = +1 and eps = -1 (probability 1/2 each), c = 1.  In the
    (1/M) sum_j c_j delta_theta_j form of numerics.reduced (M = 2n) a weight enters as the
    mass c_j = M W_k / 2 = n W_k: the reduced field is linear in c and leaves theta's
    velocity independent of c, so weights and masses are interchangeable."""
    d, d_H = rd.validate_dims(d, d_H)
    n = require_positive_int(n, "n (quadrature nodes per sign)", maximum=rd.MAX_PHI_NODES)
    th, w = rd.phi_quadrature(d, d_H, n)
    return rd.ReducedState(np.concatenate([w, w]) * n, np.concatenate([th, th]),
                           np.concatenate([np.ones(n), -np.ones(n)]))


def limit_predictor(X, d_H: int, T: float, *, n: int, table: rd.PhiTable, velocity: Callable,
                    kernel: Any, rtol: float = 1e-10) -> np.ndarray:
    """f(mu_T; x) of the mean-field limit at flow time T on the rows of X: the quadrature
    :func:`limit_initial_state` with n nodes per sign, evolved by the reduced flow
    (numerics.reduced.simulate_flow, DOP853 at ``rtol``, field ``velocity`` on the phi~
    ``table``), read by numerics.reduced.reduced_predictor (phi~ by ``kernel``)."""
    X = as_float_array(X, "X (test inputs, shape (n, d))", ndim=2, allow_empty=False)
    T = as_float_scalar(T, "T (flow time)", lo=0.0)
    if not isinstance(table, rd.PhiTable):
        raise TypeError(f"table must be a numerics.reduced.PhiTable; got {type(table).__name__}")
    if (table.d, table.d_H) != (X.shape[1], d_H):
        raise ValueError(f"table is built for (d, d_H) = {(table.d, table.d_H)} but X has "
                         f"d = {X.shape[1]} and d_H = {d_H}")
    st0 = limit_initial_state(X.shape[1], d_H, n)
    if T > 0:
        run = rd.simulate_flow(st0, table, np.array([0.0, T]), rtol=rtol, atol=1e-13,
                               velocity=velocity)
        st0 = run.final
    return rd.reduced_predictor(st0, X, d_H, kernel)


def parameter_step(time_per_step: Callable, m: int, dt: float) -> float:
    """The learning rate eta whose step covers the flow time dt at width m, i.e. the root of
    time_per_step(eta, m) = dt (``time_per_step`` is the derived time change of claim H1i,
    increasing in eta); found by bracketing, so that any derived form is honoured."""
    time_per_step = require_callable(time_per_step, "time_per_step", "(eta, m) -> flow time")
    m = require_positive_int(m, "m (width)", maximum=10 ** 9)
    dt = as_float_scalar(dt, "dt (flow time per step)", lo=0.0, lo_open=True)
    g = lambda eta: float(time_per_step(eta, m)) - dt  # noqa: E731
    lo, hi = 0.0, dt * m
    for _ in range(200):
        if g(hi) > 0:
            break
        hi *= 2
    else:
        raise ValueError("parameter_step: time_per_step(eta, m) never reaches dt")
    if g(lo) >= 0:
        raise ValueError(f"parameter_step: time_per_step(0, m) = {time_per_step(0.0, m)!r} "
                         f">= dt = {dt}: no positive learning rate covers dt")
    return float(brentq(g, lo, hi, xtol=1e-15 * hi, rtol=4 * np.finfo(float).eps))


def width_predictor(rng: np.random.Generator, X, m: int, d_H: int, *, eta: float,
                    steps: int) -> np.ndarray:
    """f_m(x) of the width-m network after ``steps`` Runge-Kutta steps of learning rate
    ``eta`` of the population gradient flow (numerics.population.rk4_gradient_flow, data
    N(0, I_d / d)) from :func:`init_particles` drawn from ``rng``, on the rows of X."""
    X = as_float_array(X, "X (test inputs, shape (n, d))", ndim=2, allow_empty=False)
    d = X.shape[1]
    a, B = init_particles(rng, m, d)
    r, w = target_rule(d_H)
    a, B = pop.rk4_gradient_flow(a, B, d_H, 1.0 / d, r, w, eta, steps)
    return forward(a, B, X)


def l2_distance(f, g) -> float:
    """sqrt(mean (f - g)^2): the L2(rho) distance of two predictors on a sample of rho."""
    f = as_float_array(f, "f (predictor values)", ndim=1, allow_empty=False)
    g = as_float_array(g, "g (predictor values)", ndim=1)
    if f.shape != g.shape:
        raise ValueError(f"f and g must have the same shape; got {f.shape}, {g.shape}")
    return float(np.sqrt(np.mean((f - g) ** 2)))


def full_reduced_velocity(measure, test, d: int, d_H: int, nq: int
                          ) -> tuple[np.ndarray, np.ndarray]:
    """(dc/dt, dtheta/dt) of the test particles ``test = (c, theta, eps)`` from the full
    d-dimensional mean-field velocity of the O(d_H) x O(d - d_H)-invariant measure generated
    by ``measure = (c, theta, eps)`` (mass 1/m each; numerics.meanfield: exact Gaussian
    expectations, Gauss-Jacobi with nq nodes per group coordinate), in the coordinates
    c = |a||b|, theta = arccos(|b_H|/|b|) by the chain rule (claims H1h, H1i)."""
    from numerics import meanfield as mf
    c, th, eps = (as_float_array(v, "measure (c, theta, eps)", ndim=1) for v in measure)
    ct, tt, et = (as_float_array(v, "test (c, theta, eps)", ndim=1) for v in test)
    a, B, w = mf.haar_symmetric_particles(eps * np.sqrt(c), np.sqrt(c), th, d, d_H, nq, nq)
    Bt = np.zeros((ct.size, d))
    Bt[:, 0], Bt[:, d_H] = np.sqrt(ct) * np.cos(tt), np.sqrt(ct) * np.sin(tt)
    at = et * np.sqrt(ct)
    r, wr = mf.coordinate_rule(d_H, 4 * nq)
    va, vB = mf.population_velocity(a, B, w, at, Bt, d_H, 1.0 / d, r,
                                    wr * alpha_by_quadrature(d_H))
    return mf.reduced_coordinate_velocity(at, Bt, va, vB, d_H)


def derived_reduced_velocity(velocity: Callable, measure, test, d: int, d_H: int, step: float,
                             phi_fn: Callable, dphi_fn: Callable
                             ) -> tuple[np.ndarray, np.ndarray]:
    """The reduced field (dc/dt, dtheta/dt) = velocity(eps, c, G, G') of the test particles,
    G(theta) = E_phi[(cos phi - f~(phi)) phi~(theta; phi)], f~ = (1/m) sum eps_j c_j
    phi~(theta_j; .), E_phi by numerics.reduced.phi_rule (tanh-sinh step ``step``) split at
    the kinks pi/2 - theta; ``phi_fn``, ``dphi_fn`` evaluate phi~ and its theta-derivative
    (theta, phi, d, d_H) (claims H1h, H1i)."""
    velocity = require_callable(velocity, "velocity", "(eps, c, G, dG) -> (dc/dt, dtheta/dt)")
    c, th, eps = (as_float_array(v, "measure (c, theta, eps)", ndim=1) for v in measure)
    ct, tt, et = (as_float_array(v, "test (c, theta, eps)", ndim=1) for v in test)
    ph, W = rd.phi_rule(d, d_H, np.concatenate([np.pi / 2 - th, np.pi / 2 - tt]), step)
    f = (eps * c) @ phi_fn(th[:, None], ph[None, :], d, d_H) / c.size
    wr = W * (np.cos(ph) - f)
    G = phi_fn(tt[:, None], ph[None, :], d, d_H) @ wr
    dG = dphi_fn(tt[:, None], ph[None, :], d, d_H) @ wr
    return velocity(et, ct, G, dG)


@lru_cache(maxsize=4)
def _table_cached(d: int, d_H: int, n_theta: int, n_phi: int, generation: int) -> rd.PhiTable:
    from verify.formulas.hajjar import phi_kernel
    return rd.PhiTable(d, d_H, n_theta, n_phi, kernel=phi_kernel())


def phi_table(d: int, d_H: int, n_theta: int, n_phi: int) -> rd.PhiTable:
    """The phi~ table of the reduced simulators, from the derived kernel of claim H1e
    (cached per derivation generation, so that a mutated derivation rebuilds it)."""
    from verify import derived
    return _table_cached(d, d_H, n_theta, n_phi, derived.generation())


def derived_velocity(der: Any) -> Callable:
    """(eps, c, G, G') -> (dc/dt, dtheta/dt) lambdified from a derivation's reduced field
    (results ``dc_dt``, ``dtheta_dt`` of H1g, H1h, H1i; ``der`` a Derivation or its results
    mapping, e.g. ``verify.kit.derived_results("H1g")``), broadcast to the shape of c."""
    import sympy as sp
    from derivations.hajjar_reduced import FIELD_SYMBOLS
    res = der.results if hasattr(der, "results") else der
    f = sp.lambdify(FIELD_SYMBOLS, [res["dc_dt"], res["dtheta_dt"]], "numpy")

    def velocity(e, cc, g, dg):
        dc, dth = f(e, cc, g, dg)
        return np.broadcast_to(dc, cc.shape), np.broadcast_to(dth, cc.shape)
    return velocity


# ---------------------------------------------------------------- H1c (odd targets)
@lru_cache(maxsize=8)
def _target_fn(d: int):
    f_star, xs = dh.odd_target(d)
    return sp.lambdify(xs, f_star, "numpy")


def h1c_target(X: np.ndarray) -> np.ndarray:
    """The odd target f*(x) = sqrt(d) x_1 |x_2| + x_3 on the rows of X (n, d), evaluated from
    its one definition (derivations.hajjar.odd_target)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] < 3:
        raise ValueError(f"h1c_target: X must be an (n, d) array with d >= 3; got shape {X.shape}")
    return np.asarray(_target_fn(X.shape[1])(*X.T), dtype=float)


@lru_cache(maxsize=8)
def _population_expr(d: int) -> tuple[sp.Expr, ...]:
    f_star, xs = dh.odd_target(d)
    v = sp.Rational(1, d)
    return tuple(dh.gaussian_mean(f_star * x, xs, v) / v for x in xs)


def h1c_population(d: int) -> np.ndarray:
    """w* = d E[f* x] for x ~ N(0, I/d), derived in SymPy from the target's definition
    (derivations.hajjar.gaussian_mean; the H1c derivation's ``w_star_population`` for
    d = derivations.hajjar.H1C_DIM)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 3 <= d <= 64:
        raise ValueError(f"h1c_population: d must be an integer in 3..64; got {d!r}")
    return np.array([float(e) for e in _population_expr(int(d))])


def derived_s_of_t(der: Any, V: float, v: float, q: float):
    """(s(t), t(s)) of the derived infinite-width trajectory w(t) = s(t) w*: s(t) = 1 - u(t)
    from the derived closed-form inverse u(t) (no root finding: exact as s -> 1, where
    u(t) underflows to 0 gracefully); t(s) by quadrature of 1 / (ds/dt)."""
    from scipy.integrate import quad
    sy = dh.ODD
    u_fn = sp.lambdify(sy["t"], der.results["remaining"].subs({sy["V"]: V, sy["v"]: v, sy["q"]: q}),
                       "numpy")
    speed = sp.lambdify(sy["s"], der.results["speed"].subs({sy["V"]: V, sy["v"]: v, sy["q"]: q}),
                        "numpy")

    def s_of_t(t: float) -> float:
        if t <= 0:
            return 0.0
        with np.errstate(over="ignore"):
            return float(1.0 - u_fn(float(t)))

    def t_of_s(s: float) -> float:
        return float(quad(lambda x: 1.0 / speed(x), 0.0, s, limit=200)[0])
    return s_of_t, t_of_s


def h1c_particles_and_sample(rng_particles: np.random.Generator, rng_data: np.random.Generator,
                             d: int, n_frames: int, n_half: int
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The H1c initial system (a, B, X, Y): 4 d n_frames pair-closed particles and 2 n_half
    whitened symmetric data points with the odd target's values.

    Particles: the base input weights are the rows of n_frames random orthogonal d x d
    matrices (so sum_j b_j b_j^T is exactly n_frames I: the second moment of Unif(S^{d-1}),
    v_b = 1/d), the base output weights random signs, closed under the 4-orbit
    {(a, b), (-a, -b), (a, -b), (-a, b)} (closed under (a, b) -> (-a, -b), and w(0) = 0).
    Data: n_half standard normal points and their negatives, whitened so that
    E_n[x x^T] = I/d exactly (E_n[f* x] stays random)."""
    rng_particles = require_generator(rng_particles, "rng_particles")
    rng_data = require_generator(rng_data, "rng_data")
    d = require_positive_int(d, "d (dimension; the target needs d >= 3)", minimum=3, maximum=64)
    n_frames = require_positive_int(n_frames, "n_frames (orthogonal frames of base particles)")
    n_half = require_positive_int(n_half, "n_half (data points before the mirror x -> -x; at "
                                          "least d for an invertible sample covariance)",
                                  minimum=d)
    require_size(4 * n_frames * d * d, "n_frames (the 4 d n_frames particles in R^d)")
    require_size(2 * n_half * d, "n_half (the 2 n_half data points in R^d)")
    B0 = np.concatenate([np.linalg.qr(rng_particles.standard_normal((d, d)))[0]
                         for _ in range(n_frames)])
    a0 = rng_particles.choice([-1.0, 1.0], size=B0.shape[0])
    a = np.concatenate([a0, -a0, a0, -a0])
    B = np.concatenate([B0, -B0, -B0, B0])
    X0 = rng_data.standard_normal((n_half, d))
    X = np.concatenate([X0, -X0])
    L = np.linalg.cholesky(X.T @ X / X.shape[0])
    X = np.linalg.solve(L, X.T).T / np.sqrt(d)
    return a, B, X, h1c_target(X)


# ------------------------------------------- H1m (odd target, i.i.d. product law, sample)
def odd_subspace_target(X, d_H: int) -> np.ndarray:
    """The odd target of claim H1m, f*(x) = x_1 |x_H| / sqrt(d_H), x_H the first d_H
    coordinates, on the rows of X (n, d): odd under x -> -x and a function of x_H only."""
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2)
    d_H = require_positive_int(d_H, "d_H (dimension of H)", maximum=X.shape[1])
    return X[:, 0] * np.linalg.norm(X[:, :d_H], axis=1) / np.sqrt(d_H)


def symmetric_sample(rng: np.random.Generator, d: int, n0: int, kappa: float) -> np.ndarray:
    """2 n0 points closed under x -> -x: n0 draws of N(0, Q diag(lambda) Q^T), Q a random
    rotation and lambda log-uniform in [1/kappa, 1] (an anisotropic second moment), and
    their negatives (claim H1m)."""
    rng = require_generator(rng, "rng")
    d = require_positive_int(d, "d (input dimension)", minimum=2, maximum=4096)
    n0 = require_positive_int(n0, "n0 (points before the mirror x -> -x; at least d for an "
                                  "invertible Sigma)", minimum=d, maximum=10 ** 7)
    kappa = as_float_scalar(kappa, "kappa (spread of the eigenvalues of Sigma)", lo=1.0)
    require_size(2 * n0 * d, "n0 (the 2 n0 points in R^d)")
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    lam = kappa ** -rng.uniform(0.0, 1.0, d)
    X0 = rng.standard_normal((n0, d)) @ (Q * np.sqrt(lam)).T
    return np.concatenate([X0, -X0])


def sample_rk4_flow(a, B, X, Y, *, eta: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, B) after ``steps`` classical Runge-Kutta steps of size ``eta`` (in parameter time)
    of the gradient flow d(a, B)/ds = -grad L of the sample loss L = 1/2 E_n[(f - y)^2]
    (numerics.twolayer.loss_and_grad; claim H1m); a FloatingPointError at a non-finite
    state."""
    from numerics.twolayer import loss_and_grad
    X = as_float_array(X, "X (sample inputs, shape (n, d))", ndim=2, allow_empty=False)
    Y = as_float_array(Y, "Y (sample targets, shape (n,))", ndim=1)
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y must have one value per row of X; got {Y.shape[0]} for {X.shape[0]}")
    eta = as_float_scalar(eta, "eta (Runge-Kutta step in parameter time)", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0, maximum=10 ** 6)

    def field(a_, B_):
        _, (ga, gB) = loss_and_grad(a_, B_, X, Y)
        return -ga, -gB
    return pop._rk4_steps(field, a, B, eta, steps, "sample_rk4_flow")


def sample_width_predictor(rng: np.random.Generator, X, Y, m: int, *, eta: float,
                           steps: int) -> np.ndarray:
    """f_m on the rows of X after :func:`sample_rk4_flow` (``steps`` RK4 steps of size
    ``eta`` in parameter time) from :func:`init_particles` drawn from ``rng`` (claim H1m;
    i.i.d. particles, no mirror images)."""
    X = as_float_array(X, "X (sample inputs, shape (n, d))", ndim=2, allow_empty=False)
    a, B = init_particles(rng, m, X.shape[1])
    a, B = sample_rk4_flow(a, B, X, Y, eta=eta, steps=steps)
    return forward(a, B, X)


def moment_field(k: dict, c: np.ndarray, Sigma: np.ndarray) -> Callable:
    """z' = F(z) of the moment ODE of claims H1j, H1m for z = (w, vec M, A):
    w' = (k_wA A I + k_wM M) g, M' = k_M (g w^T + w g^T), A' = k_A w.g, g = c - Sigma w."""
    d = c.size

    def F(_t: float, z: np.ndarray) -> np.ndarray:
        w, M, A = z[:d], z[d:d + d * d].reshape(d, d), z[-1]
        g = c - Sigma @ w
        return np.concatenate([k["k_wA"] * A * g + k["k_wM"] * M @ g,
                               (k["k_M"] * (np.outer(g, w) + np.outer(w, g))).ravel(),
                               [k["k_A"] * (w @ g)]])
    return F


def moment_limit(X, Y, T: float, k: dict, z0, *, rtol: float = 1e-12) -> np.ndarray:
    """w_T of the moment ODE (:func:`moment_field`, c = E_n[y x], Sigma = E_n[x x^T] of the
    sample) from z0 = (w_0, vec M_0, A_0), by DOP853 at ``rtol`` (claim H1m's limit)."""
    from scipy.integrate import solve_ivp
    X = as_float_array(X, "X (sample inputs, shape (n, d))", ndim=2, allow_empty=False)
    Y = as_float_array(Y, "Y (sample targets, shape (n,))", ndim=1)
    n, d = X.shape
    z0 = as_float_array(z0, "z0 (w_0, vec M_0, A_0)", ndim=1)
    if Y.shape[0] != n or z0.size != d + d * d + 1:
        raise ValueError(f"need Y of length {n} and z0 of length d + d^2 + 1 = "
                         f"{d + d * d + 1}; got {Y.shape[0]}, {z0.size}")
    missing = {"k_wA", "k_wM", "k_M", "k_A"} - set(k)
    if missing:
        raise ValueError(f"k must give the moment ODE's coefficients; missing {sorted(missing)}")
    T = as_float_scalar(T, "T (flow time)", lo=0.0)
    rtol = as_float_scalar(rtol, "rtol", lo=1e-14, hi=1e-3)
    if T == 0:
        return z0[:d].copy()
    sol = solve_ivp(moment_field(k, X.T @ Y / n, X.T @ X / n), (0.0, T), z0, method="DOP853",
                    rtol=rtol, atol=rtol * 1e-3 * float(np.abs(z0).max()))
    if not sol.success:
        raise FloatingPointError(f"moment_limit: DOP853 failed: {sol.message}")
    return sol.y[:d, -1]


# ------------------------------------- the width studies' outcome, table and figure (H1i, H1m)
def width_table(widths: Sequence[int], etas: Sequence[float], D: np.ndarray) -> Any:
    """The report table of a width study: per width m its learning rate and the mean and
    standard deviation over seeds of the distances ``D[i, seed]`` (claims H1i, H1m)."""
    from verify.kit import Table, fmt
    rows = [[m, fmt(etas[i]), fmt(float(D[i].mean())), fmt(float(D[i].std(ddof=1)))]
            for i, m in enumerate(widths)]
    return Table("Distance to the limit per width",
                 ["m", "learning rate eta", "mean distance", "sd over seeds"], rows)


def width_study_outcome(title: str, study: Any, subs: list, widths: Sequence[int],
                        etas: Sequence[float], D: np.ndarray, *, ref_err: float, int_err: float,
                        halved_width: int, dt: float, bias_fraction: float) -> Any:
    """The Outcome of a width study (claims H1i, H1m): ``subs``, then the bias of the
    width-``halved_width`` flow's Runge-Kutta error (seed 0, step ``dt`` halved) against the
    study's distances; the slope, its interval and both error estimates as details; the
    :func:`width_table`; the study as the artifact :func:`width_study_figure` draws."""
    from verify.kit import combine
    rk = study.bias_subcheck("Runge-Kutta error of the width-m flow (step halved)", int_err,
                             f"m = {halved_width}, seed 0, flow step {dt:g} vs {dt / 2:g}",
                             bias_fraction)
    return combine(title, [*subs, rk],
                   details={"slope": study.slope, "interval": list(study.interval),
                            "reference_error": ref_err, "integrator_error": int_err},
                   tables=[width_table(widths, etas, D)],
                   artifacts={"study": study.to_json()})


def width_study_figure(ev: Any, outdir: Any, claim_id: str, ylabel: str, what: str
                       ) -> list[tuple[str, str]]:
    """The log-log figure of the width study in ``ev.artifacts["study"]`` (none if absent):
    ``[(file, caption)]``, the caption "Distance of {what} at time T: seeds (dots), ..."
    (claims H1i, H1m)."""
    from verify.kit import new_figure, rate_study_panel, save_figure
    if not ev.artifacts.get("study"):
        return []
    fig, ax = new_figure()
    rate_study_panel(ax, ev.artifacts["study"], ylabel)
    name = f"{claim_id}_width_study.png"
    save_figure(fig, outdir / name)
    return [(name, f"Distance of {what} at time T: seeds (dots), mean, fitted slope with its "
                   "99.9% interval, and the predicted -1/2.")]
