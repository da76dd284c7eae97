"""The mean-field limit of the noiseless training of Maass Martinez & Fontbona (2024, main
theorem; claim M1f): a deterministic quadrature of the initial law transported by the
population velocity field.

With beta = 0 the limit law is the push-forward of mu_0 by the flow of

    d theta / dt = -(E_pi[grad_z sigma_*(X, theta)^T (Phi_{mu_t}(X) - Y)] + 2 tau theta),

Phi_mu(x) = int sigma_*(x, theta) dmu(theta) (docs/conventions.md, section 3).  A weighted
quadrature of mu_0 (Gauss-Hermite in each coordinate of a Gaussian mu_0, exact for
polynomials of degree < 2n per coordinate) moved by that field, with the data expectation
by a Gauss-Hermite product rule of pi_X and the time integrated by RK4, is the limit up to
quadrature and integration errors that refining measures (spectral in the node counts:
the flow map of an analytic field is analytic).  It never samples: it is not the
width-N SGD it is compared with.

- :func:`gauss_hermite_product` the product rule of N(0, std^2 I_dim);
- :func:`weighted_output` Phi(x_b) = sum_k w_k sigma_*(x_b, theta_k);
- :func:`population_velocity` the field above at weighted particles;
- :func:`meanfield_flow` the weighted particles at time ``t_end`` (RK4).
"""
from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np

from numerics.equivariant_units import Unit, _require_unit
from numerics.validation import (as_float_array, as_float_scalar, require_positive_int,
                                 require_size)

__all__ = ["gauss_hermite_product", "weighted_output", "population_velocity", "meanfield_flow",
           "MAX_RULE_DIM", "MAX_NODES_PER_DIM", "MAX_RULE_STD", "MAX_FLOW_WORK"]

#: the product rule's dimension and nodes per coordinate are bounded (n^dim nodes)
MAX_RULE_DIM = 8
MAX_NODES_PER_DIM = 200
#: the largest standard deviation of a rule (its nodes, up to ~20 std, stay finite and
#: their squares too)
MAX_RULE_STD = 1e150
#: steps x particles x data nodes of one :func:`meanfield_flow` call (about a minute)
MAX_FLOW_WORK = 2 ** 33


def gauss_hermite_product(dim: int, n: int, std: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (n^dim, dim) and weights (n^dim,) summing to 1 of the product Gauss-Hermite
    rule of N(0, std^2 I_dim): exact for polynomials of degree < 2n in each coordinate."""
    dim = require_positive_int(dim, "dim", maximum=MAX_RULE_DIM)
    n = require_positive_int(n, "n (nodes per coordinate)", maximum=MAX_NODES_PER_DIM)
    std = as_float_scalar(std, "std", lo=0.0, lo_open=True, hi=MAX_RULE_STD)
    require_size(n ** dim * dim, "the product rule (n^dim x dim entries)",
                 hint="use fewer nodes per coordinate")
    t, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    nodes = np.array(list(product(t, repeat=dim))) * std
    weights = np.prod(np.array(list(product(w, repeat=dim))), axis=1)
    return nodes, weights


def _weights(weights: Any, k: int, name: str) -> np.ndarray:
    w = as_float_array(weights, f"{name} ({k},)", ndim=1, allow_empty=False)
    if w.size != k:
        raise ValueError(f"{name} must have one entry per row ({k}); got {w.size}")
    return w


def weighted_output(unit: Unit, x: Any, theta: Any, weights: Any) -> np.ndarray:
    """Phi(x_b) = sum_k weights_k sigma_*(x_b, theta_k): shape (B, dY)."""
    _require_unit(unit)
    theta = as_float_array(theta, "theta (K, D)", ndim=2, allow_empty=False)
    w = _weights(weights, theta.shape[0], "weights")
    return np.einsum("bkd,k->bd", unit.value(x, theta), w)


def population_velocity(unit: Unit, theta: np.ndarray, weights: np.ndarray, x: np.ndarray,
                        x_weights: np.ndarray, y: np.ndarray, tau: float) -> np.ndarray:
    """-(sum_b x_weights_b grad_z sigma_*(x_b, theta_k)^T (Phi(x_b) - y_b) + 2 tau theta_k)
    for every particle k, Phi the model of the weighted particles: shape (K, D)."""
    R = weighted_output(unit, x, theta, weights) - y
    return -(unit.vjp(x, theta, x.shape[0] * x_weights[:, None] * R) + 2.0 * tau * theta)


def meanfield_flow(unit: Unit, theta0: Any, weights: Any, x: Any, x_weights: Any, y: Any, *,
                   tau: float, t_end: float, steps: int) -> np.ndarray:
    """The weighted particles (K, D) at time ``t_end`` of the population flow from
    ``theta0`` (RK4 with ``steps`` steps; the weights do not change).  ``x`` (B, dX) with
    ``x_weights`` (B,) is the data rule of pi_X, ``y`` (B, dY) the labels there.  Raises
    FloatingPointError naming the step count if the particles become non-finite."""
    _require_unit(unit)
    th = as_float_array(theta0, "theta0 (K, D)", ndim=2, allow_empty=False).copy()
    w = _weights(weights, th.shape[0], "weights")
    x = as_float_array(x, "x (B, dX)", ndim=2, allow_empty=False)
    xw = _weights(x_weights, x.shape[0], "x_weights")
    y = as_float_array(y, "y (B, dY)", ndim=2, allow_empty=False)
    if y.shape != (x.shape[0], unit.dim_y):
        raise ValueError(f"y must have shape {(x.shape[0], unit.dim_y)} (one label per data "
                         f"node); got {y.shape}")
    tau = as_float_scalar(tau, "tau", lo=0.0)
    t_end = as_float_scalar(t_end, "t_end", lo=0.0)
    steps = require_positive_int(steps, "steps", maximum=10 ** 6)
    require_size(steps * th.shape[0] * x.shape[0], "steps x particles x data nodes",
                 limit=MAX_FLOW_WORK, hint="use fewer steps or nodes")
    h = t_end / steps

    def F(z: np.ndarray) -> np.ndarray:
        return population_velocity(unit, z, w, x, xw, y, tau)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            k1 = F(th)
            k2 = F(th + 0.5 * h * k1)
            k3 = F(th + 0.5 * h * k2)
            k4 = F(th + h * k3)
            th += h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            if not np.all(np.isfinite(th)):
                raise FloatingPointError(f"meanfield_flow diverged (RK4 step {h:.3g}): use more "
                                         "steps or a shorter t_end")
    return th
