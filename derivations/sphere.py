"""Moments of one coordinate of the uniform measure on the sphere, and the constant
alpha(d_H) of Hajjar & Chizat (2023), Thm 4.3 (claim H1f)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from derivations.base import Derivation, Step

__all__ = ["DERIVATIONS", "derive_h1f", "k", "coordinate_density", "positive_part_mean", "alpha_expression",
           "AlphaDerivation", "derive_alpha", "log_asymptotic_gap", "STIRLING_ORDER"]

#: order of the Stirling series of log(alpha / sqrt(2 pi k)) that the float64 formula
#: evaluates where Gamma overflows (terms through k^-9; the first dropped one is
#: 435330 / (55440 k^11) < 1.2e-27 for k >= 341)
STIRLING_ORDER = 11

#: ambient dimension of the sphere S^{k-1} (k = d_H in the paper)
k = sp.Symbol("k", positive=True, integer=True)
t = sp.Symbol("t", real=True)
_s = sp.Symbol("s", positive=True)  # s = 1 - t^2 > 0 inside (-1, 1)


def coordinate_density() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """Unnormalized density of t = u.e for u ~ Unif(S^{k-1}), k >= 2, by slicing.

    The slice {u.e = t} is a (k-2)-sphere of radius r(t) = sqrt(1 - t^2); the meridian
    arc length is ds = sqrt(1 + r'(t)^2) dt.  Returns ``(r, ds/dt, density)`` with the
    density r^{k-2} ds/dt simplified to (1 - t^2)^{(k-3)/2}."""
    r = sp.sqrt(1 - t**2)
    arc = sp.sqrt(1 + sp.diff(r, t) ** 2)
    # inside (-1, 1) write 1 - t^2 = s > 0 so that the powers combine
    arc_s = sp.sqrt(sp.simplify(sp.together(arc**2).subs(t**2, 1 - _s)))
    density = sp.powsimp(_s ** ((k - 2) / 2) * arc_s, force=True).subs(_s, 1 - t**2)
    return r, arc, density


def positive_part_mean(density: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """E[(u.e)_+] = int_0^1 t p(t) dt / int_{-1}^1 p(t) dt for k >= 2.

    Returns ``(Z, N, E)``: normalizer, numerator and their ratio (Gamma-simplified).
    SymPy returns Z as a 2F1 at 1, expanded here by Gauss's summation theorem."""
    n = sp.Symbol("n", positive=True)  # n = k - 1 > 0 keeps the integrals unconditional
    dens_n = density.subs(k, n + 1)
    Z = sp.hyperexpand(sp.integrate(dens_n, (t, -1, 1)))
    N = sp.integrate(t * dens_n, (t, 0, 1))
    E = sp.gammasimp(N / Z)
    return Z.subs(n, k - 1), N.subs(n, k - 1), sp.gammasimp(E.subs(n, k - 1))


def alpha_expression() -> sp.Expr:
    """alpha(k) = 1 / E_{u ~ Unif(S^{k-1})}[(u.e)_+], derived (see :func:`derive_alpha`)."""
    return derive_alpha().alpha


@dataclass(frozen=True)
class AlphaDerivation:
    radius: sp.Expr
    arc_factor: sp.Expr
    density: sp.Expr
    normalizer: sp.Expr
    numerator: sp.Expr
    mean: sp.Expr
    alpha: sp.Expr
    mean_k1: sp.Expr
    predictor_identity: sp.Expr
    asymptote_limit: sp.Expr
    log_gap: sp.Expr
    log_gap_series: sp.Expr
    exact_values: tuple[tuple[int, sp.Expr, sp.Expr], ...]


@functools.lru_cache(maxsize=4)
def derive_alpha(max_exact: int = 8) -> AlphaDerivation:
    """The full derivation of alpha(k) for symbolic k (claim H1f)."""
    r, arc, density = coordinate_density()
    Z, N, E = positive_part_mean(density)
    alpha = sp.gammasimp(1 / E)
    # k = 1: S^0 = {-1, +1} with mass 1/2 each, E[(u)_+] = (1 + 0) / 2.
    mean_k1 = sp.Rational(1, 2) * (sp.Max(1, 0) + sp.Max(-1, 0))
    if sp.simplify(alpha.subs(k, 1) - 1 / mean_k1) != 0:
        raise ArithmeticError("alpha(1) does not match the two-point sphere S^0")
    # predictor level: alpha * int (u.x_H)_+ du = alpha |x_H| E[(u.e)_+] (rotation invariance)
    predictor_identity = sp.simplify(alpha * E)
    log_gap = log_asymptotic_gap(alpha)
    log_gap_series = log_asymptotic_gap(alpha, STIRLING_ORDER)
    asym = sp.exp(sp.limit(log_gap, k, sp.oo))
    exact = tuple((j, sp.simplify(E.subs(k, j)) if j > 1 else mean_k1,
                   sp.simplify(alpha.subs(k, j))) for j in range(1, max_exact + 1))
    return AlphaDerivation(r, arc, density, Z, N, E, alpha, mean_k1, predictor_identity,
                           asym, log_gap, log_gap_series, exact)


def log_asymptotic_gap(alpha: sp.Expr, order: int = 3) -> sp.Expr:
    """Leading terms of log(alpha(k) / sqrt(2 pi k)) as k -> oo: the Stirling series of
    log Gamma (in x = k/2, a non-integer symbol so that loggamma stays unevaluated), with
    the O(k^-order) remainder dropped.  For order 3 SymPy gives -1/(4k)."""
    x = sp.Symbol("x", positive=True)
    log_ratio = sp.expand_log(sp.log((alpha / sp.sqrt(2 * sp.pi * k)).subs(k, 2 * x)), force=True)
    log_ratio = log_ratio.replace(
        lambda e: isinstance(e, sp.log) and isinstance(e.args[0], sp.gamma),
        lambda e: sp.loggamma(e.args[0].args[0]))
    series = sp.series(log_ratio, x, sp.oo, n=order).removeO()
    return sp.simplify(series.subs(x, k / 2))


def derive_h1f() -> Derivation:
    """Claim H1f: the report steps and the results its check evaluates (alpha, the mean
    E[(u.e)_+], their product, the leading large-k log gap, and its Stirling series to
    O(k^-11), the stable form ``formulas.alpha_constant`` evaluates beyond Gamma's float
    range)."""
    d = derive_alpha()
    steps = [
        Step(r"Slice the sphere $S^{k-1}$ at height $t = u\cdot e$: the slice is a "
             r"$(k-2)$-sphere of radius $r(t)$, and the meridian arc length is "
             r"$\sqrt{1 + r'(t)^2}\,dt$.", d.radius, lhs="r(t)"),
        Step(r"So the density of one coordinate ($k \ge 2$) is proportional to "
             r"$r^{k-2}\sqrt{1+r'^2}$, which SymPy simplifies to", d.density, lhs="p_k(t)"),
        Step(r"Normalizer (SymPy returns ${}_2F_1(\dots;1)$; Gauss's summation theorem "
             r"expands it):", sp.Eq(sp.Integral(d.density, (t, -1, 1)), d.normalizer)),
        Step("Numerator:", sp.Eq(sp.Integral(t * d.density, (t, 0, 1)), d.numerator)),
        Step("Their ratio, Gamma-simplified:", d.mean, lhs=r"\mathbb{E}[(u\cdot e)_+]"),
        Step("Hence the constant of Thm 4.3:", d.alpha, lhs=r"\alpha(k)"),
        Step(r"$k = 1$: $S^0 = \{-1, +1\}$ gives $E[(u)_+] = 1/2$, and the formula gives "
             r"$\alpha(1) = 2$ (checked symbolically).", d.alpha.subs(k, 1), lhs=r"\alpha(1)"),
        Step(r"Predictor level: by rotation invariance "
             r"$\alpha\int (u\cdot x_H)_+\,du = \alpha\,|x_H|\,E[(u\cdot e)_+]$, and "
             r"the factor is", d.predictor_identity, lhs=r"\alpha(k)\,\mathbb{E}[(u\cdot e)_+]"),
        Step(r"Large-$k$ asymptote: the Stirling series of $\log\Gamma$ gives "
             r"(remainder $O(k^{-3})$)", d.log_gap, lhs=r"\log\frac{\alpha(k)}{\sqrt{2\pi k}}"),
        Step("so that", d.asymptote_limit,
             lhs=r"\lim_{k\to\infty}\frac{\alpha(k)}{\sqrt{2\pi k}}"),
        Step(r"Float64 form beyond $\Gamma$'s range ($k > 340$): "
             r"$\alpha(k) = \sqrt{2\pi k}\,e^{g(k)}$ with the same series to $O(k^{-11})$ "
             r"(first dropped term $435330/(55440\,k^{11}) < 1.2\cdot 10^{-27}$ at $k \ge 341$):",
             d.log_gap_series, lhs="g(k)"),
    ]
    return Derivation(steps, {"alpha": d.alpha, "mean": d.mean,
                              "predictor_identity": d.predictor_identity,
                              "log_gap": d.log_gap, "log_gap_series": d.log_gap_series})


DERIVATIONS = {"H1f": derive_h1f}
