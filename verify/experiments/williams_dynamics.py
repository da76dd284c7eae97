"""Experiments for Williams et al. (2019), Figures 1 and 2 (claims W2a, W2c, W2h).

- ``williams-fig1``: a network function with its knots, and the particle picture
  |r| d(theta) coloured by sign(r) with the sample lines (u x_j - v = 0).
- ``williams-fig2``: trajectories of the particles for several delta (kernel -> adaptive
  regime), full gradient flow with alpha(m) = m; knots cluster at samples as delta grows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from derivations import williams_dynamics as D
from numerics import relu1d as N
from numerics.rng import make_rng
from verify.experiments import Experiment, Setting
from verify.formulas.williams_dynamics import canonical_from_full, full_from_canonical
from verify.kit import lambdified

__all__ = ["EXPERIMENTS"]


def _data(rng, s):
    x = np.sort(rng.uniform(-1.0, 1.0, s))
    y = 3.0 * (np.abs(x) * 2 - 0.6 + 0.5 * np.cos(5 * x))  # targets larger than the initial f
    return x, y


def _initial_particles(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Signed radii and angles of the initial particles.  |r| is bounded away from 0: for
    delta > 0 a neuron with small |r| has |(a, b)|^2 ~ r^2/delta and rotates at rate
    ~ delta / r^2, which makes the (explicit) flow stiff."""
    r0 = rng.choice([-1.0, 1.0], m) * rng.uniform(0.3, 0.8, m)
    return r0, rng.uniform(-np.pi, np.pi, m)


def _canonical(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r, theta) of full parameters of any shape; a neuron collapsed to (a, b) = (0, 0)
    (possible for delta > 0, then it stays there) gets r = 0 and theta = NaN (not drawn)."""
    nz = np.hypot(A, B) > 0
    r, th = np.zeros(A.shape), np.full(A.shape, np.nan)
    if nz.any():
        r[nz], th[nz], _ = (np.atleast_1d(v) for v in canonical_from_full(A[nz], B[nz], C[nz]))
    return r, th


def fig1(params: dict[str, Any], profile: str, seed: int):
    from verify.plotting import new_figure, particle_picture
    rng = make_rng(seed, "williams-fig1")
    m, s = int(params["m"]), int(params["s"])
    x, y = _data(rng, s)
    r0, t0 = _initial_particles(rng, m)
    a, b, c = full_from_canonical(r0, t0, np.full(m, float(params["delta"])))
    T = float(params["T"])
    fl = N.gradient_flow(a, b, c, x, y, "m", [0.0, T])
    A, B, C = fl.state[-1]
    xs = np.linspace(-1.5, 1.5, 601)
    f = N.forward(A, B, C, xs, "m")
    has = A != 0  # neurons with a knot
    e = N.knots(A[has], B[has])
    r, th = _canonical(A, B, C)
    dl = C**2 - A**2 - B**2
    fig, (ax1, ax2) = new_figure(2, 1, width=4.3, height=3.8)
    ax1.plot(xs, f, "-", label="$f_z$")
    ax1.plot(x, y, "ko", ms=4, label="samples")
    ins = np.abs(e) < 1.5
    ax1.plot(e[ins], N.forward(A, B, C, e[ins], "m"), "x", color="tab:green", label="knots")
    ax1.set_xlabel("x"), ax1.legend(fontsize=7)
    particle_picture(ax2, r, th, x)
    ax2.set_title("particles |r| d(theta) (red r>0, blue r<0); lines u x_j - v = 0", fontsize=7)
    dist = np.min(np.abs(e[:, None] - x[None, :]), axis=1)
    data = {"settings_note": SETTINGS_NOTE, "x": x, "y": y, "knots": e, "r": r, "theta": th, "delta": dl, "T": T,
            "loss": N.loss_and_grad_dense(A, B, C, x, y, "m")[0],
            "fraction_knots_within_1e-3": float(np.mean(dist < 1e-3)),
            "events": len(fl.events), "sliding_pairs": int(fl.sliding.sum())}
    return data, fig


def fig2(params: dict[str, Any], profile: str, seed: int):
    from verify.plotting import new_figure, sample_lines
    rng = make_rng(seed, "williams-fig2")
    m, s = int(params["m"]), int(params["s"])
    x, y = _data(rng, s)
    r0, t0 = _initial_particles(rng, m)
    deltas = [float(d) for d in params["deltas"]]
    T0, n_t = float(params["T0"]), int(params["frames"])
    fig, axes = new_figure(len(deltas), 1, width=3.0, height=3.2)
    axes = np.atleast_1d(axes)
    radial_rate = lambdified("W2c", "g_rr", (D.r, D.delta), modules="numpy")
    rows = []
    for ax, dl in zip(axes, deltas):
        a, b, c = full_from_canonical(r0, t0, np.full(m, dl))
        T = T0 / radial_rate(1.0, dl)
        fl = N.gradient_flow(a, b, c, x, y, "m", np.linspace(0, T, n_t))
        r, th = _canonical(fl.state[:, 0], fl.state[:, 1], fl.state[:, 2])
        R = 1.1 * np.max(np.abs(r))
        sample_lines(ax, x, R)
        U, V = np.abs(r) * np.cos(th), np.abs(r) * np.sin(th)
        for i in range(m):
            ax.plot(U[:, i], V[:, i], "-", color="tab:red" if r[-1, i] > 0 else "tab:blue", lw=0.6)
        ax.plot(U[-1], V[-1], "k.", ms=3)
        A_, B_ = fl.state[-1, 0], fl.state[-1, 1]
        e = N.knots(A_[A_ != 0], B_[A_ != 0])
        frac = float(np.sum(np.min(np.abs(e[:, None] - x[None, :]), axis=1) < 1e-3) / m)
        loss = N.loss_and_grad_dense(*fl.state[-1], x, y, "m")[0]
        ax.set_aspect("equal"), ax.set_title(f"delta = {dl:g}: {frac:.2f} knots at samples", fontsize=7)
        rows.append({"delta": dl, "T": T, "fraction_knots_within_1e-3": frac, "loss": loss,
                     "events": len(fl.events), "sliding_pairs": int(fl.sliding.sum()),
                     "max_dtheta": float(np.nanmax(np.abs(np.angle(np.exp(1j * (th[-1] - th[0])))))),
                     "r": r[-1], "theta": th[-1]})
    return {"settings_note": SETTINGS_NOTE, "x": x, "y": y, "runs": rows}, fig


SETTINGS_NOTE = ("The paper states neither the data, the width m, the initialization nor the "
                 "horizon of Figures 1 and 2 (its text gives only alpha(m) = m and, for Figure 2, "
                 "'different values of delta_i'). Chosen here: s = 6 samples uniform on [-1, 1] "
                 "with a non-monotone target 3 (2|x| - 0.6 + 0.5 cos 5x) (so that residuals change "
                 "sign between neighbours, the situation of Lemma 2), |r| uniform on [0.3, 0.8] "
                 "with random signs and uniform angles (|r| bounded away from 0: for delta > 0 a "
                 "small |r| makes the angular rate ~ delta / r^2 stiff), the exact gradient flow "
                 "(not GD) with located events; Figure 2's horizon T0 / G^-1_rr(1, delta) = "
                 "T0 / sqrt(delta^2 + 4), T0 radial time units at |r| = 1 (the W2c metric), keeps "
                 "the radial progress comparable across delta, as claim W2k does (at the horizon "
                 "T0 / max(1, |delta|) the clustering is not monotone in delta: docs/errata.md W-11).")

EXPERIMENTS = [
    Experiment("williams-fig1", "Williams et al. Fig. 1: network function with knots and the "
               "particle picture |r| d(theta) with sample lines (full flow, alpha = m)",
               fig1, defaults={"m": 40, "s": 6, "delta": 20.0, "T": 30.0},
               quick={"m": 40}, full={"m": 200, "T": 100.0}, claims=("W2a", "W2h"),
               settings={"m": Setting("int", 40, 1, 5000, doc="number of neurons"),
                         "s": Setting("int", 6, 1, 200, doc="number of samples"),
                         "delta": Setting("float", 20.0, -1e6, 1e6, doc="invariant of every neuron"),
                         "T": Setting("float", 30.0, 0.0, 1e4, lo_open=True, doc="horizon")}),
    Experiment("williams-fig2", "Williams et al. Fig. 2: particle trajectories for several delta, "
               "from the kernel (delta << 0) to the adaptive (delta >> 0) regime",
               fig2, defaults={"m": 30, "s": 6, "deltas": [-20.0, -1.0, 0.0, 1.0, 20.0],
                               "T0": 20.0, "frames": 60},
               quick={"m": 30}, full={"m": 100, "T0": 60.0, "frames": 200},
               claims=("W2c", "W2h", "W2k"),
               settings={"m": Setting("int", 30, 1, 2000, doc="number of neurons"),
                         "s": Setting("int", 6, 1, 200, doc="number of samples"),
                         "deltas": Setting("float list", [-20.0, -1.0, 0.0, 1.0, 20.0], -1e6, 1e6,
                                           max_len=12, doc="one panel per delta"),
                         "T0": Setting("float", 20.0, 0.0, 1e4, lo_open=True,
                                       doc="horizon in radial time units at |r| = 1: "
                                           "T = T0 / sqrt(delta^2 + 4)"),
                         "frames": Setting("int", 60, 2, 2000, doc="output times per run")}),
]
