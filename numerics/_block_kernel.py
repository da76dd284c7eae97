"""One row block of the d-dimensional step (:mod:`numerics.twolayer`, claims H1a-H1e,
H1h) as ONE compiled call: the pre-activation GEMM, the ReLU-and-mask pass, the GEMV, the
residual pass and the gradient GEMM of ``numerics._twolayer_blocked._block_sums`` (all
neurons at once), or the same per column block of neurons of
``numerics._twolayer_blocked._block_sums_2d`` (wide networks), with NumPy's own CBLAS
called from numba with the arguments ``np.dot`` passes it.  The same bits as the block of
NumPy calls, which stays the path without numba, without a CBLAS that is NumPy's own, or
for shapes where ``np.dot`` would not call GEMM / GEMV (:func:`compiled_block_applies`).

Why: the block of NumPy calls spends about 19 us per block at paper scale
(30, 1024, 1000) on Python between its five calls (slices, dispatch, one release and
re-acquisition of the GIL per call), 4-5% of the step; the compiled block releases the GIL
once (benchmarks/README.md, "The block as one compiled call").  A column-blocked row
block makes about 80 such calls (at m = 10^4, columns of 256).

Which library: NumPy's CBLAS is found among the BLAS libraries that threadpoolctl reports
loaded (an OpenBLAS inside NumPy's own installation, or the only BLAS loaded), by its
ILP64 symbols (``scipy_cblas_dgemm64_`` of NumPy's wheels, or ``cblas_dgemm64_``: their
integer width is in the name; an unsuffixed ``cblas_dgemm`` may take 32- or 64-bit
integers, and a wrong guess could crash, so it is not used).  Before first use
a self-test compares the compiled block's bits with the NumPy block's on shapes of both
layouts of the gradient GEMM; any difference, a missing symbol or no numba: the NumPy
block runs (:func:`compiled_block` is None).
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable, NamedTuple

import numpy as np

from numerics._relu_pass import _kernels

__all__ = ["BlockKernels", "compiled_block", "compiled_block_applies"]

_BLOCK: list = []                # [the compiled BlockKernels, or None], once decided
_BLOCK_LOCK = threading.Lock()
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112          # the CBLAS enums


class BlockKernels(NamedTuple):
    """The compiled row blocks: ``full(X, B, a, w_m, wy, f, r, Z, M, RX, T, s, e,
    transposed)`` (all neurons at once) and ``columns(X, B, a, w_m, wy, f, r, Zbuf, part,
    bits, RX, T, s, e, mb, transposed)`` (column blocks of mb neurons)."""
    full: Callable
    columns: Callable


def _numpy_cblas() -> tuple | None:
    """``(dgemm, dgemv)``: NumPy's CBLAS as ctypes functions, or None if not found."""
    try:
        from threadpoolctl import ThreadpoolController
        libs = [lc for lc in ThreadpoolController().select(user_api="blas").lib_controllers]
    except Exception:                # noqa: BLE001  (no threadpoolctl / no BLAS: NumPy calls)
        return None
    pkg = os.path.dirname(os.path.abspath(np.__file__))      # .../numpy, its wheel's libs
    own = [lc for lc in libs if os.path.abspath(lc.filepath).startswith(
        (pkg + os.sep, pkg + ".libs" + os.sep))]
    candidates = own or (libs if len(libs) == 1 else [])
    names = [("scipy_cblas_dgemm64_", "scipy_cblas_dgemv64_"), ("cblas_dgemm64_", "cblas_dgemv64_")]
    enum, index, dbl, ptr = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
    for lc in candidates:
        if getattr(lc, "internal_api", "") != "openblas":
            continue
        try:
            lib = ctypes.CDLL(lc.filepath)
        except OSError:
            continue
        for gemm_name, gemv_name in names:
            gemm, gemv = getattr(lib, gemm_name, None), getattr(lib, gemv_name, None)
            if gemm is None or gemv is None:
                continue
            gemm.argtypes = [enum, enum, enum, index, index, index, dbl, ptr, index, ptr,
                             index, dbl, ptr, index]
            gemm.restype = None
            gemv.argtypes = [enum, enum, index, index, dbl, ptr, index, ptr, index, dbl, ptr,
                             index]
            gemv.restype = None
            return gemm, gemv
    return None


def _compile_block(numba, kernels, gemm, gemv):
    """The block kernel: ``block(X, B, a, w_m, wy, f, r, Z, M, RX, T, s, e, transposed)``
    for the rows [s, e) (k = e - s rows of the scratch Z, M, RX), each BLAS call with the
    arguments of the ``np.dot`` it replaces in ``numerics._twolayer_blocked._block_sums``."""
    relu_and_mask, residual = kernels[0], kernels[1]
    rm, nt, tr = _ROW_MAJOR, _NO_TRANS, _TRANS

    @numba.njit("void(float64[:, ::1], float64[:, ::1], float64[::1], float64[::1], "
                "float64[::1], float64[::1], float64[::1], float64[:, ::1], float64[:, ::1], "
                "float64[:, ::1], float64[::1], int64, int64, boolean)", nogil=True, cache=False)
    def block(X, B, a, w_m, wy, f, r, Z, M, RX, T, s, e, transposed):
        m, d = B.shape
        k = e - s
        Xs, fs = X[s:e], f[s:e]
        # np.dot(Xs, B.T, out=Z): B.T is B's transposed (Fortran) view
        gemm(rm, nt, tr, k, m, d, 1.0, Xs.ctypes, d, B.ctypes, d, 0.0, Z.ctypes, m)
        relu_and_mask(Z, M)
        # np.dot(Z, a, out=fs)
        gemv(rm, nt, k, m, 1.0, Z.ctypes, m, a.ctypes, 1, 0.0, fs.ctypes, 1)
        residual(fs, w_m[s:e], wy[s:e], Xs, r[s:e], RX)
        if transposed:       # np.dot(RX.T, M, out=T as (d, m))
            gemm(rm, tr, nt, d, m, k, 1.0, RX.ctypes, d, M.ctypes, m, 0.0, T.ctypes, m)
        else:                # np.dot(M.T, RX, out=T as (m, d))
            gemm(rm, tr, nt, m, d, k, 1.0, M.ctypes, m, RX.ctypes, d, 0.0, T.ctypes, d)
    return block


def _compile_column_block(numba, kernels, gemm, gemv):
    """The column-blocked block kernel: ``columns(X, B, a, w_m, wy, f, r, Zbuf, part, bits,
    RX, T, s, e, mb, transposed)`` for the rows [s, e) (k = e - s rows of the scratch:
    Zbuf flat, at least k mb entries; part (k,); bits the uint8 mask (k, m); RX (k, d)),
    each BLAS call and pass that of ``numerics._twolayer_blocked._numpy_column_block``."""
    relu_and_mask, residual = kernels[0], kernels[1]
    rm, nt, tr = _ROW_MAJOR, _NO_TRANS, _TRANS

    @numba.njit("void(float64[:, ::1], float64[:, ::1], float64[::1], float64[::1], "
                "float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], "
                "uint8[:, ::1], float64[:, ::1], float64[::1], int64, int64, int64, boolean)",
                nogil=True, cache=False)
    def columns(X, B, a, w_m, wy, f, r, Zbuf, part, bits, RX, T, s, e, mb, transposed):
        m, d = B.shape
        k = e - s
        Xs, fs = X[s:e], f[s:e]
        for i in range(k):
            fs[i] = 0.0
        for j0 in range(0, m, mb):
            w = min(m, j0 + mb) - j0
            Z = Zbuf[:k * w].reshape((k, w))
            # np.dot(Xs, B[j0:j1].T, out=Z)
            gemm(rm, nt, tr, k, w, d, 1.0, Xs.ctypes, d, B[j0:].ctypes, d, 0.0, Z.ctypes, w)
            relu_and_mask(Z, bits[:, j0:j0 + w])
            # np.dot(Z, a[j0:j1], out=part); fs += part
            gemv(rm, nt, k, w, 1.0, Z.ctypes, w, a[j0:].ctypes, 1, 0.0, part.ctypes, 1)
            for i in range(k):
                fs[i] += part[i]
        residual(fs, w_m[s:e], wy[s:e], Xs, r[s:e], RX)
        for j0 in range(0, m, mb):
            w = min(m, j0 + mb) - j0
            M = Zbuf[:k * w].reshape((k, w))
            for i in range(k):                  # np.copyto(M, bits[:, j0:j1]): exact
                row = bits[i, j0:j0 + w]
                for j in range(w):
                    M[i, j] = row[j]
            if transposed:   # np.dot(RX.T, M, out=T[d j0:d j1] as (d, w))
                gemm(rm, tr, nt, d, w, k, 1.0, RX.ctypes, d, M.ctypes, w, 0.0,
                     T[d * j0:].ctypes, w)
            else:            # np.dot(M.T, RX, out=T[d j0:d j1] as (w, d))
                gemm(rm, tr, nt, w, d, k, 1.0, M.ctypes, w, RX.ctypes, d, 0.0,
                     T[d * j0:].ctypes, d)
    return columns


def _same_bits(block) -> bool:
    """The compiled block against the NumPy block
    (``numerics._twolayer_blocked._numpy_block``) on a few shapes, both layouts."""
    from numerics._twolayer_blocked import _numpy_block

    def run(numpy, X, B, a, w_m, wy, shape, transposed):
        n, m, d, s, e = shape
        k = e - s
        f, r, Z, M, RX, T = (np.full(n, 7.0), np.full(n, 7.0), np.empty((k, m)),
                             np.empty((k, m)), np.empty((k, d)), np.empty(m * d))
        if numpy:
            _numpy_block(X, B, a, w_m, wy, f, r, Z, M, RX, np.empty((k, m), bool), T, s, e,
                         transposed)
        else:
            block(X, B, a, w_m, wy, f, r, Z, M, RX, T, s, e, transposed)
        return f, r, Z, M, RX, T
    return _matches_numpy(run, ((9, 7, 3, 2, 9), (40, 33, 30, 0, 37), (130, 64, 2, 1, 129)),
                          20261205)


def _same_column_bits(columns) -> bool:
    """The compiled column-blocked block against the NumPy one
    (``numerics._twolayer_blocked._numpy_column_block``) on a few shapes (a narrower last
    column block among them), both layouts."""
    from numerics._twolayer_blocked import _numpy_column_block

    def run(numpy, X, B, a, w_m, wy, shape, transposed):
        n, m, d, s, e, mb = shape
        k = e - s
        f, r, Zbuf, part, mask, RX, T = (
            np.full(n, 7.0), np.full(n, 7.0), np.full(k * mb, 7.0), np.full(k, 7.0),
            np.zeros((k, m), bool), np.empty((k, d)), np.empty(m * d))
        if numpy:
            _numpy_column_block(X, B, a, w_m, wy, f, r, Zbuf, part, mask, RX, T, s, e, mb,
                                transposed)
        else:
            columns(X, B, a, w_m, wy, f, r, Zbuf, part, mask.view(np.uint8), RX, T, s, e, mb,
                    transposed)
        return f, r, Zbuf, part, mask.view(np.uint8), RX, T
    return _matches_numpy(run, ((9, 8, 3, 2, 9, 3), (40, 70, 30, 0, 37, 32),
                                (130, 64, 2, 1, 129, 16)), 20261206)


def _matches_numpy(run, shapes, seed: int) -> bool:
    """True if ``run(numpy, X, B, a, w_m, wy, shape, transposed)`` returns the same words
    compiled (numpy False) as NumPy (True) for random operands of each shape (n, m, d, ...)
    in both layouts."""
    rng = np.random.default_rng(seed)
    for shape in shapes:
        n, m, d = shape[:3]
        operands = (rng.standard_normal((n, d)), rng.standard_normal((m, d)),
                    rng.standard_normal(m), rng.random(n) / m, rng.standard_normal(n))
        for transposed in (False, True):
            if not _same_words(run(False, *operands, shape, transposed),
                               run(True, *operands, shape, transposed)):
                return False
    return True


def _same_words(got: tuple, ref: tuple) -> bool:
    return all(np.array_equal(u.view(np.uint8), v.view(np.uint8)) for u, v in zip(got, ref))


def _decide():
    try:
        import numba
    except ImportError:
        return None
    kernels, cblas = _kernels(), _numpy_cblas()
    if kernels is None or cblas is None:
        return None
    try:
        block = _compile_block(numba, kernels, *cblas)
        columns = _compile_column_block(numba, kernels, *cblas)
        if _same_bits(block) and _same_column_bits(columns):
            return BlockKernels(block, columns)
        return None
    except Exception as exc:        # noqa: BLE001  (a broken numba/LLVM: the NumPy block)
        import warnings
        warnings.warn(f"numerics._block_kernel: the compiled block could not be built "
                      f"({type(exc).__name__}: {exc}); using NumPy calls (the same bits, "
                      "about 5% slower at paper scale)", RuntimeWarning, stacklevel=3)
        return None


def compiled_block() -> BlockKernels | None:
    """The compiled block kernels (see the module's docstring), or None; None also while
    the compiled ReLU pass is off (``numerics._relu_pass._kernels()`` is None)."""
    if _kernels() is None:
        return None
    if not _BLOCK:
        with _BLOCK_LOCK:
            if not _BLOCK:
                _BLOCK.append(_decide())
    return _BLOCK[0]


def compiled_block_applies(X: np.ndarray, B: np.ndarray, c: int, *vectors: np.ndarray,
                           mb: int | None = None) -> bool:
    """True if the compiled block takes these operands (C-ordered float64 X, B and
    ``vectors``) and every block of c rows (and, given ``mb``, of mb neurons) calls the
    BLAS functions that ``np.dot`` calls for it: at least 2 rows per block, 2 neurons per
    column block and d, m >= 2 (``np.dot`` treats a 2-D operand with a dimension 1 as a
    vector), X and B not sharing memory (``X_s @ B.T`` of one array is computed as a
    symmetric rank-k update)."""
    n = X.shape[0]
    m, d = B.shape
    columns_ok = mb is None or (mb >= 2 and m % mb != 1)
    return (m >= 2 and d >= 2 and c >= 2 and n >= 2 and n % c != 1 and columns_ok
            and all(v.dtype == np.float64 and v.flags.c_contiguous for v in (X, B) + vectors)
            and not np.may_share_memory(X, B))
