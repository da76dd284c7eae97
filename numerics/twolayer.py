"""The bias-free two-layer ReLU network with mean-field scaling (Hajjar & Chizat 2023,
docs/conventions.md, section 2; claims H1a-H1e, H1h):

    f(x) = (1/m) sum_j a_j relu(b_j . x),   a in R^m, B = (b_j) in R^{m x d}.

Loss on a weighted sample (x_i, y_i, w_i) (weights default 1/n, i.e. the empirical mean):

    L(a, B) = 1/2 sum_i w_i (f(x_i) - y_i)^2.

:func:`loss_and_grad` returns the exact gradient of L (with the 1/m of the model); the
mean-field particle velocity is ``-m * grad`` (docs/conventions.md, section 2), so gradient descent with
learning rate ``m * eta`` is the forward-Euler scheme of the mean-field flow with time
step ``eta``.  The step is fused and blocked over samples: per block of rows one GEMM for
the pre-activations, the ReLU and its mask (one compiled pass with the optional numba,
three NumPy passes without: the same bits, :func:`relu_pass_backend`), one GEMV for the
outputs and one GEMM for the gradient (with numba each block is one compiled call into
NumPy's own BLAS, the same bits again); the blocks stay in cache and their buffers are reused
across calls (no n x m array is ever formed).  The blocks are shared among the BLAS
thread count in force, each GEMM on one BLAS thread, and their partial gradients added in
block order: the same bits at every thread count (:func:`step_threads`).

Population expectations for Gaussian data rho = N(0, s2 I_d) (the arc-cosine kernel of
degree 1: :func:`gaussian_relu_kernel`, :func:`population_loss_and_grad_norm_target`) live
in :mod:`numerics.gaussian_relu` and are re-exported here.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from scipy.integrate import DOP853, LSODA, RK23, RK45, BDF, Radau

from numerics.dynamics import (SAMPLED_SWITCHES_PER_CROSSING, ChatteringGuard, FlowResult,
                               GDResult)
from numerics._relu_pass import exponent_range, relu_pass_backend
from numerics._step_threads import serial_blas, threads_in_force
from numerics._twolayer_blocked import _forward_fast, _loss_and_grad_fast
from numerics.gaussian_relu import (_particles as _validate_params, gaussian_relu_kernel,
                                    gaussian_relu_kernel_grad,
                                    population_loss_and_grad_norm_target)
from numerics.validation import (MAX_ELEMENTS, POW2_ZERO_EXPONENT, ArgumentTypeError,
                                 DivergenceError, IntegratorError, RunProgress, as_float_array,
                                 as_float_scalar, flow_budget, ldexp_clipped, merge_pow2,
                                 require_choice, require_finite_result, require_positive_int,
                                 require_size, require_time_grid, require_tolerance,
                                 require_work, row_pow2_scale, sum_pow2, wants_long_run)

__all__ = ["forward", "loss_and_grad", "gradient_descent", "gradient_flow", "GDResult",
           "FlowResult", "DivergenceError", "balance_gap", "cyclic_group", "orbit_particles",
           "relu_pass_backend", "step_threads",
           "orbit_samples", "gaussian_relu_kernel", "gaussian_relu_kernel_grad",
           "population_loss_and_grad_norm_target", "loss_and_grad_dense_reference"]

#: max entries of one (rows x m) block buffer, also for a given ``chunk`` (memory bound:
#: the pre-activations and the float64 mask, 2 x 256 MiB, and the boolean mask)
_MAX_BLOCK_ELEMENTS = 2 ** 25
#: target entries of one (rows x m) block: the pre-activations and their mask (2 x 1 MiB)
#: stay in the cache of one core between the passes over them
_BLOCK_ELEMENTS = 2 ** 17
#: fewest rows of a block (when m allows): the inner dimension of the gradient GEMM, which
#: is accumulated once per block
_MIN_BLOCK_ROWS = 128
#: largest total work of one gradient_descent call, in multiply-adds (~1 h of one core):
#: beyond it the call is refused at once
_MAX_GD_WORK = 2 ** 46
#: cost of a GD step / flow field evaluation on n samples in numerics.validation.require_work's
#: units (~1 ns of one core): n m (2 + d / 5) + overhead (:func:`_sample_pass_cost`).
#: Measured per (sample, neuron) pair, one thread, a GD step (2026-12-05): 1.2-1.8 ns at
#: d = 1-2, 2.3 at d = 10, 4.9 at d = 30, 13.6 at d = 100, 87 at d = 500; 0.12 ms per
#: step at (d, m, n) = (3, 10, 10).  The model is above every one, by at most 1.7x
_STEP_OVERHEAD = 130_000
#: cost of one call of a user's grad_fn per neuron coordinate (its cost is unknown)
_GRAD_FN_PER_ENTRY = 20
#: overhead of one gradient_flow field evaluation (solver, activations, guard): 111-198 us
_FLOW_EVAL_OVERHEAD = 160_000
#: the flow's kink guard per (sample, neuron) pair and evaluation (its sign pattern):
#: a field evaluation measured 4.6-10.7 ns per pair at d = 1-30 and 20 at d = 100
#: (2026-12-05), below n m (7 + d / 5)
_GUARD_PER_PAIR = 5
_LONG_FLOW_EVALS = 1_000_000
#: smallest relative tolerance of gradient_flow: 100 float64 ulps, below which SciPy's
#: solvers raise it themselves (with a warning) instead of honouring it
_MIN_RTOL = 100 * np.finfo(float).eps




def _validate(a, B, X, Y=None, weights=None, *, need_y: bool = False):
    a, B = _validate_params(a, B)
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    if X.shape[1] != B.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns but B has {B.shape[1]}; both must be d")
    out = [a, B, X]
    if Y is not None or need_y:
        Y = as_float_array(Y, "Y (targets, shape (n,))", ndim=1)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y has {Y.shape[0]} entries but X has {X.shape[0]} rows")
        out.append(Y)
    if weights is not None:
        w = as_float_array(weights, "weights (shape (n,))", ndim=1)
        if w.shape[0] != X.shape[0] or np.any(w < 0):
            raise ValueError("weights must be non-negative with one entry per sample row of X")
        out.append(w)
    return out


def _sample_pass_cost(n: int, m: int, d: int) -> int:
    """One loss-and-gradient pass on n samples in require_work's units, without the
    overhead of its caller (see _STEP_OVERHEAD)."""
    return n * m * (10 + d) // 5


def _require_work(n: int, m: int, d: int, steps: int = 1, long_run=None,
                  sample: bool = True) -> bool:
    """Refuse at once a call whose multiply-adds (about steps x n x m x d per GEMM) would
    take hours; True for a long run (above QUICK_WORK: allowed with ``long_run``).
    ``sample``: the step is the sample loss's (else a user's grad_fn, n = 1)."""
    require_size(steps * n * m * d, "the work steps x n x m x d", limit=_MAX_GD_WORK,
                 what="multiply-adds", hint="use fewer samples, particles or steps")
    if steps == 1:
        return False
    cost = (_sample_pass_cost(n, m, d) if sample else _GRAD_FN_PER_ENTRY * m * d) + _STEP_OVERHEAD
    return require_work(steps * cost, "steps", long_run=long_run,
                        what="work units (steps x (n m (2 + d / 5) + overhead))" if sample
                        else "work units (steps x (20 m d + overhead))",
                        hint="use fewer steps (a larger eta reaches the same time t = steps x "
                        "eta), samples or particles")


def _chunk_rows(m: int, n: int, chunk: int | None) -> int:
    """Rows per block: ``chunk`` if given, else about _BLOCK_ELEMENTS / m (at least
    _MIN_BLOCK_ROWS, at most _MAX_BLOCK_ELEMENTS / m and n)."""
    if chunk is not None:
        rows = min(require_positive_int(chunk, "chunk"), max(n, 1))
        require_size(rows * m, "chunk x m (entries of one block buffer)",
                     limit=_MAX_BLOCK_ELEMENTS, what="float64 entries",
                     hint=f"use chunk <= {max(1, _MAX_BLOCK_ELEMENTS // max(m, 1))} (or leave it "
                          "unset: the default fits the cache)")
        return rows
    rows = min(max(_MIN_BLOCK_ROWS, _BLOCK_ELEMENTS // max(m, 1)),
               _MAX_BLOCK_ELEMENTS // max(m, 1))
    return int(max(1, min(n, rows)))


def step_threads() -> int:
    """The threads a step of :func:`loss_and_grad`, :func:`forward`,
    :func:`gradient_descent` or :func:`gradient_flow` would use now: the BLAS thread
    limit in force (``threadpoolctl.threadpool_limits``, ``OPENBLAS_NUM_THREADS``, else
    the BLAS default; at most the CPUs available).  Every GEMM runs on one BLAS thread
    (the process's BLAS limit is 1 while a step runs) and the sample blocks are shared
    among the threads, their partial gradients added in block order: the results are
    the same bits at every thread count (:mod:`numerics._step_threads`).  Steps below about
    a millisecond of work (n m d < 2^21) run on one thread; under ``threadpool_limits(1)``
    (the claim runner's tasks) every step does.

    >>> from threadpoolctl import threadpool_limits
    >>> with threadpool_limits(1):
    ...     step_threads()
    1
    """
    return threads_in_force()


def forward(a, B, X, *, chunk: int | None = None) -> np.ndarray:
    """f(x_i) = (1/m) sum_j a_j relu(b_j . x_i) for every row of X: shape (n,).

    Weights or inputs so large or small that a product could leave the float64 range
    (an overflow, or an underflow to 0) are handled in the power-of-two rescaled form
    (exact, :func:`_loss_and_grad_scaled`); a result beyond float64 raises a ValueError."""
    (a, B, X), tiny = _checked_inputs(a, B, X)
    _require_work(*X.shape[:1], *B.shape)
    c = _chunk_rows(a.shape[0], X.shape[0], chunk)
    if tiny:
        return _forward_scaled(a, B, X, c)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _forward_fast(a, B, X, c)
    if not np.all(np.isfinite(out)):
        out = _forward_scaled(a, B, X, c)
    return out


#: a non-zero factor below this (|a_j|, a row maximum of B or X, |y_i|, w_i) may make a
#: product of the (at most 7) factors of one term underflow: the rescaled path is used
_TINY = 2.0 ** -140


def _tiny_factors(*parts: np.ndarray) -> bool:
    """True if some non-zero scale of a, the rows of B and X, Y or w is below _TINY."""
    for p in parts:
        mags = np.abs(p)
        if mags.size == 0 or mags.min() >= _TINY:
            continue                         # no entry at all below _TINY (the usual case)
        if p.ndim == 2:
            mags = np.max(mags, axis=1)
        if np.any((mags > 0) & (mags < _TINY)):
            return True
    return False


#: the biased float64 exponent of _TINY (a power of two): a non-zero x has |x| < _TINY
#: iff its biased exponent is below this
_TINY_EXPONENT = 1022 + int(np.frexp(_TINY)[1])


def _plain(x, ndim: int) -> bool:
    return (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == ndim
            and x.flags.c_contiguous and 0 < x.size <= MAX_ELEMENTS)


def _checked_inputs(a, B, X, Y=None, *, need_y: bool = False
                    ) -> tuple[list[np.ndarray], bool]:
    """``([a, B, X(, Y)] validated, whether a factor is tiny (:func:`_tiny_factors`))``.
    C-ordered float64 arrays of matching shapes take one compiled exponent scan each
    (:func:`numerics._relu_pass.exponent_range`: finite iff every exponent is below
    2047, no tiny factor if no non-zero exponent is below _TINY's) instead of the
    passes of :func:`_validate` and :func:`_tiny_factors`; anything else, or a
    non-finite entry, goes through :func:`_validate`, which names the problem."""
    arrays = (a, B, X) if Y is None and not need_y else (a, B, X, Y)
    if (all(_plain(x, k) for x, k in zip(arrays, (1, 2, 2, 1)))
            and B.shape[0] == a.shape[0] and X.shape[1] == B.shape[1]
            and (Y is None or Y.shape[0] == X.shape[0])):
        ranges = [exponent_range(x) for x in arrays]
        if all(r is not None and r[0] < 2047 for r in ranges):
            small = any(r[1] < _TINY_EXPONENT for r in ranges)
            return list(arrays), small and _tiny_factors(*arrays)
    vals = _validate(a, B, X, Y, need_y=need_y)
    return vals, _tiny_factors(*vals)


def _loss_and_grad_checked(a, B, X, Y, w, c) -> tuple[float, np.ndarray, np.ndarray]:
    """The fast step; on a non-finite value the exactly rescaled recomputation (which
    raises a ValueError naming the overflow if the result is not representable), on the
    threads in force with every BLAS call on one thread (:func:`step_threads`)."""
    with serial_blas() as threads, np.errstate(over="ignore", invalid="ignore"):
        loss, ga, gB, finite = _loss_and_grad_fast(a, B, X, Y, w, c, None, threads)
    if not finite:
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(B))):
            return np.inf, ga, gB    # a diverged iterate (GD/flow report it by name)
        loss, ga, gB = _loss_and_grad_scaled(a, B, X, Y, w, c)
    return loss, ga, gB


def loss_and_grad(a, B, X, Y, *, weights=None, chunk: int | None = None
                  ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """``(L, (dL/da, dL/dB))`` for L = 1/2 sum_i w_i (f(x_i) - y_i)^2, w_i = 1/n by default.

    Chunked over samples: per chunk one GEMM for the pre-activations, one for the
    output, one (m x c) @ (c x d) GEMM for dL/dB.  float64 throughout.  Inputs so large
    or small that an intermediate could over- or underflow are computed exactly rescaled
    by powers of two; a loss or gradient beyond 1.8e308 raises a ValueError naming it.
    (:func:`gradient_descent` and :func:`gradient_flow` use the fast step and rescale
    only on an overflow.)"""
    if weights is None:
        # the default weights 1/n are never below _TINY (that would take n > 2^140 samples)
        vals, tiny = _checked_inputs(a, B, X, Y, need_y=True)
    else:
        vals = _validate(a, B, X, Y, weights, need_y=True)
        tiny = _tiny_factors(*vals)
    a, B, X, Y = vals[:4]
    n = X.shape[0]
    _require_work(n, *B.shape)
    w = vals[4] if weights is not None else np.full(n, 1.0 / n)
    c = _chunk_rows(a.shape[0], n, chunk)
    if tiny:
        loss, ga, gB = _loss_and_grad_scaled(a, B, X, Y, w, c)
    else:
        loss, ga, gB = _loss_and_grad_checked(a, B, X, Y, w, c)
    return loss, (ga, gB)


# ------------------------------------------------ exactly rescaled (overflow-safe) path
# A value is held as (mantissa, exponent) = mant * 2**exp (numerics.validation's exact
# power-of-two helpers).  Scaling by powers of two is exact, so the only rounding is that
# of the float64 sums themselves (terms below 2^-1074 of the largest term of a sum are
# lost, as in any float64 sum).


def _overflow(what: str, a, B, X) -> ValueError:
    return ValueError(f"{what} overflows float64 (exceeds 1.8e308): the weights or inputs "
                      f"are too large; rescale a, B or X (max |a| = {np.abs(a).max():.3g}, "
                      f"max |B| = {np.abs(B).max():.3g}, max |X| = {np.abs(X).max():.3g})")


def _finish(val: tuple[np.ndarray, np.ndarray], what: str, a, B, X) -> np.ndarray:
    try:
        return ldexp_clipped(np.asarray(val[0], dtype=np.float64),
                             np.asarray(val[1], dtype=np.int64), what)
    except ValueError:
        raise _overflow(what, a, B, X) from None


def _scaled_parts(a, B, X):
    Bh, eB = row_pow2_scale(B)
    ah, ea = np.frexp(a)
    return Bh, eB, ah, ea.astype(np.int64) + eB


def _forward_rows_scaled(ah, eaB, Bh, m, Xc) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                       np.ndarray]:
    """For a chunk of rows: Xh, eX, Zh = Xh Bh^T and f as (mantissa, exponent)."""
    Xh, eX = row_pow2_scale(Xc)
    Zh = Xh @ Bh.T                                    # Z_ij = Zh_ij 2^(eX_i + eB_j)
    fm, fe = sum_pow2(np.maximum(Zh, 0.0) * ah, eaB[None, :] + eX[:, None], axis=1)
    return Xh, eX, Zh, (fm / m, fe)


def _on_one_blas_thread(fn: Callable) -> Callable:
    """``fn`` with every BLAS call on one thread (the same bits at any thread limit)."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with serial_blas():
            return fn(*args, **kwargs)
    return wrapped


@_on_one_blas_thread
def _forward_scaled(a, B, X, c: int) -> np.ndarray:
    Bh, _, ah, eaB = _scaled_parts(a, B, X)
    m, n = a.shape[0], X.shape[0]
    out = np.empty(n)
    for s in range(0, n, c):
        out[s:s + c] = _finish(_forward_rows_scaled(ah, eaB, Bh, m, X[s:s + c])[3],
                               "forward: the network output", a, B, X)
    return out


@_on_one_blas_thread
def _loss_and_grad_scaled(a, B, X, Y, w, c: int) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`loss_and_grad` on exactly rescaled operands (rows of B and X scaled to
    max |entry| in [0.5, 1), every other factor split by frexp): finite whenever the loss
    and the gradients are representable, else a ValueError naming the overflow."""
    Bh, eB, ah, eaB = _scaled_parts(a, B, X)
    m, d = B.shape
    n = X.shape[0]
    loss_acc = (np.zeros(()), np.array(POW2_ZERO_EXPONENT))
    ga_acc = (np.zeros(m), np.full(m, POW2_ZERO_EXPONENT))
    gB_acc = (np.zeros((m, d)), np.full((m, d), POW2_ZERO_EXPONENT))
    for s in range(0, n, c):
        e = min(n, s + c)
        Xh, eX, Zh, (fm, fe) = _forward_rows_scaled(ah, eaB, Bh, m, X[s:e])
        yh, ey = np.frexp(Y[s:e])
        rm, re = sum_pow2(np.stack([fm, -yh], 1), np.stack([fe, ey.astype(np.int64)], 1), 1)
        wh, ew = np.frexp(w[s:e])
        ew = ew.astype(np.int64)
        loss_acc = merge_pow2(loss_acc, sum_pow2(0.5 * wh * rm * rm, ew + 2 * re, axis=0))
        qm, qe = wh * rm, ew + re + eX                # w_i r_i = qm_i 2^(qe_i - eX_i)
        H = np.maximum(Zh, 0.0)
        ga_acc = merge_pow2(ga_acc, sum_pow2(H * qm[:, None], qe[:, None] + eB[None, :], axis=0))
        act = (Zh > 0) & (qm != 0)[:, None]           # (k, m)
        top = np.max(np.where(act, qe[:, None], POW2_ZERO_EXPONENT), axis=0)  # per neuron j
        # exponents <= 0 where active (top is their maximum); inactive entries are dropped
        W = np.where(act, ldexp_clipped(np.broadcast_to(qm[:, None], act.shape).copy(),
                                        np.minimum(qe[:, None] - top[None, :], 0)), 0.0)
        gB_acc = merge_pow2(gB_acc, (W.T @ Xh, np.broadcast_to(top[:, None], (m, d)).copy()))
    loss = float(_finish(loss_acc, "loss_and_grad: the loss", a, B, X))
    ga = _finish((ga_acc[0] / m, ga_acc[1]), "loss_and_grad: dL/da", a, B, X)
    gB = _finish((gB_acc[0] * (ah / m)[:, None], gB_acc[1] + (eaB - eB)[:, None]),
                 "loss_and_grad: dL/dB", a, B, X)
    return loss, ga, gB


def loss_and_grad_dense_reference(a, B, X, Y, *, chunk_elements: int = 2 ** 22
                                  ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """The textbook NumPy step (benchmark/test reference for :func:`loss_and_grad`,
    w_i = 1/n): per chunk of samples Z = X B^T, H = relu(Z), r = H a / m - y,
    dL/da = H^T r / (m n), dL/dB = ((1{Z > 0} * r) * a / m)^T X / n, with fresh
    temporaries.  Chunking over samples (sums split exactly) only bounds memory.  No
    rescaling: a loss or gradient beyond float64 raises a ValueError."""
    a, B, X, Y = _validate(a, B, X, Y, need_y=True)
    m, n = a.shape[0], X.shape[0]
    _require_work(n, m, B.shape[1])
    chunk_elements = require_positive_int(chunk_elements, "chunk_elements")
    rows = int(max(1, min(n, chunk_elements // m)))
    with np.errstate(over="ignore", invalid="ignore"):
        loss, ga, gB = _dense_reference_sums(a, B, X, Y, rows)
    require_finite_result((loss, ga, gB), "loss_and_grad_dense_reference",
                          "a, B, X or Y too large for the unscaled reference")
    return loss, (ga, gB)


def _dense_reference_sums(a, B, X, Y, rows):
    m, n = a.shape[0], X.shape[0]
    loss, ga, gB = 0.0, np.zeros(m), np.zeros(B.shape)
    for s in range(0, n, rows):
        Z = X[s:s + rows] @ B.T
        H = Z * (Z > 0)          # not np.maximum(Z, 0): an overflow to -inf must give nan
        r = H @ a / m - Y[s:s + rows]
        loss += 0.5 * float(r @ r) / n
        ga += H.T @ r / (m * n)
        gB += ((Z > 0) * r[:, None] * (a / (m * n))[None, :]).T @ X[s:s + rows]
    return loss, ga, gB


def balance_gap(a, B) -> np.ndarray:
    """a_j^2 - |b_j|^2 per particle (conserved by the flow: claim H1a); a ValueError if
    it exceeds float64."""
    a, B = _validate_params(a, B)
    with np.errstate(over="ignore", invalid="ignore"):
        gap = a * a - np.einsum("ij,ij->i", B, B)
    return require_finite_result(gap, "balance_gap", "|a| or |b| above 1e154")


def _require_grad_fn(grad_fn: Callable | None) -> Callable | None:
    if grad_fn is not None and not callable(grad_fn):
        raise ArgumentTypeError("grad_fn must be None or a callable (a, B) -> (loss, (dL/da, "
                                f"dL/dB)); got {type(grad_fn).__name__} {grad_fn!r:.40}")
    return grad_fn


def _sample_grad(a, B, X, Y, weights, chunk) -> tuple[Callable, np.ndarray]:
    """Validate (a, B, X, Y, weights, chunk) once; the returned (a, B) -> (loss, (ga, gB))
    runs the unchecked fast step (rescaled recomputation only on a non-finite value),
    returned with the validated X."""
    vals = _validate(a, B, X, Y, weights, need_y=True)
    _, B, X, Y = vals[:4]
    n = X.shape[0]
    w = vals[4] if weights is not None else np.full(n, 1.0 / n)
    c = _chunk_rows(B.shape[0], n, chunk)

    def grad(aa: np.ndarray, BB: np.ndarray) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
        loss, ga, gB = _loss_and_grad_checked(aa, BB, X, Y, w, c)
        return loss, (ga, gB)
    return grad, X


def gradient_descent(a, B, X, Y, eta: float, steps: int, *, weights=None,
                     record_every: int = 0, chunk: int | None = None,
                     grad_fn: Callable | None = None, blowup: float = 1e8,
                     long_run: bool | None = None) -> GDResult:
    """GD with learning rate ``m * eta`` (forward Euler of the mean-field flow with step
    eta, docs/conventions.md, section 2).  ``record_every > 0`` stores (a, B) every that many steps (and at
    the start and end).  ``grad_fn(a, B) -> (loss, (ga, gB))`` replaces the sample loss
    (e.g. a population loss; X and Y are then ignored).  Raises :class:`DivergenceError`
    naming eta on blow-up: a non-finite state or loss, or a loss above ``blowup`` (>= 1)
    times the initial one.  Arguments are validated once per call, not per step.
    Returns a :class:`numerics.dynamics.GDResult`: ``a``, ``B`` the final parameters,
    ``steps``/``times``/``losses`` and ``snapshots`` (one (a, B) per record).  A run above
    ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (it then shows its progress
    and stops at Ctrl-C)."""
    a, B = _validate_params(a, B)
    a, B = a.copy(), B.copy()
    eta = as_float_scalar(eta, "eta", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0)
    record_every = require_positive_int(record_every, "record_every", minimum=0)
    blowup = as_float_scalar(blowup, "blowup", lo=1.0)
    m = a.shape[0]
    sample = _require_grad_fn(grad_fn) is None
    if sample:
        grad_fn, Xv = _sample_grad(a, B, X, Y, weights, chunk)
        long = _require_work(Xv.shape[0], *B.shape, steps=steps + 1, long_run=long_run)
    else:
        long = _require_work(1, *B.shape, steps=steps + 1, long_run=long_run, sample=False)
    steps_rec, times, losses, snaps = [], [], [], []
    loss0 = None
    for k in RunProgress(steps + 1, "twolayer.gradient_descent steps", long).steps():
        try:
            loss, (ga, gB) = grad_fn(a, B)
        except ValueError:
            if k == 0 or not sample:
                raise            # the initial state itself overflows: names a, B or X
            loss = np.inf        # overflow after k steps: the step size made it diverge
        if loss0 is None:
            loss0 = max(loss, 1e-300)
        if not np.isfinite(loss) or loss > blowup * loss0:
            raise DivergenceError(f"gradient descent diverged at step {k} (t = {k * eta:g}) "
                                  f"with step size eta = {eta:g}: loss {loss:g}; reduce eta")
        if record_every and (k % record_every == 0 or k == steps):
            steps_rec.append(k)
            times.append(k * eta)
            losses.append(loss)
            snaps.append((a.copy(), B.copy()))
        if k == steps:
            break
        a -= (m * eta) * ga
        B -= (m * eta) * gB
    d = B.shape[1]
    traj = {"a": np.array([s[0] for s in snaps]).reshape(-1, m),
            "B": np.array([s[1] for s in snaps]).reshape(-1, m, d)}
    return GDResult(np.array(steps_rec, dtype=np.int64), np.array(times, dtype=np.float64),
                    np.array(losses, dtype=np.float64), traj, {"a": a, "B": B}, by_name="final")


_METHODS = {"DOP853": DOP853, "RK45": RK45, "RK23": RK23, "Radau": Radau, "BDF": BDF,
            "LSODA": LSODA}
#: the chattering guard's description of a kink and what to change (numerics.dynamics)
_KINK = "b_j . x_i = 0"
_KINK_HINT = ("an error-controlled step size cannot pass it (it would shrink forever); "
              "perturb B or X off the kink, or use gradient_descent")
#: crossings of one kink by one neuron that the guard allows (x SAMPLED_SWITCHES_PER_CROSSING
#: switches): each field evaluation is a full blocked step, so a sliding mode stops early
_CROSSINGS = 4


def gradient_flow(a, B, X, Y, t_eval, *, weights=None, rtol: float = 1e-10,
                  atol: float = 1e-12, method: str = "DOP853", chunk: int | None = None,
                  grad_fn: Callable | None = None, max_evals: int | None = None,
                  long_run: bool | None = None) -> FlowResult:
    """The mean-field particle flow da_j/dt = -m dL/da_j, db_j/dt = -m dL/db_j integrated
    by SciPy's error-controlled ``method`` (DOP853 by default) to ``rtol``/``atol``.
    ``grad_fn(a, B) -> (loss, (ga, gB))`` replaces the sample loss if given (X, Y are then
    ignored).  Raises :class:`DivergenceError` on a non-finite field, after ``max_evals``
    evaluations, on a solver failure, or (sample loss) when a neuron slides along a ReLU
    kink b_j . x_i = 0, which the step-size control cannot pass (it chatters across it:
    :class:`numerics.dynamics.ChatteringError`, a DivergenceError, from the shared
    chattering guard).  Returns a :class:`numerics.dynamics.FlowResult` with parameters
    ``a`` (T, m) and ``B`` (T, m, d) at the times ``t_eval``.  The evaluation budget
    ``max_evals`` (default 10^6) is capped at about two seconds of work unless
    ``long_run=True``; its exhaustion or a solver failure raises
    :class:`~numerics.validation.IntegratorError`."""
    a, B = _validate_params(a, B)
    m, d = B.shape
    t_eval = require_time_grid(t_eval, "t_eval", start=0.0)
    rtol = require_tolerance(rtol, "rtol")
    if rtol < _MIN_RTOL:
        raise ValueError(f"rtol must be >= {_MIN_RTOL:g} (100 float64 ulps: the SciPy "
                         f"solvers cannot resolve less); got {rtol!r}")
    atol = require_tolerance(atol, "atol")
    solver_cls = _METHODS[require_choice(method, "method", tuple(_METHODS))]
    sample = _require_grad_fn(grad_fn) is None
    if sample:
        grad_fn, Xv = _sample_grad(a, B, X, Y, weights, chunk)
    eval_cost = (_sample_pass_cost(Xv.shape[0], m, d) + _GUARD_PER_PAIR * Xv.shape[0] * m
                 if sample else _GRAD_FN_PER_ENTRY * m * d) + _FLOW_EVAL_OVERHEAD
    max_evals = flow_budget(max_evals, "max_evals", eval_cost, long_run=long_run,
                            long_default=_LONG_FLOW_EVALS)
    more = "" if wants_long_run(long_run) else " (with long_run=True beyond about two seconds)"
    evals = [0]
    kinks = {"pattern": Xv @ B.T > 0 if sample else None}
    guard = ChatteringGuard(m, Xv.shape[0], switches_per_crossing=SAMPLED_SWITCHES_PER_CROSSING,
                            crossings=_CROSSINGS,
                            kink=_KINK, hint=_KINK_HINT) if sample else None

    def rhs(_t, z):
        evals[0] += 1
        if evals[0] > max_evals:
            raise IntegratorError(f"gradient flow: budget of {max_evals} gradient evaluations "
                                  f"exhausted at t = {_t:g}; raise max_evals{more} or rtol")
        aa = z[:m]
        BB = z[m:].reshape(m, d)
        if sample:
            now = Xv @ BB.T > 0                  # (sample, neuron) activations
            changed = now != kinks["pattern"]
            kinks["pattern"] = now
            guard.switches(changed.T, _t)
        try:
            _, (ga, gB) = grad_fn(aa, BB)
        except ValueError as exc:
            if not sample:
                raise
            raise DivergenceError(f"gradient flow: non-finite velocity field at t = {_t:g} "
                                  f"({exc})") from None
        with np.errstate(over="ignore", invalid="ignore"):
            out = -m * np.concatenate([np.ravel(ga), np.ravel(gB)])
        if out.shape != z.shape:
            raise ValueError(f"grad_fn must return (loss, (dL/da of shape ({m},), dL/dB of "
                             f"shape ({m}, {d}))); got {out.size} gradient entries")
        if not np.all(np.isfinite(out)):
            raise DivergenceError(f"gradient flow: non-finite velocity field at t = {_t:g}")
        return out

    z0 = np.concatenate([a, B.ravel()])
    t_end = float(t_eval[-1])
    rhs(0.0, z0)                       # the initial field must be finite (and well-shaped)
    evals[0] = 0
    if t_end == 0.0:
        return FlowResult(t_eval.copy(), trajectory={"a": np.tile(a, (t_eval.size, 1)),
                                                     "B": np.tile(B, (t_eval.size, 1, 1))},
                          n_steps=0, nfev=0, rtol=rtol, atol=atol)
    return _solve(solver_cls(rhs, 0.0, z0, t_end, rtol=rtol, atol=atol), t_eval, m, d,
                  rtol, atol)


def _solve(solver, t_eval: np.ndarray, m: int, d: int, rtol: float, atol: float) -> FlowResult:
    """Step the SciPy ``solver`` to its end, the state at ``t_eval`` from its dense output."""
    ys, done, n_steps = [], 0, 0
    while solver.status == "running":
        msg = solver.step()
        n_steps += 1
        if solver.status == "failed":
            raise IntegratorError(f"gradient flow failed at t = {solver.t:g} ({msg}) with "
                                  f"rtol = {rtol:g}; the step size collapsed")
        upto = int(np.searchsorted(t_eval, solver.t, side="right"))
        if upto > done:
            ys.append(solver.dense_output()(t_eval[done:upto]))
            done = upto
    Zs = np.hstack(ys).T
    if not np.all(np.isfinite(Zs)):
        raise DivergenceError(f"gradient flow: non-finite state with rtol = {rtol:g}")
    return FlowResult(t_eval.copy(), trajectory={"a": Zs[:, :m].copy(),
                                                 "B": Zs[:, m:].reshape(-1, m, d).copy()},
                      n_steps=n_steps, nfev=int(solver.nfev), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- symmetrized systems
#: tolerances of cyclic_group: the closure test |T^k - I| <= tol needs tol above the
#: rounding of k products (a few eps per product), and below any real distance from I
_TOL_RANGE = (1e-15, 1e-2)
_MAX_GROUP_ORDER = 4096


def _require_bool(v, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False; got {type(v).__name__} {v!r:.40}")
    return bool(v)


def cyclic_group(T, max_order: int = 64, tol: float = 1e-12) -> np.ndarray:
    """The cyclic group {I, T, T^2, ...} generated by an orthogonal matrix of finite
    order, as a (|G|, d, d) stack (claims H1b, H1d); a ValueError if the order exceeds
    ``max_order`` (at most 4096), i.e. if no power up to it is within ``tol`` (in
    [1e-15, 1e-2]) of the identity entrywise."""
    T = as_float_array(T, "T (orthogonal generator, shape (d, d))", ndim=2, allow_empty=False)
    d = T.shape[0]
    if T.shape != (d, d):
        raise ValueError(f"T must be a square orthogonal matrix; got shape {T.shape}")
    max_order = require_positive_int(max_order, "max_order", maximum=_MAX_GROUP_ORDER)
    tol = as_float_scalar(tol, "tol (closure tolerance)", lo=_TOL_RANGE[0], hi=_TOL_RANGE[1])
    require_size(max_order * d * d, "the group (max_order x d x d entries)")
    require_size(max_order * d ** 3, "the powers of T (max_order x d^3 multiply-adds)",
                 limit=_MAX_GD_WORK >> 10, what="multiply-adds", hint="use a smaller max_order or d")
    if np.abs(T.T @ T - np.eye(d)).max() > 1e-10:
        raise ValueError("T must be a square orthogonal matrix (T^T T = I to 1e-10)")
    mats = [np.eye(d)]
    P = T.copy()
    while np.abs(P - np.eye(d)).max() > tol:
        mats.append(P)
        if len(mats) > max_order:
            raise ValueError(f"T has order > {max_order} (no power within tol = {tol:g} of I); "
                             "use a rotation by 2 pi / q, or raise max_order or tol")
        P = P @ T
    return np.array(mats)


def _group_stack(group, d: int) -> np.ndarray:
    G = as_float_array(group, "group (stack of |G| orthogonal (d, d) matrices)", ndim=3,
                       allow_empty=False)
    if G.shape[1:] != (d, d):
        raise ValueError(f"group must have shape (|G|, {d}, {d}) to act on R^{d}; got {G.shape}")
    return G


def orbit_particles(a, B, group, *, negate_a: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The particle set closed under b -> g b for every g of the (finite) ``group``:
    (a_j, g b_j) for all g and j (size |G| m).  ``negate_a=True`` pairs g with a sign
    flip of a (the map (a, b) -> (-a, -b) for g = -I, claim H1c)."""
    a, B = _validate_params(a, B)
    G = _group_stack(group, B.shape[1])
    negate_a = _require_bool(negate_a, "negate_a")
    require_size(G.shape[0] * B.size, "the orbit particles (|G| x m x d entries)")
    A, Bs = [], []
    for i, g in enumerate(G):
        sign = -1.0 if (negate_a and i % 2 == 1) else 1.0
        A.append(sign * a)
        Bs.append(B @ g.T)
    return np.concatenate(A), np.concatenate(Bs)


def orbit_samples(X, group) -> np.ndarray:
    """The sample {g x_i} (size |G| n): its empirical measure is exactly G-invariant."""
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    G = _group_stack(group, X.shape[1])
    require_size(G.shape[0] * X.size, "the orbit sample (|G| x n x d entries)")
    return np.concatenate([X @ g.T for g in G])
