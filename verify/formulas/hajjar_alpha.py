"""``alpha_constant``: the constant alpha(d_H) of Hajjar & Chizat (2023), claim H1f."""
from __future__ import annotations

import numpy as np
import scipy.special as sc
import sympy as sp

from derivations.hajjar_reduced import D_H as _D_H
from derivations.sphere import k as _k
from numerics.validation import as_int_array
from verify.formulas._base import UlpBound, VerifiedFormula

__all__ = ["alpha_constant"]

# Gamma overflows float64 beyond 171.6, i.e. for d_H > 342.  Beyond _GAMMA_SAFE_MAX the
# formula evaluates the DERIVED stable form alpha = sqrt(2 pi k) exp(g(k)), g the Stirling
# series of log(alpha / sqrt(2 pi k)) to O(k^-11) (result "log_gap_series" of the H1f
# derivation; its first dropped term is < 1.2e-27 at k = 341, so the float64 result is
# accurate to a few ulps).  Claim H1f checks both branches against quadrature references.
_GAMMA_SAFE_MAX = 340


def _validate(d_H):
    """d_H: an integer or integer array, 1 <= d_H <= 2^53 (beyond, float64 cannot
    represent d_H itself)."""
    return (as_int_array(d_H, "d_H (the dimension of the hidden subspace H)", minimum=1,
                         maximum=2 ** 53),)


def _numpy_impl(expr: sp.Expr):
    from verify import derived
    direct = sp.lambdify(_D_H, expr, modules=[{"gamma": sc.gamma}, "numpy"])
    series = derived.results("H1f")["log_gap_series"]
    stirling = sp.lambdify(_k, sp.sqrt(2 * sp.pi * _k) * sp.exp(series), modules="numpy")

    def alpha(kk: np.ndarray) -> np.ndarray:
        kk = np.asarray(kk, dtype=np.float64)
        small = kk <= _GAMMA_SAFE_MAX
        out = np.empty_like(kk)
        out[small] = direct(kk[small])
        out[~small] = stirling(kk[~small])
        return out

    return alpha


def _expr() -> sp.Expr:
    from verify import derived
    return derived.results("H1f")["alpha"].xreplace({_k: _D_H})  # the docs' symbol


alpha_constant = VerifiedFormula(
    name="alpha_constant", claim="H1f", symbols=(_D_H,), expr_fn=_expr, validate=_validate,
    numpy_impl=_numpy_impl,
    ulp_bound=UlpBound(16, "value (|exact|)", "d_H <= 340: two scipy Gamma values (a few ulps "
                       "each), a sqrt and two products; beyond: exp of the derived series "
                       "(truncation < 1.2e-27) and a sqrt; measured 2.7 ulps"),
    doc="""alpha(d_H) = 2 sqrt(pi) Gamma((d_H+1)/2) / Gamma(d_H/2) = 1 / E[(u.e)_+],
u ~ Unif(S^{d_H-1}) (Hajjar & Chizat 2023, Thm 4.3; claim H1f).

Accepts an integer or an integer array d_H >= 1; returns float64 of the same shape.
Evaluates the derived Gamma ratio for d_H <= 340 and, beyond (where Gamma overflows
float64), the derived Stirling form sqrt(2 pi d_H) exp(g(d_H)) to O(d_H^-11).
``alpha_constant.mpmath(d_H, dps=50)`` gives high precision and
``alpha_constant.enclose(d_H, prec=128)`` a certified Arb ball of the Gamma ratio.
float64 accuracy: within ``alpha_constant.ulp_bound`` (16 ulps of the value).

>>> alpha_constant(2)  # doctest: +ELLIPSIS
3.14159265358979...
>>> alpha_constant(5)  # doctest: +ELLIPSIS
5.33333333333333...
""")
