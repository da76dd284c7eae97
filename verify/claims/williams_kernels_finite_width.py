"""Claim W3f: Figure 4 of Williams, Trager, Silva, Panozzo, Zorin, Bruna (NeurIPS 2019,
Sec. 4 "kernel regime"): training only the output layer of m random uniform-init ReLU
features converges to the kernel interpolant as m grows, with the derived fluctuation law
E|f_m - f|^2 = E psi^2 m^(2 rate), rate = -1/2.

Sizes: the paper's text states no widths, number of runs or data for Figure 4; the sizes
run are this suite's (``_W3F_SIZES``: quick, trained widths m = 16000 with 400 replicates;
full, m = 16000 and 64000 with 1000 replicates; means of 1000 i.i.d. psi with 8000 / 20000
replicates; the Figure-4 square wave x_j = -9/10 + j/5 plus 1 / 6 data sets drawn by each
of the two sampled sub-checks, 2 / 12 in all), chosen
from the error analysis and stated in the check's "Sizes run" table.

The interpolant's coefficients on the Figure-4 data are checked against an independent
solve of the quadrature Gram system, the rate against the exact law of a mean of i.i.d.
terms under a discrete particle law, and the law itself by sampling (means of i.i.d. psi
and trained output layers) with chi-square acceptance intervals.  The kernels are in
:mod:`verify.claims.williams_kernels`, the interpolants' spline and RKHS structure in
:mod:`verify.claims.williams_kernels_interpolants`.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from derivations import williams_kernels as dk
from numerics import kernels as nk
from numerics.chi_square import mean_square_ratio_test
from verify.certify import certified_details
from verify.claims._williams_kernels_common import (ALPHA_TEST, EPS, FIG4_X, FIG4_Y,
                                                    datasets, formulas)
from verify.kit import (Claim, Evidence, Outcome, RunContext, SubCheck, Table, combine,
                        derived_results, fmt, for_all_instances, loglog_slope)

__all__ = ["CLAIMS"]


# The sizes of Figure 4.  The paper's text states none: no widths, no number of runs and no
# data (its only statement is that the solutions "converge to cubic splines as m grows in
# Figure 4"; the caption did not survive the text extraction this suite works from).  So the
# sizes below are this suite's, chosen from the error analysis: the trained widths start
# where the O(1/m) bias of the min-norm fit (measured ~70/m on the Figure-4 data) is < 0.01
# of the fluctuation law, the replicates make the chi-square acceptance intervals a few
# percent wide at level 2e-5 (a rate off by 0.01, the negative control, moves the ratio by
# m^0.02 - 1 >= 15% at m = 1000), and the data are the 10-point square wave x_j = -9/10 + j/5 of
# ``derivations.williams_kernels.fig4_data`` plus data sets drawn by Hypothesis.
_W3F_SIZES = {"quick": {"widths": (16000,), "replicates": 400, "psi_replicates": 8000,
                        "data_sets": 1},
              "full": {"widths": (16000, 64000), "replicates": 1000, "psi_replicates": 20000,
                       "data_sets": 6}}


def _w3f_sizes(ctx: RunContext) -> tuple[list[int], int, int, int]:
    """(widths of the trained networks, their replicates, replicates of the psi-mean test,
    data sets each sampled sub-check draws besides the pinned Figure-4 data), as declared."""
    return (list(ctx.size("widths")), ctx.size("replicates"), ctx.size("psi_replicates"),
            ctx.size("data_sets"))


_W3F_EVAL = np.linspace(-1.0, 1.0, 21) + 0.0037   # avoid the data points exactly
_PSI_WIDTH = 1000


def _w3f_linearization(xd: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, float, float]:
    """beta(x) = K^{-1} k(x) on the evaluation grid and tr C, tr C^2 of the covariance
    C(x, x') = E psi(x) psi(x') of the linearized fluctuation
    psi = (phi(x) - beta(x)^T phi(X)) (alpha^T phi(X)), by polar quadrature particles
    (psi^2 has degree 4 in (a, b): exact in r; angular error O(n^-2))."""
    F = formulas()
    a, b, w = nk.quadrature_particles("uniform", 1024, n_radial=3)
    K = F.rf_kernel(xd[:, None], xd[None, :], init="uniform")
    kx = F.rf_kernel(_W3F_EVAL[:, None], xd[None, :], init="uniform")
    beta = np.linalg.solve(K, kx.T)
    psi = _psi(a, b, xd, alpha, beta)
    C = (psi * w) @ psi.T
    return beta, float(np.trace(C)), float(np.sum(C * C))


def _psi(a: np.ndarray, b: np.ndarray, xd: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    PX, Px = nk.features(a, b, xd), nk.features(a, b, _W3F_EVAL)
    return (Px - beta.T @ PX) * (alpha @ PX)[None, :]


@lru_cache(maxsize=1)
def _fig4_alpha_from_quadrature(dps: int = 40) -> tuple[tuple[mpmath.mpf, ...], float]:
    """alpha = K^-1 y for the Figure-4 data from the DEFINITION: the Gram matrix
    K_ij = E[(a x_i - b)_+ (a x_j - b)_+] by 2-D quadrature (uniform init, kinks as
    breakpoints) at the exact data points -9/10 + j/5, solved by mpmath LU at ``dps``
    digits; also the 1-norm condition number of K (for the tolerance)."""
    xs, ys = dk.fig4_data()
    with mpmath.workdps(dps + 10):
        X = [mpmath.mpf(v.p) / v.q for v in xs]
        n = len(X)
        K = mpmath.matrix(n, n)
        for i in range(n):
            for j in range(i, n):
                K[i, j] = K[j, i] = nk.rf_kernel_quad_mp(X[i], X[j], "uniform", dps=dps + 5)
        alpha = mpmath.lu_solve(K, mpmath.matrix([mpmath.mpf(int(v)) for v in ys]))
        cond = float(mpmath.mnorm(K, 1) * mpmath.mnorm(mpmath.inverse(K), 1))
        return tuple(+alpha[i] for i in range(n)), cond


def _exact_pair_mean_rate(xd: np.ndarray, yd: np.ndarray, n_angle: int = 256) -> tuple[float, float]:
    """The fluctuation exponent of a mean of m i.i.d. centred terms measured EXACTLY, with
    no sampling: under the discrete law of polar quadrature particles (a_i, b_i, w_i) (and
    alpha, beta from that law's own kernel, then centred), E|psi|^2 (m = 1)
    and E|(psi_1 + psi_2) / 2|^2 (m = 2) by enumeration of all ordered particle pairs, in
    extended precision (``np.longdouble``, machine epsilon ``eps_L``); returns
    (log(E_2 / E_1) / (2 log 2), rounding bound of that exponent): the sums of M^2
    non-negative terms carry <= 4 M eps_L relative error, the centred E psi = O(M eps_L)
    enters E_2 only squared, and the exponent is rounded once to float64."""
    a, b, w = nk.quadrature_particles("uniform", n_angle, n_radial=2)
    PX, Px = nk.features(a, b, xd), nk.features(a, b, _W3F_EVAL)
    K = (PX * w) @ PX.T
    k = (Px * w) @ PX.T
    alpha = np.linalg.solve(K, yd)
    beta = np.linalg.solve(K, k.T)
    psi = ((Px - beta.T @ PX) * (alpha @ PX)[None, :]).astype(np.longdouble)   # (n_eval, M)
    wl = w.astype(np.longdouble)
    wl /= np.sum(wl)        # a probability law (the float64 weights sum to 1 - O(M eps))
    # centred exactly (to eps_L): the float64 solves leave E psi = O(cond eps) x the terms
    psi -= (psi @ wl)[:, None]
    e1 = np.sum(wl * np.sum(psi * psi, axis=0))
    e2 = np.longdouble(0)
    for i in range(a.size):                                  # all ordered pairs (i, j)
        pair = (psi[:, i:i + 1] + psi) / 2
        e2 += wl[i] * np.sum(wl * np.sum(pair * pair, axis=0))
    eps_l = float(np.finfo(np.longdouble).eps)
    bound = (2 * 4 * a.size * eps_l + (4 * a.size * eps_l) ** 2) / (2 * np.log(2)) + EPS
    return float(np.log(e2 / e1) / (2 * np.log(np.longdouble(2)))), bound


def _certified_fig4_alpha(alpha: Any) -> SubCheck:
    """Certified: the derived Figure-4 coefficients solve K alpha = y, K_ij the derived
    uniform K_RF of W3a (its Piecewise form for all real x, x', not the polynomial on
    [-1, 1]^2 the coefficients were solved with) at the exact data -9/10 + j/5, y = +-1:
    each row's residual is a ball around 0 at the scale sum_j |K_ij alpha_j| + |y_i|."""
    from verify import certify
    K = certify.arb_function(derived_results("W3a")["K_RF"], (dk.x, dk.xp))
    xs, ys = dk.fig4_data()
    inst = []
    with certify.working_precision(256):
        X = [certify.ball(certify.exact_fraction(v)) for v in xs]
        a = [certify.arb_function(sp.sympify(v), ())() for v in alpha]
        for i, xi in enumerate(X):
            terms = [K(xi, xj) * aj for xj, aj in zip(X, a)]
            resid = sum(terms, certify.ball(0)) - int(ys[i])
            scale = sum((abs(t) for t in terms), certify.ball(0)) + 1
            inst.append(certify.CertifiedInstance(f"row {i} (x = {xs[i]})", resid, 0, scale=scale.upper()))
    return certify.certified_compare(
        "certified: derived Figure-4 alpha solves K alpha = y (derived K_RF at the exact data)", inst,
        reason="Arb balls at 256 bits: the derived K_RF (W3a's Piecewise closed form, certified there "
               "against the definition at points) at the data -9/10 + j/5 as balls, the derived "
               "rationals alpha exactly; residual of each row compared at the scale of its terms")


#: the variants of W3f: the fluctuation rate, the derived one (None) or the near miss -0.51
DERIVED_RATE = None
NEAR_MISS_RATE = -0.51


# long: the Figure-4 study in the paper's order (train per width, fluctuation rate, certified coefficients)
def _check_w3f(ctx: RunContext, rate_override: float | None) -> Outcome:
    """W3f at the derived fluctuation rate (``DERIVED_RATE``) or at ``NEAR_MISS_RATE``."""
    F = formulas()
    res = ctx.derivation().results
    rate = float(res["rate"]) if rate_override is None else rate_override
    ms, reps, psi_reps, n_data = _w3f_sizes(ctx)
    rows: list[list[Any]] = []
    sup_rows: dict[int, list[float]] = {}
    n_tests: list[int] = []

    # the derived Figure-4 coefficients vs an independent solve of the Gram system by quadrature
    alpha_q, cond_q = _fig4_alpha_from_quadrature()
    with mpmath.workdps(40):
        a_d = [mpmath.mpf(sp.Rational(v).p) / sp.Rational(v).q if isinstance(v, sp.Rational)
               else mpmath.mpf(sp.Float(v, 40)) for v in res["alpha_fig4"]]
        e_alpha = float(max(abs(p - q) for p, q in zip(a_d, alpha_q)) / max(abs(q) for q in alpha_q))
    subs = [SubCheck("Figure-4 coefficients: derived alpha vs mpmath solve of the quadrature Gram system",
                     e_alpha, 1e3 * cond_q * 1e-40,
                     f"K_ij by 2-D quadrature of E[(ax_i-b)_+(ax_j-b)_+] at 45 digits, LU at 40 "
                     f"digits: forward error <= cond 1e-40 (cond {cond_q:.3g}), x 1000 margin",
                     unit="relative")]
    # the derived Figure-4 interpolant vs the float64 formula
    f4 = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init="uniform")
    # the fluctuation exponent of a mean of m centred i.i.d. terms, measured exactly
    r_meas, r_tol = _exact_pair_mean_rate(FIG4_X, FIG4_Y)
    subs.append(SubCheck("rate: exact E|mean of m i.i.d. psi|^2, m = 1 vs 2 (all particle pairs)",
                         abs(r_meas - rate), r_tol,
                         f"measured exponent {r_meas:.17f} from the discrete law of 512 polar "
                         "quadrature particles (exhaustive enumeration of the pairs, no "
                         "sampling, sums in extended precision); tolerance: rounding bound of "
                         "the two sums (4 M eps_L each), of the centring (M eps_L, entering squared) "
                         "and of the exponent's float64 rounding", unit="|slope - predicted|"))

    def measure(dat: tuple[np.ndarray, np.ndarray]) -> list[SubCheck]:
        xd, yd = np.asarray(dat[0], float), np.asarray(dat[1], float)
        f = F.kernel_interpolant(xd, yd, kernel="rf", init="uniform")
        f_inf = f(_W3F_EVAL)
        beta, trc, trc2 = _w3f_linearization(xd, f.coefficients)
        key = ",".join(f"{v:.12g}" for v in np.concatenate([xd, yd]))
        # (1) the linearized fluctuation: means of m i.i.d. psi (exact variance law, no bias)
        rng = ctx.rng("w3f-psi", key)
        sq = np.empty(psi_reps)
        per = max(1, (1 << 21) // (_PSI_WIDTH * _W3F_EVAL.size))
        for r0 in range(0, psi_reps, per):
            nb = min(per, psi_reps - r0)
            a, b = nk.sample_init(rng, nb * _PSI_WIDTH, "uniform")
            PX = nk.features(a, b, xd)
            g = f.coefficients @ PX                       # alpha^T phi(X) per feature
            # mean of psi = mean(phi(x) g) - beta^T mean(phi(X) g), per replicate
            u = (PX * g).reshape(xd.size, nb, _PSI_WIDTH).mean(axis=2)
            v = (nk.features(a, b, _W3F_EVAL) * g).reshape(_W3F_EVAL.size, nb, _PSI_WIDTH).mean(axis=2)
            sq[r0:r0 + nb] = np.sum((v - beta.T @ u) ** 2, axis=0)
        q1, ok1, lo1, hi1, w1 = mean_square_ratio_test(sq, trc, trc2, float(_PSI_WIDTH) ** (2 * rate),
                                                          ALPHA_TEST)
        rows.append([xd.size, fmt(f.condition), "psi means", _PSI_WIDTH, psi_reps, fmt(q1, 5), f"[{lo1:.4f}, {hi1:.4f}]"])
        # (2) trained networks (the min-norm limit of GD on c)
        w2, ok2 = 0.0, True
        for m in ms:
            vals = nk.min_norm_output_values(ctx.rng("w3f", key, m), m, xd, yd, _W3F_EVAL, reps)
            q, ok, lo, hi, w = mean_square_ratio_test(np.sum((vals - f_inf[None, :]) ** 2, axis=1), trc,
                                                      trc2, float(m) ** (2 * rate), ALPHA_TEST)
            w2, ok2 = max(w2, w), ok2 and ok
            rows.append([xd.size, fmt(f.condition), "trained", m, reps, fmt(q, 5), f"[{lo:.3f}, {hi:.3f}]"])
            if xd.size == FIG4_X.size and np.allclose(xd, FIG4_X):
                sup_rows[m] = list(np.max(np.abs(vals - f_inf[None, :]), axis=1))
        n_tests.append(1 + len(ms))
        why = "error shown: |ratio - 1| / half-width of the chi-square acceptance interval"
        return [SubCheck("", w1, 1.0, why, passed=ok1, unit="tolerances"),
                SubCheck("", w2, 1.0, why, passed=ok2, unit="tolerances")]

    memo: dict[bytes, list[SubCheck]] = {}

    def cached(dat: tuple[np.ndarray, np.ndarray], i: int) -> SubCheck:
        k = np.asarray(dat[0], float).tobytes() + np.asarray(dat[1], float).tobytes()
        if k not in memo:
            memo[k] = measure(dat)
        return memo[k][i]
    data = datasets(min_points=3, max_points=6, min_gap=0.3, x_range=(-0.95, 0.95))
    names = (f"fluctuation rate: mean of m = {_PSI_WIDTH} i.i.d. psi has E|.|^2 = E psi^2 m^(2 rate)",
             "trained widths: mean |f_m - f|^2 = E psi^2 m^(2 rate)")
    found = [for_all_instances(ctx, nm, data, lambda d, i=i: cached(d, i), count=n_data,
                               pinned=[(FIG4_X, FIG4_Y)]) for i, nm in enumerate(names)]
    total = sum(n_tests)
    found[0].reason = (f"{found[0].reason}. psi from the derived kernel (alpha = K^-1 y, beta = K^-1 "
                       f"k(x)), E psi = 0; the mean of m i.i.d. centred terms has variance E psi^2 / m "
                       f"exactly; chi-square interval (Satterthwaite) at level {ALPHA_TEST:g} per test")
    found[1].reason = (f"{found[1].reason}. f_m = min-norm fit (limit of GD on c from c = 0) on 21 points "
                       f"of [-1, 1]; the O(1/m) bias (measured ~70/m on the Figure-4 data) is < 0.01 at "
                       f"m >= 16000; {total} tests in this claim: false alarm <= {total * ALPHA_TEST:.1g} per run")
    subs += found + [_certified_fig4_alpha(res["alpha_fig4"])]
    tables = [Table("Fluctuation law on 21 points of [-1, 1]: mean over replicates of "
                    "sum_x |.|^2 divided by the prediction tr C m^(2 rate)",
                    ["points", "cond(Gram)", "what", "m", "replicates", "ratio", "acceptance interval"], rows)]
    med = {m: float(np.median(v)) for m, v in sup_rows.items()}
    slope = loglog_slope(list(med), list(med.values())) if len(med) >= 2 else float("nan")
    if med:
        tables.append(Table(f"Figure-4 data: sup over the grid of |f_m - f| (median of {reps} replicates)",
                            ["m", "median sup distance", "min", "max"],
                            [[m, fmt(med[m]), fmt(min(v)), fmt(max(v))] for m, v in sup_rows.items()]))
    tables.append(Table("Sizes run (the paper's text states no widths, runs or data for Figure 4)",
                        ["profile", "trained widths m", "replicates per width", "psi-mean width",
                         "psi-mean replicates", "data sets measured (Figure-4 square wave + drawn)"],
                        [[ctx.profile, ", ".join(str(m) for m in ms), reps, _PSI_WIDTH, psi_reps,
                          f"1 + {len(n_tests) - 1}"]]))
    g = np.linspace(-1, 1, 401)
    return combine("Figure 4: GD on the output layer of m random uniform-init features vs the "
                   "derived kernel interpolant: the fluctuation f_m - f follows the derived law "
                   "E psi^2 m^(2 rate), rate = -1/2", subs, headline=3, tables=tables,
                   details={"rate": rate, "certified": certified_details(subs)},
                   notes=["All-layer training with alpha = sqrt(m) (the NTK limit) is not asserted "
                          "here: at widths up to 6.5e4 the lazy condition fails for the slowest "
                          "eigen-directions of K_NTK on this data (measured plateau ~0.08 of the sup "
                          "distance); the NTK kernel itself is verified in W3d."],
                   artifacts={"grid": g, "f_inf": f4(g), "median": med, "slope": slope, "rate": rate})


def _figures_w3f(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.kit import new_figure, save_figure
    art = ev.artifacts
    fig, (ax1, ax2) = new_figure(2, 1, width=4.2)
    ms = np.array(list(art["median"]), float)
    med = np.array(list(art["median"].values()))
    ax1.loglog(ms, med, "o-", label=f"median sup distance (slope {art['slope']:.2f})")
    ax1.loglog(ms, med[0] * (ms / ms[0]) ** art["rate"], "k:", label=f"m^{art['rate']:g}")
    ax1.set_xlabel("m"), ax1.set_ylabel("sup distance on [-1, 1]"), ax1.legend(fontsize=7)
    ax1.set_title("Figure 4: convergence to the kernel limit")
    ax2.plot(art["grid"], art["f_inf"], "k-", lw=1.2, label="kernel interpolant")
    ax2.plot(FIG4_X, FIG4_Y, "ko", ms=3)
    ax2.legend(fontsize=7)
    name = "W3f_fig4.png"
    save_figure(fig, outdir / name)
    return [(name, "Figure 4: sup-distance between trained output layers and the infinite-width "
                   "kernel interpolant vs width m (log-log), and the interpolant.")]


CLAIM_W3F = Claim(
    id="W3f", title="Figure 4: finite-width training converges to the kernel interpolant",
    source="Williams et al. (NeurIPS 2019), Fig. 4",
    statement=(r"GD on $c$ only ($\alpha(m)=1$, $c(0)=0$) with $m$ i.i.d. uniform-init features "
               r"converges to the min-norm fit $f_m$; $f_m - f = \frac1m\sum_i\psi_i + O(1/m)$ with "
               r"$f$ the kernel interpolant, so $E|f_m(x) - f(x)|^2 = E\psi^2\,m^{-1}$: the "
               r"distance decays like $m^{-1/2}$."),
    check=_check_w3f, exact=DERIVED_RATE, near_miss=NEAR_MISS_RATE,
    negative_control_description="near miss: fluctuation rate -0.51 instead of the derived -1/2",
    negative_target="fluctuation rate", sizes=_W3F_SIZES,
    figures=_figures_w3f, kind="numerical-evidence")

CLAIMS = [CLAIM_W3F]
