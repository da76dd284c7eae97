"""Kernels of 1-D ReLU networks in the kernel regime (Williams et al. 2019, Sec. 4, Thm 5;
claims W3a-W3e): ``rf_kernel``, ``ntk_kernel``, ``active_probability``, ``rkhs_weight``,
``kernel_interpolant``.

Initializations (MATH.md W.3): ``"uniform"``: (a, b) ~ U([-1, 1]^2); ``"gaussian"``:
(a, b) ~ N(0, I_2).  All expressions come from ``derivations.kernels`` (SymPy); the float64
evaluators are numerically careful rewrites of the same expressions (branch-wise masked
evaluation of the piecewise uniform kernel, no division by s in the wrong branch; atan2
instead of arccos and a series for t - atan t where the gaussian form cancels), and each
formula has an ``.mpmath`` variant lambdified from the derived expression itself.

>>> from verify import formulas
>>> round(float(formulas.rf_kernel(0.5, 1/3, init="gaussian")), 10)
0.5835116033
>>> f = formulas.kernel_interpolant([-0.5, 0.0, 0.5], [1.0, -1.0, 1.0])
>>> [round(float(v), 12) for v in f([-0.5, 0.0, 0.5])]
[1.0, -1.0, 1.0]
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import scipy.linalg
import sympy as sp

from derivations import kernels as dk
from numerics.validation import as_float_array, require_choice, require_distinct
from verify.formulas._base import VerifiedFormula

__all__ = ["rf_kernel", "ntk_kernel", "active_probability", "rkhs_weight",
           "kernel_interpolant", "KernelInterpolant"]

INITS = dk.INITS
_SERIES_T = 0.25  # below this t = |x - x'| / |1 + x x'| use the series of t - atan(t)


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


def _sigma(sigma_c: Any) -> np.ndarray:
    sc = as_float_array(sigma_c, "sigma_c (the standard deviation of the output weights c)")
    if np.any(sc < 0):
        raise ValueError(f"sigma_c must be >= 0; got {sc.ravel()[:5].tolist()}")
    return sc


def _init(init: Any) -> str:
    return require_choice(init, "init", INITS)


# ------------------------------------------------------------------- uniform evaluators
@functools.lru_cache(maxsize=None)
def _uniform_branch_fns(which: str) -> tuple[Callable, ...]:
    u = dk.derive_uniform()
    br = u.rf_branches if which == "rf" else u.prob_branches
    return tuple(sp.lambdify((dk.x, dk.xp, dk.s), e, modules="numpy") for e in br)


def _uniform_G(which: str, X: np.ndarray, XP: np.ndarray, S: np.ndarray) -> np.ndarray:
    """G(X, X'; S) evaluated branch by branch (each branch only where it applies)."""
    lo, mid, hi = _uniform_branch_fns(which)
    out = np.empty(S.shape)
    for fn, mask in ((lo, S < -1), (mid, (S >= -1) & (S <= 1)), (hi, S > 1)):
        if np.any(mask):
            out[mask] = np.broadcast_to(fn(X[mask], XP[mask], S[mask]), (int(mask.sum()),))
    return out


def _uniform_eval(which: str, x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    x, xp = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(x, xp))
    smin, smax = np.minimum(x, xp), np.maximum(x, xp)
    return 0.25 * (_uniform_G(which, x, xp, smin) + _uniform_G(which, -x, -xp, -smax))


# ------------------------------------------------------------------ gaussian evaluators
def _t_minus_atan(t: np.ndarray) -> np.ndarray:
    """t - atan(t) for t >= 0 without cancellation (series t^3/3 - t^5/5 + ... for small t)."""
    out = t - np.arctan(t)
    small = t < _SERIES_T
    if np.any(small):
        ts = t[small]
        t2, term, acc = ts * ts, ts.copy(), np.zeros_like(ts)
        for k in range(1, 16):           # |t|^2 < 1/16: 15 terms reach 1e-19 relative
            term = term * t2
            acc += (-1) ** (k + 1) * term / (2 * k + 1)
        out[small] = acc
    return out


def _gaussian_rf(x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """(|x - x'| + (pi - phi)(1 + x x')) / (2 pi), phi = atan2(|x - x'|, 1 + x x').

    For 1 + x x' < 0 the two terms cancel; there pi - phi = atan(t), t = |d| / |c|, and
    K = |c| (t - atan t) / (2 pi) is evaluated without cancellation."""
    x, xp = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(x, xp))
    d = np.abs(x - xp)
    c = 1.0 + x * xp
    out = np.empty(c.shape)
    pos = c >= 0
    out[pos] = (d[pos] + (np.pi - np.arctan2(d[pos], c[pos])) * c[pos]) / (2 * np.pi)
    neg = ~pos
    if np.any(neg):
        cn = -c[neg]
        out[neg] = cn * _t_minus_atan(d[neg] / cn) / (2 * np.pi)
    return out


def _gaussian_prob(x: np.ndarray, xp: np.ndarray) -> np.ndarray:
    """(pi - phi) / (2 pi) = atan2(|x - x'|, -(1 + x x')) / (2 pi) (no cancellation near phi = pi)."""
    x, xp = np.broadcast_arrays(np.asarray(x, float), np.asarray(xp, float))
    return np.arctan2(np.abs(x - xp), -(1.0 + x * xp)) / (2 * np.pi)


_NUMPY = {("rf", "uniform"): functools.partial(_uniform_eval, "rf"),
          ("prob", "uniform"): functools.partial(_uniform_eval, "prob"),
          ("rf", "gaussian"): _gaussian_rf,
          ("prob", "gaussian"): _gaussian_prob}


# ----------------------------------------------------------------------- the formulas
class _PerInit:
    """``name(x, xp, init=...)``: dispatches to one :class:`VerifiedFormula` per init
    (``.uniform``, ``.gaussian``); ``.expr`` / ``.latex`` / ``.claim`` are dicts by init."""

    def __init__(self, name: str, doc: str, formulas: dict[str, VerifiedFormula]):
        self.__name__ = self.name = name
        self.__doc__ = doc
        self._f = formulas
        for k, v in formulas.items():
            setattr(self, k, v)

    @property
    def expr(self) -> dict[str, sp.Expr]:
        return {k: f.expr for k, f in self._f.items()}

    @property
    def latex(self) -> dict[str, str]:
        return {k: f.latex for k, f in self._f.items()}

    @property
    def claim(self) -> str:
        return ", ".join(sorted({f.claim for f in self._f.values()}))

    def mpmath(self, *args: Any, init: str = "uniform", dps: int = 30) -> Any:
        return self._f[_init(init)].mpmath(*args, dps=dps)

    def __call__(self, *args: Any, init: str = "uniform", **kw: Any) -> np.ndarray | float:
        return self._f[_init(init)](*args, **kw)

    def __repr__(self) -> str:
        return f"<kernel formula {self.name} (claims {self.claim})>"


def _kernel_formula(which: str, init: str, claim: str) -> VerifiedFormula:
    def expr() -> sp.Expr:
        src = dk.derive_uniform() if init == "uniform" else dk.derive_gaussian()
        return src.rf if which == "rf" else src.prob
    return VerifiedFormula(
        name=f"{'rf_kernel' if which == 'rf' else 'active_probability'}[{init}]", claim=claim,
        symbols=(dk.x, dk.xp), expr_fn=expr, validate=_pair,
        numpy_impl=lambda e, _k=(which, init): _NUMPY[_k],
        doc=f"{which} for init {init} (claim {claim})")


def _ntk_formula(init: str) -> VerifiedFormula:
    def numpy_impl(expr: sp.Expr) -> Callable:
        def ntk(x, xp, sc):
            return _NUMPY[("rf", init)](x, xp) + sc**2 * (1.0 + x * xp) * _NUMPY[("prob", init)](x, xp)
        return ntk

    def validate(x, xp, sigma_c=1.0):
        x, xp = _pair(x, xp)
        return x, xp, _sigma(sigma_c)
    return VerifiedFormula(
        name=f"ntk_kernel[{init}]", claim="W3d", symbols=(dk.x, dk.xp, dk.sigma_c),
        expr_fn=lambda: dk.ntk_kernel_expr(init), validate=validate, numpy_impl=numpy_impl,
        doc=f"K_NTK for init {init} (claim W3d)")


rf_kernel = _PerInit("rf_kernel", """K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+] (Williams et al.
2019, Sec. 4; claims W3a (uniform, all real x, x') and W3c (gaussian, arc-cosine form)).

``rf_kernel(x, xp, init="uniform"|"gaussian")``: x, xp real arrays (broadcast).
``rf_kernel.mpmath(x, xp, init=..., dps=30)``: the derived expression in mpmath.

>>> round(float(rf_kernel(0.0, 0.0)), 12)   # E[(-b)_+^2] = 1/6
0.166666666667
""", {"uniform": _kernel_formula("rf", "uniform", "W3a"),
      "gaussian": _kernel_formula("rf", "gaussian", "W3c")})

active_probability = _PerInit("active_probability", """P(a x > b, a x' > b) (claim W3d).

``active_probability(x, xp, init=...)``.

>>> float(active_probability(0.3, 0.3, init="gaussian"))
0.5
""", {"uniform": _kernel_formula("prob", "uniform", "W3d"),
      "gaussian": _kernel_formula("prob", "gaussian", "W3d")})

ntk_kernel = _PerInit("ntk_kernel", """K_NTK(x, x') = K_RF(x, x') + sigma_c^2 (1 + x x')
P(a x > b, a x' > b) (alpha(m) = sqrt(m), all layers trained, E c^2 = sigma_c^2; claim W3d).

``ntk_kernel(x, xp, init=..., sigma_c=1.0)``; ``ntk_kernel.mpmath(x, xp, sigma_c, init=...)``.

>>> round(float(ntk_kernel(0.0, 0.0, init="uniform", sigma_c=1.0)), 12)  # 1/6 + 1/2
0.666666666667
""", {"uniform": _ntk_formula("uniform"), "gaussian": _ntk_formula("gaussian")})


def _weight_formula(init: str) -> VerifiedFormula:
    def numpy_impl(expr: sp.Expr) -> Callable:
        if init == "gaussian":
            return sp.lambdify(dk.x, expr, modules="numpy")
        inside, outside = expr.args[0][0], expr.args[1][0]
        f_in = sp.lambdify(dk.x, inside, modules="numpy")
        f_out = sp.lambdify(dk.x, outside, modules="numpy")

        def omega(xv):
            xv = np.asarray(xv, dtype=np.float64)
            out = np.empty(xv.shape)
            m = np.abs(xv) <= 1
            out[m] = f_in(xv[m])
            out[~m] = f_out(xv[~m])
            return out
        return omega
    return VerifiedFormula(
        name=f"rkhs_weight[{init}]", claim="W3e", symbols=(dk.x,),
        expr_fn=lambda: dk.rkhs_weight(init),
        validate=lambda xv: (as_float_array(xv, "x"),), numpy_impl=numpy_impl,
        doc=f"omega(x) for init {init} (claim W3e)")


rkhs_weight = _PerInit("rkhs_weight", """omega(x) = int |a|^3 p_0(a, a x) da (claim W3e): the
RKHS norm of the random-feature kernel is int f''(x)^2 / omega(x) dx plus an affine part,
and d^2/dx^2 K_RF(x, x') = omega(x) |x - x'| / 2.  uniform: 1/8 on [-1, 1], 1/(8 x^4)
outside; gaussian: 2 / (pi (1 + x^2)^2).

>>> float(rkhs_weight(0.5, init="uniform"))
0.125
""", {"uniform": _weight_formula("uniform"), "gaussian": _weight_formula("gaussian")})


# --------------------------------------------------------------------- interpolants
class KernelInterpolant:
    """f(x) = sum_j alpha_j K(x, x_j) with K alpha = y (the m -> infinity limit of min-norm
    training, MATH.md W.3; claims W3b, W3f).  Vectorized: ``f(x_array)``; attributes
    ``x_data``, ``y_data``, ``coefficients``, ``kernel``, ``init``, ``sigma_c``."""

    claim = "W3b"

    def __init__(self, x_data: np.ndarray, y_data: np.ndarray, kernel: str, init: str,
                 sigma_c: float):
        self.x_data, self.y_data = x_data, y_data
        self.kernel, self.init, self.sigma_c = kernel, init, sigma_c
        gram = self.kernel_matrix(x_data[:, None], x_data[None, :])
        try:
            self.coefficients = scipy.linalg.solve(gram, y_data, assume_a="pos")
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError) as exc:
            raise ValueError("the kernel Gram matrix of x_data is numerically singular: "
                             "data points are too close together; merge or drop them") from exc

    def kernel_matrix(self, x: np.ndarray, xp: np.ndarray) -> np.ndarray:
        if self.kernel == "rf":
            return rf_kernel(x, xp, init=self.init)
        return ntk_kernel(x, xp, init=self.init, sigma_c=self.sigma_c)

    def __call__(self, x: Any) -> np.ndarray | float:
        xv = as_float_array(x, "x")
        flat = xv.reshape(-1)
        out = self.kernel_matrix(flat[:, None], self.x_data[None, :]) @ self.coefficients
        out = out.reshape(xv.shape)
        return float(out) if out.ndim == 0 else out

    def __repr__(self) -> str:
        return (f"<KernelInterpolant {self.kernel}/{self.init} through {self.x_data.size} "
                f"points>")


def kernel_interpolant(x_data: Any, y_data: Any, kernel: str = "rf", init: str = "uniform",
                       sigma_c: float = 1.0) -> KernelInterpolant:
    """The kernel interpolant of (x_data, y_data) for kernel "rf" or "ntk" and init
    "uniform" or "gaussian" (claims W3b, W3c, W3d, W3f); returns a vectorized callable.

    x_data must be 1-D, finite, with distinct entries; y_data of the same shape."""
    xd = as_float_array(x_data, "x_data", ndim=1, allow_empty=False)
    yd = as_float_array(y_data, "y_data", ndim=1, allow_empty=False)
    if xd.shape != yd.shape:
        raise ValueError(f"x_data and y_data must have the same shape; got {xd.shape} and {yd.shape}")
    require_distinct(xd, "x_data")
    require_choice(kernel, "kernel", ("rf", "ntk"))
    init = _init(init)
    sc = float(_sigma(sigma_c))
    return KernelInterpolant(xd, yd, kernel, init, sc)


kernel_interpolant.claim = "W3b"  # type: ignore[attr-defined]
