"""Claims W3a, W3c, W3d: the kernels of shallow univariate ReLU networks in the kernel regime
(Williams, Trager, Silva, Panozzo, Zorin, Bruna, NeurIPS 2019, Sec. 4 "kernel regime").

- W3a: the random-feature kernel K_RF of the uniform init, for all real x, x';
- W3c: the arc-cosine K_RF of the gaussian init; its interpolant is smooth, not a cubic spline;
- W3d: the NTK K_NTK = K_RF + sigma_c^2 (1 + x x') P(a x > b, a x' > b) for both inits, and
  the kinks of NTK interpolants at the data.

Each closed form is checked against the quadrature of its DEFINING expectation (float64
evaluators and the derived expressions at 40 digits), against i.i.d. and quadrature
particles (the m^-1/2 law of the empirical kernel), and the NTK against the tangent kernel
of the network computed from its gradients.  The interpolant claims (W3b, W3e) are in
:mod:`verify.claims.williams_kernels_interpolants`, Figure 4 (W3f) in
:mod:`verify.claims.williams_kernels_finite_width`; the shared conventions, tolerances and
Figure-4 data in ``_williams_kernels_common``.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import mpmath
import numpy as np
import sympy as sp

from derivations import williams_kernels as dk
from numerics import kernels as nk
from numerics.chi_square import mean_square_ratio_test
from verify.certify import CertifiedInstance, certified_compare, certified_details
from verify.claims._williams_kernels_common import (ALPHA_TEST, EPS, EXACT_TOL, FIG4_X, FIG4_Y,
                                                    NEAR_MISS, REL_TOL, SERIES_REMAINDER, SOURCE,
                                                    XP, X, certified_instances, certified_points,
                                                    datasets, definition_ball, float_instances,
                                                    formulas, point_pairs, quadrature_reference,
                                                    relative_error_vs_mpmath)
from verify.kit import (Claim, Evidence, Outcome, RunContext, SubCheck, Table, combine, compare,
                        fmt, for_all_instances, lambdified, loglog_slope)

__all__ = ["CLAIMS", "FIG4_X", "FIG4_Y"]


# ============================================================== quadrature references
def _region_points() -> list[tuple[float, float]]:
    """One (x, x') in each of the 12 pieces of the uniform kernel (order x buckets of min/max)
    plus the diagonal and points on the breakpoints |x| = 1."""
    pts = [(-3.5, -1.75), (-2.25, 0.375), (-4.0, 2.5), (-0.625, 0.8125), (0.25, 3.25), (1.5, 4.75)]
    pts += [(q, p) for p, q in pts]
    pts += [(0.3, 0.3), (-2.5, -2.5), (1.0, -1.0), (1.0, 2.0), (-1.0, 0.5)]
    return pts


def _vs_quadrature(ctx: RunContext, name: str, kind: str, init: str,
                   fn: Callable[[float, float], float], pinned: list, reason: str) -> SubCheck:
    """max relative error of ``fn`` (float64) against the mpmath quadrature of the defining
    expectation, over pinned and ``ctx.size("quadrature_points")`` Hypothesis-drawn points
    (x, x') in [-5, 5]^2."""
    def measure(pt: tuple[float, float]) -> SubCheck:
        p, q = float(pt[0]), float(pt[1])
        err = relative_error_vs_mpmath(fn(p, q), quadrature_reference(kind, init, p, q))
        return SubCheck(name, err, REL_TOL, f"{reason}; at (x, x') = ({p:.6g}, {q:.6g})",
                        unit="relative")
    return for_all_instances(ctx, name, point_pairs, measure, count=ctx.size("quadrature_points"),
                             pinned=pinned)


def _at_40_digits(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An mpmath function (a derived expression lambdified with ``modules="mpmath"``)
    evaluated at 40 digits on float arguments."""
    def at40(*vals: float) -> Any:
        with mpmath.workdps(40):
            return fn(*(mpmath.mpf(v) for v in vals))
    return at40


def _with_sigma_c(fn: Callable[..., Any], sigma_c: float) -> Callable[..., Any]:
    """``fn(x, x', sigma_c)`` at a fixed sigma_c (as an exact mpf of the float)."""
    return lambda p, q: fn(p, q, mpmath.mpf(sigma_c))


def _exact_vs_quadrature(ctx: RunContext, name: str, refs: Callable[[float, float], list],
                         pinned: list, reason: str) -> SubCheck:
    """max relative error of derived expressions evaluated at 40 digits against the 30-digit
    quadrature of their defining expectations at pinned and ``ctx.size("quadrature_points")``
    drawn points: ``refs(p, q)`` lists (label, derived value, quadrature value)."""
    def measure(pt: tuple[float, float]) -> SubCheck:
        p, q = float(pt[0]), float(pt[1])
        with mpmath.workdps(40):
            errs = [(lab, float(abs(val / ref - 1)) if ref != 0 else float(abs(val)))
                    for lab, val, ref in refs(p, q)]
        lab, err = max(errs, key=lambda t: t[1])
        return SubCheck(name, err, EXACT_TOL, f"{reason}; worst {lab} at (x, x') = ({p:.6g}, {q:.6g})",
                        unit="relative")
    return for_all_instances(ctx, name, point_pairs, measure, count=ctx.size("quadrature_points"),
                             pinned=pinned)


def _ntk_reference(init: str, p: float, q: float, sigma_c: float) -> mpmath.mpf:
    """K_NTK from ITS OWN definition, E <grad_theta f(x), grad_theta f(x')> over (a, b) for
    one unit f = c (a x - b)_+ with E c^2 = sigma_c^2 (Arb quadrature cut at the kinks,
    ``numerics.arb_quadrature.ntk_kernel_ball``), as a 30-digit mpf of the ball's midpoint
    (radius < 1e-30 relative)."""
    b = definition_ball("ntk", init, float(p), float(q), float(sigma_c))
    with mpmath.workdps(30):
        return mpmath.mpf(b.mid().str(40, radius=False))


def _gaussian_grid() -> list[tuple[float, float]]:
    """Points covering both branches of the careful gaussian evaluator: 1 + x x' >= 0,
    1 + x x' < 0 with t = |x - x'| / |1 + x x'| >= 1/4 (atan) and < 1/4 (series)."""
    v = [-20.0, -10.0, -5.0, -2.0, -1.0, -0.3, 0.0, 0.7, 1.5, 4.0, 10.0, 20.0]
    return [(p, q) for p in v for q in v]


def _rounding_bound_gaussian(p: float, q: float, value: float, extra: float = 0.0) -> float:
    """A-priori rounding bound (relative) for the float64 gaussian evaluators: d = |x - x'|
    and c = 1 + x x' carry absolute errors eps d and eps (1 + |x x'|); both partial
    derivatives of K in (d, c) are <= 1 in magnitude; the remaining operations (atan2,
    series, products) add <= 16 eps |K|.  Relative: eps (16 + (d + 1 + |x x'| + extra) / |K|),
    times a safety factor 4."""
    d, c = abs(p - q), 1 + abs(p * q)
    return 4 * EPS * (16 + (d + c + extra) / max(abs(value), 1e-300))


def _float_vs_derived(name: str, points: list, float_fn: Callable, derived_fn: Callable,
                      bound: Callable[[float, float, float], float]) -> SubCheck:
    """max over ``points`` of |float - derived (mpmath, 40 digits)| / (rounding bound)."""
    worst, where = 0.0, None
    for p, q in points:
        with mpmath.workdps(40):
            ref = derived_fn(mpmath.mpf(p), mpmath.mpf(q))
        val = float(float_fn(p, q))
        r = relative_error_vs_mpmath(val, ref) / bound(p, q, float(ref))
        if r >= worst:
            worst, where = r, (p, q)
    return SubCheck(name, worst, 1.0, f"error shown: relative difference / a-priori rounding "
                    f"bound, max over {len(points)} points covering every branch (worst at "
                    f"{where})", unit="tolerances")


# ------------------------------------------------------------- certified (Arb) checks
#: points in the series branch of the gaussian stable form (1 + x x' < 0, t < 1/4) and
#: near c = 0
_SERIES_POINTS = [(10.0, -10.5), (100.0, -101.0), (3.0, -3.5), (4.0, -4.25), (-1e3, 1e3 + 0.5),
                  (2.0, -0.5), (0.5, -2.0), (1.0, -1.0)]
_WHY_DEF = ("Arb balls: the definition E[...] over (a, b) by acb.integral cut exactly at the "
            "ReLU kinks (uniform: nested over a, b; gaussian: polar, the angle cut at atan x, "
            "the radial polynomial integrated exactly against certified Gaussian moments); the "
            "closed form by the Arb translation of the derived SymPy expression")


def _ulps(formula: Any, init: str) -> Any:
    return formula.ulp_bound[init]


def _certified_rf(ctx: RunContext, init: str, exprs: dict[str, sp.Expr], fn: Callable,
                  pinned: list, a_scale: float) -> list[SubCheck]:
    """Certified sub-checks of K_RF: each derived expression (at the inputs times
    ``a_scale``, exactly: the negative control) and the float64 formula ``fn`` within its
    stated ulp bound, vs the Arb ball of the definition at pinned and drawn points."""
    F = formulas()
    pts = certified_points(ctx, pinned)
    ref = lambda p, q: definition_ball("rf", init, p, q)  # noqa: E731
    subs = []
    for label, e in exprs.items():
        bound = (lambda p, q, r: SERIES_REMAINDER) if "series" in label else None
        subs.append(certified_compare(f"certified: derived {label} vs E[(ax-b)_+(ax'-b)_+] ({init}), "
                                      f"{len(pts)} points", certified_instances(e, (X, XP), pts, ref, a_scale,
                                                                                bound=bound),
                                      bound=SERIES_REMAINDER if bound else 0.0, reason=_WHY_DEF))
    ub = _ulps(F.rf_kernel, init)
    vals = fn(np.array([p for p, _ in pts]), np.array([q for _, q in pts]))
    subs.append(certified_compare(f"certified: formulas.rf_kernel ({init}, float64) within its stated "
                                  f"{ub.ulps:g} ulps of the {ub.unit}",
                                  float_instances(vals, pts, ref, lambda p, q, r: ub.ulps * EPS),
                                  bound=ub.ulps * EPS, reason=_WHY_DEF + "; the float64 value as an exact ball"))
    return subs


# ------------------------------------------------ Monte Carlo of the empirical kernel
_GRID9 = np.linspace(-2.0, 2.0, 9)


#: the declared sizes of W3a: widths m of the i.i.d. empirical kernels and replicates per
#: width; drawn points (x, x') of the quadrature and the certified sub-checks
W3A_SIZES = {"quick": {"mc_widths": (100, 1000, 10_000), "mc_replicates": 24,
                       "quadrature_points": 4, "certified_points": 24},
             "full": {"mc_widths": (100, 1000, 10_000, 100_000), "mc_replicates": 48,
                      "quadrature_points": 30, "certified_points": 200}}
#: the declared sizes of W3c: as W3a's, drawn data sets of the interpolant, and the nested
#: 2-D quadrature (~5-15 s per point) in the full profile only
W3C_SIZES = {"quick": {"mc_widths": (100, 1000, 10_000), "mc_replicates": 24,
                       "quadrature_points": 3, "certified_points": 24, "datasets": 3,
                       "nested_quadrature": False},
             "full": {"mc_widths": (100, 1000, 10_000, 100_000), "mc_replicates": 48,
                      "quadrature_points": 25, "certified_points": 200, "datasets": 15,
                      "nested_quadrature": True}}
#: the declared sizes of W3d: drawn points of the quadrature and certified sub-checks, data
#: sets of the interpolant kinks, drawn x' of the certified f'-jumps
W3D_SIZES = {prof: {"quadrature_points": nq, "certified_points": nc, "datasets": nd,
                    "certified_jumps": nj}
             for prof, nq, nc, nd, nj in (("quick", 2, 12, 2, 12), ("full", 20, 100, 15, 120))}


def _mc_widths(ctx: RunContext) -> tuple[list[int], int]:
    """(widths m of the i.i.d. empirical kernels, replicates per width), as declared."""
    return list(ctx.size("mc_widths")), ctx.size("mc_replicates")


def _draws_of(ctx: RunContext) -> RunContext:
    """The part of the run the i.i.d. particles depend on: the context with the negative
    control flag and the ``--examples`` count cleared (``ctx.rng`` ignores both), so a check,
    its negative control and the mutants of one (claim, profile, seed) share one cache entry."""
    return dataclasses.replace(ctx.shared(), examples=None)


def _iid_grams(ctx: RunContext, init: str) -> dict[int, np.ndarray]:
    """The empirical Gram matrices K_m on ``_GRID9`` of every replicate at every width
    (m |K_m - K|_F^2 is needed per replicate), drawn through ``ctx.rng``."""
    return _iid_grams_cached(_draws_of(ctx), init)


@lru_cache(maxsize=8)
def _iid_grams_cached(ctx: RunContext, init: str) -> dict[int, np.ndarray]:
    ms, reps = _mc_widths(ctx)
    return {m: np.stack([nk.empirical_rf_kernel(*nk.sample_init(ctx.rng("iid", init, m, r), m, init),
                                                _GRID9, _GRID9) for r in range(reps)]) for m in ms}


@lru_cache(maxsize=4)
def _feature_law(init: str) -> tuple[np.ndarray, np.ndarray]:
    a, b, w = nk.quadrature_particles(init, 2048, n_radial=3)   # degree-4 integrands: exact in r
    return nk.feature_product_moments(a, b, w, _GRID9)


def _particle_checks(ctx: RunContext, init: str, Kt: np.ndarray) -> tuple[list[SubCheck], list[Table], dict]:
    """(1) i.i.d. random features: E m |K_m - K|_F^2 = tr Cov(phi phi') EXACTLY at every m
    (the m^-1/2 law), tested at each width with a chi-square interval; (2) polar quadrature
    particles reproduce K far below the i.i.d. error at the same count (deterministic)."""
    mu, cov = _feature_law(init)
    trc, trc2 = float(np.trace(cov)), float(np.sum(cov * cov))
    grams = _iid_grams(ctx, init)
    rows, worst, ok, data = [], 0.0, True, {"m": [], "rms": []}
    for m, G in grams.items():
        S = m * np.sum((G - Kt[None]) ** 2, axis=(1, 2))
        q, inside, lo, hi, distance = mean_square_ratio_test(S, trc, trc2, 1.0, ALPHA_TEST)
        ok &= inside
        worst = max(worst, distance)
        rows.append([m, S.size, fmt(q, 5), f"[{lo:.4f}, {hi:.4f}]", fmt(float(np.sqrt(S.mean() / m / Kt.size)))])
        data["m"].append(m), data["rms"].append(float(np.sqrt(S.mean() / m / Kt.size)))
    n_tests = len(grams)
    subs = [SubCheck("i.i.d. features: E m|K_m - K|^2 = tr Cov(phi phi') at every width",
                     worst, 1.0, f"error shown: |mean/prediction - 1| / half-width of the "
                     f"chi-square acceptance interval (Satterthwaite, level {ALPHA_TEST:g} per "
                     f"width; {n_tests} widths: false alarm <= {n_tests * ALPHA_TEST:.1g} per run); "
                     "prediction from polar quadrature particles, exact in r", passed=ok,
                     unit="tolerances")]
    prow, ratios = [], []
    for n_angle in (64, 512):
        a, b, w = nk.quadrature_particles(init, n_angle)
        eq = float(np.max(np.abs(nk.empirical_rf_kernel(a, b, _GRID9, _GRID9, w) - Kt)))
        iid = float(np.sqrt(trc / a.size / Kt.size))
        ratios.append(iid / eq)
        prow.append([a.size, fmt(eq), fmt(iid), fmt(iid / eq)])
    subs.append(SubCheck("quadrature particles beat the i.i.d. RMS error of the same count by >= 100",
                         100.0 / min(ratios), 1.0, "deterministic: polar rule with kinks at fixed "
                         "angles (O(n^-2)) vs the exact i.i.d. RMS sqrt(tr Cov / (m n^2)); "
                         "error shown: 100 / min ratio", unit="ratio"))
    tabs = [Table(f"{init} init: i.i.d. empirical kernel on 9 points of [-2, 2]: mean of "
                  "m|K_m - K|^2 / tr Cov (exactly 1 in expectation)",
                  ["m", "replicates", "ratio", "acceptance interval", "RMS entry error"], rows),
            Table(f"{init} init: polar quadrature particles vs the i.i.d. RMS error",
                  ["particles m", "max Gram error", "i.i.d. RMS error", "ratio"], prow)]
    return subs, tabs, data


# ==================================================================== W3a
#: the variants of W3a and W3c: the scale s of the init's a, a ~ U(-s, s) (W3a) or
#: N(0, s^2) (W3c), so that K(x, x') becomes K(s x, s x') exactly; exact s = 1, near miss
#: s = 1 + NEAR_MISS
EXACT_A_SCALE = 1.0
WIDER_A = 1 + NEAR_MISS


def _check_w3a(ctx: RunContext, a_scale: float) -> Outcome:
    """W3a at the init a ~ U(-a_scale, a_scale) (``EXACT_A_SCALE`` or the near miss
    ``WIDER_A``)."""
    F = formulas()

    def fn(p: Any, q: Any) -> Any:
        return F.rf_kernel(np.multiply(p, a_scale), np.multiply(q, a_scale), init="uniform")
    res = ctx.derivation().results
    K_split = _at_40_digits(sp.lambdify((X, XP), dk.assemble_uniform(res["G_lo"], res["G_mid"], res["G_hi"]),
                                         modules="mpmath"))
    subs = [_vs_quadrature(ctx, "closed form vs 2-D mpmath quadrature", "rf", "uniform", fn,
                           _region_points(), "float64 evaluation of the derived K_RF (Piecewise "
                           "of short polynomial/rational sums): ~1e-15; 2-D Gauss-Legendre with "
                           "every kink as a breakpoint, 30 digits"),
            _exact_vs_quadrature(ctx, "derived branches G (sign split) at 40 digits vs quadrature",
                                 lambda p, q: [("K_RF", K_split(p, q), quadrature_reference("rf", "uniform", p, q))],
                                 _region_points(), "the three derived branches of G assembled by "
                                 "the derivation's sign split, every region of (min, max)")]
    subs += _certified_rf(ctx, "uniform", {"K_RF": res["K_RF"], "the three branches of G assembled":
                                           dk.assemble_uniform(res["G_lo"], res["G_mid"], res["G_hi"])},
                          fn, _region_points(), a_scale)
    more, tabs, data = _particle_checks(ctx, "uniform", fn(_GRID9[:, None], _GRID9[None, :]))
    subs += more
    grid = np.linspace(-3, 3, 121)
    art = {"grid": grid, "K": F.rf_kernel(grid[:, None], grid[None, :], init="uniform"), "mc": data}
    return combine("derived K_RF (uniform init, all real x, x'; three branches of G) vs 2-D "
                   "mpmath quadrature of E[(ax-b)_+(ax'-b)_+]; i.i.d. features vs the exact "
                   "variance law; polar quadrature particles", subs, tables=tabs, artifacts=art,
                   details={"certified": certified_details(subs)})


def _kernel_figures(cid: str, init: str, ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.kit import new_figure, save_figure
    F = formulas()
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
    mc = art["mc"]
    ms = np.array(mc["m"], float)
    ax3.loglog(ms, mc["rms"], "o-", label=f"i.i.d. RMS error (slope {loglog_slope(ms, mc['rms']):.2f})")
    ax3.loglog(ms, mc["rms"][0] * (ms / ms[0]) ** -0.5, "k:", label="m^-1/2")
    ax3.set_xlabel("features m"), ax3.set_ylabel("Gram error"), ax3.legend(fontsize=7)
    name = f"{cid}_kernel.png"
    save_figure(fig, outdir / name)
    return [(name, f"{init}-init random-feature kernel: heatmap on [-3, 3]^2, slices, and the "
                   "RMS error of the i.i.d. empirical kernel (m^-1/2).")]


# ==================================================================== W3c
def _check_w3c(ctx: RunContext, a_scale: float) -> Outcome:
    """W3c at the init a ~ N(0, a_scale^2) (``EXACT_A_SCALE`` or the near miss ``WIDER_A``)."""
    F = formulas()
    K_mp = lambdified(ctx.claim_id, "rf", (X, XP), modules="mpmath")
    K_40 = _at_40_digits(K_mp)

    def fn(p: Any, q: Any) -> Any:
        return F.rf_kernel(np.multiply(p, a_scale), np.multiply(q, a_scale), init="gaussian")
    pinned = [(0.5, 1 / 3), (0.0, 0.0), (-5.0, 5.0), (4.75, -0.2), (-1.0, 1.0)]
    subs = [_vs_quadrature(ctx, "closed form vs mpmath quadrature", "rf", "gaussian", fn, pinned,
                           "float64 evaluation of the derived stable form (atan2, derived series "
                           "of t - atan t): ~1e-15; quadrature of the definition under "
                           "(a, b) ~ N(0, I_2) in Cartesian coordinates: inner b-integral by "
                           "truncated-normal moments, outer tanh-sinh, 30 digits"),
            _exact_vs_quadrature(ctx, "derived arc-cosine form at 40 digits vs quadrature",
                                 lambda p, q: [("K_RF", K_40(p, q), quadrature_reference("rf", "gaussian", p, q))],
                                 pinned[:3], "the primary derived expression (polar derivation)"),
            _float_vs_derived("float64 evaluator vs the derived expression", _gaussian_grid(),
                              lambda p, q: F.rf_kernel(p, q, init="gaussian"), K_mp,
                              _rounding_bound_gaussian)]
    res = ctx.derivation().results
    subs += _certified_rf(ctx, "gaussian", {"arc-cosine K_RF": res["rf"],
                                            "stable form (within the series remainder)": res["rf_stable"]},
                          fn, pinned + _SERIES_POINTS, a_scale)
    tables: list[Table] = []
    if ctx.size("nested_quadrature"):
        nested = [(0.5, 1 / 3), (-3.0, 4.0), (2.5, 1.5)]
        w2 = max(relative_error_vs_mpmath(fn(p, q), quadrature_reference("rf", "gaussian", p, q, True)) for p, q in nested)
        subs.append(SubCheck("closed form vs TRUE 2-D nested Gauss-Legendre quadrature", w2, REL_TOL,
                             "Cartesian, |a|,|b| <= 12: truncation exp(-72) and 35-digit quadrature",
                             unit="relative"))
    more, tabs, data = _particle_checks(ctx, "gaussian", fn(_GRID9[:, None], _GRID9[None, :]))
    subs += more
    tables += tabs

    # not a cubic spline: f''/omega piecewise linear, f itself not piecewise cubic
    def smooth_not_cubic(dat: tuple[np.ndarray, np.ndarray]) -> SubCheck:
        xd, yd = np.asarray(dat[0], float), np.asarray(dat[1], float)
        fg = F.kernel_interpolant(xd, yd, kernel="rf", init="gaussian")
        fu = F.kernel_interpolant(xd, yd, kernel="rf", init="uniform")
        centers = (xd[:-1] + xd[1:]) / 2
        h = float(np.min(np.diff(xd))) / 8
        w5 = np.array([1, -4, 6, -4, 1])

        def d4(f: Callable) -> np.ndarray:
            return np.array([np.sum(w5 * f(c + h * np.arange(-2, 3))) for c in centers]) / h**4
        rel_g = float(np.max(np.abs(d4(fg)))) / max(1.0, float(np.max(np.abs(yd))))
        floor = 16 * EPS * float(np.max(np.abs(fu(centers)))) / h**4 * max(1.0, fu.condition)
        return SubCheck("gaussian interpolant is NOT piecewise cubic (4th differences)",
                        floor / max(rel_g, 1e-300), 1e-2,
                        f"a cubic's 4th difference is rounding only (<= 16 eps cond |f| / h^4 = "
                        f"{floor:.2g}); error shown: that floor / the gaussian's value "
                        f"{rel_g:.3g} (must be 100x above the floor; uniform: "
                        f"{float(np.max(np.abs(d4(fu)))):.2g})", unit="ratio")
    subs.append(for_all_instances(ctx, "gaussian interpolant is NOT piecewise cubic (4th differences)",
                                  datasets(min_points=3, max_points=8, min_gap=0.15,
                                              x_range=(-1.5, 1.5)),
                                  smooth_not_cubic, count=ctx.size("datasets"), pinned=[(FIG4_X, FIG4_Y)]))
    grid = np.linspace(-3, 3, 121)
    art = {"grid": grid, "K": F.rf_kernel(grid[:, None], grid[None, :], init="gaussian"), "mc": data}
    return combine("derived arc-cosine K_RF (gaussian init) vs mpmath quadrature; float64 "
                   "evaluator vs the derived expression; i.i.d. features vs the exact variance "
                   "law; interpolant smooth but not a cubic spline", subs, tables=tables,
                   details={"K(1/2,1/3)": float(F.rf_kernel(0.5, 1 / 3, init="gaussian")),
                            "certified": certified_details(subs)},
                   notes=["Pitfall (docs/conventions.md, section 1): a naive SymPy R^2 integral gives ~0.5771 at (1/2, 1/3); "
                          "the derived value and the quadratures give 0.583511603256477 (the true 2-D "
                          "nested Cartesian quadrature runs in the full profile).",
                          "f''/omega = (1/2) sum_j alpha_j |x - x_j| (piecewise linear) is checked for "
                          "both inits in W3e."],
                   artifacts=art)


def _figures_w3c_interpolant(outdir: Path) -> list[tuple[str, str]]:
    from verify.kit import new_figure, save_figure
    F = formulas()
    g = np.linspace(-1, 1, 2001)
    fig, (ax1, ax2) = new_figure(2, 1, width=4.6)
    hh = 1e-3
    for init in dk.INITS:
        f = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init=init)
        ax1.plot(g, f(g), label=f"{init} RF interpolant")
        f2 = (f(g + hh) - 2 * f(g) + f(g - hh)) / hh**2
        ax2.plot(g, f2 / F.rkhs_weight(g, init=init), label=f"f''/omega, {init}")
    ax1.plot(FIG4_X, FIG4_Y, "ko", ms=4)
    ax1.set_xlabel("x"), ax1.legend(fontsize=7)
    ax2.set_xlabel("x"), ax2.legend(fontsize=7), ax2.set_title("piecewise linear (finite differences)")
    name = "W3c_interpolant.png"
    save_figure(fig, outdir / name)
    return [(name, "Gaussian vs uniform RF interpolants of the Figure-4 data; f''/omega is "
                   "piecewise linear with kinks at the data for both (cubic spline only for the uniform init).")]


# ==================================================================== W3d
def _one_sided_slopes(f: Callable, x0: float, h: float) -> tuple[float, float]:
    """Second-order one-sided difference quotients f'(x0^+), f'(x0^-)."""
    fr = (-3 * f(x0) + 4 * f(x0 + h) - f(x0 + 2 * h)) / (2 * h)
    fl = (3 * f(x0) - 4 * f(x0 - h) + f(x0 - 2 * h)) / (2 * h)
    return float(fr), float(fl)


SIGMA_C_W3D = 1.3
#: the variants of W3d: E c^2 in units of sigma_c^2; exact 1, near miss 1 + NEAR_MISS
EXACT_C2 = 1.0
LARGER_C2 = 1 + NEAR_MISS


def _certified_ntk(ctx: RunContext, res: dict, sc: float, c2_factor: float,
                   pinned: list) -> list[SubCheck]:
    """Certified sub-checks of W3d: the derived P and K_NTK (primary, branch-assembled and
    stable forms) and the float64 formulas within their stated ulp bounds, vs the Arb balls
    of the definitions (K_NTK: the expectation of the gradient inner product)."""
    from verify import certify
    F = formulas()
    with certify.working_precision(512):  # the negative control's E c^2 (a tight ball)
        sig = certify.ball(sc) * certify.ball(c2_factor).sqrt()
    subs = []
    for init in dk.INITS:
        pts = certified_points(ctx, pinned + (_SERIES_POINTS if init == "gaussian" else []))
        ref_p = lambda p, q, i=init: definition_ball("prob", i, p, q)  # noqa: E731
        ref_n = lambda p, q, i=init: definition_ball("ntk", i, p, q, sc)  # noqa: E731
        if init == "uniform":
            probs = {"P": res["P_uniform"], "P (three branches assembled)":
                     dk.assemble_uniform(res["P_lo"], res["P_mid"], res["P_hi"])}
            ntks = {"K_NTK": (res["ntk_uniform"], None)}
        else:
            probs = {"P": res["P_gaussian"], "P (stable form)": res["P_gaussian_stable"]}

            def rem(p: float, q: float, r: Any) -> float:  # series remainder, relative to K_NTK
                return SERIES_REMAINDER * float(definition_ball("rf", "gaussian", p, q).upper()) / float(abs(r).lower())
            ntks = {"K_NTK": (res["ntk_gaussian"], None), "K_NTK (stable form)": (res["ntk_gaussian_stable"], rem)}
        for lab, e in probs.items():
            subs.append(certified_compare(f"certified: derived {lab} vs P(ax>b, ax'>b) ({init}), {len(pts)} points",
                                          certified_instances(e, (X, XP), pts, ref_p), reason=_WHY_DEF))
        for lab, (e, bnd) in ntks.items():
            subs.append(certified_compare(
                f"certified: derived {lab} vs E<grad f(x), grad f(x')> ({init}, sigma_c = {sc}), {len(pts)} points",
                certified_instances(e, (X, XP, dk.sigma_c), pts, ref_n, extra=(sig,), bound=bnd),
                bound=SERIES_REMAINDER if bnd else 0.0,
                reason=_WHY_DEF + "; K_NTK's definition: the gradient inner product of c (ax-b)_+, "
                       "never K_RF + sigma_c^2 (1 + x x') P"))
        xs, xps = np.array([p for p, _ in pts]), np.array([q for _, q in pts])
        ub = _ulps(F.ntk_kernel, init)

        def ntk_bound(p: float, q: float, r: Any, i: str = init) -> float:
            scale = (definition_ball("rf", i, p, q) + sc ** 2 * abs(1 + certify.ball(p) * q)
                     * definition_ball("prob", i, p, q))
            return ub.ulps * EPS * float(scale.upper()) / float(abs(r).lower())
        vals = F.ntk_kernel(xs, xps, init=init, sigma_c=sc * np.sqrt(c2_factor))
        subs.append(certified_compare(f"certified: formulas.ntk_kernel ({init}, float64) within its stated "
                                      f"{ub.ulps:g} ulps of the {ub.unit}",
                                      float_instances(vals, pts, ref_n, ntk_bound), bound=ub.ulps * EPS,
                                      reason=_WHY_DEF + "; the float64 value as an exact ball; per-point "
                                             "bound in ulps of the scale of the terms"))
        ubp = _ulps(F.active_probability, init)
        subs.append(certified_compare(f"certified: formulas.active_probability ({init}, float64) within "
                                      f"its stated {ubp.ulps:g} ulps of the {ubp.unit}",
                                      float_instances(F.active_probability(xs, xps, init=init), pts, ref_p,
                                                      lambda p, q, r, u=ubp.ulps: u * EPS),
                                      bound=ubp.ulps * EPS, reason=_WHY_DEF + "; the float64 value as an exact ball"))
    return subs
_NTK_GRID = np.array([-2.5, -1.0, -0.3, 0.4, 1.0, 1.7])


def _tangent_kernel(init: str, n_angle: int, sc: float) -> np.ndarray:
    """Theta(x, x') = E <grad_theta f(x), grad_theta f(x')> over (a, b) from the init and
    c = sigma_c (so E c^2 = sigma_c^2): polar quadrature particles, the parameter Jacobian
    of the network f = sum_i c_i (a_i x - b_i)_+ from ``numerics.relu1d.network_jacobian``."""
    from numerics.relu1d import network_jacobian
    a, b, w = nk.quadrature_particles(init, n_angle, kinks_at=_NTK_GRID)
    J = network_jacobian(a, b, np.full(a.shape, sc), _NTK_GRID, 1.0)
    return sum((Jk * w) @ Jk.T for Jk in J)


def _ntk_vs_network(F: Any, init: str, sc: float, c2_factor: float) -> SubCheck:
    """The NTK formula against the tangent kernel of the network from its gradients (the
    definition of K_NTK, with no K_RF + sigma_c^2 (1 + x x') P structure typed anywhere)."""
    th1, th2 = _tangent_kernel(init, 160, sc), _tangent_kernel(init, 320, sc)
    est = np.max(np.abs(th1 - th2))  # panels smooth: the error of th2 is far below |th1 - th2|
    K = F.ntk_kernel(_NTK_GRID[:, None], _NTK_GRID[None, :], init=init, sigma_c=sc * np.sqrt(c2_factor))
    err = float(np.max(np.abs(K - th2)))
    return SubCheck(f"{init}: K_NTK vs the tangent kernel of the network (gradients, particles)", err,
                    est + 64 * EPS * float(np.max(np.abs(th2))),
                    "Theta = E <grad f(x), grad f(x')>, gradients of f = sum c (a x - b)_+ by "
                    "numerics.relu1d.network_jacobian, polar quadrature particles with the angular "
                    "panels split at the kinks of every grid point (smooth panels: exponential "
                    f"convergence); tolerance: |Theta_160 - Theta_320| = {est:.2g} (bounds the "
                    "error of Theta_320) + 64 eps |Theta| rounding", unit="absolute")
_JUMP_POINTS = {"jump_uniform": ("uniform", (-0.7, 0.0, 0.45, 1.0)),
                "jump_uniform_outside": ("uniform", (-3.0, -1.5, 1.25, 2.0)),
                "jump_gaussian": ("gaussian", (-2.0, 0.0, 0.6, 3.5))}


def _ntk_kinks(ctx: RunContext, F: Any, dat: tuple[np.ndarray, np.ndarray]) -> SubCheck:
    """W3d: the jumps [f'](x_j) of the float64 NTK interpolants (both inits) by one-sided
    differences vs alpha_j J(x_j) with the derived jump J, in units of
    max(|alpha_j J(x_j)|, 1e-3 max |alpha|)."""
    xd, yd = np.asarray(dat[0], float), np.asarray(dat[1], float)
    measured, predicted = [], []
    for init in dk.INITS:
        f = F.kernel_interpolant(xd, yd, kernel="ntk", init=init, sigma_c=1.0)
        for j, x0 in enumerate(xd):
            key = "jump_gaussian" if init == "gaussian" else (
                "jump_uniform" if abs(x0) <= 1 else "jump_uniform_outside")
            J = lambdified(ctx.claim_id, key, (XP, dk.sigma_c), modules="numpy")
            fr, fl = _one_sided_slopes(f, float(x0), 1e-5)
            pred = float(f.coefficients[j] * float(J(x0, 1.0)))
            scale = max(abs(pred), 1e-3 * float(np.max(np.abs(f.coefficients))))
            measured.append((fr - fl) / scale)
            predicted.append(pred / scale)
    return compare("NTK interpolants have kinks: [f'](x_j) = alpha_j J(x_j)", measured,
                   predicted, rtol=0.0, atol=1e-4, reason="second-order one-sided "
                   "differences, h = 1e-5: truncation h^2 |f'''| and rounding eps |f| / h, "
                   "relative to the jump", unit="relative")


def _measured_jumps(ctx: RunContext, F: Any) -> tuple[SubCheck, list]:
    """The derived jumps of d/dx K_NTK at x = x' vs one-sided mpmath differences of the
    (quadrature-verified) formula's mpmath evaluation at 40 digits (sigma_c = 1)."""
    worst, jrows = 0.0, []
    for key, (init, xs) in _JUMP_POINTS.items():
        J = lambdified(ctx.claim_id, key, (XP, dk.sigma_c), modules="mpmath")
        for x0 in xs:
            with mpmath.workdps(40):
                k = lambda t: F.ntk_kernel.mpmath(float(t), x0, init=init, sigma_c=1.0, dps=40)
                h = mpmath.mpf(2) ** -30
                X0 = mpmath.mpf(x0)
                dr = (-3 * k(X0) + 4 * k(X0 + h) - k(X0 + 2 * h)) / (2 * h)
                dl = (3 * k(X0) - 4 * k(X0 - h) + k(X0 - 2 * h)) / (2 * h)
                pred = J(X0, mpmath.mpf(1))
                err = float(abs((dr - dl) - pred) / abs(pred))
            worst = max(worst, err)
            jrows.append([key, fmt(x0), mpmath.nstr(dr - dl, 15), mpmath.nstr(pred, 15), fmt(err)])
    return SubCheck("derived f'-jump of K_NTK vs one-sided derivatives of the kernel", worst, 1e-13,
                    "second-order one-sided differences with h = 2^-30 at 40 digits: truncation "
                    "h^2 |K'''| ~ 1e-18, rounding 1e-40 / h ~ 1e-31 (points inside and outside "
                    "[-1, 1]; the kernel itself is verified against quadrature above)",
                    unit="relative"), jrows


def _jump_points(ctx: RunContext) -> list[tuple[str, str, float]]:
    """(jump, init, x') at the pinned points and ``ctx.size("certified_jumps")`` drawn ones
    (``--examples N``: N): |x'| <= 1 and 1 < |x'| <= 5 (uniform), |x'| <= 5 (gaussian)."""
    out = [(key, init, float(v)) for key, (init, xs) in _JUMP_POINTS.items() for v in xs]
    rng = ctx.rng("certified jumps")
    count = ctx.size("certified_jumps")
    kinds = list(_JUMP_POINTS.items())
    for i in range(ctx.n_examples(count, count)):
        key, (init, _) = kinds[i % len(kinds)]
        v = float(rng.uniform(-1, 1))
        if key != "jump_uniform":
            v = float(np.sign(v) * (1 + 4 * abs(v))) if key == "jump_uniform_outside" else 5 * v
        out.append((key, init, v))
    return out


def _certified_jumps(ctx: RunContext, res: dict) -> SubCheck:
    """The derived jumps J(x') of d/dx K_NTK at x = x' vs the one-sided derivatives of the
    derived K_NTK, both in Arb: the branch active on each side of x' chosen by the sign of
    its argument's germ, differentiated as an Arb power series (_williams_certified)."""
    from verify import certify
    from verify.claims._williams_certified import one_sided_derivative_jump
    sc = SIGMA_C_W3D
    insts = []
    for key, init, v in _jump_points(ctx):
        J = certify.arb_function(res[key], (XP, dk.sigma_c))
        ref = one_sided_derivative_jump(res[f"ntk_{init}"], {X: v, XP: v, dk.sigma_c: sc}, X)
        with certify.working_precision(128):
            val = J(certify.ball(v), certify.ball(sc))
        insts.append(CertifiedInstance(f"{key} at x' = {v!r}", val, ref))
    return certified_compare(
        f"certified: derived f'-jumps of K_NTK vs its one-sided derivatives (sigma_c = {sc}), "
        f"{len(insts)} points", insts,
        reason="Arb balls at 128 bits: d/dx K_NTK(x' +- 0, x') of the derived K_NTK (the closed "
               "form certified against the definition above), the branch on each side chosen by "
               "the sign of its argument's germ and differentiated as an Arb power series; the "
               "derived jump by the Arb translation of its SymPy expression")


def _jump_checks(ctx: RunContext, F: Any, res: dict) -> tuple[list[SubCheck], list]:
    """W3d's f'-jumps of K_NTK at x = x': measured (one-sided differences) and certified."""
    measured, jrows = _measured_jumps(ctx, F)
    return [measured, _certified_jumps(ctx, res)], jrows


def _check_w3d(ctx: RunContext, c2_factor: float) -> Outcome:
    """W3d with E c^2 = c2_factor sigma_c^2 (``EXACT_C2`` or the near miss ``LARGER_C2``)."""
    F = formulas()
    res = ctx.derivation().results
    sc = SIGMA_C_W3D
    subs: list[SubCheck] = []
    pinned = _region_points()[:6] + [(0.5, 1 / 3), (-0.7, 0.9), (2.5, -1.5)]
    ntk_args = (X, XP, dk.sigma_c)
    P_split = sp.lambdify((X, XP), dk.assemble_uniform(res["P_lo"], res["P_mid"], res["P_hi"]),
                          modules="mpmath")
    exact = {"uniform": (_at_40_digits(P_split),
                         _at_40_digits(lambdified(ctx.claim_id, "ntk_uniform", ntk_args, modules="mpmath"))),
             "gaussian": (_at_40_digits(lambdified(ctx.claim_id, "P_gaussian", (X, XP), modules="mpmath")),
                          _at_40_digits(lambdified(ctx.claim_id, "ntk_gaussian", ntk_args, modules="mpmath")))}

    def exact_refs(p: float, q: float, i: str) -> list:
        P_, N_ = exact[i]
        return [("P", P_(p, q), quadrature_reference("prob", i, p, q)),
                ("K_NTK", N_(p, q, sc), _ntk_reference(i, p, q, sc))]
    for init in dk.INITS:
        def ntk(p: Any, q: Any, i: str = init) -> Any:
            return F.ntk_kernel(p, q, init=i, sigma_c=sc * np.sqrt(c2_factor))

        def measure(pt: tuple[float, float], i: str = init, f: Callable = ntk) -> SubCheck:
            p, q = float(pt[0]), float(pt[1])
            e1 = relative_error_vs_mpmath(f(p, q), _ntk_reference(i, p, q, sc))
            e2 = relative_error_vs_mpmath(F.active_probability(p, q, init=i), quadrature_reference("prob", i, p, q))
            return SubCheck("", max(e1, e2), REL_TOL, f"at ({p:.6g}, {q:.6g}): K_NTK {e1:.2g}, P {e2:.2g}",
                            unit="relative")
        subs.append(for_all_instances(ctx, f"{init}: K_NTK and P vs quadrature", point_pairs, measure,
                                      count=ctx.size("quadrature_points"),
                                      pinned=pinned if init == "uniform" else pinned[6:]))
        subs.append(_exact_vs_quadrature(
            ctx, f"{init}: derived P and K_NTK at 40 digits vs quadrature",
            lambda p, q, i=init: exact_refs(p, q, i), pinned if init == "uniform" else pinned[6:],
            "the primary derived expressions" + (" (P: the three derived branches assembled by "
                                                 "the derivation's sign split)" if init == "uniform" else "")))
    subs += _certified_ntk(ctx, res, sc, c2_factor, pinned)
    # the NTK as the tangent kernel of the network (gradients), not the derived structure
    for init in dk.INITS:
        subs.append(_ntk_vs_network(F, init, sc, c2_factor))
    # float64 evaluators vs the derived NTK and P expressions (every branch)
    pts_u = _region_points() + [(-20.0, 20.0), (15.0, -0.5)]
    for init, pts in (("uniform", pts_u), ("gaussian", _gaussian_grid())):
        ntk_mp = _with_sigma_c(lambdified(ctx.claim_id, f"ntk_{init}", ntk_args, modules="mpmath"), sc)

        def bound(p: float, q: float, v: float, i: str = init) -> float:
            k_abs = float(abs(F.rf_kernel(p, q, init=i))) + sc**2 * (1 + abs(p * q)) * float(F.active_probability(p, q, init=i))
            rb = _rounding_bound_gaussian(p, q, v, extra=64 * k_abs) if i == "gaussian" else 64 * EPS * (16 + 30 * k_abs / max(abs(v), 1e-300))
            return rb
        subs.append(_float_vs_derived(f"{init}: float64 K_NTK vs the derived expression", pts,
                                      lambda p, q, i=init: F.ntk_kernel(p, q, init=i, sigma_c=sc), ntk_mp, bound))
    P_mp = lambdified(ctx.claim_id, "P_gaussian", (X, XP), modules="mpmath")
    subs.append(_float_vs_derived("gaussian: float64 P vs the derived expression", _gaussian_grid(),
                                  lambda p, q: F.active_probability(p, q, init="gaussian"), P_mp,
                                  lambda p, q, v: 64 * EPS * (1 + abs(p * q) / max(abs(v), 1e-300) / 8)))
    jump_subs, jrows = _jump_checks(ctx, F, res)
    subs += jump_subs
    # kinks of NTK interpolants at the data (finite differences of the float64 interpolant)
    subs.append(for_all_instances(ctx, "NTK interpolants have kinks: [f'](x_j) = alpha_j J(x_j)",
                                  datasets(min_points=2, max_points=6, min_gap=0.3, x_range=(-2.5, 2.5)),
                                  lambda dat: _ntk_kinks(ctx, F, dat), count=ctx.size("datasets"),
                                  pinned=[(FIG4_X, FIG4_Y)]))
    return combine("derived K_NTK and P (both inits) vs quadrature of their definitions; float64 "
                   "evaluators vs the derived expressions; derived f'-jumps vs differentiation; "
                   "kinks of NTK interpolants at the data", subs,
                   tables=[Table("Derived jump of d/dx K_NTK at x = x' (sigma_c = 1)",
                                 ["jump", "x'", "one-sided derivatives (40 digits)", "derived", "rel. error"], jrows)],
                   details={"certified": certified_details(subs)},
                   artifacts={"x_data": FIG4_X, "y_data": FIG4_Y})


def _figures_w3d(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.kit import new_figure, save_figure
    F = formulas()
    xd, yd = ev.artifacts["x_data"], ev.artifacts["y_data"]
    g = np.linspace(-1.2, 1.2, 1201)
    fig, axes = new_figure(2, 1, width=4.6)
    for ax, init in zip(axes, dk.INITS):
        for kern, st_ in (("rf", "-"), ("ntk", "--")):
            f = F.kernel_interpolant(xd, yd, kernel=kern, init=init)
            ax.plot(g, f(g), st_, label=f"{kern.upper()} interpolant")
        ax.plot(xd, yd, "ko", ms=4)
        ax.set_title(f"{init} init"), ax.set_xlabel("x"), ax.legend(fontsize=7)
    name = "W3d_interpolants.png"
    save_figure(fig, outdir / name)
    return [(name, "RF (smooth) vs NTK interpolants (kinks at the data) of the Figure-4 square wave.")]


# ==================================================================== the claims
CLAIM_W3A = Claim(
    id="W3a", title="Random-feature kernel of the uniform init, for all real x, x'",
    source=SOURCE,
    statement=(r"For $(a,b)\sim U([-1,1]^2)$: $K_{RF}(x,x') = E[(ax-b)_+(ax'-b)_+] = "
               r"\tfrac14[G(x,x';\min(x,x')) + G(-x,-x';-\max(x,x'))]$ with $G$ piecewise "
               r"rational in $s$ (branches $s<-1$, $|s|\le1$, $s>1$); on $[-1,1]^2$ a single "
               r"polynomial in $x, x', |x-x'|$."),
    check=_check_w3a, exact=EXACT_A_SCALE, near_miss=WIDER_A,
    negative_control_description=f"near miss: a ~ U(-(1+{NEAR_MISS:g}), 1+{NEAR_MISS:g}) instead of "
                                 "U(-1, 1) (the kernel at rescaled inputs)",
    negative_target="closed form vs 2-D mpmath quadrature", sizes=W3A_SIZES,
    figures=lambda ev, out: _kernel_figures("W3a", "uniform", ev, out))


CLAIM_W3C = Claim(
    id="W3c", title="Gaussian init: arc-cosine random-feature kernel; interpolant smooth, not a cubic spline",
    source=SOURCE + "; Cho & Saul (2009) arc-cosine kernel",
    statement=(r"For $(a,b)\sim N(0,I_2)$: $K_{RF} = |\tilde x||\tilde x'|(\sin\varphi + "
               r"(\pi-\varphi)\cos\varphi)/(2\pi) = (|x-x'| + (\pi-\varphi)(1+xx'))/(2\pi)$, "
               r"$\varphi = \mathrm{atan2}(|x-x'|, 1+xx')$; the interpolant is smooth between "
               r"the data and not piecewise cubic."),
    check=_check_w3c, exact=EXACT_A_SCALE, near_miss=WIDER_A,
    negative_control_description=f"near miss: a ~ N(0, (1+{NEAR_MISS:g})^2) instead of N(0, 1)",
    negative_target="closed form vs mpmath quadrature", sizes=W3C_SIZES,
    figures=lambda ev, out: _kernel_figures("W3c", "gaussian", ev, out) + _figures_w3c_interpolant(out))

CLAIM_W3D = Claim(
    id="W3d", title="NTK closed forms (both inits); NTK interpolants have kinks at the data",
    source=SOURCE,
    statement=(r"$K_{NTK} = K_{RF} + \sigma_c^2(1+xx')P(ax>b,ax'>b)$ with $P = \tfrac12 - "
               r"|x-x'|/8$ on $[-1,1]^2$ (uniform) and $P = (\pi-\varphi)/(2\pi)$ (gaussian); "
               r"$[f']_{x_j} = -\alpha_j\sigma_c^2(1+x_j^2)/4$ (uniform, $|x_j|\le1$), "
               r"$-\alpha_j\sigma_c^2/\pi$ (gaussian)."),
    check=_check_w3d, exact=EXACT_C2, near_miss=LARGER_C2,
    negative_control_description=f"near miss: E c^2 taken as sigma_c^2 (1 + {NEAR_MISS:g})",
    negative_target="uniform: K_NTK and P vs quadrature", sizes=W3D_SIZES,
    figures=_figures_w3d)

CLAIMS = [CLAIM_W3A, CLAIM_W3C, CLAIM_W3D]
