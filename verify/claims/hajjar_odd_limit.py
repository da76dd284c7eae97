"""Claim H1m: Hajjar & Chizat (2023), Thm 3.2 as a mean-field limit.  Particles drawn
i.i.d. from the product law (a = +-1, b ~ Unif(S^{d-1})) WITHOUT mirror images, trained on
a fixed sample closed under x -> -x (anisotropic Sigma) with an odd target of the first
d_H coordinates.  The law mu_0 is invariant under (a, b) -> (-a, -b), so the mean-field flow
stays invariant (Prop. 2.1), its predictor is w_t . x and (w_t, M_t, A_t) solve the closed
moment ODE of H1j from the law's moments (derivations/hajjar_odd_general.py,
``derive_h1m``).  The width-m network (engine numerics.twolayer.loss_and_grad, classical
RK4 in parameter time at the derived time change eta/m) approaches w_T . x at the rate
m^-1/2.  The near miss ``LATE_LIMIT`` reads the limit at 1.1 T."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import sympy as sp

from derivations.hajjar_odd_general import COEFFICIENTS, d_dim
from derivations.hajjar_reduced import eta, m_width
from verify.kit import (Claim, Evidence, Outcome, RunContext, SubCheck,
                        compare, derived_results, fmt, lambdified, rate_study)
from numerics.twolayer import forward
from verify.studies import hajjar as sh

#: the near miss: the limit read at time 1.1 T (the time change eta/m off by 10%)
LATE_LIMIT = 1.10
#: the verified run: the limit at the time T itself
EXACT = 1.0

_STUDY = "||f_m(T) - w_T . x||_L2(rho_n) vs width m: i.i.d. product-law particles on the " \
         "sample vs the moment ODE of the invariant law"
#: the reference and the integrator may each contribute at most this fraction of the
#: smallest mean distance
_BIAS_FRACTION = 0.05
#: DOP853 tolerance of the reference, and the tighter one that measures its error
_RTOL, _RTOL_TIGHT = 1e-10, 1e-13


def _coefficients() -> dict[str, float]:
    r = derived_results("H1m")
    return {name: float(r[name]) for name in COEFFICIENTS}


def _initial_moments(d: int) -> np.ndarray:
    """z_0 = (w_0, vec M_0, A_0) from the derived moments of the product law."""
    r = derived_results("H1m")
    val = {key: float(sp.sympify(r[key]).subs(d_dim, d)) for key in
           ("w_0", "M_0_diagonal", "M_0_off_diagonal", "A_0")}
    M0 = np.full((d, d), val["M_0_off_diagonal"])
    np.fill_diagonal(M0, val["M_0_diagonal"])
    return np.concatenate([np.full(d, val["w_0"]), M0.ravel(), [val["A_0"]]])


def _time_per_step():
    return lambdified("H1m", "flow_time_per_step", (eta, m_width), modules="numpy")


@lru_cache(maxsize=2)
def _sample(shared: RunContext, d: int, d_H: int, n0: int, kappa: float):
    X = sh.symmetric_sample(shared.rng("sample"), d, n0, kappa)
    return X, sh.odd_subspace_target(X, d_H)


@lru_cache(maxsize=2)
def _width_runs(shared: RunContext, d: int, d_H: int, n0: int, kappa: float, widths: tuple,
                seeds: int, etas: tuple, steps: int) -> np.ndarray:
    """f_m on the sample for every width and seed (cached: the check and its near miss
    share them; the learning rates are part of the key, so a mutated time change reruns)."""
    X, Y = _sample(shared, d, d_H, n0, kappa)
    F = np.empty((len(widths), seeds, X.shape[0]))
    for i, m in enumerate(widths):
        for k in range(seeds):
            F[i, k] = sh.sample_width_predictor(shared.rng("init", m, k), X, Y, m,
                                                eta=etas[i], steps=steps)
    return F


def _mean_field_velocity(a, B, X, Y):
    """The particle velocities of the mean-field flow on the sample, from their definition:
    da_j/dt = E_n[(y - f) relu(b_j.x)], db_j/dt = a_j E_n[(y - f) 1{b_j.x > 0} x]."""
    Z = X @ B.T
    r = Y - np.maximum(Z, 0.0) @ a / a.size
    n = X.shape[0]
    return np.maximum(Z, 0.0).T @ r / n, a[:, None] * (((Z > 0) * r[:, None]).T @ X) / n


def _time_change_check(ctx: RunContext, X, Y) -> SubCheck:
    """One gradient step of learning rate eta (numerics.twolayer), divided by the derived
    flow time per step, against the mean-field velocity from its definition."""
    from numerics.twolayer import loss_and_grad
    m, step = 7, 0.3
    a, B = sh.init_particles(ctx.rng("time change"), m, X.shape[1])
    _, (ga, gB) = loss_and_grad(a, B, X, Y)
    dt = float(_time_per_step()(step, m))
    va, vB = _mean_field_velocity(a, B, X, Y)
    moved = np.concatenate([-step * ga, -step * gB.ravel()]) / dt
    return compare("one gradient step / derived flow time per step vs the mean-field velocity "
                   "on the sample (its definition)", moved, np.concatenate([va, vB.ravel()]),
                   rtol=1e-11, atol=1e-11 * float(np.abs(vB).max()),
                   reason="a step is linear in eta, so the ratio is exact up to rounding: two "
                          "float64 evaluations of the same O(n m d) sums, ~1e-14 relative")


#: product-law draws (each with its mirror image) of the exactly invariant system that
#: checks the derived moment ODE, and its Runge-Kutta steps per step of the study
_MIRRORED, _REFINE = 64, 4
#: z-score bound of the initial-moment check: the largest of <= d^2 + d + 1 normal scores
#: exceeds 5 with probability <= 1e3 * 5.7e-7
_Z_BOUND = 5.0


def _ode_check(ctx: RunContext, X, Y, T: float, steps: int, k: dict, dt_of) -> SubCheck:
    """The derived moment ODE against a width-2m0 system that is invariant at finite width
    (m0 product-law draws and their mirror images): its predictor is w_t . x and its moments
    follow the ODE from its own moments exactly, so f(T) - X w_T is the integrators' error."""
    a0, B0 = sh.init_particles(ctx.rng("mirrored"), _MIRRORED, X.shape[1])
    a, B = np.concatenate([a0, -a0]), np.concatenate([B0, -B0])
    m = a.size
    z0 = np.concatenate([0.5 * a @ B / m, (B.T @ B / m).ravel(), [a @ a / m]])
    w_T = sh.moment_limit(X, Y, T, k, z0, rtol=_RTOL_TIGHT)
    f = [forward(*sh.sample_rk4_flow(a, B, X, Y, eta=dt_of(m, T / s), steps=s), X)
         for s in (_REFINE * steps, 2 * _REFINE * steps)]
    scale = float(np.abs(X @ w_T).max())
    halving = float(np.abs(f[0] - f[1]).max())
    return compare(f"derived moment ODE (DOP853, rtol {_RTOL_TIGHT:g}) vs {_MIRRORED} mirrored "
                   f"pairs of product-law particles (exactly invariant), f(T) on the sample",
                   f[1], X @ w_T, rtol=0.0, atol=halving + 1e-11 * scale,
                   reason=f"RK4 with {2 * _REFINE * steps} steps: its error is ~1/15 of the "
                          f"change from {_REFINE * steps} steps ({fmt(halving)}); DOP853 and "
                          f"rounding below 1e-11 of max |w_T . x| = {fmt(scale)}")


def _initial_moment_check(ctx: RunContext, d: int, m: int, seeds: int, z0: np.ndarray
                          ) -> SubCheck:
    """The derived initial moments (w_0, M_0, A_0) against the particles of the study at
    width m (all seeds pooled), in standard errors of the pooled means."""
    parts = [sh.init_particles(ctx.rng("init", m, s), m, d) for s in range(seeds)]
    a = np.concatenate([p[0] for p in parts])
    B = np.concatenate([p[1] for p in parts])
    N, B2 = a.size, B * B
    mean = np.concatenate([0.5 * a @ B / N, (B.T @ B / N).ravel(), [a @ a / N]])
    second = np.concatenate([0.25 * (a * a) @ B2 / N, (B2.T @ B2 / N).ravel(),
                             [(a ** 4).sum() / N]])
    se = np.sqrt(np.maximum(second - mean ** 2, 0.0) * N / (N - 1) / N) + 1e-14
    z = float((np.abs(mean - z0) / se).max())
    return SubCheck("derived initial moments (w_0, M_0, A_0) vs the drawn particles of the "
                    "largest width, pooled over seeds", z, _Z_BOUND,
                    f"{N} i.i.d. particles; largest |mean - derived| over the "
                    f"{z0.size} entries in standard errors of the mean (plus 1e-14 for the "
                    f"exact entry A = a^2 = 1); the largest of {z0.size} normal scores "
                    f"exceeds {_Z_BOUND:g} with probability < {z0.size * 5.8e-7:.0e}",
                    unit="SE")


def _sizes(ctx: RunContext) -> dict:
    return {k: ctx.size(k) for k in ("d", "d_H", "samples", "kappa", "T", "steps", "widths",
                                     "seeds")}


def check(ctx: RunContext, time_factor: float) -> Outcome:
    """H1m: the width study against the limit read at time_factor * T (1 for the claim)."""
    sz = _sizes(ctx)
    d, d_H, T, steps, widths = sz["d"], sz["d_H"], sz["T"], sz["steps"], tuple(sz["widths"])
    tps, k = _time_per_step(), _coefficients()
    dt = T / steps
    etas = tuple(sh.parameter_step(tps, m, dt) for m in widths)
    shared = ctx.shared()
    X, Y = _sample(shared, d, d_H, sz["samples"], sz["kappa"])
    F = _width_runs(shared, d, d_H, sz["samples"], sz["kappa"], widths, sz["seeds"], etas, steps)
    z0 = _initial_moments(d)
    w_T = sh.moment_limit(X, Y, T * time_factor, k, z0, rtol=_RTOL)
    f_inf = X @ w_T
    D = np.array([[sh.l2_distance(F[i, s], f_inf) for s in range(sz["seeds"])]
                  for i in range(len(widths))])
    ref_err = sh.l2_distance(X @ sh.moment_limit(X, Y, T * time_factor, k, z0,
                                                 rtol=_RTOL_TIGHT), f_inf)
    i2 = len(widths) - 2
    half = sh.sample_width_predictor(ctx.rng("init", widths[i2], 0), X, Y, widths[i2],
                                     eta=sh.parameter_step(tps, widths[i2], dt / 2),
                                     steps=2 * steps)
    int_err = sh.l2_distance(half, F[i2, 0])
    study = rate_study(_STUDY, widths, D, predicted=-0.5, level=0.999)
    subs = [study.subcheck("fluctuations of i.i.d. particles around the mean-field flow of "
                           "their invariant law (law of large numbers with CLT scaling; "
                           "docs/conventions.md §2)"),
            _time_change_check(ctx, X, Y),
            _ode_check(ctx, X, Y, T * time_factor, steps, k,
                       lambda m, h: sh.parameter_step(tps, m, h)),
            _initial_moment_check(ctx, d, widths[-1], sz["seeds"], z0),
            study.bias_subcheck("limit reference error (DOP853 tolerance tightened)", ref_err,
                                f"rtol {_RTOL:g} vs {_RTOL_TIGHT:g}", _BIAS_FRACTION)]
    moved = float(np.sqrt(np.mean(f_inf ** 2)))
    w_star = np.linalg.lstsq(X, Y, rcond=None)[0]
    return sh.width_study_outcome(
        f"H1m: d = {d}, d_H = {d_H}, {X.shape[0]} symmetric samples, flow time T = {T:g} "
        f"({steps} RK4 steps), {sz['seeds']} seeds; ||w_T . x|| = {fmt(moved)} of ||w* . x|| = "
        f"{fmt(float(np.sqrt(np.mean((X @ w_star) ** 2))))}; limit read at {time_factor:g} T",
        study, subs, widths, etas, D, ref_err=ref_err, int_err=int_err,
        halved_width=widths[i2], dt=dt, bias_fraction=_BIAS_FRACTION)


def figures(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    return sh.width_study_figure(ev, outdir, "H1m", r"$\|f_m(T) - w_T\cdot x\|_{L^2(\rho_n)}$",
                                 "the width-m network (i.i.d. product-law particles) to the "
                                 "linear mean-field limit w_T . x")


CLAIMS = [Claim(
    id="H1m", title="Thm 3.2 as a mean-field limit: i.i.d. product law -> moment ODE at m^-1/2",
    source="Hajjar & Chizat (2023), Prop. 2.1 and Thm 3.2; mean-field limit "
           "(docs/conventions.md §2)",
    statement=r"For an odd $f^*$ of $x_H$ and a sample closed under $x\mapsto -x$ with any "
              r"$\Sigma$, the width-$m$ network from $m$ i.i.d. draws of $a = \pm1$, "
              r"$b\sim\mathrm{Unif}(S^{d-1})$ (step $\eta$ = flow time $\eta/m$) satisfies "
              r"$\|f_m(t) - w_t\cdot x\|_{L^2(\rho_n)} = O(m^{-1/2})$, $(w_t, M_t, A_t)$ the "
              r"moment ODE from $w_0 = 0$, $M_0 = I/d$, $A_0 = 1$.",
    check=check, exact=EXACT, near_miss=LATE_LIMIT,
    sizes={"quick": {"d": 10, "d_H": 3, "samples": 64, "kappa": 10.0, "T": 2.0, "steps": 6,
                     "widths": (256, 512, 1024, 2048, 4096, 8192, 16384, 32768), "seeds": 8},
           "full": {"d": 30, "d_H": 5, "samples": 128, "kappa": 10.0, "T": 4.0, "steps": 8,
                    "widths": (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072),
                    "seeds": 8}},
    negative_control_description="the limit read at time 1.1 T (the time change eta/m off "
                                 "by 10%)",
    negative_target=_STUDY, figures=figures, kind="theorem")]
