"""The bias-free two-layer ReLU network with mean-field scaling (Hajjar & Chizat 2023,
docs/conventions.md, section 2; claims H1a-H1e, H1h):

    f(x) = (1/m) sum_j a_j relu(b_j . x),   a in R^m, B = (b_j) in R^{m x d}.

Loss on a weighted sample (x_i, y_i, w_i) (weights default 1/n, i.e. the empirical mean):

    L(a, B) = 1/2 sum_i w_i (f(x_i) - y_i)^2.

:func:`loss_and_grad` returns the exact gradient of L (with the 1/m of the model); the
mean-field particle velocity is ``-m * grad`` (docs/conventions.md, section 2), so gradient descent with
learning rate ``m * eta`` is the forward-Euler scheme of the mean-field flow with time
step ``eta``.  All m x n products are chunked over samples (bounded memory, BLAS-bound):
with the default chunk, d = 30, m = 1e4, n = 1e5 needs about 0.5 GiB of buffers (2 x 2^25 float64).

Population expectations for Gaussian data rho = N(0, s2 I_d) are available in closed form
(arc-cosine kernel of degree 1): :func:`gaussian_relu_kernel`,
:func:`population_loss_and_grad_norm_target` (target f*(x) = |x_H|, one 1-D
Gauss-Gegenbauer quadrature for the target term).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.integrate import DOP853, LSODA, RK23, RK45, BDF, Radau

from numerics.validation import (ArgumentTypeError, as_float_array, as_float_scalar,
                                 require_choice, require_positive_int, require_time_grid,
                                 require_tolerance)

__all__ = ["forward", "loss_and_grad", "gradient_descent", "gradient_flow", "GDResult",
           "FlowResult", "DivergenceError", "balance_gap", "cyclic_group", "orbit_particles",
           "orbit_samples", "gaussian_relu_kernel", "gaussian_relu_kernel_grad",
           "population_loss_and_grad_norm_target", "DEFAULT_CHUNK_ELEMENTS",
           "loss_and_grad_dense_reference"]

#: max entries of one (chunk x m) buffer; two such float64 buffers live at once (512 MiB)
DEFAULT_CHUNK_ELEMENTS = 2 ** 25


class DivergenceError(FloatingPointError):
    """A simulation produced a non-finite or exploding state; the message names the step."""


def _validate_params(a, B) -> tuple[np.ndarray, np.ndarray]:
    """``a`` (m,) and ``B`` (m, d) as finite float64 arrays with matching m."""
    a = as_float_array(a, "a (output weights)", ndim=1, allow_empty=False)
    B = as_float_array(B, "B (input weights, shape (m, d))", ndim=2, allow_empty=False)
    if B.shape[0] != a.shape[0]:
        raise ValueError(f"a has {a.shape[0]} entries but B has {B.shape[0]} rows; both must be m")
    return a, B


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


def _chunk_rows(m: int, n: int, chunk: int | None) -> int:
    if chunk is not None:
        return require_positive_int(chunk, "chunk")
    return int(max(1, min(n, DEFAULT_CHUNK_ELEMENTS // max(m, 1))))


def _forward_fast(a: np.ndarray, B: np.ndarray, X: np.ndarray, c: int) -> np.ndarray:
    m, n = a.shape[0], X.shape[0]
    out = np.empty(n)
    buf = np.empty((min(c, n), m))
    for s in range(0, n, c):
        e = min(n, s + c)
        Z = buf[: e - s]
        np.dot(X[s:e], B.T, out=Z)
        np.maximum(Z, 0.0, out=Z)
        np.dot(Z, a, out=out[s:e])
    out /= m
    return out


def forward(a, B, X, *, chunk: int | None = None) -> np.ndarray:
    """f(x_i) = (1/m) sum_j a_j relu(b_j . x_i) for every row of X: shape (n,).

    Weights or inputs so large or small that a product could leave the float64 range
    (an overflow, or an underflow to 0) are handled in the power-of-two rescaled form
    (exact, :func:`_loss_and_grad_scaled`); a result beyond float64 raises a ValueError."""
    a, B, X = _validate(a, B, X)
    c = _chunk_rows(a.shape[0], X.shape[0], chunk)
    if _tiny_factors(a, B, X):
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
        mags = np.abs(p) if p.ndim == 1 else np.max(np.abs(p), axis=1)
        if np.any((mags > 0) & (mags < _TINY)):
            return True
    return False


def _loss_and_grad_fast(a: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray,
                        w: np.ndarray, c: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The chunked float64 step on validated arrays (no checks: the hot loop of GD)."""
    m, d = B.shape
    n = X.shape[0]
    rows = min(c, n)
    Zbuf = np.empty((rows, m))
    Mbuf = np.empty((rows, m))
    RX = np.empty((rows, d))
    ga = np.zeros(m)
    gB = np.zeros((m, d))
    loss = 0.0
    for s in range(0, n, c):
        e = min(n, s + c)
        k = e - s
        Z, M = Zbuf[:k], Mbuf[:k]
        np.dot(X[s:e], B.T, out=Z)
        np.greater(Z, 0.0, out=M)           # indicator 1{b_j . x_i > 0} as float64
        np.maximum(Z, 0.0, out=Z)           # relu
        r = Z @ a
        r /= m
        r -= Y[s:e]                          # residual f - y
        loss += 0.5 * float(np.dot(w[s:e], r * r))
        r *= w[s:e]                          # weighted residual
        ga += Z.T @ r
        np.multiply(X[s:e], r[:, None], out=RX[:k])
        gB += M.T @ RX[:k]
    ga /= m
    gB *= (a / m)[:, None]
    return loss, ga, gB


def _all_finite(loss: float, ga: np.ndarray, gB: np.ndarray) -> bool:
    return bool(np.isfinite(loss) and np.all(np.isfinite(ga)) and np.all(np.isfinite(gB)))


def _loss_and_grad_checked(a, B, X, Y, w, c) -> tuple[float, np.ndarray, np.ndarray]:
    """The fast step; on a non-finite value the exactly rescaled recomputation (which
    raises a ValueError naming the overflow if the result is not representable)."""
    with np.errstate(over="ignore", invalid="ignore"):
        loss, ga, gB = _loss_and_grad_fast(a, B, X, Y, w, c)
    if not _all_finite(loss, ga, gB):
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
    vals = _validate(a, B, X, Y, weights, need_y=True)
    a, B, X, Y = vals[:4]
    n = X.shape[0]
    w = vals[4] if weights is not None else np.full(n, 1.0 / n)
    c = _chunk_rows(a.shape[0], n, chunk)
    if _tiny_factors(a, B, X, Y, w):
        loss, ga, gB = _loss_and_grad_scaled(a, B, X, Y, w, c)
    else:
        loss, ga, gB = _loss_and_grad_checked(a, B, X, Y, w, c)
    return loss, (ga, gB)


# ------------------------------------------------ exactly rescaled (overflow-safe) path
# A value is held as (mantissa, exponent) = mant * 2**exp.  Scaling by powers of two is
# exact, so the only rounding is that of the float64 sums themselves (terms below 2^-1074
# of the largest term of a sum are lost, as in any float64 sum).
_NO_EXP = -(1 << 40)     # exponent of an exact zero (below every real exponent)


def _ldexp(mant: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """mant * 2**exp (exponents clipped to where float64 is already 0 or inf)."""
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(mant, np.clip(exp, -4000, 4000).astype(np.int64))


def _row_scale(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """M = diag(2**e) Mh with max |row of Mh| in [0.5, 1) (zero rows: e = 0)."""
    top = np.max(np.abs(M), axis=1)
    e = np.frexp(top)[1].astype(np.int64)
    return _ldexp(M, -e[:, None]), e


def _sum_pow2(P: np.ndarray, E: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """sum over ``axis`` of P * 2**E as (mantissa, exponent), exponent = the largest
    exponent of a non-zero term (``_NO_EXP`` for an all-zero sum)."""
    E = np.broadcast_to(E, P.shape)
    top = np.max(np.where(P != 0, E, _NO_EXP), axis=axis)
    mant = np.sum(_ldexp(P, E - np.expand_dims(top, axis)), axis=axis)
    return mant, top


def _merge(acc: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Sum of two (mantissa, exponent) values."""
    top = np.maximum(acc[1], new[1])
    return _ldexp(acc[0], acc[1] - top) + _ldexp(new[0], new[1] - top), top


def _overflow(what: str, a, B, X) -> ValueError:
    return ValueError(f"{what} overflows float64 (exceeds 1.8e308): the weights or inputs "
                      f"are too large; rescale a, B or X (max |a| = {np.abs(a).max():.3g}, "
                      f"max |B| = {np.abs(B).max():.3g}, max |X| = {np.abs(X).max():.3g})")


def _finish(val: tuple[np.ndarray, np.ndarray], what: str, a, B, X) -> np.ndarray:
    out = _ldexp(*val)
    if not np.all(np.isfinite(out)):
        raise _overflow(what, a, B, X)
    return out


def _scaled_parts(a, B, X):
    Bh, eB = _row_scale(B)
    ah, ea = np.frexp(a)
    return Bh, eB, ah, ea.astype(np.int64) + eB


def _forward_rows_scaled(ah, eaB, Bh, m, Xc) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                       np.ndarray]:
    """For a chunk of rows: Xh, eX, Zh = Xh Bh^T and f as (mantissa, exponent)."""
    Xh, eX = _row_scale(Xc)
    Zh = Xh @ Bh.T                                    # Z_ij = Zh_ij 2^(eX_i + eB_j)
    fm, fe = _sum_pow2(np.maximum(Zh, 0.0) * ah, eaB[None, :] + eX[:, None], axis=1)
    return Xh, eX, Zh, (fm / m, fe)


def _forward_scaled(a, B, X, c: int) -> np.ndarray:
    Bh, _, ah, eaB = _scaled_parts(a, B, X)
    m, n = a.shape[0], X.shape[0]
    out = np.empty(n)
    for s in range(0, n, c):
        out[s:s + c] = _finish(_forward_rows_scaled(ah, eaB, Bh, m, X[s:s + c])[3],
                               "forward: the network output", a, B, X)
    return out


def _loss_and_grad_scaled(a, B, X, Y, w, c: int) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`loss_and_grad` on exactly rescaled operands (rows of B and X scaled to
    max |entry| in [0.5, 1), every other factor split by frexp): finite whenever the loss
    and the gradients are representable, else a ValueError naming the overflow."""
    Bh, eB, ah, eaB = _scaled_parts(a, B, X)
    m, d = B.shape
    n = X.shape[0]
    loss_acc = (np.zeros(()), np.array(_NO_EXP))
    ga_acc = (np.zeros(m), np.full(m, _NO_EXP))
    gB_acc = (np.zeros((m, d)), np.full((m, d), _NO_EXP))
    for s in range(0, n, c):
        e = min(n, s + c)
        Xh, eX, Zh, (fm, fe) = _forward_rows_scaled(ah, eaB, Bh, m, X[s:e])
        yh, ey = np.frexp(Y[s:e])
        rm, re = _sum_pow2(np.stack([fm, -yh], 1), np.stack([fe, ey.astype(np.int64)], 1), 1)
        wh, ew = np.frexp(w[s:e])
        ew = ew.astype(np.int64)
        loss_acc = _merge(loss_acc, _sum_pow2(0.5 * wh * rm * rm, ew + 2 * re, axis=0))
        qm, qe = wh * rm, ew + re + eX                # w_i r_i = qm_i 2^(qe_i - eX_i)
        H = np.maximum(Zh, 0.0)
        ga_acc = _merge(ga_acc, _sum_pow2(H * qm[:, None], qe[:, None] + eB[None, :], axis=0))
        act = (Zh > 0) & (qm != 0)[:, None]           # (k, m)
        top = np.max(np.where(act, qe[:, None], _NO_EXP), axis=0)     # per neuron j
        W = np.where(act, _ldexp(qm[:, None], qe[:, None] - top[None, :]), 0.0)
        gB_acc = _merge(gB_acc, (W.T @ Xh, np.broadcast_to(top[:, None], (m, d))))
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
    temporaries.  Chunking over samples (sums split exactly) only bounds memory."""
    a, B, X, Y = _validate(a, B, X, Y)
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


def balance_gap(a, B) -> np.ndarray:
    """a_j^2 - |b_j|^2 per particle (conserved by the flow: claim H1a)."""
    a = np.asarray(a, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    return a * a - np.einsum("ij,ij->i", B, B)


@dataclass
class GDResult:
    """Final parameters and the recorded trajectory (``times`` in mean-field time)."""
    a: np.ndarray
    B: np.ndarray
    times: np.ndarray
    losses: np.ndarray
    snapshots: list[tuple[np.ndarray, np.ndarray]]


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
                     grad_fn: Callable | None = None, blowup: float = 1e8) -> GDResult:
    """GD with learning rate ``m * eta`` (forward Euler of the mean-field flow with step
    eta, docs/conventions.md, section 2).  ``record_every > 0`` stores (a, B) every that many steps (and at
    the start and end).  ``grad_fn(a, B) -> (loss, (ga, gB))`` replaces the sample loss
    (e.g. a population loss; X and Y are then ignored).  Raises :class:`DivergenceError`
    naming eta on blow-up: a non-finite state or loss, or a loss above ``blowup`` (>= 1)
    times the initial one.  Arguments are validated once per call, not per step."""
    a, B = _validate_params(a, B)
    a, B = a.copy(), B.copy()
    eta = as_float_scalar(eta, "eta", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0)
    record_every = require_positive_int(record_every, "record_every", minimum=0)
    blowup = as_float_scalar(blowup, "blowup", lo=1.0)
    m = a.shape[0]
    sample = _require_grad_fn(grad_fn) is None
    if sample:
        grad_fn = _sample_grad(a, B, X, Y, weights, chunk)[0]
    times, losses, snaps = [], [], []
    loss0 = None
    for k in range(steps + 1):
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
            times.append(k * eta)
            losses.append(loss)
            snaps.append((a.copy(), B.copy()))
        if k == steps:
            break
        a -= (m * eta) * ga
        B -= (m * eta) * gB
    return GDResult(a, B, np.array(times), np.array(losses), snaps)


@dataclass
class FlowResult:
    """Gradient-flow states at ``times``: ``a`` (T, m), ``B`` (T, m, d), and solver stats."""
    times: np.ndarray
    a: np.ndarray
    B: np.ndarray
    nfev: int
    rtol: float
    atol: float


_METHODS = {"DOP853": DOP853, "RK45": RK45, "RK23": RK23, "Radau": Radau, "BDF": BDF,
            "LSODA": LSODA}
#: an activation 1{b_j . x_i > 0} that flips this often between field evaluations marks
#: a sliding mode on the kink b_j . x_i = 0 (the field points into the kink from both
#: sides; an honest crossing flips it a few times within one or two steps)
_MAX_FLIPS = 1000


def _sliding_error(t: float, j: int, i: int) -> DivergenceError:
    return DivergenceError(
        f"gradient flow failed at t = {t:g}: neuron {j} slides along its kink b_j . x_i = 0 "
        f"for sample {i} (the velocity field is discontinuous there and points into the kink "
        "from both sides, a Filippov sliding mode that an error-controlled step size "
        "cannot pass: it would shrink forever); perturb B or X off the kink, or use "
        "gradient_descent")


def gradient_flow(a, B, X, Y, t_eval, *, weights=None, rtol: float = 1e-10,
                  atol: float = 1e-12, method: str = "DOP853", chunk: int | None = None,
                  grad_fn: Callable | None = None, max_evals: int = 1_000_000) -> FlowResult:
    """The mean-field particle flow da_j/dt = -m dL/da_j, db_j/dt = -m dL/db_j integrated
    by SciPy's error-controlled ``method`` (DOP853 by default) to ``rtol``/``atol``.
    ``grad_fn(a, B) -> (loss, (ga, gB))`` replaces the sample loss if given (X, Y are then
    ignored).  Raises :class:`DivergenceError` on a non-finite field, after ``max_evals``
    evaluations, on a solver failure, or (sample loss) when a neuron slides along a ReLU
    kink b_j . x_i = 0, which the step-size control cannot pass (it chatters across it)."""
    a, B = _validate_params(a, B)
    m, d = B.shape
    t_eval = require_time_grid(t_eval, "t_eval", start=0.0)
    rtol = require_tolerance(rtol, "rtol")
    atol = require_tolerance(atol, "atol")
    solver_cls = _METHODS[require_choice(method, "method", tuple(_METHODS))]
    max_evals = require_positive_int(max_evals, "max_evals")
    sample = _require_grad_fn(grad_fn) is None
    if sample:
        grad_fn, Xv = _sample_grad(a, B, X, Y, weights, chunk)
    evals = [0]
    kinks = {"pattern": Xv @ B.T > 0 if sample else None, "flips": None}
    if sample:
        kinks["flips"] = np.zeros(kinks["pattern"].shape, dtype=np.int64)

    def rhs(_t, z):
        evals[0] += 1
        if evals[0] > max_evals:
            raise DivergenceError(f"gradient flow: budget of {max_evals} gradient evaluations "
                                  f"exhausted at t = {_t:g}; raise max_evals or rtol")
        aa = z[:m]
        BB = z[m:].reshape(m, d)
        if sample:
            now = Xv @ BB.T > 0
            flips = kinks["flips"]
            flips += now != kinks["pattern"]
            kinks["pattern"] = now
            if flips.max() > _MAX_FLIPS:
                i, j = np.unravel_index(int(np.argmax(flips)), flips.shape)
                raise _sliding_error(_t, int(j), int(i))
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
        return FlowResult(t_eval.copy(), np.tile(a, (t_eval.size, 1)),
                          np.tile(B, (t_eval.size, 1, 1)), 0, rtol, atol)
    solver = solver_cls(rhs, 0.0, z0, t_end, rtol=rtol, atol=atol)
    ys, done = [], 0
    while solver.status == "running":
        msg = solver.step()
        if solver.status == "failed":
            raise DivergenceError(f"gradient flow failed at t = {solver.t:g} ({msg}) with "
                                  f"rtol = {rtol:g}; the step size collapsed")
        upto = int(np.searchsorted(t_eval, solver.t, side="right"))
        if upto > done:
            ys.append(solver.dense_output()(t_eval[done:upto]))
            done = upto
    Zs = np.hstack(ys).T
    if not np.all(np.isfinite(Zs)):
        raise DivergenceError(f"gradient flow: non-finite state with rtol = {rtol:g}")
    return FlowResult(t_eval.copy(), Zs[:, :m].copy(), Zs[:, m:].reshape(-1, m, d).copy(),
                      int(solver.nfev), rtol, atol)


# ---------------------------------------------------------------- symmetrized systems
def cyclic_group(T, max_order: int = 64, tol: float = 1e-12) -> np.ndarray:
    """The cyclic group {I, T, T^2, ...} generated by an orthogonal matrix of finite
    order, as a (|G|, d, d) stack (raise if the order exceeds ``max_order``)."""
    T = as_float_array(T, "T", ndim=2)
    d = T.shape[0]
    if T.shape != (d, d) or np.abs(T.T @ T - np.eye(d)).max() > 1e-10:
        raise ValueError("T must be a square orthogonal matrix")
    mats = [np.eye(d)]
    P = T.copy()
    while np.abs(P - np.eye(d)).max() > tol:
        mats.append(P)
        if len(mats) > max_order:
            raise ValueError(f"T has order > {max_order}; use a rotation by 2 pi / q")
        P = P @ T
    return np.array(mats)


def orbit_particles(a, B, group, *, negate_a: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The particle set closed under b -> g b for every g of the (finite) ``group``:
    (a_j, g b_j) for all g and j (size |G| m).  ``negate_a=True`` pairs g with a sign
    flip of a (the map (a, b) -> (-a, -b) for g = -I, claim H1c)."""
    a = np.asarray(a, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    A, Bs = [], []
    for i, g in enumerate(np.asarray(group)):
        sign = -1.0 if (negate_a and i % 2 == 1) else 1.0
        A.append(sign * a)
        Bs.append(B @ g.T)
    return np.concatenate(A), np.concatenate(Bs)


def orbit_samples(X, group) -> np.ndarray:
    """The sample {g x_i} (size |G| n): its empirical measure is exactly G-invariant."""
    X = np.asarray(X, dtype=np.float64)
    return np.concatenate([X @ g.T for g in np.asarray(group)])


# ---------------------------------------------------------------- Gaussian population
def _angles(U: np.ndarray, V: np.ndarray):
    nu = np.linalg.norm(U, axis=1)
    nv = np.linalg.norm(V, axis=1)
    G = U @ V.T
    cos = np.clip(G / np.outer(nu, nv), -1.0, 1.0)
    gam = np.arccos(cos)
    sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
    return nu, nv, cos, gam, sin


def gaussian_relu_kernel(U, V, s2: float) -> np.ndarray:
    """K_ij = E[relu(u_i . x) relu(v_j . x)], x ~ N(0, s2 I) (Cho & Saul arc-cosine kernel):
    s2 |u||v| (sin g + (pi - g) cos g) / (2 pi), g the angle between u_i and v_j."""
    nu, nv, cos, gam, sin = _angles(np.asarray(U, float), np.asarray(V, float))
    return s2 * np.outer(nu, nv) * (sin + (np.pi - gam) * cos) / (2 * np.pi)


def gaussian_relu_kernel_grad(U, V, s2: float, coef) -> np.ndarray:
    """sum_j coef_ij E[1{u_i . x > 0} x relu(v_j . x)] for x ~ N(0, s2 I), i.e. the
    gradient in u_i of sum_j coef_ij K(u_i, v_j):  s2/(2 pi) [(pi - g) v_j + sin g |v_j| u_i/|u_i|]."""
    U = np.asarray(U, float)
    V = np.asarray(V, float)
    nu, nv, cos, gam, sin = _angles(U, V)
    c = np.asarray(coef, float)
    out = (c * (np.pi - gam)) @ V
    out += ((c * sin) @ nv)[:, None] * (U / nu[:, None])
    return out * (s2 / (2 * np.pi))


def population_loss_and_grad_norm_target(a, B, d_H: int, s2: float, r_nodes, r_weights
                                         ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """Exact population loss 1/2 E[(f(x) - |x_H|)^2], x ~ N(0, s2 I_d), H = span(e_1..e_dH),
    and its gradient (claim H1e target; used by claim H1h).

    The target term uses |x_H| = alpha E_w relu(w . x_H), w ~ Unif(S^{d_H-1}): by rotation
    invariance E[|x_H| relu(b . x)] = alpha E_R k(R |b_H|, |b|) with R the first coordinate
    of w; ``(r_nodes, r_weights)`` is a quadrature rule for the law of R (normalized,
    alpha included in the weights: sum(weights) = alpha)."""
    a = np.asarray(a, float)
    B = np.asarray(B, float)
    m, d = B.shape
    K = gaussian_relu_kernel(B, B, s2)                          # (m, m)
    Ka = K @ a / m                                              # E[f relu(b_j x)]
    bH = B[:, :d_H]
    nb = np.linalg.norm(B, axis=1)
    nbH = np.linalg.norm(bH, axis=1)
    rho = np.divide(nbH, nb, out=np.zeros_like(nb), where=nb > 0)
    cos = np.clip(rho[:, None] * np.asarray(r_nodes)[None, :], -1.0, 1.0)   # (m, q)
    gam = np.arccos(cos)
    sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
    wts = np.asarray(r_weights)
    pref = s2 / (2 * np.pi)
    T = pref * nb * ((sin + (np.pi - gam) * cos) @ wts)        # E[|x_H| relu(b_j x)]
    f_ff = float(a @ K @ a) / m ** 2
    f_fs = float(a @ T) / m
    loss = 0.5 * (f_ff - 2 * f_fs + s2 * d_H)
    ga = (Ka - T) / m
    # E[f 1{b_j x>0} x] and E[|x_H| 1{b_j x>0} x]
    gf = gaussian_relu_kernel_grad(B, B, s2, np.broadcast_to(a / m, (m, m)))
    e_bH = np.divide(bH, nbH[:, None], out=np.zeros_like(bH), where=nbH[:, None] > 0)
    gs = pref * (((np.pi - gam) * np.asarray(r_nodes)[None, :]) @ wts)[:, None] * \
        np.pad(e_bH, ((0, 0), (0, d - d_H)))
    gs += pref * (sin @ wts)[:, None] * (B / nb[:, None])
    gB = (a / m)[:, None] * (gf - gs)
    return loss, (ga, gB)
