"""``hajjar-alpha-table``: the authors' d = 40 sweep of the tau+ mass over alpha(d_H)
(Hajjar & Chizat 2023, the d_H-dependence accompanying Figure 3; claims H1f, H1g).

For each d_H the Figure-3 weight-position simulation (numerics.reduced) runs at the
authors' settings (m = 1024, step 5e-3 in their units, i.e. data x ~ N(0, I_d)) and the
final masses tau+([0, pi/2]), tau-([0, pi/2]) are compared with alpha(d_H) (H1f) and
with the authors' printed numbers.

Horizon: 2000 steps (t = 10 in their units).  The notebook's settings cell reads
n_steps = 20000 (with 2000 among the commented-out values), but the printed d = 40 lists
are those of t = 10: at t = 10 our tau- masses agree with theirs to 3 % for every d_H
tested, at t = 100 they are 1.5-3 times larger (the tau- mass climbs back after t*);
``--set steps=20000`` runs the t = 100 variant.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from numerics.paper_units import HAJJAR_ALPHA_TABLE_PUBLISHED
from verify.experiments import Experiment, Setting

__all__ = ["EXPERIMENTS", "AUTHORS_ALPHA_TABLE"]

AUTHORS_ALPHA_TABLE = HAJJAR_ALPHA_TABLE_PUBLISHED


def _authors_row(d_H: int) -> dict[str, float] | None:
    a = AUTHORS_ALPHA_TABLE
    if d_H not in a["d_H"]:
        return None
    i = a["d_H"].index(d_H)
    return {"plus_mass": a["plus_mass"][i], "minus_mass": a["minus_mass"][i],
            "alpha_printed": a["alpha"][i], "ratio": a["plus_mass"][i] / a["alpha"][i]}


def run_alpha_table(params: dict[str, Any], profile: str, seed: int):
    from verify.studies.hajjar import alpha_by_quadrature
    from verify.experiments.hajjar import _reduced_run
    from verify.plotting import new_figure
    d = int(params["d"])
    d_Hs = sorted({int(k) for k in params["d_Hs"]})
    if not d_Hs or d_Hs[0] < 1 or d_Hs[-1] >= d:
        raise ValueError(f"d_Hs must lie in 1..d-1 = 1..{d - 1}; got {params['d_Hs']}")
    rows = []
    for d_H in d_Hs:
        p = {**params, "d_H": d_H}
        run, s2, _ = _reduced_run(p, seed, f"hajjar-alpha-table-{d_H}", n_records=200)
        alpha = alpha_by_quadrature(d_H)
        row = {"d_H": d_H, "alpha": alpha, "plus_mass": float(run.plus_mass[-1]),
               "minus_mass": float(run.minus_mass[-1]),
               "ratio": float(run.plus_mass[-1]) / alpha, "t_end": float(run.times[-1] / s2)}
        auth = _authors_row(d_H) if d == AUTHORS_ALPHA_TABLE["d"] else None
        if auth is not None:
            row["authors"] = auth
            row["relative_difference_plus"] = row["plus_mass"] / auth["plus_mass"] - 1
            row["relative_difference_minus"] = row["minus_mass"] / auth["minus_mass"] - 1
        rows.append(row)
    ratios = np.array([r["ratio"] for r in rows])
    diffs = np.diff(ratios)
    data: dict[str, Any] = {
        "d": d, "time_unit": params["time_unit"], "t_end": rows[0]["t_end"], "rows": rows,
        "d_Hs": d_Hs, "ratios": ratios,
        "ratios_decreasing": bool(np.all(diffs < 0)),
        "largest_increase_between_neighbours": float(diffs.max()) if diffs.size else 0.0,
        "ratio_minus_one_at_largest_d_H": float(ratios[-1] - 1),
        "ratio_minus_one_at_smallest_d_H": float(ratios[0] - 1),
        "authors_source": AUTHORS_ALPHA_TABLE["source"],
        "authors_ratios": [r["authors"]["ratio"] for r in rows if "authors" in r]}
    fig, ax = new_figure(2, 1, width=4.6)
    ax[0].plot(d_Hs, ratios, "o-", label=f"ours (m = {params['m']}, t = {rows[0]['t_end']:g})")
    a = AUTHORS_ALPHA_TABLE
    if d == a["d"]:
        ax[0].plot(a["d_H"], np.array(a["plus_mass"]) / np.array(a["alpha"]), "x--",
                   label="authors' published run")
    ax[0].axhline(1.0, color="k", lw=0.8, ls=":")
    ax[0].set_xlabel(r"$d_H$"), ax[0].set_ylabel(r"$\tau^+$ mass $/\ \alpha(d_H)$")
    ax[0].legend(fontsize=7), ax[0].set_title(f"d = {d}", fontsize=9)
    ax[1].semilogy(d_Hs, [r["minus_mass"] for r in rows], "o-", label=r"$\tau^-$ mass, ours")
    if d == a["d"]:
        ax[1].semilogy(a["d_H"], a["minus_mass"], "x--", label=r"$\tau^-$ mass, authors")
    ax[1].set_xlabel(r"$d_H$"), ax[1].legend(fontsize=7)
    return data, fig


EXPERIMENTS = [
    Experiment(
        name="hajjar-alpha-table",
        description="The authors' d = 40 sweep: tau+ mass / alpha(d_H) and the tau- mass at "
                    "t = 10 (their units; their printed lists are at t = 10) for d_H = "
                    "2..35, beside their printed numbers (claims H1f, H1g)",
        fn=run_alpha_table,
        defaults={"d": 40, "d_Hs": [2, 5, 10, 15, 18, 20, 25, 30, 33, 35], "m": 1024,
                  "step": 5e-3, "steps": 2000, "n_theta": 513, "n_phi": 48,
                  "time_unit": "paper"},
        quick={"d_Hs": [2, 10, 35], "m": 128, "n_theta": 129, "n_phi": 24},
        claims=("H1f", "H1g"),
        settings={"time_unit": Setting("str", "paper", choices=("paper", "suite")),
                  "d_Hs": Setting("int list", [2, 5, 10], lo=1, hi=10 ** 4, max_len=200,
                                  doc="dimensions of H, each < d")}),
]
