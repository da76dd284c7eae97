"""H1l (Hajjar & Chizat 2023, Fig. 2): the derived linearisation phi~''(0; phi), the
Gronwall records of numerics.reduced.track_angles, and the claim with its control."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from derivations.hajjar_figures import K_H, K_PERP, angle_lower_bound, derive_h1l, phi
from derivations.hajjar_reduced import derive_h1g
from numerics import reduced as rd
from verify import claims
from verify.formulas import phi_tilde_dtheta
from verify.studies.hajjar import derived_velocity, phi_table


def _kappa():
    return sp.lambdify((phi, K_H, K_PERP), derive_h1l().results["curvature_at_zero"], "numpy")


@pytest.mark.parametrize("d, d_H", [(3, 2), (10, 2), (30, 5), (7, 6)])
def test_linearisation_matches_finite_differences_of_phi_tilde_dtheta(d: int, d_H: int) -> None:
    ph = np.array([0.0, 0.3, 0.7, 1.1])
    h = 1e-4
    fd = (4 * phi_tilde_dtheta(h, ph, d, d_H) / h - phi_tilde_dtheta(2 * h, ph, d, d_H) / (2 * h)) / 3
    np.testing.assert_allclose(_kappa()(ph, d_H, d - d_H), fd, rtol=1e-7)


def test_linearisation_at_phi_zero_is_minus_e_r_plus() -> None:
    # phi = 0: phi~(theta; 0) = cos(theta) E[R_+], so phi~'' = -E[R_+] (= -1/alpha(d_H))
    from math import gamma, pi, sqrt
    for k in (2, 5, 9):
        e_plus = gamma(k / 2) / (2 * sqrt(pi) * gamma((k + 1) / 2))
        assert _kappa()(0.0, k, 3) == pytest.approx(-e_plus, rel=1e-14)


def test_gronwall_solution_is_verified() -> None:
    assert angle_lower_bound()["residual"] == 0


def test_track_angles_obeys_gronwall_and_validates() -> None:
    d, d_H = 6, 2
    tab = phi_table(d, d_H, 129, 16)
    st0 = rd.initial_state(np.random.default_rng(0), np.random.default_rng(1), 32, d, d_H)
    vel = derived_velocity(derive_h1g())
    kap = _kappa()(tab.phi, d_H, d - d_H)
    tr = np.array([[1.0, 1e-5], [-1.0, 1e-5]])
    run = rd.track_angles(st0, tab, 0.05, 200, velocity=vel, curvature_at_zero=kap, tracers=tr)
    assert np.all(run.min_ratio >= run.gronwall * (1 - 1e-12))
    assert np.all(run.tracer > 0) and np.all(run.plus_off_h > 0)
    np.testing.assert_allclose(np.log(run.tracer[-1] / 1e-5),
                               np.log(run.tracer_linear[-1] / 1e-5), atol=5e-3)
    with pytest.raises(ValueError, match="tracers"):
        rd.track_angles(st0, tab, 0.05, 10, velocity=vel, curvature_at_zero=kap,
                        tracers=np.array([[0.5, 1e-5]]))
    with pytest.raises(ValueError, match="curvature_at_zero"):
        rd.track_angles(st0, tab, 0.05, 10, velocity=vel, curvature_at_zero=kap[:-1], tracers=tr)


@pytest.mark.slow
def test_h1l_passes_and_its_control_fails() -> None:
    for seed in (0, 1, 2):
        assert claims.run("H1l", "quick", seed).passed
    ev = claims.run("H1l", "quick", 0, negative_control=True)
    assert not ev.passed


def test_crossing_time_interpolates_and_reports_never() -> None:
    from verify.claims.hajjar_reduced import crossing_time
    t = np.linspace(0.0, 10.0, 11)
    run = rd.ReducedRun(t, t, 0.5 + 0.1 * t, t, t, t, [], None, np.array([]))
    assert crossing_time(run, 0.87) == pytest.approx(3.7, abs=1e-12)
    assert np.isnan(crossing_time(run, 2.0))


def test_quantile_state_is_the_initial_law() -> None:
    from scipy import stats
    from verify.claims.hajjar_reduced import quantile_state
    st = quantile_state(2000, 10, 2)
    assert rd.masses(st) == pytest.approx((0.5, 0.5))   # as numerics.reduced.initial_state
    u = np.cos(st.theta[st.eps > 0]) ** 2     # |u_H|^2 ~ Beta(d_H/2, (d - d_H)/2)
    assert stats.kstest(u, stats.beta(1, 4).cdf).statistic < 1e-3
