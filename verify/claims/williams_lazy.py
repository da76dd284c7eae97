"""Claim W2j: Williams et al. (2019), Prop. 4 at alpha(m) = o(m), the lazy regime, as a
width study.  At alpha(m) = sqrt(m), GD in z at the derived kernel time step T(m) h
(derivations/williams_lazy.py) moves each neuron by O(alpha/m) = O(m^-1/2) over a fixed
kernel time (the knots freeze), and the residual on the sample follows GD with the
network's own initial tangent kernel up to O(m^-1/2).  The near miss ``MEAN_FIELD`` runs
the same study at alpha(m) = m (gamma = 1, outside alpha = o(m)): the neurons keep moving
by O(1) and the freeze study's slope is 0."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from numerics import relu1d
from verify.kit import (Claim, Evidence, Outcome, RunContext, Table, combine,
                        compare_derivative, derived_generation, derived_results, fmt,
                        rate_study)

#: the verified run: alpha(m) = m^gamma with gamma = 1/2 (the neural-tangent scaling)
EXACT = 0.5
#: the near miss: alpha(m) = m (the mean-field scaling, gamma = 1)
MEAN_FIELD = 1.0
#: the derived move alpha/m of a neuron over a kernel time at gamma = 1/2 (derivation step
#: "Delta z = 1/sqrt(m)"), and the kernel's O(m^-1/2) Monte Carlo fluctuation
PREDICTED = -0.5
_FREEZE = "the neurons freeze: RMS |z_i(T) - z_i(0)| vs width m (slope vs the derived -1/2)"
_LAZY = ("the residual follows kernel GD with the initial tangent kernel: distance vs width m "
         "(slope vs -1/2)")


def _sample() -> tuple[np.ndarray, np.ndarray]:
    x = np.array([-0.9, -0.5, -0.1, 0.3, 0.6, 0.95])
    return x, np.sin(2.5 * x)


def _tangent_kernel(a, b, c, x, alpha: float) -> np.ndarray:
    """K_m = (1/m) sum_i grad phi_i grad phi_i^T on the sample, from the network's own
    Jacobian J = (1/alpha) grad phi (numerics.relu1d.network_jacobian): K_m = alpha^2/m J J^T."""
    Ja, Jb, Jc = relu1d.network_jacobian(a, b, c, x, alpha)
    return alpha ** 2 / a.size * (Ja @ Ja.T + Jb @ Jb.T + Jc @ Jc.T)


def _one(rng: np.random.Generator, m: int, gamma: float, T: float, h: float, steps: int):
    """One width-m network (uniform (a, b), standard normal c) trained by GD at step T h:
    (the RMS move of the neurons, the distance of the residual to kernel GD, r0, K_m)."""
    x, y = _sample()
    a, b = rng.uniform(-1.0, 1.0, (2, m))
    c = rng.standard_normal(m)
    alpha = float(m) ** gamma
    res = relu1d.gradient_descent(a, b, c, x, y, alpha, eta=T * h, steps=steps,
                                  record_every=steps)
    aT, bT, cT = res.a[-1], res.b[-1], res.c[-1]
    r0 = relu1d.forward(a, b, c, x, alpha) - y
    rT = relu1d.forward(aT, bT, cT, x, alpha) - y
    K = _tangent_kernel(a, b, c, x, alpha)
    lin = np.linalg.matrix_power(np.eye(x.size) - h * K, steps) @ r0
    move = float(np.sqrt(np.mean((aT - a) ** 2 + (bT - b) ** 2 + (cT - c) ** 2)))
    return move, float(np.linalg.norm(rT - lin) / np.sqrt(x.size)), (a, b, c, r0, K)


def _kernel_time(m: int, gamma: float) -> float:
    """The derived kernel time T(m) = alpha(m)^2 / m at alpha(m) = m^gamma."""
    return float(derived_results("W2j")["kernel_time"](m, gamma))


@lru_cache(maxsize=4)
def _study(run: RunContext, gamma: float, generation: int):
    del generation  # part of the cache key: a mutated kernel time is a new study
    widths = run.size("widths")
    seeds, h, steps = run.size("seeds"), run.size("h"), run.size("steps")
    moves = np.zeros((len(widths), seeds))
    dist = np.zeros((len(widths), seeds))
    first = []
    for i, m in enumerate(widths):
        T = _kernel_time(m, gamma)
        for s in range(seeds):
            moves[i, s], dist[i, s], init = _one(run.rng("network", m, s), m, gamma, T, h, steps)
            if s == 0:
                first.append((m, T, init))
    return np.array(widths, float), moves, dist, first


def check(ctx: RunContext, gamma: float) -> Outcome:
    """W2j at alpha(m) = m^gamma (``EXACT`` or the near miss ``MEAN_FIELD``)."""
    w, moves, dist, first = _study(ctx.shared(), float(gamma), derived_generation())
    freeze = rate_study(_FREEZE, w, moves, predicted=PREDICTED)
    lazy = rate_study(_LAZY, w, dist, predicted=PREDICTED)
    x, y = _sample()
    # the kernel time itself: d/du of r0 . r(z - u T(m) grad L) at u = 0 is -r0 . K_m r0
    subs = []
    for m, T, (a, b, c, r0, K) in first:
        alpha = float(m) ** gamma
        _, (ga, gb, gc) = relu1d.loss_and_grad(a, b, c, x, y, alpha)

        def proj(u: float, a=a, b=b, c=c, ga=ga, gb=gb, gc=gc, T=T, alpha=alpha, r0=r0):
            r = relu1d.forward(a - u * T * ga, b - u * T * gb, c - u * T * gc, x, alpha) - y
            return float(r0 @ r)
        subs.append(compare_derivative(
            f"kernel time at m = {m}: d/du r0.r(z - u T(m) grad L) vs -r0.K_m r0", proj,
            lambda _u, r0=r0, K=K: -float(r0 @ K @ r0), [0.0], step=1e-7, rtol=1e-5,
            reason="rounding eps |f| / step ~ 1e-8 of |df|; the kinks crossed within +-2 "
                   "steps (a fraction ~ step of the neurons) bend f by O(step) relative"))
    worst = max(subs, key=lambda s: s.error / s.tolerance)
    table = Table("Width study", ["m", "T(m)", "RMS move (mean over seeds)",
                                  "distance to kernel GD (mean)"],
                  [[int(m), fmt(T), fmt(float(moves[i].mean())), fmt(float(dist[i].mean()))]
                   for i, (m, T, _) in enumerate(first)])
    return combine(f"width-m networks at alpha(m) = m^{gamma:g}, GD at the derived kernel time "
                   "step, vs the frozen-neuron rate and kernel GD with the initial tangent kernel",
                   [freeze.subcheck("99.9% Student-t interval of the per-seed slopes; the "
                                    "move is alpha/m times an O(1) average over the init"),
                    lazy.subcheck("99.9% Student-t interval of the per-seed slopes; kernel "
                                  "drift O(alpha/m) and second-order terms"), worst],
                   tables=[table],
                   artifacts={"freeze": freeze.to_json(), "lazy": lazy.to_json()})


def figures(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.kit import new_figure, rate_study_panel, save_figure
    if "freeze" not in ev.artifacts:
        return []
    fig, axes = new_figure(2, 1, width=4.6)
    rate_study_panel(axes[0], ev.artifacts["freeze"], "RMS move of the neurons")
    rate_study_panel(axes[1], ev.artifacts["lazy"], "distance to kernel GD")
    save_figure(fig, outdir / "W2j_lazy.png")
    return [("W2j_lazy.png", "Lazy regime alpha(m) = sqrt(m): the neurons' move and the "
                             "residual's distance to kernel GD vs width, fitted slopes with "
                             "their 99.9% intervals and the derived -1/2.")]


CLAIMS = [Claim(
    id="W2j", title="Prop. 4 at alpha(m) = o(m): knots freeze, the lazy (kernel) regime",
    source="Williams, Trager, Silva, Panozzo, Zorin, Bruna (NeurIPS 2019), arXiv 1906.07842, "
           "Section 3 (Prop. 4, kernel regime)",
    statement=r"For $\alpha(m) = o(m)$ a neuron moves by $O(\alpha/m)$ over a kernel time "
              r"$T(m) = \alpha^2/m$: at $\alpha = \sqrt m$, GD at step $T(m) h$ for a fixed "
              r"kernel time moves the neurons by $O(m^{-1/2})$ and the residual on the sample "
              r"follows GD with the initial tangent kernel up to $O(m^{-1/2})$.",
    check=check, exact=EXACT, near_miss=MEAN_FIELD,
    sizes={"quick": {"widths": (1024, 2048, 4096, 8192, 16384, 32768, 65536), "seeds": 10,
                     "h": 0.1,
                     "steps": 100},
           "full": {"widths": (1024, 4096, 16384, 65536, 262144, 1048576), "seeds": 10,
                    "h": 0.1,
                    "steps": 100}},
    negative_control_description="the same study at alpha(m) = m (the mean-field scaling, "
                                 "outside alpha = o(m)): the neurons keep moving",
    negative_target=_FREEZE, figures=figures, kind="theorem")]
