"""numerics.mckean_vlasov: the 1-D McKean-Vlasov (Fokker-Planck) reference of claim M1f,
checked against the linear unit's exact Gaussian law (an Ornstein-Uhlenbeck process with a
self-consistent mean), at the scheme's order h^2."""
from __future__ import annotations

import numpy as np
import pytest

from numerics import equivariant as eq
from numerics import equivariant_limit as el
from numerics import mckean_vlasov as mv

TAU, BETA, M_STAR, S0 = 0.1, 0.05, 0.8, 0.25


def _linear_setting(nx: int = 6):
    unit = eq.LinearUnit(1, 1)
    x, xw = el.gauss_hermite_product(1, nx, 1.0)
    return unit, x, xw, M_STAR * x


def _exact_law(t: float) -> tuple[float, float]:
    """The linear unit's law N(f(t) M*, c(t)): dm/dt = -(m - M*) - 2 tau m, dc/dt = -4 tau c + 2 beta."""
    r = 1.0 + 2 * TAU
    f = (1.0 - np.exp(-r * t)) / r
    c = S0 ** 2 * np.exp(-4 * TAU * t) + BETA * (1.0 - np.exp(-4 * TAU * t)) / (2 * TAU)
    return f * M_STAR, c


def test_gaussian_cells_are_exact_averages() -> None:
    d = mv.gaussian_cells(6.0, 600, 0.3, 0.7)
    assert abs(d.masses.sum() - 1.0) < 1e-14
    assert abs(d.mean() - 0.3) < 1e-12
    # of the piecewise-constant density: cell averages add h^2/12 to the midpoint moment, the
    # cells' own spread another h^2/12
    assert abs(d.variance() - (0.49 + d.h ** 2 / 6)) < 1e-9


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_flow_matches_the_linear_units_gaussian_law_at_order_two(t: float) -> None:
    unit, x, xw, y = _linear_setting()
    m, c = _exact_law(t)
    errs = []
    for n in (200, 400):
        d = mv.mckean_vlasov_flow(unit, mv.gaussian_cells(4.0, n, 0.0, S0), x, xw, y,
                                  tau=TAU, beta=BETA, t_end=t)[0]
        errs.append(max(abs(d.mean() - m), abs(d.variance() - c)))
    assert errs[1] < 2e-4
    assert 3.0 < errs[0] / errs[1] < 5.0          # second order in h


def test_snapshots_at_times_equal_separate_runs() -> None:
    unit, x, xw, y = _linear_setting()
    d0 = mv.gaussian_cells(4.0, 120, 0.0, S0)
    both = mv.mckean_vlasov_flow(unit, d0, x, xw, y, tau=TAU, beta=BETA, t_end=1.0, times=[0.0, 1.0])
    one = mv.mckean_vlasov_flow(unit, d0, x, xw, y, tau=TAU, beta=BETA, t_end=1.0)[0]
    assert np.array_equal(both[0].rho, d0.rho) and np.array_equal(both[1].rho, one.rho)


def test_gibbs_fixed_point_of_the_linear_unit_is_its_stationary_gaussian() -> None:
    unit, x, xw, y = _linear_setting()
    g = mv.gibbs_fixed_point(unit, 5.0, 1000, x, xw, y, lambda u, z: -(u + TAU * z * z) / BETA)
    m_inf, c_inf = _exact_law(np.inf)
    assert abs(g.mean() - m_inf) < 1e-10
    # point values at the centres: midpoint moments spectrally exact, plus the cells' h^2/12
    assert abs(g.variance() - (c_inf + g.h ** 2 / 12)) < 1e-10


def test_stationary_gap_falls_at_order_two_on_m1f_grids() -> None:
    """The calibration M1f's h^2 study cites: the flow's state at t = 30 against the linear
    unit's exact stationary Gaussian N(M*/(1 + 2 tau), beta/(2 tau)) (tau = 0.25: the width of
    M1f's tanh Gibbs law) on [-5, 5] with 128, 256, 512 cells: observed orders within 0.01
    of 2."""
    from numerics.validation import long_runs
    from scipy.special import erf
    unit, x, xw, y = _linear_setting()
    tau, L = 0.25, 5.0
    m_inf, c_inf = M_STAR / (1 + 2 * tau), BETA / (2 * tau)
    gaps = []
    for n in (128, 256, 512):
        edges = -L + (2 * L / n) * np.arange(n + 1)
        exact = np.diff(0.5 * erf((edges - m_inf) / np.sqrt(2 * c_inf))) / (2 * L / n)
        with long_runs():
            d = mv.mckean_vlasov_flow(unit, mv.gaussian_cells(L, n, 0.0, S0), x, xw, y, tau=tau,
                                      beta=BETA, t_end=30.0)[0]
        gaps.append(d.h * np.abs(d.rho - exact).sum())
    orders = np.log2(np.array(gaps[:-1]) / np.array(gaps[1:]))
    assert np.all(np.abs(orders - 2.0) < 0.01), orders


def test_free_energy_decreases_to_the_gibbs_minimum() -> None:
    unit, x, xw, y = _linear_setting()
    ds = mv.mckean_vlasov_flow(unit, mv.gaussian_cells(4.0, 160, -1.0, 0.4), x, xw, y, tau=0.5,
                               beta=BETA, t_end=12.0, times=[0.0, 1.0, 3.0, 12.0])
    F = [mv.free_energy(unit, d, x, xw, y, tau=0.5, beta=BETA) for d in ds]
    g = mv.gibbs_fixed_point(unit, 4.0, 160, x, xw, y, lambda u, z: -(u + 0.5 * z * z) / BETA)
    F_star = mv.free_energy(unit, g, x, xw, y, tau=0.5, beta=BETA)
    assert all(a > b for a, b in zip(F, F[1:]))
    assert 0 <= F[-1] - F_star < 1e-4


def test_wasserstein1_to_sample_is_the_integral_of_the_cdf_gap() -> None:
    d = mv.gaussian_cells(7.0, 70, 0.2, 0.8)
    s = np.random.default_rng(3).normal(0.2, 0.8, 40)
    z = np.linspace(-7, 7, 2_000_001)
    brute = np.trapezoid(np.abs(np.searchsorted(np.sort(s), z, side="right") / s.size - d.cdf(z)), z)
    assert abs(mv.wasserstein1_to_sample(d, s) - brute) < 1e-5


def test_bad_input_is_refused_with_a_message() -> None:
    unit, x, xw, y = _linear_setting()
    d0 = mv.gaussian_cells(4.0, 100, 0.0, S0)
    with pytest.raises(ValueError, match="dim_z = 1"):
        mv.mckean_vlasov_flow(eq.LinearUnit(2, 2), d0, x, xw, y, tau=TAU, beta=BETA, t_end=1.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        mv.mckean_vlasov_flow(unit, d0, x, xw, y, tau=TAU, beta=0.0, t_end=1.0)
    with pytest.raises(ValueError, match="larger L"):
        mv.gaussian_cells(1.0, 100, 0.0, 1.0)
    with pytest.raises(ValueError, match="larger L"):
        mv.mckean_vlasov_flow(unit, mv.gaussian_cells(2.0, 100, 0.0, 0.2), x, xw, y, tau=0.0,
                              beta=1.0, t_end=2.0)
    with pytest.raises(ValueError, match="long_run=True"):
        mv.mckean_vlasov_flow(unit, mv.gaussian_cells(4.0, 8192, 0.0, S0), x, xw, y, tau=TAU,
                              beta=BETA, t_end=100.0)
    with pytest.raises(ValueError, match="mass 1"):
        mv.CellDensity(4.0, np.ones(8))
    with pytest.raises(TypeError, match="density0"):
        mv.mckean_vlasov_flow(unit, d0.rho, x, xw, y, tau=TAU, beta=BETA, t_end=1.0)
