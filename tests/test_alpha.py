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
    assert alpha.expr.free_symbols == {k}


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
