"""Claim W2k (Williams et al. 2019, Figure 2): the derived rates of the figure's two ends
against a direct high-precision evaluation of the W2c metric, the clustering statistic
``numerics.relu1d.sample_line_distance``, and the claim's check and control."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from derivations import williams_dynamics as D
from derivations.williams_figures import derive_W2k, derive_W2k_parts
from numerics import relu1d
from verify import claims


def _metric(r: float, delta):
    """(G^-1_rr, G^-1_thth) of W2c at 60 digits, from the derived expressions."""
    w = D.derive_W2c()
    args = {D.r: sp.nsimplify(r), D.delta: delta}    # exact arguments: no cancellation
    with mpmath.workdps(60):
        g_rr = mpmath.mpf(str(sp.N(w["g_rr"].subs(args), 60)))
        g_tt = mpmath.mpf(str(sp.N(w["g_thth"].subs(args), 60)))
    return g_rr, g_tt


def _loglog(f, d1: float, d2: float) -> float:
    with mpmath.workdps(60):
        return float(mpmath.log(f(d2) / f(d1)) / mpmath.log(mpmath.mpf(abs(d2)) / abs(d1)))


@pytest.mark.parametrize("r", [0.3, 1.0, 2.5])
def test_kernel_rate_matches_the_metric(r: float) -> None:
    """log-log slope of G^-1_thth / G^-1_rr at delta = -1e6 .. -1e8 equals the derived rate."""
    rate = float(derive_W2k_parts()["kernel_rate"])

    def ratio(d):
        g_rr, g_tt = _metric(r, sp.Integer(int(d)))
        return g_tt / g_rr
    assert abs(_loglog(ratio, -1e6, -1e8) - rate) < 1e-9


@pytest.mark.parametrize("r", [0.3, 1.0, 2.5])
def test_adaptive_limit_and_rate_match_the_metric(r: float) -> None:
    """G^-1/delta tends to the derived limit metric, and its deviation decays at the
    derived rate (delta = 1e6 .. 1e8, 60 digits)."""
    w = derive_W2k_parts()
    with mpmath.workdps(60):
        lim_rr, lim_tt = (mpmath.mpf(str(sp.N(e.subs(D.r, sp.nsimplify(r)), 60)))
                          for e in w["adaptive_metric"])
    rate = float(w["adaptive_rate"])
    g_rr, g_tt = _metric(r, sp.Integer(10**8))
    assert abs(float(g_rr / 10**8) - lim_rr) < 1e-12 and abs(float(g_tt / 10**8) - lim_tt) < 1e-12
    for k, lim in ((0, lim_rr), (1, lim_tt)):
        def dev(d, k=k, lim=lim):
            with mpmath.workdps(60):
                return abs(_metric(r, sp.Integer(int(d)))[k] / int(d) - lim)
        assert abs(_loglog(dev, 1e6, 1e8) - rate) < 1e-9


def test_anisotropy_increases_from_kernel_to_adaptive() -> None:
    aniso = sp.lambdify((sp.Symbol("r", positive=True), D.delta),
                        derive_W2k_parts()["anisotropy"], "mpmath")
    with mpmath.workdps(40):
        for r in (0.3, 1.0, 2.5):
            vals = [aniso(r, d) for d in (-1e4, -10, -1, 0, 1, 10, 1e4)]
            assert all(b > a for a, b in zip(vals, vals[1:]))
            assert vals[0] < 1e-6 and 1 - vals[-1] < 1e-6


def test_derivation_results_are_what_the_check_reads() -> None:
    res = derive_W2k().results
    assert set(res) == {"kernel_rate", "adaptive_rate", "adaptive_metric"}
    assert res["kernel_rate"] == -2 and res["adaptive_rate"] == -2


def test_sample_line_distance() -> None:
    x = np.array([-0.7, 0.1, 0.8])
    theta = np.array([np.arctan(0.1), np.arctan(0.8) - np.pi, np.arctan(-0.7) + 2 * np.pi, 1.2])
    d = relu1d.sample_line_distance(theta, x)
    assert np.allclose(d[:3], 0.0, atol=1e-15)
    assert d[3] == pytest.approx(1.2 - np.arctan(0.8))
    # 0 exactly when the knot tan(theta) sits at a sample
    rng = np.random.default_rng(0)
    th = rng.uniform(-7, 7, 500)
    dist = relu1d.sample_line_distance(th, x)
    assert np.all((dist >= 0) & (dist <= np.pi / 2))
    knot_gap = np.min(np.abs(np.tan(th)[:, None] - x[None, :]), axis=1)
    assert np.all((knot_gap < 1e-3) <= (dist < 2e-3))


@pytest.mark.parametrize("bad", [np.array([np.nan]), "a", np.zeros((2, 2))])
def test_sample_line_distance_refuses(bad) -> None:
    with pytest.raises((ValueError, TypeError), match="theta"):
        relu1d.sample_line_distance(bad, np.array([0.1]))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_w2k_passes_and_control_fails(seed: int) -> None:
    ev = claims.run("W2k", "quick", seed=seed)
    assert ev.passed, ev.details
    neg = claims.run("W2k", "quick", seed=seed, negative_control=True)
    assert not neg.passed
    failed = [s["name"] for s in neg.details["subchecks"] if not s["passed"]]
    assert any(n.startswith("adaptive end: slope") for n in failed)
