"""Kernel regime of 1-D ReLU networks (Williams et al. 2019, Sec. 4 / Thm 5; claims W3a-W3e).

Random-feature kernel K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+] and the NTK
K_NTK = K_RF + sigma_c^2 (1 + x x') P(a x > b, a x' > b) for the two initializations of
docs/conventions.md, section 1 ("uniform": (a, b) ~ U([-1, 1]^2); "gaussian": (a, b) ~ N(0, I_2)), the RKHS
weight omega(x) = int |a|^3 p_0(a, a x) da, the second-derivative identity
d^2/dx^2 K_RF(x, x') = omega(x) |x - x'| / 2, the cubic-spline structure of the uniform-init
interpolant with its END CONDITIONS, and the kinks of NTK interpolants.

Everything is DERIVED here from the defining integrals (SymPy only).  How the integrals are
organized (the pitfall of docs/conventions.md, section 1: a naive 2-D integration over R^2 returns a wrong
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

from derivations.base import Derivation, Step

__all__ = [
    "x", "xp", "a", "b", "s", "sigma_c", "INITS",
    "UniformKernels", "GaussianKernels", "derive_uniform", "derive_gaussian",
    "ArccosStable", "derive_arccos_stable", "ARCCOS_SERIES_TERMS", "ARCCOS_T_SERIES",
    "uniform_region_expressions", "assemble_uniform", "rkhs_weight", "second_derivative_identity",
    "kernel_jumps", "SplineEndConditions", "derive_spline_end_conditions",
    "second_moment", "rf_kernel_expr", "ntk_kernel_expr", "fig4_data", "exact_interpolant_coefficients",
    "derive_w3a", "derive_w3b", "derive_w3c", "derive_w3d", "derive_w3e", "derive_w3f",
    "DERIVATIONS",
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


def assemble_uniform(lo: sp.Expr, mid: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """The sign split K = (G(x, x'; min(x, x')) + G(-x, -x'; -max(x, x'))) / 4 with G given
    by its branches for s < -1, |s| <= 1, s > 1 (a Piecewise valid for all real x, x')."""
    br = (lo, mid, hi)
    return sp.Rational(1, 4) * (_G(br, x, xp, sp.Min(x, xp)) + _G(br, -x, -xp, -sp.Max(x, xp)))


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
    quarter = sp.Rational(1, 4)
    rf = assemble_uniform(*rf_br)
    prob = assemble_uniform(*pr_br)
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
def derive_gaussian(variance: sp.Expr = sp.Integer(1)) -> GaussianKernels:
    """K_RF, P(both active), K_NTK for the gaussian init (W3c/W3d).

    Rotate so that x~ = |x~| (1, 0) and x~' = |x~'| (cos phi, sin phi), phi in [0, pi];
    with (a, b) = r (cos t, sin t) the density is e^{-r^2/(2 v)} r dr dt / (2 pi v) and
    (a x - b)_+ = r |x~| cos(t)_+ etc.  Both cosines are positive on t in (phi - pi/2, pi/2).
    ``variance`` v = 1 is the init of the paper; another value exists only so that a test
    can show that a wrong variance in the derivation fails the checks."""
    v = sp.sympify(variance)
    dens_r = sp.exp(-_r**2 / (2 * v)) / (2 * sp.pi * v)
    radial_rf = sp.simplify(sp.integrate(_r**3 * dens_r, (_r, 0, sp.oo)))
    radial_p = sp.simplify(sp.integrate(_r * dens_r, (_r, 0, sp.oo)))
    ang_rf = sp.expand(sp.integrate(sp.cos(_th) * sp.cos(_th - phi), (_th, phi - sp.pi / 2, sp.pi / 2)))
    ang_p = sp.integrate(sp.Integer(1), (_th, phi - sp.pi / 2, sp.pi / 2))
    nx, nxp = sp.symbols(r"n_{x} n_{x'}", positive=True)  # the norms |x~|, |x~'|
    rf_angle = sp.factor(nx * nxp * radial_rf * ang_rf)
    prob_angle = sp.factor(radial_p * ang_p)
    # coordinates: |x~||x~'| cos(phi) = 1 + x x', |x~||x~'| sin(phi) = |x - x'| (2-D cross product)
    phi_xy = sp.atan2(sp.Abs(x - xp), 1 + x * xp)
    rf_expanded = sp.expand(sp.expand_trig(rf_angle))
    rf = rf_expanded.subs({nx * nxp * sp.cos(phi): 1 + x * xp, nx * nxp * sp.sin(phi): sp.Abs(x - xp)})
    rf = sp.collect(sp.expand(rf), phi).subs(phi, phi_xy)
    prob = prob_angle.subs(phi, phi_xy)
    m2 = sp.integrate(a**2 * sp.exp(-a**2 / (2 * v)) / sp.sqrt(2 * sp.pi * v), (a, -sp.oo, sp.oo))
    return GaussianKernels(radial_rf, ang_rf, radial_p, ang_p, rf_angle, prob_angle, phi_xy,
                           rf, prob, rf + sigma_c**2 * (1 + x * xp) * prob, m2)


# ------------------------------------------------ gaussian: a float64-stable form (derived)
_d = sp.Symbol("d", nonnegative=True)   # d = |x - x'|
_c = sp.Symbol("c", real=True)          # c = 1 + x x'
_psi = sp.Symbol("psi", nonnegative=True)  # psi = pi - phi = atan2(d, -c), in [0, pi]
_tt = sp.Symbol("t", nonnegative=True)  # t = d / |c| where c < 0 (then psi = atan t)
#: below this t the cancelling c < 0 branch is evaluated by its Taylor series
SERIES_T = sp.Rational(1, 4)
#: number of series terms: the alternating remainder after N terms, relative to the sum,
#: is <= 3 t^(2N) / (2N + 3) <= 3 (1/16)^N / (2N + 3), below 1e-32 for N = 26, so the
#: stable form equals the primary one to more than 30 digits
SERIES_TERMS = 26


@dataclass(frozen=True)
class GaussianStable:
    """A float64-stable rewrite of the gaussian K_RF, P and K_NTK (x, x' real) and the proof
    data of its equality with the primary (arc-cosine) form."""
    rf_dc: sp.Expr            # K_RF in (d, c, psi)
    prob_dc: sp.Expr          # P in (d, c, psi)
    rf_neg: sp.Expr           # K_RF for c < 0 in (c, t): |c| (t - atan t) / (2 pi)
    rf_series: sp.Expr        # its Taylor polynomial in t (SERIES_TERMS terms)
    rf: sp.Expr               # Piecewise in (x, x')
    prob: sp.Expr
    ntk: sp.Expr
    max_rel_diff: float       # max |stable / primary - 1| over the proof grid at 50 digits
    grid_size: int


def _xy_of_dc(e: sp.Expr) -> sp.Expr:
    """Substitute d = |x - x'|, c = 1 + x x'."""
    return e.subs({_d: sp.Abs(x - xp), _c: 1 + x * xp}, simultaneous=True)


def stable_proof_grid() -> list[tuple[float, float]]:
    """(x, x') covering every branch of the stable form: c > 0, c = 0, c < 0 with
    t >= 1/4 and t < 1/4 (down to t ~ 1e-8), the diagonal d = 0, and |x| up to 1e8."""
    v = [-1e8, -1e4, -100.0, -20.0, -10.0, -3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0, 7.0, 50.0, 1e4, 1e8]
    pts = [(p, q) for p in v for q in v]
    pts += [(10.0, -10.5), (10.0, -9.0), (100.0, -101.0), (-1e4, 1e4 + 1.0), (3.0, -3.5),
            (2.0, -0.5), (1.0, -1.0), (0.5, -2.0), (4.0, -4.25), (1e3, -1e3 * (1 + 1e-9))]
    return pts


@lru_cache(maxsize=None)
def derive_gaussian_stable(variance: sp.Expr = sp.Integer(1)) -> GaussianStable:
    """The float64-stable form of the gaussian kernels, DERIVED from :func:`derive_gaussian`.

    1. In d = |x - x'|, c = 1 + x x' the angle is phi = atan2(d, c), and pi - phi =
       atan2(d, -c) =: psi (no cancellation near phi = pi, where P is small).
    2. For c >= 0 both terms of K_RF = (d + psi c) / (2 pi) are >= 0: no cancellation.
    3. For c < 0: psi = atan t with t = d / |c|, d = |c| t; SymPy reduces K_RF to
       |c| (t - atan t) / (2 pi), which cancels for small t; there the Taylor polynomial of
       t - atan t (SERIES_TERMS terms, derived by ``series``) is used for t < 1/4.
    The equality with the primary form is checked at 50 digits on
    :func:`stable_proof_grid` (every branch); the maximal relative difference is stored."""
    import mpmath
    g = derive_gaussian(variance)
    # step 1: K_RF and P in (d, c, psi); phi = pi - psi
    rf_dc = sp.expand(g.rf.subs(g.phi_xy, sp.pi - _psi))
    rf_dc = sp.expand(rf_dc.subs({sp.Abs(x - xp): _d}).subs(x * xp, _c - 1))
    prob_dc = sp.expand(g.prob.subs(g.phi_xy, sp.pi - _psi))
    if rf_dc.has(x) or rf_dc.has(xp) or prob_dc.has(x) or prob_dc.has(xp):
        raise AssertionError("the gaussian kernels did not reduce to (d, c, psi)")
    # step 2/3: the branches
    rf_pos = rf_dc.subs(_psi, sp.atan2(_d, -_c))
    cn = sp.Symbol("c_n", positive=True)  # c_n = -c = |c| on c < 0
    rf_neg = sp.factor(sp.expand(rf_dc.subs(_d, cn * _tt).subs(_c, -cn).subs(_psi, sp.atan(_tt))))
    rf_series = sp.expand(sp.series(rf_neg, _tt, 0, 2 * SERIES_TERMS + 3).removeO())
    back = lambda e: e.subs(_tt, _d / (-_c)).subs(cn, -_c)  # noqa: E731
    rf_st = sp.Piecewise((rf_pos, _c >= 0), (back(rf_neg), _d >= -SERIES_T * _c),
                         (back(rf_series), True))
    prob_st = prob_dc.subs(_psi, sp.atan2(_d, -_c))
    rf_xy, prob_xy = _xy_of_dc(rf_st), _xy_of_dc(prob_st)
    ntk_xy = rf_xy + sigma_c**2 * (1 + x * xp) * prob_xy
    # equality with the primary form at 50 digits on every branch
    pts = stable_proof_grid()
    pairs = [(rf_xy, g.rf), (prob_xy, g.prob),
             (ntk_xy.subs(sigma_c, sp.Rational(13, 10)), g.ntk.subs(sigma_c, sp.Rational(13, 10)))]
    worst = 0.0
    with mpmath.workdps(50):
        for st_e, pr_e in pairs:
            fs = sp.lambdify((x, xp), st_e, modules="mpmath")
            fp = sp.lambdify((x, xp), pr_e, modules="mpmath")
            for p, q in pts:
                P, Q = mpmath.mpf(p), mpmath.mpf(q)
                with mpmath.workdps(50 + 60):  # the primary form cancels for c << 0
                    ref = fp(P, Q)
                val = fs(P, Q)
                worst = max(worst, float(abs(val - ref) / abs(ref)) if ref != 0 else float(abs(val)))
    if not worst <= 1e-30:
        raise AssertionError(f"stable gaussian form differs from the primary one by {worst:.3g}")
    return GaussianStable(rf_dc, prob_dc, rf_neg, rf_series, rf_xy, prob_xy, ntk_xy, worst, len(pts))


# ------------------------------------ the d-dimensional arc-cosine kernel: a stable form (derived)
#: terms of the float64 series of t - atan t for t = tan psi < ARCCOS_T_SERIES: the
#: alternating remainder after N terms, relative to t^3 / 3, is <= 3 t^(2N) / (2N + 3)
#: <= 3 (1/16)^N / (2N + 3) < 2^-55 for N = 14
ARCCOS_SERIES_TERMS = 14
ARCCOS_T_SERIES = sp.Rational(1, 4)


@dataclass(frozen=True)
class ArccosStable:
    """The angular factor J(g) = sin g + (pi - g) cos g of the arc-cosine kernel
    E[relu(u . x) relu(v . x)] = s2 |u||v| J(g) / (2 pi) (x ~ N(0, s2 I_d), any d; it is
    the W3c kernel of (x~, x~') with s2 = 1) and its rewrite that keeps relative accuracy
    at g = pi, where J vanishes like (pi - g)^3 / 3."""
    angular: sp.Expr          # J(phi), read off derive_gaussian().rf_angle
    angular_psi: sp.Expr      # J(pi - psi) = sin psi - psi cos psi
    psi_series: sp.Expr       # its Taylor polynomial in psi (psi^3 / 3 - psi^5 / 30 + ...)
    opposite: sp.Expr         # J / |cos g| for cos g < 0 in t = tan psi: t - atan t
    parallel: sp.Expr         # J / cos g for cos g > 0 in t = tan g: pi + t - atan t
    t_series: sp.Expr         # the Taylor polynomial of t - atan t (ARCCOS_SERIES_TERMS terms)
    coefficients: tuple       # c_k with t - atan t = t^3 sum_k c_k t^(2k) (exact rationals)
    max_rel_diff: float       # max |stable / primary - 1| over the proof grid (float64 terms)


def derive_arccos_stable(terms: int = ARCCOS_SERIES_TERMS) -> ArccosStable:
    """The stable form of the arc-cosine angular factor, DERIVED from
    :func:`derive_gaussian` (numerics.gaussian_relu evaluates it; a test proves that its
    coefficients are these).

    1. J(phi) = 2 pi K_RF / (|x~||x~'|) from the polar-coordinate integral of W3c.
    2. psi = pi - phi: J = sin psi - psi cos psi, which cancels as psi -> 0 (series
       psi^3 / 3 - psi^5 / 30 + ...): its inputs sin psi, cos psi must come from the vectors
       (|u x v| / (|u||v|) and -u.v / (|u||v|)), not from psi.
    3. For cos g < 0 and t = tan psi = |u x v| / |u . v|: J = |cos g| (t - atan t); for
       t < 1/4 the Taylor polynomial of t - atan t (``terms`` terms, by ``series``).
    4. For cos g > 0 and t = tan g: J = cos g (pi + t - atan t) (no cancellation).
    The forms are checked against the primary J at 50 digits on a grid of psi in
    [1e-30, pi/2) and g in [1e-30, pi/2); the series with float64 coefficients' worst
    relative difference is stored (and must stay below 2^-52)."""
    import mpmath
    terms = int(terms)
    g = derive_gaussian()
    nx, nxp = sp.symbols(r"n_{x} n_{x'}", positive=True)
    J = sp.expand(sp.simplify(2 * sp.pi * g.rf_angle / (nx * nxp)))
    if J.has(nx) or J.has(nxp):
        raise AssertionError("the arc-cosine kernel did not factor as |x~||x~'| J(phi)")
    J_psi = sp.expand(J.subs(phi, sp.pi - _psi))
    psi_series = sp.expand(sp.series(J_psi, _psi, 0, 2 * terms + 3).removeO())
    # cos psi > 0, tan psi = t: J / cos psi = tan psi - psi = t - atan t
    opposite = sp.simplify(sp.expand(J_psi / sp.cos(_psi)).subs(sp.sin(_psi) / sp.cos(_psi),
                                                                 sp.tan(_psi)).subs(_psi, sp.atan(_tt)))
    parallel = sp.simplify(sp.expand(J / sp.cos(phi)).subs(sp.sin(phi) / sp.cos(phi),
                                                             sp.tan(phi)).subs(phi, sp.atan(_tt)))
    t_series = sp.expand(sp.series(opposite, _tt, 0, 2 * terms + 3).removeO())
    coefficients = tuple(t_series.coeff(_tt, 2 * k + 3) for k in range(terms))
    if sp.expand(t_series - _tt**3 * sum(c * _tt**(2 * k) for k, c in enumerate(coefficients))) != 0:
        raise AssertionError("t - atan t did not expand as t^3 times a series in t^2")
    f_J = sp.lambdify(phi, J, modules="mpmath")
    worst = 0.0
    poly = [float(c) for c in coefficients]
    with mpmath.workdps(50):
        for e in [mpmath.mpf(10) ** (-k) for k in range(1, 31)] + [mpmath.mpf(v) for v in
                                                                  (0.2, 0.24, 0.3, 0.7, 1.2, 1.5)]:
            for branch in ("opposite", "parallel"):
                ang = mpmath.pi - e if branch == "opposite" else e
                with mpmath.workdps(50 + 3 * 31):  # the primary form cancels near pi
                    ref = f_J(ang)
                t = mpmath.tan(e)
                if t < ARCCOS_T_SERIES:
                    s_t = t**3 * sum(mpmath.mpf(c) * t**(2 * k) for k, c in enumerate(poly))
                else:
                    s_t = t - mpmath.atan(t)
                val = mpmath.cos(e) * (s_t if branch == "opposite" else mpmath.pi + s_t)
                worst = max(worst, float(abs(val / ref - 1)))
    if not worst <= 2.0 ** -52:
        raise AssertionError(f"stable arc-cosine form differs from the primary one by {worst:.3g}")
    return ArccosStable(J, J_psi, psi_series, opposite, parallel, t_series, coefficients, worst)


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


# ----------------------------------------------------------------- Figure-4 data (W3f)
def fig4_data() -> tuple[tuple[sp.Rational, ...], tuple[sp.Integer, ...]]:
    """The square wave of Williams et al. (2019), Figure 4: 10 points x_j = -9/10 + j/5 on
    [-0.9, 0.9] with y = +1, +1, -1, -1, ... (exact rationals)."""
    xs = tuple(sp.Rational(-9, 10) + sp.Rational(j, 5) for j in range(10))
    ys = tuple(sp.Integer(1 if (j // 2) % 2 == 0 else -1) for j in range(10))
    return xs, ys


def exact_interpolant_coefficients(xs: tuple, ys: tuple) -> sp.Matrix:
    """alpha = K^{-1} y exactly (rational arithmetic) for the uniform-init K_RF and data in
    [-1, 1] (where K_RF is the single polynomial ``rf_inside`` in x, x', |x - x'|)."""
    if any(abs(v) > 1 for v in xs):
        raise ValueError("exact_interpolant_coefficients needs data in [-1, 1]")
    k = derive_uniform().rf_inside
    K = sp.Matrix(len(xs), len(xs), lambda i, j: k.xreplace({x: xs[i], xp: xs[j]}))
    return K.LUsolve(sp.Matrix(ys))


# ===================================================================== claim derivations
def derive_w3a() -> Derivation:
    """W3a: the uniform-init K_RF for all real x, x' (three branches of G)."""
    u = derive_uniform()
    lo, mid, hi = u.rf_branches
    G = sp.Function("G")
    steps = [
        Step("Uniform init: density $1/4$ on $[-1,1]^2$. For fixed $a$ the product "
             "$(ax-b)_+(ax'-b)_+$ is nonzero iff $b < \\min(ax, ax')$. Inner integral over $b$ "
             "from $-1$ to $t$:", sp.Eq(sp.Integral((a * x - b) * (a * xp - b), (b, -1, _t)), u.inner_rf, evaluate=False)),
        Step("Split by the sign of $a$. For $a>0$, $\\min(ax,ax') = a s$ with $s=\\min(x,x')$; "
             "for $a<0$ substitute $a\\to-a$: this maps $(x,x')\\to(-x,-x')$ and $s\\to-\\max(x,x')$. "
             "So $K_{RF} = \\tfrac14[G(x,x';s) + G(-x,-x';-L)]$, $L=\\max(x,x')$, with "
             "$G = \\int_0^1 \\int_{-1}^{\\min(1, as)} (ax-b)(ax'-b)\\,db\\,da$ (zero where $as<-1$)."),
        Step("Branch $s<-1$ (only $a < 1/|s|$ contributes):", sp.Eq(G(s), lo, evaluate=False)),
        Step("Branch $|s|\\le 1$ (upper limit $as$ for all $a\\in[0,1]$):", sp.Eq(G(s), mid, evaluate=False)),
        Step("Branch $s>1$ (upper limit clipped to $1$ for $a>1/s$):", sp.Eq(G(s), hi, evaluate=False)),
        Step("Hence the closed form valid for ALL real $x, x'$ (breakpoints at $x=x'$ and at "
             "$|x|=1$, $|x'|=1$):", u.rf, lhs="K_{RF}"),
        Step("On $[-1,1]^2$ both terms use the middle branch and the kernel is one polynomial in "
             "$x, x', |x-x'|$:", u.rf_inside, lhs="K_{RF}|_{[-1,1]^2}"),
    ]
    return Derivation(steps=steps, results={"G_lo": lo, "G_mid": mid, "G_hi": hi, "K_RF": u.rf})


def derive_w3b() -> Derivation:
    """W3b (Thm 5): cubic-spline structure and the end conditions of the uniform interpolant."""
    e = derive_spline_end_conditions()
    jumps = kernel_jumps("uniform", "rf", "in")
    d4_left, d4_right = sp.diff(e.left_piece, x, 4), sp.diff(e.right_piece, x, 4)
    steps = [
        Step("For $-1 \\le x \\le x' \\le 1$ the section $K_{RF}(\\cdot, x')$ is the cubic",
             e.left_piece, lhs="K_{left}"),
        Step("and for $-1 \\le x' \\le x \\le 1$", e.right_piece, lhs="K_{right}"),
        Step("Fourth derivatives vanish off the diagonal (left, right):", sp.Tuple(d4_left, d4_right)),
        Step("Jumps of $\\partial_x^k K$ at $x = x'$, $k = 0..3$: $K$ is $C^2$ with a constant "
             "third-derivative jump (Thm 5: the interpolant $\\sum_j \\alpha_j K(\\cdot,x_j)$ is a "
             "cubic spline with knots at the data, $[f''']_{x_j} = \\alpha_j/8$):", sp.Tuple(*jumps),
             lhs="[\\partial_x^k K]_{x=x'}"),
        Step("End conditions. Every section satisfies $K''(-1, x') = (1+x')/16 \\ne 0$, so it is "
             "NOT the natural spline:", e.natural_fails, lhs="\\partial_x^2K(-1,x')"),
        Step("A functional $\\sum_k l_k f^{(k)}(-1) + \\sum_k r_k f^{(k)}(1)$ of the outer cubic "
             "pieces annihilates all sections iff it annihilates the 4 coefficients (in $x'$) of "
             "the cubic; the null space of this $4\\times 8$ system is 4-dimensional, giving the "
             "relations $(f_{L,k} = f^{(k)}(-1^+),\\ f_{R,k} = f^{(k)}(1^-))$:",
             sp.Tuple(*e.relations), lhs="\\text{relations}"),
        Step("Reading: the last two say that $f''$ on the left outer piece is MINUS $f''$ on the "
             "right outer piece as linear functions ($f''_L(t) = -f''_R(t)$; for the kernel "
             "sum $f''/\\omega = \\tfrac12\\sum_j\\alpha_j|x-x_j|$ whose outer linear pieces are "
             "opposite); the first two fix the affine part of $f$ (W3e). With data in "
             "$[-1,1]$ these 4 relations replace the natural conditions $f''(\\pm1)=0$: a cubic "
             "spline on $[-1, 1]$ with knots at the data and free values at $\\pm1$ has "
             "$s+4$ degrees of freedom, the $s$ data and these 4 relations fix it."),
        Step("Coefficient matrix of the relations (rows $[l_0..l_3, r_0..r_3]$, reduced row "
             "echelon form), used by the check:", e.matrix, lhs="M"),
    ]
    from derivations import williams_thm5 as t5
    steps += t5.thm5_steps()
    return Derivation(steps=steps, results={"end_conditions": e.matrix, "jumps": tuple(jumps),
                                            **t5.thm5_results()})


def _stable_steps(st: GaussianStable) -> list[Step]:
    return [
        Step("Float64-stable form. With $d = |x-x'|$, $c = 1+xx'$ and "
             "$\\psi = \\pi-\\varphi = \\operatorname{atan2}(d, -c)$ (accurate where "
             "$\\varphi\\to\\pi$):", sp.Tuple(st.rf_dc, st.prob_dc), lhs="(K_{RF}, P)"),
        Step("For $c<0$, $\\psi = \\arctan t$ with $t = d/|c|$, and $K_{RF}$ reduces to "
             "(cancelling for small $t$; $c_n = |c|$):", st.rf_neg, lhs="K_{RF}|_{c<0}"),
        Step(f"so for $t < {SERIES_T}$ its Taylor polynomial ({SERIES_TERMS} terms; "
             "alternating remainder $< 10^{-32}$ relative) is used; the first terms:",
             sum(sorted(sp.Add.make_args(st.rf_series), key=lambda e: sp.degree(e, _tt))[:3]), lhs="K_{RF}|_{c<0,\\,t\\ll1}"),
        Step(f"Equality of the stable and the primary forms ($K_{{RF}}$, $P$, $K_{{NTK}}$) at 50 "
             f"digits on {st.grid_size} points covering every branch ($c>0$, $c=0$, $c<0$ with "
             "$t$ above and below the threshold, $|x|$ up to $10^8$): max relative difference",
             sp.Float(st.max_rel_diff, 3), lhs="\\max|\\text{stable}/\\text{primary}-1|"),
    ]


def derive_w3c(variance: sp.Expr = sp.Integer(1)) -> Derivation:
    """W3c: the gaussian-init (arc-cosine) K_RF in polar coordinates, and its derived
    float64-stable form (``variance`` != 1 only for the test of a wrong derivation)."""
    g = derive_gaussian(variance)
    st = derive_gaussian_stable(variance)
    th = sp.Symbol("theta")
    om = rkhs_weight("gaussian")
    steps = [
        Step("Gaussian init, $(a,b) = r(\\cos\\theta, \\sin\\theta)$, density "
             "$e^{-r^2/2} r\\,dr\\,d\\theta/(2\\pi)$. By rotation invariance put "
             "$\\tilde x = |\\tilde x|(1,0)$, $\\tilde x' = |\\tilde x'|(\\cos\\varphi,\\sin\\varphi)$, "
             "$\\varphi\\in[0,\\pi]$; then $(ax-b)_+ = r|\\tilde x|\\cos(\\theta)_+$. Radial factor:",
             sp.Eq(sp.Integral(_r**3 * sp.exp(-_r**2 / 2) / (2 * sp.pi), (_r, 0, sp.oo)), g.radial_rf, evaluate=False)),
        Step("Both cosines are positive on the arc $\\theta\\in(\\varphi-\\pi/2, \\pi/2)$; angular factor:",
             sp.Eq(sp.Integral(sp.cos(th) * sp.cos(th - phi), (th, phi - sp.pi / 2, sp.pi / 2)), g.angular_rf, evaluate=False)),
        Step(r"Arc-cosine kernel (Cho & Saul order 1), with $n_x = |\tilde x|$, $n_{x'} = |\tilde x'|$:", g.rf_angle, lhs="K_{RF}"),
        Step("In coordinates $|\\tilde x||\\tilde x'|\\cos\\varphi = 1+xx'$, "
             "$|\\tilde x||\\tilde x'|\\sin\\varphi = |x-x'|$ (2-D cross product), so "
             "$\\varphi = \\operatorname{atan2}(|x-x'|, 1+xx')$ and", g.rf, lhs="K_{RF}"),
        Step("Pitfall (a naive SymPy 2-D integral over $\\mathbb{R}^2$ returns ~0.5771 at "
             "$(1/2, 1/3)$); the polar derivation gives",
             sp.N(g.rf.subs({x: sp.Rational(1, 2), xp: sp.Rational(1, 3)}), 16), lhs="K_{RF}(1/2,1/3)"),
        Step("Not a cubic spline: $\\partial_x^2 K_{RF} = \\omega(x)|x-x'|/2$ with "
             "$\\omega = 2/(\\pi(1+x^2)^2)$ (W3e), so for the interpolant "
             "$f''(x)/\\omega(x) = \\tfrac12\\sum_j \\alpha_j |x-x_j|$ is piecewise LINEAR, "
             "while $f$ itself is not piecewise polynomial; the jumps of $\\partial_x^k K$ at "
             "$x=x'$ ($k=0..3$):", sp.Tuple(*kernel_jumps("gaussian", "rf")), lhs="\\text{jumps}"),
        Step("Weight used above:", om, lhs="\\omega"),
        *_stable_steps(st),
    ]
    return Derivation(steps=steps, results={"rf": g.rf, "rf_stable": st.rf})


def derive_w3d(variance: sp.Expr = sp.Integer(1)) -> Derivation:
    """W3d: P(both active) and K_NTK for both inits; the kinks (f' jumps) of NTK interpolants
    (``variance``: of the gaussian init, != 1 only for the test of a wrong derivation)."""
    u, g = derive_uniform(), derive_gaussian(variance)
    st = derive_gaussian_stable(variance)
    ju = kernel_jumps("uniform", "ntk", "in")
    jo = kernel_jumps("uniform", "ntk", ">1")
    jg = kernel_jumps("gaussian", "ntk")
    plo, pmid, phi_ = u.prob_branches
    steps = [
        Step("$f = m^{-1/2}\\sum c_i(a_ix-b_i)_+$: $\\partial_c f = \\phi$, "
             "$\\partial_a f = c\\,x\\,1[ax>b]$, $\\partial_b f = -c\\,1[ax>b]$; with $E c^2 = "
             "\\sigma_c^2$ independent of $(a,b)$: $K_{NTK} = K_{RF} + \\sigma_c^2(1+xx')P(ax>b,ax'>b)$."),
        Step("Uniform init: same sign split with integrand $1$; branches of $G_P(s)$ "
             "($s<-1$, $|s|\\le1$, $s>1$):", sp.Tuple(plo, pmid, phi_), lhs="G_P"),
        Step("assembled by the same sign split, for all real $x, x'$:", u.prob, lhs="P^{uniform}"),
        Step("so on $[-1,1]^2$", u.prob_inside, lhs="P"),
        Step("Gaussian init: the arc where both are active has length $\\pi-\\varphi$ and "
             "radial mass $1/(2\\pi)$:", g.prob, lhs="P"),
        Step("NTK closed forms:", u.ntk, lhs="K_{NTK}^{uniform}"),
        Step("and for the gaussian init", g.ntk, lhs="K_{NTK}^{gaussian}"),
        Step("Jumps of $\\partial_x^k K_{NTK}$ at $x=x'$ ($k=0..3$), uniform, $|x'|\\le1$: $f'$ "
             "jumps, so NTK interpolants have KINKS at the data: "
             "$[f']_{x_j} = \\alpha_j \\cdot$(the $k=1$ entry)", sp.Tuple(*ju), lhs="J^{uniform}"),
        Step("uniform, $x' > 1$ (also $x'<-1$):", sp.Tuple(*jo), lhs="J^{uniform}_{|x'|>1}"),
        Step("gaussian:", sp.Tuple(*jg), lhs="J^{gaussian}"),
        Step("Float64-stable gaussian forms (derived in W3c, same construction): "
             "$P = \\operatorname{atan2}(d, -c)/(2\\pi)$ and $K_{NTK} = K_{RF} + "
             "\\sigma_c^2 c P$ with the stable $K_{RF}$.", st.prob, lhs="P^{gaussian}"),
    ]
    return Derivation(steps=steps, results={
        "P_lo": plo, "P_mid": pmid, "P_hi": phi_, "P_uniform": u.prob, "P_gaussian": g.prob,
        "P_gaussian_stable": st.prob, "ntk_uniform": u.ntk, "ntk_gaussian": g.ntk,
        "ntk_gaussian_stable": st.ntk,
        "jump_uniform": ju[1], "jump_uniform_outside": jo[1], "jump_gaussian": jg[1]})


def derive_w3e() -> Derivation:
    """W3e: the RKHS weight omega, the second-derivative identity and the affine part."""
    steps = [Step("$\\omega(x) = \\int |a|^3 p_0(a, ax)\\,da$. Uniform: $p_0 = 1/4$ on "
                  "$|a|\\le\\min(1, 1/|x|)$:", rkhs_weight("uniform"), lhs="\\omega_{uniform}"),
             Step("Gaussian:", rkhs_weight("gaussian"), lhs="\\omega_{gaussian}")]
    for init in INITS:
        ident = second_derivative_identity(init)
        steps.append(Step(f"{init}: $\\partial_x^2 K_{{RF}}(x,x') - \\omega(x)|x-x'|/2$ simplifies to 0 "
                          f"in every region ({len(ident)} regions):", sp.Tuple(*ident.values()),
                          lhs="\\text{residuals}"))
    steps += [
        Step("Why (and the affine part). Write $(u)_+ = (u+|u|)/2$; odd cross terms vanish "
             "($p_0$ symmetric), and in coordinates $b = a t$ ($db = |a|dt$): "
             "$E|ax-b||ax'-b| = \\int \\omega(t)|x-t||x'-t|dt$, $E(ax-b)(ax'-b) = \\sigma^2(1+xx')$ "
             "with $\\sigma^2 = E a^2 = E b^2$ ($E ab = 0$). Hence "
             "$K_{RF}(x,x') = \\tfrac14\\int\\omega(t)|x-t||x'-t|\\,dt + \\tfrac{\\sigma^2}{4}(1+xx')$."),
        Step("Second moments (uniform, gaussian):",
             sp.Tuple(second_moment("uniform"), second_moment("gaussian")), lhs="\\sigma^2"),
        Step("For $g = \\sum_k\\beta_k K(\\cdot, z_k)$: $g''/\\omega = \\tfrac12\\sum_k\\beta_k|x-z_k|$ and "
             "$\\|g\\|_{\\mathcal H}^2 = \\beta^T K\\beta = \\int g''^2/\\omega\\,dx + \\tfrac{4}{\\sigma^2}(A_0^2+A_1^2)$ "
             "with the affine part $A_0 = -\\tfrac{\\sigma^2}{4}\\sum\\beta_k$, "
             "$A_1 = \\tfrac{\\sigma^2}{4}\\sum\\beta_k z_k$. The kernel interpolant is the "
             "minimum-norm interpolant, i.e. it minimizes $\\int f''^2/\\omega$ + affine part: "
             "for the uniform init $\\omega$ is constant on $[-1,1]$ (cubic spline, W3b); for "
             "the gaussian $f''(1+x^2)^2$ is piecewise linear (W3c)."),
    ]
    return Derivation(steps=steps, results={"omega_uniform": rkhs_weight("uniform"),
                                            "omega_gaussian": rkhs_weight("gaussian"),
                                            "sigma2_uniform": second_moment("uniform"),
                                            "sigma2_gaussian": second_moment("gaussian")})


def _linearized_mean() -> sp.Expr:
    """E psi = k^T alpha - beta^T K alpha (alpha = K^-1 y, beta = K^-1 k) for a generic
    symmetric 3 x 3 K: simplifies to 0 (E phi(x) phi(X) = k, E phi(X) phi(X)^T = K)."""
    n = 3
    Ks = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"K_{min(i, j)}{max(i, j)}"))
    ks = sp.Matrix(sp.symbols(f"k_0:{n}"))
    ys = sp.Matrix(sp.symbols(f"y_0:{n}"))
    Kinv = Ks.inv()
    alpha, beta = Kinv * ys, Kinv * ks
    return sp.simplify((ks.T * alpha - beta.T * Ks * alpha)[0, 0])


def derive_w3f() -> Derivation:
    """W3f (Figure 4): the m -> oo limit of output-layer training and its fluctuation rate.

    f_m(x) = k_m(x)^T K_m^{-1} y (min-norm fit, empirical kernel K_m = K + dK), linearized:
    f_m - f = (1/m) sum_i psi(a_i, b_i; x) + O_P(1/m) with
    psi = (phi(x) - beta(x)^T phi(X)) (alpha^T phi(X)), beta = K^{-1} k(x), alpha = K^{-1} y,
    E psi = 0; so E (f_m(x) - f(x))^2 = E psi^2 m^(2 rate) (1 + O(1/m)), rate = -1/2."""
    m = sp.Symbol("m", positive=True, integer=True)
    v = sp.Symbol("sigma_psi^2", positive=True)
    eps_ = sp.Symbol("epsilon")
    k_, K_, y_, dk_, dK_ = sp.symbols("k K y dk dK", positive=True)
    f_lin = sp.series((k_ + eps_ * dk_) / (K_ + eps_ * dK_) * y_, eps_, 0, 2).removeO().coeff(eps_)
    mean_psi = _linearized_mean()
    # E (m^-1 sum_i psi_i)^2 with E psi_i psi_j = mu^2 + (E psi^2 - mu^2) delta_ij (i.i.d.)
    mu = sp.Symbol("mu", real=True)
    i_, j_ = sp.symbols("i j", integer=True, positive=True)
    # sum over j of E psi_i psi_j = mu^2 for j != i, E psi_i^2 = v for j = i
    second = sp.Sum(sp.Sum(mu**2, (j_, 1, m)) + (v - mu**2), (i_, 1, m)).doit() / m**2
    second = sp.simplify(second.subs(mu, mean_psi))
    rate = sp.limit(m * sp.diff(sp.log(sp.sqrt(second)), m), m, sp.oo)
    xs, ys = fig4_data()
    alpha = exact_interpolant_coefficients(xs, ys)
    steps = [
        Step("From $c(0)=0$ GD on $c$ only ($\\alpha(m)=1$) keeps $c$ in the row space of "
             "$\\Phi$ ($\\Phi_{ji} = \\phi_i(x_j)$) and converges to the min-norm solution "
             "$c^* = \\Phi^T(\\Phi\\Phi^T)^{-1}y$, i.e. $f_m(x) = k_m(x)^TK_m^{-1}y$ with the "
             "empirical kernel $K_m = \\frac1m\\sum_i\\phi_i\\phi_i^T$, an average of $m$ i.i.d. "
             "terms with mean $K_{RF}$ (W3a)."),
        Step("First-order expansion in $(dk, dK) = (k_m - k, K_m - K)$ (scalar picture of "
             "$k^TK^{-1}y$; the matrix version is $dk^T\\alpha - \\beta^T dK\\,\\alpha$):",
             f_lin, lhs="\\partial_\\epsilon (k+\\epsilon dk)(K+\\epsilon dK)^{-1}y"),
        Step("Hence $f_m(x) - f(x) = \\frac1m\\sum_i\\psi(a_i,b_i;x) + O_P(m^{-1})$ with "
             "$\\psi = (\\phi(x) - \\beta(x)^T\\phi(X))(\\alpha^T\\phi(X))$, "
             "$\\beta = K^{-1}k(x)$, $\\alpha = K^{-1}y$, and $E\\psi = k^T\\alpha - \\beta^TK\\alpha = 0$: "
             "a mean of i.i.d. centred terms, so $E(f_m - f)^2 = E\\psi^2/m\\,(1 + O(1/m))$ and "
             "the RMS distance decays at the rate"),
        Step("$E\\psi = k^T\\alpha - \\beta^T K\\alpha$ for a generic symmetric $3\\times3$ "
             "kernel matrix (symbolic):", mean_psi, lhs="E\\psi"),
        Step("Mean of $m$ i.i.d. terms: $E(\\frac1m\\sum_i\\psi_i)^2 = \\frac1{m^2}\\sum_{i,j}"
             "(\\mu^2 + (\\sigma_\\psi^2-\\mu^2)\\delta_{ij})$ with $\\mu = E\\psi$:", second,
             lhs="E|f_m - f|^2"),
        Step("rate $= \\lim_{m\\to\\infty} m\\,\\partial_m \\log\\sqrt{E|f_m-f|^2}$:", rate,
             lhs="\\text{rate}"),
        Step("The limit interpolant of the Figure-4 square wave, exact in rational arithmetic "
             "from the derived uniform kernel (W3a, on $[-1,1]^2$): $\\alpha = K^{-1}y$ =",
             alpha.T, lhs="\\alpha^T"),
    ]
    return Derivation(steps=steps, results={"rate": rate, "alpha_fig4": alpha})


DERIVATIONS = {"W3a": derive_w3a, "W3b": derive_w3b, "W3c": derive_w3c, "W3d": derive_w3d,
               "W3e": derive_w3e, "W3f": derive_w3f}
