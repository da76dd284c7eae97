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
from scipy.integrate import solve_ivp

from numerics.validation import as_float_array, require_positive_int

__all__ = ["forward", "loss_and_grad", "gradient_descent", "gradient_flow", "GDResult",
           "FlowResult", "DivergenceError", "balance_gap", "cyclic_group", "orbit_particles",
           "orbit_samples", "gaussian_relu_kernel", "gaussian_relu_kernel_grad",
           "population_loss_and_grad_norm_target", "DEFAULT_CHUNK_ELEMENTS",
           "loss_and_grad_dense_reference"]

#: max entries of one (chunk x m) buffer; two such float64 buffers live at once (512 MiB)
DEFAULT_CHUNK_ELEMENTS = 2 ** 25


class DivergenceError(FloatingPointError):
    """A simulation produced a non-finite or exploding state; the message names the step."""


def _validate(a, B, X, Y=None, weights=None):
    a = as_float_array(a, "a (output weights)", ndim=1, allow_empty=False)
    B = as_float_array(B, "B (input weights, shape (m, d))", ndim=2, allow_empty=False)
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    if B.shape[0] != a.shape[0]:
        raise ValueError(f"a has {a.shape[0]} entries but B has {B.shape[0]} rows; both must be m")
    if X.shape[1] != B.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns but B has {B.shape[1]}; both must be d")
    out = [a, B, X]
    if Y is not None:
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


def forward(a, B, X, *, chunk: int | None = None) -> np.ndarray:
    """f(x_i) = (1/m) sum_j a_j relu(b_j . x_i) for every row of X: shape (n,)."""
    a, B, X = _validate(a, B, X)
    m, n = a.shape[0], X.shape[0]
    c = _chunk_rows(m, n, chunk)
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


def loss_and_grad(a, B, X, Y, *, weights=None, chunk: int | None = None
                  ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """``(L, (dL/da, dL/dB))`` for L = 1/2 sum_i w_i (f(x_i) - y_i)^2, w_i = 1/n by default.

    Chunked over samples: per chunk one GEMM for the pre-activations, one for the
    output, one (m x c) @ (c x d) GEMM for dL/dB.  float64 throughout."""
    vals = _validate(a, B, X, Y, weights)
    a, B, X, Y = vals[:4]
    m, d = B.shape
    n = X.shape[0]
    w = vals[4] if weights is not None else np.full(n, 1.0 / n)
    c = _chunk_rows(m, n, chunk)
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
    if not (np.isfinite(loss) and np.all(np.isfinite(ga)) and np.all(np.isfinite(gB))):
        raise ValueError("loss_and_grad overflows float64 (the loss or a gradient exceeds "
                         "1.8e308): the weights or inputs are too large; rescale a, B or X "
                         f"(max |a| = {np.abs(a).max():.3g}, max |B| = {np.abs(B).max():.3g}, "
                         f"max |X| = {np.abs(X).max():.3g})")
    return loss, (ga, gB)


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


def gradient_descent(a, B, X, Y, eta: float, steps: int, *, weights=None,
                     record_every: int = 0, chunk: int | None = None,
                     grad_fn: Callable | None = None, blowup: float = 1e8) -> GDResult:
    """GD with learning rate ``m * eta`` (forward Euler of the mean-field flow with step
    eta, docs/conventions.md, section 2).  ``record_every > 0`` stores (a, B) every that many steps (and at
    the start and end).  ``grad_fn(a, B) -> (loss, (ga, gB))`` replaces the sample loss
    (e.g. a population loss).  Raises :class:`DivergenceError` naming eta on blow-up."""
    a = np.array(a, dtype=np.float64)
    B = np.array(B, dtype=np.float64)
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a positive finite step size; got {eta!r}")
    steps = require_positive_int(steps, "steps", minimum=0)
    m = a.shape[0]
    if grad_fn is None:
        a0, B0, X, Y = _validate(a, B, X, Y)
        grad_fn = lambda aa, BB: loss_and_grad(aa, BB, X, Y, weights=weights, chunk=chunk)  # noqa: E731
    times, losses, snaps = [], [], []
    loss0 = None
    for k in range(steps + 1):
        loss, (ga, gB) = grad_fn(a, B)
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


def gradient_flow(a, B, X, Y, t_eval, *, weights=None, rtol: float = 1e-10,
                  atol: float = 1e-12, method: str = "DOP853", chunk: int | None = None,
                  grad_fn: Callable | None = None, max_evals: int = 1_000_000) -> FlowResult:
    """The mean-field particle flow da_j/dt = -m dL/da_j, db_j/dt = -m dL/db_j integrated
    by SciPy's error-controlled ``method`` (DOP853 by default) to ``rtol``/``atol``.
    ``grad_fn(a, B) -> (loss, (ga, gB))`` replaces the sample loss if given.  Raises
    :class:`DivergenceError` on a non-finite field or after ``max_evals`` evaluations."""
    a = np.array(a, dtype=np.float64)
    B = np.array(B, dtype=np.float64)
    m, d = B.shape
    t_eval = as_float_array(t_eval, "t_eval", ndim=1, allow_empty=False)
    if np.any(np.diff(t_eval) <= 0) or t_eval[0] < 0:
        raise ValueError("t_eval must be non-negative and strictly increasing")
    if grad_fn is None:
        _, _, X, Y = _validate(a, B, X, Y)
        grad_fn = lambda aa, BB: loss_and_grad(aa, BB, X, Y, weights=weights, chunk=chunk)  # noqa: E731

    for val, name in ((rtol, "rtol"), (atol, "atol")):
        if not (np.isfinite(val) and 0 < val < 1):
            raise ValueError(f"{name} must be a finite number in (0, 1); got {val!r}")
    max_evals = require_positive_int(max_evals, "max_evals")
    evals = [0]

    def rhs(_t, z):
        evals[0] += 1
        if evals[0] > max_evals:
            raise DivergenceError(f"gradient flow: budget of {max_evals} gradient evaluations "
                                  f"exhausted at t = {_t:g}; raise max_evals or rtol")
        aa = z[:m]
        BB = z[m:].reshape(m, d)
        _, (ga, gB) = grad_fn(aa, BB)
        out = -m * np.concatenate([ga, gB.ravel()])
        if not np.all(np.isfinite(out)):
            raise DivergenceError(f"gradient flow: non-finite velocity field at t = {_t:g}")
        return out

    z0 = np.concatenate([a, B.ravel()])
    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), z0, method=method, t_eval=t_eval,
                    rtol=rtol, atol=atol)
    if not sol.success or not np.all(np.isfinite(sol.y)):
        raise DivergenceError(f"gradient flow failed ({sol.message}) with rtol = {rtol:g}")
    Zs = sol.y.T
    return FlowResult(sol.t, Zs[:, :m].copy(), Zs[:, m:].reshape(-1, m, d).copy(),
                      int(sol.nfev), rtol, atol)


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
