"""Property tests of the sorted O((m+s) log(m+s)) 1-D kernels (numerics.fast1d)
against the dense O(m s) references and exact rational arithmetic.

Agreement metric (``fast1d._relative_discrepancy``): max over outputs and components of
|fast - reference| / scale, the scale being the sum of the magnitudes of the terms of
that output (``fast1d._error_scales``); required <= 1e-12 (both sides have forward error
O(u (n + sqrt(s))) * scale with u = 1.1e-16 and n <= 60 terms per bin here)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from numerics import fast1d

TOL = 1e-12

# magnitudes in [2^-20, 2^20] or exactly 0: inside the exactness range of the sign test
_mag = st.floats(min_value=2.0 ** -20, max_value=2.0 ** 20, allow_nan=False, allow_infinity=False)
_real = st.one_of(st.just(0.0), _mag, _mag.map(lambda v: -v))
# dyadic numbers with few bits: products a * x are exact, so "x on the knot" is exact
_dyadic = st.integers(-64, 64).flatmap(lambda k: st.sampled_from([k / 8.0, k / 1.0, k * 4.0]))


@st.composite
def problems(draw, exact_only: bool = False):
    """(a, b, c, x, y, alpha) with random sizes, signs, a_i = 0 cases, duplicated and
    knot-placed samples (exactly on dyadic knots, and on rounded knots fl(b/a))."""
    m = draw(st.integers(1, 40))
    s = draw(st.integers(1, 30))
    elem = _dyadic if exact_only else st.one_of(_real, _dyadic)
    a = np.array(draw(st.lists(elem, min_size=m, max_size=m)))
    b = np.array(draw(st.lists(elem, min_size=m, max_size=m)))
    c = np.array(draw(st.lists(st.one_of(_real, _dyadic), min_size=m, max_size=m)))
    x = np.array(draw(st.lists(elem, min_size=s, max_size=s)))
    y = np.array(draw(st.lists(st.one_of(_real, _dyadic), min_size=s, max_size=s)))
    # put some samples exactly on knots: b_i := a_i x_j (exact for dyadic inputs)
    for _ in range(draw(st.integers(0, min(m, s)))):
        i, j = draw(st.integers(0, m - 1)), draw(st.integers(0, s - 1))
        if exact_only or draw(st.booleans()):
            b[i] = a[i] * x[j]                      # exact kink when the product is exact
        elif a[i] != 0:
            x[j] = b[i] / a[i]                      # rounded knot: exact sign decides
    if draw(st.booleans()) and s > 1:               # repeated samples are allowed too
        x[draw(st.integers(0, s - 1))] = x[0]
    alpha = draw(st.sampled_from([1.0, float(np.sqrt(m)), float(m)]))
    return a, b, c, x, y, alpha


def _check(a, b, c, x, y, alpha, reference_fwd, reference_lg):
    scales = fast1d._error_scales(a, b, c, x, y, alpha)
    f = fast1d.forward_sorted(a, b, c, x, alpha)
    err_f = fast1d._relative_discrepancy(f, reference_fwd(a, b, c, x, alpha), scales)
    lg = fast1d.loss_and_grad_sorted(a, b, c, x, y, alpha)
    err_g = fast1d._relative_discrepancy(lg, reference_lg(a, b, c, x, y, alpha), scales)
    assert err_f <= TOL, f"forward disagrees: {err_f:.3g} relative"
    assert err_g <= TOL, f"loss/gradient disagree: {err_g:.3g} relative"


@given(problems())
@example((np.array([1.0, -1.0, 0.0, 0.0]), np.array([0.5, -0.5, -1.0, 0.0]),
          np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.25, 1.0]),
          np.array([0.0, 1.0, -1.0]), 1.0))
@example((np.array([3.0]), np.array([0.1]), np.array([1.0]), np.array([0.1 / 3.0]),
          np.array([1.0]), 1.0))
def test_sorted_matches_dense_reference(problem):
    _check(*problem, fast1d._forward_dense_reference, fast1d._loss_and_grad_dense_reference)


@given(problems(exact_only=True))
def test_sorted_matches_relu1d_dense(problem):
    """Against the project's dense reference ``numerics.relu1d`` on inputs whose
    kinks are exact (dyadic), where every correct implementation of ReLU'(0) = 0 agrees."""
    relu1d = pytest.importorskip("numerics.relu1d")
    if not hasattr(relu1d, "loss_and_grad_dense"):
        pytest.skip("numerics.relu1d has no dense reference yet")
    _check(*problem, relu1d.forward_dense, relu1d.loss_and_grad_dense)


@given(problems())
def test_active_sets_are_exact(problem):
    """The boundary indices reproduce the activity 1[a_i x_j - b_i > 0] computed in exact
    rational arithmetic (kink convention: exactly 0 is inactive)."""
    a, b, _, x, _, _ = problem
    order, k, pos = fast1d._boundary_indices(a, b, x)
    p = np.arange(x.size)
    active_sorted = np.where(pos[:, None], p[None, :] >= k[:, None], p[None, :] < k[:, None])
    active = np.empty_like(active_sorted)
    active[:, order] = active_sorted
    exact = np.array([[Fraction(ai) * Fraction(xj) - Fraction(bi) > 0 for xj in x]
                      for ai, bi in zip(a, b)], dtype=bool).reshape(active.shape)
    assert np.array_equal(active, exact)
    assert np.array_equal(fast1d.preactivation(a, b, x) > 0, exact)


def test_kink_convention_inactive():
    """A sample exactly on a knot contributes neither value nor gradient."""
    a, b, c = np.array([2.0]), np.array([1.0]), np.array([1.0])
    x, y = np.array([0.5, 1.0]), np.array([1.0, 0.0])
    loss, (ga, gb, gc) = fast1d.loss_and_grad_sorted(a, b, c, x, y, 1.0)
    # f(0.5) = 0 (kink), f(1) = 1: rho = (-1, 1); only x = 1 is active
    assert fast1d.forward_sorted(a, b, c, x, 1.0).tolist() == [0.0, 1.0]
    assert loss == 1.0
    assert (ga.tolist(), gb.tolist(), gc.tolist()) == ([1.0], [-1.0], [1.0])


def test_unsorted_and_sorted_inputs_agree():
    rng = np.random.default_rng(7)
    a, b, c = rng.normal(size=(3, 500))
    x, y = rng.normal(size=(2, 300))
    o = np.argsort(x)
    f1 = fast1d.forward_sorted(a, b, c, x, 500.0)
    f2 = fast1d.forward_sorted(a, b, c, x[o], 500.0)
    assert np.array_equal(f1[o], f2)
    l1, g1 = fast1d.loss_and_grad_sorted(a, b, c, x, y, 500.0)
    l2, g2 = fast1d.loss_and_grad_sorted(a, b, c, x[o], y[o], 500.0)
    assert abs(l1 - l2) <= 1e-14 * l1
    for u, v in zip(g1, g2):
        assert np.allclose(u, v, rtol=1e-13, atol=1e-15)


def test_large_blocked_prefix_sums_accurate():
    """m, s beyond the blocking threshold (blocked prefix sums) still agree to 1e-12."""
    rng = np.random.default_rng(11)
    m, s = 3000, 1500
    a, b, c = rng.uniform(-1, 1, size=(3, m))
    x, y = rng.uniform(-1.5, 1.5, size=s), rng.normal(size=s)
    x[:100] = b[:100] / a[:100]
    args = (a, b, c, x, y, float(m))
    scales = fast1d._error_scales(*args)
    err = fast1d._relative_discrepancy(fast1d.loss_and_grad_sorted(*args),
                                      fast1d._loss_and_grad_dense_reference(*args), scales)
    assert err <= TOL


@pytest.mark.parametrize("bad, match", [
    (dict(alpha_value=0.0), "alpha_value"),
    (dict(alpha_value=float("nan")), "alpha_value"),
    (dict(alpha_value="1.0"), "alpha_value"),
    (dict(alpha_value=True), "alpha_value"),
    (dict(alpha_value=None), "alpha_value"),
    (dict(c=np.ones(3)), "shapes must match"),
    (dict(x=np.array([np.inf])), "finite"),
])
def test_validation_errors(bad, match):
    kw = dict(a=np.ones(2), b=np.zeros(2), c=np.ones(2), x=np.array([0.5]), alpha_value=1.0)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        fast1d.forward_sorted(**kw)


@pytest.mark.parametrize("a, x, match", [
    (np.array([2.0 ** 501]), np.array([0.5]), "a has entries beyond 2\\^500"),
    (np.array([1.0]), np.array([-(2.0 ** 501)]), "x has entries beyond 2\\^500"),
    (np.array([1e-200]), np.array([1e-100]), "below 2\\^-900"),
])
def test_documented_range_is_enforced(a, x, match):
    """Outside |a|, |x| <= 2^500 and nonzero |a x| >= 2^-900 the exact kink test is not
    guaranteed: the sorted kernels refuse (ValueError naming the argument), the dispatcher
    of numerics.relu1d falls back to the dense reference."""
    b, c, y = np.zeros(1), np.ones(1), np.zeros(x.size)
    with pytest.raises(ValueError, match=match):
        fast1d.forward_sorted(a, b, c, x, 1.0)
    with pytest.raises(ValueError, match=match):
        fast1d.loss_and_grad_sorted(a, b, c, x, y, 1.0)
    assert not fast1d._in_exact_range(a, x)
    assert fast1d._in_exact_range(np.array([2.0 ** 500]), np.array([2.0 ** -400]))


def test_overflowing_outputs_raise():
    a, b, c = np.ones(1), np.zeros(1), np.ones(1)
    x, y = np.array([1.0]), np.zeros(1)
    with pytest.raises(ValueError, match="overflows"):
        fast1d.loss_and_grad_sorted(a, b, c, x, y, 5e-324)
    with pytest.raises(ValueError, match="overflows"):
        fast1d.forward_sorted(a, b, np.array([1e300]), np.array([1e10]), 1e-300)


def test_alpha_value_kinds():
    """Integers, numpy scalars and Python floats give the same result (one validation per
    call; a fast path for floats)."""
    a, b, c, x = np.ones(2), np.array([0.0, 0.5]), np.ones(2), np.array([0.25, 1.0])
    ref = fast1d.forward_sorted(a, b, c, x, 2.0)
    for alpha in (2, np.int64(2), np.float64(2.0), np.float32(2.0)):
        assert np.array_equal(fast1d.forward_sorted(a, b, c, x, alpha), ref)


@pytest.mark.parametrize("a, x, refused", [
    ([0.0, 1e-200, 3.0], [1e-100, -2.0], True),      # smallest nonzero product 1e-300
    ([0.0, 1e-100, 3.0], [0.0, 1e-100], False),      # 1e-200 > 2^-900: inside the range
    ([0.0, 0.0], [1e-300], False),                   # no nonzero a: no product to test
    ([1e-300], [0.0, 0.0], False),
    ([], [1.0], False),
    ([1.0, -2.0 ** 501], [1.0], True),               # beyond 2^500
])
def test_exactness_range_with_zero_entries(a, x, refused):
    """The range test of the kink sign skips exact zeros (their products are exact) and
    uses the smallest NONZERO magnitudes; the same verdict from both entry points."""
    a, x = np.array(a, dtype=float), np.array(x, dtype=float)
    assert fast1d._in_exact_range(a, x) is (not refused)
    if refused:
        with pytest.raises(ValueError, match="2\\^-900|2\\^500"):
            fast1d._check_range(a, x)
    else:
        fast1d._check_range(a, x)
