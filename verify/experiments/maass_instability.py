"""``maass-instability``: the finite-N transversal instability of E^G (Maass Martinez &
Fontbona 2024, claim M1d).

M1d: from an SI initialization, FA and full-orbit DA keep the particles in E^G exactly at
any N (the update of a particle in E^G is G-invariant, hence in E^G).  That statement is
about exact arithmetic.  This experiment perturbs every particle of an SI initialization
by eps in a random direction orthogonal to E^G and follows RMD^2(nu_t, P_{E^G} # nu_t) of
the perturbed run beside the unperturbed one (same data, noise and group draws).  At
small N the perturbation grows by many orders of magnitude over the paper's horizon
(E^G is transversally unstable there), which is how float32 rounding (~1e-7) can drive
visible drift in a reproduction; the unperturbed float64 run stays at rounding level.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from verify.experiments import Experiment, Setting
from verify.experiments.maass import _COMMON_SETTINGS

__all__ = ["EXPERIMENTS", "perturb_off_fixed_space"]


def perturb_off_fixed_space(group, theta: np.ndarray, eps: float,
                            rng: np.random.Generator) -> np.ndarray:
    """theta_i + eps * n_i, n_i a uniformly random unit vector of (E^G)^perp."""
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps (perturbation size) must be finite and >= 0; got {eps!r}")
    xi = rng.standard_normal(theta.shape)
    xi = xi - group.project(xi)
    norms = np.linalg.norm(xi, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("E^G is the whole parameter space: there is no direction off E^G")
    return theta + eps * xi / norms


def _growth_rate(t: np.ndarray, v: np.ndarray) -> float:
    """Least-squares slope of log RMD^2 against t over the second half of the run."""
    t, v = np.asarray(t), np.asarray(v)
    sel = (t >= t[-1] / 2) & (v > 0)
    if sel.sum() < 2:
        return float("nan")
    return float(np.polyfit(t[sel], np.log(v[sel]), 1)[0])


def run_instability(params: dict[str, Any], profile: str, seed: int):
    from numerics.equivariant import init_particles, train
    from numerics.rng import make_rng
    from verify.experiments.maass import (SCHEME_NAMES, fixed_teacher, rmd2_to_fixed_space,
                                          setup, sgd_config)
    from verify.plotting import new_figure
    schemes = [s for s in params["schemes"] if s in SCHEME_NAMES]
    if not schemes:
        raise ValueError(f"schemes must name some of {tuple(SCHEME_NAMES)}; got "
                         f"{params['schemes']}")
    G, u = setup(str(params["unit"]))
    T = float(params["T"])
    epss = [float(e) for e in params["eps"]]
    data: dict[str, Any] = {"T": T, "unit": params["unit"], "teachers": params["teachers"],
                            "loss_convention": params["loss_convention"],
                            "noise": "projected (P_{E^G} xi, as from an SI initialization)",
                            "runs": []}
    teachers = list(dict.fromkeys(params["teachers"]))
    fig, ax = new_figure(len(schemes), len(teachers), width=4.0, height=2.8)
    ax = np.asarray(ax).reshape(len(teachers), len(schemes))
    eps_plot = epss[int(np.argmin(np.abs(np.log10(epss) + 7)))]   # the one nearest 1e-7
    cases = [(tk, int(n)) for tk in params["teachers"] for n in params["Ns"]]
    for tk, N in cases:
        teacher = fixed_teacher(str(tk), str(params["unit"]), G)
        steps = max(1, int(round(N * T)))
        cfg = sgd_config(params, steps)
        th0 = init_particles("SI", N, u, G, make_rng(seed, "maass-instability", "init", N))
        streams = lambda: (make_rng(seed, "maass-instability", "data", N),  # noqa: E731
                           make_rng(seed, "maass-instability", "noise", N),
                           make_rng(seed, "maass-instability", "g", N))
        for j, sc in enumerate(schemes):
            def trajectory(start):
                _, snaps = train(u, G, start, teacher, SCHEME_NAMES[sc], cfg, *streams(),
                                 noise="projected", record_every=max(1, N))
                return (np.array([k / N for k, _ in snaps]),
                        np.array([rmd2_to_fixed_space(G, th) for _, th in snaps]))
            t, base = trajectory(th0)
            for eps in epss:
                pert = perturb_off_fixed_space(G, th0, eps,
                                               make_rng(seed, "maass-instability", "eps", N))
                _, v = trajectory(pert)
                row = {"teacher": tk, "N": N, "scheme": sc, "eps": eps, "times": t, "rmd2_perturbed": v,
                       "rmd2_unperturbed": base, "rmd2_initial": float(v[0]),
                       "rmd2_final": float(v[-1]), "rmd2_final_unperturbed": float(base[-1]),
                       "amplification": float(v[-1] / v[0]) if v[0] > 0 else float("nan"),
                       "growth_rate_second_half": _growth_rate(t, v),
                       "max_rmd2_unperturbed": float(base.max())}
                data["runs"].append(row)
                if eps == eps_plot:
                    a_ = ax[teachers.index(tk), j]
                    line, = a_.semilogy(t, np.maximum(v, 1e-40), label=f"N = {N}")
                    a_.semilogy(t, np.maximum(base, 1e-40), ":", lw=0.8, color=line.get_color())
                    a_.set_title(f"{sc}, {tk} teacher, eps = {eps:g} (dotted: eps = 0)",
                                 fontsize=8)
                    a_.set_xlabel("t = step / N"), a_.set_ylabel(r"RMD$^2$ to $E^G$")
                    a_.legend(fontsize=6)
    amp = [r["amplification"] for r in data["runs"]]
    data["summary"] = {
        "min_amplification": float(np.nanmin(amp)), "max_amplification": float(np.nanmax(amp)),
        "max_rmd2_unperturbed": float(max(r["max_rmd2_unperturbed"] for r in data["runs"])),
        "table": [[r["teacher"], r["N"], r["scheme"], r["eps"], r["rmd2_initial"], r["rmd2_final"],
                   r["rmd2_final_unperturbed"], r["amplification"]] for r in data["runs"]],
        "table_columns": ["teacher", "N", "scheme", "eps", "RMD^2 at t=0", "RMD^2 at T",
                          "RMD^2 at T unperturbed", "amplification"]}
    return data, fig


EXPERIMENTS = [
    Experiment(
        name="maass-instability",
        description="Finite-N instability of E^G: perturb an SI initialization off E^G by "
                    "eps and follow RMD^2 to E^G under FA and full-orbit DA (the paper's "
                    "fixed teachers) beside the unperturbed run (claim M1d caveat)",
        fn=run_instability,
        defaults={"Ns": [10, 50, 100], "eps": [1e-9, 1e-7, 1e-5], "schemes": ["FA", "DA"],
                  "T": 20.0, "teachers": ["arbitrary", "WI", "SI"], "unit": "matrix", "alpha": 50.0,
                  "tau": 1e-4, "beta": 1e-6, "batch": 20, "loss_convention": "reproduction"},
        quick={"Ns": [10], "eps": [1e-7], "teachers": ["arbitrary", "WI"]},
        claims=("M1d",),
        settings=dict(_COMMON_SETTINGS, **{
            "teachers": Setting("str list", ["arbitrary"], choices=("arbitrary", "WI", "SI"),
                                max_len=3),
            "eps": Setting("float list", [1e-7], lo=0.0, hi=1.0, lo_open=True, max_len=20,
                           doc="size of the perturbation off E^G per particle")})),
]
