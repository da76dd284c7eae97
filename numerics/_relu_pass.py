"""The elementwise passes of the blocked d-dimensional step (:mod:`numerics.twolayer`,
claims H1a-H1e, H1h): Z <- relu(Z) and M <- 1{Z > 0} over one block of pre-activations
(:func:`relu_with_mask`), the block's weighted residuals with their rows times x
(:func:`residual_rows`), the gradient's rows after the blocks (:func:`gradient_rows`) and
the scan of the inputs' exponents before them (:func:`exponent_range`), each as ONE
compiled pass when numba is installed and as NumPy passes otherwise, with the same bits
(:func:`relu_pass_backend` names the one that runs).
"""
from __future__ import annotations

import threading

import numpy as np

__all__ = ["exponent_range", "fused_relu", "gradient_rows", "relu_pass_backend",
           "relu_with_mask", "residual_rows"]

_FUSED: list = []                 # [the compiled kernels, or None], once decided
_FUSED_LOCK = threading.Lock()


def _compile_fused_relu():
    """The compiled kernels of the step (numba, an optional dependency:
    ``pip install '.[fast]'``), or None without numba: ``(relu_and_mask, residual,
    untranspose, exponents)``.
    ``relu_and_mask``: the ReLU and its mask in ONE pass, the mask as 0.0 / 1.0 into a
    float64 block (:func:`relu_with_mask`) or as 0 / 1 into a strided uint8 block (the
    column-blocked step, ``numerics._twolayer_blocked._block_sums_2d``).  ``residual``:
    the weighted residuals and their rows times x (:func:`residual_rows`).
    ``untranspose``: the transposed gradient product back in rows, and ``scale_rows``: its
    rows times a_j / m with the finiteness of the result (:func:`gradient_rows`).
    ``exponents``: the scan of an input (:func:`exponent_range`).  Elementwise
    the same operations as the NumPy passes (z > 0, then z * 1.0 or z * 0.0; f w - wy,
    then x r; no reassociation, no fused multiply-add): the same bits, -0.0, inf and nan
    included (except the sign of a product of two NaNs).  Compiled eagerly for C-contiguous float64 blocks, not cached on disk
    (nothing is written next to the package; about 0.3 s once per process)."""
    try:
        import numba
    except ImportError:
        return None
    try:
        return _compile_kernels(numba)
    except Exception as exc:            # a broken numba/LLVM install: the NumPy passes
        import warnings
        warnings.warn(f"numerics._relu_pass: numba is installed but could not compile the fused "
                      f"ReLU pass ({type(exc).__name__}: {exc}); using the NumPy passes (same "
                      "results, 5-10% slower at paper scale)", RuntimeWarning, stacklevel=3)
        return None


def _compile_kernels(numba) -> tuple:
    # one kernel, two mask types: 0.0 / 1.0 into a float64 block, 0 / 1 into a
    # strided uint8 block (the column-blocked step's booleans)
    @numba.njit(["void(float64[:, ::1], float64[:, ::1])", "void(float64[:, ::1], uint8[:, :])"],
                nogil=True, cache=False)
    def relu_and_mask(Z, M):
        rows, cols = Z.shape
        for i in range(rows):
            for j in range(cols):
                z = Z[i, j]
                k = 1.0 if z > 0.0 else 0.0
                M[i, j] = k
                Z[i, j] = z * k

    @numba.njit(["void(float64[::1], float64[::1], float64[::1], float64[:, ::1], "
                 "float64[::1], float64[:, ::1])",
                 "void(float64[::1], float64[::1], float64[::1], float64[:, :], "
                 "float64[::1], float64[:, ::1])"], nogil=True, cache=False)
    def residual(fs, w_m, wy, Xs, rs, RX):
        rows, cols = Xs.shape
        for i in range(rows):
            q = fs[i] * w_m[i]
            q = q - wy[i]
            rs[i] = q
            for j in range(cols):
                RX[i, j] = Xs[i, j] * q

    # the (d x width) transpose of each neuron range [bounds[q], bounds[q + 1]) of the
    # flat G back into rows of out (m, d), 16 neurons at a time (a fixed-length inner
    # copy, which the compiler unrolls; the tile's lines of out stay in L1): a copy, so
    # the bits are G's
    @numba.njit("void(float64[::1], int64[::1], float64[:, ::1])", nogil=True, cache=False)
    def untranspose(G, bounds, out):
        d = out.shape[1]
        for q in range(bounds.size - 1):
            j0, j1 = bounds[q], bounds[q + 1]
            width = j1 - j0
            t0 = j0
            while t0 + 16 <= j1:
                for k in range(d):
                    src = G[d * j0 + k * width + t0 - j0:][:16]
                    for i in range(16):
                        out[t0 + i, k] = src[i]
                t0 += 16
            for k in range(d):
                base = d * j0 + k * width - j0      # G[base + j]: entry (j, k)
                for j in range(t0, j1):
                    out[j, k] = G[base + j]

    # gB_j <- gB_j (a_j / m) (each quotient and product rounded once, as NumPy's
    # gB * (a / m)[:, None]), then whether every entry of gB and ga is finite: an
    # integer scan of the exponent fields, which vectorises
    @numba.njit("boolean(float64[:, ::1], float64[::1], float64, float64[::1])", nogil=True,
                cache=False)
    def scale_rows(gB, a, m, ga):
        rows, d = gB.shape
        for j in range(rows):
            q = a[j] / m
            for k in range(d):
                gB[j, k] = gB[j, k] * q
        top = np.uint64(0x7FF0000000000000)
        bad = np.uint64(0)
        for u in (gB.reshape(-1).view(np.uint64), ga.view(np.uint64)):
            for i in range(u.size):
                bad |= np.uint64(1) if (u[i] & top) == top else np.uint64(0)
        return bad == 0

    # the largest biased exponent and the smallest one of a non-zero entry (2047 if
    # none), over the words of a float64 array: integer reductions, which vectorise
    @numba.njit("UniTuple(int64, 2)(uint64[::1])", nogil=True, cache=False)
    def exponents(u):
        hi, lo = np.int64(0), np.int64(2047)
        for i in range(u.size):
            v = u[i] & np.uint64(0x7FFFFFFFFFFFFFFF)
            e = np.int64(v >> np.uint64(52))
            hi = max(hi, e)
            lo = min(lo, e if v != 0 else np.int64(2047))
        return hi, lo

    return relu_and_mask, residual, untranspose, exponents, scale_rows


def _kernels():
    """The compiled kernels, or None (see :func:`_compile_fused_relu`)."""
    if not _FUSED:
        with _FUSED_LOCK:
            if not _FUSED:
                _FUSED.append(_compile_fused_relu())
    return _FUSED[0]


def fused_relu():
    """The compiled ReLU-and-mask pass, or None (see :func:`_compile_fused_relu`)."""
    kernels = _kernels()
    return None if kernels is None else kernels[0]


def relu_pass_backend() -> str:
    """Which implementation runs the ReLU-and-mask pass of ``numerics.twolayer.loss_and_grad``
    and ``forward``: ``"numba <version>"`` (one fused pass, when numba is installed) or
    ``"numpy"`` (three passes), with ``"; row blocks: one compiled call"`` appended where
    each row block of the step (all neurons at once, or in column blocks above 256
    neurons) is one compiled call into NumPy's own CBLAS (``numerics._block_kernel``).
    All give the same bits; the fused pass saves 5-10% of a step at paper scale, the
    compiled block 4-6% more, 8-14% at 4096-10^4 neurons (benchmarks/README.md).
    Compiles the kernels if needed.

    >>> relu_pass_backend() in ("numpy",) or relu_pass_backend().startswith("numba ")
    True
    """
    if fused_relu() is None:
        return "numpy"
    import numba

    from numerics._block_kernel import compiled_block
    block = "" if compiled_block() is None else "; row blocks: one compiled call"
    return f"numba {numba.__version__}{block}"


def relu_with_mask(Z: np.ndarray, mask: np.ndarray, M: np.ndarray) -> None:
    """Z <- relu(Z) and M <- 1{Z > 0} as exact 0.0 / 1.0 (``mask``: a boolean scratch of
    Z's shape, used by the NumPy passes).  The ReLU is the product Z M, exactly z * 1.0 or
    z * 0.0: an overflowed pre-activation stays visible (inf * 1 = inf, -inf * 0 = nan)
    and sends the caller to the rescaled path, where np.maximum(-inf, 0) = 0 would hide
    it.  With numba one fused pass (:func:`_compile_fused_relu`); else three NumPy passes,
    each about as fast as a copy (the product with the booleans' uint8 view costs about
    twice a float64 product, NumPy casting element by element, and np.maximum with the
    scalar 0 three times)."""
    fused = fused_relu()
    if fused is not None and Z.flags.c_contiguous and M.flags.c_contiguous:
        fused(Z, M)
        return
    np.greater(Z, 0.0, out=mask)
    np.copyto(M, mask.view(np.uint8))
    np.multiply(Z, M, out=Z)


def residual_rows(fs: np.ndarray, w_m: np.ndarray, wy: np.ndarray, Xs: np.ndarray,
                  rs: np.ndarray, RX: np.ndarray) -> None:
    """rs <- fs w_m - wy (the weighted residuals w_i (f(x_i) - y_i) of a block, from
    m f(x_i), w_i / m and w_i y_i) and RX <- Xs * rs[:, None], each product and difference
    rounded once as in the NumPy passes (one compiled pass with numba, three passes
    otherwise: the same bits; of a product of two NaNs either one's sign, and any NaN
    sends the step to its rescaled path)."""
    kernels = _kernels()
    if kernels is not None and fs.flags.c_contiguous and w_m.flags.c_contiguous \
            and wy.flags.c_contiguous and rs.flags.c_contiguous and RX.flags.c_contiguous:
        kernels[1](fs, w_m, wy, Xs, rs, RX)
        return
    np.multiply(fs, w_m, out=rs)
    np.subtract(rs, wy, out=rs)
    np.multiply(Xs, rs[:, None], out=RX)


def gradient_rows(G: np.ndarray, bounds: np.ndarray, transposed: bool, B: np.ndarray,
                  a: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(dL/da, dL/dB, whether every entry of both is finite)`` from the summed gradient
    product G_j = sum_i 1{b_j . x_i > 0} w_i (f(x_i) - y_i) x_i: dL/dB_j = (a_j / m) G_j
    and, by the positive homogeneity of the ReLU, dL/da_j = (1/m) G_j . b_j.  ``G`` is
    flat: (m, d) C-ordered, or (``transposed``) for each neuron range
    [bounds[q], bounds[q + 1]) the (d x width) transpose of its rows
    (``numerics._twolayer_blocked._gradient_gemm``), put back in rows by one compiled copy
    with numba (a NumPy transposing copy otherwise); the scaling and the finiteness scan
    are one compiled pass with numba: the same bits either way."""
    m, d = B.shape
    kernels = _kernels()
    if transposed:
        Gm = np.empty((m, d))
        if kernels is not None:
            kernels[2](G, bounds, Gm)
        else:
            for j0, j1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                Gm[j0:j1] = G[d * j0:d * j1].reshape(d, j1 - j0).T
    else:
        Gm = G.reshape(m, d)
    ga = np.einsum("ij,ij->i", Gm, B)
    ga /= m
    if kernels is not None and Gm.flags.c_contiguous:
        finite = kernels[4](Gm, a, float(m), ga)
    else:
        Gm *= (a / m)[:, None]
        finite = _all_finite(ga, Gm)
    return ga, Gm, bool(finite)


def _all_finite(*arrays: np.ndarray) -> bool:
    """True if every entry is finite.  A NaN or infinite term makes a float sum
    non-finite, so a finite sum settles it in one pass without a temporary; only a sum
    that overflows from finite terms needs the entrywise test."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = sum(float(np.sum(x)) for x in arrays)
    if np.isfinite(total):
        return True
    return all(bool(np.all(np.isfinite(x))) for x in arrays)


def exponent_range(x: np.ndarray) -> tuple[int, int] | None:
    """``(the largest biased exponent of x's entries, the smallest of a non-zero one)``
    (2047 = inf or NaN; a second value 2047 if every entry is 0) in one compiled pass
    over the float64 words, or None without numba or for a non-contiguous x (then the
    caller's NumPy checks decide)."""
    kernels = _kernels()
    if kernels is None or x.dtype != np.float64 or not x.flags.c_contiguous:
        return None
    hi, lo = kernels[3](x.reshape(-1).view(np.uint64))
    return int(hi), int(lo)
