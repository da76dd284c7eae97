"""The d-dimensional two-layer network with a smooth activation instead of the ReLU
(Hajjar & Chizat 2023, Prop. 2.1 holds for any sigma; claim H1k):
f(x) = (1/m) sum_j a_j sigma(b_j . x), L = 1/2 sum_i w_i (f(x_i) - y_i)^2, w_i = 1/n,
the conventions of :mod:`numerics.twolayer` (whose ``gradient_descent`` and
``gradient_flow`` take :func:`loss_and_grad` through ``grad_fn``).

>>> import numpy as np
>>> a, B = np.array([1.0, -1.0]), np.array([[0.5, 0.0], [0.0, 0.5]])
>>> X, Y = np.array([[1.0, 2.0]]), np.array([0.0])
>>> round(float(forward(a, B, X, "tanh")[0]), 12)   # (tanh(0.5) - tanh(1)) / 2
-0.149738499348
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from numerics.validation import as_float_array, require_size

__all__ = ["ACTIVATIONS", "forward", "loss_and_grad"]


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


#: name -> (sigma, sigma'); every one smooth and finite on all of R
ACTIVATIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray],
                             Callable[[np.ndarray], np.ndarray]]] = {
    "tanh": (np.tanh, lambda z: 1.0 / np.cosh(np.clip(z, -350.0, 350.0)) ** 2),
    "softplus": (_softplus, _sigmoid),
    "sigmoid": (_sigmoid, lambda z: _sigmoid(z) * _sigmoid(-z)),
}


def _activation(name: Any) -> tuple[Callable, Callable]:
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}; got {name!r}"[:200])
    return ACTIVATIONS[name]


def _validate(a: Any, B: Any, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = as_float_array(a, "a (output weights, shape (m,))", ndim=1, allow_empty=False)
    B = as_float_array(B, "B (input weights, shape (m, d))", ndim=2, allow_empty=False)
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    if B.shape[0] != a.size or X.shape[1] != B.shape[1]:
        raise ValueError(f"a, B and X must have shapes (m,), (m, d), (n, d); got {a.shape}, "
                         f"{B.shape}, {X.shape}")
    require_size(X.shape[0] * a.size, "the pre-activations (n x m entries)",
                 hint="use fewer samples or particles")
    return a, B, X


def forward(a: Any, B: Any, X: Any, activation: str) -> np.ndarray:
    """f(x_i) = (1/m) sum_j a_j sigma(b_j . x_i) on the rows of X: shape (n,)."""
    sigma, _ = _activation(activation)
    a, B, X = _validate(a, B, X)
    with np.errstate(over="ignore"):
        out = sigma(X @ B.T) @ a / a.size
    if not np.all(np.isfinite(out)):
        raise ValueError("f overflows float64: reduce the scale of a, B or X")
    return out


def loss_and_grad(a: Any, B: Any, X: Any, Y: Any, activation: str
                  ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """``(L, (dL/da, dL/dB))`` for L = 1/2 (1/n) sum_i (f(x_i) - y_i)^2."""
    sigma, dsigma = _activation(activation)
    a, B, X = _validate(a, B, X)
    Y = as_float_array(Y, "Y (targets, shape (n,))", ndim=1, allow_empty=False)
    if Y.size != X.shape[0]:
        raise ValueError(f"Y must have one entry per row of X; got {Y.size} and {X.shape[0]}")
    m, n = a.size, X.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        Z = X @ B.T
        S = sigma(Z)
        r = S @ a / m - Y
        loss = 0.5 * float(r @ r) / n
        ga = S.T @ r / (m * n)
        gB = ((dsigma(Z) * r[:, None]).T @ X) * (a / (m * n))[:, None]
    if not (np.isfinite(loss) and np.all(np.isfinite(ga)) and np.all(np.isfinite(gB))):
        raise ValueError("the loss or its gradient overflows float64: reduce the scale of a, "
                         "B, X or Y")
    return loss, (ga, gB)
