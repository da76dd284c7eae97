"""Formulas of claims W2a, W2e, W2f and the derivations behind them: canonical map,
potential gradient vs independent finite differences on both sides of a boundary."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given, strategies as st

from derivations import relu1d as D
from numerics import relu1d as N
from verify import formulas as F

fl = lambda lo, hi: st.floats(lo, hi, allow_nan=False, allow_infinity=False)  # noqa: E731


@given(fl(-3, 3), fl(-3, 3), fl(-3, 3))
@example(1.0, 0.0, 0.0)
def test_canonical_roundtrip(a, b, c):
    assume(abs(a) + abs(b) > 1e-3)
    r, th, dl = F.canonical_from_full(a, b, c)
    a2, b2, c2 = F.full_from_canonical(r, th, dl)
    assert np.allclose([a2, b2, c2], [a, b, c], rtol=1e-12, atol=1e-12)


@given(fl(-3, 3), fl(-np.pi, np.pi), fl(-50, 50))
@example(1e-3, 0.2, 40.0)  # delta >> r: rationalized branch
def test_full_from_canonical_is_on_fibre(r, th, dl):
    assume(abs(r) > 1e-6)
    a, b, c = F.full_from_canonical(r, th, dl)
    r2, th2, dl2 = F.canonical_from_full(a, b, c)
    assert abs(r2 - r) <= 1e-12 * max(1, abs(r))
    assert abs(np.angle(np.exp(1j * (th2 - th)))) <= 1e-12
    assert abs(dl2 - dl) <= 1e-11 * max(1, abs(dl), r * r)
    assert np.sign(c) == np.sign(r)  # documented sign branch


def test_formula_errors():
    with pytest.raises(ValueError, match="no real preimage"):
        F.full_from_canonical(0.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="shapes must match"):
        F.canonical_from_full([1.0, 2.0], [1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        F.potential_gradient(1.0, np.inf, [0.0], [1.0])
    with pytest.raises(ValueError, match="shapes must match"):
        F.potential_gradient(1.0, 0.0, [0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="undefined"):
        F.canonical_from_full(0.0, 0.0, 1.0)
    assert F.full_from_canonical(0.0, 0.3, -4.0)[2] == 0.0
    assert F.velocity_jump.claim == "W2f" and "sqrt" in F.velocity_jump.latex


def _V(r, th, x, rho):
    """V(w) = sum_j rho_j r <x~_j, d(theta)>_+ computed directly (numpy)."""
    return float(np.sum(rho * r * np.maximum(x * np.cos(th) - np.sin(th), 0.0)))


@given(fl(-2, 2), st.lists(fl(-1.5, 1.5), min_size=3, max_size=5, unique=True),
       st.lists(fl(-2, 2), min_size=5, max_size=5), st.integers(0, 4), st.booleans())
def test_one_sided_fd_at_boundary(r, xs, rhos, jstar, lower):
    x = np.array(sorted(xs))
    assume(np.min(np.diff(x)) > 1e-2 and abs(r) > 1e-2)
    rho = np.array(rhos[: x.size])
    j = jstar % x.size
    th0 = np.arctan(x[j]) - (np.pi if lower else 0.0)
    h = 1e-5
    one_sided = []
    for sgn in (+1, -1):
        V0, V1, V2 = (_V(r, th0 + sgn * k * h, x, rho) for k in (0, 1, 2))
        one_sided.append(sgn * (-3 * V0 + 4 * V1 - V2) / (2 * h))  # second-order one-sided
    pg = [F.potential_gradient(r, th0 + sgn * 1e-9, x, rho)[1] for sgn in (+1, -1)]
    scale = max(1.0, abs(r) * np.sum(np.abs(rho)) * 3)
    for fd, p in zip(one_sided, pg):
        assert abs(fd - p) <= 1e-6 * scale
    jump = abs(one_sided[0] - one_sided[1])
    assert abs(jump - F.velocity_jump(r, x[j], rho[j])) <= 1e-6 * scale
    # radial component continuous
    pr = [F.potential_gradient(r, th0 + sgn * 1e-9, x, rho)[0] for sgn in (+1, -1)]
    assert abs(pr[0] - pr[1]) <= 1e-7 * scale


def test_potential_gradient_matches_numerics_gradient():
    rng = np.random.default_rng(11)
    r, th = rng.normal(size=50), rng.uniform(-np.pi, np.pi, 50)
    x, y = np.sort(rng.uniform(-1, 1, 6)), rng.normal(size=6)
    rho = N.canonical_forward(r, th, x) - y
    _, (gr, gt) = N.canonical_loss_and_grad(r, th, x, y)
    pr, pt = F.potential_gradient(r, th, x, rho)
    assert np.allclose(pr, 50 * gr, rtol=1e-12, atol=1e-13)
    assert np.allclose(pt, 50 * gt, rtol=1e-12, atol=1e-13)


def test_velocity_jump_mpmath_and_broadcast():
    assert float(F.velocity_jump.mpmath(2.0, 0.75, -0.5)) == pytest.approx(1.25, rel=1e-15)
    out = F.velocity_jump(np.array([1.0, 2.0]), 0.0, np.array([[1.0], [3.0]]))
    assert out.shape == (2, 2) and out[1, 1] == 6.0


def test_derived_metric_and_invariant():
    c = D.derive_W2c()
    assert c["off_diagonal"] == 0 and c["kernel_limit"] == 1
    assert D.derive_W2b()["ddelta"] == 0
    assert all(e == 0 for e in D.derive_W2e()["second_derivative_in_rho"])
