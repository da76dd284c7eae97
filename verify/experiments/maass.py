"""Experiments for Maass Martinez & Fontbona (2024), claims M1c-M1e.

- ``maass-rmd``: the main figure of the reference experiment (as the third-party
  reproduction draws it): RMD^2(nu_T, P_{E^G} # nu_T) to E^G at the end of training, per
  scheme (vanilla, DA = full-orbit augmentation, FA, EA) and width N (log-log), from SI
  and WI initializations, for the arbitrary, WI and SI teachers.  ``teacher=fixed`` uses
  the paper's fixed teachers (Appendix F, with the reproduction's scale 1/2),
  ``teacher=random`` N(0, 1) teachers; ``unit=matrix`` the logistic(z x) unit,
  ``unit=uv`` the paper's (u, v) unit v * s(u . x / 2).  Hyper-parameters are given in
  the convention ``loss_convention`` (``reproduction``: loss |y - y'|^2 as printed there,
  converted by numerics.paper_units; ``suite``: |y - y'|^2 / 2).
  quick: N <= 50, T = 2, 1 replicate; full: N up to 1000, T = 20, 3 replicates.
- ``maass-heuristic``: the E^G discovery iterations for the reference C_2 experiment and
  C_3 acting on 3 x 3 parameters.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from numerics.rng import make_rng
from verify.kit import loglog_slope
from verify.studies.maass import (HeuristicSettings, TrendSettings, heuristic_examples,
                                  heuristic_run, scheme_trend)
from verify.experiments import Experiment, Setting

__all__ = ["EXPERIMENTS", "FIXED_TEACHERS", "SCHEME_NAMES", "fixed_teacher", "setup",
           "sgd_config", "rmd2_to_fixed_space"]

TEACHER_KINDS = ("arbitrary", "WI", "SI")
#: figure label -> numerics.equivariant scheme (DA averages the full orbit, as the
#: reproduction's loss does; ``DA-random`` draws one g per sample)
SCHEME_NAMES = {"vanilla": "vanilla", "DA": "da_orbit", "FA": "fa", "EA": "ea",
                "DA-random": "da_random"}
UNITS = ("matrix", "uv")

#: The fixed teachers of the paper's Appendix F as the reproduction (Kikidu59/Dola,
#: src/teacher.py) writes them, before its scale 1/2: five 2 x 2 matrices (row-major; for
#: the (u, v) unit row 0 is u and row 1 is v) and the coordinates of the SI teacher in the
#: orthonormal basis of E^G (matrix unit: I / sqrt 2, P / sqrt 2; (u, v) unit:
#: ((1, 1), 0) / sqrt 2, (0, (1, 1)) / sqrt 2).
FIXED_TEACHERS = {
    "scale": 0.5,
    "arbitrary": ((-1.0, 0.0, 0.0, 0.5), (0.5, 1.0, 0.0, 1.0), (-0.5, 0.3, 1.0, 0.0),
                  (0.0, -1.0, -0.5, 1.0), (0.7, -0.7, 0.5, 0.7)),
    "SI_coordinates": {"matrix": ((1.0, 0.0), (0.5, 1.0), (-0.5, 0.3), (0.0, -1.0), (0.7, 0.7)),
                       "uv": ((0.8, 0.6), (-0.5, 0.9), (0.7, -0.8), (-0.3, 0.5), (0.6, 0.7))},
    "source": "Kikidu59/Dola, src/teacher.py (the reproduction's reading of Appendix F)",
}


#: declared specs shared by maass-rmd and maass-instability
_COMMON_SETTINGS = {
    "schemes": Setting("str list", ["FA"], choices=tuple(SCHEME_NAMES), max_len=5),
    "unit": Setting("str", "matrix", choices=UNITS),
    "loss_convention": Setting("str", "reproduction", choices=("reproduction", "suite"),
                               doc="convention of alpha, tau, beta (numerics.paper_units)"),
    "alpha": Setting("float", 50.0, lo=0.0, hi=1e6, lo_open=True),
    "tau": Setting("float", 1e-4, lo=0.0, hi=1e3),
    "batch": Setting("int", 20, lo=1, hi=10 ** 5),
}


def setup(unit: str):
    """(group, unit) of the reference experiment: C_2 swapping the coordinates of R^2 with
    the logistic(z x) unit (``matrix``) or the paper's (u, v) unit (``uv``)."""
    from numerics.equivariant import LogisticUnit, UVUnit
    from numerics.groups import c2_swap, c2_swap_uv
    from numerics.validation import require_choice
    require_choice(unit, "unit", UNITS)
    return (c2_swap(), LogisticUnit(2, 2)) if unit == "matrix" else (c2_swap_uv(), UVUnit(2, 2))


def fixed_teacher(kind: str, unit: str, group) -> np.ndarray:
    """The paper's fixed teacher particles (Appendix F, scaled as the reproduction): 5
    arbitrary particles; WI = those and their images (g-major); SI = 5 particles of E^G."""
    from numerics.validation import require_choice
    require_choice(kind, "teacher kind", TEACHER_KINDS)
    sc = FIXED_TEACHERS["scale"]
    if kind == "SI":
        if unit == "matrix":
            e1 = np.array([1.0, 0.0, 0.0, 1.0]) / np.sqrt(2.0)    # I / sqrt 2
            e2 = np.array([0.0, 1.0, 1.0, 0.0]) / np.sqrt(2.0)    # P / sqrt 2
        else:
            e1 = np.array([1.0, 1.0, 0.0, 0.0]) / np.sqrt(2.0)    # u = (1, 1) / sqrt 2
            e2 = np.array([0.0, 0.0, 1.0, 1.0]) / np.sqrt(2.0)    # v = (1, 1) / sqrt 2
        c = sc * np.array(FIXED_TEACHERS["SI_coordinates"][unit])
        return c[:, :1] * e1 + c[:, 1:] * e2
    base = sc * np.array(FIXED_TEACHERS["arbitrary"])
    return base if kind == "arbitrary" else group.act(base).reshape(-1, group.dim_z)


def sgd_config(params: dict[str, Any], steps: int, *, beta: float | None = None):
    """SGDConfig in the suite's convention from alpha, tau, beta given in the convention
    ``params["loss_convention"]`` (numerics.paper_units)."""
    from numerics.equivariant import SGDConfig
    from numerics.paper_units import reproduction_sgd_to_suite
    a, t, b = reproduction_sgd_to_suite(float(params["alpha"]), float(params["tau"]),
                                        float(params["beta"] if beta is None else beta),
                                        str(params["loss_convention"]))
    return SGDConfig(alpha=a, tau=t, beta=b, batch=int(params["batch"]), steps=steps)


def rmd2_to_fixed_space(group, theta: np.ndarray) -> float:
    """RMD^2(nu, P_{E^G} # nu) of the uniform measure on the rows of theta."""
    from verify import formulas
    return float(formulas.rmd(theta, group.project(theta))) ** 2


def _teacher(params: dict[str, Any], kind: str, G, u, seed: int) -> np.ndarray:
    from numerics.equivariant import make_teacher
    if params["teacher"] == "fixed":
        return fixed_teacher(kind, str(params["unit"]), G)
    if params["teacher"] != "random":
        raise ValueError(f"teacher must be 'fixed' or 'random'; got {params['teacher']!r}")
    return make_teacher(kind, u, G, make_rng(seed, "maass-rmd", "teacher", kind))


def _one_run(params, G, u, teacher, init: str, scheme: str, N: int, rep: int, seed: int,
             tag: str) -> float:
    """RMD^2 to E^G after N T noisy SGD steps of ``scheme`` from an ``init`` start."""
    from numerics.equivariant import DivergenceError, init_particles, train
    steps = max(1, int(round(N * float(params["T"]))))
    th0 = init_particles("SI" if init == "SI" else "iid", N, u, G,
                         make_rng(seed, tag, "init", init, N, rep))
    noise = "projected" if (init == "SI" and params["si_noise"] == "projected") else "iid"
    try:
        th, _ = train(u, G, th0, teacher, SCHEME_NAMES[scheme], sgd_config(params, steps),
                      make_rng(seed, tag, "data", N, rep), make_rng(seed, tag, "noise", N, rep),
                      make_rng(seed, tag, "g", N, rep), noise=noise)
    except DivergenceError:
        return float("nan")
    return rmd2_to_fixed_space(G, th)


def run_rmd(params: dict[str, Any], profile: str, seed: int):
    from numerics.validation import require_choice
    from verify.plotting import new_figure
    teachers = [t for t in TEACHER_KINDS if t in params["teachers"]]
    inits = [i for i in ("SI", "WI") if i in params["inits"]]
    schemes = [s for s in SCHEME_NAMES if s in params["schemes"]]
    if not teachers or not inits or not schemes:
        raise ValueError(f"teachers, inits and schemes must name some of {TEACHER_KINDS}, "
                         f"('SI', 'WI') and {tuple(SCHEME_NAMES)}; got {params['teachers']}, "
                         f"{params['inits']}, {params['schemes']}")
    require_choice(params["si_noise"], "si_noise", ("projected", "iid"))
    G, u = setup(str(params["unit"]))
    Ns = [int(n) for n in params["Ns"]]
    reps = int(params["replicates"])
    cfg = sgd_config(params, 1)
    data: dict[str, Any] = {
        "Ns": Ns, "T": float(params["T"]), "replicates": reps, "unit": params["unit"],
        "teacher_choice": params["teacher"], "si_noise": params["si_noise"],
        "sgd_suite_convention": {"alpha": cfg.alpha, "tau": cfg.tau, "beta": cfg.beta},
        "loss_convention": params["loss_convention"],
        "quantity": "RMD^2(nu_T, P_{E^G} # nu_T), mean over replicates (nan: diverged)",
        "rmd2_to_EG": {}, "loglog_slopes": {}, "teachers_used": {}}
    fig, axes = new_figure(len(teachers), len(inits), width=4.0, height=3.2)
    axes = np.asarray(axes).reshape(len(inits), len(teachers))
    for j, tk in enumerate(teachers):
        teacher = _teacher(params, tk, G, u, seed)
        data["teachers_used"][tk] = teacher
        data["rmd2_to_EG"][tk], data["loglog_slopes"][tk] = {}, {}
        for i, init in enumerate(inits):
            res = {}
            for sc in schemes:
                vals = [[_one_run(params, G, u, teacher, init, sc, N, r, seed,
                                  f"maass-rmd-{tk}") for r in range(reps)] for N in Ns]
                res[sc] = [float(np.mean(v)) for v in vals]
            data["rmd2_to_EG"][tk][init] = res
            data["loglog_slopes"][tk][init] = {
                sc: loglog_slope(Ns, v, floor=1e-300) for sc, v in res.items()
                if np.all(np.isfinite(v)) and np.all(np.asarray(v) > 0)}   # no slope of zeros
            ax = axes[i, j]
            for sc, v in res.items():
                ax.loglog(Ns, np.maximum(v, 1e-35), "o-", label=sc)
            ax.set_title(f"{tk} teacher, {init} init", fontsize=9)
            ax.set_xlabel("N"), ax.set_ylabel(r"RMD$^2$ to $E^G$ (0 drawn at $10^{-35}$)"), ax.legend(fontsize=6)
    if params["between_schemes"]:
        # the M1c trend of the claims (their settings: random teachers, the suite's
        # alpha = 50, tau = 1e-4, beta = 1e-6, i.i.d. start): RMD (not squared) between schemes
        s = TrendSettings(Ns=tuple(Ns), T=float(params["T"]), replicates=reps)
        data["rmd_between_schemes_claim_settings"] = {
            tk: scheme_trend(tk, s, make_rng(seed, "maass-rmd", "claim-trend", tk))["rmd"]
            for tk in teachers}
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
        tag = f"exp-heuristic-{name}"
        res = heuristic_run(G, u, str(params["teacher"]), hs, make_rng(seed, tag, "teacher"),
                            make_rng(seed, tag, "heuristic"))
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
        description="Main figure of the reference C2 experiment: RMD^2 to E^G per scheme "
                    "(vanilla, DA, FA, EA) against N, from SI and WI initializations, for "
                    "the arbitrary, WI and SI teachers (fixed Appendix-F or random "
                    "teachers; logistic(zx) or (u, v) unit) (claims M1c, M1d)",
        fn=run_rmd,
        defaults={"Ns": [5, 10, 50, 100, 500, 1000], "T": 20.0, "replicates": 3,
                  "teachers": ["arbitrary", "WI", "SI"], "inits": ["SI", "WI"],
                  "schemes": ["vanilla", "DA", "FA", "EA"], "teacher": "fixed",
                  "unit": "matrix", "alpha": 50.0, "tau": 1e-4, "beta": 1e-6, "batch": 20,
                  "loss_convention": "reproduction", "si_noise": "projected",
                  "between_schemes": False},
        quick={"Ns": [5, 10, 50], "T": 2.0, "replicates": 1},
        claims=("M1c", "M1d"),
        settings=dict(_COMMON_SETTINGS, **{
            "teachers": Setting("str list", ["arbitrary"], choices=TEACHER_KINDS, max_len=3),
            "inits": Setting("str list", ["SI"], choices=("SI", "WI"), max_len=2),
            "teacher": Setting("str", "fixed", choices=("fixed", "random")),
            "si_noise": Setting("str", "projected", choices=("projected", "iid"))})),
    Experiment(
        name="maass-heuristic",
        description="E^G discovery iterations (reference C2 experiment, dim E^G = 2; C3 on "
                    "3x3 parameters, circulants, dim 3) (claim M1e)",
        fn=run_heuristic,
        defaults={"N": 100, "T": 5.0, "scheme": "da_orbit", "teacher": "WI",
                  "rmd_threshold": 0.01, "eigen_threshold": 1e-3, "max_iter": 6},
        quick={"N": 100, "T": 5.0},
        full={"N": 500, "T": 10.0},
        claims=("M1e",),
        choices={"teacher": TEACHER_KINDS, "scheme": ("vanilla", "da_orbit")}),
]
