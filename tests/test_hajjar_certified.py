"""The Hajjar certified sub-checks (verify/claims/_hajjar_certified.py): H1a's per-sample
rates, H1d's Haar averages, H1f's Wallis recursion, H1g's limit mass; each proves the
derived object and disproves a near miss; H1g/H1h's reduced field."""
from __future__ import annotations

import pytest
import sympy as sp

pytest.importorskip("flint")

from derivations import hajjar_reduced as dr  # noqa: E402
from derivations.sphere import k as K  # noqa: E402
from numerics import arb_quadrature as aq  # noqa: E402
from verify.kit import RunContext  # noqa: E402
from verify.claims._hajjar_certified import (alpha_recursion_balls, alpha_two_step_ratio,  # noqa: E402
                                             h1a_certified, h1d_certified, limit_mass_certified,
                                             reduced_field_certified)


def test_two_step_ratio_from_the_polar_angle_law() -> None:
    assert sp.simplify(alpha_two_step_ratio() - (K + 1) / K) == 0


@pytest.mark.parametrize("kk", [2, 3, 7, 100, 2001])
def test_recursion_balls_contain_the_quadrature(kk: int) -> None:
    balls = alpha_recursion_balls(2001)
    direct = 1 / aq.positive_part_mean_ball(kk)
    assert balls[kk].overlaps(direct)
    assert float(balls[kk].rad()) <= 1e-30 * float(balls[kk].mid())


@pytest.mark.parametrize("bad", [2, 10 ** 7, 2.5, True])
def test_recursion_balls_validate(bad) -> None:
    with pytest.raises(ValueError, match="k_max"):
        alpha_recursion_balls(bad)


def test_h1a_proves_the_rates_and_disproves_the_relu2_invariant() -> None:
    from derivations.hajjar import balance_law
    law = balance_law(1)
    ctx = RunContext("H1a", "quick", 0)
    res = {"integrand": law.integrand, "rate_a2": law.rate_a2, "rate_b2": law.rate_b2}
    assert h1a_certified(ctx, res, 1, 12).passed
    wrong = h1a_certified(ctx, res, 2, 12)
    assert not wrong.passed and wrong.counterexample["disproved"]
    with pytest.raises(ValueError, match="k"):
        h1a_certified(ctx, res, 0, 12)


def _h1d_results(ks=(2, 3)) -> dict:
    """H1d's derived results for a few k, from derivations.hajjar (not the whole derivation)."""
    from derivations import hajjar as dh
    parts = {k: dh.haar_average_partials(k) for k in ks}
    return {"haar_average": {k: dh.haar_relu_average(k)[0] for k in ks},
            "haar_average_dy": {k: parts[k][0] for k in ks},
            "haar_average_dz": {k: parts[k][1] for k in ks}}


def test_h1d_proves_the_haar_averages_and_disproves_a_perturbed_one() -> None:
    ctx = RunContext("H1d", "quick", 0)
    res = _h1d_results()
    assert h1d_certified(ctx, res, 2).passed
    bad = {k: e * (1 + sp.Rational(1, 10 ** 12)) for k, e in res["haar_average"].items()}
    sc = h1d_certified(ctx, {**res, "haar_average": bad}, 2)
    assert not sc.passed and sc.counterexample["disproved"]


def test_limit_mass_proved_and_one_up_disproved() -> None:
    d_H = dr.D_H   # the paper's alpha(d_H) (Thm 4.3), typed as the test's reference
    mass = 2 * sp.sqrt(sp.pi) * sp.gamma((d_H + 1) / 2) / sp.gamma(d_H / 2)
    assert limit_mass_certified(mass, dr.D_H, [1, 2, 5, 30], 0).passed
    sc = limit_mass_certified(mass, dr.D_H, [1, 2, 5, 30], 1)
    assert not sc.passed and sc.counterexample["disproved"]
    with pytest.raises(ValueError, match="dims"):
        limit_mass_certified(mass, dr.D_H, [], 0)


def test_reduced_field_proved_and_near_misses_disproved() -> None:
    """dc/dt = 2 eps c G, dtheta/dt = eps G' (the derivation) is the polar projection of the
    particle flow; without the 2 (c = |b|^2 differentiated as |b|), or with dtheta/dt scaled
    by c (the 1/rho of theta' = (a / rho) G' dropped), the balls are disjoint."""
    field = dr.reduced_velocity_field()
    res = {"dc_dt": field["dc_dt"], "dtheta_dt": field["dtheta_dt"]}
    eps, c, G, dG = dr.FIELD_SYMBOLS
    assert sp.simplify(res["dc_dt"] - 2 * eps * c * G) == 0
    ctx = RunContext("H1g", "quick", 0)
    assert reduced_field_certified(ctx, res, 6).passed
    for wrong in ({"dc_dt": eps * c * G}, {"dtheta_dt": eps * c * dG}):
        sc = reduced_field_certified(ctx, {**res, **wrong}, 6)
        assert not sc.passed and sc.counterexample["disproved"]
