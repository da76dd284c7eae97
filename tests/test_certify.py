"""Certified enclosures (``verify.certify``, ``numerics.arb_quadrature``, issue "Proofs, not
samples"): the SymPy -> Arb translation, the certified comparator (proof / disproof), the
certified integrals of the definitions, ``.enclose`` and the stated float64 ulp bounds of
every closed-form formula, W3d's NTK reference from its own definition, and the mutation
harness's "disproved"."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from sympy.codegen.cfunctions import log1p
from hypothesis import given, settings
from hypothesis import strategies as st

flint = pytest.importorskip("flint")

from numerics import arb_quadrature as aq  # noqa: E402
from verify import certify, formulas  # noqa: E402
from verify.certify import (CertifiedInstance, UndecidableCondition, arb_function,  # noqa: E402
                            certified_compare, certified_details, enclose)

x, y = sp.symbols("x y", real=True)
EPS = 2.0 ** -52


# ------------------------------------------------------------------ the translator
@pytest.mark.parametrize("expr", [
    sp.Rational(3, 7) * x + sp.pi, sp.sqrt(x**2 + 1), sp.gamma(x / 2 + 1) / sp.gamma(x),
    sp.loggamma(x + 3), sp.atan(x), sp.atan2(y, x), sp.acos(x / 4), sp.asin(x / 4),
    sp.exp(-x**2) * sp.log(x**2 + 2), sp.Abs(x - y), sp.sign(x - y) * y, sp.Min(x, y) + sp.Max(x, 2 * y),
    sp.Piecewise((x**3, x < y), (y - x, True)), x ** sp.Rational(3, 2) + (x + 1) ** -sp.Rational(1, 2),
    sp.Float("0.1", 30) * x + 1, sp.E ** x, log1p(-x ** 2 / 16),
    sp.betainc_regularized(x + 1, y ** 2 + sp.Rational(1, 2), 0, 1 / (x ** 2 + 2)),
    sp.betainc_regularized(x, 3, sp.Rational(1, 8), 1 / (x ** 2 + 2))])
@pytest.mark.parametrize("pt", [(1.5, -0.25), (2.0, 3.0), (3.25, 3.25 + 2 ** -40)])
def test_translation_contains_the_mpmath_value(expr, pt) -> None:
    b = enclose(expr, {x: pt[0], y: pt[1]})
    # SymPy 1.14's lambdify maps betainc_regularized to mpmath's UNregularized betainc
    f = sp.lambdify((x, y), expr, modules=[{"betainc_regularized": lambda p, q, a, b: mpmath.betainc(
        p, q, a, b, regularized=True)}, "mpmath"])
    with mpmath.workdps(60):
        ref = f(mpmath.mpf(pt[0]), mpmath.mpf(pt[1]))
        assert b.contains(flint.arb(mpmath.nstr(ref, 55, strip_zeros=False)).mid()) or \
            abs(float(b.mid()) - float(ref)) <= float(b.rad()) + 1e-50
    assert certify.relative_radius(b) < 1e-30 or float(abs(b).upper()) < 1e-30


def test_piecewise_condition_a_ball_cannot_decide_is_refused() -> None:
    e = sp.Piecewise((1, 3 * x < 1), (2, True))
    assert float(enclose(e, {x: 0.25}).mid()) == 1.0
    with pytest.raises(UndecidableCondition, match="cannot be decided"):
        arb_function(e, (x,))(flint.arb(1) / 3)        # 3 x = 1 +- radius
    with pytest.raises(UndecidableCondition):
        arb_function(sp.sign(x), (x,))(flint.arb(0, 1e-20))
    assert issubclass(UndecidableCondition, ValueError)


def test_unsupported_node_and_bad_arguments() -> None:
    with pytest.raises(TypeError, match="besselj"):
        arb_function(sp.besselj(0, x), (x,))
    with pytest.raises(ValueError, match="free symbols"):
        arb_function(x + y, (x,))
    with pytest.raises(TypeError, match="SymPy expression"):
        arb_function("x + 1", (x,))
    with pytest.raises(TypeError, match="expected 1 values"):
        arb_function(x, (x,))(1.0, 2.0)
    with pytest.raises(ValueError, match="finite"):
        arb_function(x, (x,))(float("nan"))
    with pytest.raises(ValueError, match="prec"):
        enclose(x, {x: 1.0}, prec=3)


# ------------------------------------------------------------------ the comparator
def test_certified_compare_proof_disproof_and_unproven() -> None:
    with certify.working_precision(128):
        _compare_cases()


def _compare_cases() -> None:
    third = flint.arb(1) / 3
    proof = certified_compare("p", [CertifiedInstance("a", third, flint.arb(2) / 6)], reason="r")
    assert proof.ok() and proof.certified == {"instances": 1, "worst_radius": proof.certified["worst_radius"],
                                              "disproved": False}
    wrong = certified_compare("d", [CertifiedInstance("a", third, third * (1 + flint.arb(1e-25)))], reason="r")
    assert not wrong.ok() and wrong.counterexample["disproved"] is True and wrong.error > wrong.tolerance
    wide = certified_compare("w", [CertifiedInstance("a", flint.arb(1, 1e-20), flint.arb(1))], reason="r")
    assert not wide.ok() and wide.counterexample["disproved"] is False
    within = certified_compare("b", [CertifiedInstance("a", third * (1 + flint.arb(1e-33)), third)], bound=1e-32,
                               reason="r")
    assert within.ok()
    assert certified_details([proof, wrong]) == {"instances": 2, "worst_radius": max(
        proof.certified["worst_radius"], wrong.certified["worst_radius"]), "disproved": True}
    with pytest.raises(ValueError, match="reason"):
        certified_compare("p", [CertifiedInstance("a", third, third)], reason=" ")
    with pytest.raises(ValueError, match="no certified"):
        certified_details([])


# -------------------------------------------------------- certified definitions
@pytest.mark.parametrize("init", aq.INITS)
@pytest.mark.parametrize("pt", [(0.5, 1 / 3), (-3.5, 2.5), (1.0, -1.0), (0.3, 0.3), (12.0, -0.05)])
def test_definition_balls_contain_the_mpmath_quadrature(init, pt) -> None:
    from numerics import kernels as nk
    for ball_fn, quad in ((aq.rf_kernel_ball, nk.rf_kernel_quad_mp),
                          (aq.active_probability_ball, nk.active_probability_quad_mp)):
        b = ball_fn(*pt, init)
        ref = quad(*pt, init, dps=30)
        assert certify.relative_radius(b) < 1e-30
        assert abs(float(b.mid()) - float(ref)) <= 1e-25 * abs(float(ref))
    # the NTK from the gradient inner product equals K_RF + sigma^2 (1 + x x') P (a theorem,
    # checked here; the claims never build the reference this way)
    sc = 1.3
    n = aq.ntk_kernel_ball(*pt, init, sc)
    s = aq.rf_kernel_ball(*pt, init) + flint.arb(sc) ** 2 * (1 + flint.arb(pt[0]) * pt[1]) \
        * aq.active_probability_ball(*pt, init)
    assert n.overlaps(s)


def test_sphere_mean_and_validation() -> None:
    assert aq.positive_part_mean_ball(2).overlaps(1 / flint.arb.pi())
    assert aq.positive_part_mean_ball(5).overlaps(flint.arb(3) / 16)
    assert aq.positive_part_mean_ball(1) == flint.arb(1) / 2
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="sphere dimension"):
            aq.positive_part_mean_ball(bad)
    with pytest.raises(ValueError, match="init"):
        aq.rf_kernel_ball(0.1, 0.2, "laplace")
    with pytest.raises(ValueError, match="finite"):
        aq.rf_kernel_ball(float("inf"), 0.2)
    with pytest.raises(TypeError, match="real number"):
        aq.rf_kernel_ball("0.1", 0.2)
    for kw, msg in (({"k": 0}, "sphere dimension"), ({"y": 1.3}, r"\|y\| < c"), ({"c": -1.0}, "c > 0"),
                    ({"y": float("nan")}, "finite")):
        with pytest.raises(ValueError, match=msg):
            aq.inner_expectation_ball(**{"k": 3, "c": 1.3, "y": 0.2, **kw})


# ------------------------------------------- .enclose and the float64 ulp bounds
def _draw(rng: np.random.Generator, n: int) -> np.ndarray:
    """A third uniform on [-5, 5], a third log-uniform magnitudes 1e-8..1e6 with random
    signs, a third special values (0, +-1, 1 +- ulp, +-1e4 (the float path's edge), 2)."""
    k = rng.integers(0, 3, n)
    special = rng.choice([0.0, 1.0, -1.0, np.nextafter(1.0, 2.0), np.nextafter(-1.0, 0.0), 1e4, -1e4,
                          np.nextafter(1e4, 2e4), 2.0, -0.5], n)
    return np.where(k == 0, rng.uniform(-5, 5, n),
                    np.where(k == 1, rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-8, 6, n), special))


#: (formula, keyword arguments, number of array arguments) of every closed-form entry
#: with a stated ulp bound
ENTRIES = [("rf_kernel", {"init": "uniform"}), ("rf_kernel", {"init": "gaussian"}),
           ("active_probability", {"init": "uniform"}), ("active_probability", {"init": "gaussian"}),
           ("ntk_kernel", {"init": "uniform", "sigma_c": 1.3}), ("ntk_kernel", {"init": "gaussian", "sigma_c": 1.3}),
           ("rkhs_weight", {"init": "uniform"}), ("rkhs_weight", {"init": "gaussian"}),
           ("alpha_constant", {}), ("velocity_jump", {}), ("odd_target_rate", {})]
N_INPUTS = 10_000


def _inputs(name: str, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    if name == "alpha_constant":
        k = np.concatenate([np.arange(1, 400), rng.integers(1, 2 ** 53, N_INPUTS - 403),
                            [2 ** 53, 2 ** 53 - 1, 10 ** 6, 341]])
        return (k,)
    if name == "rkhs_weight":
        return (_draw(rng, N_INPUTS),)
    if name == "velocity_jump":  # (r, x*, rho*); |r|, |rho*| <= 1e6 (no overflow)
        return (_draw(rng, N_INPUTS), _draw(rng, N_INPUTS), _draw(rng, N_INPUTS))
    if name == "odd_target_rate":  # (V, v_rho, q): V, v_rho > 0, q >= 0
        V, v, q = (np.abs(_draw(rng, N_INPUTS)) for _ in range(3))
        return (np.where(V == 0, 1.0, V), np.where(v == 0, 0.5, v), q)
    return (_draw(rng, N_INPUTS), _draw(rng, N_INPUTS))


def _scale(name: str, args: tuple, kw: dict, ball: object) -> float:
    """The unit of the ulp bound: |exact|, or for the NTK K_RF + sigma_c^2 |1 + x x'| P."""
    if name != "ntk_kernel":
        return float(abs(ball).upper())
    p, q = args
    rf = formulas.rf_kernel.enclose(p, q, init=kw["init"])
    pr = formulas.active_probability.enclose(p, q, init=kw["init"])
    return float((rf + kw["sigma_c"] ** 2 * abs(1 + flint.arb(p) * q) * pr).upper())


@pytest.mark.parametrize("name,kw", ENTRIES, ids=[f"{n} {k.get('init', '')}" for n, k in ENTRIES])
@given(seed=st.integers(0, 2 ** 32 - 1))
@settings(max_examples=1, deadline=None)
def test_float64_within_the_stated_ulp_bound(name, kw, seed) -> None:
    """At 10^4 inputs (one vectorized batch per Hypothesis example, extremes included) the
    float64 value lies within the formula's stated ulp bound of its certified ball."""
    f = getattr(formulas, name)
    bound = f.ulp_bound[kw["init"]] if isinstance(f.ulp_bound, dict) else f.ulp_bound
    args = _inputs(name, seed)
    vals = np.asarray(f(*args, **kw), dtype=np.float64)
    worst = 0.0
    tiny = np.finfo(np.float64).tiny
    for i in range(vals.size):
        a = tuple(float(v[i]) if name != "alpha_constant" else int(v[i]) for v in args)
        b = f.enclose(*a, **kw)
        if float(abs(b).upper()) < tiny / EPS:  # the exact value underflows float64
            continue
        err = float(abs(b - vals[i]).upper()) / (EPS * _scale(name, a, kw, b))
        worst = max(worst, err)
        assert err <= bound.ulps, f"{name} {kw} at {a}: {err:.3g} ulps > {bound.ulps:g} ({bound.unit})"
    assert worst > 0  # the measurement is not vacuous


def _mp_containment(name: str, kw: dict, n: int, seed: int) -> None:
    f = getattr(formulas, name)
    args = _inputs(name, seed)
    idx = np.random.default_rng(seed).choice(args[0].size, n, replace=False) if n < args[0].size \
        else np.arange(args[0].size)
    for i in idx:
        a = tuple(float(v[i]) if name != "alpha_constant" else int(v[i]) for v in args)
        b = f.enclose(*a, **kw)
        m = f.mpmath(*a, **kw, dps=50)
        with mpmath.workdps(60):
            mid = mpmath.mpf(b.mid().str(60, radius=False))
            rad = mpmath.mpf(b.rad().str(10, radius=False))
            # 50-digit value: its own error is < 1e-49 relative
            assert abs(m - mid) <= rad + abs(m) * mpmath.mpf(10) ** -49, f"{name} {kw} at {a}"


@pytest.mark.parametrize("name,kw", ENTRIES, ids=[f"{n} {k.get('init', '')}" for n, k in ENTRIES])
def test_enclose_contains_the_50_digit_mpmath_value(name, kw) -> None:
    """2000 of the 10^4 inputs here (~1.5 s per entry); all 10^4 (40 s for the nine
    entries) in the slow test below."""
    _mp_containment(name, kw, 2000, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name,kw", ENTRIES, ids=[f"{n} {k.get('init', '')}" for n, k in ENTRIES])
def test_enclose_contains_the_50_digit_mpmath_value_everywhere(name, kw) -> None:
    _mp_containment(name, kw, N_INPUTS, 2)


def test_generic_enclose_of_a_verified_formula_and_not_enclosable() -> None:
    from verify.formulas._base import NotEnclosable
    b = formulas.odd_target_rate.enclose(1.0, 1.0, 0.0)
    assert abs(float(b.mid()) - float(formulas.odd_target_rate(1.0, 1.0, 0.0))) < 1e-15
    assert formulas.alpha_constant.enclose(2).overlaps(flint.arb.pi())
    arr = formulas.rf_kernel.enclose(np.array([0.1, 0.2]), 0.3, init="gaussian")
    assert arr.shape == (2,) and all(isinstance(v, flint.arb) for v in arr)
    with pytest.raises(NotEnclosable, match="symmetrize"):
        formulas.symmetrize.enclose(np.zeros(3))
    assert issubclass(NotEnclosable, TypeError)
    with formulas.perturbed_output("alpha_constant", 1 + 1e-6):  # public API, reaches .enclose
        assert not formulas.alpha_constant.enclose(2).overlaps(flint.arb.pi())


def test_derived_inner_expectation_is_proven_against_its_definition() -> None:
    """H1e's derived inner expectation E_R[(cR + y)_+] and its partials d/dc, d/dy (the four
    float64-oriented forms: y <= 0 / y > 0, a^2 < or >= 1/2; incomplete Beta and log1p in
    the Arb translation) overlap the definition's ball (R's polar-angle law cut at the
    kink) at k = 1..1000, and the same forms moved by 1e-12 are disjoint from it."""
    from derivations.hajjar_reduced import INNER
    from derivations.sphere import k as K
    from verify import derived
    forms = derived.results("H1e")["inner"]
    syms = (K, INNER["c"], INNER["y"], INNER["mean"])
    fns = {(n, key): arb_function(e, syms) for n, fs in forms.items() for key, e in fs.items()}
    rng = np.random.default_rng(7)
    for kk in (1, 2, 3, 4, 7, 40, 1000):
        for a in [-0.9, -0.6, -0.3, 0.0, 0.2, 0.5, 0.95, *rng.uniform(-0.99, 0.99, 3)]:
            c = 1.3
            y = -float(a) * c
            refs = aq.inner_expectation_ball(kk, c, y)
            with certify.working_precision(128):
                mean = aq.positive_part_mean_ball(kk)
                for (n, key), f in fns.items():
                    if n.endswith("_pos") != (y > 0) or n.startswith("small") != (a * a < 0.5):
                        continue  # each form on its region (formulas.hajjar's selection)
                    ref = refs[("inner", "inner_dc", "inner_dy").index(key)]
                    b = f(kk, c, y, mean)
                    assert b.overlaps(ref), (kk, a, n, key, b, ref)
                    # at the scale c + |y| of the terms (the small form's 1/2 - I/2 cancels)
                    assert float(b.rad()) <= 1e-30 * (c + abs(y)), (kk, a, n, key)
                    if float(abs(ref).lower()) > 1e-20:
                        assert not (b * (1 + flint.arb(1e-12))).overlaps(ref)


def _has_enclose(f: object) -> bool:
    from verify.formulas._base import DerivedFunction, _Derived
    if isinstance(f, DerivedFunction):
        return f._enclose is not None
    return type(f).enclose is not _Derived.enclose


def test_every_entry_without_enclose_is_named_and_says_why() -> None:
    """The entries without ``.enclose`` are exactly the algorithms the package docstring
    names; each one's docstring says so (NotEnclosable) and calling it raises."""
    from verify.formulas._base import NotEnclosable, _Derived
    entries = {n: getattr(formulas, n) for n in formulas.__all__
               if isinstance(getattr(formulas, n), _Derived)}
    without = {n for n, f in entries.items() if not _has_enclose(f)}
    assert without == {"best_linear_approximator", "kernel_interpolant", "symmetrize",
                       "project_to_fixed_space", "rmd"}
    for n in without:
        assert f"``{n}``" in formulas.__doc__, n
        assert "NotEnclosable" in entries[n].__doc__, n
        with pytest.raises(NotEnclosable, match=n):
            entries[n].enclose(0.0)
    for n, f in entries.items():
        assert f.ulp_bound is not None, n


# ------------------------------------------------ W3d: the NTK's own definition
def test_consistent_ntk_change_fails_w3d_quadrature() -> None:
    """K_NTK changed by the same 1e-3 everywhere it is written (the derived primary, stable
    and branch forms) fails W3d's quadrature sub-check: its reference is the expectation of
    the gradient inner product, not a rebuild of K_RF + sigma_c^2 (1 + x x') P."""
    from derivations.base import Derivation
    from verify import derived
    from verify.claims import get
    orig = derived.derivation("W3d")
    res = dict(orig.results)
    for key in ("ntk_uniform", "ntk_gaussian", "ntk_gaussian_stable"):
        res[key] = res[key] * (1 + sp.Rational(1, 1000))
    with derived.overridden("W3d", Derivation(steps=orig.steps, results=res)):
        ev = get("W3d").run("quick", 0)
    subs = {s["name"]: s for s in ev.details["subchecks"]}
    quad = [s for n, s in subs.items() if "K_NTK and P vs quadrature" in n]
    assert quad and all(not s["passed"] for s in quad)
    assert not ev.passed and ev.details["certified"]["disproved"]


def test_mutate_records_a_certified_disproof() -> None:
    from verify.mutate import CAUGHT, DISPROVED, Mutant, run_mutant
    status, how = run_mutant(Mutant("W3e", "derived", ("omega_gaussian",)), 1e-12)
    assert status == CAUGHT and how.startswith(DISPROVED), how


#: the closed-form claims whose certified sub-checks are cheap (< 0.2 s per mutant); M1a's
#: Arb Haar integrals cost ~3 s per mutant, so its run is in the slow profile
CERTIFIED_FAST = ["W2a", "W2e", "W2f", "M1b"]
CERTIFIED_SLOW = ["M1a"]


@pytest.mark.parametrize("claim_id", CERTIFIED_FAST + [pytest.param(c, marks=pytest.mark.slow)
                                                        for c in CERTIFIED_SLOW])
def test_every_derived_result_is_disproved_at_1e12(claim_id: str) -> None:
    """``mutate --eps 1e-12``: each derived result of the claim, perturbed by 1e-12, is
    caught by a certified sub-check with disjoint balls (a disproof), at a seed other than 0."""
    from verify.mutate import CAUGHT, DISPROVED, derivation_mutants, run_mutant
    for m in derivation_mutants(claim_id):
        status, how = run_mutant(m, 1e-12, seed=5)
        assert status == CAUGHT and how.startswith(DISPROVED), (m.label, status, how)


def test_flint_is_a_runtime_dependency() -> None:
    import tomllib
    from pathlib import Path
    deps = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.replace(" ", "").startswith("python-flint") for d in deps)
    assert math.isfinite(float(certify.ball(0.5).mid()))


# ------------------------------------ the W2a maps (three outputs each): .enclose and ulps
def _w2a_inputs(name: str, seed: int) -> tuple:
    """10^4 inputs with magnitudes 1e-8..1e6 (and 0, +-1); no (a, b) = (0, 0) for pi, no
    r = 0 with delta >= 0 for its inverse (both refused by the formulas)."""
    rng = np.random.default_rng(seed)
    u, v, w = (_draw(rng, N_INPUTS) for _ in range(3))
    if name == "canonical_from_full":
        u = np.where((u == 0) & (v == 0), 1.0, u)
    else:
        v = rng.uniform(-np.pi, np.pi, N_INPUTS)  # theta
        u = np.where((u == 0) & (w >= 0), 0.5, u)
    return u, v, w


@pytest.mark.parametrize("name", ["canonical_from_full", "full_from_canonical"])
@given(seed=st.integers(0, 2 ** 32 - 1))
@settings(max_examples=1, deadline=None)
def test_w2a_maps_within_their_ulp_bounds(name, seed) -> None:
    """Each of the three float64 outputs lies within the stated ulps of its certified ball at
    10^4 inputs; 200 of the balls contain the 50-digit mpmath value."""
    f = getattr(formulas, name)
    args = _w2a_inputs(name, seed)
    outs = [np.asarray(o, dtype=np.float64) for o in f(*args)]
    balls = f.enclose(*args)
    worst = 0.0
    tiny = np.finfo(np.float64).tiny
    for o, b in zip(outs, balls):
        for i in range(o.size):
            if float(abs(b[i]).upper()) < tiny / EPS:
                continue
            err = float(abs(b[i] - o[i]).upper()) / (EPS * float(abs(b[i]).upper()))
            worst = max(worst, err)
            assert err <= f.ulp_bound.ulps, f"{name} at {[a[i] for a in args]}: {err:.3g} ulps"
    assert worst > 0
    for i in np.random.default_rng(seed).choice(N_INPUTS, 200, replace=False):
        m = f.mpmath(*(float(a[i]) for a in args), dps=50)
        for mv, b in zip(m, balls):
            with mpmath.workdps(60):
                mid = mpmath.mpf(b[i].mid().str(60, radius=False))
                rad = mpmath.mpf(b[i].rad().str(10, radius=False))
                assert abs(mv - mid) <= rad + abs(mv) * mpmath.mpf(10) ** -49, (name, i)
