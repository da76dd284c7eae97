"""Experiments for Maass Martinez & Fontbona (2024), claims M1c-M1e.

- ``maass-rmd``: the reference experiment's figure rows: for the arbitrary, WI and SI
  teachers, RMD between the final particle measures of vanilla, random-g DA and FA (i.i.d.
  initialization, common random numbers), and RMD(nu_T, P_{E^G} # nu_T) of vanilla from an
  SI initialization (beta = 0), against N.  quick: N <= 100, T = 2; full: N up to 5000,
  T = 20 (N T steps each: hours on one core at N = 5000).
- ``maass-heuristic``: the E^G discovery iterations for the reference C_2 experiment and
  C_3 acting on 3 x 3 parameters.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from verify.claims.maass import (HeuristicSettings, TrendSettings, _slope, heuristic_examples,
                                 heuristic_run, scheme_trend, si_escape_trend)
from verify.experiments import Experiment

__all__ = ["EXPERIMENTS"]

TEACHER_KINDS = ("arbitrary", "WI", "SI")


def run_rmd(params: dict[str, Any], profile: str, seed: int):
    from verify.plotting import new_figure
    s = TrendSettings(Ns=tuple(int(n) for n in params["Ns"]), T=float(params["T"]),
                      replicates=int(params["replicates"]), beta=float(params["beta"]))
    teachers = [t for t in TEACHER_KINDS if t in params["teachers"]]
    if not teachers:
        raise ValueError(f"teachers must name some of {TEACHER_KINDS}; got {params['teachers']}")
    data: dict[str, Any] = {"Ns": list(s.Ns), "T": s.T, "replicates": s.replicates,
                            "beta_between_schemes": s.beta, "beta_si_runs": 0.0, "teachers": {}}
    fig, axes = new_figure(len(teachers), 2, width=4.0, height=3.2)
    axes = np.asarray(axes).reshape(2, len(teachers))
    Ns = np.array(s.Ns, float)
    for j, tk in enumerate(teachers):
        between = scheme_trend(tk, s, seed, f"exp-{tk}")
        escape = si_escape_trend(tk, s, seed, f"exp-si-{tk}")
        data["teachers"][tk] = {
            "rmd_between": between["rmd"],
            "slopes_between": {k: _slope(s.Ns, v) for k, v in between["rmd"].items()},
            "rmd_to_EG_vanilla_from_SI": escape["rmd_to_EG"],
            "slope_to_EG": _slope(s.Ns, escape["rmd_to_EG"])}
        ax = axes[0, j]
        for pair, vals in between["rmd"].items():
            ax.loglog(Ns, vals, "o-", label=pair.replace("|", " vs "))
        ax.loglog(Ns, 0.3 * (Ns / Ns[0]) ** -0.5, "k--", label=r"$N^{-1/2}$")
        ax.set_title(f"{tk} teacher: RMD between schemes", fontsize=9)
        ax.set_xlabel("N"), ax.legend(fontsize=6)
        ax = axes[1, j]
        ax.loglog(Ns, escape["rmd_to_EG"], "o-", label=r"vanilla, RMD$(\nu, P\#\nu)$")
        ax.loglog(Ns, 0.3 * (Ns / Ns[0]) ** -0.5, "k--", label=r"$N^{-1/2}$")
        ax.set_title(f"{tk} teacher: escape from E^G (SI init)", fontsize=9)
        ax.set_xlabel("N"), ax.legend(fontsize=6)
    return data, fig


def run_heuristic(params: dict[str, Any], profile: str, seed: int):
    from verify.plotting import new_figure
    hs = HeuristicSettings(N=int(params["N"]), T=float(params["T"]),
                           rmd_threshold=float(params["rmd_threshold"]),
                           eigen_threshold=float(params["eigen_threshold"]),
                           max_iter=int(params["max_iter"]), scheme=str(params["scheme"]))
    data: dict[str, Any] = {"settings": hs.__dict__, "runs": {}}
    fig, ax = new_figure(width=5.0)
    for name, G, u in heuristic_examples():
        res = heuristic_run(G, u, str(params["teacher"]), hs, seed, f"exp-heuristic-{name}")
        data["runs"][name] = res
        its = res["iterates"]
        ax.semilogy([it["dim"] for it in its], [max(it["rmd_escape"], 1e-17) for it in its],
                    "o-", label=f"{name}: found dim {res['dim_found']} (E^G: {res['dim_EG']})")
    ax.axhline(hs.rmd_threshold, color="k", ls="--", label="stop threshold")
    ax.set_xlabel(r"dim $E_j$"), ax.set_ylabel("escape RMD"), ax.legend(fontsize=7)
    ax.set_title(f"E^G discovery ({hs.scheme}, {params['teacher']} teacher, N = {hs.N})",
                 fontsize=9)
    return data, fig


EXPERIMENTS = [
    Experiment(
        name="maass-rmd",
        description="RMD between vanilla / random-g DA / FA and RMD to E^G (vanilla from SI "
                    "init) vs N for the arbitrary, WI and SI teachers (reference C2 "
                    "experiment; claims M1c, M1d)",
        fn=run_rmd,
        defaults={"Ns": [5, 10, 50, 100], "T": 2.0, "replicates": 3, "beta": 1e-6,
                  "teachers": ["arbitrary", "WI", "SI"]},
        quick={"Ns": [5, 10, 50, 100], "T": 2.0},
        full={"Ns": [5, 10, 50, 100, 500, 1000, 5000], "T": 20.0},
        claims=("M1c", "M1d")),
    Experiment(
        name="maass-heuristic",
        description="E^G discovery iterations (reference C2 experiment, dim E^G = 2; C3 on "
                    "3x3 parameters, circulants, dim 3) (claim M1e)",
        fn=run_heuristic,
        defaults={"N": 100, "T": 5.0, "scheme": "da_orbit", "teacher": "WI",
                  "rmd_threshold": 0.01, "eigen_threshold": 1e-3, "max_iter": 6},
        quick={"N": 100, "T": 5.0},
        full={"N": 500, "T": 10.0},
        claims=("M1e",)),
]
