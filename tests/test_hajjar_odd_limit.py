"""Claim H1m's pieces: the derived initial moments against the law, the moment-ODE
reference against an exactly invariant (mirrored) particle system, determinism, and the
input validation of the study helpers (verify/studies/hajjar.py)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from derivations.hajjar_odd_general import d_dim, derive_h1m
from numerics.twolayer import forward
from verify.studies import hajjar as sh


@pytest.fixture(scope="module")
def results() -> dict:
    return derive_h1m().results


def _coefficients(results: dict) -> dict[str, float]:
    return {k: float(results[k]) for k in ("k_wA", "k_wM", "k_M", "k_A")}


def _z0(results: dict, d: int) -> np.ndarray:
    val = {k: float(sp.sympify(results[k]).subs(d_dim, d))
           for k in ("w_0", "M_0_diagonal", "M_0_off_diagonal", "A_0")}
    M0 = np.full((d, d), val["M_0_off_diagonal"])
    np.fill_diagonal(M0, val["M_0_diagonal"])
    return np.concatenate([np.full(d, val["w_0"]), M0.ravel(), [val["A_0"]]])


def test_initial_moments_match_the_sampled_law(results) -> None:
    """The derived (w_0, M_0, A_0) against the empirical moments of 2e5 draws of
    init_particles: within 6 standard errors (each entry of a b / 2 and b b^T has variance
    at most 1 / d)."""
    d, m = 6, 200_000
    a, B = sh.init_particles(np.random.default_rng(5), m, d)
    emp = np.concatenate([0.5 * a @ B / m, (B.T @ B / m).ravel(), [a @ a / m]])
    assert np.abs(emp - _z0(results, d)).max() < 6 / np.sqrt(m)


def test_moment_limit_matches_a_mirrored_particle_system(results) -> None:
    """Mirrored particles make the measure exactly invariant at finite width, so f_m is
    w_t . x and (w, M, A) follow the moment ODE from the particles' own moments: the RK4 flow
    and the DOP853 reference agree to the integrator's error (measured by halving)."""
    rng = np.random.default_rng(3)
    d, m0, T = 5, 64, 2.0
    X = sh.symmetric_sample(rng, d, 40, 5.0)
    Y = sh.odd_subspace_target(X, 3)
    a0, B0 = sh.init_particles(rng, m0, d)
    a, B = np.concatenate([a0, -a0]), np.concatenate([B0, -B0])
    m = a.size
    z0 = np.concatenate([0.5 * a @ B / m, (B.T @ B / m).ravel(), [a @ a / m]])
    w_T = sh.moment_limit(X, Y, T, _coefficients(results), z0, rtol=1e-12)
    fs = [forward(*sh.sample_rk4_flow(a, B, X, Y, eta=m * T / s, steps=s), X) for s in (16, 32)]
    int_err = np.abs(fs[0] - fs[1]).max()
    assert int_err < 1e-6
    assert np.abs(fs[1] - X @ w_T).max() < 10 * int_err + 1e-10


def test_width_predictor_is_deterministic() -> None:
    X = sh.symmetric_sample(np.random.default_rng(1), 4, 8, 3.0)
    Y = sh.odd_subspace_target(X, 2)
    f1, f2 = (sh.sample_width_predictor(np.random.default_rng(9), X, Y, 50, eta=10.0, steps=3)
              for _ in range(2))
    assert np.array_equal(f1, f2)


def test_target_is_odd_and_depends_on_x_H_only() -> None:
    X = np.random.default_rng(2).standard_normal((20, 6))
    f = sh.odd_subspace_target(X, 3)
    assert np.array_equal(sh.odd_subspace_target(-X, 3), -f)
    X2 = X.copy()
    X2[:, 3:] = 0.0
    assert np.array_equal(sh.odd_subspace_target(X2, 3), f)


def test_sample_is_closed_under_negation() -> None:
    X = sh.symmetric_sample(np.random.default_rng(4), 3, 7, 2.0)
    assert X.shape == (14, 3) and np.array_equal(X[7:], -X[:7])


@pytest.mark.parametrize("call, match", [
    (lambda: sh.symmetric_sample(np.random.default_rng(0), 5, 3, 2.0), "n0"),
    (lambda: sh.symmetric_sample(np.random.default_rng(0), 5, 8, 0.5), "kappa"),
    (lambda: sh.symmetric_sample(0, 5, 8, 2.0), "rng"),
    (lambda: sh.odd_subspace_target(np.ones((3, 2)), 3), "d_H"),
    (lambda: sh.sample_width_predictor(np.random.default_rng(0), np.ones((4, 3)), np.ones(4),
                                       5, eta=-1.0, steps=2), "eta"),
    (lambda: sh.sample_rk4_flow(np.ones(2), np.ones((2, 3)), np.ones((4, 3)), np.ones(5),
                                eta=1.0, steps=2), "one value per row"),
    (lambda: sh.moment_limit(np.ones((4, 2)), np.ones(4), 1.0,
                             {"k_wA": 1, "k_wM": 1, "k_M": 1, "k_A": 1}, np.zeros(3)), "z0"),
    (lambda: sh.moment_limit(np.ones((4, 2)), np.ones(4), 1.0, {"k_wA": 1}, np.zeros(7)),
     "missing"),
])
def test_input_validation(call, match) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()
