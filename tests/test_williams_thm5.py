"""Williams et al. (2019), Thm 5 under its general hypothesis (claim W3b): B | A uniform on an
A-dependent interval or a union of intervals (derivations.williams_thm5,
numerics.williams_init, the general sub-checks of W3b)."""
from __future__ import annotations

import mpmath
import pytest
import sympy as sp

from derivations import williams_thm5 as t5
from derivations.base import Derivation
from numerics import kernels as nk
from numerics import williams_init as ni
from verify import derived
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
