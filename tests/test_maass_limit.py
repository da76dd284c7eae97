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
