"""Experiment ``williams-fig4`` (Williams et al. 2019, Figure 4; claim W3f): train only the
output layer c (alpha(m) = 1, c(0) = 0, GD run to convergence) on m i.i.d. uniform-init
random features for the 10-point square wave, and measure the sup-distance on [-1, 1] to
the derived kernel interpolant as m grows (log-log plot, fitted rate)."""
from __future__ import annotations

from typing import Any

import numpy as np

from verify.kit import loglog_slope
from verify.experiments import Experiment

__all__ = ["EXPERIMENTS"]


def fig4(params: dict[str, Any], profile: str, seed: int) -> tuple[dict[str, Any], Any]:
    from numerics import kernels as nk
    from numerics.rng import make_rng
    from verify import formulas as F
    from verify.studies.williams import fig4_data
    from verify.plotting import new_figure

    FIG4_X, FIG4_Y = fig4_data()
    ms = [int(m) for m in params["m"]]
    reps = int(params["replicates"])
    init = str(params["init"])
    if reps < 1 or any(m < 1 for m in ms):
        raise ValueError("m entries and replicates must be positive integers")
    grid = np.linspace(-1, 1, int(params["grid"]))
    f_inf = F.kernel_interpolant(FIG4_X, FIG4_Y, kernel="rf", init=init)(grid)
    med, spread, examples = [], [], {}
    for m in ms:
        d = []
        for r in range(reps):
            a, b = nk.sample_init(make_rng(seed, "williams-fig4", m, r), m, init)
            fit = nk.fit_output_layer(a, b, FIG4_X, FIG4_Y)
            fm = np.concatenate([nk.features(a, b, grid[k:k + 100]) @ fit.c
                                 for k in range(0, grid.size, 100)])
            d.append(float(np.max(np.abs(fm - f_inf))))
            if r == 0:
                examples[m] = fm
        med.append(float(np.median(d)))
        spread.append([float(min(d)), float(max(d))])
    msa = np.array(ms, float)
    sel = msa >= 100
    rate = loglog_slope(msa[sel], np.array(med)[sel]) if sel.sum() >= 2 else float("nan")
    fig, (ax1, ax2) = new_figure(2, 1, width=4.6)
    ax1.loglog(msa, med, "o-", label=f"median sup distance (rate {rate:.2f})")
    ax1.fill_between(msa, [s[0] for s in spread], [s[1] for s in spread], alpha=0.2)
    ax1.loglog(msa, med[0] * (msa / msa[0]) ** -0.5, "k:", label="m^-1/2")
    ax1.set_xlabel("m"), ax1.set_ylabel("sup_[-1,1] |f_m - f_kernel|"), ax1.legend(fontsize=7)
    for m, f in examples.items():
        ax2.plot(grid, f, lw=0.8, label=f"m = {m}")
    ax2.plot(grid, f_inf, "k--", label="kernel interpolant")
    ax2.plot(FIG4_X, FIG4_Y, "ko", ms=3)
    ax2.set_ylim(-3, 3), ax2.legend(fontsize=7)
    data = {"m": ms, "replicates": reps, "init": init, "median_distance": med,
            "min_max_distance": spread, "rate_m_ge_100": rate,
            "x_data": FIG4_X.tolist(), "y_data": FIG4_Y.tolist()}
    return data, fig


EXPERIMENTS = [Experiment(
    name="williams-fig4",
    description="Figure 4: GD on the output layer of m random ReLU features converges to the "
                "kernel (cubic-spline) interpolant; sup-distance vs m, fitted rate",
    fn=fig4,
    defaults={"m": [10, 100, 1000, 10000, 100000], "replicates": 5, "init": "uniform", "grid": 801},
    quick={"m": [10, 100, 1000, 10000], "replicates": 3},
    full={"m": [10, 100, 1000, 10000, 100000], "replicates": 7},
    claims=("W3f",),
    choices={"init": ("uniform", "gaussian")})]
