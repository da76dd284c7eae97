"""Claim H1f: the constant alpha(d_H) = 2 sqrt(pi) Gamma((d_H+1)/2) / Gamma(d_H/2)
= 1 / E_{u ~ Unif(S^{d_H-1})}[(u.e)_+]  (Hajjar & Chizat 2023, Thm 4.3)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable

import mpmath
import numpy as np
import sympy as sp

from derivations import sphere
from numerics.sphere import (positive_part_mean_coordinate_mp, positive_part_mean_mc,
                             positive_part_mean_mp, sample_sphere)
from verify.claims._core import Claim, Evidence, Outcome, RunContext, Table
from verify.claims._helpers import SubCheck, combine, fmt

K = sphere.k


def alpha_swapped_gamma() -> sp.Expr:
    """Negative control: a plausible slip (Gamma arguments shifted by 1/2)."""
    return 2 * sp.sqrt(sp.pi) * sp.gamma(K / 2 + 1) / sp.gamma((K + 1) / 2)


@lru_cache(maxsize=None)
def _mp_reference(kk: int, radial: bool) -> tuple[mpmath.mpf | None, mpmath.mpf | None]:
    """1/E[(u.e)_+] at 30 digits by the radial route (if ``radial``) and the coordinate
    route (k >= 2); cached, since the check and its negative control share them."""
    with mpmath.workdps(30):
        rad = 1 / positive_part_mean_mp(kk, dps=30) if radial else None
        coord = 1 / positive_part_mean_coordinate_mp(kk, dps=30) if kk >= 2 else None
    return rad, coord


def _check(ctx: RunContext, alpha_expr: sp.Expr) -> Outcome:
    res = ctx.derivation().results
    alpha_mp = sp.lambdify(K, alpha_expr, modules="mpmath")
    alpha_np = sp.lambdify(K, alpha_expr, modules=["scipy", "numpy"])
    ks = list(range(1, 61))
    radial_ks = ks if not ctx.quick else [1, 2, 3, 4, 5, 6, 8, 10]
    rows, worst = [], 0.0
    for kk in ks:
        radial, coord = _mp_reference(kk, kk in radial_ks)
        with mpmath.workdps(30):
            a = alpha_mp(mpmath.mpf(kk))
            errs = [abs(ref / a - 1) for ref in (radial, coord) if ref is not None]
        err = float(max(errs))
        worst = max(worst, err)
        if kk in (1, 2, 3, 5, 10, 30, 60):
            rows.append([kk, mpmath.nstr(a, 20), mpmath.nstr(radial, 20) if radial is not None else "-",
                         mpmath.nstr(coord, 20) if coord is not None else "-", fmt(err)])
    sub = [SubCheck("mpmath quadrature, d_H = 1..60 (30 digits)", worst, 1e-25,
                    "30-digit arithmetic; Gauss-Legendre/tanh-sinh quadrature of smooth "
                    "integrands converges to ~1e-30, leaving 5 digits of margin")]
    # the derived mean E[(u.e)_+] and the identity alpha * mean = 1 vs the same references
    mean_mp = sp.lambdify(K, res["mean"], modules="mpmath")
    ident = float(res["predictor_identity"])
    mean_err = 0.0
    with mpmath.workdps(30):
        for kk in range(2, 61):
            _, coord = _mp_reference(kk, False)
            mean_err = max(mean_err, float(abs(mean_mp(mpmath.mpf(kk)) * coord - ident)))
    sub.append(SubCheck("derived E[(u.e)_+] x (1 / coordinate quadrature) vs the derived "
                        "identity alpha E[(u.e)_+] (d_H = 2..60)", mean_err, 1e-25,
                        "30-digit arithmetic, as above"))
    # the derived Stirling gap (used by alpha_constant beyond Gamma's float range) vs
    # log(alpha / sqrt(2 pi k)) in mpmath; the dropped terms are O(k^-3): 1/(24 k^3) < 4e-12
    gap = sp.lambdify(K, res["log_gap"], modules="mpmath")
    gap_err, gap_tol = 0.0, 0.0
    with mpmath.workdps(30):
        for kk in (1000, 3000, 10_000):
            ref = mpmath.log(alpha_mp(mpmath.mpf(kk)) / mpmath.sqrt(2 * mpmath.pi * kk))
            gap_err = max(gap_err, float(abs(gap(mpmath.mpf(kk)) - ref)))
            gap_tol = max(gap_tol, 1.1 / (24 * kk ** 3))
    sub.append(SubCheck("derived log gap -1/(4k) vs log(alpha/sqrt(2 pi k)) at k = 1e3..1e4",
                        gap_err, gap_tol, "Stirling remainder: the next term is 1/(24 k^3)"))
    # the importable formula (float64 + Stirling branch) vs the 30-digit references
    from verify.formulas import alpha_constant
    ks_f = np.array(ks + [200, 340, 341, 1000, 10_000, 10 ** 6])
    vals = np.asarray(alpha_constant(ks_f), float)
    with mpmath.workdps(30):
        f_err = max(abs(float(v) / float(alpha_mp(mpmath.mpf(int(kk)))) - 1)
                    for v, kk in zip(vals, ks_f))
    sub.append(SubCheck("formulas.alpha_constant (float64) vs the derived alpha in mpmath, "
                        "d_H = 1..60, 200, 340, 341, 1e3, 1e4, 1e6 (relative)", f_err, 1e-13,
                        "a few float64 roundings of Gamma ratios / the Stirling series"))

    # Monte Carlo on the actual sphere: sampling error bound 5 standard errors
    n = 200_000 if ctx.quick else 4_000_000
    mc_rows, z_worst = [], 0.0
    for kk in (1, 2, 3, 5, 10, 30):
        mean, se = positive_part_mean_mc(ctx.rng("sphere", kk), n, kk)
        target = 1.0 / float(alpha_np(kk))
        z = abs(mean - target) / se
        z_worst = max(z_worst, z)
        mc_rows.append([kk, n, fmt(mean, 6), fmt(target, 6), fmt(se), fmt(z)])
    sub.append(SubCheck(f"i.i.d. sphere points (n = {n}) vs 1/alpha, in standard errors",
                        z_worst, 5.0, "CLT: |error| / SE is ~N(0,1); 5 SE bounds a false "
                        "failure at 6e-7 per d_H"))

    # predictor level: alpha * Unif(S^{d_H-1}) reproduces |x_H| on random inputs
    m = 100_000 if ctx.quick else 1_000_000
    pred_rows, zp_worst = [], 0.0
    for d_H, d in ((2, 5), (5, 30)):
        rng = ctx.rng("predictor", d_H)
        U = sample_sphere(rng, m, d_H)
        X = rng.standard_normal((20, d)) / np.sqrt(d)
        a = float(alpha_np(d_H))
        vals = a * np.maximum(U @ X[:, :d_H].T, 0.0)  # (m, 20)
        f = vals.mean(axis=0)
        se = vals.std(axis=0, ddof=1) / np.sqrt(m)
        target = np.linalg.norm(X[:, :d_H], axis=1)
        z = np.abs(f - target) / se
        zp_worst = max(zp_worst, float(z.max()))
        pred_rows.append([d_H, d, m, fmt(float(np.max(np.abs(f / target - 1)))), fmt(float(z.max()))])
    sub.append(SubCheck(f"predictor alpha*Unif(S^(d_H-1)) vs |x_H| (m = {m}, 20 inputs)",
                        zp_worst, 5.5, "CLT per input; 5.5 SE covers the maximum over 20 "
                        "inputs (union bound 8e-7)"))
    tables = [
        Table("alpha(d_H): derived closed form vs two independent mpmath quadratures "
              "(radial Gaussian factorization; coordinate density)",
              ["d_H", "derived alpha", "1/radial quadrature", "1/coordinate quadrature", "rel. error"], rows),
        Table("Monte Carlo on the sphere", ["d_H", "n", "mean (u.e)_+", "1/alpha", "SE", "|err|/SE"], mc_rows),
        Table("Predictor level", ["d_H", "d", "m", "max rel. error", "max |err|/SE"], pred_rows),
    ]
    return combine("derived alpha(d_H) vs mpmath quadrature of E[(u.e)_+] (two independent "
                   "routes), Monte Carlo on spheres, and the predictor |x_H|",
                   sub, details={"d_H": ks, "mc_samples": n, "predictor_particles": m},
                   tables=tables)


def check(ctx: RunContext) -> Outcome:
    return _check(ctx, derive_alpha_expr())


def negative_control(ctx: RunContext) -> Outcome:
    return _check(ctx, alpha_swapped_gamma())


def derive_alpha_expr() -> sp.Expr:
    from verify import derived
    return derived.results("H1f")["alpha"]


def figures(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    f: Callable = sp.lambdify(K, derive_alpha_expr(), modules=["scipy", "numpy"])
    k = np.arange(1, 61)
    a = f(k)
    fig, (ax1, ax2) = new_figure(2, 1, width=4.6)
    ax1.plot(k, a, "o", ms=3, label=r"$\alpha(d_H)$ (derived)")
    ax1.plot(k, np.sqrt(2 * np.pi * k), "-", label=r"$\sqrt{2\pi d_H}$")
    ax1.set_xlabel("$d_H$"), ax1.set_ylabel(r"$\alpha$"), ax1.legend()
    ax2.loglog(k, np.abs(a / np.sqrt(2 * np.pi * k) - 1), "o", ms=3, label="relative gap")
    from verify import derived
    gap = sp.lambdify(K, derived.results("H1f")["log_gap"], modules="numpy")
    ax2.loglog(k, np.abs(np.expm1(gap(k))), "--", label=r"derived: $1 - e^{-1/(4 d_H)}$")
    ax2.set_xlabel("$d_H$"), ax2.legend()
    name = "H1f_alpha.png"
    save_figure(fig, outdir / name)
    return [(name, "alpha(d_H) and its sqrt(2 pi d_H) asymptote; the relative gap decays "
                   "like 1/(4 d_H).")]


CLAIM = Claim(
    id="H1f",
    title="The Gamma-function constant alpha(d_H)",
    source="Hajjar & Chizat (2023), Section 4, Thm 4.3 (tau^+ = alpha delta_0 gives f = |x_H|)",
    statement=(r"$$\alpha(d_H) = \frac{2\sqrt{\pi}\,\Gamma\left(\frac{d_H+1}{2}\right)}"
               r"{\Gamma\left(\frac{d_H}{2}\right)} = \frac{1}{\mathbb{E}_{u\sim "
               r"\mathrm{Unif}(S^{d_H-1})}[(u\cdot e)_+]}$$ so that the measure "
               r"$\alpha\,\mathrm{Unif}(S^{d_H-1})$ (with $|a| = |b|$) represents "
               r"$f(x) = |x_H|$; e.g. $\alpha(2) = \pi$, $\alpha(5) = 16/3$."),
    check=check, negative_control=negative_control, negative_target="mpmath quadrature",
    negative_control_description="Gamma arguments shifted by 1/2: "
                                 "2 sqrt(pi) Gamma(d_H/2 + 1) / Gamma((d_H+1)/2)",
    figures=figures,
)

CLAIMS = [CLAIM]
