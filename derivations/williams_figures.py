"""Williams et al. (2019), Figure 2 (claim W2k): the trajectories of the full gradient flow
as the invariant delta = c^2 - a^2 - b^2 varies, and its two extreme panels as limits.

From the inverse metric G^-1(r, delta) = diag(g_rr, g_thth) of claim W2c (the full flow of
z mapped to the canonical particles w = (r, theta), alpha(m) = m):

- kernel end (delta -> -inf): the radial rate g_rr grows like |delta|, so the radial
  dynamics run in the time unit 1/|delta|; over a horizon T0/|delta| (fixed radial
  progress) a knot direction moves by g_thth |dL~/dtheta| T0/|delta|, i.e. at the order of
  g_thth/g_rr, whose exponent in |delta| is derived below (-2: the knots freeze);
- adaptive end (delta -> +inf): in the rescaled time delta t the flow has the inverse metric
  G^-1/delta, whose limit is the particle-plane metric diag(1, 1/r^2) (the reduced flow of
  Section 3.1); its relative deviation from that limit decays like delta^p with the derived
  p = -2, and a Lipschitz field perturbed by O(delta^p) moves trajectories over a fixed
  rescaled horizon by O(delta^p) (Groenwall);
- in between, the anisotropy r^2 g_thth / g_rr (angular over radial mobility in the local
  Cartesian frame d tau = r d theta) increases strictly from 0 to 1 with delta: the larger
  delta, the more the knots move relative to the radii (the clustering of the figure)."""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import sympy as sp

from derivations.base import Derivation, Step
from derivations.williams_dynamics import delta, derive_W2c, r

__all__ = ["DERIVATIONS", "derive_W2k", "derive_W2k_parts", "log_delta"]

#: log |delta|, the variable of the rates
log_delta = sp.Symbol("u", real=True)


def _exponent(expr: sp.Expr, sign: int) -> sp.Expr:
    """lim d log|expr| / d log|delta| as delta = sign * e^u, u -> +inf."""
    e = sp.simplify(expr.subs(delta, sign * sp.exp(log_delta)))
    return sp.limit(sp.diff(sp.log(e), log_delta), log_delta, sp.oo)


@lru_cache(maxsize=None)
def derive_W2k_parts() -> dict:
    """The rates of both ends, the limit metric and the anisotropy (see the module doc)."""
    w = derive_W2c()
    g_rr, g_tt, g_tt_rat = w["g_rr"], w["g_thth"], w["g_thth_rationalized"]
    rp = sp.Symbol("r", positive=True)        # r^2 only enters: |r| > 0 without loss
    g_rr_p, g_tt_p, g_tt_rat_p = (e.subs(r, rp) for e in (g_rr, g_tt, g_tt_rat))
    kernel_ratio = sp.simplify(g_tt_p / g_rr_p)
    kernel_rate = _exponent(kernel_ratio, -1)
    kernel_time_unit = sp.limit(g_rr_p / -delta, delta, -sp.oo)
    limit_rr = sp.limit(g_rr_p / delta, delta, sp.oo)
    limit_tt = sp.limit(g_tt_rat_p / delta, delta, sp.oo)
    dev_rr = _exponent(g_rr_p / delta - limit_rr, 1)
    dev_tt = _exponent(g_tt_rat_p / delta - limit_tt, 1)
    adaptive_rate = sp.Max(dev_rr, dev_tt)     # the slower of the two decays
    anisotropy = sp.simplify(rp**2 * g_tt_p / g_rr_p)
    d_aniso = sp.simplify(sp.diff(anisotropy, delta))
    if not (sp.simplify(d_aniso * (delta**2 + 4 * rp**2) ** sp.Rational(3, 2)).is_positive):
        raise ArithmeticError(f"W2k: the anisotropy is not increasing in delta: {d_aniso}")
    ends = (sp.limit(anisotropy, delta, -sp.oo), sp.limit(anisotropy, delta, sp.oo))
    if ends != (0, 1) or kernel_time_unit != 1:
        raise ArithmeticError(f"W2k: unexpected anisotropy limits {ends} or radial time unit "
                              f"{kernel_time_unit}")
    return {"kernel_ratio": kernel_ratio, "kernel_rate": kernel_rate,
            "kernel_time_unit": kernel_time_unit,
            "adaptive_metric": (limit_rr, limit_tt.subs(rp, r)),
            "adaptive_deviation_rates": (dev_rr, dev_tt), "adaptive_rate": adaptive_rate,
            "anisotropy": anisotropy, "anisotropy_derivative": d_aniso, "anisotropy_ends": ends}


def derive_W2k() -> Derivation:
    w = derive_W2k_parts()
    return Derivation(steps=[
        Step("Kernel end ($\\delta\\to-\\infty$), from the W2c metric: angular over radial "
             "mobility", w["kernel_ratio"], lhs="G^{-1}_{\\theta\\theta}/G^{-1}_{rr}"),
        Step("radial time unit $\\lim G^{-1}_{rr}/|\\delta| =$", w["kernel_time_unit"]),
        Step("so over the horizon $T_0/|\\delta|$ a knot direction moves at the order "
             "$|\\delta|^p$ with $p = \\lim d\\log(G^{-1}_{\\theta\\theta}/G^{-1}_{rr})/"
             "d\\log|\\delta|$ =", w["kernel_rate"], lhs="p_{kernel}"),
        Step("Adaptive end ($\\delta\\to+\\infty$): in the time $\\delta t$ the inverse metric "
             "$G^{-1}/\\delta \\to$", sp.Matrix([w["adaptive_metric"]]),
             lhs="(G^{-1}_{rr}, G^{-1}_{\\theta\\theta})/\\delta"),
        Step("(the particle-plane reduced flow); the exponents of the deviations "
             "$G^{-1}/\\delta - \\lim$ in $\\delta$:", sp.Matrix([w["adaptive_deviation_rates"]])),
        Step("so (Lipschitz field, Groenwall) the trajectories at a fixed rescaled horizon "
             "approach the reduced flow's at the rate $\\delta^q$ with", w["adaptive_rate"],
             lhs="q_{adaptive}"),
        Step("In between, the anisotropy (frame $d\\tau = r\\,d\\theta$)", w["anisotropy"],
             lhs="r^2 G^{-1}_{\\theta\\theta}/G^{-1}_{rr}"),
        Step("has $\\partial_\\delta$", w["anisotropy_derivative"],
             lhs="\\partial_\\delta (r^2 G^{-1}_{\\theta\\theta}/G^{-1}_{rr})"),
        Step("$> 0$, from 0 ($\\delta\\to-\\infty$) to 1 ($\\delta\\to+\\infty$):",
             sp.Matrix([w["anisotropy_ends"]])),
    ], results={"kernel_rate": w["kernel_rate"], "adaptive_rate": w["adaptive_rate"],
                "adaptive_metric": w["adaptive_metric"]})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"W2k": derive_W2k}
