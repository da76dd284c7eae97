"""numerics.activations (claim H1k's network with a smooth activation) and the H1k
derivation's residuals."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from numerics import activations as act
from numerics.rng import make_rng


@pytest.mark.parametrize("sigma", sorted(act.ACTIVATIONS))
def test_gradient_is_the_derivative_of_the_loss(sigma: str) -> None:
    rng = make_rng(0, "act", sigma)
    a, B = rng.standard_normal(7), rng.standard_normal((7, 3))
    X, Y = rng.standard_normal((11, 3)), rng.standard_normal(11)
    _, (ga, gB) = act.loss_and_grad(a, B, X, Y, sigma)
    h = 1e-6
    for k in range(3):
        E = np.zeros_like(B)
        E[2, k] = h
        fd = (act.loss_and_grad(a, B + E, X, Y, sigma)[0]
              - act.loss_and_grad(a, B - E, X, Y, sigma)[0]) / (2 * h)
        assert abs(fd - gB[2, k]) < 1e-8
    e = np.zeros(7)
    e[4] = h
    fd = (act.loss_and_grad(a + e, B, X, Y, sigma)[0] - act.loss_and_grad(a - e, B, X, Y, sigma)[0]) / (2 * h)
    assert abs(fd - ga[4]) < 1e-8


def test_forward_matches_the_definition_and_validates() -> None:
    a, B, X = np.array([2.0, -1.0]), np.array([[1.0, 0.0], [0.0, 3.0]]), np.array([[0.5, -0.2]])
    assert act.forward(a, B, X, "softplus")[0] == pytest.approx(
        (2 * np.log1p(np.exp(0.5)) - np.log1p(np.exp(-0.6))) / 2, rel=1e-15)
    with pytest.raises(ValueError, match="activation"):
        act.forward(a, B, X, "relu6")
    with pytest.raises(ValueError, match="shapes"):
        act.forward(a, B, np.ones((1, 3)), "tanh")
    with pytest.raises(ValueError, match="Y"):
        act.loss_and_grad(a, B, X, np.ones(2), "tanh")


def test_h1k_residuals_need_the_whole_orbit() -> None:
    """The derived equivariance is not vacuous: without one orbit element of the sample the
    velocity residual of the rotation is a non-zero expression."""
    from derivations import hajjar_invariance as hi
    T = hi.TRANSFORMS["rotation 2pi/3"]
    sigma = sp.Function("sigma")
    b, x = sp.Matrix(sp.symbols("b1 b2")), sp.Matrix(sp.symbols("x1 x2"))
    dot = lambda u, v: sp.expand((u.T * v)[0, 0])  # noqa: E731
    partial = [x, T * x]                               # T^2 x missing
    va = sum(sigma(dot(T * b, xk)) for xk in partial) - sum(sigma(dot(b, xk)) for xk in partial)
    assert sp.simplify(sp.expand(va, deep=True)) != 0
    assert all(v == 0 for v in hi.derive_h1k().results["velocity_equivariance"])
