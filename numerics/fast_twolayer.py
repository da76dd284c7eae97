"""A leaner loss-and-gradient step for the bias-free two-layer ReLU network of Hajjar &
Chizat (docs/conventions.md, section 2; prototype for ``numerics.twolayer``):

    f(x) = (1/m) sum_j a_j relu(b_j . x),   L(a, B) = 1/2 sum_i w_i (f(x_i) - y_i)^2,

w_i = 1/n by default (the empirical mean, the normalization of ``numerics.twolayer``).

Same exact gradient as ``twolayer.loss_and_grad``, with one pass over the (chunk x m)
pre-activation block fewer and one buffer instead of two, using the 1-homogeneity of ReLU
(relu(z) = 1{z > 0} z):

    G_j = sum_i w_i r_i 1{b_j . x_i > 0} x_i          (one (m x c) @ (c x d) GEMM)
    dL/dB_j = (a_j / m) G_j,   dL/da_j = (1/m) sum_i w_i r_i relu(b_j . x_i) = (1/m) b_j . G_j

so dL/da needs no GEMV over the block.  Per chunk: GEMM Z = X B^T (written in place into
one preallocated buffer), relu in place, GEMV f = Z a / m, indicator in place (Z > 0 as
0.0/1.0), GEMM G += Z^T (w r x).  Chunks are sized so one block holds ``chunk_elements``
float64 entries (default 2^21, 16 MiB: a few L2/L3-sized tiles, large enough for BLAS to
be efficient), so memory is bounded independently of n.  Kink convention: ReLU'(0) = 0.

Measured (benchmarks/results.json, shared 2-core machine): faster than ``twolayer`` at
m = 1024 and m = 4096 (0.53x and 0.66x its time) but slower at m = 1e4, n = 1e5 (1.33x):
the step is bound by the two GEMMs (2 x 30 flops per block entry), the saved passes are
second order, and the 2^21-entry chunk (209 rows at m = 1e4) makes the (m x c) @ (c x d)
GEMM inefficient.  Not a robust improvement: ``twolayer`` need not adopt it.
"""
from __future__ import annotations

import numpy as np

from numerics.validation import as_float_array, require_positive_int

__all__ = ["loss_and_grad", "loss_and_grad_dense_reference", "DEFAULT_CHUNK_ELEMENTS"]

#: entries of the one (chunk x m) float64 work buffer (16 MiB)
DEFAULT_CHUNK_ELEMENTS = 2 ** 21


def loss_and_grad(a, B, X, Y, *, weights=None, chunk_elements: int = DEFAULT_CHUNK_ELEMENTS
                  ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """``(L, (dL/da, dL/dB))`` for L = 1/2 sum_i w_i (f(x_i) - y_i)^2 (w_i = 1/n by
    default), chunked over samples with one preallocated (chunk x m) buffer."""
    a = as_float_array(a, "a (output weights)", ndim=1, allow_empty=False)
    B = as_float_array(B, "B (input weights, shape (m, d))", ndim=2, allow_empty=False)
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    Y = as_float_array(Y, "Y (targets, shape (n,))", ndim=1)
    m, d = B.shape
    n = X.shape[0]
    if a.shape[0] != m or X.shape[1] != d or Y.shape[0] != n:
        raise ValueError(f"shapes must be a (m,), B (m, d), X (n, d), Y (n,); got a{a.shape}, "
                         f"B{B.shape}, X{X.shape}, Y{Y.shape}")
    if weights is None:
        w = None
    else:
        w = as_float_array(weights, "weights (shape (n,))", ndim=1)
        if w.shape[0] != n or np.any(w < 0):
            raise ValueError("weights must be non-negative with one entry per sample row of X")
    chunk_elements = require_positive_int(chunk_elements, "chunk_elements")
    rows = int(max(1, min(n, chunk_elements // m)))
    Zbuf = np.empty((rows, m))
    RX = np.empty((rows, d))
    Bt = np.ascontiguousarray(B.T)
    a_m = a / m
    G = np.zeros((m, d))
    loss = 0.0
    for s in range(0, n, rows):
        e = min(n, s + rows)
        k = e - s
        Z = Zbuf[:k]
        np.dot(X[s:e], Bt, out=Z)                # pre-activations b_j . x_i
        np.maximum(Z, 0.0, out=Z)                # relu, in place
        r = Z @ a_m                              # f(x_i)
        r -= Y[s:e]                              # residual
        if w is None:
            loss += float(r @ r)
            r *= 1.0 / n
        else:
            loss += float(w[s:e] @ (r * r))
            r *= w[s:e]
        np.greater(Z, 0.0, out=Z)                # indicator 1{z > 0} (ReLU'(0) = 0)
        np.multiply(X[s:e], r[:, None], out=RX[:k])
        G += Z.T @ RX[:k]
    if w is None:
        loss /= n
    grad_a = np.einsum("jk,jk->j", B, G) / m
    grad_B = G * a_m[:, None]
    return 0.5 * loss, (grad_a, grad_B)


def loss_and_grad_dense_reference(a, B, X, Y, *, chunk_elements: int = 2 ** 22
                                  ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """The textbook NumPy step (benchmark/test reference, w_i = 1/n): per chunk of
    samples Z = X B^T, H = relu(Z), r = H a / m - y, dL/da = H^T r / (m n),
    dL/dB = ((1{Z > 0} * r) * a / m)^T X / n -- fresh temporaries, no buffer reuse.
    Chunking over samples (sums over samples split exactly) only bounds memory."""
    a = as_float_array(a, "a", ndim=1)
    B = as_float_array(B, "B", ndim=2)
    X = as_float_array(X, "X", ndim=2)
    Y = as_float_array(Y, "Y", ndim=1)
    m, n = a.shape[0], X.shape[0]
    rows = int(max(1, min(n, require_positive_int(chunk_elements, "chunk_elements") // m)))
    loss, ga, gB = 0.0, np.zeros(m), np.zeros(B.shape)
    for s in range(0, n, rows):
        Z = X[s:s + rows] @ B.T
        H = np.maximum(Z, 0.0)
        r = H @ a / m - Y[s:s + rows]
        loss += 0.5 * float(r @ r) / n
        ga += H.T @ r / (m * n)
        gB += ((Z > 0) * r[:, None] * (a / (m * n))[None, :]).T @ X[s:s + rows]
    return loss, (ga, gB)
