"""Kernel regime of 1-D ReLU networks (Williams et al. 2019, Sec. 4 / Thm 5; claims W3a-W3e).

Random-feature kernel K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+] and the NTK
K_NTK = K_RF + sigma_c^2 (1 + x x') P(a x > b, a x' > b) for the two initializations of
MATH.md W.3 ("uniform": (a, b) ~ U([-1, 1]^2); "gaussian": (a, b) ~ N(0, I_2)), the RKHS
weight omega(x) = int |a|^3 p_0(a, a x) da, the second-derivative identity
d^2/dx^2 K_RF(x, x') = omega(x) |x - x'| / 2, the cubic-spline structure of the uniform-init
interpolant with its END CONDITIONS, and the kinks of NTK interpolants.

Everything is DERIVED here from the defining integrals (SymPy only).  How the integrals are
organized (the pitfall of MATH.md W.3: a naive 2-D integration over R^2 returns a wrong
value for the gaussian kernel):

* uniform: split by the sign of a.  For a > 0 the product is nonzero iff
  b < a min(x, x') = a s; for a < 0 substitute a -> -a, which maps (x, x') to (-x, -x') and
  s to -max(x, x').  So K = (G(x, x'; s) + G(-x, -x'; -L)) / 4 with s = min, L = max and
  G(x, x'; s) = int_0^1 int_{-1}^{min(1, a s)} (a x - b)(a x' - b) db da (zero where
  a s < -1).  The clipping at b = +-1 gives three branches: s < -1, |s| <= 1, s > 1.
* gaussian: rotation invariance and polar coordinates (a, b) = r (cos t, sin t): the
  radial and the angular integrals separate; the angular integrand is a product of two
  clipped cosines whose support is an arc fixed by the angle phi between x~ and x~'.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import sympy as sp

__all__ = [
    "x", "xp", "a", "b", "s", "sigma_c", "INITS",
    "UniformKernels", "GaussianKernels", "derive_uniform", "derive_gaussian",
    "uniform_region_expressions", "rkhs_weight", "second_derivative_identity",
    "kernel_jumps", "SplineEndConditions", "derive_spline_end_conditions",
    "second_moment", "rf_kernel_expr", "ntk_kernel_expr",
]

x, xp = sp.symbols("x x'", real=True)
a, b = sp.symbols("a b", real=True)
s = sp.Symbol("s", real=True)            # s = min(x, x') (or -max(x, x') after a -> -a)
sigma_c = sp.Symbol("sigma_c", positive=True)
_t = sp.Symbol("t", real=True)           # upper limit of the inner b-integral
_r = sp.Symbol("r", positive=True)
_th = sp.Symbol("theta", real=True)
phi = sp.Symbol("phi", nonnegative=True)  # angle between x~ = (x, -1) and x~' = (x', -1)
INITS = ("uniform", "gaussian")


# --------------------------------------------------------------------------- uniform init
def _sign_split_branches(g: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]:
    """Branches of G(s) = int_0^1 da int_{-1}^{min(1, a s)} g db for s < -1, |s| <= 1, s > 1.

    Returns ``(inner, lo, mid, hi)`` where ``inner`` = int_{-1}^t g db (t the upper limit).
    s < -1: a s > -1 only for a < 1/|s|;  s > 1: a s > 1 (clipped to 1) for a > 1/s."""
    inner = sp.expand(sp.integrate(g, (b, -1, _t)))
    lo = sp.integrate(inner.subs(_t, a * s), (a, 0, -1 / s))
    mid = sp.integrate(inner.subs(_t, a * s), (a, 0, 1))
    hi = sp.integrate(inner.subs(_t, a * s), (a, 0, 1 / s)) + sp.integrate(inner.subs(_t, 1), (a, 1 / s, 1))
    tidy = lambda e: sp.expand(sp.apart(sp.together(e), s)) if e.has(1 / s) else sp.expand(e)
    return inner, tidy(lo), tidy(mid), tidy(hi)


def _G(branches: tuple[sp.Expr, sp.Expr, sp.Expr], X: sp.Expr, XP: sp.Expr, S: sp.Expr) -> sp.Expr:
    lo, mid, hi = (e.subs({x: X, xp: XP, s: S}, simultaneous=True) for e in branches)
    return sp.Piecewise((lo, S < -1), (mid, S <= 1), (hi, True))


@dataclass(frozen=True)
class UniformKernels:
    """Uniform init (a, b) ~ U([-1, 1]^2) (density 1/4)."""
    inner_rf: sp.Expr                       # int_{-1}^t (a x - b)(a x' - b) db
    rf_branches: tuple[sp.Expr, sp.Expr, sp.Expr]   # G_RF for s < -1, |s| <= 1, s > 1
    prob_branches: tuple[sp.Expr, sp.Expr, sp.Expr]  # same for the integrand 1
    rf: sp.Expr                             # K_RF(x, x') for all real x, x' (Piecewise)
    prob: sp.Expr                           # P(a x > b, a x' > b)
    ntk: sp.Expr                            # K_RF + sigma_c^2 (1 + x x') P
    rf_inside: sp.Expr                      # K_RF on [-1, 1]^2 (one polynomial in x, x', |x - x'|)
    prob_inside: sp.Expr
    second_moment: sp.Expr                  # E a^2 = E b^2


@lru_cache(maxsize=None)
def derive_uniform() -> UniformKernels:
    """K_RF, P(both active), K_NTK for the uniform init, valid for ALL real x, x' (W3a/W3d)."""
    inner, *rf_br = _sign_split_branches((a * x - b) * (a * xp - b))
    _, *pr_br = _sign_split_branches(sp.Integer(1))
    smin, smax = sp.Min(x, xp), sp.Max(x, xp)
    quarter = sp.Rational(1, 4)
    rf = quarter * (_G(tuple(rf_br), x, xp, smin) + _G(tuple(rf_br), -x, -xp, -smax))
    prob = quarter * (_G(tuple(pr_br), x, xp, smin) + _G(tuple(pr_br), -x, -xp, -smax))
    # inside [-1, 1]^2 both G's use the middle branch; write min/max via |x - x'|
    d = sp.Symbol("d", nonnegative=True)  # d = |x - x'|
    sub = {s: (x + xp - d) / 2}
    rf_in = sp.expand(quarter * (rf_br[1].subs(sub)
                                 + rf_br[1].subs({x: -x, xp: -xp, s: -(x + xp + d) / 2}, simultaneous=True)))
    pr_in = sp.expand(quarter * (pr_br[1].subs(sub)
                                 + pr_br[1].subs({s: -(x + xp + d) / 2})))
    rf_in, pr_in = (e.subs(d, sp.Abs(x - xp)) for e in (rf_in, pr_in))
    m2 = sp.integrate(a**2 * quarter, (a, -1, 1), (b, -1, 1))
    return UniformKernels(inner, tuple(rf_br), tuple(pr_br), rf, prob,
                          rf + sigma_c**2 * (1 + x * xp) * prob, rf_in, pr_in, m2)


def uniform_region_expressions(which: str = "rf") -> dict[tuple[str, str, str], sp.Expr]:
    """The polynomial/rational pieces of the uniform-init kernel, keyed by
    ``(order, bucket of s = min, bucket of L = max)`` with order "x<x'" or "x>x'" and buckets
    "<-1", "in", ">1" (the six admissible (s, L) combinations times the two orders)."""
    u = derive_uniform()
    br = u.rf_branches if which == "rf" else u.prob_branches
    idx = {"<-1": 0, "in": 1, ">1": 2}
    out = {}
    for order in ("x<x'", "x>x'"):
        S, L = (x, xp) if order == "x<x'" else (xp, x)
        for sb in idx:
            for lb in idx:
                if idx[lb] < idx[sb]:
                    continue
                g1 = br[idx[sb]].subs({s: S})
                # second term: s' = -L, whose bucket is the mirror of L's bucket
                g2 = br[2 - idx[lb]].subs({x: -x, xp: -xp, s: -L}, simultaneous=True)
                out[(order, sb, lb)] = sp.expand(sp.Rational(1, 4) * (g1 + g2))
    return out


# -------------------------------------------------------------------------- gaussian init
@dataclass(frozen=True)
class GaussianKernels:
    """Gaussian init (a, b) ~ N(0, I_2), derived in polar coordinates."""
    radial_rf: sp.Expr        # int_0^oo r^3 e^{-r^2/2} dr / (2 pi)
    angular_rf: sp.Expr       # int_{phi - pi/2}^{pi/2} cos t cos(t - phi) dt
    radial_prob: sp.Expr      # int_0^oo r e^{-r^2/2} dr / (2 pi)
    angular_prob: sp.Expr     # length of the arc where both are active
    rf_angle: sp.Expr         # |x~||x~'| (sin phi + (pi - phi) cos phi) / (2 pi), as a function of phi and norms
    prob_angle: sp.Expr       # (pi - phi) / (2 pi)
    phi_xy: sp.Expr           # phi = atan2(|x - x'|, 1 + x x')
    rf: sp.Expr               # K_RF(x, x') in coordinates
    prob: sp.Expr
    ntk: sp.Expr
    second_moment: sp.Expr


@lru_cache(maxsize=None)
def derive_gaussian() -> GaussianKernels:
    """K_RF, P(both active), K_NTK for the gaussian init (W3c/W3d).

    Rotate so that x~ = |x~| (1, 0) and x~' = |x~'| (cos phi, sin phi), phi in [0, pi];
    with (a, b) = r (cos t, sin t) the density is e^{-r^2/2} r dr dt / (2 pi) and
    (a x - b)_+ = r |x~| cos(t)_+ etc.  Both cosines are positive on t in (phi - pi/2, pi/2)."""
    dens_r = sp.exp(-_r**2 / 2) / (2 * sp.pi)
    radial_rf = sp.integrate(_r**3 * dens_r, (_r, 0, sp.oo))
    radial_p = sp.integrate(_r * dens_r, (_r, 0, sp.oo))
    ang_rf = sp.expand(sp.integrate(sp.cos(_th) * sp.cos(_th - phi), (_th, phi - sp.pi / 2, sp.pi / 2)))
    ang_p = sp.integrate(sp.Integer(1), (_th, phi - sp.pi / 2, sp.pi / 2))
    nx, nxp = sp.symbols("|x~| |x~'|", positive=True)
    rf_angle = sp.factor(nx * nxp * radial_rf * ang_rf)
    prob_angle = sp.factor(radial_p * ang_p)
    # coordinates: |x~||x~'| cos(phi) = 1 + x x', |x~||x~'| sin(phi) = |x - x'| (2-D cross product)
    phi_xy = sp.atan2(sp.Abs(x - xp), 1 + x * xp)
    rf_expanded = sp.expand(sp.expand_trig(rf_angle))
    rf = rf_expanded.subs({nx * nxp * sp.cos(phi): 1 + x * xp, nx * nxp * sp.sin(phi): sp.Abs(x - xp)})
    rf = sp.collect(sp.expand(rf), phi).subs(phi, phi_xy)
    prob = prob_angle.subs(phi, phi_xy)
    m2 = sp.integrate(a**2 * sp.exp(-a**2 / 2) / sp.sqrt(2 * sp.pi), (a, -sp.oo, sp.oo))
    return GaussianKernels(radial_rf, ang_rf, radial_p, ang_p, rf_angle, prob_angle, phi_xy,
                           rf, prob, rf + sigma_c**2 * (1 + x * xp) * prob, m2)


def rf_kernel_expr(init: str) -> sp.Expr:
    return derive_uniform().rf if init == "uniform" else derive_gaussian().rf


def ntk_kernel_expr(init: str) -> sp.Expr:
    return derive_uniform().ntk if init == "uniform" else derive_gaussian().ntk


def second_moment(init: str) -> sp.Expr:
    """sigma^2 = E a^2 = E b^2 (E ab = 0) of the init."""
    return derive_uniform().second_moment if init == "uniform" else derive_gaussian().second_moment


# ------------------------------------------------------------------------------ RKHS weight
@lru_cache(maxsize=None)
def rkhs_weight(init: str, exponent: int = 3) -> sp.Expr:
    """omega(x) = int |a|^exponent p_0(a, a x) da (W3e; exponent 3 is the correct one, other
    exponents exist only for the negative control).  Symmetric in a, so 2 int_0^oo."""
    k = exponent
    if init == "uniform":
        # p_0 = 1/4 on the box: need |a| <= 1 and |a x| <= 1, i.e. a <= min(1, 1/|x|)
        xa = sp.Symbol("X", positive=True)  # |x|
        inside = 2 * sp.integrate(a**k / 4, (a, 0, 1))
        outside = 2 * sp.integrate(a**k / 4, (a, 0, 1 / xa))
        return sp.Piecewise((inside, sp.Abs(x) <= 1), (sp.simplify(outside.subs(xa, sp.Abs(x))), True))
    ap = sp.Symbol("A", positive=True)
    dens = sp.exp(-(ap**2 + ap**2 * x**2) / 2) / (2 * sp.pi)
    return sp.factor(2 * sp.integrate(ap**k * dens, (ap, 0, sp.oo), conds="none"))


def second_derivative_identity(init: str) -> dict[str, sp.Expr]:
    """d^2/dx^2 K_RF(x, x') - omega(x) |x - x'| / 2, simplified in every region (all zero).

    uniform: the twelve polynomial/rational pieces of :func:`uniform_region_expressions`;
    gaussian: the two orders x < x', x > x' (|x - x'| resolved)."""
    out: dict[str, sp.Expr] = {}
    if init == "uniform":
        om_in, om_out = (rkhs_weight("uniform").args[0][0], rkhs_weight("uniform").args[1][0])
        for (order, sb, lb), expr in uniform_region_expressions("rf").items():
            bucket = sb if order == "x<x'" else lb   # the bucket of x itself
            om = om_in if bucket == "in" else om_out.subs(sp.Abs(x), sp.sign(x) * x)
            if bucket != "in":
                om = om.subs(sp.sign(x), -1 if bucket == "<-1" else 1)
            dist = (xp - x) if order == "x<x'" else (x - xp)
            out[f"{order}, s {sb}, L {lb}"] = sp.simplify(sp.diff(expr, x, 2) - om * dist / 2)
        return out
    g = derive_gaussian().rf
    om = rkhs_weight("gaussian")
    for order, dist in (("x<x'", xp - x), ("x>x'", x - xp)):
        e = g.subs(sp.Abs(x - xp), dist)
        out[order] = sp.simplify(sp.diff(e, x, 2) - om * dist / 2)
    return out


# ---------------------------------------------------------------------------- jumps / kinks
def kernel_jumps(init: str, kernel: str = "rf", bucket: str = "in") -> list[sp.Expr]:
    """Jumps [d^k/dx^k K(x, x')]_{x = x'^-}^{x'^+} for k = 0..3 at the diagonal, as
    expressions in x' (uniform: for x' in the bucket "<-1", "in" or ">1")."""
    if init == "uniform":
        reg = uniform_region_expressions("rf")
        pr = uniform_region_expressions("prob")
        key_left, key_right = ("x<x'", bucket, bucket), ("x>x'", bucket, bucket)
        left, right = reg[key_left], reg[key_right]
        if kernel == "ntk":
            left = left + sigma_c**2 * (1 + x * xp) * pr[key_left]
            right = right + sigma_c**2 * (1 + x * xp) * pr[key_right]
    else:
        g = derive_gaussian()
        e = g.ntk if kernel == "ntk" else g.rf
        left, right = e.subs(sp.Abs(x - xp), xp - x), e.subs(sp.Abs(x - xp), x - xp)
    return [sp.simplify((sp.diff(right, x, k) - sp.diff(left, x, k)).subs(x, xp)) for k in range(4)]


# ----------------------------------------------------------------- spline end conditions
@dataclass(frozen=True)
class SplineEndConditions:
    """Linear relations sum_k l_k f^(k)(-1) + sum_k r_k f^(k)(+1) = 0 (k = 0..3) satisfied by
    every section K_RF(., x'), x' in [-1, 1], hence by every uniform-init kernel interpolant
    with data in [-1, 1]; f^(k)(-1) and f^(k)(1) are the derivatives of the outermost cubic
    pieces.  ``matrix`` rows are [l_0..l_3, r_0..r_3] (reduced row echelon form)."""
    left_piece: sp.Expr          # K_RF(x, x') for -1 <= x <= x' <= 1
    right_piece: sp.Expr         # K_RF(x, x') for -1 <= x' <= x <= 1
    coefficient_matrix: sp.Matrix  # rows: coefficients of x'^0..x'^3 of the functional
    matrix: sp.Matrix            # null space basis, rref
    relations: list[sp.Expr] = field(default_factory=list)  # in terms of the symbols below
    fL: tuple[sp.Symbol, ...] = ()
    fR: tuple[sp.Symbol, ...] = ()
    natural_fails: sp.Expr = sp.Integer(0)  # f''(-1) of K(., x'): not identically zero


@lru_cache(maxsize=None)
def derive_spline_end_conditions() -> SplineEndConditions:
    """W3b: on [-1, 1] every K_RF(., x') is a cubic with a single third-derivative jump
    at x'; a functional of the 8 boundary derivatives that annihilates K(., x') for every
    x' must annihilate every coefficient of the polynomial in x' (degree 3): the null space
    of a 4 x 8 matrix, of dimension 4 (4 relations: two fix the free third derivatives of
    the outer pieces, two are the spline's end conditions)."""
    reg = uniform_region_expressions("rf")
    left = reg[("x<x'", "in", "in")]
    right = reg[("x>x'", "in", "in")]
    fL = sp.symbols("fL0:4")
    fR = sp.symbols("fR0:4")
    l = sp.symbols("l0:4")
    r = sp.symbols("r0:4")
    functional = sp.expand(sum(c * sp.diff(left, x, k) for k, c in enumerate(l)).subs(x, -1)
                           + sum(c * sp.diff(right, x, k) for k, c in enumerate(r)).subs(x, 1))
    poly = sp.Poly(functional, xp)
    M = sp.Matrix([[poly.coeff_monomial(xp**k).coeff(c) for c in l + r] for k in range(4)])
    N = sp.Matrix.hstack(*M.nullspace()).T.rref()[0]
    rel = [sp.expand(sum(N[i, j] * v for j, v in enumerate(fL + fR))) for i in range(N.rows)]
    return SplineEndConditions(left, right, M, N, rel, fL, fR,
                               sp.expand(sp.diff(left, x, 2).subs(x, -1)))
