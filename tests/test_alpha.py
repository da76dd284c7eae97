"""formulas.alpha_constant (claim H1f) and the derivation/numerics behind it."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from derivations.sphere import derive_alpha, k
from numerics.rng import make_rng
from numerics.sphere import positive_part_mean_coordinate_mp, positive_part_mean_mc, sample_sphere
from verify import formulas

alpha = formulas.alpha_constant


def _gamma_formula(d: int) -> mpmath.mpf:
    """The paper's formula at 40 digits (independent of the SymPy derivation)."""
    with mpmath.workdps(40):
        return 2 * mpmath.sqrt(mpmath.pi) * mpmath.gamma(mpmath.mpf(d + 1) / 2) / mpmath.gamma(mpmath.mpf(d) / 2)


def test_acceptance_values() -> None:
    d = np.arange(1, 61)
    got = alpha(d)
    ref = np.array([float(_gamma_formula(int(v))) for v in d])
    assert got.shape == (60,) and got.dtype == np.float64
    assert np.max(np.abs(got / ref - 1)) <= 1e-14
    assert alpha(2) == pytest.approx(np.pi, rel=1e-15)
    assert alpha(5) == pytest.approx(16 / 3, rel=1e-15)


@given(st.integers(1, 5000))
@example(340).via("last direct Gamma evaluation")
@example(341).via("first Stirling-series evaluation")
@example(4999)
def test_alpha_matches_gamma_formula(d: int) -> None:
    # both routes (Gamma ratio, truncated Stirling series with error < 1e-27) are a few ulps
    assert abs(alpha(d) / float(_gamma_formula(d)) - 1) <= 1e-14


@given(st.lists(st.integers(1, 400), min_size=1, max_size=6).map(np.array))
def test_vectorized_shape(ds: np.ndarray) -> None:
    out = alpha(ds.reshape(-1, 1))
    assert out.shape == (ds.size, 1)
    assert np.all(np.diff(alpha(np.sort(ds))) >= 0)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "5", True, np.nan, [1, 0], None])
def test_bad_input(bad) -> None:
    with pytest.raises(ValueError, match="d_H"):
        alpha(bad)


def test_mpmath_and_metadata() -> None:
    with mpmath.workdps(50):
        v = alpha.mpmath(2, dps=50)
        assert abs(v - mpmath.pi) < mpmath.mpf(10) ** -48
    assert alpha.claim == "H1f" and "Gamma" in alpha.latex
    from derivations.hajjar_reduced import D_H
    assert alpha.expr.free_symbols == {D_H}  # the docs' symbol d_H


def test_derivation_exact_values() -> None:
    d = derive_alpha()
    vals = {j: a for j, _, a in d.exact_values}
    import sympy as sp
    assert vals[1] == 2 and vals[2] == sp.pi and vals[5] == sp.Rational(16, 3)
    assert d.predictor_identity == 1 and d.asymptote_limit == 1


def test_coordinate_quadrature_negative_sensitivity() -> None:
    """The quadrature reference distinguishes neighbouring dimensions (it is not flat)."""
    a, b = positive_part_mean_coordinate_mp(5), positive_part_mean_coordinate_mp(6)
    assert abs(a - b) > 1e-3


def test_sphere_sampling_is_seeded_and_unit() -> None:
    u1 = sample_sphere(make_rng(3, "t"), 100, 4)
    u2 = sample_sphere(make_rng(3, "t"), 100, 4)
    assert np.array_equal(u1, u2)
    assert np.allclose(np.linalg.norm(u1, axis=1), 1.0)
    m, se = positive_part_mean_mc(make_rng(1, "mc"), 20_000, 3)
    assert abs(m - 0.25) < 5 * se


def test_alpha_constant_arguments_are_validated():
    import inspect

    from verify.formulas import alpha_constant
    assert list(inspect.signature(alpha_constant).parameters) == ["d_H"]
    for dps in (0, -3, 10 ** 9, 2.5, True):
        with pytest.raises(ValueError, match="dps"):
            alpha_constant.mpmath(5, dps=dps)
    with pytest.raises(ValueError, match="too large"):
        alpha_constant(2 ** 63)
    assert abs(float(alpha_constant.mpmath(5, dps=40)) - 16 / 3) < 1e-15


@pytest.mark.parametrize("k", [2, 7, 341, 10 ** 6])
def test_sphere_references_agree_with_the_gamma_formula(k: int) -> None:
    """Both quadrature routes (radial factorization, coordinate density) at 30 digits,
    from small k to far beyond Gamma's float64 range (panels follow the concentration)."""
    from numerics.sphere import positive_part_mean_mp
    with mpmath.workdps(40):
        ref = 1 / _gamma_formula(k)
        for f in (positive_part_mean_mp, positive_part_mean_coordinate_mp):
            assert abs(f(k, dps=30) / ref - 1) < 1e-28


@pytest.mark.parametrize("dps", [0, -3, 2.5, True, "30", None, 10 ** 6])
def test_sphere_references_validate_dps(dps) -> None:
    from numerics.sphere import positive_part_mean_mp
    for f in (positive_part_mean_mp, positive_part_mean_coordinate_mp):
        with pytest.raises(ValueError, match="dps"):
            f(5, dps=dps)


def test_sphere_sizes_are_refused_fast() -> None:
    import time

    from numerics.sphere import positive_part_mean_mp
    t0 = time.process_time()
    with pytest.raises(ValueError, match="too large"):
        positive_part_mean_mc(make_rng(0, "t"), 10 ** 12, 3)
    with pytest.raises(ValueError, match="k"):
        positive_part_mean_mp(2 ** 60)
    with pytest.raises(ValueError, match="k"):
        positive_part_mean_coordinate_mp(1)
    with pytest.raises(TypeError, match="rng"):
        positive_part_mean_mc(None, 10, 3)
    with pytest.raises(ValueError, match="chunk"):
        positive_part_mean_mc(make_rng(0, "t"), 10, 3, chunk=0)
    assert time.process_time() - t0 < 1.0


def test_stirling_series_order_and_first_dropped_term() -> None:
    """The float64 form beyond Gamma's range: the derived series to O(k^-11) differs from
    the O(k^-13) series by exactly the dropped term 435330 / (55440 k^11)."""
    import sympy as sp

    from derivations.sphere import STIRLING_ORDER, log_asymptotic_gap
    d = derive_alpha()
    nxt = log_asymptotic_gap(d.alpha, STIRLING_ORDER + 2)
    assert sp.simplify(nxt - d.log_gap_series - sp.Rational(435330, 55440) / k ** 11) == 0


def test_alpha_constant_reads_the_derived_stirling_form() -> None:
    """Perturbing the derived series moves alpha_constant beyond 340 (and only there)."""
    from derivations.base import Derivation
    from verify import derived
    orig = derived.derivation("H1f")
    res = dict(orig.results)
    res["log_gap_series"] = res["log_gap_series"] + sp_float(1e-6)
    before = alpha(np.array([5, 1000]))
    with derived.overridden("H1f", Derivation(steps=orig.steps, results=res)):
        after = alpha(np.array([5, 1000]))
    assert after[0] == before[0] and abs(after[1] / before[1] - 1 - 1e-6) < 1e-12


def sp_float(x: float):
    import sympy as sp
    return sp.Float(x, 30)
