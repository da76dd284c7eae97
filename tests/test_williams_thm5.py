"""Williams et al. (2019), Thm 5 under its general hypothesis (claim W3b): B | A uniform on an
A-dependent interval or a union of intervals (derivations.williams_thm5,
numerics.williams_init, the general sub-checks of W3b)."""
from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from derivations import williams_thm5 as t5
from derivations.base import Derivation
from numerics import kernels as nk
from numerics import williams_init as ni
from numerics import williams_init_exact as ne
from verify import derived
from verify.certify import exact_fraction
from verify.cli import main
from verify.claims import williams_kernels_interpolants as wki

x, xp = t5.x, t5.xp


def _at(expr: sp.Expr, v: sp.Expr) -> sp.Expr:
    return sp.nsimplify(expr.subs(x, v))


@pytest.mark.parametrize("name, inside, value, edges", [
    ("scaled", [-sp.Rational(3, 2), 0, sp.Rational(7, 5)], sp.Rational(1, 9), (-sp.Rational(3, 2), sp.Rational(3, 2))),
    ("shifted", [0, 1, 2], sp.Rational(1, 8), (0, 2)),
    ("gap", [-2, -sp.Rational(3, 2), 1, 2], sp.Rational(1, 6), (-2, -1, 1, 2)),
])
def test_derived_omegas(name, inside, value, edges) -> None:
    """Hand values: omega = int |a|^3 (1/2) / |I_a| da over {a : a x in I_a}:
    scaled |I_a| = 3|a| -> 1/9; shifted |I_a| = 2 -> 1/8; gap |I_a| = 2|a| -> 1/6."""
    w = t5.derive_weight(name)
    assert w.halves_equal
    assert tuple(w.edges) == tuple(sp.sympify(e) for e in edges)
    assert all(_at(w.omega, v) == value for v in inside)
    assert [c[2] for c in w.constant] == [value] * len(w.constant)


def test_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="family must be one of"):
        t5.derive_weight("triangular")
    with pytest.raises(ValueError, match="family must be one of"):
        t5.edge_jumps(3)


def test_omega_outside_the_constancy_intervals() -> None:
    assert _at(t5.derive_weight("scaled").omega, 2) == 0
    assert _at(t5.derive_weight("gap").omega, 0) == 0 and _at(t5.derive_weight("gap").omega, 3) == 0
    # shifted: |a| <= 1 / |x - 1| -> (1/2) 2 int_0^{1/|x-1|} a^3 / 2 da = 1 / (8 (x - 1)^4)
    om = t5.derive_weight("shifted").omega
    assert sp.simplify(_at(om, 5) - sp.Rational(1, 8 * 4**4)) == 0
    assert sp.simplify(_at(om, -3) - sp.Rational(1, 8 * 4**4)) == 0


def test_edge_jumps() -> None:
    """gap: [d^2 K(., x')]_{e=1} = (1/6 - 0) |1 - x'| / 2; shifted: omega continuous, the f'''
    jump comes from omega' (only); "shifted" is not piecewise constant."""
    j = t5.edge_jumps("gap")[2]
    assert j[0] == 0 and j[1] == 0
    assert sp.simplify(j[2] - sp.Abs(xp - 1) / 12) == 0
    js = t5.edge_jumps("shifted")
    assert all(e[2] == 0 for e in js) and all(e[3] != 0 for e in js)
    assert t5.piecewise_constant_families() == ("scaled", "gap")


def test_scaled_kernel() -> None:
    k = t5.derive_scaled_kernel()
    assert k.identity_residuals == (0, 0)
    # K(0, 0) = E A^2 E_T[(T)_+^2], T ~ U[-c, c] = (1/3) (c^2 / 6) = 1/8 for c = 3/2
    assert sp.nsimplify(k.rf.subs({x: 0, xp: 0})) == sp.Rational(1, 8)
    K = sp.lambdify((x, xp), k.rf, "mpmath")
    iv = wki._t5_intervals("scaled")
    with mpmath.workdps(40):
        for p, q in [(0.3, -0.6), (2.0, -1.5), (-2.5, -1.7), (1.7, 2.2), (-0.4, 1.9)]:
            ref = ni.rf_kernel_intervals_mp(p, q, iv, dps=40)
            assert abs(K(mpmath.mpf(p), mpmath.mpf(q)) - ref) < 1e-35


def _uniform_box(aa):
    return [(mpmath.mpf(-1), mpmath.mpf(1))]


@pytest.mark.parametrize("p, q", [(0.3, -0.6), (1.7, 0.2), (-2.5, 3.0), (0.0, 0.0)])
def test_quadrature_against_the_uniform_reference(p, q) -> None:
    """I_a = [-1, 1] is the uniform init of W3a: the 1-D quadrature with the exact b-integral
    agrees with numerics.kernels' 2-D nested quadrature; 40 vs 60 digits agree to 1e-38."""
    with mpmath.workdps(45):
        k40 = ni.rf_kernel_intervals_mp(p, q, _uniform_box, dps=40)
        k60 = ni.rf_kernel_intervals_mp(p, q, _uniform_box, dps=60)
        ref = nk.rf_kernel_quad_mp(p, q, "uniform", dps=30)
        assert abs(k40 - k60) < 1e-38
        assert abs(k40 - ref) < 1e-28
        w40 = ni.rkhs_weight_intervals_mp(p, _uniform_box, dps=40)
        assert abs(w40 - nk.rkhs_weight_quad_mp(p, "uniform", dps=30)) < 1e-28


@pytest.mark.parametrize("name", list(t5.FAMILIES))
def test_quadrature_digits(name) -> None:
    iv = wki._t5_intervals(name)
    with mpmath.workdps(70):
        for p, q in [(0.31, 1.2), (-1.7, 1.45), (2.6, -0.2)]:
            d = ni.rf_kernel_intervals_mp(p, q, iv, dps=40) - ni.rf_kernel_intervals_mp(p, q, iv, dps=60)
            assert abs(d) < 1e-38
            d = ni.rkhs_weight_intervals_mp(p, iv, dps=40) - ni.rkhs_weight_intervals_mp(p, iv, dps=60)
            assert abs(d) < 1e-38


def test_quadrature_refuses_bad_families() -> None:
    with pytest.raises(ValueError, match="affine"):
        ni.rf_kernel_intervals_mp(0.2, 0.3, lambda aa: [(-aa * aa - 1, aa * aa + 1)])
    with pytest.raises(ValueError, match="overlap"):
        ni.rkhs_weight_intervals_mp(0.2, lambda aa: [(-1, 1), (0, 2)])
    with pytest.raises(ValueError, match="lo < hi"):
        ni.rkhs_weight_intervals_mp(0.2, lambda aa: [(1, -1)])
    with pytest.raises(TypeError):
        ni.rf_kernel_intervals_mp(0.2, 0.3, "not callable")
    with pytest.raises(ValueError):
        ni.rf_kernel_intervals_mp(float("nan"), 0.3, _uniform_box)


def _exact_mp(v: Fraction) -> mpmath.mpf:
    return mpmath.mpf(v.numerator) / v.denominator


_UNIFORM_EXACT = ne.affine_intervals(lambda q: [(-1, 1)])
_coords = st.floats(-3, 3, allow_nan=False, allow_subnormal=False)


@settings(max_examples=25, deadline=None)
@given(_coords, _coords)
def test_exact_kernel_is_the_uniform_reference(p, q) -> None:
    """I_a = [-1, 1] is W3a's uniform init: the exact rational K_RF and omega equal the
    2-D nested 30-digit quadrature of numerics.kernels."""
    with mpmath.workdps(40):
        assert abs(_exact_mp(ne.rf_kernel_intervals_exact(p, q, _UNIFORM_EXACT))
                   - nk.rf_kernel_quad_mp(p, q, "uniform", dps=30)) < 1e-28
        assert abs(_exact_mp(ne.rkhs_weight_intervals_exact(p, _UNIFORM_EXACT))
                   - nk.rkhs_weight_quad_mp(p, "uniform", dps=30)) < 1e-28


@pytest.mark.parametrize("name", list(t5.FAMILIES))
def test_exact_references_equal_the_quadrature(name) -> None:
    """The exact values of every family agree with the 40-digit Gauss-Legendre quadrature
    (numerics.williams_init) to its 1e-38, at the edges too (closed intervals in both)."""
    fam, iv = wki._t5_family_exact(name), wki._t5_intervals(name)
    edges = [float(e) for e in t5.derive_weight(name).edges]
    with mpmath.workdps(45):
        for p, q in [(0.31, 1.2), (-1.7, 1.45), (2.6, -0.2), (edges[0], 0.4), (0.9, 0.9)]:
            assert abs(_exact_mp(ne.rf_kernel_intervals_exact(p, q, fam))
                       - ni.rf_kernel_intervals_mp(p, q, iv, dps=40)) < 1e-37
            assert abs(_exact_mp(ne.rkhs_weight_intervals_exact(p, fam))
                       - ni.rkhs_weight_intervals_mp(p, iv, dps=40)) < 1e-37


@pytest.mark.parametrize("name", list(t5.FAMILIES))
def test_exact_series_one_sided_derivatives(name) -> None:
    """Away from every kink the two one-sided series agree (no jump); at the data kink
    x = x' inside omega's constancy interval only d^3 K jumps, by omega (from
    d^2 K = omega |x - x'| / 2); the series' c_0 is the exact value."""
    fam = wki._t5_family_exact(name)
    lo, hi, om = t5.derive_weight(name).constant[0]
    inside = Fraction((lo + hi) / 2) + Fraction(1, 7)
    xp = Fraction(-2, 5)
    r = ne.rf_kernel_intervals_series(inside, xp, fam, 1, 3)
    left = ne.rf_kernel_intervals_series(inside, xp, fam, -1, 3)
    assert r[0] == ne.rf_kernel_intervals_exact(inside, xp, fam)
    assert ne.one_sided_derivatives(r, 1) == ne.one_sided_derivatives(left, -1)
    r = ne.one_sided_derivatives(ne.rf_kernel_intervals_series(inside, inside, fam, 1, 3), 1)
    left = ne.one_sided_derivatives(ne.rf_kernel_intervals_series(inside, inside, fam, -1, 3), -1)
    assert [a - b for a, b in zip(r, left)] == [0, 0, 0, exact_fraction(om)]


def test_exact_references_refuse_bad_input() -> None:
    fam = wki._t5_family_exact("gap")
    with pytest.raises(ValueError, match="not affine"):
        ne.affine_intervals(lambda q: [(-q * q - 1, q * q + 1)])
    with pytest.raises(ValueError, match="disjoint"):
        ne.affine_intervals(lambda q: [(-1, 1), (0, 2)])
    with pytest.raises(TypeError, match="exact"):
        ne.affine_intervals(lambda q: [(-1.0, 1.0)])
    with pytest.raises(ValueError, match="logarithm"):
        ne.rf_kernel_intervals_exact(0.2, 0.3, ne.affine_intervals(lambda q: [(-1 - abs(q), 1)]))
    with pytest.raises(ValueError, match="side"):
        ne.rf_kernel_intervals_series(0.2, 0.3, fam, 0)
    with pytest.raises(ValueError, match="order"):
        ne.rf_kernel_intervals_series(0.2, 0.3, fam, 1, 9)
    with pytest.raises(TypeError, match="affine_intervals"):
        ne.rkhs_weight_intervals_exact(0.2, {1: []})
    with pytest.raises(ValueError, match="finite"):
        ne.rkhs_weight_intervals_exact(float("inf"), fam)
    with pytest.raises(ValueError, match="density"):
        ne.rkhs_weight_intervals_exact(0.2, fam, density=0.5)


@pytest.mark.parametrize("key", ["K_RF_scaled", ("edge_jumps_gap", 1, 2), ("edge_jumps_scaled", 0, 0),
                                 "omega_shifted"])
def test_a_mutated_thm5_result_is_disproved(key) -> None:
    """A 1e-12 perturbation of a general-Thm-5 result is DISPROVED by a certified sub-check
    (disjoint balls: the exact reference against the closed form's Arb ball)."""
    orig = derived.derivation("W3b")
    res = dict(orig.results)
    f = sp.Float(1e-12, 30)
    if isinstance(key, str):
        res[key] = res[key] * (1 + f) + f
    else:
        name, i, k = key
        rows = [list(r) for r in res[name]]
        rows[i][k] = rows[i][k] * (1 + f) + f
        res[name] = tuple(tuple(r) for r in rows)
    with derived.overridden("W3b", Derivation(orig.steps, res)):
        out = wki.CLAIM_W3B.outcome(wki.CLAIM_W3B.context("quick", 0))
    assert not out.passed
    assert out.details["certified"]["disproved"]


def _failed(outcome) -> list[str]:
    table = next(t for t in outcome.tables if t.title == "Sub-checks")
    return [r[0] for r in table.rows if r[-1] != "pass"]


def test_a_mutated_omega_fails_its_subcheck() -> None:
    orig = derived.derivation("W3b")
    res = dict(orig.results)
    eps = sp.Float(1e-6, 30)
    res["omega_gap"] = res["omega_gap"] * (1 + eps) + eps
    with derived.overridden("W3b", Derivation(orig.steps, res)):
        out = wki.CLAIM_W3B.outcome(wki.CLAIM_W3B.context("quick", 0))
    assert not out.passed
    assert "Thm 5 general, gap: derived omega vs quadrature of int |a|^3 p0(a, ax) da" in _failed(out)


@pytest.mark.slow   # tests/test_registry.py runs W3b at seeds 0-2 (check and control)
def test_check_w3b_seeds_0_2() -> None:
    assert main(["check", "W3b", "--seeds", "0-2"]) == 0
