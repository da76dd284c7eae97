"""Claim H1l: Hajjar & Chizat (2023), Sec. 4, Figure 2: the predictor of the reduced flow
does not learn the low-dimensional structure in finite time.  The derivation is in
derivations/hajjar_figures.py (``DERIVATIONS``); the field it moves is H1g's.

The negative control is the same check on the named near miss ``THETA_VELOCITY_OFFSET``:
a theta-velocity with a constant offset at theta = 0 (particles then reach 0 in finite time).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from derivations.hajjar_figures import K_H, K_PERP, phi
from numerics import reduced as rd
from verify.kit import (Claim, Evidence, Outcome, RunContext, SubCheck, Table, combine,
                        compare, derived_generation, derived_results, fmt, for_all_instances,
                        lambdified)
from verify.studies.hajjar import derived_velocity, phi_table

#: the near miss: d theta/dt - 2e-8 (2e-6 of the typical |d theta/dt| ~ 1e-2): a tracer at
#: theta_0 = 1e-5 then ends at about half of the Gronwall bound
THETA_VELOCITY_OFFSET = 2e-8
#: the tracers' initial angle: the linearisation's remainder is O(theta_0^2) = 1e-10
TRACER_ANGLE = 1e-5
_FD_STEP = 1e-4


@st.composite
def _curvature_instances(draw) -> dict:
    """d_H >= 2 (the density of R at 0 is finite), phi <= 1.2 (the finite-difference step
    1e-4 stays far below the curvature scale cos phi >= 0.36)."""
    d = draw(st.integers(3, 40))
    return {"d": d, "d_H": draw(st.integers(2, d - 1)), "phi": draw(st.floats(0.0, 1.2))}


def _curvature_checks(ctx: RunContext) -> list[SubCheck]:
    """The derived phi~''(0; phi) against central differences of the verified H1e formula
    phi_tilde_dtheta (odd in theta) and, at one instance, the mpmath quadrature of the
    definition phi~ (second difference)."""
    from verify.formulas import phi_tilde_dtheta
    kappa = lambdified("H1l", "curvature_at_zero", (phi, K_H, K_PERP), modules="mpmath")
    h = _FD_STEP

    def measure(inst: dict) -> SubCheck:
        d, dH, ph = inst["d"], inst["d_H"], inst["phi"]
        got = float(kappa(ph, dH, d - dH))
        fd1, fd2 = (float(phi_tilde_dtheta(s, ph, d, dH)) / s for s in (h, 2 * h))
        ref = (4 * fd1 - fd2) / 3
        return compare(f"(d, d_H, phi) = ({d}, {dH}, {ph:.4g})", got, ref, rtol=1e-6,
                       reason="phi~'(h)/h = phi~''(0) + O(h^2 / cos^2 phi); Richardson on "
                              "h, 2h leaves O((h / cos phi)^4) < 1e-14; rounding of "
                              "phi_tilde_dtheta (~1e-14) over h = 1e-4: 1e-10")
    subs = [for_all_instances(ctx, "derived phi~''(0; phi) vs Richardson-extrapolated central "
                                   "differences of phi_tilde_dtheta (worst drawn d, d_H, phi)",
                              _curvature_instances(), measure, count=ctx.size("instances"),
                              pinned=[{"d": 10, "d_H": 2, "phi": 0.7}])]
    d, dH, ph, hm = 30, 5, 0.7, 1e-6
    two = 2 * (rd.phi_tilde_mp(hm, ph, d, dH, dps=30) - rd.phi_tilde_mp(0.0, ph, d, dH, dps=30))
    subs.append(compare("derived phi~''(0; 0.7), d = 30, d_H = 5, vs the second difference of "
                        "the mpmath quadrature of the definition", float(kappa(ph, dH, d - dH)),
                        float(two / hm ** 2), rtol=1e-8,
                        reason="truncation h^2 phi~''''/12 ~ 1e-13 at h = 1e-6; quadrature at "
                               "30 digits over h^2 = 1e-12 leaves 1e-18"))
    return subs


def _params(ctx: RunContext) -> dict:
    return {k: ctx.size(k) for k in ("d", "d_H", "m", "step", "steps", "n_theta", "n_phi")}


@lru_cache(maxsize=8)
def _track(ctx: RunContext, p_items: tuple, offset: float, generation: int) -> rd.AngleTrack:
    """The tracked run (numerics.reduced.track_angles) with H1g's derived field (minus
    ``offset`` in d theta/dt), the derived phi~''(0; .) and tracers at TRACER_ANGLE
    (``generation``: the derived results' generation, so a mutation reruns it)."""
    p = dict(p_items)
    tab = phi_table(p["d"], p["d_H"], p["n_theta"], p["n_phi"])
    vel0 = derived_velocity(derived_results("H1g"))
    vel = (lambda e, c, g, dg: (lambda v: (v[0], v[1] - offset))(vel0(e, c, g, dg))) \
        if offset else vel0
    kappa = lambdified("H1l", "curvature_at_zero", (phi, K_H, K_PERP), modules="numpy")
    st0 = rd.initial_state(ctx.rng("tau+"), ctx.rng("tau-"), p["m"], p["d"], p["d_H"])
    tracers = np.array([[1.0, TRACER_ANGLE], [-1.0, TRACER_ANGLE]])
    return rd.track_angles(st0, tab, p["step"], p["steps"], velocity=vel,
                           curvature_at_zero=kappa(tab.phi, p["d_H"], p["d"] - p["d_H"]),
                           tracers=tracers, record_every=max(1, p["steps"] // 200),
                           long_run=ctx.profile == "full")


def _run(ctx: RunContext, p: dict, offset: float) -> rd.AngleTrack:
    return _track(ctx.shared(), tuple(sorted(p.items())), offset, derived_generation())


def _min_plus_angle(ctx: RunContext, p: dict) -> float:
    """min_j theta_j(0) over the tau+ particles of the run's initial state."""
    st0 = rd.initial_state(ctx.rng("tau+"), ctx.rng("tau-"), p["m"], p["d"], p["d_H"])
    return float(np.min(st0.theta[st0.eps > 0]))


def _flow_checks(ctx: RunContext, offset: float) -> tuple[list[SubCheck], list, dict]:
    """Gronwall's bound, the tracers' linearisation and the off-H bound along the run, with
    the error estimates of the table (theta grid halved), the step (halved) and the width
    (doubled)."""
    p = _params(ctx)
    run = _run(ctx, p, offset)
    coarse = _run(ctx, {**p, "n_theta": (p["n_theta"] + 1) // 2}, offset)
    half = _run(ctx, {**p, "step": p["step"] / 2, "steps": 2 * p["steps"]}, offset)
    wide = _run(ctx, {**p, "m": 2 * p["m"]}, offset)
    gron = float(np.max(run.gronwall[1:] / np.maximum(run.min_ratio[1:], 1e-300)))
    log_sim = np.log(run.tracer[-1] / TRACER_ANGLE)
    log_lin = np.log(run.tracer_linear[-1] / TRACER_ANGLE)
    table_est = float(np.max(np.abs(np.log(coarse.tracer[-1] / run.tracer[-1]))))
    lin_err = float(np.max(np.abs(log_sim - log_lin)))
    bound = run.plus_mass * np.sin(_min_plus_angle(ctx, p) * run.gronwall)
    off = float(np.max(bound / np.maximum(run.plus_off_h, 1e-300)))
    subs = [
        SubCheck("Gronwall: min_j theta_j(t) / theta_j(0) >= prod_n (1 - eta L_n) (particles and "
                 "tracers; measured: max over t > 0 of bound / ratio)", gron, 1.0 + 1e-12,
                 "exact for the Euler scheme with the Lipschitz constant L_n of the "
                 "interpolated field (|eps G'(theta)| <= L_n theta since G'(0) = 0); rounding "
                 "~1e-16 per step", unit="ratio"),
        SubCheck(f"massless tracers at theta_0 = {TRACER_ANGLE:g}, eps = +-1: log(theta(T) / "
                 "theta_0) of the flow vs the derived linearisation sum log(1 + eta eps "
                 "E_phi[(f* - f~) phi~''(0; phi)])", lin_err, 3 * table_est + 1e-6,
                 f"the flow's phi~ table is Hermite-interpolated: its error, O(h^2), is <= 3x "
                 f"the change when the theta grid is halved ({fmt(table_est)}); the "
                 f"linearisation's remainder is O(theta_0^2) = 1e-10 per unit of log growth",
                 unit="absolute"),
        SubCheck("off H: (1/m) sum_{eps>0} c_j sin theta_j >= tau+([0, pi/2]) sin(min_j "
                 "theta_j(0) prod (1 - eta L_n)) > 0 (measured: max over t of bound / value)",
                 off, 1.0 + 1e-12, "sin is increasing on [0, pi/2] and every theta_j(t) is "
                 "above theta_j(0) prod (1 - eta L_n) (Gronwall); rounding only", unit="ratio"),
    ]
    rows = [[name, fmt(r.min_ratio[-1]), fmt(r.gronwall[-1]),
             fmt(np.log(r.tracer[-1, 0] / TRACER_ANGLE)),
             fmt(np.log(r.tracer[-1, 1] / TRACER_ANGLE)), fmt(r.off_h[-1]), fmt(r.plus_mass[-1])]
            for name, r in (("reference", run), ("theta grid halved", coarse),
                            ("step halved", half), ("width doubled", wide))]
    details = {**p, "gronwall_final": float(run.gronwall[-1]),
               "min_ratio_final": float(run.min_ratio[-1]), "tracer_log_growth": log_sim.tolist(),
               "tracer_log_linear": log_lin.tolist(), "table_error_estimate": table_est,
               "off_h_final": float(run.off_h[-1]),
               "step_halving_change_min_ratio": abs(float(half.min_ratio[-1] - run.min_ratio[-1])),
               "width_doubling_change_off_h": abs(float(wide.off_h[-1] - run.off_h[-1]))}
    return subs, rows, {"details": details, "run": run}


def check_h1l(ctx: RunContext, offset: float) -> Outcome:
    """H1l with H1g's derived field (``offset`` 0) or the near miss
    ``THETA_VELOCITY_OFFSET`` (d theta/dt - offset)."""
    curv = _curvature_checks(ctx)
    subs, rows, extra = _flow_checks(ctx, offset)
    p = _params(ctx)
    ext = lambdified("H1e", "at_half_pi", (phi, K_PERP), modules="numpy")
    f_off = float(ext(np.pi / 2, p["d"] - p["d_H"])) * float(extra["run"].off_h[-1])
    return combine(f"Figure 2: no particle reaches theta = 0 in finite time, so f~_t stays off "
                   f"f* off H (d = {p['d']}, d_H = {p['d_H']}, m = {p['m']}, step {p['step']}, "
                   f"t = {p['step'] * p['steps']:g})"
                   + (f" [d theta/dt - {offset:g}]" if offset else ""), curv + subs,
                   details={**extra["details"], "f_tilde_off_h_final": f_off},
                   tables=[Table("The run and its error estimates (at the final time)",
                                 ["run", "min theta_j(t)/theta_j(0)", "Gronwall factor",
                                  "tracer eps=+1: log growth", "tracer eps=-1: log growth",
                                  "(1/m) sum eps c sin theta", "tau+ mass"], rows)],
                   notes=[f"f~_T(pi/2) = E[S_+] (1/m) sum eps_j c_j sin theta_j = {fmt(f_off)} "
                          "at the final time, while f*(pi/2) = 0: not learned at that time."],
                   artifacts={"track": extra["run"]})


def fig_h1l(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.plotting import new_figure, save_figure
    run = ev.artifacts.get("track")
    if run is None:
        return []
    fig, ax = new_figure()
    ax.semilogy(run.times, run.min_ratio, label=r"$\min_j\theta_j(t)/\theta_j(0)$")
    ax.semilogy(run.times, run.gronwall, "--", label=r"$\prod(1-\eta L_n)$ (Gronwall)")
    ax.semilogy(run.times, run.tracer[:, 0] / TRACER_ANGLE, label="tracer eps=+1")
    ax.semilogy(run.times, run.tracer_linear[:, 0] / TRACER_ANGLE, ":",
                label="its linearisation")
    ax.set_xlabel("t"), ax.legend(fontsize=7)
    save_figure(fig, outdir / "H1l_angles.png")
    return [("H1l_angles.png", "Smallest angle ratio against the Gronwall bound, and a tracer "
                               "near theta = 0 against the derived linearisation.")]


CLAIMS = [
    Claim(id="H1l", title="Figure 2: the structure is not learned in finite time",
          source="Hajjar & Chizat (2023), Sec. 4, Figure 2",
          statement=r"Along the reduced flow of $f^* = |x_H|$ no $\theta_j(t)$ reaches 0 in finite "
                    r"time: $\theta_j(t) \ge \theta_j(0)e^{-\int_0^t L}$, so $\tilde f_t(\pi/2) "
                    r"= E[S_+]\int\sin\theta\,d(\tau_t^+-\tau_t^-)$ keeps a $\tau^+$ part "
                    r"$> 0$ while $f^*(\pi/2) = 0$.",
          check=check_h1l, exact=0.0, near_miss=THETA_VELOCITY_OFFSET,
          sizes={"quick": {"d": 10, "d_H": 2, "m": 256, "step": 0.05, "steps": 2000,
                           "n_theta": 513, "n_phi": 32, "instances": 6},
                 "full": {"d": 30, "d_H": 5, "m": 1024, "step": 0.05, "steps": 6000,
                          "n_theta": 513, "n_phi": 48, "instances": 40}},
          negative_control_description="d theta/dt with a constant offset -2e-8 at theta = 0 "
                                       "(particles reach 0 in finite time)",
          negative_target="Gronwall", figures=fig_h1l, kind="reconstructed"),
]
