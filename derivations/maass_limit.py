"""Maass Martinez & Fontbona (2024), main theorem (claim M1f): the time scale of noisy SGD
against its mean-field limit.

One step of the noisy SGD of docs/conventions.md section 3 moves a particle by
Delta theta = -s (V(theta) + tau grad r(theta)) + sqrt(2 beta s) xi, s = alpha / N, where
V is the (minibatch) mean-field velocity grad_z sigma_*^T grad l and xi ~ N(0, I).  The
Euler-Maruyama step of the McKean-Vlasov SDE
d theta = -(V_mu(theta) + tau grad r(theta)) dt + sqrt(2 beta) dW over a time dt has mean
-(V + tau grad r) dt and covariance 2 beta dt I; matching the SGD step's mean (the
minibatch gradient is unbiased) and covariance gives one and the same dt: the flow time
per step is s = alpha / N, for the drift and for the noise."""
from __future__ import annotations

from typing import Callable

import sympy as sp

from derivations.base import Derivation, Step

__all__ = ["DERIVATIONS", "derive_m1f", "n_width", "alpha_sgd"]

n_width = sp.Symbol("N", positive=True)
alpha_sgd = sp.Symbol("alpha", positive=True)


def derive_m1f() -> Derivation:
    V, tau, beta, dt, g = sp.symbols("V tau beta dt g_r", positive=True)
    s = alpha_sgd / n_width
    sgd_mean, sgd_var = -s * (V + tau * g), 2 * beta * s      # one SGD step, per coordinate
    sde_mean, sde_var = -(V + tau * g) * dt, 2 * beta * dt     # Euler-Maruyama over dt
    dt_drift = sp.solve(sp.Eq(sgd_mean, sde_mean), dt)
    dt_noise = sp.solve(sp.Eq(sgd_var, sde_var), dt)
    if len(dt_drift) != 1 or dt_drift != dt_noise:
        raise ArithmeticError(f"M1f: drift and noise give different times {dt_drift}, {dt_noise}")
    per_step = sp.simplify(dt_drift[0])
    return Derivation(steps=[
        Step("One SGD step at $s = \\alpha/N$: mean and variance per coordinate",
             sp.Tuple(sgd_mean, sgd_var)),
        Step("The Euler-Maruyama step of $d\\theta = -(V_\\mu + \\tau\\nabla r)dt + "
             "\\sqrt{2\\beta}\\,dW$ over $dt$:", sp.Tuple(sde_mean, sde_var)),
        Step("Matching the means and the variances gives the same flow time per step:",
             per_step, lhs="dt"),
        Step("so the width-$N$ SGD after $k$ steps is the limit flow at time $k\\alpha/N$; "
             "the fluctuations of the empirical measure (initial draw, minibatches, noise) "
             "are $O(N^{-1/2})$.  At $\\beta = 0$ the limit is the push-forward of $\\mu_0$ "
             "by the flow of $-(V_\\mu + \\tau\\nabla r)$ (deterministic transport)."),
    ], results={"time_per_step": per_step})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"M1f": derive_m1f}
