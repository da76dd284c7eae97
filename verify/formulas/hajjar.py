"""Verified formulas of Hajjar & Chizat (2023), claims H1c and H1e:
``phi_tilde`` (the kernel of the 1-D reduction), ``best_linear_approximator`` and
``odd_target_rate`` (odd targets)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import sympy as sp

from numerics import reduced
from numerics.validation import as_float_array
from verify.formulas._base import VerifiedFormula

__all__ = ["phi_tilde", "best_linear_approximator", "odd_target_rate"]


class _PhiTilde:
    """phi~(theta; phi) = E[relu(cos th cos ph R + sin th sin ph S)] (Hajjar & Chizat 2023,
    Thm 4.3 / App. E.2.3; MATH.md H1e), R, S independent first coordinates of
    Unif(S^{d_H-1}) and Unif(S^{d-d_H-1}).

    ``phi_tilde(theta, phi, d, d_H)``: vectorized over theta, phi in [0, pi/2] (broadcast),
    integers 1 <= d_H <= d - 1; accuracy ~1e-13 (inner expectation in closed form,
    tanh-sinh over S; see numerics.reduced).  ``phi_tilde.dtheta(...)`` is the
    theta-derivative, ``phi_tilde.mpmath(theta, phi, d, d_H, dps=25)`` an independent
    double-quadrature reference.

    Closed forms (derived in claim H1e, ``phi_tilde.closed_forms``): phi~(0; phi) =
    cos(phi) / alpha(d_H) and phi~(pi/2; phi) = sin(phi) / alpha(d - d_H) for all
    dimensions, and the complete Piecewise expressions for (d, d_H) in
    {(2,1), (3,1), (3,2), (4,1), (4,3)}.  ``.expr`` is the defining double integral.

    >>> round(float(phi_tilde(0.0, 0.0, 30, 5)), 12)  # 1 / alpha(5) = 3/16
    0.1875
    """
    claim = "H1e"
    name = __name__ = "phi_tilde"

    def __call__(self, theta, phi, d, d_H):
        out = reduced.phi_tilde(theta, phi, d, d_H)
        return out[()] if np.ndim(out) == 0 else out

    def dtheta(self, theta, phi, d, d_H):
        out = reduced.phi_tilde_dtheta(theta, phi, d, d_H)
        return out[()] if np.ndim(out) == 0 else out

    def mpmath(self, theta, phi, d, d_H, dps: int = 25) -> Any:
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

    @functools.cached_property
    def expr(self) -> sp.Expr:
        th, ph, r, s = sp.symbols("theta phi R S", real=True)
        kH, kP = sp.symbols("d_H d_perp", positive=True, integer=True)
        p = lambda t, k: (1 - t ** 2) ** ((k - 3) / 2) / sp.beta(sp.S.Half, (k - 1) / 2)  # noqa: E731
        return sp.Integral(sp.Max(sp.cos(th) * sp.cos(ph) * r + sp.sin(th) * sp.sin(ph) * s, 0)
                           * p(r, kH) * p(s, kP), (r, -1, 1), (s, -1, 1))

    @property
    def latex(self) -> str:
        return sp.latex(self.expr)

    @functools.cached_property
    def closed_forms(self) -> dict:
        from verify.claims import get
        return get("H1e").derivation().results["closed_forms"]

    def __repr__(self) -> str:
        return "<phi_tilde (claim H1e)>"


phi_tilde = _PhiTilde()


class _BestLinear:
    """w* = E[x x^T]^{-1} E[f*(x) x]: the best linear approximator of f* (Hajjar & Chizat
    2023, Thm 3.2; MATH.md H1c); for E[x x^T] = v_rho I this is E[f* x] / v_rho.

    ``best_linear_approximator(X, Y, weights=None)`` on a (weighted) sample: X (n, d),
    Y (n,).  ``best_linear_approximator.expr`` is the population formula."""
    claim = "H1c"
    name = __name__ = "best_linear_approximator"

    def __call__(self, X, Y, weights=None) -> np.ndarray:
        X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
        Y = as_float_array(Y, "Y (target values, shape (n,))", ndim=1)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"Y has {Y.shape[0]} entries but X has {X.shape[0]} rows")
        n = X.shape[0]
        w = np.full(n, 1.0 / n) if weights is None else as_float_array(weights, "weights", ndim=1)
        if w.shape[0] != n or np.any(w < 0):
            raise ValueError("weights must be non-negative, one per row of X")
        S = (X * w[:, None]).T @ X
        c = X.T @ (w * Y)
        if np.linalg.matrix_rank(S) < X.shape[1]:
            raise ValueError("E[x x^T] is singular on this sample: use at least d samples in "
                             "general position")
        return np.linalg.solve(S, c)

    @functools.cached_property
    def expr(self) -> sp.Expr:
        v = sp.Symbol("v_rho", positive=True)
        return sp.Eq(sp.Symbol("w^*"), sp.Symbol("E[f^*(x) x]") / v)

    @property
    def latex(self) -> str:
        return sp.latex(self.expr)

    def __repr__(self) -> str:
        return "<best_linear_approximator (claim H1c)>"


best_linear_approximator = _BestLinear()


def _rate_validate(V, v_rho, q):
    return tuple(as_float_array(x, n) for x, n in ((V, "V = E a_0^2 + v_b"),
                                                    (v_rho, "v_rho"), (q, "q = |w*|^2")))


def _rate_expr() -> sp.Expr:
    from verify.claims import get
    return get("H1c").derivation().results["rate_inf"]


def _rate_symbols():
    return sp.symbols("V v q", positive=True)


odd_target_rate = VerifiedFormula(
    name="odd_target_rate", claim="H1c", symbols=_rate_symbols(), expr_fn=_rate_expr,
    validate=_rate_validate,
    doc="""Asymptotic exponential rate of |w(t) - w*| for an odd target in the infinite-width
limit (derived in claim H1c): v_rho sqrt(V^2 + 16 |w*|^2) / 4, with w(0) = 0, isotropic
data E[x x^T] = v_rho I and isotropic E[b_0 b_0^T] = v_b I, V = E a_0^2 + v_b.  It is at
least the reconstructed bound V v_rho / 4.  Arguments: (V, v_rho, q = |w*|^2).

>>> round(float(odd_target_rate(1.0, 1.0, 0.0)), 12)
0.25
""")
