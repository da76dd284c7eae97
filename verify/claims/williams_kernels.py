"""Claims W3a-W3f: the kernel regime of shallow univariate ReLU networks (Williams, Trager,
Silva, Panozzo, Zorin, Bruna, NeurIPS 2019, Sec. 4 "kernel regime", Thm 5, Fig. 4).

Conventions (MATH.md W.3): "uniform" init (a, b) ~ U([-1, 1]^2), "gaussian" init
(a, b) ~ N(0, I_2), E c^2 = sigma_c^2; K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+];
K_NTK = K_RF + sigma_c^2 (1 + x x') P(a x > b, a x' > b).

Derivations: ``derivations.kernels`` (SymPy).  Independent numerics: ``numerics.kernels``
(mpmath quadrature of the defining integrals, quadrature / i.i.d. particles, training).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import mpmath
import numpy as np
import sympy as sp
from scipy.interpolate import CubicSpline

from derivations import kernels as dk
from numerics import kernels as nk
from verify.claims._core import Claim, Derivation, Evidence, Outcome, RunContext, Step, Table
from verify.claims._helpers import SubCheck, combine, fmt, loglog_slope

SOURCE = "Williams et al. (NeurIPS 2019), Sec. 4 (kernel regime)"
X, XP = dk.x, dk.xp
# relative tolerance for float64 closed forms vs 30-digit quadrature: the closed forms are
# O(10)-term sums with cancellation factor <= ~30 on [-5, 5]^2, so |rel err| <= 30 * 10 * eps
# ~ 7e-14; 1e-12 leaves a margin and is the contract of the issue.
REL_TOL = 1e-12
# The square-wave data of Figure 4 (10 points on [-1, 1]) used by W3b, W3c, W3d, W3f.
FIG4_X = np.linspace(-0.9, 0.9, 10)
FIG4_Y = np.where(np.arange(10) // 2 % 2 == 0, 1.0, -1.0)


def _formulas():
    from verify import formulas
    return formulas


# ============================================================== shared numerics pieces
def _region_points() -> list[tuple[float, float]]:
    """One (x, x') in each of the 12 pieces of the uniform kernel (order x buckets of min/max)
    plus the diagonal and points on the breakpoints |x| = 1."""
    pts = [(-3.5, -1.75), (-2.25, 0.375), (-4.0, 2.5), (-0.625, 0.8125), (0.25, 3.25), (1.5, 4.75)]
    pts += [(q, p) for p, q in pts]
    pts += [(0.3, 0.3), (-2.5, -2.5), (1.0, -1.0), (1.0, 2.0), (-1.0, 0.5)]
    return pts


def _random_points(ctx: RunContext, n: int, name: str) -> list[tuple[float, float]]:
    r = ctx.rng(name).uniform(-5, 5, size=(n, 2))
    return [(float(p), float(q)) for p, q in r]


@lru_cache(maxsize=4096)
def _reference(kind: str, init: str, p: float, q: float, nested: bool = False) -> mpmath.mpf:
    """30-digit quadrature reference (cached: the negative control reuses it)."""
    if kind == "rf":
        return nk.rf_kernel_quad_mp(p, q, init, nested=nested)
    if kind == "prob":
        return nk.active_probability_quad_mp(p, q, init, nested=nested)
    with mpmath.workdps(30):  # ntk with sigma_c = 1
        return nk.rf_kernel_quad_mp(p, q, init) + (1 + mpmath.mpf(p) * q) * nk.active_probability_quad_mp(p, q, init)


def _closed_vs_quadrature(kind: str, init: str, pts: list[tuple[float, float]],
                          expr_fn: Callable[[float, float], float], nested: bool = False
                          ) -> tuple[float, list[list[Any]]]:
    """max relative error of ``expr_fn`` (float64) against the mpmath quadrature."""
    worst, rows = 0.0, []
    for p, q in pts:
        ref = _reference(kind, init, p, q, nested)
        val = float(expr_fn(p, q))
        err = float(abs(mpmath.mpf(val) / ref - 1)) if ref != 0 else abs(val)
        worst = max(worst, err)
        rows.append([fmt(p, 4), fmt(q, 4), mpmath.nstr(ref, 18), f"{val:.17g}", fmt(err)])
    return worst, rows


_GRID9 = np.linspace(-2.0, 2.0, 9)
_PARTICLE_COUNTS = (32, 128, 512)   # angular nodes; m = 2 x that (2 radial nodes)
_PARTICLE_REPS = 10


def _slope_sizes(profile: str) -> tuple[np.ndarray, int]:
    top = 5 if profile == "quick" else 6
    return (np.unique(np.round(np.logspace(2, top, 2 * (top - 2) + 1)).astype(int)),
            24 if profile == "quick" else 32)


@lru_cache(maxsize=8)
def _empirical_grams(claim_id: str, init: str, profile: str, seed: int) -> dict[str, Any]:
    """Empirical RF Gram matrices on 9 points of [-2, 2]: quadrature particles, i.i.d.
    particles of the same counts, and i.i.d. particles for the rate fit.  Cached so the
    negative control compares the SAME particles with the perturbed closed form."""
    ctx = RunContext(claim_id, profile, seed)  # type: ignore[arg-type]
    xs = _GRID9
    out: dict[str, Any] = {"quad": {}, "iid": {}, "slope": {}}
    for n_angle in _PARTICLE_COUNTS:
        a, b, w = nk.quadrature_particles(init, n_angle)
        m = a.size
        out["quad"][m] = nk.empirical_rf_kernel(a, b, xs, xs, w)
        out["iid"][m] = [nk.empirical_rf_kernel(*nk.sample_init(ctx.rng("iid-vs-quad", init, m, r), m, init), xs, xs)
                         for r in range(_PARTICLE_REPS)]
    ms, reps = _slope_sizes(profile)
    for m in ms:
        out["slope"][int(m)] = [nk.empirical_rf_kernel(*nk.sample_init(ctx.rng("slope", init, int(m), r), int(m), init), xs, xs)
                                for r in range(reps)]
    return out


_SLOPE_REASON = ("i.i.d. Monte Carlo: E|K_m - K|^2 = Var/m exactly, so the RMS slope is -1/2; "
                 "[-0.6, -0.4] is the issue's band; with these replicates the slope estimate's "
                 "spread across seeds is ~0.03")


def _particles_and_slope(init: str, ctx: RunContext, Kt: np.ndarray) -> tuple[list[SubCheck], list[Table], dict]:
    """Quadrature vs i.i.d. particles of the same count (max Gram error relative to max K,
    i.i.d. median of 10 replicates) and the i.i.d. RMS error slope, against ``Kt``."""
    grams = _empirical_grams(ctx.claim_id, init, ctx.profile, ctx.seed)
    scale = float(np.max(np.abs(Kt)))
    prow, ratios, pdata = [], [], {"m": [], "quad": [], "iid": []}
    for m, Gq in grams["quad"].items():
        eq = float(np.max(np.abs(Gq - Kt))) / scale
        med = float(np.median([np.max(np.abs(G - Kt)) for G in grams["iid"][m]])) / scale
        ratios.append(med / eq)
        prow.append([m, fmt(eq), fmt(med), fmt(med / eq)])
        pdata["m"].append(m), pdata["quad"].append(eq), pdata["iid"].append(med)
    ms = np.array(sorted(grams["slope"]), dtype=float)
    rms, srow = [], []
    for m in ms:
        Gs = grams["slope"][int(m)]
        rms.append(float(np.sqrt(np.mean([np.mean((G - Kt) ** 2) for G in Gs]))))
        srow.append([int(m), len(Gs), fmt(rms[-1]), fmt(rms[-1] * np.sqrt(m))])
    slope = loglog_slope(ms, rms)
    ratio = min(ratios)
    subs = [SubCheck(f"quadrature particles beat i.i.d. particles of the same count: min ratio "
                     f"{ratio:.3g} (error shown: 100 / ratio, must be <= 1)", 100.0 / ratio, 1.0,
                     "the issue's requirement: ratio of errors >= 100"),
            SubCheck(f"i.i.d. empirical-kernel RMS error slope over m in {int(ms[0])}..{int(ms[-1])} "
                     f"(|slope + 1/2|, slope = {slope:.3f})", abs(slope + 0.5), 0.1, _SLOPE_REASON,
                     passed=-0.6 <= slope <= -0.4)]
    tabs = [Table(f"{init} init: empirical RF Gram matrix on 9 points of [-2, 2], max error / max K "
                  "(i.i.d.: median of 10 replicates)",
                  ["particles m", "quadrature rule", "i.i.d.", "ratio i.i.d./quadrature"], prow),
            Table(f"{init} init: i.i.d. random features, RMS Gram error vs m (slope {slope:.3f})",
                  ["m", "replicates", "RMS error", "RMS * sqrt(m)"], srow)]
    sdata = {"m": [int(v) for v in ms], "rms": rms, "slope": slope}
    return subs, tabs, {"particles": pdata, "slope": sdata}


# ==================================================================== W3a
def derive_w3a() -> Derivation:
    u = dk.derive_uniform()
    lo, mid, hi = u.rf_branches
    G = sp.Function("G")
    steps = [
        Step("Uniform init: density $1/4$ on $[-1,1]^2$. For fixed $a$ the product "
             "$(ax-b)_+(ax'-b)_+$ is nonzero iff $b < \\min(ax, ax')$. Inner integral over $b$ "
             "from $-1$ to $t$:", sp.Eq(sp.Integral((dk.a * X - dk.b) * (dk.a * XP - dk.b), (dk.b, -1, sp.Symbol("t"))),
                                       u.inner_rf)),
        Step("Split by the sign of $a$. For $a>0$, $\\min(ax,ax') = a s$ with $s=\\min(x,x')$; "
             "for $a<0$ substitute $a\\to-a$: this maps $(x,x')\\to(-x,-x')$ and $s\\to-\\max(x,x')$. "
             "So $K_{RF} = \\tfrac14[G(x,x';s) + G(-x,-x';-L)]$, $L=\\max(x,x')$, with "
             "$G = \\int_0^1 \\int_{-1}^{\\min(1, as)} (ax-b)(ax'-b)\\,db\\,da$ (zero where $as<-1$)."),
        Step("Branch $s<-1$ (only $a < 1/|s|$ contributes):", sp.Eq(G(s_ := sp.Symbol("s")), lo)),
        Step("Branch $|s|\\le 1$ (upper limit $as$ for all $a\\in[0,1]$):", sp.Eq(G(s_), mid)),
        Step("Branch $s>1$ (upper limit clipped to $1$ for $a>1/s$):", sp.Eq(G(s_), hi)),
        Step("Hence the closed form valid for ALL real $x, x'$ (breakpoints at $x=x'$ and at "
             "$|x|=1$, $|x'|=1$):", sp.Eq(sp.Symbol("K_RF"), u.rf)),
        Step("On $[-1,1]^2$ both terms use the middle branch and the kernel is one polynomial in "
             "$x, x', |x-x'|$:", sp.Eq(sp.Symbol("K_RF|_{[-1,1]^2}"), u.rf_inside)),
    ]
    return Derivation(steps=steps, results={"rf": u.rf, "rf_inside": u.rf_inside,
                                            "branches": u.rf_branches})


def _check_w3a(ctx: RunContext, wrong_outside: bool) -> Outcome:
    F = _formulas()
    if wrong_outside:
        f_in = sp.lambdify((X, XP), dk.derive_uniform().rf_inside, modules="numpy")
        fn: Callable = lambda p, q: f_in(p, q)
    else:
        fn = lambda p, q: F.rf_kernel(p, q, init="uniform")
    pts = _region_points() + _random_points(ctx, 4 if ctx.quick else 30, "points")
    worst, rows = _closed_vs_quadrature("rf", "uniform", pts, fn)
    subs = [SubCheck(f"closed form vs 2-D mpmath quadrature (30 digits), {len(pts)} points "
                     "covering all 12 pieces (max relative error)", worst, REL_TOL,
                     "float64 evaluation of a short polynomial/rational sum: ~1e-15; 1e-12 is the "
                     "issue's contract")]
    more, tabs, data = _particles_and_slope("uniform", ctx, fn(_GRID9[:, None], _GRID9[None, :]))
    subs += more
    grid = np.linspace(-3, 3, 121)
    art = {"grid": grid, "K": F.rf_kernel(grid[:, None], grid[None, :], init="uniform"), **data}
    return combine("derived K_RF (uniform init, all real x, x') vs 2-D mpmath quadrature of "
                   "E[(ax-b)_+(ax'-b)_+]; polar Gauss-Legendre particles vs i.i.d. particles; "
                   "i.i.d. error rate", subs,
                   details={"points": len(pts), "max_rel_error": worst},
                   tables=[Table("Closed form vs quadrature", ["x", "x'", "quadrature (30 digits)",
                                                               "closed form (float64)", "rel. error"], rows)] + tabs,
                   artifacts=art)


def _kernel_figures(cid: str, init: str, ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    F = _formulas()
    art = ev.artifacts
    grid, K = art["grid"], art["K"]
    fig, (ax1, ax2, ax3) = new_figure(3, 1, width=4.0)
    im = ax1.imshow(K, origin="lower", extent=(grid[0], grid[-1], grid[0], grid[-1]), cmap="viridis")
    fig.colorbar(im, ax=ax1, shrink=0.8)
    ax1.set_xlabel("x'"), ax1.set_ylabel("x"), ax1.set_title(f"K_RF, {init} init")
    for xp in (-2.0, -0.5, 0.5, 2.0):
        ax2.plot(grid, F.rf_kernel(grid, xp, init=init), label=f"x' = {xp}")
    if init == "uniform":
        for v in (-1, 1):
            ax2.axvline(v, color="k", lw=0.5, ls=":")
    ax2.set_xlabel("x"), ax2.set_title("slices K_RF(x, x')"), ax2.legend(fontsize=7)
    p, s = art["particles"], art["slope"]
    ax3.loglog(p["m"], p["quad"], "o-", label="quadrature particles")
    ax3.loglog(p["m"], p["iid"], "s-", label="i.i.d. (median)")
    ax3.loglog(s["m"], s["rms"], "^-", label=f"i.i.d. RMS, slope {s['slope']:.2f}")
    ax3.set_xlabel("particles m"), ax3.set_ylabel("Gram error"), ax3.legend(fontsize=7)
    name = f"{cid}_kernel.png"
    save_figure(fig, outdir / name)
    return [(name, f"{init}-init random-feature kernel: heatmap on [-3, 3]^2, slices, and the "
                   "empirical-kernel error of quadrature vs i.i.d. particles.")]


# ==================================================================== W3b
def derive_w3b() -> Derivation:
    e = dk.derive_spline_end_conditions()
    jumps = dk.kernel_jumps("uniform", "rf", "in")
    d4_left, d4_right = sp.diff(e.left_piece, X, 4), sp.diff(e.right_piece, X, 4)
    fL, fR = e.fL, e.fR
    steps = [
        Step("For $-1 \\le x \\le x' \\le 1$ the section $K_{RF}(\\cdot, x')$ is the cubic",
             sp.Eq(sp.Symbol("K_left"), e.left_piece)),
        Step("and for $-1 \\le x' \\le x \\le 1$", sp.Eq(sp.Symbol("K_right"), e.right_piece)),
        Step("Fourth derivatives vanish off the diagonal (left, right):",
             sp.Eq(sp.Tuple(sp.Symbol("d4K_left"), sp.Symbol("d4K_right")), sp.Tuple(d4_left, d4_right))),
        Step("Jumps of $\\partial_x^k K$ at $x = x'$, $k = 0..3$: $K$ is $C^2$ with a constant "
             "third-derivative jump (Thm 5: the interpolant $\\sum_j \\alpha_j K(\\cdot,x_j)$ is a "
             "cubic spline with knots at the data, $[f''']_{x_j} = \\alpha_j/8$):",
             sp.Eq(sp.Symbol("jumps"), sp.Tuple(*jumps))),
        Step("End conditions. Every section satisfies $K''(-1, x') = (1+x')/16 \\ne 0$, so it is "
             "NOT the natural spline:", sp.Eq(sp.Symbol("d2K(-1,x')"), e.natural_fails)),
        Step("A functional $\\sum_k l_k f^{(k)}(-1) + \\sum_k r_k f^{(k)}(1)$ of the outer cubic "
             "pieces annihilates all sections iff it annihilates the 4 coefficients (in $x'$) of "
             "the cubic; the null space of this $4\\times 8$ system is 4-dimensional, giving the "
             "relations $(f_{L,k} = f^{(k)}(-1^+),\\ f_{R,k} = f^{(k)}(1^-))$:",
             sp.Eq(sp.Symbol("relations"), sp.Tuple(*e.relations))),
        Step("Reading: the last two say that $f''$ on the left outer piece is MINUS $f''$ on the "
             "right outer piece as linear functions ($f''_L(t) = -f''_R(t)$; for the kernel "
             "sum $f''/\\omega = \\tfrac12\\sum_j\\alpha_j|x-x_j|$ whose outer linear pieces are "
             "opposite); the first two fix the affine part of $f$ (W3e). With data in "
             "$[-1,1]$ these 4 relations replace the natural conditions $f''(\\pm1)=0$: a cubic "
             "spline on $[-1, 1]$ with knots at the data and free values at $\\pm1$ has "
             "$s+4$ degrees of freedom, the $s$ data and these 4 relations fix it."),
    ]
    return Derivation(steps=steps, results={"relations": e.relations, "jumps": jumps,
                                            "matrix": e.matrix})


def spline_with_end_conditions(x_data: np.ndarray, y_data: np.ndarray, matrix: np.ndarray
                               ) -> CubicSpline:
    """scipy CubicSpline on the nodes (-1, x_1..x_s, 1) whose free values at +-1 and end
    second derivatives are chosen so that the derived relations ``matrix`` (rows
    [l_0..l_3, r_0..r_3] acting on the outer pieces' derivatives at -1 and +1) hold.
    The spline is affine in those 4 unknowns: build it for the base point and the 4 unit
    vectors, solve the 4 x 4 linear system."""
    nodes = np.concatenate([[-1.0], x_data, [1.0]])

    def build(u: np.ndarray) -> CubicSpline:
        vals = np.concatenate([[u[0]], y_data, [u[1]]])
        return CubicSpline(nodes, vals, bc_type=((2, u[2]), (2, u[3])))

    def residual(u: np.ndarray) -> np.ndarray:
        sp_ = build(u)
        dl = [float(sp_(-1.0, k)) for k in range(4)]
        dr = [float(sp_(1.0, k)) for k in range(4)]
        return matrix @ np.array(dl + dr)

    r0 = residual(np.zeros(4))
    J = np.column_stack([residual(e) - r0 for e in np.eye(4)])
    return build(np.linalg.solve(J, -r0))


def _data_sets(ctx: RunContext) -> list[tuple[np.ndarray, np.ndarray]]:
    sets = [(FIG4_X, FIG4_Y)]
    rng = ctx.rng("data")
    for s_n in ((6, 12) if ctx.quick else (5, 8, 12, 20, 30)):
        # stratified in [-0.95, 0.95]: gaps >= 0.76/s_n keep cond(Gram) <= ~1e7
        xd = -0.95 + 1.9 * (np.arange(s_n) + 0.5 + rng.uniform(-0.3, 0.3, s_n)) / s_n
        sets.append((xd, rng.standard_normal(s_n)))
    return sets


def _piecewise_fit_stats(f: Callable, xd: np.ndarray, deg: int = 3) -> tuple[float, np.ndarray, np.ndarray]:
    """Fit a degree-``deg`` polynomial to f on each interval between consecutive knots
    (-1, data, 1) from 12 interior samples; return the max fit residual (relative to max|f|)
    and the jumps of derivatives 0..3 of adjacent fits at every data point."""
    nodes = np.concatenate([[-1.0], xd, [1.0]])
    polys, resid = [], 0.0
    scale = 1.0
    for lo, hi in zip(nodes[:-1], nodes[1:]):
        t = lo + (hi - lo) * (0.5 - 0.5 * np.cos(np.pi * (np.arange(12) + 0.5) / 12))
        c = (lo + hi) / 2
        v = f(t)
        scale = max(scale, float(np.max(np.abs(v))))
        p = np.polynomial.Polynomial.fit(t - c, v, deg, domain=[lo - c, hi - c])
        resid = max(resid, float(np.max(np.abs(p(t - c) - v))))
        polys.append((p, c))
    jumps = np.array([[(polys[j + 1][0].deriv(k)(x - polys[j + 1][1]) if k else polys[j + 1][0](x - polys[j + 1][1]))
                       - (polys[j][0].deriv(k)(x - polys[j][1]) if k else polys[j][0](x - polys[j][1]))
                       for k in range(4)] for j, x in enumerate(xd)])
    return resid / scale, jumps, nodes


def _check_w3b(ctx: RunContext, natural: bool) -> Outcome:
    F = _formulas()
    M = np.array(ctx.derivation().results["matrix"].tolist(), dtype=float)
    rows, worst_spline, worst_fit, worst_c2, worst_j3 = [], 0.0, 0.0, 0.0, 0.0
    art: dict[str, Any] = {}
    for i, (xd, yd) in enumerate(_data_sets(ctx)):
        f = F.kernel_interpolant(xd, yd, kernel="rf", init="uniform")
        if natural:
            spl = CubicSpline(xd, yd, bc_type="natural")
            grid = np.linspace(xd[0], xd[-1], 1001)
        else:
            spl = spline_with_end_conditions(xd, yd, M)
            grid = np.linspace(-1, 1, 1001)
        scale = max(1.0, float(np.max(np.abs(yd))))
        dsp = float(np.max(np.abs(f(grid) - spl(grid)))) / scale
        fit_res, jumps, _ = _piecewise_fit_stats(f, xd)
        c2 = float(np.max(np.abs(jumps[:, :3]) / np.array([1, 10, 100]))) / scale
        j3 = float(np.max(np.abs(jumps[:, 3] - f.coefficients / 8) / np.max(np.abs(f.coefficients / 8))))
        worst_spline, worst_fit = max(worst_spline, dsp), max(worst_fit, fit_res)
        worst_c2, worst_j3 = max(worst_c2, c2), max(worst_j3, j3)
        cond = float(np.linalg.cond(F.rf_kernel(xd[:, None], xd[None, :])))
        rows.append([i, xd.size, fmt(float(np.min(np.diff(xd)))), fmt(cond), fmt(dsp), fmt(fit_res), fmt(c2), fmt(j3)])
        if i == 0:
            art = {"x_data": xd, "y_data": yd, "grid": np.linspace(-1, 1, 801)}
    subs = [SubCheck("uniform-init kernel interpolant vs scipy CubicSpline with the DERIVED end "
                     "conditions (sup on [-1,1], relative to max|y|)" if not natural else
                     "uniform-init kernel interpolant vs NATURAL cubic spline through the data "
                     "(sup on [x_1, x_s])", worst_spline, 1e-8,
                     "both are exact cubic splines: differences come from the Gram solve "
                     "(cond <= 1.1e7 on these data, table) and the spline system: forward error "
                     "<= few * cond * eps ~ 5e-9"),
            SubCheck("piecewise cubic: degree-3 fit residual on each interval (relative)", worst_fit, 1e-9,
                     "exact cubics: residual is the interpolant's float64 error (<= cond * eps * "
                     "max|alpha|, up to ~1e-10 for cond 1e7) times the fit's conditioning"),
            SubCheck("C^2 at the data: jumps of f, f'/10, f''/100 of adjacent cubic fits", worst_c2, 1e-6,
                     "k-th derivatives of fitted cubics amplify the ~1e-11 fit noise by ~h^-k (gaps h >= 0.036, table): <= 1e-11 * 2e4"),
            SubCheck("third-derivative jump at x_j equals alpha_j / 8 (derived), relative", worst_j3, 1e-4,
                     "f''' of a fitted cubic on an interval of length h >= 0.036 carries error "
                     "~1e-11 / h^3 ~ 2e-7 relative to |alpha_j|/8")]
    return combine("uniform-init RF kernel interpolant vs cubic spline with derived end "
                   "conditions; piecewise cubic & C^2 structure measured by polynomial fits",
                   subs, details={"data_sets": len(rows)},
                   tables=[Table("Data sets", ["set", "points", "min gap", "cond(Gram)", "sup |f - spline|", "cubic-fit residual",
                                               "C^2 jump (scaled)", "f''' jump vs alpha/8"], rows)],
                   artifacts=art)


def _figures_w3b(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    F = _formulas()
    art = ev.artifacts
    xd, yd, g = art["x_data"], art["y_data"], art["grid"]
    M = np.array(CLAIM_W3B.derivation().results["matrix"].tolist(), dtype=float)
    f = F.kernel_interpolant(xd, yd, kernel="rf", init="uniform")
    spl = spline_with_end_conditions(xd, yd, M)
    nat = CubicSpline(xd, yd, bc_type="natural")
    fig, (ax1, ax2) = new_figure(2, 1, width=4.8)
    ax1.plot(g, f(g), lw=2.5, alpha=0.5, label="uniform RF kernel interpolant")
    ax1.plot(g, spl(g), "k--", lw=1, label="CubicSpline, derived end conditions")
    ax1.plot(g, nat(g), ":", label="natural cubic spline")
    ax1.plot(xd, yd, "ko", ms=4)
    ax1.set_xlabel("x"), ax1.legend(fontsize=7), ax1.set_title("Thm 5: a cubic spline")
    ax2.semilogy(g, np.abs(f(g) - spl(g)) + 1e-18, label="|f - spline (derived ends)|")
    ax2.semilogy(g, np.abs(f(g) - nat(g)) + 1e-18, label="|f - natural spline|")
    ax2.set_xlabel("x"), ax2.legend(fontsize=7)
    name = "W3b_spline.png"
    save_figure(fig, outdir / name)
    return [(name, "Uniform-init RF kernel interpolant of the Figure-4 square wave = cubic spline "
                   "with the derived end conditions (agreement to rounding); the natural spline differs.")]


# ==================================================================== W3c
def derive_w3c() -> Derivation:
    g = dk.derive_gaussian()
    r, th = sp.Symbol("r", positive=True), sp.Symbol("theta")
    om = dk.rkhs_weight("gaussian")
    steps = [
        Step("Gaussian init, $(a,b) = r(\\cos\\theta, \\sin\\theta)$, density "
             "$e^{-r^2/2} r\\,dr\\,d\\theta/(2\\pi)$. By rotation invariance put "
             "$\\tilde x = |\\tilde x|(1,0)$, $\\tilde x' = |\\tilde x'|(\\cos\\varphi,\\sin\\varphi)$, "
             "$\\varphi\\in[0,\\pi]$; then $(ax-b)_+ = r|\\tilde x|\\cos(\\theta)_+$. Radial factor:",
             sp.Eq(sp.Integral(r**3 * sp.exp(-r**2 / 2) / (2 * sp.pi), (r, 0, sp.oo)), g.radial_rf)),
        Step("Both cosines are positive on the arc $\\theta\\in(\\varphi-\\pi/2, \\pi/2)$; angular factor:",
             sp.Eq(sp.Integral(sp.cos(th) * sp.cos(th - dk.phi), (th, dk.phi - sp.pi / 2, sp.pi / 2)), g.angular_rf)),
        Step("Arc-cosine kernel (Cho & Saul order 1):", sp.Eq(sp.Symbol("K_RF"), g.rf_angle)),
        Step("In coordinates $|\\tilde x||\\tilde x'|\\cos\\varphi = 1+xx'$, "
             "$|\\tilde x||\\tilde x'|\\sin\\varphi = |x-x'|$ (2-D cross product), so "
             "$\\varphi = \\operatorname{atan2}(|x-x'|, 1+xx')$ and",
             sp.Eq(sp.Symbol("K_RF"), g.rf)),
        Step("Pitfall (MATH.md): a naive SymPy 2-D integral over $\\mathbb{R}^2$ returns ~0.5771 at "
             "$(1/2, 1/3)$; the polar derivation gives",
             sp.Eq(sp.Symbol("K_RF(1/2,1/3)"), sp.N(g.rf.subs({X: sp.Rational(1, 2), XP: sp.Rational(1, 3)}), 16))),
        Step("Not a cubic spline: $\\partial_x^2 K_{RF} = \\omega(x)|x-x'|/2$ with "
             "$\\omega = 2/(\\pi(1+x^2)^2)$ (W3e), so for the interpolant "
             "$f''(x)(1+x^2)^2 = \\tfrac{1}{\\pi}\\sum_j \\alpha_j |x-x_j|$ is piecewise LINEAR, "
             "while $f$ itself is not piecewise polynomial; the jumps of $\\partial_x^k K$ at "
             "$x=x'$ ($k=0..3$):", sp.Eq(sp.Symbol("jumps"), sp.Tuple(*dk.kernel_jumps("gaussian", "rf")))),
        Step("Weight used above:", sp.Eq(sp.Symbol("omega"), om)),
    ]
    return Derivation(steps=steps, results={"rf": g.rf, "rf_angle": g.rf_angle})


def _check_w3c(ctx: RunContext, drop_sine: bool) -> Outcome:
    F = _formulas()
    if drop_sine:
        wrong = sp.lambdify((X, XP), dk.derive_gaussian().rf - sp.Abs(X - XP) / (2 * sp.pi), modules="numpy")
        fn: Callable = lambda p, q: wrong(p, q)
    else:
        fn = lambda p, q: F.rf_kernel(p, q, init="gaussian")
    pts = [(0.5, 1 / 3), (0.0, 0.0), (-5.0, 5.0), (4.75, -0.2), (-1.0, 1.0)] + \
        _random_points(ctx, 3 if ctx.quick else 25, "points")
    worst, rows = _closed_vs_quadrature("rf", "gaussian", pts, fn)
    subs = [SubCheck(f"closed form vs mpmath quadrature (inner b-integral by truncated-normal "
                     f"moments, outer a-quadrature), {len(pts)} points", worst, REL_TOL,
                     "float64 evaluation (atan2, series for t - atan t): ~1e-15; issue contract 1e-12")]
    rows2: list[list[Any]] = []
    if not ctx.quick:  # ~5-15 s per point: full profile only
        nested_pts = [(0.5, 1 / 3), (-3.0, 4.0), (2.5, 1.5)]
        w2, rows2 = _closed_vs_quadrature("rf", "gaussian", nested_pts, fn, nested=True)
        subs.append(SubCheck("closed form vs TRUE 2-D nested Gauss-Legendre quadrature (Cartesian, "
                             "|a|,|b| <= 12)", w2, REL_TOL, "truncation exp(-72) and 35-digit "
                             "quadrature: < 1e-25; float64 closed form ~1e-15"))
    more, tabs, data = _particles_and_slope("gaussian", ctx, fn(_GRID9[:, None], _GRID9[None, :]))
    subs += more
    # not a cubic spline: 4th differences of the interpolant vs those of the uniform one
    fg = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init="gaussian")
    fu = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init="uniform")
    h = 0.01
    centers = (FIG4_X[:-1] + FIG4_X[1:]) / 2
    d4 = lambda f: np.array([np.sum(np.array([1, -4, 6, -4, 1]) * f(c + h * np.arange(-2, 3))) for c in centers]) / h**4
    d4g, d4u = float(np.max(np.abs(d4(fg)))), float(np.max(np.abs(d4(fu))))
    subs.append(SubCheck("gaussian interpolant is NOT piecewise cubic: max |4th difference| / h^4 "
                         f"at interval midpoints = {d4g:.3g} (uniform: {d4u:.2g}); error shown = 1/that",
                         1.0 / d4g, 1e-1, "a cubic has zero 4th difference up to rounding "
                         "16 eps |f| / h^4 ~ 4e-7 (uniform value); gaussian must exceed 10"))
    # f''(x)(1 + x^2)^2 is piecewise linear (finite differences)
    hh = 1e-3
    lin_res = 0.0
    for lo, hi in zip(FIG4_X[:-1], FIG4_X[1:]):
        t = np.linspace(lo + 0.02, hi - 0.02, 9)
        f2 = (fg(t + hh) - 2 * fg(t) + fg(t - hh)) / hh**2
        gval = f2 * (1 + t**2) ** 2
        p = np.polyfit(t, gval, 1)
        lin_res = max(lin_res, float(np.max(np.abs(np.polyval(p, t) - gval))))
    scale = float(np.max(np.abs(fg.coefficients))) / np.pi
    subs.append(SubCheck("f''(x)(1+x^2)^2 is linear between data (finite-difference second "
                         "derivative, max deviation from a line / max|alpha|/pi)", lin_res / scale, 1e-4,
                         "central differences h = 1e-3: truncation h^2 |f''''|/12 and rounding "
                         "4 eps |f| / h^2 ~ 1e-9 relative; 1e-4 leaves room"))
    grid = np.linspace(-3, 3, 121)
    art = {"grid": grid, "K": F.rf_kernel(grid[:, None], grid[None, :], init="gaussian"), **data}
    return combine("derived arc-cosine K_RF (gaussian init) vs mpmath quadrature; particles; "
                   "interpolant smooth but not a cubic spline", subs,
                   details={"points": len(pts), "K(1/2,1/3)": float(F.rf_kernel(0.5, 1 / 3, init="gaussian")),
                            "max_4th_difference_gaussian": d4g, "max_4th_difference_uniform": d4u},
                   tables=[Table("Closed form vs quadrature (outer a-quadrature)",
                                 ["x", "x'", "quadrature (30 digits)", "closed form", "rel. error"], rows)]
                   + ([Table("Closed form vs 2-D nested quadrature (full profile)",
                             ["x", "x'", "quadrature (30 digits)", "closed form", "rel. error"], rows2)]
                      if rows2 else []) + tabs,
                   notes=["MATH.md pitfall: a naive SymPy R^2 integral gives ~0.5771 at (1/2, 1/3); "
                          "the derived value and the quadratures give 0.583511603256477 (the true 2-D nested "
                          "Cartesian quadrature runs in the full profile)."],
                   artifacts=art)


def _figures_w3c_interpolant(outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    F = _formulas()
    g = np.linspace(-1, 1, 2001)
    fig, (ax1, ax2) = new_figure(2, 1, width=4.6)
    hh = 1e-3
    for init in dk.INITS:
        f = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init=init)
        ax1.plot(g, f(g), label=f"{init} RF interpolant")
        f2 = (f(g + hh) - 2 * f(g) + f(g - hh)) / hh**2
        w = (1 + g**2) ** 2 if init == "gaussian" else np.ones_like(g)
        ax2.plot(g, f2 * w, label="f''(x)(1+x^2)^2, gaussian" if init == "gaussian" else "f''(x), uniform")
    ax1.plot(FIG4_X, FIG4_Y, "ko", ms=4)
    ax1.set_xlabel("x"), ax1.legend(fontsize=7)
    ax2.set_xlabel("x"), ax2.legend(fontsize=7), ax2.set_title("piecewise linear (finite differences)")
    name = "W3c_interpolant.png"
    save_figure(fig, outdir / name)
    return [(name, "Gaussian vs uniform RF interpolants of the Figure-4 data; f''(1+x^2)^2 (gaussian) "
                   "and f'' (uniform, cubic spline) are piecewise linear with kinks at the data.")]


# ==================================================================== W3d
def derive_w3d() -> Derivation:
    u, g = dk.derive_uniform(), dk.derive_gaussian()
    sig = dk.sigma_c
    ju = dk.kernel_jumps("uniform", "ntk", "in")
    jo = dk.kernel_jumps("uniform", "ntk", ">1")
    jg = dk.kernel_jumps("gaussian", "ntk")
    steps = [
        Step("$f = m^{-1/2}\\sum c_i(a_ix-b_i)_+$: $\\partial_c f = \\phi$, "
             "$\\partial_a f = c\\,x\\,1[ax>b]$, $\\partial_b f = -c\\,1[ax>b]$; with $E c^2 = "
             "\\sigma_c^2$ independent of $(a,b)$: $K_{NTK} = K_{RF} + \\sigma_c^2(1+xx')P(ax>b,ax'>b)$."),
        Step("Uniform init: same sign split with integrand $1$; branches of $G_P(s)$ "
             "($s<-1$, $|s|\\le1$, $s>1$):", sp.Eq(sp.Symbol("G_P"), sp.Tuple(*u.prob_branches))),
        Step("so on $[-1,1]^2$", sp.Eq(sp.Symbol("P"), u.prob_inside)),
        Step("Gaussian init: the arc where both are active has length $\\pi-\\varphi$ and "
             "radial mass $1/(2\\pi)$:", sp.Eq(sp.Symbol("P"), g.prob)),
        Step("NTK closed forms:", sp.Eq(sp.Symbol("K_NTK_uniform"), u.ntk)),
        Step("and for the gaussian init", sp.Eq(sp.Symbol("K_NTK_gaussian"), g.ntk)),
        Step("Jumps of $\\partial_x^k K_{NTK}$ at $x=x'$ ($k=0..3$), uniform, $|x'|\\le1$: $f'$ "
             "jumps, so NTK interpolants have KINKS at the data: "
             "$[f']_{x_j} = \\alpha_j \\cdot$(the $k=1$ entry)", sp.Eq(sp.Symbol("jumps_uniform"), sp.Tuple(*ju))),
        Step("uniform, $x' > 1$ (also $x'<-1$):", sp.Eq(sp.Symbol("jumps_uniform_outside"), sp.Tuple(*jo))),
        Step("gaussian:", sp.Eq(sp.Symbol("jumps_gaussian"), sp.Tuple(*jg))),
    ]
    return Derivation(steps=steps, results={"ntk_uniform": u.ntk, "ntk_gaussian": g.ntk,
                                            "jump_uniform": ju[1], "jump_gaussian": jg[1],
                                            "jump_uniform_outside": jo[1]})


def _one_sided_slopes(f: Callable, x0: float, h: float) -> tuple[float, float]:
    """Second-order one-sided difference quotients f'(x0^+), f'(x0^-)."""
    fr = (-3 * f(x0) + 4 * f(x0 + h) - f(x0 + 2 * h)) / (2 * h)
    fl = (3 * f(x0) - 4 * f(x0 - h) + f(x0 - 2 * h)) / (2 * h)
    return float(fr), float(fl)


def _check_w3d(ctx: RunContext, drop_factor: bool) -> Outcome:
    F = _formulas()
    res = ctx.derivation().results
    subs, tables = [], []
    for init in dk.INITS:
        if drop_factor:
            fn: Callable = lambda p, q, i=init: F.rf_kernel(p, q, init=i) + F.active_probability(p, q, init=i)
        else:
            fn = lambda p, q, i=init: F.ntk_kernel(p, q, init=i, sigma_c=1.0)
        pts = [(0.5, 1 / 3), (-0.7, 0.9), (2.5, -1.5), (-4.0, -3.0)] + _random_points(ctx, 2 if ctx.quick else 20, "ntk-" + init)
        w, rows = _closed_vs_quadrature("ntk", init, pts, fn)
        subs.append(SubCheck(f"{init}: K_NTK (sigma_c = 1) vs quadrature of K_RF + (1+xx') P, "
                             f"{len(pts)} points", w, REL_TOL, "float64 closed form ~1e-15; contract 1e-12"))
        tables.append(Table(f"{init}: K_NTK closed form vs quadrature", ["x", "x'", "quadrature",
                                                                          "closed form", "rel. error"], rows))
    # quadrature particles for the NTK (indicator integrand: first-order angular convergence)
    xs = np.linspace(-2, 2, 9)
    prow = []
    for init in dk.INITS:
        Kt = F.ntk_kernel(xs[:, None], xs[None, :], init=init)
        for n_angle in (64, 512):
            a, b, w = nk.quadrature_particles(init, n_angle)
            e = float(np.max(np.abs(nk.empirical_ntk_kernel(a, b, xs, xs, 1.0, w) - Kt)) / np.max(Kt))
            prow.append([init, a.size, fmt(e)])
    tables.append(Table("Quadrature-particle NTK, max Gram error / max K (the indicator term "
                        "converges at first order in the angular step)", ["init", "m", "error"], prow))
    # kinks: jump of f' of the NTK interpolant at the data equals alpha_j * J(x_j)
    jrows, worst = [], 0.0
    art: dict[str, Any] = {"x_data": FIG4_X, "y_data": FIG4_Y}
    for init in dk.INITS:
        J = sp.lambdify((XP, dk.sigma_c), res[f"jump_{init}"], modules="numpy")
        f = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="ntk", init=init, sigma_c=1.0)
        for j, x0 in enumerate(FIG4_X):
            fr, fl = _one_sided_slopes(f, float(x0), 1e-5)
            pred = float(f.coefficients[j] * np.broadcast_to(J(x0, 1.0), ()))
            err = abs((fr - fl) - pred) / max(abs(pred), 1e-12)
            worst = max(worst, err)
            if j in (0, 4, 9):
                jrows.append([init, fmt(x0), fmt(fr - fl, 6), fmt(pred, 6), fmt(err)])
    subs.append(SubCheck("jump of f' of the NTK interpolant at every data point (one-sided "
                         "differences) vs alpha_j * derived jump", worst, 1e-4,
                         "second-order one-sided differences, h = 1e-5: truncation h^2 |f'''| ~ 1e-9, "
                         "rounding eps |f| / h ~ 1e-10, relative to |jump| >= 1e-3"))
    tables.append(Table("Kinks of the NTK interpolant (Figure-4 data)", ["init", "x_j", "measured [f']",
                                                                          "alpha_j * J(x_j)", "rel. error"], jrows))
    return combine("derived K_NTK (both inits) vs quadrature of its definition; kinks of NTK "
                   "interpolants at the data", subs, tables=tables, artifacts=art)


def _figures_w3d(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    F = _formulas()
    xd, yd = ev.artifacts["x_data"], ev.artifacts["y_data"]
    g = np.linspace(-1.2, 1.2, 1201)
    fig, axes = new_figure(2, 1, width=4.6)
    for ax, init in zip(axes, dk.INITS):
        for kern, st in (("rf", "-"), ("ntk", "--")):
            f = F.kernel_interpolant(xd, yd, kernel=kern, init=init)
            ax.plot(g, f(g), st, label=f"{kern.upper()} interpolant")
        ax.plot(xd, yd, "ko", ms=4)
        ax.set_title(f"{init} init"), ax.set_xlabel("x"), ax.legend(fontsize=7)
    name = "W3d_interpolants.png"
    save_figure(fig, outdir / name)
    return [(name, "RF (smooth) vs NTK interpolants (kinks at the data) of the Figure-4 square wave.")]


# ==================================================================== W3e
def derive_w3e() -> Derivation:
    steps = [Step("$\\omega(x) = \\int |a|^3 p_0(a, ax)\\,da$. Uniform: $p_0 = 1/4$ on "
                  "$|a|\\le\\min(1, 1/|x|)$:", sp.Eq(sp.Symbol("omega_uniform"), dk.rkhs_weight("uniform"))),
             Step("Gaussian:", sp.Eq(sp.Symbol("omega_gaussian"), dk.rkhs_weight("gaussian")))]
    for init in dk.INITS:
        ident = dk.second_derivative_identity(init)
        steps.append(Step(f"{init}: $\\partial_x^2 K_{{RF}}(x,x') - \\omega(x)|x-x'|/2$ simplifies to 0 "
                          f"in every region ({len(ident)} regions):",
                          sp.Eq(sp.Symbol("residuals"), sp.Tuple(*ident.values()))))
    steps += [
        Step("Why (and the affine part). Write $(u)_+ = (u+|u|)/2$; odd cross terms vanish "
             "($p_0$ symmetric), and in coordinates $b = a t$ ($db = |a|dt$): "
             "$E|ax-b||ax'-b| = \\int \\omega(t)|x-t||x'-t|dt$, $E(ax-b)(ax'-b) = \\sigma^2(1+xx')$ "
             "with $\\sigma^2 = E a^2 = E b^2$ ($E ab = 0$). Hence "
             "$K_{RF}(x,x') = \\tfrac14\\int\\omega(t)|x-t||x'-t|\\,dt + \\tfrac{\\sigma^2}{4}(1+xx')$."),
        Step("Second moments:", sp.Eq(sp.Tuple(sp.Symbol("sigma2_uniform"), sp.Symbol("sigma2_gaussian")),
                                     sp.Tuple(dk.second_moment("uniform"), dk.second_moment("gaussian")))),
        Step("For $g = \\sum_k\\beta_k K(\\cdot, z_k)$: $g''/\\omega = \\tfrac12\\sum_k\\beta_k|x-z_k|$ and "
             "$\\|g\\|_{\\mathcal H}^2 = \\beta^T K\\beta = \\int g''^2/\\omega\\,dx + \\tfrac{4}{\\sigma^2}(A_0^2+A_1^2)$ "
             "with the affine part $A_0 = -\\tfrac{\\sigma^2}{4}\\sum\\beta_k$, "
             "$A_1 = \\tfrac{\\sigma^2}{4}\\sum\\beta_k z_k$. The kernel interpolant is the "
             "minimum-norm interpolant, i.e. it minimizes $\\int f''^2/\\omega$ + affine part: "
             "for the uniform init $\\omega$ is constant on $[-1,1]$ (cubic spline, W3b); for "
             "the gaussian $f''(1+x^2)^2$ is piecewise linear (W3c)."),
    ]
    return Derivation(steps=steps, results={"omega_uniform": dk.rkhs_weight("uniform"),
                                            "omega_gaussian": dk.rkhs_weight("gaussian"),
                                            "sigma2_uniform": dk.second_moment("uniform"),
                                            "sigma2_gaussian": dk.second_moment("gaussian")})


def _check_w3e(ctx: RunContext, exponent: int) -> Outcome:
    F = _formulas()
    res = ctx.derivation().results
    subs, tables = [], []
    for init in dk.INITS:
        om_expr = dk.rkhs_weight(init, exponent)
        om_np = sp.lambdify(X, om_expr, modules="numpy")
        om_mp = sp.lambdify(X, om_expr, modules="mpmath")
        xs = [0.0, 0.3, -0.95, 1.0, 1.7, -4.5]
        rows, w = [], 0.0
        for xv in xs:
            ref = nk.rkhs_weight_quad_mp(xv, init, exponent=3)
            with np.errstate(divide="ignore"):
                val = float(np.asarray(om_np(np.array([xv])))[0]) if init == "gaussian" else float(om_mp(mpmath.mpf(xv)))
            err = float(abs(mpmath.mpf(val) / ref - 1))
            w = max(w, err)
            rows.append([init, fmt(xv), mpmath.nstr(ref, 16), f"{val:.16g}", fmt(err)])
        subs.append(SubCheck(f"{init}: omega(x) vs mpmath quadrature of int |a|^3 p_0(a, ax) da",
                             w, REL_TOL, "float64 closed form vs 30-digit quadrature"))
        tables.append(Table(f"{init}: omega", ["init", "x", "quadrature", "closed form", "rel. error"], rows))
        # kernel identity K = 1/4 int omega |t-z||t-z'| + sigma^2/4 (1 + z z')
        s2 = res[f"sigma2_{init}"]
        bps = (-1.0, 1.0) if init == "uniform" else ()
        zs = [(0.3, -0.6), (2.0, -1.5)] + _random_points(ctx, 2 if ctx.quick else 12, "ident-" + init)
        w2, rows2 = 0.0, []
        for z, zp in zs:
            ref = nk.abs_moment_kernel_mp(z, zp, om_mp, s2, breakpoints=bps)
            val = float(F.rf_kernel(z, zp, init=init))
            err = float(abs(mpmath.mpf(val) / ref - 1))
            w2 = max(w2, err)
            rows2.append([init, fmt(z, 4), fmt(zp, 4), mpmath.nstr(ref, 16), f"{val:.16g}", fmt(err)])
        subs.append(SubCheck(f"{init}: K_RF(z,z') = 1/4 int omega |t-z||t-z'| dt + sigma^2/4 (1+zz') "
                             "(1-D mpmath quadrature) - the RKHS-norm identity", w2, REL_TOL,
                             "30-digit quadrature vs float64 closed form"))
        tables.append(Table(f"{init}: RKHS identity", ["init", "z", "z'", "quadrature", "K_RF", "rel. error"], rows2))
    # f'' / omega of the Figure-4 interpolant = 1/2 sum alpha_j |x - x_j| (finite differences)
    worst = 0.0
    for init in dk.INITS:
        om = sp.lambdify(X, dk.rkhs_weight(init, exponent), modules="numpy")
        f = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init=init)
        t = np.linspace(-1.5, 1.5, 61) + 0.013
        hh = 1e-3
        f2 = (f(t + hh) - 2 * f(t) + f(t - hh)) / hh**2
        with np.errstate(divide="ignore"):
            pred = np.asarray(om(t), dtype=float) * 0.5 * (np.abs(t[:, None] - FIG4_X[None, :]) @ f.coefficients)
        worst = max(worst, float(np.max(np.abs(f2 - pred)) / np.max(np.abs(pred))))
    subs.append(SubCheck("f''(x) of the kernel interpolant (central differences) = "
                         "omega(x)/2 sum alpha_j |x - x_j|, both inits, x in [-1.5, 1.5]", worst, 1e-4,
                         "h = 1e-3: truncation h^2|f''''|/12 plus rounding 4 eps|f|/h^2 ~ 1e-8 relative, "
                         "except across kinks of f''' (none on the grid)"))
    g = np.linspace(-4, 4, 401)
    return combine("derived RKHS weight omega vs quadrature; RKHS identity for K_RF; f''/omega of "
                   "interpolants", subs, tables=tables,
                   artifacts={"grid": g, "omega": {i: F.rkhs_weight(g, init=i) for i in dk.INITS}})


def _figures_w3e(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    g = ev.artifacts["grid"]
    fig, ax = new_figure(1, 1, width=4.8)
    for i, om in ev.artifacts["omega"].items():
        ax.semilogy(g, om, label=f"omega, {i} init")
    ax.set_xlabel("x"), ax.legend()
    name = "W3e_weight.png"
    save_figure(fig, outdir / name)
    return [(name, "RKHS weights omega(x): the RKHS norm is int f''^2/omega + affine part "
                   "(uniform: constant 1/8 on [-1, 1], 1/(8x^4) outside).")]


# ==================================================================== W3f
def _fig4_sizes(ctx: RunContext) -> tuple[list[int], int, list[int], int]:
    if ctx.quick:
        return [10, 100, 1000, 10_000], 5, [256, 1024, 4096, 16_384], 300
    return [10, 100, 1000, 10_000, 100_000], 7, [1024, 4096, 16_384, 65_536], 300


# E c^2 = SIGMA_C^2 for the all-layer run.  Lazy (NTK) training needs the parameter motion
# over the training time to be small: |Delta(a, b)| ~ eta T |rho| / (sigma_c sqrt(m)) with
# eta ~ 1/(sigma_c^2 lambda_max); with sigma_c = 1 and this data (cond(K_NTK) ~ 400) that
# needs m >> 10^5 (measured: at m = 16384 the loss after 200 steps is 4x the kernel-GD loss);
# sigma_c = 10 brings the lazy regime to m ~ 10^3..10^4.
SIGMA_C = 10.0


@lru_cache(maxsize=4)
def _fig4_runs(profile: str, seed: int) -> dict[str, Any]:
    """GD on c only (alpha = 1, c(0) = 0, run to convergence) and all-layer GD
    (alpha = sqrt(m), mirrored init) on the Figure-4 square wave; cached so that the
    negative control compares the SAME trained networks with a wrong limit."""
    from numerics.relu1d import forward_dense
    from numerics.rng import make_rng
    F = _formulas()
    ctx = RunContext("W3f", profile, seed)  # type: ignore[arg-type]
    ms, reps, ms_ntk, steps = _fig4_sizes(ctx)
    grid = np.linspace(-1, 1, 801)
    out: dict[str, Any] = {"grid": grid, "ms": ms, "ms_ntk": ms_ntk, "steps_ntk": steps, "rf": {}, "ntk": {}}
    for m in ms:
        runs = []
        for r in range(reps):
            a, b = nk.sample_init(make_rng(seed, "W3f", "rf", m, r), m, "uniform")
            fit = nk.fit_output_layer(a, b, FIG4_X, FIG4_Y)
            fm = np.concatenate([nk.features(a, b, grid[k:k + 100]) @ fit.c for k in range(0, grid.size, 100)])
            runs.append({"f": fm, "steps": fit.steps, "train": fit.train_residual})
        out["rf"][m] = runs
    K = F.ntk_kernel(FIG4_X[:, None], FIG4_X[None, :], init="uniform", sigma_c=SIGMA_C)
    eta = 1.0 / float(np.linalg.eigvalsh(K).max())
    out["eta_ntk"] = eta
    for m in ms_ntk:
        a, b, c = nk.symmetric_init(make_rng(seed, "W3f", "ntk", m), m, "uniform", SIGMA_C)
        fit = nk.train_all_layers(a, b, c, FIG4_X, FIG4_Y, eta, max_steps=steps, loss_tol=0.0)
        out["ntk"][m] = {"f": forward_dense(fit.a, fit.b, fit.c, grid, "sqrt"), "loss": fit.loss}
    return out


def _ntk_gd_prediction(grid: np.ndarray, eta: float, steps: int) -> np.ndarray:
    """Infinite-width prediction after ``steps`` GD steps: kernel GD with K_NTK,
    f_T(x) = K(x, X) K^{-1} (I - (I - eta K)^T) y (NTK theorem; T -> inf: the interpolant)."""
    F = _formulas()
    K = F.ntk_kernel(FIG4_X[:, None], FIG4_X[None, :], init="uniform", sigma_c=SIGMA_C)
    beta = nk.kernel_gd_coefficients(K, FIG4_Y, eta, steps)
    return F.ntk_kernel(grid[:, None], FIG4_X[None, :], init="uniform", sigma_c=SIGMA_C) @ beta


def _check_w3f(ctx: RunContext, wrong_limit: bool) -> Outcome:
    F = _formulas()
    runs = _fig4_runs(ctx.profile, ctx.seed)
    grid = runs["grid"]
    f_inf = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="ntk" if wrong_limit else "rf", init="uniform")(grid)
    rows, med = [], []
    for m in runs["ms"]:
        d = [float(np.max(np.abs(r["f"] - f_inf))) for r in runs["rf"][m]]
        med.append(float(np.median(d)))
        rows.append([m, len(d), fmt(med[-1]), fmt(min(d)), fmt(max(d)),
                     fmt(float(np.median([r["steps"] for r in runs["rf"][m]]))),
                     fmt(float(np.max([r["train"] for r in runs["rf"][m]])))])
    ms = np.array(runs["ms"], dtype=float)
    sel = ms >= 100
    rate = loglog_slope(ms[sel], np.array(med)[sel])
    decreasing = bool(np.all(np.diff(med) < 0))
    subs = [SubCheck(f"RF (train c only): median sup-distance to the uniform-init kernel "
                     f"interpolant decreases with m (ratio last/first = {med[-1] / med[0]:.2g})",
                     float(np.max(np.diff(med) / np.array(med[:-1]))), 0.0,
                     "strict decrease of the median over replicates at every step of m",
                     passed=decreasing),
            SubCheck(f"RF fitted rate over m >= 100: slope {rate:.3f} (expected -1/2; error shown |slope + 1/2|)",
                     abs(rate + 0.5), 0.25, "min-norm fit = K_m(x,X)K_m^{-1}y with K_m - K = "
                     "O_P(m^-1/2); with 5-7 replicates over 2-3 decades the slope's spread is "
                     "~0.1, 0.25 allows 2.5 spreads")]
    # NTK: all-layer training with alpha = sqrt(m)
    steps, eta = runs["steps_ntk"], runs["eta_ntk"]
    pred_T = _ntk_gd_prediction(grid, eta, steps)
    if wrong_limit:
        pred_T = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init="uniform")(grid)
    nrows, dn = [], []
    for m in runs["ms_ntk"]:
        d = float(np.max(np.abs(runs["ntk"][m]["f"] - pred_T)))
        dn.append(d)
        nrows.append([m, steps, fmt(runs["ntk"][m]["loss"]), fmt(d)])
    msn = np.array(runs["ms_ntk"], dtype=float)
    rate_n = loglog_slope(msn, dn)
    subs.append(SubCheck(f"all layers, alpha = sqrt(m), sigma_c = {SIGMA_C:g}: sup-distance to the "
                         f"infinite-width NTK kernel-GD prediction after T = {steps} GD steps "
                         f"decreases with m (slope {rate_n:.3f})",
                         rate_n, -0.25, "NTK theory: finite-width deviation O(m^-1/2) (one run per "
                         "m and a pre-asymptotic lazy regime, measured slope ~ -0.4, so a clear "
                         "monotone decrease with slope <= -0.25 is required)",
                         passed=bool(rate_n <= -0.25 and np.all(np.diff(dn) < 0))))
    art = {"grid": grid, "f_inf": f_inf, "ms": runs["ms"], "median": med, "rate": rate,
           "ms_ntk": runs["ms_ntk"], "d_ntk": dn, "rate_ntk": rate_n, "pred_T": pred_T,
           "f_rf_examples": {m: runs["rf"][m][0]["f"] for m in runs["ms"]},
           "f_ntk_examples": {m: runs["ntk"][m]["f"] for m in runs["ms_ntk"]}}
    return combine("Figure 4: trained finite networks vs the derived kernel interpolant "
                   "(uniform init, square-wave data, 10 points)", subs, headline=1,
                   details={"rate_rf": rate, "rate_ntk": rate_n, "eta_ntk": eta},
                   tables=[Table("GD on c only (alpha(m) = 1, c(0) = 0) run to convergence: "
                                 "sup_[-1,1] |f_m - f_kernel|",
                                 ["m", "replicates", "median distance", "min", "max", "GD steps T",
                                  "max train residual"], rows),
                           Table(f"All layers (alpha = sqrt(m), sigma_c = {SIGMA_C:g}, mirrored init so "
                                 "f_0 = 0): sup distance to the NTK kernel-GD prediction at the same T",
                                 ["m", "GD steps", "final loss", "sup distance"], nrows)],
                   notes=["GD on c from c(0) = 0 stays in the row space of the feature matrix; the "
                          "iterates are computed exactly through the s x s reduction "
                          "(numerics.kernels.output_layer_gd_closed_form, validated against "
                          "explicit GD in the tests) with eta = 1/lambda_max and T steps until "
                          "every residual eigen-component shrank by 1e-12.",
                          "m = 10 features for 10 points is (near) singular: GD converges to "
                          "the least-squares fit, far from the kernel limit (first row).",
                          "All-layer run: compared with kernel GD at the same T = 300 steps (the "
                          "kernel-GD training loss is then ~0.08, not yet interpolating). Measured "
                          "during development (seed 0): training longer, T = 1000 / 3000, the "
                          "sup distance to the NTK prediction drops with m up to m = 4096 but then "
                          "plateaus at ~0.08 (m = 16384 and 65536, located between data points), "
                          "i.e. the lazy condition (parameter motion ~ eta T / (sigma_c sqrt(m)) "
                          "small) fails for the slowest eigen-directions of K_NTK (cond ~ 300) at "
                          "these widths; reaching the fully trained NTK interpolant needs larger m."],
                   artifacts=art)


def _figures_w3f(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    art = ev.artifacts
    fig, (ax1, ax2, ax3) = new_figure(3, 1, width=4.2)
    ms = np.array(art["ms"], float)
    ax1.loglog(ms, art["median"], "o-", label=f"RF, c only (slope {art['rate']:.2f})")
    ax1.loglog(art["ms_ntk"], art["d_ntk"], "s-", label=f"all layers vs NTK (slope {art['rate_ntk']:.2f})")
    ax1.loglog(ms, art["median"][1] * (ms / ms[1]) ** -0.5, "k:", label="m^-1/2")
    ax1.set_xlabel("m"), ax1.set_ylabel("sup distance on [-1, 1]"), ax1.legend(fontsize=7)
    ax1.set_title("Figure 4: convergence to the kernel limit")
    g = art["grid"]
    for m, f in art["f_rf_examples"].items():
        if m >= 100:
            ax2.plot(g, f, lw=0.8, label=f"m = {m}")
    ax2.plot(g, art["f_inf"], "k--", lw=1.2, label="kernel interpolant")
    ax2.plot(FIG4_X, FIG4_Y, "ko", ms=3)
    ax2.set_ylim(-3, 3), ax2.legend(fontsize=7), ax2.set_title("train c only")
    for m, f in art["f_ntk_examples"].items():
        ax3.plot(g, f, lw=0.8, label=f"m = {m}")
    ax3.plot(g, art["pred_T"], "k--", lw=1.2, label="NTK prediction")
    ax3.plot(FIG4_X, FIG4_Y, "ko", ms=3)
    ax3.legend(fontsize=7), ax3.set_title("train all layers, alpha = sqrt(m)")
    name = "W3f_fig4.png"
    save_figure(fig, outdir / name)
    return [(name, "Figure 4: sup-distance between trained networks and the infinite-width "
                   "kernel predictions vs width m (log-log), and the trained functions.")]


# ==================================================================== the claims
CLAIM_W3A = Claim(
    id="W3a", title="Random-feature kernel of the uniform init, for all real x, x'",
    source=SOURCE + "; MATH.md W.3",
    statement=(r"For $(a,b)\sim U([-1,1]^2)$: $K_{RF}(x,x') = E[(ax-b)_+(ax'-b)_+] = "
               r"\tfrac14[G(x,x';\min(x,x')) + G(-x,-x';-\max(x,x'))]$ with $G$ piecewise "
               r"rational in $s$ (branches $s<-1$, $|s|\le1$, $s>1$); on $[-1,1]^2$ a single "
               r"polynomial in $x, x', |x-x'|$."),
    derive=derive_w3a, check=lambda ctx: _check_w3a(ctx, False),
    negative_control=lambda ctx: _check_w3a(ctx, True),
    negative_control_description="use the [-1,1]^2 polynomial for all x, x' (forgetting the "
                                 "clipping of b at +-1 outside [-1,1])",
    figures=lambda ev, out: _kernel_figures("W3a", "uniform", ev, out))

CLAIM_W3B = Claim(
    id="W3b", title="Theorem 5: the uniform-init kernel interpolant is a cubic spline; its end conditions",
    source="Williams et al. (NeurIPS 2019), Thm 5",
    statement=(r"With data in $[-1,1]$ the RF kernel interpolant $f=\sum_j\alpha_jK(\cdot,x_j)$ "
               r"(uniform init) is piecewise cubic with knots at the data and $C^2$, "
               r"$[f''']_{x_j}=\alpha_j/8$; it is not the natural spline: its outer pieces satisfy "
               r"$f''_L \equiv -f''_R$ (as linear functions) and two affine relations (derived)."),
    derive=derive_w3b, check=lambda ctx: _check_w3b(ctx, False),
    negative_control=lambda ctx: _check_w3b(ctx, True),
    negative_control_description="compare with the natural cubic spline (f'' = 0 at the ends) "
                                 "instead of the derived end conditions",
    figures=_figures_w3b)

CLAIM_W3C = Claim(
    id="W3c", title="Gaussian init: arc-cosine random-feature kernel; interpolant smooth, not a cubic spline",
    source=SOURCE + "; Cho & Saul (2009) arc-cosine kernel",
    statement=(r"For $(a,b)\sim N(0,I_2)$: $K_{RF} = |\tilde x||\tilde x'|(\sin\varphi + "
               r"(\pi-\varphi)\cos\varphi)/(2\pi) = (|x-x'| + (\pi-\varphi)(1+xx'))/(2\pi)$, "
               r"$\varphi = \mathrm{atan2}(|x-x'|, 1+xx')$; the interpolant has $f''(1+x^2)^2$ "
               r"piecewise linear and is not piecewise cubic."),
    derive=derive_w3c, check=lambda ctx: _check_w3c(ctx, False),
    negative_control=lambda ctx: _check_w3c(ctx, True),
    negative_control_description="drop the sin(phi) term |x - x'| / (2 pi)",
    figures=lambda ev, out: _kernel_figures("W3c", "gaussian", ev, out) + _figures_w3c_interpolant(out))

CLAIM_W3D = Claim(
    id="W3d", title="NTK closed forms (both inits); NTK interpolants have kinks at the data",
    source=SOURCE + "; MATH.md W.3",
    statement=(r"$K_{NTK} = K_{RF} + \sigma_c^2(1+xx')P(ax>b,ax'>b)$ with $P = \tfrac12 - "
               r"|x-x'|/8$ on $[-1,1]^2$ (uniform) and $P = (\pi-\varphi)/(2\pi)$ (gaussian); "
               r"$[f']_{x_j} = -\alpha_j\sigma_c^2(1+x_j^2)/4$ (uniform, $|x_j|\le1$), "
               r"$-\alpha_j\sigma_c^2/\pi$ (gaussian)."),
    derive=derive_w3d, check=lambda ctx: _check_w3d(ctx, False),
    negative_control=lambda ctx: _check_w3d(ctx, True),
    negative_control_description="drop the factor (1 + x x') of the NTK's extra term",
    figures=_figures_w3d)

CLAIM_W3E = Claim(
    id="W3e", title="RKHS norm = weighted L2 norm of f'' plus an affine part",
    source=SOURCE + "; MATH.md W.3",
    statement=(r"$\omega(x) = \int|a|^3p_0(a,ax)\,da$: uniform $\tfrac18\min(1, x^{-4})$, gaussian "
               r"$2/(\pi(1+x^2)^2)$; $\partial_x^2K_{RF}(x,x') = \omega(x)|x-x'|/2$ and "
               r"$K_{RF}(x,x') = \tfrac14\int\omega(t)|x-t||x'-t|dt + \tfrac{\sigma^2}{4}(1+xx')$, so "
               r"$\|f\|_{\mathcal H}^2 = \int f''^2/\omega + \tfrac4{\sigma^2}(A_0^2+A_1^2)$ and the kernel "
               r"interpolant minimizes it."),
    derive=derive_w3e, check=lambda ctx: _check_w3e(ctx, 3),
    negative_control=lambda ctx: _check_w3e(ctx, 2),
    negative_control_description="weight with |a|^2 instead of |a|^3",
    figures=_figures_w3e)

CLAIM_W3F = Claim(
    id="W3f", title="Figure 4: finite-width training converges to the kernel interpolant",
    source="Williams et al. (NeurIPS 2019), Fig. 4",
    statement=(r"GD on $c$ only ($\alpha(m)=1$, $c(0)=0$) with $m$ i.i.d. uniform-init features "
               r"converges to the min-norm fit, whose sup-distance on $[-1,1]$ to the kernel "
               r"interpolant decreases like $m^{-1/2}$; training all layers with "
               r"$\alpha(m)=\sqrt m$ approaches the NTK prediction."),
    derive=lambda: Derivation(steps=[
        Step("From $c(0)=0$ GD keeps $c$ in the row space of $\\Phi$ ($\\Phi_{ji} = \\phi_i(x_j)$) "
             "and converges to the min-norm solution $c^* = \\Phi^T(\\Phi\\Phi^T)^{-1}y$, i.e. "
             "$f_m = K_m(x,X)K_m(X,X)^{-1}y$ with the empirical kernel $K_m$; $K_m\\to K_{RF}$ "
             "at rate $m^{-1/2}$ (W3a), so $f_m \\to \\sum_j\\alpha_jK_{RF}(\\cdot,x_j)$."),
        Step("With $\\alpha(m)=\\sqrt m$ and all layers trained, the tangent kernel stays "
             "$K_{NTK}$ (W3d) as $m\\to\\infty$ and GD follows kernel GD: "
             "$f_T = K(x,X)K^{-1}(I-(I-\\eta K)^T)y$ (mirrored init so that $f_0 = 0$).")]),
    check=lambda ctx: _check_w3f(ctx, False),
    negative_control=lambda ctx: _check_w3f(ctx, True),
    negative_control_description="compare the same trained networks with the swapped limits "
                                 "(c-only training vs the NTK interpolant; all-layer training vs "
                                 "the RF interpolant)",
    figures=_figures_w3f, kind="numerical-evidence")

CLAIMS = [CLAIM_W3A, CLAIM_W3B, CLAIM_W3C, CLAIM_W3D, CLAIM_W3E, CLAIM_W3F]
