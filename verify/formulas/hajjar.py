"""Verified formulas of Hajjar & Chizat (2023), claims H1c and H1e:
``phi_tilde`` (the kernel of the 1-D reduction), ``best_linear_approximator`` and
``odd_target_rate`` (odd targets)."""
from __future__ import annotations

from typing import Any

import mpmath
import numpy as np
import sympy as sp

from derivations.hajjar import ODD
from numerics import reduced
from numerics.validation import as_float_array
from verify import derived
from verify.formulas._base import DerivedFunction, VerifiedFormula, check_dps

__all__ = ["phi_tilde", "best_linear_approximator", "odd_target_rate"]


def _phi_tilde(theta, phi, d, d_H):
    """phi~(theta; phi) for angles theta, phi in [0, pi/2] (broadcast) and integers
    1 <= d_H <= d - 1."""
    out = reduced.phi_tilde(theta, phi, d, d_H)
    return out[()] if np.ndim(out) == 0 else out


def _phi_tilde_mp(theta, phi, d, d_H, dps: int = 25) -> Any:
    dps = check_dps(dps)
    th = as_float_array(theta, "theta")
    ph = as_float_array(phi, "phi")
    reduced.phi_tilde(th, ph, d, d_H)  # validation
    if th.ndim == 0 and ph.ndim == 0:
        return reduced.phi_tilde_mp(float(th), float(ph), d, d_H, dps=dps)
    b = np.broadcast_arrays(th, ph)
    out = np.empty(b[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = reduced.phi_tilde_mp(float(b[0][idx]), float(b[1][idx]), d, d_H, dps=dps)
    return out


phi_tilde = DerivedFunction(
    name="phi_tilde", claim="H1e", impl=_phi_tilde, mpmath=_phi_tilde_mp,
    expr_fn=lambda: {k: derived.results("H1e")[k] for k in ("at_zero", "at_half_pi", "exact")},
    doc="""phi~(theta; phi) = E[relu(cos th cos ph R + sin th sin ph S)] (Hajjar & Chizat 2023,
Thm 4.3 / App. E.2.3; claim H1e), R, S independent first coordinates of Unif(S^{d_H-1})
and Unif(S^{d-d_H-1}).

Parameters: theta, phi in [0, pi/2] (arrays broadcast), integers 1 <= d_H <= d - 1 (any
size: the coordinate density of S^{d-d_H-1} concentrates like N(0, 1/(d - d_H)) and the
quadrature follows it).  Returns float64, accurate to ~1e-14 relative (inner expectation in
closed form, tanh-sinh over S; see numerics.reduced).  ``phi_tilde.mpmath(theta, phi, d,
d_H, dps=25)`` is an independent double-quadrature reference.  ``.expr`` holds the derived
closed forms: phi~(0; phi) = cos(phi) / alpha(d_H), phi~(pi/2; phi) = sin(phi) /
alpha(d - d_H), and the complete Piecewise forms for (d, d_H) in {(2,1), (3,1), (3,2),
(4,1), (4,3)}.

>>> round(float(phi_tilde(0.0, 0.0, 30, 5)), 12)  # 1 / alpha(5) = 3/16
0.1875
""")


def _best_linear(X, Y, weights=None) -> np.ndarray:
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    Y = as_float_array(Y, "Y (target values, shape (n,))", ndim=1)
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y has {Y.shape[0]} entries but X has {X.shape[0]} rows")
    n = X.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else as_float_array(weights, "weights", ndim=1)
    if w.shape[0] != n or np.any(w < 0):
        raise ValueError("weights must be non-negative, one per row of X")
    # scale columns and targets before forming the moments (no overflow for |x| ~ 1e200)
    sx = np.max(np.abs(X), axis=0)
    sx[sx == 0] = 1.0
    sy = float(np.max(np.abs(Y))) or 1.0
    Xs = X / sx
    S = (Xs * w[:, None]).T @ Xs
    c = Xs.T @ (w * (Y / sy))
    rank = int(np.linalg.matrix_rank(S))
    if rank < X.shape[1]:
        raise ValueError(f"X has rank {rank} < d = {X.shape[1]} (with these weights), so "
                         "E[x x^T] is singular on this sample: pass X with at least d rows "
                         "in general position (linearly independent columns)")
    ws = np.linalg.solve(S, c)
    with np.errstate(over="ignore"):
        out = ws * sy / sx
    if not np.all(np.isfinite(out)):
        raise ValueError("the best linear approximator overflows float64 (|w*| > 1.8e308); "
                         "rescale X or Y")
    return out


best_linear_approximator = DerivedFunction(
    name="best_linear_approximator", claim="H1c", impl=_best_linear,
    expr_fn=lambda: derived.results("H1c")["ode_w"],
    doc="""w* = E[x x^T]^{-1} E[f*(x) x]: the best linear approximator of f*, the limit of
the odd-target dynamics (Hajjar & Chizat 2023, Thm 3.2; claim H1c).  It is the zero of the
derived moment ODE dw/dt = (1/4)(M + A I) g, g = E[f* x] - E[x x^T] w (``.expr``), and
for E[x x^T] = v_rho I it is E[f* x] / v_rho.

Parameters: X (n, d) inputs, Y (n,) target values, optional non-negative weights (n,)
(default 1/n).  Returns w* of shape (d,).

>>> import numpy as np
>>> best_linear_approximator(np.eye(2), np.array([3.0, -1.0]))
array([ 3., -1.])
""")


def _rate_validate(V, v_rho, q):
    V = as_float_array(V, "V = E a_0^2 + v_b")
    v_rho = as_float_array(v_rho, "v_rho")
    q = as_float_array(q, "q = |w*|^2")
    for x, name in ((V, "V"), (v_rho, "v_rho")):
        if np.any(x <= 0):
            raise ValueError(f"{name} must be positive (a second moment); got {x}")
    if np.any(q < 0):
        raise ValueError(f"q = |w*|^2 must be non-negative; got {q}")
    return V, v_rho, q


def _rate_numpy(expr: sp.Expr):
    """The derived rate v sqrt(V^2 + 16 q) / 4 evaluated without overflow: the lambdified
    expression with V and sqrt(q) scaled by their maximum (the expression is
    1-homogeneous in (V, sqrt(q)) and linear in v, checked symbolically here)."""
    V, v, q = ODD["V"], ODD["v"], ODD["q"]
    lam = sp.Symbol("lambda_", positive=True)
    homog = sp.simplify(expr.subs({V: lam * V, q: lam ** 2 * q}) - lam * expr)
    f = sp.lambdify((V, v, q), expr, modules="numpy")
    if homog != 0:  # a perturbed derivation: no rescaling, evaluate as is
        return f

    def rate(Vv, vv, qq):
        Vv, vv, qq = np.broadcast_arrays(Vv, vv, qq)
        with np.errstate(over="ignore"):
            sc = np.maximum(Vv, np.sqrt(qq))
            out = f(Vv / sc, 1.0, qq / sc ** 2) * sc * vv
        if not np.all(np.isfinite(out)):
            raise ValueError("odd_target_rate overflows float64 (rate > 1.8e308); rescale "
                             "V, v_rho or q")
        return out
    return rate


odd_target_rate = VerifiedFormula(
    name="odd_target_rate", claim="H1c", symbols=(ODD["V"], ODD["v"], ODD["q"]),
    expr_fn=lambda: derived.results("H1c")["rate_inf"], validate=_rate_validate,
    numpy_impl=_rate_numpy,
    doc="""Asymptotic exponential rate of |w(t) - w*| for an odd target in the infinite-width
limit (derived in claim H1c): v_rho sqrt(V^2 + 16 |w*|^2) / 4, with w(0) = 0, isotropic
data E[x x^T] = v_rho I and isotropic E[b_0 b_0^T] = v_b I, V = E a_0^2 + v_b.  It is at
least the reconstructed bound V v_rho / 4.

Parameters: V > 0, v_rho > 0, q = |w*|^2 >= 0 (arrays broadcast).  Returns float64;
raises ValueError if the rate is not representable.

>>> round(float(odd_target_rate(1.0, 1.0, 0.0)), 12)
0.25
""")
