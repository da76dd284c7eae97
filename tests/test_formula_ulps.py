"""Stated float64 error bounds (``.ulp_bound``) of the formulas that are not one fixed-size
closed form (issue "Proofs, not samples", item 3): the n-term ``potential_gradient`` (W2e),
the quadrature-based ``phi_tilde`` and ``phi_tilde_dtheta`` (H1e), and the algorithms
(``best_linear_approximator``, ``kernel_interpolant``, ``rmd``, ``symmetrize``,
``project_to_fixed_space``), whose honest unit is a condition number times a scale.

Each entry is tested against a certified or exact reference at seeded, vectorized draws
including extreme inputs: 300 inputs per entry in the default run (1000 for phi_tilde and
its derivative, 10^4 .enclose containments for potential_gradient), 10^4 in the tests
marked ``slow``.  ``test_a_perturbation_of_4_bounds_fails`` shows that every check fails
when the float64 output is moved by (1 + 4 x bound) ulps of its unit."""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import mpmath
import numpy as np
import pytest

flint = pytest.importorskip("flint")

from verify import formulas  # noqa: E402

EPS = 2.0 ** -52
N_DEFAULT = 300
N_SLOW = 10_000


def _magnitudes(rng: np.random.Generator, n: int, lo: float = -8, hi: float = 6) -> np.ndarray:
    """A third uniform on [-5, 5], a third log-uniform magnitudes 10^lo..10^hi with random
    signs, a third special values (0, +-1, 1 + ulp, 2, -0.5, +-10^hi)."""
    k = rng.integers(0, 3, n)
    special = rng.choice([0.0, 1.0, -1.0, np.nextafter(1.0, 2.0), 2.0, -0.5, 10.0 ** hi,
                          -10.0 ** hi], n)
    return np.where(k == 0, rng.uniform(-5, 5, n),
                    np.where(k == 1, rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(lo, hi, n),
                             special))


def _ulps(err: Any, scale: Any) -> float:
    """|float64 - exact| (an arb ball's upper bound) in ulps (2^-52) of ``scale``."""
    return float(err.upper()) / (EPS * float(scale.upper()))


class _Worst:
    """The largest error seen, in units of the stated bound (fails beyond 1)."""

    def __init__(self) -> None:
        self.ratio, self.where = 0.0, None

    def add(self, ulps: float, bound: float, where: Any) -> None:
        if ulps / bound > self.ratio:
            self.ratio, self.where = ulps / bound, where

    def check(self, name: str) -> None:
        assert self.ratio <= 1.0, f"{name}: {self.ratio:.3g} x its stated bound at {self.where}"
        assert self.ratio > 0, f"{name}: the measurement is vacuous"


# ------------------------------------------------------------------ potential_gradient (W2e)
def _gradient_problems(seed: int, n_particles: int) -> list[tuple]:
    """Data sets of 1..24 samples (x_j, rho_j) with 1..50 particles (r, theta) each, theta
    uniform on [-pi, pi] plus exact boundary angles atan2(x_j, 1), atan2(-x_j, -1) and
    large |theta|; magnitudes 1e-8..1e6."""
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < n_particles:
        n = int(rng.integers(1, 25))
        m = int(min(rng.integers(1, 51), n_particles - total))
        x, rho = _magnitudes(rng, n), _magnitudes(rng, n)
        rho[rho == 0] = 1.0
        r = _magnitudes(rng, m)
        theta = rng.uniform(-np.pi, np.pi, m)
        pick = rng.integers(0, 8, m)  # 1/8 each: two boundaries, large |theta|
        xj = x[rng.integers(0, n, m)]
        theta = np.where(pick == 1, np.arctan2(xj, 1.0),
                         np.where(pick == 2, np.arctan2(-xj, -1.0),
                                  np.where(pick == 3, theta * 10.0 ** rng.uniform(0, 6, m), theta)))
        out.append((r, theta, x, rho))
        total += m
    return out


def _boundary_samples(theta: float, x: np.ndarray) -> np.ndarray:
    """The stated region: the samples whose exact |<x~_j, d(theta)>| is <= 2 ulps of |x~_j|
    (candidates by float64 within 8 ulps, then decided at 60 digits)."""
    xt = np.hypot(x, 1.0)
    cand = np.abs(x * np.cos(theta) - np.sin(theta)) <= 8 * EPS * xt
    out = np.zeros(x.shape, bool)
    with mpmath.workdps(60):
        t = mpmath.mpf(float(theta))
        c, s = mpmath.cos(t), mpmath.sin(t)
        for j in np.flatnonzero(cand):
            v = mpmath.mpf(float(x[j]))
            out[j] = abs(v * c - s) <= 2 * EPS * mpmath.sqrt(1 + v * v)
    return out


def _gradient_worst(n_particles: int, seed: int, shift: float = 0.0) -> tuple[_Worst, _Worst]:
    """Worst error of potential_gradient in units of its stated bound (``shift`` 1: the float64
    output moved by 1 + 4 x bound ulps of its unit, the mutation test) outside and inside the stated boundary
    region, where the bound grows by the jump |rho_j r| |x~_j| (2 ulps of |rho_j| |x~_j|
    for dV/dr) of each boundary sample j (times 1 + 1e-12: the jump's own float64 sum)."""
    f = formulas.potential_gradient
    ub = f.ulp_bound
    worst, region = _Worst(), _Worst()
    for r, theta, x, rho in _gradient_problems(seed, n_particles):
        g_r, g_t = f(r, theta, x, rho)
        terms = np.abs(rho) * np.hypot(x, 1.0)
        scale = sum(abs(flint.arb(q)) * (1 + flint.arb(v) ** 2).sqrt() for v, q in zip(x.tolist(), rho.tolist()))
        bound = ub.ulps_for(x.size)
        for i in range(r.size):
            near = _boundary_samples(theta[i], x)
            try:
                b_r, b_t = f.enclose(float(r[i]), float(theta[i]), x, rho)
            except ValueError:  # a sample exactly on the boundary line (within 2^-128)
                assert near.any()
                continue
            sc_t = abs(flint.arb(float(r[i]))) * scale
            jump = float(terms[near].sum()) / float(scale.lower()) / EPS * (1 + 1e-12)
            into = region if near.any() else worst
            for val, ball, sc, extra in ((g_r[i], b_r, scale, 2 * jump), (g_t[i], b_t, sc_t, jump)):
                if sc.upper() == 0:
                    continue
                moved = float(val) + shift * (1 + 4 * bound) * EPS * float(sc.upper())
                into.add(_ulps(abs(ball - moved), sc), bound + extra,
                          (r[i], theta[i], x.tolist(), rho.tolist()))
    return worst, region


def test_potential_gradient_within_its_bound() -> None:
    for w in _gradient_worst(N_DEFAULT, 1):
        w.check("potential_gradient")


@pytest.mark.slow
def test_potential_gradient_within_its_bound_at_10k() -> None:
    for w in _gradient_worst(N_SLOW, 2):
        w.check("potential_gradient")


def _enclose_contains_the_50_digit_value(n_particles: int, seed: int) -> None:
    """.enclose of potential_gradient contains its 50-digit mpmath value (to 1e-48 relative)
    at every drawn particle off the boundary lines."""
    f = formulas.potential_gradient
    for r, theta, x, rho in _gradient_problems(seed, n_particles):
        for i in range(r.size):
            try:
                balls = f.enclose(float(r[i]), float(theta[i]), x, rho)
            except ValueError:
                continue
            m = f.mpmath(float(r[i]), float(theta[i]), x, rho, dps=50)
            for mv, b in zip(m, balls):
                with mpmath.workdps(60):
                    mid = mpmath.mpf(b.mid().str(60, radius=False))
                    rad = mpmath.mpf(b.rad().str(10, radius=False))
                    assert abs(mv - mid) <= rad + abs(mv) * mpmath.mpf(10) ** -48


def test_potential_gradient_enclose_contains_the_50_digit_value() -> None:
    """The default run: 500 drawn particles (0.4 s of one core)."""
    _enclose_contains_the_50_digit_value(500, 4)


@pytest.mark.slow
def test_potential_gradient_enclose_contains_the_50_digit_value_at_10k() -> None:
    """At 10^4 drawn particles (about 12 s of one core)."""
    _enclose_contains_the_50_digit_value(N_SLOW, 4)


def test_potential_gradient_boundary_is_the_stated_region() -> None:
    """A particle on the boundary line of a sample: float64 may count the sample on the
    wrong side; the error is then the jump |rho r| |x~| (claim W2f), in the stated region."""
    f = formulas.potential_gradient
    x, rho = np.array([1.0]), np.array([1.0])
    th = float(np.arctan2(1.0, 1.0))  # pi/4 rounded: <x~, d(theta)> ~ 1e-17, nonzero
    b_r, b_t = f.enclose(2.0, th, x, rho)
    g_r, g_t = f(2.0, th, x, rho)
    assert _boundary_samples(th, x).all()
    err = abs(float(g_t) - float(b_t.mid()))
    assert err < 1e-12 or abs(err - 2 * np.sqrt(2)) < 1e-12  # 0 or the jump |rho r| |x~|
    assert "boundary line" in f.ulp_bound.region


# ------------------------------------------------------------------ phi_tilde, its derivative (H1e)
def _angles(rng: np.random.Generator, n: int) -> np.ndarray:
    """Angles in [0, pi/2]: half uniform, the rest 0, pi/2, tiny (1e-300..1e-4) and pi/2 - tiny."""
    k = rng.integers(0, 6, n)
    tiny = 10.0 ** rng.uniform(-300, -4, n)
    return np.where(k < 3, rng.uniform(0, np.pi / 2, n),
                    np.where(k == 3, rng.choice([0.0, np.pi / 2], n),
                             np.where(k == 4, tiny, np.pi / 2 - tiny)))


def _phi_problems(seed: int, n_inputs: int, per_dims: int, d_max: int = 400
                  ) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """(d, d_H, theta, phi): d log-uniform in 2..d_max (plus d = 1000 once when d_max >= 400),
    d_H uniform in 1..d-1 or an edge (1, 2, d-2, d-1)."""
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < n_inputs:
        d = 1000 if not out and d_max >= 400 else int(np.exp(rng.uniform(np.log(2), np.log(d_max))))
        d_H = int(rng.choice([rng.integers(1, d), 1, min(2, d - 1), max(d - 2, 1), d - 1]))
        m = min(per_dims, n_inputs - total) if d < 1000 else min(5, n_inputs - total)
        out.append((d, d_H, _angles(rng, m), _angles(rng, m)))
        total += m
    return out


def _phi_scale(aq: Any, th: float, ph: float, d: int, d_H: int, derivative: bool) -> Any:
    """The unit: phi~ itself (all terms are >= 0: value = absolute integral), and for the
    derivative |c'| E|R| + |y'| E|S| (>= the absolute integral of its integrand)."""
    t, p = flint.arb(th), flint.arb(ph)
    if not derivative:
        return None
    m_r = 2 * aq.positive_part_mean_ball(d_H, prec=96, max_rel_radius=None)
    m_s = 2 * aq.positive_part_mean_ball(d - d_H, prec=96, max_rel_radius=None)
    return abs(t.sin() * p.cos()) * m_r + abs(t.cos() * p.sin()) * m_s


def _phi_worst(name: str, n_inputs: int, seed: int, per_dims: int = 25, shift: float = 0.0,
               d_max: int = 400) -> _Worst:
    from numerics import arb_quadrature as aq
    f = getattr(formulas, name)
    derivative = name == "phi_tilde_dtheta"
    bound = f.ulp_bound.ulps
    worst = _Worst()
    for d, d_H, th, ph in _phi_problems(seed, n_inputs, per_dims, d_max):
        vals = np.atleast_1d(f(th, ph, d, d_H))
        for i in range(th.size):
            ball = aq.phi_tilde_ball(float(th[i]), float(ph[i]), d, d_H, derivative=derivative)
            sc = _phi_scale(aq, th[i], ph[i], d, d_H, derivative)
            sc = abs(ball) if sc is None else sc
            if float(sc.upper()) < np.finfo(float).tiny / EPS:
                continue
            moved = float(vals[i]) + shift * (1 + 4 * bound) * EPS * float(sc.upper())
            worst.add(_ulps(abs(ball - moved), sc), bound, (th[i], ph[i], d, d_H))
    return worst


@pytest.mark.parametrize("name", ["phi_tilde", "phi_tilde_dtheta"])
def test_phi_tilde_within_its_bound(name) -> None:
    """The default run: 500 inputs, d <= 400 and 1000 (~4 s of one core each); the slow
    test: 10^4 (~70 s of one core each)."""
    _phi_worst(name, 500, 1, per_dims=50).check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["phi_tilde", "phi_tilde_dtheta"])
def test_phi_tilde_within_its_bound_at_10k(name) -> None:
    _phi_worst(name, N_SLOW, 2, per_dims=250).check(name)


def _phi_large_worst(name: str, seed: int, n_angles: int) -> _Worst:
    """d = 30000 with d_H = 29998, 15000, 2: ``n_angles`` drawn (theta, phi), extremes included
    (``_angles``), each against the certified ball."""
    from numerics import arb_quadrature as aq
    f = getattr(formulas, name)
    derivative = name == "phi_tilde_dtheta"
    worst = _Worst()
    rng = np.random.default_rng(seed)
    for d_H in (29998, 15000, 2):
        th, ph = _angles(rng, n_angles), _angles(rng, n_angles)
        vals = np.atleast_1d(f(th, ph, 30000, d_H))
        for i in range(n_angles):
            ball = aq.phi_tilde_ball(float(th[i]), float(ph[i]), 30000, d_H, derivative=derivative)
            sc = _phi_scale(aq, th[i], ph[i], 30000, d_H, derivative)
            sc = abs(ball) if sc is None else sc
            if float(sc.upper()) < np.finfo(float).tiny / EPS:
                continue
            worst.add(_ulps(abs(ball - float(vals[i])), sc), f.ulp_bound.ulps, (th[i], ph[i], 30000, d_H))
    return worst


@pytest.mark.slow
@pytest.mark.parametrize("name", ["phi_tilde", "phi_tilde_dtheta"])
def test_phi_tilde_within_its_bound_at_d_30000(name) -> None:
    """Beyond the 10^4 draws' d <= 1000: 3 x 8 inputs at d = 30000 (about 1 min of one core
    per entry; the ball decides where float64 and the mpmath double quadrature disagree)."""
    _phi_large_worst(name, 3, 8).check(name)


# ------------------------------------------------------------------ sensitivity of the checks
def test_a_perturbation_of_4_bounds_fails() -> None:
    """The float64 output moved by (1 + 4 x bound) ulps of its unit fails every check."""
    assert _gradient_worst(40, 5, shift=1.0)[0].ratio > 1
    for name in ("phi_tilde", "phi_tilde_dtheta"):
        assert _phi_worst(name, 10, 5, per_dims=5, d_max=12, shift=1.0).ratio > 1
    for name in ("symmetrize", "project_to_fixed_space"):
        assert _maass_worst(name, 30, 5, shift=1.0).ratio > 1
    assert _rmd_worst(30, 5, shift=1.0).ratio > 1
    assert _lsq_worst(60, 5, shift=1.0).ratio > 1
    assert _interp_worst(6, 1, per=6, shift=1.0).ratio > 1


# ------------------------------------------------------------------ Maass: symmetrize, project, rmd
def _rotation_group(rng: np.random.Generator, D: int) -> np.ndarray:
    """A cyclic group of order 2..8 of rotations in a random plane of R^D (float matrices,
    orthogonal to ~1e-16), or (one time in three) the signed cyclic shifts (exact)."""
    order = int(rng.integers(2, 9))
    if rng.integers(0, 3) == 0:
        P = np.roll(np.eye(D), 1, axis=0)
        return np.stack([np.linalg.matrix_power(P, g) for g in range(D)])
    Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    out = []
    for g in range(order):
        R = np.eye(D)
        a = 2 * np.pi * g / order
        R[:2, :2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
        out.append(Q @ R @ Q.T)
    return np.stack(out)


def _maass_problems(seed: int, n_particles: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(M (|G|, D, D), z (N, D), w (N,)): D in 2..6, N in 1..20, entries of z with magnitudes
    1e-8..1e6 and zeros, weights random (normalized) or uniform."""
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < n_particles:
        D = int(rng.integers(2, 7))
        N = int(min(rng.integers(1, 21), n_particles - total))
        z = _magnitudes(rng, N * D).reshape(N, D)
        w = rng.uniform(0.1, 1.0, N)
        out.append((_rotation_group(rng, D), z, w / w.sum()))
        total += N
    return out


def _exact_matvec(M: np.ndarray, z: np.ndarray) -> list[list[Fraction]]:
    Mq = [[Fraction(float(v)) for v in row] for row in M]
    return [[sum((m * Fraction(float(v)) for m, v in zip(row, zi)), Fraction(0)) for row in Mq]
            for zi in z]


def _ulps_exact(val: float, exact: Fraction, scale: float) -> float:
    return float(abs(Fraction(float(val)) - exact)) / (EPS * scale) if scale > 0 else 0.0


def _maass_worst(name: str, n_particles: int, seed: int, shift: float = 0.0) -> _Worst:
    f = getattr(formulas, name)
    worst = _Worst()
    for M, z, w in _maass_problems(seed, n_particles):
        D = z.shape[1]
        pts, wts = f(z, M, w)
        if name == "symmetrize":
            bound = f.ulp_bound.ulps_for(D)
            mats = [(M[g], np.abs(M[g])) for g in range(M.shape[0])]
        else:
            bound = f.ulp_bound.ulps_for(D + int(np.ceil(np.log2(M.shape[0]))))
            Pexact = [[sum(Fraction(float(M[g, i, j])) for g in range(M.shape[0])) / M.shape[0]
                       for j in range(D)] for i in range(D)]
            mats = [(None, np.abs(M).mean(axis=0))]
        for g, (Mg, absM) in enumerate(mats):
            if Mg is not None:
                exact = _exact_matvec(Mg, z)
            else:
                exact = [[sum((p * Fraction(float(v)) for p, v in zip(row, zi)), Fraction(0))
                          for row in Pexact] for zi in z]
            scales = (np.abs(z) @ absM.T) * (1 + 1e-12)
            block = pts[g * z.shape[0]:(g + 1) * z.shape[0]]
            for i in range(z.shape[0]):
                for k in range(D):
                    v = block[i, k] + shift * (1 + 4 * bound) * EPS * scales[i, k]
                    if scales[i, k] > 0:
                        worst.add(_ulps_exact(v, exact[i][k], scales[i, k]), bound, (name, M, z[i]))
        if name == "symmetrize":  # the weights: one division, within 1 ulp of the value
            ref = [Fraction(float(v)) / M.shape[0] for v in w]
            for i, v in enumerate(wts[:z.shape[0]]):
                worst.add(_ulps_exact(v * (1 + shift * 5 * EPS), ref[i], float(ref[i])), 1.0, ("weights", w[i]))
    return worst


@pytest.mark.parametrize("name", ["symmetrize", "project_to_fixed_space"])
def test_maass_maps_within_their_bounds(name) -> None:
    _maass_worst(name, N_DEFAULT, 1).check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["symmetrize", "project_to_fixed_space"])
def test_maass_maps_within_their_bounds_at_10k(name) -> None:
    _maass_worst(name, N_SLOW, 2).check(name)


def _rmd_problems(seed: int, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs of clouds with N = M in 1..5 (the exact optimum by enumeration), D in 1..4:
    independent draws (magnitudes 1e-8..1e6), near ties (b a permuted copy of a moved by
    1e-12 relative, or by 1e-6), and a translate b = a + c."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        N, D = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        a = _magnitudes(rng, N * D, -3, 3).reshape(N, D)
        kind = rng.integers(0, 4)
        if kind == 0:
            b = _magnitudes(rng, N * D, -3, 3).reshape(N, D)
        elif kind == 3:
            b = a + rng.standard_normal(D)
        else:
            b = a[rng.permutation(N)] * (1 + (1e-12 if kind == 1 else 1e-6) * rng.standard_normal((N, D)))
        if not (np.any(a) or np.any(b)):
            a[0, 0] = 1.0
        out.append((a, b))
    return out


def _rmd_exact_squared(a: np.ndarray, b: np.ndarray) -> Fraction:
    """rmd^2 = min_sigma sum |a_i - b_sigma(i)|^2 / (2 (sum |a_i|^2 + sum |b_i|^2)), exactly."""
    from itertools import permutations
    A = [[Fraction(float(v)) for v in r] for r in a]
    B = [[Fraction(float(v)) for v in r] for r in b]
    C = [[sum((s - t) ** 2 for s, t in zip(ai, bj)) for bj in B] for ai in A]
    w2 = min(sum(C[i][p[i]] for i in range(len(A))) for p in permutations(range(len(B))))
    m2 = sum(v * v for r in A for v in r) + sum(v * v for r in B for v in r)
    return w2 / (2 * m2)


def _rmd_worst(n: int, seed: int, shift: float = 0.0) -> _Worst:
    f = formulas.rmd
    worst = _Worst()
    for a, b in _rmd_problems(seed, n):
        bound = f.ulp_bound.ulps_for(a.shape[1])
        val = float(f(a, b))
        sq = Fraction(val) ** 2 + Fraction(shift * (1 + 4 * bound) * EPS)
        worst.add(float(abs(sq - _rmd_exact_squared(a, b))) / EPS, bound, (a.tolist(), b.tolist()))
    return worst


def test_rmd_within_its_bound() -> None:
    _rmd_worst(N_DEFAULT, 1).check("rmd")


@pytest.mark.slow
def test_rmd_within_its_bound_at_10k() -> None:
    _rmd_worst(N_SLOW, 2).check("rmd")


# ------------------------------------------------------------------ best_linear_approximator (H1c)
def _lsq_problems(seed: int, n_rows: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """(X, Y, weights): d in 1..4, n in d..30 rows; columns scaled by 1e-8..1e6, a third of
    the problems with two nearly collinear columns (cond up to ~1e10), weights None,
    uniform-random, or spread over 1e-300..1e300."""
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < n_rows:
        d = int(rng.integers(1, 5))
        n = int(rng.integers(d, 31))
        X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-8, 6, d)
        if d >= 2 and rng.integers(0, 3) == 0:
            X[:, 1] = X[:, 0] * (X[0, 1] / X[0, 0]) * (1 + 10.0 ** rng.uniform(-10, -2) * rng.standard_normal(n))
        Y = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 6)
        k = rng.integers(0, 3)
        w = None if k == 0 else (rng.uniform(0, 1, n) if k == 1 else 10.0 ** rng.uniform(-300, 300, n))
        out.append((X, Y, w))
        total += n
    return out


def _solve_exact(S: list[list[Fraction]], c: list[Fraction]) -> list[Fraction]:
    d = len(c)
    A = [row[:] + [c[i]] for i, row in enumerate(S)]
    for j in range(d):
        p = next(i for i in range(j, d) if A[i][j] != 0)
        A[j], A[p] = A[p], A[j]
        for i in range(j + 1, d):
            f = A[i][j] / A[j][j]
            A[i] = [a - f * b for a, b in zip(A[i], A[j])]
    x = [Fraction(0)] * d
    for i in reversed(range(d)):
        x[i] = (A[i][d] - sum(A[i][k] * x[k] for k in range(i + 1, d))) / A[i][i]
    return x


def _lsq_worst(n_rows: int, seed: int, shift: float = 0.0) -> _Worst:
    """Error of w* in the scaled coordinates w*_k sx_k / sy (sx the columns' max |x|, sy
    max |Y|) in ulps of the stated unit ||S^-1||_2 (||S_abs||_2 |w*_s| + |c_abs|)."""
    f = formulas.best_linear_approximator
    worst = _Worst()
    for X, Y, w in _lsq_problems(seed, n_rows):
        try:
            out = f(X, Y, w)
        except ValueError as e:  # numerically rank deficient: refused, not guessed
            assert "rank" in str(e)
            continue
        n, d = X.shape
        wq = [Fraction(1)] * n if w is None else [Fraction(float(v)) for v in w]
        tot = sum(wq)
        wq = [v / tot for v in wq]
        sx = np.max(np.abs(X), axis=0)
        sy = float(np.max(np.abs(Y))) or 1.0
        Xq = [[Fraction(float(v)) / Fraction(float(s)) for v, s in zip(row, sx)] for row in X]
        Yq = [Fraction(float(v)) / Fraction(sy) for v in Y]
        S = [[sum(wq[i] * Xq[i][a] * Xq[i][b] for i in range(n)) for b in range(d)] for a in range(d)]
        c = [sum(wq[i] * Xq[i][a] * Yq[i] for i in range(n)) for a in range(d)]
        ws = _solve_exact(S, c)
        Sf = np.array([[float(v) for v in r] for r in S])
        S_abs = np.array([[float(sum(wq[i] * abs(Xq[i][a] * Xq[i][b]) for i in range(n))) for b in range(d)]
                          for a in range(d)])
        c_abs = np.array([float(sum(wq[i] * abs(Xq[i][a] * Yq[i]) for i in range(n))) for a in range(d)])
        wsf = np.array([float(v) for v in ws])
        unit = np.linalg.norm(np.linalg.inv(Sf), 2) * (np.linalg.norm(S_abs, 2) * np.linalg.norm(wsf)
                                                       + np.linalg.norm(c_abs))
        bound = f.ulp_bound.ulps_for(n + d)
        got = [Fraction(float(v)) * Fraction(float(s)) / Fraction(sy) for v, s in zip(out, sx)]
        err = float(sum((g - e) ** 2 for g, e in zip(got, ws))) ** 0.5 + shift * (1 + 4 * bound) * EPS * unit
        worst.add(err / (EPS * unit), bound, (X.tolist(), Y.tolist(), w))
    return worst


def test_best_linear_approximator_within_its_bound() -> None:
    _lsq_worst(N_DEFAULT, 1).check("best_linear_approximator")


@pytest.mark.slow
def test_best_linear_approximator_within_its_bound_at_10k() -> None:
    _lsq_worst(N_SLOW, 2).check("best_linear_approximator")


# ------------------------------------------------------------------ kernel_interpolant (W3b)
def _interp_problems(seed: int, n_points: int, per: int) -> list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """(kernel, init, x_data, y_data, x): m in 2..8 data points uniform on [-5, 5] or with
    magnitudes 1e-3..1e2 (Gram condition up to the 1e12 cap), y_data with magnitudes
    1e-8..1e6, evaluation points on the data, between them, and far (|x| up to 1e3)."""
    rng = np.random.default_rng(seed)
    out, total = [], 0
    while total < n_points:
        kernel, init = ("rf", "ntk")[rng.integers(0, 2)], ("uniform", "gaussian")[rng.integers(0, 2)]
        m = int(rng.integers(2, 9))
        xd = rng.uniform(-5, 5, m) if rng.integers(0, 2) else _magnitudes(rng, m, -3, 2)
        yd = _magnitudes(rng, m)
        k = min(per, n_points - total)
        x = np.concatenate([xd, rng.uniform(-6, 6, k), rng.choice([-1.0, 1.0], k) * 10.0 ** rng.uniform(-8, 3, k)])
        out.append((kernel, init, xd, yd, rng.permutation(x)[:k]))
        total += k
    return out


def _interp_worst(n_points: int, seed: int, per: int = 10, shift: float = 0.0) -> _Worst:
    """Against the 30-digit mpmath interpolant (the closed-form kernels in mpmath, an LU
    solve at 30 digits: its error ~1e-30 cond(K) is far below one float64 ulp of the unit)."""
    f = formulas.kernel_interpolant
    worst = _Worst()
    for kernel, init, xd, yd, x in _interp_problems(seed, n_points, per):
        try:
            g = f(xd, yd, kernel, init, 1.3)
        except ValueError as e:  # cond(K) > 1e12 or repeated points: refused, not guessed
            assert any(s in str(e) for s in ("condition number", "near-duplicate", "distinct")), str(e)
            continue
        ref = f.mpmath(xd, yd, kernel, init, 1.3, dps=30)(x)
        vals = np.atleast_1d(g(x))

        def k_s(p, q):
            if kernel == "rf":
                return np.abs(formulas.rf_kernel(p, q, init=init))
            return formulas.rf_kernel(p, q, init=init) + 1.69 * np.abs(1 + p * q) * formulas.active_probability(p, q, init=init)
        K_s = k_s(xd[:, None], xd[None, :])
        K = g.kernel_matrix(xd[:, None], xd[None, :])
        alpha = g.coefficients
        cond_part = np.linalg.norm(np.linalg.inv(K), 2) * np.linalg.norm(K_s, 2) * np.linalg.norm(alpha)
        bound = f.ulp_bound[(kernel, init)].ulps_for(xd.size * (xd.size + 1))
        for i in range(x.size):
            ks = k_s(x[i], xd)
            unit = float(np.abs(ks) @ np.abs(alpha) + np.linalg.norm(ks) * cond_part)
            v = float(vals[i]) + shift * (1 + 4 * bound) * EPS * unit
            with mpmath.workdps(40):
                err = float(abs(mpmath.mpf(v) - np.ravel(ref)[i]))
            worst.add(err / (EPS * unit), bound, (kernel, init, xd.tolist(), yd.tolist(), x[i]))
    return worst


def test_kernel_interpolant_within_its_bound() -> None:
    _interp_worst(12, 1, per=6).check("kernel_interpolant")


@pytest.mark.slow
def test_kernel_interpolant_within_its_bound_at_10k() -> None:
    _interp_worst(N_SLOW + 1500, 2, per=25).check("kernel_interpolant")  # ~10% refused (cond, repeats)


def _phi_enclose_contains_mpmath(n_inputs: int, seed: int, d_max: int) -> None:
    """.enclose (the Arb integral of the definition) contains the independent mpmath double
    quadrature of the definition at 40 digits (its own error taken as 1e-35 relative).  The
    cost is mpmath's (~0.4 s of one core per point at d <= 20; the ball ~0.01 s): 10^4
    points would take about an hour."""
    for d, d_H, th, ph in _phi_problems(seed, n_inputs, 4, d_max=d_max):
        for t, p in zip(th.tolist(), ph.tolist()):
            b = formulas.phi_tilde.enclose(t, p, d, d_H)
            m = formulas.phi_tilde.mpmath(t, p, d, d_H, dps=40)
            with mpmath.workdps(60):
                mid = mpmath.mpf(b.mid().str(60, radius=False))
                rad = mpmath.mpf(b.rad().str(10, radius=False))
                assert abs(m - mid) <= rad + abs(m) * mpmath.mpf(10) ** -35, (t, p, d, d_H)


def test_phi_tilde_enclose_contains_the_mpmath_value() -> None:
    """8 points, d <= 12 (~2 s)."""
    _phi_enclose_contains_mpmath(8, 4, 12)


@pytest.mark.slow
def test_phi_tilde_enclose_contains_the_mpmath_value_at_200() -> None:
    """200 points, d <= 20 (~1.5 min)."""
    _phi_enclose_contains_mpmath(200, 5, 20)


def test_phi_tilde_enclose_is_the_certified_integral() -> None:
    b = formulas.phi_tilde.enclose(0.0, 0.0, 30, 5)
    assert b.contains(flint.arb(3) / 16)  # 1 / alpha(5)
    arr = formulas.phi_tilde_dtheta.enclose(np.array([0.0, 0.4]), 0.7, 30, 5)
    assert arr.shape == (2,) and arr[0].contains(0)
