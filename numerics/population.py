"""The population-loss gradient flow of a width-m two-layer ReLU network on the target
f*(x) = |x_H|, x ~ N(0, s2 I_d) (Hajjar & Chizat 2023, Sec. 4; the system under test of
claim H1i).

Definitions only (docs/conventions.md section 2): f(x) = (1/m) sum_j a_j relu(b_j . x), H = span(e_1..e_dH),
F(a, B) = 1/2 E[(f(x) - |x_H|)^2].  The expectations over x are exact:

- E[relu(u.x) relu(v.x)] = s2 |u||v| (sin g + (pi - g) cos g) / (2 pi) (arc-cosine kernel,
  g the angle between u and v) and its u-gradient s2/(2 pi) [(pi - g) v + sin g |v| u/|u|];
- the target terms E[|x_H| relu(b.x)], E[|x_H| 1{b.x > 0} x] through
  |x_H| = alpha E_w relu(w . x_H), w ~ Unif(S^{d_H-1}): a 1-D rule over R = w . e_1 given
  by the caller (nodes in [-1, 1], weights summing to alpha(d_H)), as in
  :func:`numerics.gaussian_relu.population_loss_and_grad_norm_target`, which this module
  is tested against (it computes the angles once per evaluation, which makes it ~5x
  faster at m = 1024).

Cost: one gradient is O(m^2 d) (the Gram matrix and one (m x m) @ (m x d) product) plus
O(m^2) arccos/sqrt; ~0.1 s at m = 1024 on one core, ~1.6 s at m = 4096 (memory 5 m^2
floats).  :func:`rk4_gradient_flow` integrates the parameter gradient flow
d(a, B)/ds = -grad F(a, B) by the classical Runge-Kutta scheme (4 gradients a step).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from numerics.validation import (as_float_array, as_float_scalar, require_positive_int,
                                 require_size)

__all__ = ["population_gradient", "rk4_gradient_flow", "MAX_WIDTH", "MAX_WORK"]

#: largest width m of :func:`population_gradient` (5 m^2 float64 temporaries: 2.6 GB at 8192)
MAX_WIDTH = 8192
#: largest total work steps * m^2 * (d + 8) of :func:`rk4_gradient_flow` (~10 min on one core)
MAX_WORK = 4 * 10 ** 12


def _validate(a, B, d_H, s2, r_nodes, r_weights):
    a = as_float_array(a, "a (output weights, shape (m,))", ndim=1, allow_empty=False)
    B = as_float_array(B, "B (input weights, shape (m, d))", ndim=2, allow_empty=False)
    if B.shape[0] != a.shape[0]:
        raise ValueError(f"a has {a.shape[0]} entries but B has {B.shape[0]} rows; both must be m")
    m, d = B.shape
    require_positive_int(m, "m (width: rows of B)", maximum=MAX_WIDTH)
    d_H = require_positive_int(d_H, "d_H (dimension of the subspace H)", maximum=d - 1)
    s2 = as_float_scalar(s2, "s2 (data variance per coordinate)", lo=0.0, lo_open=True)
    rn = as_float_array(r_nodes, "r_nodes (quadrature nodes in [-1, 1])", ndim=1,
                        allow_empty=False)
    rw = as_float_array(r_weights, "r_weights (quadrature weights)", ndim=1)
    if rw.shape != rn.shape:
        raise ValueError(f"r_weights must have one entry per node ({rn.size}); got {rw.size}")
    if np.any(np.abs(rn) > 1.0):
        raise ValueError("r_nodes must lie in [-1, 1] (a coordinate of a unit vector)")
    if not np.all(np.any(B != 0, axis=1)):
        raise ValueError("every row of B must be non-zero (the angle to x is undefined)")
    require_size(m * rn.size, "m * len(r_nodes) (the target table)")
    return a, B, d_H, s2, rn, rw


def _target_terms(B, nb, d_H, s2, rn, rw):
    """E[|x_H| relu(b_j . x)] (m,) and E[|x_H| 1{b_j . x > 0} x] (m, d)."""
    m, d = B.shape
    nbH = np.linalg.norm(B[:, :d_H], axis=1)
    cos = np.clip((nbH / nb)[:, None] * rn[None, :], -1.0, 1.0)
    gam = np.arccos(cos)
    sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
    pref = s2 / (2 * np.pi)
    T = pref * nb * ((sin + (np.pi - gam) * cos) @ rw)
    eH = np.divide(B[:, :d_H], nbH[:, None], out=np.zeros((m, d_H)), where=nbH[:, None] > 0)
    gs = (pref * (sin @ rw) / nb)[:, None] * B
    gs[:, :d_H] += (pref * (((np.pi - gam) * rn[None, :]) @ rw))[:, None] * eH
    return T, gs


def _gradient(a, B, d_H, s2, rn, rw):
    m = a.shape[0]
    nb = np.linalg.norm(B, axis=1)
    U = B / nb[:, None]
    cos = U @ U.T
    np.clip(cos, -1.0, 1.0, out=cos)
    sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
    gam = np.arccos(cos)
    pi_gam = np.pi - gam
    pref = s2 / (2 * np.pi)
    w = a * nb / m                                          # a_k |b_k| / m
    Ef = pref * nb * ((sin + pi_gam * cos) @ w)              # E[f relu(b_j . x)]
    Efx = pref * (pi_gam @ ((a / m)[:, None] * B) + (sin @ w)[:, None] * U)
    T, gs = _target_terms(B, nb, d_H, s2, rn, rw)
    ga = (Ef - T) / m
    gB = (a / m)[:, None] * (Efx - gs)
    return ga, gB


def population_gradient(a, B, d_H: int, s2: float, r_nodes, r_weights
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(dF/da, dF/dB) of F(a, B) = 1/2 E[(f(x) - |x_H|)^2], x ~ N(0, s2 I_d) (claim H1i):
    dF/da_j = (1/m) E[(f - f*) relu(b_j . x)], dF/db_j = (a_j/m) E[(f - f*) 1{b_j . x > 0} x].
    ``(r_nodes, r_weights)``: the rule for R = w . e_1, w ~ Unif(S^{d_H-1}), weights summing
    to alpha(d_H) (see the module docstring).  Rows of B must be non-zero."""
    a, B, d_H, s2, rn, rw = _validate(a, B, d_H, s2, r_nodes, r_weights)
    with np.errstate(over="ignore", invalid="ignore"):
        ga, gB = _gradient(a, B, d_H, s2, rn, rw)
    if not (np.all(np.isfinite(ga)) and np.all(np.isfinite(gB))):
        raise ValueError("population_gradient overflows float64: rescale a, B or s2")
    return ga, gB


def rk4_gradient_flow(a, B, d_H: int, s2: float, r_nodes, r_weights, h: float, steps: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(a, B) after ``steps`` classical Runge-Kutta steps of size ``h`` of the parameter
    gradient flow d(a, B)/ds = -grad F(a, B) (:func:`population_gradient`); global error
    O(h^4).  Refuses, before computing, a run above ``MAX_WORK`` (steps * m^2 * (d + 8))."""
    a, B, d_H, s2, rn, rw = _validate(a, B, d_H, s2, r_nodes, r_weights)
    h = as_float_scalar(h, "h (step in parameter time)", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0)
    m, d = B.shape
    require_size(4 * steps * m * m * (d + 8), "4 * steps * m^2 * (d + 8) (work of the run)",
                 limit=MAX_WORK, what="flops")

    def field(x, Y):
        ga, gB = _gradient(x, Y, d_H, s2, rn, rw)
        return -ga, -gB

    def nonzero_rows(k: int, a_, B_) -> None:
        if not np.all(np.any(B_ != 0, axis=1)):
            raise FloatingPointError(f"rk4_gradient_flow: a row of B reached 0 at step {k}")
    with np.errstate(over="ignore", invalid="ignore"):
        a, B = _rk4_steps(field, a, B, h, steps, "rk4_gradient_flow", nonzero_rows)
    return a, B


def _rk4_steps(field: Callable, a: np.ndarray, B: np.ndarray, h: float, steps: int,
               name: str, after_step: Callable | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` classical Runge-Kutta steps of size h of d(a, B)/ds = field(a, B), a
    FloatingPointError naming ``name`` and the step at a non-finite state; ``after_step(k,
    a, B)`` may refuse a state too (used by :func:`rk4_gradient_flow` and claim H1m's
    sample flow, verify.studies.hajjar)."""
    for k in range(steps):
        k1 = field(a, B)
        k2 = field(a + h / 2 * k1[0], B + h / 2 * k1[1])
        k3 = field(a + h / 2 * k2[0], B + h / 2 * k2[1])
        k4 = field(a + h * k3[0], B + h * k3[1])
        a = a + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        B = B + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(B))):
            raise FloatingPointError(f"{name} diverged at step {k} (h = {h:g})")
        if after_step is not None:
            after_step(k, a, B)
    return a, B
