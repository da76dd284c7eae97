"""Williams et al. (NeurIPS 2019), Thm 5 under its general hypothesis (claim W3b): B given A
uniform on an A-dependent interval I_A, or on a finite union of intervals.

Initialisation p0(a, b) = p_A(a) 1{b in I_a} / |I_a| with p_A uniform on [-1, 1] and I_a a
disjoint union of intervals whose endpoints are affine in a on each half a < 0, a > 0
(:class:`IntervalInit`; the families of :data:`FAMILIES`).  Derived here (SymPy only):

* the half weights omega_s(x) = int_{s a > 0} |a|^3 p0(a, a x) da (s = +-1), by
  ``sp.integrate`` on each region of x where the set {a : a x in I_a} has a fixed form
  (:func:`derive_weight`), and omega = omega_+ + omega_-;
* d^2/dx^2 K_RF(x, x') = omega_+(x) (x' - x)_+ + omega_-(x) (x - x')_+ (from
  d^2/dx^2 (a x - b)_+ = a^2 delta(a x - b)), = omega(x) |x - x'| / 2 when omega_+ = omega_-
  (every family here: p_A even and I_{-a} = -I_a);
* the intervals where omega is a non-zero constant (there the interpolant
  f = sum_j alpha_j K(., x_j) is a C^2 cubic spline with [f''']_{x_j} = omega alpha_j),
  and the edges of omega's pieces, with the jumps of d^k/dx^k K(., x') there (k = 0..3):
  [f'']_e = [omega]_e / 2 sum_j alpha_j |e - x_j|, generically non-zero where omega jumps;
* K_RF itself for the family "scaled" (:func:`derive_scaled_kernel`), for all real x, x'.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

__all__ = ["x", "xp", "a", "u", "IntervalInit", "FAMILIES", "FamilyWeight", "derive_weight",
           "piecewise_constant_families", "thm5_results", "thm5_steps",
           "edge_jumps", "derive_scaled_kernel", "ScaledKernel", "SCALE"]

x, xp = sp.symbols("x x'", real=True)
a = sp.Symbol("a", real=True)
u = sp.Symbol("u", positive=True)       # u = |a|
_b = sp.Symbol("b", real=True)
_t = sp.Symbol("t", real=True)
_s = sp.Symbol("s", real=True)

#: the half-width factor c of the family "scaled", I_a = [-c |a|, c |a|]
SCALE = sp.Rational(3, 2)


@dataclass(frozen=True)
class IntervalInit:
    """An initialisation A ~ U([-1, 1]), B | A uniform on I_A = union of ``intervals``
    [lo_k(a), hi_k(a)] (disjoint, lo_k < hi_k for a != 0; SymPy expressions in ``a``,
    affine in a on each half a < 0, a > 0)."""
    name: str
    intervals: tuple[tuple[sp.Expr, sp.Expr], ...]
    description: str
    density_A: sp.Expr = sp.Rational(1, 2)   # p_A on [-1, 1]


FAMILIES: dict[str, IntervalInit] = {
    "scaled": IntervalInit("scaled", ((-SCALE * sp.Abs(a), SCALE * sp.Abs(a)),),
                           "I_a = [-c|a|, c|a|], c = 3/2"),
    "shifted": IntervalInit("shifted", ((a - 1, a + 1),), "I_a = [a - 1, a + 1]"),
    "gap": IntervalInit("gap", ((-2 * sp.Abs(a), -sp.Abs(a)), (sp.Abs(a), 2 * sp.Abs(a))),
                        "I_a = |a| ([-2, -1] U [1, 2])"),
}


def _family(name: str) -> IntervalInit:
    """The family called ``name``; ValueError listing the known ones otherwise."""
    if not isinstance(name, str) or name not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}; got {name!r:.40}")
    return FAMILIES[name]


def _affine_in_u(e: sp.Expr, what: str) -> tuple[sp.Expr, sp.Expr]:
    """(e0, e1) with e = e0 + e1 u; raises if e is not affine in u."""
    e = sp.expand(e)
    p = sp.Poly(e, u)
    if p.degree() > 1 or e.has(a) or e.has(x):
        raise ValueError(f"{what}: an endpoint of I_a must be affine in a on each half; got {e}")
    return p.coeff_monomial(1), p.coeff_monomial(u)


def _half_constraints(fam: IntervalInit, sgn: int) -> list[list[tuple[sp.Expr, sp.Expr]]]:
    """For a = sgn u (u in (0, 1]) and each interval k: the constraints c(x) u <= d of
    lo_k <= a x <= hi_k (lists of (c, d), d free of x)."""
    out = []
    for k, (lo, hi) in enumerate(fam.intervals):
        l0, l1 = _affine_in_u(lo.subs(a, sgn * u), f"{fam.name}: lo_{k}")
        h0, h1 = _affine_in_u(hi.subs(a, sgn * u), f"{fam.name}: hi_{k}")
        # l0 + l1 u <= sgn x u  <=>  (l1 - sgn x) u <= -l0 ;  sgn x u <= h0 + h1 u
        out.append([(l1 - sgn * x, -l0), (sgn * x - h1, h0)])
    return out


def _breakpoints(cons: list[list[tuple[sp.Expr, sp.Expr]]]) -> set[sp.Expr]:
    """x where a coefficient c(x) vanishes or two bounds d/c (or a bound and 0, 1) cross."""
    pts: set[sp.Expr] = set()
    for group in cons:
        bounds = [sp.Integer(0), sp.Integer(1)]
        for c, d in group:
            pts.update(sp.solve(sp.Eq(c, 0), x))
            bounds.append(d / c)
        for i in range(len(bounds)):
            for j in range(i + 1, len(bounds)):
                diff = sp.together(bounds[i] - bounds[j])
                if diff.has(x):
                    pts.update(sp.solve(sp.numer(diff), x))
    return {p for p in pts if p.is_real}


def _u_range(group: list[tuple[sp.Expr, sp.Expr]], x0: sp.Rational) -> tuple[sp.Expr, sp.Expr] | None:
    """The u-interval [L(x), U(x)] of {u in (0, 1] : c(x0) u <= d for all constraints}, as
    the expressions that bind at x0 (None when empty at x0)."""
    lows, ups = [(sp.Integer(0), sp.Integer(0))], [(sp.Integer(1), sp.Integer(1))]
    for c, d in group:
        c0 = c.subs(x, x0)
        if c0 == 0:
            if d < 0:
                return None
            continue
        (ups if c0 > 0 else lows).append((d / c0, d / c))
    lo_v, lo_e = max(lows, key=lambda t: t[0])
    up_v, up_e = min(ups, key=lambda t: t[0])
    if not lo_v < up_v:
        return None
    return lo_e, up_e


@dataclass(frozen=True)
class FamilyWeight:
    """The derived RKHS weight of one family: ``omega`` (a Piecewise in x), its halves,
    ``edges`` (breakpoints of the pieces, sorted), ``constant`` (intervals (lo, hi) where
    omega is a non-zero constant, with the constant), ``pieces`` [(expr, lo, hi)]."""
    family: IntervalInit
    omega: sp.Expr
    omega_plus: sp.Expr
    omega_minus: sp.Expr
    pieces: tuple[tuple[sp.Expr, sp.Expr, sp.Expr], ...]
    edges: tuple[sp.Expr, ...]
    constant: tuple[tuple[sp.Expr, sp.Expr, sp.Expr], ...]
    halves_equal: bool


def _region_samples(pts: list[sp.Expr]) -> list[tuple[sp.Expr, sp.Expr, sp.Rational]]:
    """(lo, hi, sample) for the open regions between sorted breakpoints (lo/hi = -+oo)."""
    if not pts:
        return [(-sp.oo, sp.oo, sp.Integer(0))]
    out = [(-sp.oo, pts[0], pts[0] - 1)]
    out += [(p, q, (p + q) / 2) for p, q in zip(pts[:-1], pts[1:])]
    out.append((pts[-1], sp.oo, pts[-1] + 1))
    return out


def _half_weight_at(fam: IntervalInit, sgn: int, cons, x0: sp.Expr, symbolic: bool) -> sp.Expr:
    """int over the a of sign sgn with a x0 in I_a of |a|^3 p_A / |I_a| (an expression in x
    valid on the region of x0 when ``symbolic``; else the number at x0)."""
    length = sp.expand(sum(hi - lo for lo, hi in fam.intervals).subs(a, sgn * u))
    integrand = u**3 * fam.density_A / length
    total = sp.Integer(0)
    for group in cons:
        rng = _u_range(group, x0)
        if rng is None:
            continue
        lo, hi = rng if symbolic else (r.subs(x, x0) for r in rng)
        total += sp.integrate(integrand, (u, lo, hi))
    return sp.factor(sp.simplify(total))


def _piecewise(pieces: list[tuple[sp.Expr, sp.Expr, sp.Expr]], at_edge: dict) -> sp.Expr:
    """Piecewise from pieces (expr, lo, hi); each edge joins the side whose limit is the
    value at the edge (or is its own piece)."""
    args = []
    for i, (e, lo, hi) in enumerate(pieces):
        if hi is sp.oo:
            args.append((e, True))
            continue
        val = at_edge[hi]
        if sp.simplify(e.subs(x, hi) - val) == 0:
            args.append((e, x <= hi))
        else:
            args.append((e, x < hi))
            if sp.simplify(pieces[i + 1][0].subs(x, hi) - val) != 0:
                args.append((val, sp.Eq(x, hi)))
    return sp.Piecewise(*args)


@lru_cache(maxsize=None)
def derive_weight(name: str) -> FamilyWeight:
    """omega_s(x) = int_{s a > 0} |a|^3 p0(a, a x) da for the family ``name``: on each
    region of x (between the breakpoints where the set {u : a x in I_a} changes form) the
    u-range is [L(x), U(x)] with L, U read off the binding constraints at a sample point,
    and the integral is ``sp.integrate`` of u^3 p_A / |I_a| over it."""
    fam = _family(name)
    cons = {sgn: _half_constraints(fam, sgn) for sgn in (1, -1)}
    pts = sorted(_breakpoints(cons[1]) | _breakpoints(cons[-1]), key=lambda p: float(p))
    halves: dict[int, list] = {1: [], -1: []}
    for lo, hi, x0 in _region_samples(pts):
        for sgn in (1, -1):
            halves[sgn].append((_half_weight_at(fam, sgn, cons[sgn], x0, True), lo, hi))
    at_edge = {sgn: {p: _half_weight_at(fam, sgn, cons[sgn], p, False) for p in pts} for sgn in (1, -1)}
    total = [(sp.factor(sp.simplify(ep + em)), lo, hi)
             for (ep, lo, hi), (em, _, _) in zip(halves[1], halves[-1])]
    at_total = {p: at_edge[1][p] + at_edge[-1][p] for p in pts}
    merged: list[tuple[sp.Expr, sp.Expr, sp.Expr]] = []     # drop edges omega is smooth across
    for e, lo, hi in total:
        if merged and sp.simplify(merged[-1][0] - e) == 0 and sp.simplify(e.subs(x, lo) - at_total[lo]) == 0:
            merged[-1] = (e, merged[-1][1], hi)
        else:
            merged.append((e, lo, hi))
    edges = tuple(p for _, _, p in merged[:-1])
    constant = tuple((lo, hi, e) for e, lo, hi in merged if not e.has(x) and e != 0)
    halves_equal = all(sp.simplify(p[0] - m[0]) == 0 for p, m in zip(halves[1], halves[-1]))
    return FamilyWeight(fam, _piecewise(merged, at_total),
                        _piecewise(halves[1], at_edge[1]), _piecewise(halves[-1], at_edge[-1]),
                        tuple(merged), edges, constant, halves_equal)


def edge_jumps(name: str) -> tuple[tuple[sp.Expr, ...], ...]:
    """Per edge e of omega's pieces: the jumps [d^k/dx^k K(x, x')]_{x = e^-}^{e^+}, k = 0..3,
    as expressions in x' (x' != e).  K and d/dx K are continuous (B | A has a density);
    d^2/dx^2 K = omega(x) |x - x'| / 2, so the jumps are those of omega |x - x'| / 2 and its
    x-derivative at e (requires omega_+ = omega_-)."""
    w = derive_weight(_family(name).name)
    if not w.halves_equal:
        raise ValueError(f"{name}: omega_+ != omega_-, d^2 K / dx^2 is not omega |x - x'| / 2")
    out = []
    for i, e in enumerate(w.edges):
        left, right = w.pieces[i][0], w.pieces[i + 1][0]
        d2 = (right - left) * sp.Abs(x - xp) / 2
        out.append((sp.Integer(0), sp.Integer(0), sp.factor(d2.subs(x, e)),
                    sp.simplify(sp.diff(d2, x).subs(x, e))))
    return tuple(out)


@dataclass(frozen=True)
class ScaledKernel:
    """K_RF of the family "scaled" (A ~ U[-1, 1], B | A ~ U[-c|A|, c|A|]) for all real x, x':
    K = G(x, x'; min(x, x')) + G(-x, -x'; -max(x, x')) with the branches of G for
    s < -c, |s| <= c, s > c."""
    inner: sp.Expr
    branches: tuple[sp.Expr, sp.Expr, sp.Expr]
    rf: sp.Expr
    rf_inside: sp.Expr           # on [-c, c]^2: a polynomial in x, x', |x - x'|
    identity_residuals: tuple[sp.Expr, ...]   # d^2 K / dx^2 - omega |x - x'| / 2 on [-c, c]^2


@lru_cache(maxsize=None)
def derive_scaled_kernel() -> ScaledKernel:
    """For a = u > 0 the product (u x - b)_+ (u x' - b)_+ is non-zero iff b < u s,
    s = min(x, x'); b ranges over [-c u, c u] with density (1/2) / (2 c u).  For a = -u:
    (x, x') -> (-x, -x'), s -> -max(x, x')."""
    c = SCALE
    dens = sp.Rational(1, 2) / (2 * c * u)
    inner = sp.expand(sp.integrate((u * x - _b) * (u * xp - _b), (_b, -c * u, _t)))
    lo = sp.Integer(0)                                                  # s < -c: u s < -c u
    mid = sp.expand(sp.integrate(sp.expand(dens * inner.subs(_t, u * _s)), (u, 0, 1)))
    hi = sp.expand(sp.integrate(sp.expand(dens * inner.subs(_t, c * u)), (u, 0, 1)))

    def G(X: sp.Expr, XP: sp.Expr, S: sp.Expr) -> sp.Expr:
        br = [e.subs({x: X, xp: XP, _s: S}, simultaneous=True) for e in (lo, mid, hi)]
        return sp.Piecewise((br[0], S < -c), (br[1], S <= c), (br[2], True))
    rf = G(x, xp, sp.Min(x, xp)) + G(-x, -xp, -sp.Max(x, xp))
    d = sp.Symbol("d", nonnegative=True)
    inside = sp.expand(mid.subs(_s, (x + xp - d) / 2)
                       + mid.subs({x: -x, xp: -xp, _s: -(x + xp + d) / 2}, simultaneous=True))
    om = derive_weight("scaled").constant[0][2]
    res = []
    for dist in (xp - x, x - xp):
        e = inside.subs(d, dist)
        res.append(sp.simplify(sp.diff(e, x, 2) - om * dist / 2))
    return ScaledKernel(inner, (lo, mid, hi), rf, inside.subs(d, sp.Abs(x - xp)), tuple(res))


def piecewise_constant_families() -> tuple[str, ...]:
    """Families whose omega is constant on every piece (there K(., x') is piecewise cubic
    with knots at x' and at omega's edges, so one-sided cubics measure its jumps)."""
    return tuple(n for n in FAMILIES if all(not e.has(x) for e, _, _ in derive_weight(n).pieces))


def thm5_results() -> dict[str, sp.Expr | tuple]:
    """What claim W3b's general-Thm-5 sub-checks read: omega of every family, the edge jumps
    of the piecewise-constant families (per edge, k = 0..3, in x'), K_RF of "scaled"."""
    out: dict[str, sp.Expr | tuple] = {f"omega_{n}": derive_weight(n).omega for n in FAMILIES}
    out.update({f"edge_jumps_{n}": edge_jumps(n) for n in piecewise_constant_families()})
    out["K_RF_scaled"] = derive_scaled_kernel().rf
    return out


def _edge_jump_in_coefficients(name: str) -> sp.Expr:
    """[f'']_e = sum_j alpha_j [d^2 K(., x_j) / dx^2]_e for each edge e (a tuple)."""
    al, xs = sp.IndexedBase("alpha"), sp.IndexedBase("x")
    j, n = sp.Symbol("j", integer=True), sp.Symbol("n", integer=True, positive=True)
    return sp.Tuple(*(sp.Sum(al[j] * jm[2].subs(xp, xs[j]), (j, 1, n)) for jm in edge_jumps(name)))


def thm5_steps() -> list:
    """The report steps of the general Thm 5 (appended to W3b's derivation)."""
    from derivations.base import Step
    steps = [Step("General Thm 5 (the paper: $B\\,|\\,A$ uniform on an interval $I_A$ that may depend "
                  "on $A$, or on a union of intervals). $p_0(a,b) = p_A(a)1\\{b\\in I_a\\}/|I_a|$, "
                  "$p_A = \\tfrac12$ on $[-1,1]$. From $\\partial_x^2(ax-b)_+ = a^2\\delta(ax-b)$: "
                  "$\\partial_x^2K(x,x') = \\omega_+(x)(x'-x)_+ + \\omega_-(x)(x-x')_+$ with "
                  "$\\omega_\\pm(x) = \\int_{\\pm a>0}|a|^3p_0(a,ax)\\,da$; $K$ and $\\partial_xK$ are "
                  "continuous ($B|A$ has a density). Each $\\omega_\\pm$ below is "
                  "SymPy `integrate` of $|a|^3p_A/|I_a|$ over $\\{a: ax\\in I_a\\}$, region by "
                  "region in $x$.")]
    for n, fam in FAMILIES.items():
        w = derive_weight(n)
        steps += [
            Step(f"Family \"{n}\": {fam.description}. Half weight $\\omega_+$ "
                 f"($\\omega_- = \\omega_+$: {w.halves_equal}), so $\\partial_x^2K = \\omega|x-x'|/2$:",
                 w.omega_plus, lhs="\\omega_+"),
            Step("and", w.omega, lhs=f"\\omega_{{\\mathrm{{{n}}}}}"),
            Step("$\\omega$ is a non-zero constant on (lo, hi, value): there the interpolant "
                 "$f = \\sum_j\\alpha_jK(\\cdot,x_j)$ has $f'' = \\tfrac{\\omega}{2}\\sum_j\\alpha_j|x-x_j|$, "
                 "a $C^2$ cubic spline with knots at the data and $[f''']_{x_j} = \\omega\\alpha_j$; "
                 "edges of $\\omega$'s pieces:",
                 sp.Tuple(sp.Tuple(*(sp.Tuple(*c) for c in w.constant)), sp.Tuple(*w.edges))),
            Step("Jumps $[\\partial_x^kK(\\cdot,x')]_e$, $k=0..3$, at each edge $e$ (in $x'\\ne e$):",
                 sp.Tuple(*(sp.Tuple(*j) for j in edge_jumps(n))), lhs="J_e"),
        ]
        if any(jm[2] != 0 for jm in edge_jumps(n)):
            steps.append(Step("$\\omega$ jumps at these edges, so $f''$ jumps there (a $C^1$ knot that "
                              "is not a datum), generically non-zero in the interpolant's coefficients:",
                              _edge_jump_in_coefficients(n), lhs="[f'']_e"))
        else:
            steps.append(Step("$\\omega$ is continuous at the edges: $f$ is $C^2$ there, but $\\omega'$ "
                              "jumps, so $f'''$ jumps (a knot that is not a datum); outside the "
                              "constancy interval $f$ is not piecewise cubic."))
    k = derive_scaled_kernel()
    steps += [
        Step("$K_{RF}$ of \"scaled\" ($c = 3/2$): for $a=u>0$ the integrand is non-zero iff "
             "$b<us$, $s=\\min(x,x')$, so $K = G(x,x';\\min) + G(-x,-x';-\\max)$, "
             "$G = \\int_0^1\\frac{du}{4cu}\\int_{-cu}^{\\min(cu,us)}(ux-b)(ux'-b)\\,db$ (zero for "
             "$s<-c$); branches $s<-c$, $|s|\\le c$, $s>c$:", sp.Tuple(*k.branches), lhs="G"),
        Step("so for all real $x, x'$", k.rf, lhs="K_{RF}^{\\mathrm{scaled}}"),
        Step("on $[-c,c]^2$", k.rf_inside, lhs="K_{RF}^{\\mathrm{scaled}}"),
        Step("and $\\partial_x^2K - \\omega|x-x'|/2$ on $[-c,c]^2$ ($x<x'$, $x>x'$) simplifies to",
             sp.Tuple(*k.identity_residuals)),
    ]
    return steps
