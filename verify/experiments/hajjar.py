"""Experiments for Hajjar & Chizat (2023): ``odd-target`` (H1c), ``hajjar-fig2`` and
``hajjar-fig3`` (H1e, H1g).

Time units: ``time_unit=paper`` (default) reads ``step`` and reports times in the
authors' units (their code draws x ~ N(0, I_d), E|x|^2 = d); ``time_unit=suite`` in the
suite's (x ~ N(0, I_d / d)).  t_paper = t_suite / d (numerics.paper_units)."""
from __future__ import annotations

from typing import Any

import numpy as np

from numerics.paper_units import HAJJAR_FIG3_PUBLISHED as AUTHORS_FIG3
from verify.experiments import Experiment, Setting


def _odd_target(params: dict[str, Any], profile: str, seed: int):
    from numerics import twolayer as tl
    from numerics.rng import make_rng
    from verify import derived
    from verify.studies.hajjar import (derived_s_of_t, h1c_particles_and_sample,
                                       h1c_population)
    from verify.formulas import best_linear_approximator, odd_target_rate
    from verify.plotting import new_figure
    d, m, n = int(params["d"]), int(params["m"]), int(params["n"])
    eta, steps = float(params["eta"]), int(params["steps"])
    a, B, X, Y = h1c_particles_and_sample(
        make_rng(seed, "odd-target", "particles"), make_rng(seed, "odd-target", "data"),
        d, max(1, m // (4 * d)), max(d, n // 2))
    run = tl.gradient_descent(a, B, X, Y, eta, steps, record_every=max(1, steps // 100))
    w = np.array([0.5 * (aa @ BB) / aa.shape[0] for aa, BB in run.snapshots])
    w_star = best_linear_approximator(X, Y)
    v = 1.0 / d
    V = 1.0 + 1.0 / d
    w_pop = h1c_population(d)
    der = derived.derivation("H1c")
    q = float(w_star @ w_star)
    s_of_t, _ = derived_s_of_t(der, V, v, q)
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


def _reduced_run(params: dict[str, Any], seed: int, stream: str, *, n_records: int = 2000,
                 snapshot_steps: tuple[int, ...] = ()):
    """The Figure-3 weight-position simulation with the step given in ``time_unit``
    (``paper``: the authors' data N(0, I_d); ``suite``: N(0, I_d / d)) and the field from
    deterministic quadrature (``estimator=quadrature``) or from the authors' Monte Carlo
    estimate with ``n_mc`` fresh samples per step (``montecarlo``, numerics.reduced_mc;
    no histogram snapshots).  Returns the run (suite times), E|x|^2 and the suite step."""
    from numerics import paper_units as pu
    from numerics import reduced as rd
    from numerics.rng import make_rng
    from verify import derived
    from verify.studies.hajjar import derived_velocity, phi_table
    d, d_H, m = int(params["d"]), int(params["d_H"]), int(params["m"])
    steps = int(params["steps"])
    s2 = pu.hajjar_data_second_moment(d, str(params["time_unit"]))
    step_suite = pu.hajjar_step_to_suite(float(params["step"]), d, str(params["time_unit"]))
    st = rd.initial_state(make_rng(seed, stream, "tau+"), make_rng(seed, stream, "tau-"),
                          m, d, d_H)
    estimator = str(params.get("estimator", "quadrature"))
    if estimator == "montecarlo":
        from numerics.reduced_mc import simulate_gd_mc
        run = simulate_gd_mc(st, d, d_H, step_suite, steps, make_rng(seed, stream, "mc"),
                             n_samples=int(params["n_mc"]),
                             record_every=max(1, steps // n_records))
        return run, s2, step_suite
    if estimator != "quadrature":
        raise ValueError(f"estimator must be 'quadrature' or 'montecarlo'; got {estimator!r}")
    tab = phi_table(d, d_H, int(params["n_theta"]), int(params["n_phi"]))
    snap_every = 0
    if snapshot_steps:
        snap_every = int(np.gcd.reduce([k for k in snapshot_steps if k > 0] or [steps]))
    run = rd.simulate_gd(st, tab, step_suite, steps, record_every=max(1, steps // n_records),
                         snapshot_every=snap_every,
                         velocity=derived_velocity(derived.derivation("H1g")))
    return run, s2, step_suite


def _at(times: np.ndarray, values: np.ndarray, t: float) -> float:
    """The recorded value at the recorded time closest to t."""
    return float(np.asarray(values)[int(np.argmin(np.abs(np.asarray(times) - t)))])


def _decay_rate(times: np.ndarray, w2: np.ndarray) -> float:
    """Least-squares slope of -log W2 against time (an exponential rate; nan if < 3 points)."""
    ok = np.asarray(w2) > 0
    if ok.sum() < 3:
        return float("nan")
    return float(-np.polyfit(np.asarray(times)[ok], np.log(np.asarray(w2)[ok]), 1)[0])


#: the authors' histogram times (steps 0, 100, 1000, 10000, 20000 at step 5e-3)
_AUTHORS_HIST_STEPS = (0, 100, 1000, 10000, 20000)


def _fig3(params: dict[str, Any], profile: str, seed: int):
    """Figure 3 (claim H1g) in the units of ``time_unit``, with t*, the post-t* phase and
    the authors' published masses side by side when the settings are theirs."""
    from numerics import reduced as rd
    from numerics.paper_units import TIME_UNITS
    from numerics.validation import require_choice
    from verify.studies.hajjar import alpha_by_quadrature
    require_choice(params["time_unit"], "time_unit", TIME_UNITS)
    steps = int(params["steps"])
    hist_steps = tuple(k for k in _AUTHORS_HIST_STEPS if k <= steps) + (
        (steps,) if steps not in _AUTHORS_HIST_STEPS else ())
    run, s2, step_suite = _reduced_run(params, seed, "hajjar-fig3", snapshot_steps=hist_steps)
    alpha = alpha_by_quadrature(int(params["d_H"]))
    times = run.times / s2
    t_star = rd.critical_time(times, run.plus_mass, alpha, never=float("nan"))
    data: dict[str, Any] = {
        "time_unit": params["time_unit"], "estimator": params["estimator"],
        "data_second_moment": s2,
        "time_conversion": "t = t_suite / E|x|^2 (E|x|^2 = d in the authors' convention)",
        "step_suite_units": step_suite, "times": times, "times_suite": run.times,
        "plus_mass": run.plus_mass, "minus_mass": run.minus_mass,
        "w2_plus_to_delta_0": run.w2_plus, "w2_minus_to_delta_pi_2": run.w2_minus,
        "loss": s2 * run.losses, "loss_suite": run.losses, "alpha": alpha,
        "t_star": t_star, "t_star_suite": t_star * s2 if np.isfinite(t_star) else t_star,
        "t_end": float(times[-1])}
    if np.isfinite(t_star):
        post = times >= t_star
        pre = times <= t_star
        data["post_t_star"] = {
            "plus_mass_at_t_star": _at(times, run.plus_mass, t_star),
            "plus_mass_end": float(run.plus_mass[-1]),
            "max_plus_mass_after_t_star": float(run.plus_mass[post].max()),
            "minus_mass_at_t_star": _at(times, run.minus_mass, t_star),
            "minus_mass_min": float(run.minus_mass.min()),
            "minus_mass_end": float(run.minus_mass[-1]),
            "w2_plus_at_t_star": _at(times, run.w2_plus, t_star),
            "w2_plus_end": float(run.w2_plus[-1]),
            "w2_minus_at_t_star": _at(times, run.w2_minus, t_star),
            "w2_minus_end": float(run.w2_minus[-1]),
            "w2_plus_decay_rate_before_t_star": _decay_rate(times[pre], run.w2_plus[pre]),
            "w2_plus_decay_rate_after_t_star": _decay_rate(times[post], run.w2_plus[post]),
            "note": "the paper's description of the phase after t*: the masses drift "
                    "away from (alpha, 0) while the angles keep converging; compare "
                    "plus_mass_at_t_star -> plus_mass_end, minus_mass_min -> "
                    "minus_mass_end and the W2 rows"}
    a = AUTHORS_FIG3
    same = (params["time_unit"] == "paper" and int(params["d"]) == a["d"]
            and int(params["d_H"]) == a["d_H"] and times[-1] >= a["t"] - 1e-9)
    if same:
        ours = {"t": a["t"], "plus_mass": _at(times, run.plus_mass, a["t"]),
                "minus_mass": _at(times, run.minus_mass, a["t"]), "m": int(params["m"]),
                "step": float(params["step"])}
        data["authors_comparison"] = {
            "ours": ours, "authors": {k: a[k] for k in ("t", "plus_mass", "minus_mass", "m",
                                                        "step", "source")},
            "relative_difference_plus": ours["plus_mass"] / a["plus_mass"] - 1,
            "relative_difference_minus": ours["minus_mass"] / a["minus_mass"] - 1,
            "differences": a["differences"]}
    data["histogram_times"] = [float(t) / s2 for t in run.snapshot_times
                               if int(round(t / step_suite)) in hist_steps]
    return data, _fig3_figure(run, s2, step_suite, alpha, t_star, hist_steps,
                              str(params["time_unit"]))


def _fig3_figure(run, s2: float, step_suite: float, alpha: float, t_star: float,
                 hist_steps: tuple[int, ...], unit: str):
    from verify.plotting import new_figure
    fig, ax = new_figure(2, 2, width=4.4, height=3.3)
    bins = np.linspace(0, np.pi / 2, 31)
    for t, st in zip(run.snapshot_times, run.snapshots):
        if int(round(t / step_suite)) not in hist_steps:
            continue
        for sgn, axi in ((1, ax[0]), (-1, ax[1])):
            sel = st.eps == sgn
            axi.hist(st.theta[sel], bins=bins, weights=st.c[sel] / st.c.shape[0],
                     histtype="step", label=f"t = {t / s2:g}")
    ax[0].set_title(r"$\tau^+_t$"), ax[1].set_title(r"$\tau^-_t$")
    for a_ in ax[:2]:
        a_.set_xlabel(r"$\theta$")
    if ax[0].get_legend_handles_labels()[0]:      # no histograms for the Monte Carlo run
        ax[0].legend(fontsize=7)
    times = run.times / s2
    ax[2].plot(times, run.plus_mass, label=r"$\tau^+([0,\pi/2])$")
    ax[2].plot(times, run.minus_mass, label=r"$\tau^-([0,\pi/2])$")
    ax[2].axhline(alpha, color="k", lw=0.8, ls=":", label=r"$\alpha$")
    ax[3].plot(times, run.w2_plus, label=r"$W_2(\tilde\tau^+,\delta_0)$")
    ax[3].plot(times, run.w2_minus, label=r"$W_2(\tilde\tau^-,\delta_{\pi/2})$")
    ax[3].plot(times, np.abs(run.plus_mass - alpha), "--", label=r"$|\alpha - \tau^+$ mass$|$")
    for a_ in ax[2:]:
        if np.isfinite(t_star):
            a_.axvline(t_star, color="goldenrod", ls="--", label=f"$t^* = {t_star:.3g}$")
        a_.set_yscale("log"), a_.set_xlabel(f"t ({unit} units)"), a_.legend(fontsize=7)
    return fig


def _fig2(params: dict[str, Any], profile: str, seed: int):
    from numerics import reduced as rd
    from numerics.paper_units import TIME_UNITS
    from numerics.validation import require_choice
    from verify.plotting import new_figure
    require_choice(params["time_unit"], "time_unit", TIME_UNITS)
    steps = int(params["steps"])
    run, s2, _ = _reduced_run(params, seed, "hajjar-fig2",
                              snapshot_steps=tuple(range(0, steps + 1, max(1, steps // 4))))
    r = np.linspace(0, float(params["r_max"]), 41)
    d, d_H = int(params["d"]), int(params["d_H"])
    X = np.zeros((r.size, d))
    X[:, 0] = 1.0                  # u_H = e_1 (|x_H| = 1: target f* = 1 for every r)
    X[:, d_H] = r                  # + r e_perp
    from verify.formulas.hajjar import phi_kernel
    curves = [rd.reduced_predictor(st, X, d_H, phi_kernel()) for st in run.snapshots]
    times = [float(t) / s2 for t in run.snapshot_times]
    fig, ax = new_figure()
    for t, c in zip(times, curves):
        ax.plot(r, c, label=f"t = {t:g}")
    ax.axhline(1.0, color="k", lw=0.8, label=r"$f^* = |x_H| = 1$")
    ax.set_xlabel(r"$r$ in $x = u_H + r e_\perp$"), ax.set_ylabel(r"$f(\mu_t; x)$"), ax.legend()
    return {"r": r, "times": times, "time_unit": params["time_unit"], "f": curves}, fig


#: paper settings: d = 30, d_H = 5, m = 1024, the authors' step 5e-3 in their units (data
#: N(0, I_d)), 20000 steps: t = 100 in their units (t = 3000 in the suite's)
_FIG3_DEFAULTS = {"d": 30, "d_H": 5, "m": 1024, "step": 5e-3, "steps": 20000, "n_theta": 513,
                  "n_phi": 48, "time_unit": "paper", "estimator": "quadrature", "n_mc": 1000}
_FIG3_QUICK = {"m": 256, "step": 5e-3, "steps": 2000, "n_theta": 257, "n_phi": 32}
#: declared specs of the string settings (the rest are inferred from defaults and names)
_FIG3_SETTINGS = {
    "time_unit": Setting("str", "paper", choices=("paper", "suite"),
                         doc="paper: step and times in the authors' units (data N(0, I_d)); "
                             "suite: data N(0, I_d / d); t_paper = t_suite / d"),
    "estimator": Setting("str", "quadrature", choices=("quadrature", "montecarlo"),
                         doc="field by deterministic quadrature or the authors' Monte Carlo"),
    "n_mc": Setting("int", 1000, lo=1, hi=10 ** 6, doc="Monte Carlo samples per step"),
}

EXPERIMENTS = [
    Experiment("odd-target", "Odd target f* = sqrt(d) x1|x2| + x3: w(t), w*, |w(t) - w*| vs the "
               "derived infinite-width trajectory and the reconstructed bound (claim H1c)",
               _odd_target, {"d": 5, "m": 1000, "n": 20000, "eta": 0.05, "steps": 800},
               quick={"m": 200, "n": 1000, "eta": 0.1, "steps": 300}, claims=("H1c",),
               settings={"d": Setting("int", 5, lo=3, hi=64,
                                      doc="dimension (the target f* needs d >= 3)")}),
    Experiment("hajjar-fig2", "f(mu_t; u_H + r e_perp) against r over time from the 1-D "
               "reduced dynamics: the structure is not learned in finite time (H1e)",
               _fig2, {**{k: v for k, v in _FIG3_DEFAULTS.items() if k not in ("estimator", "n_mc")},
                      "r_max": 3.0}, quick=_FIG3_QUICK, claims=("H1e", "H1g"),
               settings={"time_unit": _FIG3_SETTINGS["time_unit"]}),
    Experiment("hajjar-fig3", "Figure 3 at the paper's settings (d = 30, d_H = 5, m = 1024, "
               "t = 100 in the authors' units): tau+- histograms, masses, W2 to the "
               "conjectured Dirac limits, t* and the post-t* phase, with the authors' "
               "published masses side by side (H1g); time_unit=paper|suite",
               _fig3, dict(_FIG3_DEFAULTS), quick=_FIG3_QUICK, claims=("H1g",),
               settings=_FIG3_SETTINGS),
]
