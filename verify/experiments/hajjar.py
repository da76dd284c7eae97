"""Experiments for Hajjar & Chizat (2023): ``odd-target`` (H1c), ``hajjar-fig2`` and
``hajjar-fig3`` (H1e, H1g)."""
from __future__ import annotations

from typing import Any

import numpy as np

from verify.experiments import Experiment


def _odd_target(params: dict[str, Any], profile: str, seed: int):
    from numerics import twolayer as tl
    from numerics.rng import make_rng
    from verify.claims import get
    from verify.claims.hajjar import _h1c_population, _h1c_target, _s_of_t
    from verify.formulas import best_linear_approximator, odd_target_rate
    from verify.plotting import new_figure
    d, m, n = int(params["d"]), int(params["m"]), int(params["n"])
    eta, steps = float(params["eta"]), int(params["steps"])
    rng = make_rng(seed, "odd-target", "particles")
    B0 = np.concatenate([np.linalg.qr(rng.standard_normal((d, d)))[0]
                         for _ in range(max(1, m // (4 * d)))])
    a0 = rng.choice([-1.0, 1.0], size=B0.shape[0])
    a = np.concatenate([a0, -a0, a0, -a0])
    B = np.concatenate([B0, -B0, -B0, B0])
    X0 = make_rng(seed, "odd-target", "data").standard_normal((max(d, n // 2), d))
    X = np.concatenate([X0, -X0])
    L = np.linalg.cholesky(X.T @ X / X.shape[0])
    X = np.linalg.solve(L, X.T).T / np.sqrt(d)
    Y = _h1c_target(X)
    run = tl.gradient_descent(a, B, X, Y, eta, steps, record_every=max(1, steps // 100))
    w = np.array([0.5 * (aa @ BB) / aa.shape[0] for aa, BB in run.snapshots])
    w_star = best_linear_approximator(X, Y)
    v = 1.0 / d
    V = 1.0 + 1.0 / d
    w_pop = _h1c_population(d)
    der = get("H1c").derivation()
    q = float(w_star @ w_star)
    s_of_t, _ = _s_of_t(der, V, v, q)
    s_inf = np.array([s_of_t(t) for t in run.times])
    dist = np.linalg.norm(w - w_star, axis=1)
    bound = np.linalg.norm(w_star) * np.exp(-V * v * run.times / 4)
    dist_inf = np.linalg.norm(w_star) * (1 - s_inf)
    fig, ax = new_figure()
    ax.semilogy(run.times, dist, "o", ms=3, label=r"$|w(t)-w^*|$ (particles, GD)")
    ax.semilogy(run.times, dist_inf, "-", label="infinite width (derived)")
    ax.semilogy(run.times, bound, "--", label=r"$|w^*|e^{-V v_\rho t/4}$ (reconstructed bound)")
    ax.set_xlabel("t"), ax.legend()
    data = {"times": run.times, "w": w, "w_star": w_star, "w_star_population": w_pop,
            "E_fstar_x": X.T @ Y / X.shape[0], "V": V, "v_rho": v, "m": int(a.shape[0]),
            "n": int(X.shape[0]), "distance": dist, "distance_infinite_width": dist_inf,
            "bound": bound, "bound_holds": bool(np.all(dist <= bound * (1 + 1e-9))),
            "asymptotic_rate_derived": float(odd_target_rate(V, v, q)),
            "bound_rate": V * v / 4, "losses": run.losses,
            "max_deviation_from_infinite_width": float(np.abs(dist - dist_inf).max())}
    return data, fig


def _fig3(params: dict[str, Any], profile: str, seed: int):
    from numerics import reduced as rd
    from verify.claims.hajjar import _alpha, fig3_figure, run_fig3
    p = {k: params[k] for k in ("d", "d_H", "m", "step", "steps", "n_theta", "n_phi")}
    run = run_fig3(p, seed, snapshot_every=max(1, p["steps"] // 4), stream="hajjar-fig3")
    alpha = _alpha(int(p["d_H"]))
    data = {"times": run.times, "plus_mass": run.plus_mass, "minus_mass": run.minus_mass,
            "w2_plus_to_delta_0": run.w2_plus, "w2_minus_to_delta_pi_2": run.w2_minus,
            "loss": run.losses, "alpha": alpha,
            "t_star": rd.critical_time(run.times, run.plus_mass, alpha)}
    return data, fig3_figure(run, alpha)


def _fig2(params: dict[str, Any], profile: str, seed: int):
    from numerics import reduced as rd
    from verify.claims.hajjar import run_fig3
    from verify.plotting import new_figure
    p = {k: params[k] for k in ("d", "d_H", "m", "step", "steps", "n_theta", "n_phi")}
    run = run_fig3(p, seed, snapshot_every=max(1, p["steps"] // 4), stream="hajjar-fig2")
    r = np.linspace(0, float(params["r_max"]), 41)
    d, d_H = int(p["d"]), int(p["d_H"])
    X = np.zeros((r.size, d))
    X[:, 0] = 1.0                  # u_H = e_1 (|x_H| = 1: target f* = 1 for every r)
    X[:, d_H] = r                  # + r e_perp
    curves = [rd.reduced_predictor(st, X, d_H) for st in run.snapshots]
    times = [float(t) for t in run.snapshot_times]
    fig, ax = new_figure()
    for t, c in zip(times, curves):
        ax.plot(r, c, label=f"t = {t:g}")
    ax.axhline(1.0, color="k", lw=0.8, label=r"$f^* = |x_H| = 1$")
    ax.set_xlabel(r"$r$ in $x = u_H + r e_\perp$"), ax.set_ylabel(r"$f(\mu_t; x)$"), ax.legend()
    return {"r": r, "times": times, "f": curves}, fig


_FIG3_DEFAULTS = {"d": 30, "d_H": 5, "m": 1024, "step": 5e-3, "steps": 20000, "n_theta": 513,
                  "n_phi": 48}
_FIG3_QUICK = {"m": 256, "step": 2e-2, "steps": 2500, "n_theta": 257, "n_phi": 32}

EXPERIMENTS = [
    Experiment("odd-target", "Odd target f* = sqrt(d) x1|x2| + x3: w(t), w*, |w(t) - w*| vs the "
               "derived infinite-width trajectory and the reconstructed bound (claim H1c)",
               _odd_target, {"d": 5, "m": 1000, "n": 20000, "eta": 0.05, "steps": 800},
               quick={"m": 200, "n": 1000, "eta": 0.1, "steps": 300}, claims=("H1c",)),
    Experiment("hajjar-fig2", "f(mu_t; u_H + r e_perp) against r over time from the 1-D "
               "reduced dynamics: the structure is not learned in finite time (H1e)",
               _fig2, {**_FIG3_DEFAULTS, "r_max": 3.0}, quick=_FIG3_QUICK, claims=("H1e", "H1g")),
    Experiment("hajjar-fig3", "Figure 3: histograms of tau+-, masses, W2 to the conjectured "
               "Dirac limits and the critical time t* (H1g)",
               _fig3, dict(_FIG3_DEFAULTS), quick=_FIG3_QUICK, claims=("H1g",)),
]
