"""Unit conventions of the sources and of the known reproductions, as exact conversions
(docs/conventions-mapping.md).

Hajjar & Chizat (2023), Figure 3 and the d = 40 sweep.  The suite fixes the data law
rho = N(0, I_d / d) (E|x|^2 = 1, MATH.md H.1); the authors' code draws rho = N(0, I_d)
(E|x|^2 = d).  The predictor and the target |x_H| are 1-homogeneous in x, so with
E|x|^2 = s the population loss is s times the suite's, the gradient field is s times the
suite's, and a gradient flow (or GD) run for time t at data scale s is the suite's run for
time s t:

    t_suite = s t,   step_suite = s step,   s = d in the authors' convention,

i.e. t_authors = t_suite / d.

Maass Martinez & Fontbona (2024), the reference C_2 experiment.  The suite's loss is
l(y, y') = |y - y'|^2 / 2; the third-party reproduction (the ``Dola`` repository) uses
|y - y'|^2, twice the suite's gradient.  Its noisy SGD step
    theta <- theta - (alpha_R / N) (2 J^T (Phi - y) + tau_R grad r) + sqrt(2 beta_R alpha_R / N) xi
is the suite's step (numerics.equivariant.train) with
    alpha = 2 alpha_R,  tau = tau_R / 2,  beta = beta_R / 2
(same data term, same penalty term, same noise variance).
"""
from __future__ import annotations

import math

from numerics.validation import require_choice, require_positive_int

__all__ = ["TIME_UNITS", "LOSS_CONVENTIONS", "hajjar_data_second_moment",
           "hajjar_step_to_suite", "hajjar_time_from_suite", "reproduction_sgd_to_suite",
           "suite_sgd_to_reproduction"]

#: "paper": the authors' data rho = N(0, I_d) (E|x|^2 = d); "suite": rho = N(0, I_d / d)
TIME_UNITS = ("paper", "suite")
#: "reproduction": loss |y - y'|^2 (the Dola code); "suite": |y - y'|^2 / 2
LOSS_CONVENTIONS = ("reproduction", "suite")


def hajjar_data_second_moment(d: int, time_unit: str) -> float:
    """E|x|^2 of the data law of the convention: d for ``paper`` (the authors' code,
    rho = N(0, I_d)), 1 for ``suite`` (rho = N(0, I_d / d))."""
    d = require_positive_int(d, "d (ambient dimension)", minimum=2)
    require_choice(time_unit, "time_unit", TIME_UNITS)
    return float(d) if time_unit == "paper" else 1.0


def hajjar_step_to_suite(step: float, d: int, time_unit: str) -> float:
    """A GD step (or time span) of the convention ``time_unit`` in the suite's units:
    step_suite = E|x|^2 * step."""
    if not (math.isfinite(step) and step > 0):
        raise ValueError(f"step must be positive and finite; got {step!r}")
    return hajjar_data_second_moment(d, time_unit) * float(step)


def hajjar_time_from_suite(t_suite, d: int, time_unit: str):
    """Suite times (array or float) in the units of ``time_unit``: t = t_suite / E|x|^2."""
    return t_suite / hajjar_data_second_moment(d, time_unit)


def _check_sgd(alpha: float, tau: float, beta: float) -> None:
    for name, v in (("alpha", alpha), ("tau", tau), ("beta", beta)):
        if not (math.isfinite(v) and v >= 0) or (name == "alpha" and v == 0):
            raise ValueError(f"{name} must be finite and {'> 0' if name == 'alpha' else '>= 0'}"
                             f"; got {v!r}")


def reproduction_sgd_to_suite(alpha: float, tau: float, beta: float,
                              convention: str = "reproduction") -> tuple[float, float, float]:
    """(alpha, tau, beta) of the loss convention ``convention`` in the suite's convention:
    ``reproduction`` (loss |y - y'|^2) -> (2 alpha, tau / 2, beta / 2); ``suite`` -> as is."""
    require_choice(convention, "loss convention", LOSS_CONVENTIONS)
    _check_sgd(alpha, tau, beta)
    if convention == "suite":
        return float(alpha), float(tau), float(beta)
    return 2.0 * alpha, tau / 2.0, beta / 2.0


def suite_sgd_to_reproduction(alpha: float, tau: float, beta: float) -> tuple[float, float, float]:
    """Inverse of :func:`reproduction_sgd_to_suite`: (alpha / 2, 2 tau, 2 beta)."""
    _check_sgd(alpha, tau, beta)
    return alpha / 2.0, 2.0 * tau, 2.0 * beta
