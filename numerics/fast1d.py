"""Exact O((m + s) log(m + s)) kernels for the univariate ReLU network of Williams et al.
(NeurIPS 2019), docs/conventions.md, section 1:

    f_z(x) = (1 / alpha) * sum_i c_i (a_i x - b_i)_+ ,   L(z) = 1/2 sum_j (f_z(x_j) - y_j)^2 .

Idea.  Neuron i is active on a half-line bounded by its knot e_i = b_i / a_i: on
``x > e_i`` if a_i > 0, on ``x < e_i`` if a_i < 0, everywhere (a_i = 0) iff -b_i > 0.
With the samples sorted once, neuron i is active on a *suffix* (a_i > 0) or a *prefix*
(a_i <= 0) of the sorted samples, delimited by one boundary index k_i.  Then

    f(x_p) = (x_p * A_p - B_p) / alpha,   A_p = sum_{i active at p} c_i a_i,
                                          B_p = sum_{i active at p} c_i b_i,

and A, B are prefix/suffix sums of per-boundary bins (``bincount``); the gradients

    dL/dc_i = (a_i R1_i - b_i R0_i) / alpha,  dL/da_i = c_i R1_i / alpha,
    dL/db_i = -c_i R0_i / alpha,   R0_i = sum_{j active} rho_j,  R1_i = sum_{j active} rho_j x_j,

are prefix/suffix sums over the sorted residuals gathered at k_i.  Cost: one sort of the
samples (skipped when already sorted), one ``searchsorted`` of the m knots, O(m + s) sums.

Kink convention (fixed, shared with the dense reference): ReLU(0) = 0 and ReLU'(0) = 0,
i.e. a neuron is active at x_j iff the EXACT real number a_i x_j - b_i is > 0 (not the
rounded ``fl(a_i * x_j) - b_i``, not the rounded knot).  The exact sign is obtained from
the compensated pre-activation ``(fl(a x) - b) + err(a x)`` where ``err`` is the exact
rounding error of the product (Dekker's TwoProduct with Veltkamp splitting): if fl(a x)
and b are within a factor 2 the difference is exact (Sterbenz) and the final rounding
keeps the sign; otherwise |fl(a x) - b| dominates |err| <= u |a x|.  Valid whenever the
splitting neither overflows nor underflows: |a_i|, |x_j| <= 2^500 and nonzero products
|a_i x_j| >= 2^-900 (true for every input of this project; enforced: outside it the
public functions raise ValueError).

Locating k_i exactly: the rounded knot fl(b_i / a_i) is within a relative 2^-53 of the
true knot, so ``searchsorted`` with a safety margin of 8 ulps gives a window of sorted
samples outside which the activity is certain; inside the (almost always empty) window a
vectorized bisection with the exact sign test finds k_i (the exact sign of a_i x - b_i is
monotone in x, so bisection is valid even with repeated samples).

Accuracy (the metric of ``_relative_discrepancy``): every output is a sum of terms whose
absolute values add up to a "scale" (e.g. scale_f_j = sum_i |c_i| (|a_i x_j| + |b_i|) / alpha);
the kernels here and the dense reference both have forward error O(u * (n_bin + sqrt(s)))
times that scale, u = 2^-53, where n_bin is the largest number of neurons sharing one
boundary index (prefix sums over the bins are blocked, error O(sqrt(s)) instead of O(s)).
"""
from __future__ import annotations

import math

import numpy as np

from numerics.validation import (ArgumentTypeError, as_float_array, as_float_scalar,
                                 require_positive_int, require_same_shape, require_size)

__all__ = [
    "forward_sorted",
    "loss_and_grad_sorted",
    "preactivation",
    "require_sorted_size",
]

_U = 2.0 ** -53
_SPLIT = 134217729.0  # 2^27 + 1, Veltkamp's splitting constant for float64
_MARGIN = 8.0 * _U
_TINY = 4.0 * np.finfo(np.float64).smallest_subnormal
_BIG = np.finfo(np.float64).max
_BLOCK = 256  # block length of the blocked prefix sums
#: largest m + s (neurons plus samples) of one sorted-engine call: sorting and the
#: compensated sweep cost ~0.5 us per entry, so ~2 s of one core at the limit
MAX_SORTED_ENTRIES = 2 ** 22
#: largest m s of one :func:`preactivation` matrix: ~10 temporaries of m s entries, ~1 s of
#: one core and ~1.3 GiB at the limit (2^26 entries took 4.7 s)
MAX_PREACTIVATION_ENTRIES = 2 ** 24


def require_sorted_size(m: int, s: int) -> None:
    """A ValueError naming m + s, before any work, when one sorted-engine call on m neurons
    and s samples exceeds :data:`MAX_SORTED_ENTRIES` (``m`` and ``s`` are counts: an array
    or a negative number is refused by name)."""
    m = require_positive_int(m, "m (neurons)", minimum=0)
    s = require_positive_int(s, "s (samples)", minimum=0)
    require_size(m + s, "m + s (neurons plus samples)", limit=MAX_SORTED_ENTRIES,
                 hint="evaluate x in chunks of fewer samples")


# ---------------------------------------------------------------------------------------
# exact pre-activation sign
# ---------------------------------------------------------------------------------------
def _split(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLIT * v
    hi = t - (t - v)
    return hi, v - hi


def _compensated_preactivation(a: np.ndarray, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(fl(a x) - b) + err(a x)`` (broadcasting): its sign is the exact sign of a x - b
    and its value is within ~2u of the exact value (see the module docstring)."""
    p = a * x
    ah, al = _split(a)
    xh, xl = _split(x)
    err = ((ah * xh - p) + ah * xl + al * xh) + al * xl
    return (p - b) + err


def preactivation(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Dense (m, s) matrix of a_i x_j - b_i whose SIGN IS EXACT (compensated product).

    Dense O(m s) reference implementations should threshold this matrix (``> 0``) so that
    they follow the project's kink convention (ReLU(0) = ReLU'(0) = 0 on the exact value).
    |a_i|, |x_j| > 2^500 raise ValueError; for nonzero products |a_i x_j| < 2^-900 (where
    the splitting underflows) the sign is that of the compensated value, exact unless
    a_i x_j - b_i is itself below ~2^-1000."""
    a = as_float_array(a, "a", ndim=1)
    b = as_float_array(b, "b", ndim=1)
    x = as_float_array(x, "x", ndim=1)
    require_same_shape(a=a, b=b)
    require_size(a.size * x.size, "the (m, s) pre-activation matrix (len(a) x len(x))",
                 limit=MAX_PREACTIVATION_ENTRIES,
                 hint="pass fewer neurons or samples per call (chunk x)")
    _check_range(a, x, lower=False)  # below 2^-900 the sign is that of the rounded value
    return _compensated_preactivation(a[:, None], x[None, :], b[:, None])


# ---------------------------------------------------------------------------------------
# boundary indices and blocked prefix sums
# ---------------------------------------------------------------------------------------
def _boundaries(a: np.ndarray, b: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(k, pos)`` for sorted samples ``xs``: ``pos = a > 0``; neuron i is active exactly at
    sorted positions ``p >= k_i`` if pos_i, at ``p < k_i`` otherwise."""
    pos = a > 0
    zero = a == 0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        e = b / a
        if zero.any():  # a = 0: active everywhere iff b < 0 (k = s), else nowhere (k = 0)
            e[zero] = np.where(b[zero] < 0, _BIG, -_BIG)
        np.minimum(e, _BIG, out=e)  # b / a may overflow: clipped to +-_BIG
        np.maximum(e, -_BIG, out=e)
        margin = np.abs(e)
        margin *= _MARGIN
        margin += _TINY
        lo = xs.searchsorted(e - margin, side="left")  # e -+ margin may round to -+inf
        e += margin
        hi = xs.searchsorted(e, side="right")
    # Positions < lo satisfy the prefix property for certain, positions >= hi violate it.
    # Prefix property: a > 0: a x - b <= 0 (inactive);  a <= 0: a x - b > 0 (active).
    open_ = np.flatnonzero(lo < hi)
    while open_.size:
        l, h = lo[open_], hi[open_]
        mid = (l + h) >> 1
        ao = a[open_]
        sg = _compensated_preactivation(ao, xs[mid], b[open_]) > 0
        prop = np.where(ao > 0, ~sg, sg)
        lo[open_] = np.where(prop, mid + 1, l)
        hi[open_] = np.where(prop, h, mid)
        open_ = open_[lo[open_] < hi[open_]]
    return lo, pos


def _boundary_indices(a, b, x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, k, pos)``: ``order`` sorts ``x``; neuron i is active (a_i x - b_i > 0
    exactly) at the sorted samples ``x[order][p]`` with ``p >= k_i`` when ``pos_i``
    (a_i > 0) and with ``p < k_i`` otherwise (a_i <= 0)."""
    a = as_float_array(a, "a", ndim=1)
    b = as_float_array(b, "b", ndim=1)
    x = as_float_array(x, "x", ndim=1)
    require_same_shape(a=a, b=b)
    _check_range(a, x)
    order = np.argsort(x, kind="stable")
    k, pos = _boundaries(a, b, x[order])
    return order, k, pos


def _cumsum(v: np.ndarray) -> np.ndarray:
    """Inclusive prefix sums along the last axis, with error O(u (B + n / B)) * sum |v|
    (blocked, B = 256) instead of the O(u n) of a plain running sum."""
    n = v.shape[-1]
    if n <= 2 * _BLOCK:
        return v.cumsum(axis=-1)
    nb = -(-n // _BLOCK)
    w = np.zeros(v.shape[:-1] + (nb * _BLOCK,))
    w[..., :n] = v
    w = w.reshape(v.shape[:-1] + (nb, _BLOCK))
    inner = w.cumsum(axis=-1)
    offs = inner[..., -1].cumsum(axis=-1)
    inner[..., 1:, :] += offs[..., :-1, None]
    return inner.reshape(v.shape[:-1] + (nb * _BLOCK,))[..., :n]


def _prefix_suffix(v: np.ndarray) -> np.ndarray:
    """For v of shape (r, n): array (r, 2n + 2) = [S | P] with S[p] = sum_{q >= p} v_q and
    P[p] = sum_{q < p} v_q (p = 0..n), each summed from its own end (no total - prefix
    cancellation)."""
    r, n = v.shape
    out = np.zeros((r, 2 * n + 2))
    out[:, :n] = _cumsum(v[:, ::-1])[:, ::-1]
    out[:, n + 2:] = _cumsum(v)
    return out


# ---------------------------------------------------------------------------------------
# the sorted kernels
# ---------------------------------------------------------------------------------------
_MAX_MAG = 2.0 ** 500   # |a|, |x| bound of the exact sign test (Veltkamp splitting)
_MIN_PROD = 2.0 ** -900  # smallest nonzero |a x| for which the rounding error is exact


def _in_exact_range(a: np.ndarray, x: np.ndarray) -> bool:
    """Whether the finite float64 arrays ``a``, ``x`` lie in the exactness range of the
    kink test (|a_i|, |x_j| <= 2^500, nonzero |a_i x_j| >= 2^-900)."""
    try:
        _check_range(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    except ValueError:
        return False
    return True


def _check_range(a: np.ndarray, x: np.ndarray, *, lower: bool = True) -> None:
    """The documented exactness range of the kink test: |a_i|, |x_j| <= 2^500 and every
    nonzero product |a_i x_j| >= 2^-900 (checked via the smallest nonzero magnitudes)."""
    amag, xmag = np.abs(a), np.abs(x)
    amax = float(amag.max(initial=0.0))
    xmax = float(xmag.max(initial=0.0))
    if amax > _MAX_MAG or xmax > _MAX_MAG:
        name = "a" if amax > _MAX_MAG else "x"
        raise ValueError(f"{name} has entries beyond 2^500 ~ 3.3e150 (max |{name}| = "
                         f"{max(amax, xmax):.3g}): outside the range of the exact kink test; "
                         "rescale (a, b, c) -> (k a, k b, c / k) or the inputs x")
    if not lower:
        return
    if _min_nonzero(amag) * _min_nonzero(xmag) < _MIN_PROD:  # inf if all zero: no test
        raise ValueError("a nonzero product |a_i x_j| is below 2^-900 ~ 1.2e-271: outside the "
                         "range of the exact kink test; rescale a or x (or set tiny entries to 0)")


def _min_nonzero(mags: np.ndarray) -> float:
    """The smallest nonzero entry of the magnitudes ``mags`` (inf if there is none)."""
    lo = float(mags.min(initial=np.inf))
    if lo == 0.0:
        nz = mags[mags != 0]
        lo = float(nz.min()) if nz.size else np.inf
    return lo


def _validate(a, b, c, x, alpha_value, y=None) -> tuple[np.ndarray, ...]:
    """Arrays as validated float64 (finite, matching shapes, inside the documented range
    of the kink test); a cheap pre-check (all inputs already 1-D float64 arrays of matching
    shapes with a finite sum) skips the per-array checks of ``numerics.validation``, which
    run otherwise and produce the error messages."""
    if type(alpha_value) is float or type(alpha_value) is np.float64:  # fast path
        alpha = float(alpha_value)
        if not (alpha > 0 and alpha < np.inf):
            alpha = as_float_scalar(alpha_value, "alpha_value", lo=0.0, lo_open=True)
    else:  # refuses strings, None, booleans, complex numbers with the argument's name
        alpha = as_float_scalar(alpha_value, "alpha_value", lo=0.0, lo_open=True)
    arrs = (a, b, c, x) if y is None else (a, b, c, x, y)
    if all(hasattr(v, "size") for v in (a, x)):   # before any copy of a huge (view) input
        require_sorted_size(int(a.size), int(x.size))
    if (all(type(v) is np.ndarray and v.dtype == np.float64 and v.ndim == 1 for v in arrs)
            and a.shape == b.shape == c.shape and (y is None or x.shape == y.shape)):
        with np.errstate(over="ignore", invalid="ignore"):
            total = a.sum() + b.sum() + c.sum() + x.sum() + (0.0 if y is None else y.sum())
        if np.isfinite(total):  # NaN/inf in any input makes the sum non-finite
            _check_range(a, x)
            return (*arrs, alpha)
    a = as_float_array(a, "a", ndim=1)
    b = as_float_array(b, "b", ndim=1)
    c = as_float_array(c, "c", ndim=1)
    x = as_float_array(x, "x", ndim=1)
    require_same_shape(a=a, b=b, c=c)
    require_sorted_size(a.size, x.size)
    _check_range(a, x)
    if y is None:
        return a, b, c, x, alpha
    y = as_float_array(y, "y", ndim=1)
    require_same_shape(x=x, y=y)
    return a, b, c, x, y, alpha


def _finite(name: str, v) -> None:
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} overflows float64 (|c| (|a x| + |b|) / alpha_value too large); "
                         "rescale c or increase alpha_value")


def _sort_samples(x: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    if x.size < 2 or (x[1:] >= x[:-1]).all():
        return None, x
    order = x.argsort(kind="stable")
    return order, x[order]


def _forward_sorted_xs(a, b, c, xs, alpha) -> tuple[np.ndarray, np.ndarray]:
    """``(f_sorted, bin)`` on sorted samples; ``bin`` is k_i for a_i > 0 and s + 1 + k_i
    for a_i <= 0 (an index into the [suffix | prefix] sums of ``_prefix_suffix``)."""
    s = xs.size
    k, pos = _boundaries(a, b, xs)
    # bins 0..s: suffix group (a > 0, active at p iff k_i <= p);
    # bins s+1..2s+1: prefix group (a <= 0, active at p iff k_i > p, i.e. bin >= s+2+p)
    idx = k  # a fresh array of _boundaries: shifted in place for the prefix group
    np.add(idx, s + 1, out=idx, where=~pos)
    W = np.empty((2, 2 * s + 2))
    W[0] = np.bincount(idx, weights=c * a, minlength=2 * s + 2)
    W[1] = np.bincount(idx, weights=c * b, minlength=2 * s + 2)
    AB = _cumsum(W[:, :s])  # suffix group, inclusive prefix over bins 0..p
    # W[:, :s:-1] lists bins 2s+1 down to s+1; its running sum, reversed, at q is the sum
    # of bins s+1+q..2s+1; the prefix group needs q = p + 1.
    AB += _cumsum(W[:, :s:-1])[:, ::-1][:, 1:]
    f_sorted = (xs * AB[0] - AB[1]) / alpha
    return f_sorted, idx


def forward_sorted(a, b, c, x, alpha_value) -> np.ndarray:
    """f_z(x_j) = (1/alpha) sum_i c_i (a_i x_j - b_i)_+ for all samples in
    O((m + s) log(m + s)) (docs/conventions.md, section 1; kink convention ReLU(0) = 0, exact sign)."""
    a, b, c, x, alpha = _validate(a, b, c, x, alpha_value)
    order, xs = _sort_samples(x)
    with np.errstate(over="ignore", invalid="ignore"):
        f_sorted, _ = _forward_sorted_xs(a, b, c, xs, alpha)
    _finite("f_z(x)", f_sorted)
    if order is None:
        return f_sorted
    f = np.empty_like(f_sorted)
    f[order] = f_sorted
    return f


def loss_and_grad_sorted(a, b, c, x, y, alpha_value
                         ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(L, (dL/da, dL/db, dL/dc))`` for L = 1/2 sum_j (f_z(x_j) - y_j)^2 (docs/conventions.md, section 1)
    in O((m + s) log(m + s)); ReLU'(0) = 0 at a kink (exact sign of a_i x_j - b_i)."""
    if y is None:
        raise ArgumentTypeError("y (targets) must be an array of the same shape as x; got None")
    a, b, c, x, y, alpha = _validate(a, b, c, x, alpha_value, y)
    order, xs = _sort_samples(x)
    ys = y if order is None else y[order]
    with np.errstate(over="ignore", invalid="ignore"):
        f_sorted, idx = _forward_sorted_xs(a, b, c, xs, alpha)
        rho = f_sorted - ys
        loss = 0.5 * float(rho @ rho)
    if not math.isfinite(loss):
        _finite("the loss 1/2 sum (f_z(x_j) - y_j)^2", loss)
    V = np.empty((2, rho.size))
    V[0] = rho
    np.multiply(rho, xs, out=V[1])
    R = np.take(_prefix_suffix(V), idx, axis=1)  # R[0] = R0_i, R[1] = R1_i
    R0, R1 = R[0], R[1]
    R *= 1.0 / alpha
    grad_a = c * R1
    grad_b = c * R0
    np.negative(grad_b, out=grad_b)
    grad_c = a * R1
    grad_c -= b * R0
    with np.errstate(over="ignore", invalid="ignore"):  # a non-finite entry: a non-finite sum
        total = grad_a.sum() + grad_b.sum() + grad_c.sum()
    if not np.isfinite(total):  # (or finite entries whose sum overflows: test each)
        _finite("the gradient", np.concatenate([grad_a, grad_b, grad_c]))
    return loss, (grad_a, grad_b, grad_c)


# ---------------------------------------------------------------------------------------
# dense O(m s) reference (tests and benchmark only)
# ---------------------------------------------------------------------------------------
def _forward_dense_reference(a, b, c, x, alpha_value) -> np.ndarray:
    """Dense O(m s) f_z(x_j) with the same kink convention (reference for tests)."""
    a, b, c, x, alpha = _validate(a, b, c, x, alpha_value)
    H = np.maximum(_compensated_preactivation(a[:, None], x[None, :], b[:, None]), 0.0)
    return (c @ H) / alpha


def _loss_and_grad_dense_reference(a, b, c, x, y, alpha_value
                                  ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Dense O(m s) loss and gradient with the same kink convention (reference for tests)."""
    a, b, c, x, alpha = _validate(a, b, c, x, alpha_value)
    y = as_float_array(y, "y", ndim=1)
    require_same_shape(x=x, y=y)
    Z = _compensated_preactivation(a[:, None], x[None, :], b[:, None])
    active = Z > 0
    H = np.where(active, Z, 0.0)
    rho = (c @ H) / alpha - y
    loss = 0.5 * float(np.dot(rho, rho))
    D = active * rho  # rho_j on the active set
    R0 = D.sum(axis=1)
    R1 = D @ x
    grad_a = c * R1 / alpha
    grad_b = -c * R0 / alpha
    grad_c = (H @ rho) / alpha
    return loss, (grad_a, grad_b, grad_c)


# ---------------------------------------------------------------------------------------
# agreement metric
# ---------------------------------------------------------------------------------------
def _error_scales(a, b, c, x, y, alpha_value) -> dict[str, np.ndarray | float]:
    """Scales of the summed magnitudes (dense O(m s)), the denominators of
    :func:`_relative_discrepancy`:

    - ``f``:  S_j = sum_i |c_i| (|a_i x_j| + |b_i|) / alpha,
    - residual scale  T_j = S_j + |y_j|  (bound on the terms that make rho_j),
    - ``loss``: sum_j T_j^2,
    - ``grad_a``: |c_i| sum_j T_j |x_j| / alpha,  ``grad_b``: |c_i| sum_j T_j / alpha,
    - ``grad_c``: sum_j T_j (|a_i x_j| + |b_i|) / alpha.
    A rounding error in any term of the sum is at most u times these numbers (times a
    small summation-length factor)."""
    a, b, c, x, alpha = _validate(a, b, c, x, alpha_value)
    y = as_float_array(y, "y", ndim=1)
    M = np.abs(a)[:, None] * np.abs(x)[None, :] + np.abs(b)[:, None]
    S = (np.abs(c) @ M) / alpha
    T = S + np.abs(y)
    return {"f": S, "loss": float(np.sum(T * T)),
            "grad_a": np.abs(c) * (T @ np.abs(x)) / alpha,
            "grad_b": np.abs(c) * T.sum() / alpha,
            "grad_c": (M @ T) / alpha}


def _relative_discrepancy(result, reference, scales: dict) -> float:
    """max over outputs and components of |result - reference| / scale (scale from
    :func:`_error_scales`; a zero scale means both must be exactly 0).  ``result`` and
    ``reference`` are ``(loss, (grad_a, grad_b, grad_c))`` or forward arrays ``f``."""
    def one(u, v, sc) -> float:
        u, v, sc = np.asarray(u, float), np.asarray(v, float), np.asarray(sc, float)
        diff = np.abs(u - v)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(sc > 0, diff / np.where(sc > 0, sc, 1.0), np.where(diff > 0, np.inf, 0.0))
        return float(np.max(r)) if r.size else 0.0

    if isinstance(result, tuple):
        (l1, g1), (l2, g2) = result, reference
        errs = [one(l1, l2, scales["loss"])]
        errs += [one(u, v, scales[n]) for u, v, n in zip(g1, g2, ("grad_a", "grad_b", "grad_c"))]
        return max(errs)
    return one(result, reference, scales["f"])
