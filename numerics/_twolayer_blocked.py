"""The blocked float64 kernels of the d-dimensional step (:mod:`numerics.twolayer`,
claims H1a-H1e, H1h): the forward pass and the loss-and-gradient step over blocks of
samples (and, for wide networks, of neurons), their per-thread scratch buffers, and the
sharing of the blocks among threads with the one-thread bits
(:mod:`numerics._step_threads`).  No input checks: the callers in
:mod:`numerics.twolayer` validate once.
"""
from __future__ import annotations

import math
import threading
from typing import Callable

import numpy as np

from numerics._block_kernel import compiled_block, compiled_block_applies
from numerics._relu_pass import fused_relu, gradient_rows, relu_with_mask, residual_rows
from numerics._step_threads import blas_architectures, ordered_block_sum, run_blocks, serial_blas

__all__: list[str] = []

_WORKSPACE = threading.local()
#: block buffers up to this many entries are kept between calls (per thread)
_KEEP_ELEMENTS = 2 ** 20
#: for m > _COL_BLOCK the forward pass is also blocked over neurons, in column blocks of
#: this width: a (rows x m) float64 mask and its float64 copy would leave the core's
#: cache, so the mask is kept as booleans and expanded to float64 one column block at a
#: time for the gradient GEMM.  Column blocks of 256 neurons (a 256 KiB block at 128 rows)
#: took 0.84-0.92 of the time of whole rows at m = 300..1024 and of blocks of 512 at
#: m = 4096, 10^4 (d = 30; 0.56 at d = 3, 1.0 at d = 100; 1 and 2 threads; the compiled
#: blocks; benchmarks/README.md)
_COL_BLOCK = 256
#: least work of a step (n m d multiply-adds per GEMM, about 1 ms on one core) that is
#: split over threads: below it the helpers' start-up and hand-over cost more than they save
_MIN_PARALLEL_WORK = 2 ** 21


#: OpenBLAS kernel families whose gradient GEMM runs faster as (RX)^T M, d x m, than as
#: M^T (RX), m x d (benchmarks/README.md, "Layout of the gradient GEMM"); elsewhere
#: (Haswell, Zen kernels) M^T (RX) is the faster.  The two layouts may round differently.
_TRANSPOSED_GRADIENT_ARCHS = frozenset({"SkylakeX", "Cooperlake", "SapphireRapids"})


def _transposed_gradient() -> bool:
    """True if the gradient GEMM of :func:`_block_sums` runs as (RX)^T M (d x m): fixed
    by the BLAS kernels loaded, so the same bits on every call of a process."""
    return bool(blas_architectures() & _TRANSPOSED_GRADIENT_ARCHS)


def _threads_for(threads: int, n: int, m: int, d: int) -> int:
    return threads if n * m * d >= _MIN_PARALLEL_WORK else 1


def _buffer(name: str, shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """A scratch array reused across calls of the same thread (fresh pages cost a page
    fault each; GD calls the step thousands of times); large ones are fresh each call."""
    size = math.prod(shape)
    if size > _KEEP_ELEMENTS:
        return np.empty(shape, dtype=dtype)
    cache = getattr(_WORKSPACE, "buffers", None)
    if cache is None:
        cache = _WORKSPACE.buffers = {}
    buf = cache.get(name)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = cache[name] = np.empty(max(size, 1), dtype=dtype)
    return buf[:size].reshape(shape)


def _scratch(full: int, *specs: tuple) -> Callable[[int], list[np.ndarray]]:
    """``rows -> [the calling thread's buffer for each (name, shape[, dtype]) of specs]``
    (:func:`_buffer`, fetched once per thread and call), each sized for ``full`` rows; a
    block of fewer rows takes the leading rows / full of each buffer."""
    per_thread: dict[int, list[np.ndarray]] = {}

    def get(rows: int) -> list[np.ndarray]:
        tid = threading.get_ident()
        bufs = per_thread.get(tid)
        if bufs is None:
            bufs = per_thread[tid] = [_buffer(*spec) for spec in specs]
        if rows == full:
            return bufs
        return [b[: rows * b.shape[0] // full] for b in bufs]
    return get


def _forward_fast(a: np.ndarray, B: np.ndarray, X: np.ndarray, c: int) -> np.ndarray:
    """The blocked forward pass (GEMM, ReLU pass, GEMV per block of c rows) on the
    threads in force, every BLAS call on one thread (:func:`step_threads`)."""
    m, n = a.shape[0], X.shape[0]
    out = np.empty(n)
    c = min(c, n)
    BT = B.T
    scratch = _scratch(c, ("Z", (c, m)), ("M", (c, m)), ("mask", (c, m), np.bool_))

    def block(s: int, e: int) -> None:
        Z, M, mask = scratch(e - s)
        np.dot(X[s:e], BT, out=Z)
        relu_with_mask(Z, mask, M)
        np.dot(Z, a, out=out[s:e])
    with serial_blas() as threads:
        run_blocks(block, n, c, _threads_for(threads, n, m, B.shape[1]))
    out /= m
    return out


def _loss_and_grad_fast(a: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray,
                        w: np.ndarray, c: int, col_block: int | None = None, threads: int = 1
                        ) -> tuple[float, np.ndarray, np.ndarray, bool]:
    """The blocked float64 step on validated arrays (no checks: the hot loop of GD):
    ``(loss, dL/da, dL/dB, whether the loss and every gradient entry are finite)``.

    Per block of c samples: Z = X_s B^T (GEMM), M = 1{Z > 0}, Z <- M Z = relu(Z),
    m f_s = Z a (GEMV), weighted residuals r_s = w_s (f_s - y_s), then
    G += M^T (r_s x_s) (GEMM); no other pass over the block.  Afterwards
    dL/dB_j = (a_j / m) G_j and, by the positive homogeneity relu(z) = 1{z > 0} z,
    dL/da_j = (1/m) sum_i w_i r_i relu(b_j . x_i) = (1/m) G_j . b_j, an O(m d) row dot.
    For m > ``col_block`` (default _COL_BLOCK) the forward pass runs over column blocks
    of that many neurons (:func:`_block_sums_2d`).  ``threads``: the row blocks are shared
    among that many threads (the same bits; the caller holds :func:`serial_blas`)."""
    m, d = B.shape
    n = X.shape[0]
    c = min(c, n)
    if col_block is None:
        col_block = _COL_BLOCK
    f = np.empty(n)
    r = np.empty(n)
    w_m = w / m
    wy = w * Y
    if col_block >= m:
        G, bounds, transposed = _block_sums(a, B, X, w_m, wy, c, f, r, threads)
    else:
        G, bounds, transposed = _block_sums_2d(a, B, X, w_m, wy, c, col_block, f, r, threads)
    f /= m
    f -= Y                                   # residuals f - y
    loss = 0.5 * float(np.dot(w * f, f))
    ga, gB, finite = gradient_rows(G, bounds, transposed, B, a)
    return loss, ga, gB, finite and math.isfinite(loss)


def _block_sums(a, B, X, w_m, wy, c, f, r, threads: int = 1) -> np.ndarray:
    """G = sum_i 1{b_j . x_i > 0} w_i (f(x_i) - y_i) x_i (m x d, C-ordered), filling m f
    into ``f`` and the weighted residuals into ``r``; blocks of c samples, all m neurons
    at once, their partial sums added in block order (on ``threads`` threads: the same
    bits, :func:`numerics._step_threads.ordered_block_sum`).  Per block the passes beyond
    the two GEMMs: the ReLU and its 0.0 / 1.0 mask M
    (:func:`numerics._relu_pass.relu_with_mask`, M in a second float64 buffer: the
    gradient GEMM's operand), the GEMV and the residuals with their rows times x
    (:func:`numerics._relu_pass.residual_rows`).  The gradient GEMM is M^T (RX), or its
    transpose (RX)^T M accumulated as G^T where the BLAS kernels run that faster
    (:func:`_transposed_gradient`).  The block is one compiled call where
    :func:`numerics._block_kernel.compiled_block` applies (the same bits)."""
    m, d = B.shape
    transposed = _transposed_gradient()
    kernels = compiled_block()
    if kernels is not None and compiled_block_applies(X, B, c, a, w_m, wy):
        scratch = _scratch(c, ("Z", (c, m)), ("M", (c, m)), ("RX", (c, d)))

        def compiled(s: int, e: int, T: np.ndarray) -> None:
            kernels.full(X, B, a, w_m, wy, f, r, *scratch(e - s), T, s, e, transposed)
        return _gradient_sum(compiled, X.shape[0], c, m, d, [(0, m)], threads, transposed)
    scratch = _scratch(c, ("Z", (c, m)), ("M", (c, m)), ("RX", (c, d)),
                       ("mask", (c, m), np.bool_))

    def block(s: int, e: int, T: np.ndarray) -> None:
        _numpy_block(X, B, a, w_m, wy, f, r, *scratch(e - s), T, s, e, transposed)
    return _gradient_sum(block, X.shape[0], c, m, d, [(0, m)], threads, transposed)


def _numpy_block(X, B, a, w_m, wy, f, r, Z, M, RX, mask, T, s, e, transposed) -> None:
    """The rows [s, e) of :func:`_block_sums` as NumPy calls (and the compiled passes of
    :mod:`numerics._relu_pass`), into the scratch Z, M, RX, mask of e - s rows and the
    block's gradient product T; the reference of the compiled block's self-test
    (:mod:`numerics._block_kernel`), which makes the same BLAS calls."""
    Xs, fs = X[s:e], f[s:e]
    np.dot(Xs, B.T, out=Z)                  # pre-activations b_j . x_i
    relu_with_mask(Z, mask, M)
    np.dot(Z, a, out=fs)                    # m f(x_i)
    residual_rows(fs, w_m[s:e], wy[s:e], Xs, r[s:e], RX)   # w_i (f(x_i) - y_i), times x_i
    _gradient_gemm(M, RX, T, 0, B.shape[0], transposed)


def _block_sums_2d(a, B, X, w_m, wy, c, mb, f, r, threads: int = 1) -> np.ndarray:
    """:func:`_block_sums` with the forward pass also blocked over mb neurons
    (:func:`_numpy_column_block`); each row block is one compiled call where
    :func:`numerics._block_kernel.compiled_block` applies (the same bits)."""
    m, d = B.shape
    cols = [(j, min(m, j + mb)) for j in range(0, m, mb)]
    transposed = _transposed_gradient()
    kernels = compiled_block()
    if kernels is not None and compiled_block_applies(X, B, c, a, w_m, wy, mb=mb):
        scratch = _scratch(c, ("Zb", (c * mb,)), ("part", (c,)), ("bits", (c, m), np.uint8),
                           ("RX", (c, d)))

        def compiled(s: int, e: int, T: np.ndarray) -> None:
            Zbuf, part, bits, RX = scratch(e - s)
            kernels.columns(X, B, a, w_m, wy, f, r, Zbuf, part, bits, RX, T, s, e, mb,
                            transposed)
        return _gradient_sum(compiled, X.shape[0], c, m, d, cols, threads, transposed)
    scratch = _scratch(c, ("Zb", (c * mb,)), ("part", (c,)), ("mask", (c, m), np.bool_),
                       ("RX", (c, d)))

    def block(s: int, e: int, T: np.ndarray) -> None:
        _numpy_column_block(X, B, a, w_m, wy, f, r, *scratch(e - s), T, s, e, mb, transposed)
    return _gradient_sum(block, X.shape[0], c, m, d, cols, threads, transposed)


def _numpy_column_block(X, B, a, w_m, wy, f, r, Zbuf, part, mask, RX, T, s, e, mb,
                        transposed) -> None:
    """The rows [s, e) of :func:`_block_sums_2d` as NumPy calls (and the compiled passes of
    :mod:`numerics._relu_pass`): per (k x mb) block of rows and neurons one GEMM into
    Zbuf, the mask as booleans into ``mask`` (k x m, 1 byte per entry), the ReLU as the
    product with its uint8 view and a GEMV into ``part`` added to m f; then per column
    block the mask's 0.0 / 1.0 copy and the gradient GEMM into its rows of T (or,
    :func:`_transposed_gradient`, its (d x mb) transpose into the column block's d mb
    entries of a flat T, rearranged to (m, d) at the end).  Every pass over a block stays
    in the core's cache.  (The float64 mask of :func:`numerics._relu_pass.relu_with_mask`
    would be made twice per column block here, and its second buffer measured 2-8% slower
    at m = 4096 and 10000.)  The reference of the compiled column block's self-test
    (:mod:`numerics._block_kernel`), which makes the same BLAS calls."""
    m = B.shape[0]
    k = e - s
    Xs, fs = X[s:e], f[s:e]
    bits = mask.view(np.uint8)
    fused = fused_relu()
    fs[:] = 0.0
    for j0 in range(0, m, mb):
        j1 = min(m, j0 + mb)
        Z = Zbuf[: k * (j1 - j0)].reshape(k, j1 - j0)
        np.dot(Xs, B[j0:j1].T, out=Z)
        if fused is not None:                # the same bits in one compiled pass
            fused(Z, bits[:, j0:j1])
        else:
            np.greater(Z, 0.0, out=mask[:, j0:j1])
            np.multiply(Z, bits[:, j0:j1], out=Z)
        np.dot(Z, a[j0:j1], out=part)
        fs += part
    residual_rows(fs, w_m[s:e], wy[s:e], Xs, r[s:e], RX)
    for j0 in range(0, m, mb):
        j1 = min(m, j0 + mb)
        M = Zbuf[: k * (j1 - j0)].reshape(k, j1 - j0)
        np.copyto(M, bits[:, j0:j1])
        _gradient_gemm(M, RX, T, j0, j1, transposed)


def _gradient_gemm(M: np.ndarray, RX: np.ndarray, T: np.ndarray, j0: int, j1: int,
                   transposed: bool) -> None:
    """Neurons j0..j1 of a block's gradient product M^T (RX) into the accumulator T: its
    flat entries d j0 .. d j1: rows j0..j1 of (m, d), or (``transposed``,
    :func:`_transposed_gradient`) the (d x (j1 - j0)) transpose (RX)^T M."""
    d = RX.shape[1]
    if transposed:
        np.dot(RX.T, M, out=T[d * j0:d * j1].reshape(d, j1 - j0))
    else:
        np.dot(M.T, RX, out=T[d * j0:d * j1].reshape(j1 - j0, d))


def _gradient_sum(block: Callable[[int, int, np.ndarray], None], n: int, c: int, m: int,
                  d: int, cols: list[tuple[int, int]], threads: int, transposed: bool
                  ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The blocks' gradient products (written by :func:`_gradient_gemm` for the neuron
    ranges ``cols``) summed in block order (:func:`numerics._step_threads.ordered_block_sum`):
    ``(G flat, the ranges' bounds, transposed)``, as :func:`numerics._relu_pass.gradient_rows`
    reads them."""
    G = ordered_block_sum(block, n, c, (m * d,), _threads_for(threads, n, m, d),
                          lambda w: _buffer("T", (w, m * d)))
    bounds = np.array([j0 for j0, _ in cols] + [cols[-1][1]], dtype=np.int64)
    return G, bounds, transposed
