"""One-sided Taylor coefficients in Arb (verify/claims/_williams_certified.py) and the
certified f'-jumps of W3d."""
from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

pytest.importorskip("flint")

from derivations.base import Derivation  # noqa: E402
from verify import derived  # noqa: E402
from verify.claims import williams_kernels as wk  # noqa: E402
from verify.claims._williams_certified import (one_sided_derivative_jump,  # noqa: E402
                                               one_sided_taylor)
from verify.certify import UndecidableCondition, working_precision  # noqa: E402

x, y = sp.symbols("x y", real=True)


def _exact(b, v: Fraction | int) -> bool:
    """b contains the rational v and is tight (radius <= 1e-35 of max(1, |v|))."""
    import flint
    with working_precision(256):
        return b.overlaps(flint.arb(Fraction(v).numerator) / Fraction(v).denominator) \
            and float(b.rad()) <= 1e-35 * max(1.0, abs(float(v)))


def test_abs_has_slopes_plus_and_minus_one_at_zero() -> None:
    right = one_sided_taylor(sp.Abs(x), {x: 0.0}, x, 1)
    left = one_sided_taylor(sp.Abs(x), {x: 0.0}, x, -1)
    assert _exact(right[1], 1) and _exact(left[1], -1)
    assert _exact(one_sided_derivative_jump(sp.Abs(x - y) * 3, {x: 0.5, y: 0.5}, x), 6)


def test_piecewise_branch_on_each_side_of_its_edge() -> None:
    f = sp.Piecewise((x**3, x <= 1), (2 * x - 1, True))
    assert _exact(one_sided_taylor(f, {x: 1.0}, x, -1, order=3)[3], 1)   # x^3 from the left
    assert _exact(one_sided_taylor(f, {x: 1.0}, x, 1, order=3)[1], 2)    # 2x - 1 from the right
    assert _exact(one_sided_derivative_jump(sp.Max(x, y) ** 2, {x: 2.0, y: 2.0}, x), 4)


def test_atan2_across_the_negative_axis_and_at_zero_x() -> None:
    f = sp.atan2(sp.Abs(x - y), 1 + x * y)   # gaussian kernels' angle, 1 + x y > 0
    assert _exact(one_sided_derivative_jump(f, {x: 0.25, y: 0.25}, x), Fraction(32, 17))
    g = sp.atan2(x, y)
    b = one_sided_taylor(g, {x: 1.0, y: 0.0}, x, 1)[0]
    assert abs(float(b.mid()) - 1.5707963267948966) < 1e-15 and float(b.rad()) < 1e-35


def test_undecidable_and_invalid_inputs_are_refused() -> None:
    with pytest.raises(UndecidableCondition):
        one_sided_taylor(sp.Abs(x + 1 - sp.cos(y) ** 2 - sp.sin(y) ** 2), {x: 0.0, y: 0.5}, x, 1)
    with pytest.raises(ValueError, match="side"):
        one_sided_taylor(x, {x: 0.0}, x, 0)
    with pytest.raises(ValueError, match="point x0"):
        one_sided_taylor(x, {y: 0.0}, x, 1)
    with pytest.raises(TypeError, match="SymPy"):
        one_sided_taylor("x", {x: 0.0}, x, 1)
    with pytest.raises(TypeError, match="unsupported"):
        one_sided_taylor(sp.floor(x), {x: 0.5}, x, 1)


def test_w3d_certified_jumps_prove_and_disprove() -> None:
    ctx = wk.CLAIM_W3D.context("quick", 0)
    res = dict(ctx.derivation().results)
    sc = wk._certified_jumps(ctx, res)
    assert sc.passed and sc.certified["instances"] >= 12
    orig = derived.derivation("W3d")
    bad = dict(orig.results)
    bad["jump_gaussian"] = bad["jump_gaussian"] * (1 + sp.Float(1e-12, 30))
    with derived.overridden("W3d", Derivation(orig.steps, bad)):
        sc = wk._certified_jumps(ctx, dict(derived.derivation("W3d").results))
    assert not sc.passed and sc.counterexample["disproved"]


def test_w3b_certified_sections_prove_and_disprove_the_end_conditions() -> None:
    from verify.claims import williams_kernels_interpolants as wki
    ctx = wki.CLAIM_W3B.context("quick", 0)
    res = ctx.derivation().results
    jumps, ends = wki._certified_w3b(ctx, res, wki.EXACT_END_CONDITIONS)
    assert jumps.passed and ends.passed and ends.certified["instances"] == 4 * 12
    jumps, ends = wki._certified_w3b(ctx, res, wki.PERTURBED_END_CONDITION)
    assert jumps.passed and not ends.passed and ends.counterexample["disproved"]


def test_w2c_certified_metric_proves_and_disproves() -> None:
    from verify.claims import williams_dynamics as wd
    claim = next(c for c in wd.CLAIMS if c.id == "W2c")
    ctx = claim.context("quick", 0)
    subs = wd._certified_w2c(ctx, 1.0)
    assert all(s.passed for s in subs) and subs[0].certified["instances"] == 24
    subs = wd._certified_w2c(ctx, wd.W2C_THTH_FACTOR)
    assert subs[0].passed and not subs[1].passed and subs[1].counterexample["disproved"]


def test_w2b_certified_field_proves_and_the_wrong_invariant_is_disproved() -> None:
    from verify.claims import williams_dynamics as wd
    claim = next(c for c in wd.CLAIMS if c.id == "W2b")
    ctx = claim.context("quick", 0)
    subs = wd._certified_w2b(ctx, 1.0)
    assert all(s.passed for s in subs) and subs[0].certified["instances"] == 3 * 24
    subs = wd._certified_w2b(ctx, wd.W2B_WEIGHT)
    assert subs[0].passed and not subs[1].passed and subs[1].counterexample["disproved"]


def test_w2g_certified_kernels_prove_and_disprove() -> None:
    from verify.claims import williams_dynamics_residual as wr
    ctx = wr.CLAIMS[0].context("quick", 0)
    assert all(s.passed for s in wr._certified_w2g(ctx))
    orig = derived.derivation("W2g")
    bad = dict(orig.results)
    bad["h_sliding"] = bad["h_sliding"] * (1 + sp.Float(1e-12, 30))
    with derived.overridden("W2g", Derivation(orig.steps, bad)):
        subs = wr._certified_w2g(ctx)
    assert subs[0].passed and not subs[1].passed and subs[1].counterexample["disproved"]


def test_w3f_certified_fig4_alpha_proves_and_disproves() -> None:
    from verify.claims import williams_kernels_finite_width as wf
    alpha = derived.derivation("W3f").results["alpha_fig4"]
    sc = wf._certified_fig4_alpha(alpha)
    assert sc.passed and sc.certified["instances"] == 10
    bad = alpha.copy()
    bad[3] = bad[3] * (1 + sp.Rational(1, 10**12))
    sc = wf._certified_fig4_alpha(bad)
    assert not sc.passed and sc.counterexample["disproved"]


def test_w2h_certified_rates_prove_and_disprove() -> None:
    from verify.claims import williams_dynamics_field as wf
    claim = next(c for c in wf.CLAIMS if c.id == "W2h")
    ctx = claim.context("quick", 0)
    assert all(s.passed for s in wf._certified_w2h(ctx, 1.0))
    active, inactive = wf._certified_w2h(ctx, wf.W2H_RHO_STAR_FACTOR)
    assert inactive.passed and not active.passed and active.counterexample["disproved"]
