"""The mean-field limit reference of Maass Martinez & Fontbona (``numerics.equivariant_limit``,
claim M1f): the Gauss-Hermite rules, the population velocity against the SGD direction, the
RK4 flow's order and validation."""
from __future__ import annotations

import numpy as np
import pytest

from numerics import equivariant as eq
from numerics import equivariant_limit as el
from numerics.groups import c2_swap


def test_gauss_hermite_product_moments() -> None:
    nodes, w = el.gauss_hermite_product(2, 5, 1.5)
    assert nodes.shape == (25, 2) and abs(w.sum() - 1) < 1e-15
    assert abs(w @ nodes[:, 0] ** 2 - 1.5 ** 2) < 1e-13
    assert abs(w @ (nodes[:, 0] ** 4) - 3 * 1.5 ** 4) < 1e-12
    assert abs(w @ (nodes[:, 0] ** 2 * nodes[:, 1] ** 2) - 1.5 ** 4) < 1e-12
    assert abs(w @ nodes[:, 1] ** 9) < 1e-12  # odd moments vanish (degree < 2n)
    for bad in ({"dim": 0, "n": 3, "std": 1.0}, {"dim": 2, "n": 0, "std": 1.0},
                {"dim": 2, "n": 3, "std": 0.0}, {"dim": 9, "n": 2, "std": 1.0}):
        with pytest.raises(ValueError):
            el.gauss_hermite_product(**bad)


def _setting(rng):
    unit = eq.LogisticUnit(2, 2)
    teacher = rng.standard_normal((3, 4))
    x, xw = el.gauss_hermite_product(2, 6, 1.0)
    y = el.weighted_output(unit, x, teacher, np.full(3, 1 / 3))
    th0, w0 = el.gauss_hermite_product(4, 2, 0.25)
    return unit, x, xw, y, th0, w0


def test_population_velocity_is_minus_the_sgd_direction() -> None:
    """With uniform weights on a batch the velocity is -(scheme_gradient + 2 tau theta)."""
    rng = np.random.default_rng(1)
    unit, group = eq.LogisticUnit(2, 2), c2_swap()
    theta = 0.3 * rng.standard_normal((7, 4))
    x = rng.standard_normal((11, 2))
    y = rng.uniform(0, 1, (11, 2))
    v = el.population_velocity(unit, theta, np.full(7, 1 / 7), x, np.full(11, 1 / 11), y, 0.05)
    g = eq.scheme_gradient("vanilla", unit, group, theta, x, y) + 0.1 * theta
    assert np.allclose(v, -g, rtol=1e-13, atol=1e-15)


def test_meanfield_flow_is_fourth_order_and_starts_at_theta0() -> None:
    rng = np.random.default_rng(2)
    unit, x, xw, y, th0, w0 = _setting(rng)
    same = el.meanfield_flow(unit, th0, w0, x, xw, y, tau=0.01, t_end=0.0, steps=3)
    assert np.array_equal(same, th0)
    runs = [el.meanfield_flow(unit, th0, w0, x, xw, y, tau=0.01, t_end=3.0, steps=n) for n in (2, 4, 8)]
    e1, e2 = np.abs(runs[0] - runs[2]).max(), np.abs(runs[1] - runs[2]).max()
    assert 8 < (e1 - e2) / e2 < 40  # errors ~ h^4: halving h divides them by ~16
    # linear unit, labels 0: dZ/dt = -(Z E[x x^T] + 2 tau Z) = -(std^2 + 2 tau) Z
    lin = eq.LinearUnit(2, 2)
    z0 = np.array([[1.0, -2.0, 0.5, 3.0]])
    zt = el.meanfield_flow(lin, z0, [1.0], x, xw, np.zeros((x.shape[0], 2)), tau=0.3, t_end=1.0,
                           steps=100)
    assert np.allclose(zt, z0 * np.exp(-1.6), rtol=1e-8)


def test_meanfield_flow_validation() -> None:
    rng = np.random.default_rng(3)
    unit, x, xw, y, th0, w0 = _setting(rng)
    with pytest.raises(ValueError, match="one entry per row"):
        el.meanfield_flow(unit, th0, w0[:-1], x, xw, y, tau=0.0, t_end=1.0, steps=2)
    with pytest.raises(ValueError, match="y must have shape"):
        el.meanfield_flow(unit, th0, w0, x, xw, y[:, :1], tau=0.0, t_end=1.0, steps=2)
    with pytest.raises(ValueError, match="tau"):
        el.meanfield_flow(unit, th0, w0, x, xw, y, tau=-1.0, t_end=1.0, steps=2)
    with pytest.raises(ValueError, match="steps"):
        el.meanfield_flow(unit, th0, w0, x, xw, y, tau=0.0, t_end=1.0, steps=0)
    xb, xbw = el.gauss_hermite_product(2, 20, 1.0)
    tb, wb = el.gauss_hermite_product(4, 3, 0.25)
    with pytest.raises(ValueError, match="steps x particles x data nodes"):
        el.meanfield_flow(unit, tb, wb, xb, xbw, np.zeros((400, 2)), tau=0.0, t_end=1.0,
                          steps=10 ** 6 - 1)


def test_gaussian_closure_solves_its_moment_odes_and_tends_to_the_gibbs_law() -> None:
    """The derived f(t), c(t) against scipy's integration of the moment ODEs of the drift
    measured by numerics (el.population_velocity of the linear unit on a Gauss-Hermite rule
    of the data, mean M = f M*): an independent route to the same closed forms."""
    from scipy.integrate import solve_ivp
    from derivations.maass_limit import closure_symbols, derive_gaussian_closure
    import sympy as sp
    c = derive_gaussian_closure()
    t, tau, beta, sx, s0 = closure_symbols()
    vals = {tau: 0.07, beta: 0.05, sx: 1.3, s0: 0.25}
    lin = eq.LinearUnit(2, 2)
    x, xw = el.gauss_hermite_product(2, 4, 1.3)            # exact for these quadratics
    Ms = np.array([0.4, -1.1, 0.8, 0.3])
    y = x @ Ms.reshape(2, 2).T

    def drift_of_mean(m: np.ndarray) -> np.ndarray:   # the velocity at z = m of the law with mean m
        return el.population_velocity(lin, m[None], np.array([1.0]), x, xw, y, 0.07)[0]
    sol = solve_ivp(lambda _, u: np.concatenate([drift_of_mean(u[:4]), [-4 * 0.07 * u[4] + 2 * 0.05]]),
                    (0, 6.0), np.concatenate([np.zeros(4), [0.25 ** 2]]), rtol=1e-11, atol=1e-13,
                    dense_output=True)
    for tt in (0.5, 2.0, 6.0):
        f = float(c.mean_factor.subs({**vals, t: tt}))
        cv = float(c.variance.subs({**vals, t: tt}))
        u = sol.sol(tt)
        assert np.allclose(u[:4], f * Ms, rtol=1e-8, atol=1e-10)
        assert abs(u[4] - cv) < 1e-9
    assert sp.simplify(c.stationary_variance - beta / (2 * tau)) == 0
    assert sp.simplify(c.stationary_mean_factor - sx**2 / (sx**2 + 2 * tau)) == 0


def test_m1f_derivation_raises_when_the_gibbs_law_is_not_the_limit(monkeypatch) -> None:
    """The fixed-point cross-check is live: a mutated limit makes the derivation raise."""
    import sympy as sp
    from derivations import maass_limit as ml
    ml.derive_gaussian_closure.cache_clear()
    real = sp.limit
    monkeypatch.setattr(sp, "limit", lambda e, *a: real(e, *a) * 1.001)
    with pytest.raises(ArithmeticError, match="Gibbs"):
        ml.derive_gaussian_closure()
    monkeypatch.undo()
    ml.derive_gaussian_closure.cache_clear()


def test_scheme_deviation_variance_matches_a_direct_simulation_of_its_recursion() -> None:
    """The derived stationary variance v(s, N) of a particle's deviation from the particles'
    mean, against a plain numpy simulation of the scheme's deviation recursion
    d' = (1 - 2 tau s) d + sqrt(2 beta s) (xi_i - mean xi) with many particles and times
    (sample variance within 5 standard errors)."""
    from derivations.maass_limit import (closure_symbols, derive_scheme_deviation_variance,
                                         scheme_symbols)
    _, tau, beta, _, _ = closure_symbols()
    s, N = scheme_symbols()
    tv, bv, sv, n = 0.3, 0.05, 0.2, 8
    v = float(derive_scheme_deviation_variance().subs({tau: tv, beta: bv, s: sv, N: n}))
    rng = np.random.default_rng(3)
    d = np.zeros((20000, n))
    acc = []
    for k in range(400):
        xi = rng.standard_normal(d.shape)
        d = (1 - 2 * tv * sv) * d + np.sqrt(2 * bv * sv) * (xi - xi.mean(axis=1, keepdims=True))
        if k >= 100 and k % 20 == 0:
            acc.append(float(np.mean(d ** 2)))
    est = np.mean(acc)
    # snapshots 20 steps apart: correlation (1 - 2 tau s)^40 ~ 6e-3, independent enough
    assert abs(est / v - 1) < 5 * np.sqrt(2 / (d.size * len(acc)))
    assert abs(v - bv / (2 * tv)) > 0.01 * v                               # the scheme's own law


def test_closure_relaxation_rates_are_the_moment_odes_eigenvalues() -> None:
    """r_m and r_C: the mean factor and the variance are single exponentials with these rates."""
    import sympy as sp
    from derivations.maass_limit import closure_symbols, derive_gaussian_closure
    c = derive_gaussian_closure()
    t, tau, beta, sx, s0 = closure_symbols()
    assert sp.simplify(c.mean_factor - c.stationary_mean_factor
                       + (c.stationary_mean_factor) * sp.exp(-c.mean_rate * t)) == 0
    assert sp.simplify(c.variance - c.stationary_variance
                       - (s0**2 - c.stationary_variance) * sp.exp(-c.variance_rate * t)) == 0
