"""Noisy SGD of the linear unit sigma_*(x, z) = z x (vanilla scheme, i.i.d. noise; claim M1f),
run exactly at widths where :func:`numerics.equivariant.train` costs O(N) per step.

For this unit the data term of the SGD direction does not depend on the particle: with the
batch second moment S_k = (1/B) sum_b x_b x_b^T and a linear teacher y = Z* x (Z* the mean
of the teacher particles), every particle moves by -s (Zbar_k - Z*) S_k, Zbar_k the mean of
the particles (all matrices dY x dX).  One step of
``theta_i <- theta_i - s ((Zbar - Z*) S_k + 2 tau theta_i) + sqrt(2 beta s) xi_i``
therefore splits into

- the mean: E_{k+1} = E_k A_k + b_k, E = Zbar - Z*, A_k = (1 - 2 tau s) I - s S_k,
  b_k = -2 tau s Z* + sqrt(2 beta s) xibar_k (an affine map on dY x dX matrices, composed
  over all steps by pairwise reduction, O(K) in vectorized blocks);
- the deviations: delta_i <- a delta_i + sqrt(2 beta s) (xi_i - xibar), a = 1 - 2 tau s,
  so delta_K = a^K delta_0 + sqrt(2 beta s) (W_i - Wbar), W_i = sum_k a^(K-1-k) xi_{i,k}.

For Gaussian noise xibar_k and (xi_{i,k} - xibar_k)_i are independent, so drawing
xibar_k ~ N(0, I/N) and W_i ~ N(0, v I) i.i.d., v = sum_{j<K} a^(2j), gives the particles
of K steps EXACTLY in law at O(K B + N) cost instead of O(K N).  Given the standard normals
``xi`` that ``train`` draws (``xi=``), the same algebra reproduces its particles pathwise
(tests/test_equivariant_linear.py; the M1f sub-check)."""
from __future__ import annotations

import numpy as np

from numerics.equivariant_sgd import SGDConfig
from numerics.equivariant_units import LinearUnit
from numerics.validation import (ArgumentTypeError, as_float_array, require_generator,
                                 require_size)

__all__ = ["train_linear", "compose_affine"]

#: steps of data drawn at once (memory: chunk x batch x dX doubles)
_CHUNK = 1 << 16


def compose_affine(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The composition E -> (...((E A_0 + b_0) A_1 + b_1) ...) A_{K-1} + b_{K-1} of K affine
    maps on matrices, A (K, n, n), b (K, m, n): returns (A_tot, b_tot) with the result
    E A_tot + b_tot, by pairwise reduction (log2 K vectorized levels)."""
    A = as_float_array(A, "A (the maps' linear parts, shape (K, n, n))", ndim=3, allow_empty=False)
    b = as_float_array(b, "b (the maps' offsets, shape (K, m, n))", ndim=3, allow_empty=False)
    if A.shape[1] != A.shape[2] or b.shape[0] != A.shape[0] or b.shape[2] != A.shape[1]:
        raise ValueError(f"A must have shape (K, n, n) and b (K, m, n); got {A.shape}, {b.shape}")
    while A.shape[0] > 1:
        if A.shape[0] % 2:   # pad with the identity map
            A = np.concatenate([A, np.eye(A.shape[1])[None]])
            b = np.concatenate([b, np.zeros((1,) + b.shape[1:])])
        A0, A1, b0, b1 = A[0::2], A[1::2], b[0::2], b[1::2]
        A, b = A0 @ A1, b0 @ A1 + b1
    return A[0], b[0]


def _deviation_variance(a: float, K: int) -> float:
    """v = sum_{j<K} a^(2j), stably (a = 1 - 2 tau s close to 1)."""
    if a == 1.0:
        return float(K)
    return float(-np.expm1(2 * K * np.log(abs(a))) / ((1 - a) * (1 + a)))


def _mean_offsets(xi: np.ndarray | None, rng_noise, K: int, N: int, shape) -> np.ndarray:
    """xibar_k for every step: the mean of ``xi`` over the particles, or drawn N(0, I/N)."""
    if xi is not None:
        return xi.mean(axis=1).reshape((K,) + shape)
    return rng_noise.standard_normal((K,) + shape) / np.sqrt(N)


def train_linear(unit: LinearUnit, theta0: np.ndarray, teacher: np.ndarray, config: SGDConfig,
                 rng_data: np.random.Generator, rng_noise: np.random.Generator, *,
                 xi: np.ndarray | None = None) -> np.ndarray:
    """The particles (N, D) after ``config.steps`` steps of :func:`numerics.equivariant.train`
    (vanilla scheme, i.i.d. noise) for the linear unit: exact in law (module doc), or
    pathwise given ``xi`` (steps, N, D), the standard normals of train's noise.  The data are
    the same draws as train's from ``rng_data``."""
    if not isinstance(unit, LinearUnit):
        raise ArgumentTypeError(f"unit must be a LinearUnit (the decomposition needs a data term "
                                f"independent of the particle); got {type(unit).__name__}")
    if not isinstance(config, SGDConfig):
        raise ArgumentTypeError(f"config must be an SGDConfig; got {type(config).__name__}")
    if config.precision != "float64":
        raise ValueError("config.precision must be 'float64' (train's float32 path is for the "
                         "non-linear units)")
    rng_data = require_generator(rng_data, "rng_data")
    rng_noise = require_generator(rng_noise, "rng_noise")
    theta = as_float_array(theta0, "theta0 (initial particles)", ndim=2, allow_empty=False)
    teacher = as_float_array(teacher, "teacher (particles)", ndim=2, allow_empty=False)
    N, D = theta.shape
    if D != unit.dim_z or teacher.shape[1] != D:
        raise ValueError(f"theta0 and teacher need {unit.dim_z} columns (D of the unit); got "
                         f"{theta.shape}, {teacher.shape}")
    K, dy, dx = config.steps, unit.dim_y, unit.dim_x
    require_size(K * (dy * dx + dx * dx), "the affine maps of all steps (steps x (dY dX + dX^2))")
    if xi is not None:
        xi = as_float_array(xi, "xi (the noise's standard normals)", ndim=3)
        if xi.shape != (K, N, D):
            raise ValueError(f"xi must have shape (steps, N, D) = {(K, N, D)}; got {xi.shape}")
    if K == 0:
        return theta.copy()
    s = config.alpha / N
    a, amp = 1.0 - 2.0 * config.tau * s, np.sqrt(2.0 * config.beta * s)
    z_star = teacher.mean(axis=0).reshape(dy, dx)
    S = np.empty((K, dx, dx))
    for k0 in range(0, K, _CHUNK):
        X = config.x_std * rng_data.standard_normal((min(_CHUNK, K - k0), config.batch, dx))
        S[k0:k0 + X.shape[0]] = np.einsum("kbi,kbj->kij", X, X) / config.batch
    A = a * np.eye(dx) - s * S
    b = np.broadcast_to(-2.0 * config.tau * s * z_star, (K, dy, dx)).copy()
    if config.beta > 0:
        b += amp * _mean_offsets(xi, rng_noise, K, N, (dy, dx))
    A_tot, b_tot = compose_affine(A, b)
    mean0 = theta.mean(axis=0)
    mean_K = z_star + (mean0.reshape(dy, dx) - z_star) @ A_tot + b_tot
    dev = a ** K * (theta - mean0)
    if config.beta > 0:
        if xi is not None:
            W = np.tensordot(a ** np.arange(K - 1, -1, -1), xi - xi.mean(axis=1, keepdims=True), 1)
        else:
            W = np.sqrt(_deviation_variance(a, K)) * rng_noise.standard_normal((N, D))
            W -= W.mean(axis=0)
        dev += amp * W
    return mean_K.reshape(D) + dev
