"""Hajjar & Chizat derivations and formulas: the balance law, the odd-target closed ODE
(time-to-reach, rate), the phi~ closed forms vs the quadrature, best_linear_approximator,
and invariance properties of symmetrized particle systems (Hypothesis)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st
from scipy.integrate import solve_ivp

from derivations import hajjar as dh
from derivations import hajjar_reduced as dhr
from numerics import twolayer as tl


def test_balance_law_cases():
    law = dh.balance_law(1)
    assert tuple(law.integrand) == (0, 0) and tuple(law.euler_identity) == (0, 0)
    law2 = dh.balance_law(2)
    assert tuple(law2.integrand) == (0, 0)
    assert any(sp.simplify(e) != 0 for e in law2.wrong_integrand)


_ODD = dh.odd_target_dynamics(3)
_S = dh.ODD


def test_odd_target_identities():
    odd = _ODD
    for e in (odd.relu_difference, odd.step_sum, odd.pair_predictor):
        assert tuple(e) == (0, 0)
    assert all(e == 0 for e in odd.activation_free)
    assert odd.antiderivative_check == 0 and odd.ray["off_ray"] == 0
    # the derived moment ODE has the matrix form (1/4)(M + A I) g, g w^T + w g^T, 2 w.g
    w, M, A, g = dh.moment_symbols(3)
    assert sp.simplify(odd.ode_w - (M + A * sp.eye(3)) * g / 4) == sp.zeros(3, 1)
    assert sp.simplify(odd.ode_M - (g * w.T + w * g.T)) == sp.zeros(3, 3)
    assert sp.simplify(odd.ode_A - 2 * (w.T * g)[0]) == 0


@given(st.floats(0.1, 5), st.floats(0.01, 1), st.floats(0.01, 4))
def test_time_to_reach_and_its_inverse_solve_the_scalar_ode(V, v, q):
    o = _ODD
    sub = {_S["V"]: V, _S["v"]: v, _S["q"]: q}
    t_of_s = sp.lambdify(_S["s"], o.time_to_reach.subs(sub))
    u_of_t = sp.lambdify(_S["t"], o.remaining.subs(sub))
    assert abs(t_of_s(1e-14)) < 1e-9
    sol = solve_ivp(lambda t, s: [0.25 * v * math.sqrt(V ** 2 + 16 * q * s[0] ** 2) * (1 - s[0])],
                    (0, 5.0), [0.0], rtol=1e-11, atol=1e-13)
    s_end = float(sol.y[0, -1])
    assert abs(t_of_s(s_end) - 5.0) < 1e-6 * max(1.0, 1 / (1 - s_end))
    assert abs((1 - u_of_t(5.0)) - s_end) < 1e-8
    rate = float(o.rate_inf.subs(sub))
    assert rate >= V * v / 4 * (1 - 1e-12)


def test_s_of_t_is_robust_as_s_tends_to_one():
    """Regression: s(t) by root finding crashed once 1 - s(t) < 1e-15 (odd-target with
    steps=2000); the closed-form inverse gives 1 - s -> 0 and never raises."""
    from verify import derived
    from verify.studies.hajjar import derived_s_of_t
    s_of_t, _ = derived_s_of_t(derived.derivation("H1c"), 1.2, 0.2, 0.6)
    vals = [s_of_t(t) for t in (0.0, 1.0, 50.0, 200.0, 1e3, 1e5, 1e300)]
    assert vals[0] == 0.0 and all(0 <= x <= 1 for x in vals)
    assert np.all(np.diff(vals) >= 0) and vals[-1] == 1.0
    rate = 0.2 * math.sqrt(1.44 + 16 * 0.6) / 4
    # asymptotically 1 - s(t) ~ C exp(-rate t)
    assert abs(math.log((1 - s_of_t(150.0)) / (1 - s_of_t(100.0))) / 50 + rate) < 1e-6


def test_odd_target_is_odd_and_its_population_w_star_is_derived():
    """The target has one definition (SymPy, lambdified for numpy); its population w* is
    derived from it (Fubini, Gaussian integrals) and agrees with the product half-normal
    quadrature of the definition, which is exact for its piecewise polynomials."""
    from numerics.gaussian_orthants import gaussian_first_moment
    from verify import derived
    from verify.studies.hajjar import h1c_population, h1c_target
    X = np.random.default_rng(0).standard_normal((50, 5))
    assert np.array_equal(h1c_target(-X), -h1c_target(X))
    w = h1c_population(dh.H1C_DIM)
    assert np.array_equal(w, [float(e) for e in derived.results("H1c")["w_star_population"]])
    for d in (3, 4, dh.H1C_DIM):
        w_quad = d * gaussian_first_moment(h1c_target, d, 3, var=1.0 / d)
        assert np.abs(w_quad - h1c_population(d)).max() < 1e-13
    with pytest.raises(ValueError, match="d >= 3"):
        h1c_target(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="h1c_population: d"):
        h1c_population(2)


def test_gaussian_mean_against_the_quadrature_and_refuses_coupled_factors():
    """gaussian_mean (SymPy, from the definition) vs the exact product quadrature on a
    separable odd-times-coordinate integrand with |x| and cubic terms."""
    from numerics.gaussian_orthants import gaussian_first_moment
    xs = sp.symbols("x1:4", real=True)
    f = 3 * xs[0] ** 3 * sp.Abs(xs[2]) - xs[1] * xs[0] ** 2 + sp.Rational(1, 2) * xs[1]
    v = sp.Rational(1, 3)
    w_sym = np.array([float(dh.gaussian_mean(f * x, xs, v) / v) for x in xs])
    fn = sp.lambdify(xs, f, "numpy")
    w_quad = gaussian_first_moment(lambda X: fn(*X.T), 3, 4, var=1 / 3) / (1 / 3)
    assert np.abs(w_sym - w_quad).max() < 1e-13
    with pytest.raises(ValueError, match="couples coordinates"):
        dh.gaussian_mean(sp.Abs(xs[0] + xs[1]), xs, v)


def test_h1c_particles_and_sample():
    """The initial system shared by the claim and the ``odd-target`` experiment:
    pair-closed particles (w(0) = 0, sum b b^T = 4 n_frames I), a symmetric whitened
    sample (E_n[x x^T] = I/d), the target's values; refused sizes are named."""
    from verify.studies.hajjar import h1c_particles_and_sample, h1c_target
    rng = np.random.default_rng
    a, B, X, Y = h1c_particles_and_sample(rng(1), rng(2), 4, 3, 20)
    assert a.shape == (48,) and B.shape == (48, 4) and X.shape == (40, 4)
    assert np.abs(a @ B).max() < 1e-14
    assert np.abs(B.T @ B - 12 * np.eye(4)).max() < 1e-13
    assert np.array_equal(X[20:], -X[:20])
    assert np.abs(X.T @ X / 40 - np.eye(4) / 4).max() < 1e-15
    assert np.array_equal(Y, h1c_target(X))
    again = h1c_particles_and_sample(rng(1), rng(2), 4, 3, 20)
    assert all(np.array_equal(u, v) for u, v in zip((a, B, X, Y), again))
    with pytest.raises(ValueError, match=r"n_half .* at least d"):
        h1c_particles_and_sample(rng(1), rng(2), 4, 3, 3)
    with pytest.raises(ValueError, match=r"d \(dimension"):
        h1c_particles_and_sample(rng(1), rng(2), 2, 3, 20)
    with pytest.raises(ValueError, match=r"n_frames .* too large"):
        h1c_particles_and_sample(rng(1), rng(2), 5, 10 ** 9, 20)
    with pytest.raises(TypeError, match="rng_data"):
        h1c_particles_and_sample(rng(1), 2, 5, 3, 20)


def test_h1c_run_shared_by_check_and_control():
    """One reference run per (claim, profile, seed): cached on the context with the
    control flag cleared, never on bare strings."""
    from verify.claims.hajjar_odd import _h1c_run
    from verify.claims import get
    from verify.kit import RunContext
    sizes = tuple(get("H1c").sizes["quick"].items())
    check = RunContext("H1c", "quick", 3, size_items=sizes)
    control = RunContext("H1c", "quick", 3, negative_control=True, size_items=sizes)
    assert _h1c_run(check, 0.1) is _h1c_run(control, 0.1)


def test_hajjar_claims_use_the_kit_and_the_run_streams():
    """One claim shape: the Hajjar claim modules import the public kit (never the claims
    core) and draw every random number from the run's context."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "verify" / "claims"
    for path in sorted(root.glob("hajjar*.py")):
        src = path.read_text()
        assert "verify.claims._core" not in src and "verify.claims._helpers" not in src, path
        assert "default_rng" not in src and "make_rng" not in src, path


def test_odd_target_experiment_long_run():
    """``experiment odd-target --set steps=2000`` used to crash in brentq."""
    from verify.experiments.hajjar import _odd_target
    data, _ = _odd_target({"d": 5, "m": 40, "n": 200, "eta": 0.1, "steps": 2000}, "quick", 0)
    assert np.all(np.isfinite(data["distance_infinite_width"]))


def test_phi_closed_forms_match_quadrature():
    from verify.formulas import phi_tilde
    k = sp.Symbol("k", positive=True, integer=True)
    mean = sp.gamma(k / 2) / (2 * sp.sqrt(sp.pi) * sp.gamma((k + 1) / 2))
    forms = dhr.phi_tilde_closed_forms(mean, k)
    TH, PH = np.meshgrid(np.linspace(0, np.pi / 2, 13), np.linspace(0, np.pi / 2, 11))
    with np.errstate(all="ignore"):
        for (d, d_H), e in forms.exact.items():
            f = sp.lambdify((dh.theta, dh.phi), e, "numpy")
            assert np.nanmax(np.abs(f(TH, PH) - phi_tilde(TH, PH, d, d_H))) < 1e-13


def test_best_linear_approximator():
    from verify.formulas import best_linear_approximator
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4))
    Y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + np.sin(X[:, 0])
    ref = np.linalg.lstsq(X, Y, rcond=None)[0]
    assert np.allclose(best_linear_approximator(X, Y), ref, atol=1e-12)
    with pytest.raises(ValueError, match="singular"):
        best_linear_approximator(np.ones((5, 2)), np.ones(5))
    with pytest.raises(ValueError, match="rows"):
        best_linear_approximator(X, Y[:-1])


def test_phi_tilde_formula_object():
    from verify.formulas import phi_tilde
    assert abs(phi_tilde(0.0, 0.0, 30, 5) - 3 / 16) < 1e-14
    assert phi_tilde.claim == "H1e" and set(phi_tilde.expr) >= {"at_zero", "at_half_pi", "exact",
                                                               "inner"}
    assert abs(float(phi_tilde.mpmath(0.4, 0.6, 4, 2, dps=15)) - phi_tilde(0.4, 0.6, 4, 2)) < 1e-12
    with pytest.raises(ValueError, match="d_H must be < d"):
        phi_tilde(0.1, 0.1, 3, 3)


def _householder(v: np.ndarray) -> np.ndarray:
    v = v / np.linalg.norm(v)
    return np.eye(v.size) - 2 * np.outer(v, v)


@given(st.integers(0, 2 ** 31), st.integers(2, 6), st.integers(1, 12))
def test_reflection_closed_particles_give_invariant_predictor(seed, d, m):
    rng = np.random.default_rng(seed)
    T = _householder(rng.standard_normal(d))
    a, B = tl.orbit_particles(rng.standard_normal(m), rng.standard_normal((m, d)), np.array([np.eye(d), T]))
    X = rng.standard_normal((7, d))
    assert np.allclose(tl.forward(a, B, X @ T.T), tl.forward(a, B, X), atol=1e-13)


@given(st.integers(0, 2 ** 31), st.integers(1, 6), st.integers(1, 10))
def test_odd_closed_particles_give_linear_predictor(seed, d, m):
    rng = np.random.default_rng(seed)
    a0, B0 = rng.standard_normal(m), rng.standard_normal((m, d))
    a, B = np.concatenate([a0, -a0]), np.concatenate([B0, -B0])
    X = rng.standard_normal((9, d))
    w = 0.5 * (a @ B) / a.size
    assert np.allclose(tl.forward(a, B, X), X @ w, atol=1e-13)


def test_odd_target_rate_formula():
    from verify.formulas import odd_target_rate
    assert abs(odd_target_rate(1.2, 0.2, 1.0) - 0.2 * math.sqrt(1.44 + 16) / 4) < 1e-14


def test_odd_target_rate_range_and_domain():
    from verify.formulas import odd_target_rate
    assert odd_target_rate(1e300, 1.9, 1.9) == pytest.approx(4.75e299, rel=1e-14)
    for args in ((-4, -4, -4), (1, -1, 1), (1, 1, -1)):
        with pytest.raises(ValueError):
            odd_target_rate(*args)
    with pytest.raises(ValueError, match="overflow"):
        odd_target_rate(1e300, 1e300, 1.0)


def test_haar_average_matches_quadrature_of_the_definition():
    from numerics.sphere import relu_affine_mean_mp
    for k in (3, 4):
        expr, y, z = dh.haar_relu_average(k)
        f = sp.lambdify((y, z), expr, ["scipy", "numpy"])
        for yy, zz in [(0.3, 0.5), (-0.2, 0.7), (1.2, 0.4), (-2.0, 1.0)]:
            with np.errstate(invalid="ignore"):  # numpy evaluates every Piecewise branch
                val = float(f(yy, zz))
            assert abs(val - float(relu_affine_mean_mp(k, zz, yy)[0])) < 1e-14


def test_reduced_velocity_field_is_derived():
    r = dhr.reduced_velocity_field()
    eps, c, G, dG = r["symbols"]
    assert sp.simplify(r["dc_dt"] - 2 * eps * c * G) == 0
    assert sp.simplify(r["dtheta_dt"] - eps * dG) == 0 and r["balance"] == 0


def test_best_linear_approximator_normalizes_weights_safely():
    """Regression: subnormal weights were not normalized (1.1667 instead of 1.1071)."""
    from verify.formulas import best_linear_approximator
    X, Y = [[1.0], [2.0], [3.0]], [1.0, 2.0, 3.5]
    ref = best_linear_approximator(X, Y)
    assert abs(ref[0] - 15.5 / 14) < 1e-15
    for w in ([5e-324] * 3, [1e308] * 3, [2.0, 2.0, 2.0]):
        assert best_linear_approximator(X, Y, weights=w)[0] == pytest.approx(ref[0], rel=1e-14)
    with pytest.raises(ValueError, match="weights"):
        best_linear_approximator(X, Y, weights=[0.0, 0.0, 0.0])


def test_balance_rates_are_derived_per_sign_case():
    law = dh.balance_law(1)
    a, r, p = (dh.BALANCE[k] for k in "arp")
    assert tuple(law.rate_a2) == (2 * a * p * r, 0) and tuple(law.rate_b2) == (2 * a * p * r, 0)


def test_paper_units_validate_and_name_overflow():
    from numerics import paper_units as pu
    with pytest.raises(ValueError, match="overflow"):
        pu.hajjar_step_to_suite(1e308, 10, "paper")
    with pytest.raises(TypeError, match="step"):
        pu.hajjar_step_to_suite("1", 10, "paper")
    with pytest.raises(ValueError, match="t_suite"):
        pu.hajjar_time_from_suite(-1.0, 10, "paper")
    assert pu.hajjar_time_from_suite(30.0, 30, "paper") == 1.0
    with pytest.raises(ValueError, match="overflow"):
        pu.reproduction_sgd_to_suite(1e308, 1.0, 1.0)
    with pytest.raises(ValueError, match="overflow"):
        pu.suite_sgd_to_reproduction(1.0, 1e308, 1.0)
    with pytest.raises(TypeError, match="tau"):
        pu.suite_sgd_to_reproduction(1.0, None, 1.0)


def test_h1a_tolerance_does_not_depend_on_the_derivation(monkeypatch):
    """H1a's finite-difference tolerance comes from the definitions only: a mutated
    derivation (the integrand of d/dt(a^2 - |b|^2) perturbed by 1e-2) fails it without
    widening it."""
    from derivations.base import Derivation
    from verify import derived
    from verify.claims import get
    claim = get("H1a")
    der = derived.derivation("H1a")
    pos, neg = der.results["integrand"]
    mutant = Derivation(der.steps, {**der.results,
                                    "integrand": (pos * 1.01 + 0.01, neg * 1.01 + 0.01)})

    def fd(evidence):
        return next(s for s in evidence.details["subchecks"]
                    if s["name"].startswith("derived d/dt("))
    from hypothesis import strategies as st
    from verify.claims import hajjar
    # every drawn instance is the pinned one: both runs measure the same instance
    monkeypatch.setattr(hajjar, "_h1a_instances", lambda: st.just((5, 2, 12, 0)))
    exact = fd(claim.run("quick", 0, examples=1))
    with derived.overridden("H1a", mutant):
        mutated = fd(claim.run("quick", 0, examples=1))
    assert exact["passed"] and not mutated["passed"]
    assert mutated["error"] > mutated["tolerance"] == exact["tolerance"]
