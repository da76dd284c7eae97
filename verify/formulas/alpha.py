"""``alpha_constant``: the constant alpha(d_H) of Hajjar & Chizat (2023), claim H1f."""
from __future__ import annotations

import numpy as np
import scipy.special as sc
import sympy as sp

from derivations.sphere import k as _k
from numerics.validation import as_int_array
from verify.formulas._base import VerifiedFormula

__all__ = ["alpha_constant"]

# Gamma overflows float64 beyond 171.6, i.e. for d_H > 342; there the same expression is
# evaluated through log-Gamma (relative accuracy ~ eps * lgamma(d_H/2) ~ 1e-12 at 10^3).
_GAMMA_SAFE_MAX = 340


def _validate(d_H):
    return (as_int_array(d_H, "d_H (the dimension of the hidden subspace H)", minimum=1),)


def _numpy_impl(expr: sp.Expr):
    direct = sp.lambdify(_k, expr, modules=[{"gamma": sc.gamma}, "numpy"])
    x = sp.Dummy("x", positive=True)  # not integer: keeps loggamma(x/2) unevaluated
    log_expr = sp.expand_log(sp.log(expr.subs(_k, x)), force=True).replace(
        lambda e: isinstance(e, sp.log) and isinstance(e.args[0], sp.gamma),
        lambda e: sp.loggamma(e.args[0].args[0]))
    via_log = sp.lambdify(x, log_expr, modules=[{"loggamma": sc.gammaln}, "numpy"])

    def alpha(kk: np.ndarray) -> np.ndarray:
        kk = np.asarray(kk, dtype=np.float64)
        small = kk <= _GAMMA_SAFE_MAX
        out = np.empty_like(kk)
        out[small] = direct(kk[small])
        out[~small] = np.exp(via_log(kk[~small]))
        return out

    return alpha


def _expr() -> sp.Expr:
    from verify.claims import get
    return get("H1f").derivation().results["alpha"]


alpha_constant = VerifiedFormula(
    name="alpha_constant", claim="H1f", symbols=(_k,), expr_fn=_expr, validate=_validate,
    numpy_impl=_numpy_impl,
    doc="""alpha(d_H) = 2 sqrt(pi) Gamma((d_H+1)/2) / Gamma(d_H/2) = 1 / E[(u.e)_+],
u ~ Unif(S^{d_H-1}) (Hajjar & Chizat 2023, Thm 4.3; claim H1f).

Accepts an integer or an integer array d_H >= 1; returns float64 of the same shape.
``alpha_constant.mpmath(d_H, dps=50)`` gives high precision.

>>> alpha_constant(2)  # doctest: +ELLIPSIS
3.14159265358979...
>>> alpha_constant(5)  # doctest: +ELLIPSIS
5.33333333333333...
""")
