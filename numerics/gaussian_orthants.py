"""Gaussian expectations over R^d by Gauss rules per orthant: the reference of claim H1c
(Hajjar & Chizat 2023, Sec. 3: the population best linear approximator w* = E[f* x]/v of
an odd target, x ~ N(0, v I_d)).

- :func:`half_normal_rule`: the n-node Gauss rule for the weight phi(t) (the standard
  normal density) on t > 0, exact for polynomials of degree < 2n.
- :func:`gaussian_expectation`, :func:`gaussian_first_moment`: E[g(x)] and E[g(x) x] for
  x ~ N(0, var I_d) by the product over the d coordinates of the mirrored rule (n nodes on
  each half-line).  Every orthant is integrated by its own product Gauss rule, so the
  result is exact (to rounding) whenever the integrand is, on each orthant, a polynomial
  of degree < 2n in each coordinate: piecewise polynomials with kinks on the coordinate
  hyperplanes, such as |x_2| x_1 x_i, are integrated exactly, which a rule over all of R
  is not.

The rule comes from Stieltjes' recurrence on a fixed composite Gauss-Legendre
discretization of [0, 12] followed by Golub-Welsch; the discretization's truncation of
the tail limits the rule to :data:`HALF_NORMAL_MAX_NODES` nodes (measured: below that
the moments E[t^k; t > 0], k < 2n, agree with 2^(k/2) Gamma((k+1)/2) / (2 sqrt(pi)) to
:data:`HALF_NORMAL_MOMENT_RTOL` relative; at n = 20 they miss it by 1.2e-13)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.polynomial.legendre import leggauss

from numerics.validation import (MAX_ELEMENTS, as_float_array, as_float_scalar,
                                 require_callable, require_finite_result,
                                 require_positive_int, require_size)

__all__ = ["half_normal_rule", "gaussian_expectation", "gaussian_first_moment",
           "HALF_NORMAL_MAX_NODES", "HALF_NORMAL_MOMENT_RTOL"]

#: relative accuracy of the rule's moments E[t^k; t > 0], k < 2n, for every admitted n
HALF_NORMAL_MOMENT_RTOL = 1e-13
#: the largest n whose rule meets HALF_NORMAL_MOMENT_RTOL (measured against the exact
#: moments in mpmath: worst relative error 3.5e-14 at n = 19, 1.2e-13 at n = 20, growing
#: ~3x per node as the moments feel the tail beyond 12 that the discretization drops)
HALF_NORMAL_MAX_NODES = 19
#: largest grid, (2n)^d points times d coordinates: each of the few float64 arrays of
#: that size the product rule builds stays at 128 MiB
_MAX_GRID_ENTRIES = MAX_ELEMENTS // 8
#: dimensions beyond this cannot fit the grid even at n = 1 (refused before counting)
_MAX_DIM = 64
#: admitted variances: the nodes sqrt(var) t and their squares stay normal floats
_VAR_RANGE = (1e-200, 1e200)
#: the discretization of the half-normal weight: panels of Gauss-Legendre nodes on [0, 12]
#: (the tail beyond 12 weighs 2e-33)
_PANELS, _PANEL_NODES = 6, 20


def _rule(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rule for a validated n (Stieltjes on the composite discretization, then
    Golub-Welsch)."""
    x, w = leggauss(_PANEL_NODES)
    t = np.concatenate([x + 1.0 + 2.0 * k for k in range(_PANELS)])
    wt = np.tile(w, _PANELS) * np.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    alpha, beta = np.zeros(n), np.zeros(n)
    p_prev, p = np.zeros_like(t), np.ones_like(t)
    norm_prev = 1.0
    for k in range(n):
        norm = float(wt @ (p * p))
        alpha[k] = float(wt @ (t * p * p)) / norm
        beta[k] = norm / norm_prev if k else norm
        p_prev, p = p, (t - alpha[k]) * p - (beta[k] if k else 0.0) * p_prev
        norm_prev = norm
    J = np.diag(alpha) + np.diag(np.sqrt(beta[1:]), 1) + np.diag(np.sqrt(beta[1:]), -1)
    nodes, vecs = np.linalg.eigh(J)
    return nodes, beta[0] * vecs[0] ** 2


def _nodes_count(n) -> int:
    return require_positive_int(
        n, f"n (nodes of the half-normal rule per half-line; at most HALF_NORMAL_MAX_NODES = "
           f"{HALF_NORMAL_MAX_NODES}, beyond which its moments miss "
           f"{HALF_NORMAL_MOMENT_RTOL:g} relative accuracy)", maximum=HALF_NORMAL_MAX_NODES)


def half_normal_rule(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (increasing, in (0, 12)) and positive weights (sum 1/2) of the n-node Gauss
    rule for the standard normal density phi(t) on t > 0: sum_j w_j p(t_j) equals
    int_0^inf p(t) phi(t) dt to :data:`HALF_NORMAL_MOMENT_RTOL` relative for every
    polynomial p of degree < 2n with non-negative coefficients; n in
    1..:data:`HALF_NORMAL_MAX_NODES`.  The 1-D factor of the orthant rules of claim H1c.

    >>> t, w = half_normal_rule(3)
    >>> round(float(w.sum()), 14), round(float(w @ t ** 5), 12)   # 1/2, 8 / sqrt(2 pi)
    (0.5, 3.191538243211)
    """
    return _rule(_nodes_count(n))


def _orthant_product_rule(d, n, var) -> tuple[np.ndarray, np.ndarray]:
    """(points (N, d), weights (N,)), N = (2n)^d: the product over the d coordinates of
    the mirrored half-normal rule scaled to N(0, var)."""
    n = _nodes_count(n)
    d = require_positive_int(d, f"d (dimension of x; at most {_MAX_DIM}: the grid has "
                                "(2n)^d points)", maximum=_MAX_DIM)
    var = as_float_scalar(var, "var (variance of each coordinate of x)", lo=_VAR_RANGE[0],
                          hi=_VAR_RANGE[1])
    require_size((2 * n) ** d * d, "the orthant product grid ((2n)^d points x d coordinates)",
                 limit=_MAX_GRID_ENTRIES, hint="use fewer nodes n or a smaller dimension d")
    t, w = _rule(n)
    nodes = np.concatenate([-t[::-1], t]) * math.sqrt(var)
    weights = np.concatenate([w[::-1], w])
    grid = np.stack(np.meshgrid(*([nodes] * d), indexing="ij"), axis=-1).reshape(-1, d)
    wgt = np.prod(np.stack(np.meshgrid(*([weights] * d), indexing="ij"), axis=-1).reshape(-1, d),
                  axis=1)
    return grid, wgt


def _integrand(g, X: np.ndarray) -> np.ndarray:
    """g(X) validated: one finite real value per row of X."""
    g = require_callable(g, "g (the integrand)", "X (N, d) -> values (N,)")
    vals = as_float_array(g(X), "g(X) (the integrand's values at the rule's points)")
    if vals.shape != (X.shape[0],):
        raise ValueError(f"g(X) (the integrand's values at the rule's points) must have shape "
                         f"({X.shape[0]},), one value per row of X (N, d); got shape "
                         f"{vals.shape}")
    return vals


def gaussian_expectation(g: Callable[[np.ndarray], np.ndarray], d: int, n: int,
                         var: float = 1.0) -> float:
    """E[g(x)] for x ~ N(0, var I_d) by the orthant product rule with n half-normal nodes
    per half-line; g maps the rule's points X (N, d), N = (2n)^d, to N real values.  Exact
    (to rounding) when g is, on each orthant, a polynomial of degree < 2n in each
    coordinate.  The zeroth moment of the rule of claim H1c.

    >>> round(gaussian_expectation(lambda X: np.abs(X[:, 0]) * X[:, 1] ** 2, 2, 2), 13)
    0.7978845608029
    """
    grid, wgt = _orthant_product_rule(d, n, var)
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is refused below
        mean = float(wgt @ _integrand(g, grid))
    return require_finite_result(mean, "E[g(x)]", "g's values or var too large")


def gaussian_first_moment(g: Callable[[np.ndarray], np.ndarray], d: int, n: int,
                          var: float = 1.0) -> np.ndarray:
    """E[g(x) x] (shape (d,)) for x ~ N(0, var I_d) by the orthant product rule with n
    half-normal nodes per half-line; g maps the rule's points X (N, d), N = (2n)^d, to N
    real values.  Exact (to rounding) when each g(x) x_i is, on each orthant, a polynomial
    of degree < 2n in each coordinate.  Claim H1c: w* = E[f*(x) x] / v, v = 1/d.

    >>> m = gaussian_first_moment(lambda X: X[:, 0] * np.abs(X[:, 1]), 2, 2, var=0.5)
    >>> np.round(m, 14).tolist()                  # (v E|x_2|, 0), E|x_2| = sqrt(2 v / pi)
    [0.28209479177388, 0.0]
    """
    grid, wgt = _orthant_product_rule(d, n, var)
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is refused below
        moment = (wgt * _integrand(g, grid)) @ grid
    return require_finite_result(moment, "E[g(x) x]", "g's values or var too large")
