"""Kernels of 1-D ReLU networks in the kernel regime (Williams et al. 2019, Sec. 4, Thm 5;
claims W3a-W3e): ``rf_kernel``, ``ntk_kernel``, ``active_probability``, ``rkhs_weight``,
``kernel_interpolant``.

Initializations (docs/conventions.md, section 1): ``"uniform"``: (a, b) ~ U([-1, 1]^2); ``"gaussian"``:
(a, b) ~ N(0, I_2).  Every value is the evaluation of a derived result, read at call time
from :mod:`verify.derived` (a perturbed derivation reaches the formulas):

* uniform K_RF, P and K_NTK: the derived Piecewise expressions for all real x, x' (W3a
  ``K_RF``, W3d ``P_uniform``, ``ntk_uniform``: the sign split assembled in the derivation);
* gaussian float64 values: the derived stable rewrite (W3c ``rf_stable``, W3d
  ``P_gaussian_stable``, ``ntk_gaussian_stable``: atan2(|x - x'|, -(1 + x x')) for
  pi - phi and a derived Taylor polynomial where 1 + x x' < 0 cancels), proven equal to the
  primary arc-cosine form at 50 digits in the derivation; ``.mpmath`` evaluates the
  primary form with guarded precision;
* ``rkhs_weight``: the lambdified derived omega (W3e).

Outside |x|, |x'| <= 1e4 every value is taken from the derived expression in mpmath and
rounded; a result beyond the float64 range raises ``ValueError`` naming the overflow.
Each formula has ``.mpmath(..., dps=30)``, ``.enclose(..., prec=128)`` (certified Arb balls
of the derived primary closed form, ``verify.certify``) and ``.ulp_bound[init]`` (the stated
float64 error bound, tested against those balls at 10^4 inputs per entry).

>>> from verify import formulas
>>> round(float(formulas.rf_kernel(0.5, 1/3, init="gaussian")), 10)
0.5835116033
>>> f = formulas.kernel_interpolant([-0.5, 0.0, 0.5], [1.0, -1.0, 1.0])
>>> [round(float(v), 12) for v in f([-0.5, 0.0, 0.5])]
[1.0, -1.0, 1.0]
"""
from __future__ import annotations

from typing import Any, Callable

import mpmath
import numpy as np
import scipy.linalg
import sympy as sp

from derivations import williams_kernels as dk
from numerics.validation import as_float_array, require_choice, require_distinct
from verify import derived
from verify.formulas._base import DerivedFunction, UlpBound, check_dps, enclose_grid

__all__ = ["rf_kernel", "ntk_kernel", "active_probability", "rkhs_weight",
           "kernel_interpolant", "KernelInterpolant"]

INITS = dk.INITS
KERNELS = ("rf", "ntk")
FLOAT_RANGE = 1e4      # |x|, |x'| up to which the float64 evaluators are used (verified)
MAX_CONDITION = 1e12   # Gram condition number above which an interpolant is refused

# The stated float64 error bounds (tests/test_certify.py checks them against the Arb balls
# of .enclose at 10^4 inputs per entry, |x|, |x'| from 1e-8 to 1e6, breakpoints included).
# Beyond |x| = FLOAT_RANGE the value is the 20-digit mpmath one, rounded: 1/2 ulp.
_VALUE = "value (|exact|)"
RF_ULPS = {
    "uniform": UlpBound(32, _VALUE, "a short polynomial / rational piece of the derived "
                        "Piecewise (<= 12 terms of like sign after the sign split; measured 7.8)"),
    "gaussian": UlpBound(128, _VALUE, "stable form: c >= 0 sums two terms >= 0; c < 0, t >= 1/4 "
                         "computes |c|(t - atan t), cancelling by at most t/(t - atan t) <= 49 "
                         "at t = 1/4; t < 1/4 the derived series (no cancellation); measured 21")}
PROB_ULPS = {
    "uniform": UlpBound(8, _VALUE, "a rational function of max/min of two terms (measured 1)"),
    "gaussian": UlpBound(8, _VALUE, "atan2(|x - x'|, -(1 + x x')) / (2 pi): atan2 to 1-2 ulp, "
                         "inputs exact up to 1 rounding each (measured 1.7)")}
NTK_ULPS = {init: UlpBound(16, "scale K_RF + sigma_c^2 |1 + x x'| P of the two terms",
                           "K_NTK = K_RF + sigma_c^2 (1 + x x') P cancels for x x' < -1: each "
                           "term to <= 8 ulps of itself, the sum to ulps of their scale "
                           "(measured 3.3)") for init in INITS}
OMEGA_ULPS = {"uniform": UlpBound(4, _VALUE, "1/8 or 1/(8 x^4): <= 3 roundings"),
              "gaussian": UlpBound(8, _VALUE, "2/(pi (1 + x^2)^2): <= 5 roundings")}


# ------------------------------------------------------------------------ validation
def _pair(x: Any, xp: Any) -> tuple[np.ndarray, np.ndarray]:
    x = as_float_array(x, "x")
    xp = as_float_array(xp, "xp")
    try:
        np.broadcast_shapes(x.shape, xp.shape)
    except ValueError:
        raise ValueError(f"x and xp must have equal or broadcastable shapes; got {x.shape} "
                         f"and {xp.shape} (use x[:, None], xp[None, :] for a Gram matrix)") from None
    return x, xp


def _from_mp(v: Any) -> Any:
    """mpf scalars / object arrays of mpf (as ``verify.testing`` passes them) -> float64:
    the mpmath paths take float64 inputs exactly."""
    if isinstance(v, mpmath.mpf):
        return float(v)
    if isinstance(v, np.ndarray) and v.dtype == object and all(isinstance(t, mpmath.mpf) for t in v.ravel()):
        return v.astype(np.float64)
    return v


def _mp_pair(x: Any, xp: Any) -> tuple[np.ndarray, np.ndarray]:
    return _pair(_from_mp(x), _from_mp(xp))


def _sigma(sigma_c: Any) -> float:
    sc = as_float_array(sigma_c, "sigma_c (the standard deviation of the output weights c)")
    if sc.ndim != 0:
        raise ValueError(f"sigma_c must be a single number; got an array of shape {sc.shape}")
    if sc < 0:
        raise ValueError(f"sigma_c must be >= 0; got {float(sc)}")
    return float(sc)


def _init(init: Any) -> str:
    return require_choice(init, "init", INITS)


def _overflow(name: str, where: str) -> ValueError:
    return ValueError(f"{name}: the result at {where} exceeds the float64 range (overflow); "
                      "use .mpmath(...) for a high-precision value")


def _to_float(values: np.ndarray, name: str, points: Callable[[int], str]) -> np.ndarray:
    """mpf object array -> float64, raising on overflow."""
    out = np.empty(values.shape)
    for i, v in enumerate(values.ravel()):
        if abs(v) > np.finfo(np.float64).max:
            raise _overflow(name, points(i))
        out.ravel()[i] = float(v)
    return out


# ------------------------------------------------------------- derived evaluators
#: (claim, result key) of the expression each formula evaluates: "float" the float64 form
#: (uniform: the derived Piecewise for all real x, x'; gaussian: the derived stable rewrite),
#: "mp" the primary closed form (evaluated in mpmath with guarded precision)
_SOURCES = {
    ("rf", "uniform"): {"float": ("W3a", "K_RF"), "mp": ("W3a", "K_RF")},
    ("rf", "gaussian"): {"float": ("W3c", "rf_stable"), "mp": ("W3c", "rf")},
    ("prob", "uniform"): {"float": ("W3d", "P_uniform"), "mp": ("W3d", "P_uniform")},
    ("prob", "gaussian"): {"float": ("W3d", "P_gaussian_stable"), "mp": ("W3d", "P_gaussian")},
    ("ntk", "uniform"): {"float": ("W3d", "ntk_uniform"), "mp": ("W3d", "ntk_uniform")},
    ("ntk", "gaussian"): {"float": ("W3d", "ntk_gaussian_stable"), "mp": ("W3d", "ntk_gaussian")},
}


def _derived_fn(which: str, init: str, kind: str) -> Callable[..., Any]:
    """The lambdified derived expression (arguments x, x' and, for the NTK, sigma_c)."""
    cid, key = _SOURCES[(which, init)][kind]
    args = (dk.x, dk.xp, dk.sigma_c) if which == "ntk" else (dk.x, dk.xp)
    return derived.lambdified(cid, key, args, modules="numpy" if kind == "float" else "mpmath")


def _float_value(which: str, init: str, *extra: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """float64 evaluator of the derived expression on broadcast arrays."""
    def fn(p: np.ndarray, q: np.ndarray) -> np.ndarray:
        out = _derived_fn(which, init, "float")(p, q, *extra)
        return np.broadcast_to(np.asarray(out, dtype=np.float64), np.broadcast_shapes(p.shape, q.shape))
    return fn


def _mp_value(which: str, init: str, x: Any, xp: Any, *extra: Any) -> Any:
    """One value of K_RF ("rf"), P ("prob") or K_NTK ("ntk", extra = (sigma_c,)) from the
    derived primary expression in mpmath."""
    return _derived_fn(which, init, "mp")(x, xp, *extra)


def _evaluate(name: str, init: str, x: np.ndarray, xp: np.ndarray,
              float_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
              mp_fn: Callable[[Any, Any], Any]) -> np.ndarray | float:
    """float64 evaluator on |x|, |x'| <= FLOAT_RANGE; mpmath of the derived expression
    elsewhere (30 digits, rounded; ValueError on overflow)."""
    x, xp = (np.array(v, dtype=np.float64) for v in np.broadcast_arrays(x, xp))
    inside = (np.abs(x) <= FLOAT_RANGE) & (np.abs(xp) <= FLOAT_RANGE)
    out = np.empty(x.shape)
    if np.any(inside):
        with np.errstate(all="ignore"):
            out[inside] = float_fn(x[inside], xp[inside])
    outside = ~inside
    if np.any(outside):
        xo, xpo = x[outside], xp[outside]
        vals = np.array([_mp_accurate(mp_fn, (float(p), float(q)), 20) for p, q in zip(xo, xpo)],
                        dtype=object)
        out[outside] = _to_float(vals, name, lambda i: f"(x, xp) = ({xo[i]!r}, {xpo[i]!r})")
    bad = ~np.isfinite(out)
    if np.any(bad):  # an intermediate overflowed: the derived expression decides
        xb, xpb = x[bad], xp[bad]
        vals = np.array([_mp_accurate(mp_fn, (float(p), float(q)), 20) for p, q in zip(xb, xpb)],
                        dtype=object)
        out[bad] = _to_float(vals, name, lambda i: f"(x, xp) = ({xb[i]!r}, {xpb[i]!r})")
    return out[()] if out.ndim == 0 else out


_MAX_WORK_DPS = 8000  # cancellation guard: working precision is doubled up to this


def _mp_accurate(fn: Callable[..., Any], vals: tuple[float, ...], dps: int) -> Any:
    """``fn(*vals)`` correct to ``dps`` digits: the derived expressions cancel (e.g.
    |x - x'| + (pi - phi)(1 + x x') for x x' << -1), so the working precision is doubled
    until two evaluations agree to dps + 3 digits, starting from dps + 10 + 3 log10 max|x|
    digits (the cancelling terms grow at most like |x|^2 while pi - phi shrinks like 1/|x|;
    without this start, pi - phi rounds to 0 at every low precision and agreement is false)."""
    big = max([abs(v_) for v_ in vals] + [1.0])
    work, prev = dps + 10 + int(3 * np.log10(big)), None
    while True:
        with mpmath.workdps(work):
            v = fn(*(mpmath.mpf(v_) for v_ in vals))
        if prev is not None and (v == prev or abs(v - prev) <= abs(v) * mpmath.mpf(10) ** (-dps - 3)):
            with mpmath.workdps(dps):
                return +v
        if work >= _MAX_WORK_DPS:
            raise ValueError(f"no {dps}-digit value at {vals} within {_MAX_WORK_DPS} working "
                             "digits (catastrophic cancellation)")
        prev, work = v, 2 * work


def _mp_grid(fn: Callable[..., Any], args: tuple, dps: int) -> Any:
    """``fn`` to ``dps`` digits on broadcast float arguments (exact float64 inputs)."""
    dps = check_dps(dps)
    if all(np.ndim(v) == 0 for v in args):
        return _mp_accurate(fn, tuple(float(v) for v in args), dps)
    b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in args))
    out = np.empty(b[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = _mp_accurate(fn, tuple(float(v[idx]) for v in b), dps)
    return out


# ----------------------------------------------------------------------- the formulas
def _rf_kernel(x: Any, xp: Any, init: str = "uniform") -> np.ndarray | float:
    x, xp = _pair(x, xp)
    init = _init(init)
    return _evaluate("rf_kernel", init, x, xp, _float_value("rf", init),
                     lambda p, q: _mp_value("rf", init, p, q))


def _rf_kernel_mp(x: Any, xp: Any, init: str = "uniform", dps: int = 30) -> Any:
    x, xp = _mp_pair(x, xp)
    init = _init(init)
    return _mp_grid(lambda p, q: _mp_value("rf", init, p, q), (x, xp), dps)


def _active_probability(x: Any, xp: Any, init: str = "uniform") -> np.ndarray | float:
    x, xp = _pair(x, xp)
    init = _init(init)
    return _evaluate("active_probability", init, x, xp, _float_value("prob", init),
                     lambda p, q: _mp_value("prob", init, p, q))


def _active_probability_mp(x: Any, xp: Any, init: str = "uniform", dps: int = 30) -> Any:
    x, xp = _mp_pair(x, xp)
    init = _init(init)
    return _mp_grid(lambda p, q: _mp_value("prob", init, p, q), (x, xp), dps)


def _ntk_kernel(x: Any, xp: Any, init: str = "uniform", sigma_c: float = 1.0) -> np.ndarray | float:
    x, xp = _pair(x, xp)
    init = _init(init)
    sc = _sigma(sigma_c)

    return _evaluate("ntk_kernel", init, x, xp, _float_value("ntk", init, np.float64(sc)),
                     lambda p, q: _mp_value("ntk", init, p, q, mpmath.mpf(sc)))


def _ntk_kernel_mp(x: Any, xp: Any, init: str = "uniform", sigma_c: float = 1.0, dps: int = 30) -> Any:
    x, xp = _mp_pair(x, xp)
    init = _init(init)
    sc = _sigma(sigma_c)
    return _mp_grid(lambda p, q: _mp_value("ntk", init, p, q, mpmath.mpf(sc)), (x, xp), dps)


def _arb_fn(which: str, init: str) -> Callable[..., Any]:
    """The derived PRIMARY closed form compiled to Arb balls (``verify.certify``; cached
    until a derivation changes)."""
    from verify import certify
    cid, key = _SOURCES[(which, init)]["mp"]
    args = (dk.x, dk.xp, dk.sigma_c) if which == "ntk" else (dk.x, dk.xp)
    gen = derived.generation()
    memo = _ARB_MEMO.get((which, init))
    if memo is None or memo[0] != gen:
        memo = (gen, certify.arb_function(derived.results(cid)[key], args))
        _ARB_MEMO[(which, init)] = memo
    return memo[1]


_ARB_MEMO: dict[tuple[str, str], tuple[int, Callable[..., Any]]] = {}


def _kernel_enclose(which: str) -> Callable[..., Any]:
    def enclose(x: Any, xp: Any, init: str = "uniform", sigma_c: float = 1.0, *, prec: int = 128) -> Any:
        x, xp = _mp_pair(x, xp)
        init = _init(init)
        fn = _arb_fn(which, init)
        if which == "ntk":
            sc = _sigma(sigma_c)
            return enclose_grid(lambda p, q: fn(p, q, sc), (x, xp), prec)
        return enclose_grid(fn, (x, xp), prec)
    return enclose


def _kernel_exprs(which: str) -> dict[str, sp.Expr]:
    """The derived primary closed forms, by init."""
    out = {}
    for init in INITS:
        cid, key = _SOURCES[(which, init)]["mp"]
        out[init] = derived.results(cid)[key]
    return out


#: cost of one entry of the kernels' float64 forms (ns; measured up to 512, gaussian K_RF)
_KERNEL_ENTRY_NS = 1000

rf_kernel = DerivedFunction(
    "rf_kernel", "W3a", """K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+] (Williams et al. 2019,
Sec. 4; claims W3a (uniform, all real x, x') and W3c (gaussian, arc-cosine form)).

``rf_kernel(x, xp, init="uniform"|"gaussian")``: x, xp real arrays (broadcast).
``rf_kernel.mpmath(x, xp, init=..., dps=30)``: the derived expression in mpmath.
``.expr``: the derived expressions, a dict by init.

>>> round(float(rf_kernel(0.0, 0.0)), 12)   # E[(-b)_+^2] = 1/6
0.166666666667
""", lambda: _kernel_exprs("rf"), _rf_kernel, _rf_kernel_mp, _kernel_enclose("rf"), RF_ULPS,
    entry_ns=_KERNEL_ENTRY_NS)

active_probability = DerivedFunction(
    "active_probability", "W3d", """P(a x > b, a x' > b) (claim W3d).

``active_probability(x, xp, init=...)``; ``.mpmath(x, xp, init=..., dps=30)``.

>>> float(active_probability(0.3, 0.3, init="gaussian"))
0.5
""", lambda: _kernel_exprs("prob"), _active_probability, _active_probability_mp,
    _kernel_enclose("prob"), PROB_ULPS, entry_ns=_KERNEL_ENTRY_NS)

ntk_kernel = DerivedFunction(
    "ntk_kernel", "W3d", """K_NTK(x, x') = K_RF(x, x') + sigma_c^2 (1 + x x')
P(a x > b, a x' > b) (alpha(m) = sqrt(m), all layers trained, E c^2 = sigma_c^2; claim W3d).

``ntk_kernel(x, xp, init=..., sigma_c=1.0)``; ``.mpmath(x, xp, init=..., sigma_c=1.0, dps=30)``.

Accuracy of the float64 value: within ``ntk_kernel.ulp_bound[init]`` = 16 ulps (2^-52) of
the scale K_RF + sigma_c^2 |1 + x x'| P of the two terms (measured at most 3.3 over 2 x 10^4
inputs against the certified balls of ``ntk_kernel.enclose``; tests/test_certify.py).  For x x' < -1 the terms have opposite
signs and K_NTK crosses zero: near that curve its relative accuracy is limited by the
cancellation (at K_NTK = 1e-9 of the scale, 3e-8 relative); ``.mpmath`` gives any digits.

>>> round(float(ntk_kernel(0.0, 0.0, init="uniform", sigma_c=1.0)), 12)  # 1/6 + 1/2
0.666666666667
""", lambda: _kernel_exprs("ntk"), _ntk_kernel, _ntk_kernel_mp, _kernel_enclose("ntk"), NTK_ULPS,
    entry_ns=_KERNEL_ENTRY_NS)


def _rkhs_weight(x: Any, init: str = "uniform") -> np.ndarray | float:
    xv = as_float_array(x, "x")
    init = _init(init)
    fn = derived.lambdified("W3e", f"omega_{init}", dk.x, modules="numpy")
    with np.errstate(all="ignore"):
        out = np.broadcast_to(np.asarray(fn(xv), dtype=np.float64), xv.shape).copy()
    if not np.all(np.isfinite(out)):
        raise ValueError("rkhs_weight: non-finite value (overflow); use .mpmath(...)")
    return out[()] if out.ndim == 0 else out


def _rkhs_weight_mp(x: Any, init: str = "uniform", dps: int = 30) -> Any:
    xv = as_float_array(_from_mp(x), "x")
    fn = derived.lambdified("W3e", f"omega_{_init(init)}", dk.x, modules="mpmath")
    return _mp_grid(fn, (xv,), dps)


def _rkhs_enclose(x: Any, init: str = "uniform", *, prec: int = 128) -> Any:
    from verify import certify
    xv = as_float_array(_from_mp(x), "x")
    fn = certify.arb_function(derived.results("W3e")[f"omega_{_init(init)}"], (dk.x,))
    return enclose_grid(fn, (xv,), prec)


rkhs_weight = DerivedFunction(
    "rkhs_weight", "W3e", """omega(x) = int |a|^3 p_0(a, a x) da (claim W3e): the RKHS norm
of the random-feature kernel is int f''(x)^2 / omega(x) dx plus an affine part, and
d^2/dx^2 K_RF(x, x') = omega(x) |x - x'| / 2.  uniform: 1/8 on [-1, 1], 1/(8 x^4)
outside; gaussian: 2 / (pi (1 + x^2)^2).

``rkhs_weight(x, init=...)``; ``.mpmath(x, init=..., dps=30)``.

>>> float(rkhs_weight(0.5, init="uniform"))
0.125
""", lambda: {i: derived.results("W3e")[f"omega_{i}"] for i in INITS}, _rkhs_weight, _rkhs_weight_mp,
    _rkhs_enclose, OMEGA_ULPS)


# --------------------------------------------------------------------- interpolants
def _interpolation_data(x_data: Any, y_data: Any, kernel: Any, init: Any, sigma_c: Any
                        ) -> tuple[np.ndarray, np.ndarray, str, str, float]:
    xd = as_float_array(x_data, "x_data", ndim=1, allow_empty=False)
    yd = as_float_array(y_data, "y_data", ndim=1, allow_empty=False)
    if xd.shape != yd.shape:
        raise ValueError(f"x_data and y_data must have the same shape; got {xd.shape} and {yd.shape}")
    require_distinct(xd, "x_data")
    kernel = require_choice(kernel, "kernel", KERNELS)
    return xd, yd, kernel, _init(init), _sigma(sigma_c)


class KernelInterpolant:
    """f(x) = sum_j alpha_j K(x, x_j) with K alpha = y (the m -> infinity limit of min-norm
    training, docs/conventions.md, section 1; claims W3b, W3f).  Vectorized: ``f(x_array)``; attributes
    ``x_data``, ``y_data``, ``coefficients``, ``kernel``, ``init``, ``sigma_c``,
    ``condition`` (2-norm condition number of the Gram matrix).

    Raises ``ValueError`` when the Gram matrix is too ill-conditioned for the coefficients
    to carry any accuracy (condition number > 1e12: near-duplicate data points)."""

    claim = "W3b"

    def __init__(self, x_data: Any, y_data: Any, kernel: str = "rf", init: str = "uniform",
                 sigma_c: float = 1.0):
        xd, yd, kernel, init, sc = _interpolation_data(x_data, y_data, kernel, init, sigma_c)
        self.x_data, self.y_data = xd, yd
        self.kernel, self.init, self.sigma_c = kernel, init, sc
        try:
            gram = self.kernel_matrix(xd[:, None], xd[None, :])
        except ValueError as exc:  # overflow of K(x_i, x_j): name the argument at fault
            raise ValueError(f"x_data is too large: the {kernel} Gram matrix K(x_i, x_j) of "
                             f"x_data (max |x_data| = {float(np.max(np.abs(xd))):.3g}) is not "
                             f"representable in float64 ({exc}); rescale x_data") from exc
        lam = np.linalg.eigvalsh((gram + gram.T) / 2)
        self.condition = float(lam[-1] / lam[0]) if lam[0] > 0 else float("inf")
        if not self.condition <= MAX_CONDITION:
            gap = float(np.min(np.diff(np.sort(xd)))) if xd.size > 1 else float("nan")
            raise ValueError(
                f"x_data has near-duplicate points (smallest gap {gap:.3g}): the {kernel} Gram "
                f"matrix has condition number {self.condition:.3g} > {MAX_CONDITION:.0e}, so the "
                "coefficients would carry no accurate digits; merge or drop points closer than "
                "about 1e-3 of the data range")
        with np.errstate(all="ignore"):
            self.coefficients = scipy.linalg.solve(gram, yd, assume_a="pos")
            fitted = gram @ self.coefficients
        if not (np.all(np.isfinite(self.coefficients)) and np.all(np.isfinite(fitted))):
            raise ValueError("y_data is too large: the interpolation coefficients K^-1 y_data "
                             "or the sums K alpha overflow float64; rescale y_data")
        self._factor = 1.0

    def kernel_matrix(self, x: np.ndarray, xp: np.ndarray) -> np.ndarray:
        if self.kernel == "rf":
            return _rf_kernel(x, xp, init=self.init)
        return _ntk_kernel(x, xp, init=self.init, sigma_c=self.sigma_c)

    def __call__(self, x: Any) -> np.ndarray | float:
        xv = as_float_array(x, "x")
        flat = xv.reshape(-1)
        with np.errstate(all="ignore"):
            out = self.kernel_matrix(flat[:, None], self.x_data[None, :]) @ self.coefficients
        if not np.all(np.isfinite(out)):
            raise ValueError("the interpolant's value sum_j alpha_j K(x, x_j) overflows float64 "
                             "at some x (x too far from the data for these coefficients); "
                             "evaluate closer to x_data or rescale y_data")
        out = out.reshape(xv.shape)
        return float(out) if out.ndim == 0 else out

    def _perturbed(self, factor: float) -> "KernelInterpolant":
        """A copy whose values (and coefficients) are ``factor`` times these (mutation testing)."""
        new = object.__new__(KernelInterpolant)
        new.__dict__.update(self.__dict__)
        new.coefficients = self.coefficients * factor
        new._factor = self._factor * factor
        return new

    def __repr__(self) -> str:
        return (f"<KernelInterpolant {self.kernel}/{self.init} through {self.x_data.size} "
                f"points>")


class MpKernelInterpolant:
    """The kernel interpolant in mpmath at ``dps`` digits (Gram matrix from the derived
    expressions, LU solve in mpmath): ``f(x)`` gives an ``mpf`` (scalar) or an object array."""

    def __init__(self, x_data: Any, y_data: Any, kernel: str = "rf", init: str = "uniform",
                 sigma_c: float = 1.0, dps: int = 30):
        xd, yd, kernel, init, sc = _interpolation_data(x_data, y_data, kernel, init, sigma_c)
        self.dps = check_dps(dps)
        self.x_data, self.y_data, self.kernel, self.init, self.sigma_c = xd, yd, kernel, init, sc
        with mpmath.workdps(self.dps):
            X = [mpmath.mpf(float(v)) for v in xd]
            G = mpmath.matrix(len(X), len(X))
            for i, p in enumerate(X):
                for j, q in enumerate(X):
                    G[i, j] = self._k(p, q)
            self.coefficients = mpmath.lu_solve(G, mpmath.matrix([mpmath.mpf(float(v)) for v in yd]))
        self._X = X

    def _k(self, p: Any, q: Any) -> Any:
        if self.kernel == "rf":
            return _mp_value("rf", self.init, p, q)
        return _mp_value("ntk", self.init, p, q, mpmath.mpf(self.sigma_c))

    def __call__(self, x: Any) -> Any:
        xv = as_float_array(x, "x")

        def f(t: Any) -> Any:
            return mpmath.fsum(self.coefficients[j] * self._k(t, q) for j, q in enumerate(self._X))
        return _mp_grid(f, (xv,), self.dps)


def _kernel_interpolant(x_data: Any, y_data: Any, kernel: str = "rf", init: str = "uniform",
                        sigma_c: float = 1.0) -> KernelInterpolant:
    return KernelInterpolant(x_data, y_data, kernel, init, sigma_c)


def _kernel_interpolant_mp(x_data: Any, y_data: Any, kernel: str = "rf", init: str = "uniform",
                           sigma_c: float = 1.0, dps: int = 30) -> MpKernelInterpolant:
    return MpKernelInterpolant(x_data, y_data, kernel, init, sigma_c, dps)


def _interpolant_bound(kernel: str, init: str) -> UlpBound:
    k_ulps = (RF_ULPS if kernel == "rf" else NTK_ULPS)[init].ulps
    return UlpBound(
        k_ulps + 1, "|k_s(x)|^T |alpha| + ||k_s(x)||_2 ||K^-1||_2 ||K_s||_2 ||alpha||_2: the "
        "condition number of the Gram matrix K times the scale of the terms (k_s, K_s the "
        "kernel's ulp unit: its value for rf, K_RF + sigma_c^2 |1 + x x'| P for ntk); "
        "n = m (m + 1), m the number of data points",
        f"to first order in u: the kernel values (<= {k_ulps:g} ulps of k_s, the kernel's stated "
        "bound) perturb k(x) and K; the Cholesky solve has backward error |E| <= (3 m + 1) u "
        "|R^T| |R|, || |R^T| |R| ||_2 <= m ||K||_2; the dot product k(x)^T alpha m roundings: "
        "<= kernel bound + 1 + 2 m (m + 1) ulps of the unit", per_term=2,
        region="cond(K) > 1e12 is refused (ValueError)")


#: the stated bound per (kernel, init), in ulps of its condition-number unit
KERNEL_INTERPOLANT_ULPS = {(k, i): _interpolant_bound(k, i) for k in KERNELS for i in INITS}


kernel_interpolant = DerivedFunction(
    "kernel_interpolant", "W3b", """The kernel interpolant f = sum_j alpha_j K(., x_j),
K alpha = y, of (x_data, y_data) for kernel "rf" or "ntk" and init "uniform" or "gaussian"
(claims W3b, W3c, W3d, W3f): the m -> infinity limit of min-norm training.

``kernel_interpolant(x_data, y_data, kernel="rf", init="uniform", sigma_c=1.0)`` returns a
vectorized :class:`KernelInterpolant`; x_data must be 1-D, finite, with distinct entries
and a Gram condition number <= 1e12 (ValueError otherwise); y_data of the same shape.
``kernel_interpolant.mpmath(..., dps=30)`` returns the same interpolant in mpmath.
Float64 error (``.ulp_bound[(kernel, init)]``, an algorithm: relative to the Gram matrix's
condition number): <= B + 1 + 2 m (m + 1) ulps of |k_s(x)|^T |alpha| + ||k_s(x)|| ||K^-1||
||K_s|| ||alpha|| (m data points, B the kernel's own ulp bound, k_s its unit).  No
``.enclose`` (NotEnclosable): a linear solve K alpha = y, an algorithm; the kernels it is
built from (``rf_kernel``, ``ntk_kernel``) have ``.enclose``.
""", lambda: {("rf", i): e for i, e in _kernel_exprs("rf").items()}, _kernel_interpolant,
    _kernel_interpolant_mp, ulp_bound=KERNEL_INTERPOLANT_ULPS)
