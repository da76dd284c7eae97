"""numerics.gaussian_orthants (claim H1c): the half-normal Gauss rule against the exact
moments (and its measured node bound), the orthant product rule against exact Gaussian
moments of random piecewise polynomials (Hypothesis), and the validation of every input."""
from __future__ import annotations

import math
import time

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

from numerics import gaussian_orthants as go
from numerics.gaussian_orthants import (HALF_NORMAL_MAX_NODES, HALF_NORMAL_MOMENT_RTOL,
                                        gaussian_expectation, gaussian_first_moment,
                                        half_normal_rule)

_U = float(np.finfo(float).eps)


def _half_moment(k: int) -> mpmath.mpf:
    """E[t^k; t > 0] for t ~ N(0, 1): 2^(k/2) Gamma((k+1)/2) / (2 sqrt(pi)), in mpmath."""
    k = mpmath.mpf(k)
    return 2 ** (k / 2) * mpmath.gamma((k + 1) / 2) / (2 * mpmath.sqrt(mpmath.pi))


def _worst_moment_error(t: np.ndarray, w: np.ndarray) -> float:
    """max over k < 2n of |sum_j w_j t_j^k / E[t^k; t > 0] - 1|, the sums exact in mpmath
    (the rule's own error, not float64 summation)."""
    with mpmath.workdps(40):
        return max(float(abs(mpmath.fsum(mpmath.mpf(float(wj)) * mpmath.mpf(float(tj)) ** k
                                         for tj, wj in zip(t, w)) / _half_moment(k) - 1))
                   for k in range(2 * t.size))


def test_half_normal_rule_moments():
    """Every admitted n meets the documented moment accuracy; positive weights, nodes in
    (0, 12) increasing; the float64 moments (as a caller forms them) agree too."""
    for n in range(1, HALF_NORMAL_MAX_NODES + 1):
        t, w = half_normal_rule(n)
        assert t.shape == w.shape == (n,) and np.all(w > 0) and np.all(np.diff(t) > 0)
        assert 0 < t[0] and t[-1] < 12
        assert _worst_moment_error(t, w) <= HALF_NORMAL_MOMENT_RTOL, n
    t, w = half_normal_rule(5)
    for k in range(10):
        exact = 2 ** (k / 2) * math.gamma((k + 1) / 2) / (2 * math.sqrt(math.pi))
        assert abs(w @ t ** k - exact) < 1e-14 * max(1.0, exact)


def test_half_normal_node_bound_is_the_measured_one():
    """The bound is tight: one node more misses the tolerance (the discretization's
    truncation of the tail at 12), so HALF_NORMAL_MAX_NODES is the largest n that meets it."""
    assert _worst_moment_error(*go._rule(HALF_NORMAL_MAX_NODES + 1)) > HALF_NORMAL_MOMENT_RTOL
    with pytest.raises(ValueError, match=rf"n \(nodes.*HALF_NORMAL_MAX_NODES = "
                                         rf"{HALF_NORMAL_MAX_NODES}.*got {HALF_NORMAL_MAX_NODES + 1}"):
        half_normal_rule(HALF_NORMAL_MAX_NODES + 1)


# ------------------------------------------------------------- exactness (Hypothesis)
def _signed_moment(e: int, side: int, var: float) -> mpmath.mpf:
    """E[x^e; side * x > 0] for x ~ N(0, var), exact in mpmath."""
    return (-1 if side < 0 and e % 2 else 1) * mpmath.mpf(var) ** (mpmath.mpf(e) / 2) * _half_moment(e)


@st.composite
def _orthant_polynomials(draw):
    """(d, n, var, terms): g(x) = sum_terms c prod_i x_i^e_i (p_i if x_i > 0 else q_i), a
    different polynomial on each orthant, with every e_i <= 2n - 2 (so that g x_j has
    degree < 2n in each coordinate: the rule must be exact).  Coefficients below 1e-50 in
    magnitude are drawn as 0: a product of up to d + 2 such factors and the rule's
    weights would underflow into the subnormal range, where float64 rounding has an
    absolute error (up to 2^-1075 per operation, then scaled by later factors) that the
    relative budget of the test does not cover; with |coefficients| >= 1e-50 every
    product stays above 1e-270 and the budget holds."""
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 4))
    var = draw(st.sampled_from([1.0, 0.2, 1 / 3, 2.5, 1e-3, 40.0]))
    coef = st.floats(-2, 2, allow_nan=False, allow_infinity=False).map(
        lambda v: v if abs(v) >= 1e-50 else 0.0)
    factor = st.tuples(st.integers(0, 2 * n - 2), coef, coef)
    terms = draw(st.lists(st.tuples(coef, st.lists(factor, min_size=d, max_size=d)),
                          min_size=1, max_size=4))
    return d, n, var, terms


def _evaluate(terms, X: np.ndarray) -> np.ndarray:
    out = np.zeros(X.shape[0])
    for c, factors in terms:
        val = np.full(X.shape[0], c)
        for i, (e, p, q) in enumerate(factors):
            val = val * X[:, i] ** e * np.where(X[:, i] > 0, p, q)
        out += val
    return out


def _exact(terms, var: float, j: int | None) -> tuple[float, float]:
    """(E[g(x) x_j] or E[g(x)] for j None, E[|g-terms x_j|] bound) exactly, term by term
    as products of 1-D moments."""
    total, size = mpmath.mpf(0), mpmath.mpf(0)
    with mpmath.workdps(40):
        for c, factors in terms:
            val, mag = mpmath.mpf(c), abs(mpmath.mpf(c))
            for i, (e, p, q) in enumerate(factors):
                e = e + (1 if i == j else 0)
                plus, minus = _signed_moment(e, 1, var), _signed_moment(e, -1, var)
                val *= p * plus + q * minus
                mag *= abs(p) * abs(plus) + abs(q) * abs(minus)
            total += val
            size += mag
    return float(total), float(size)


@given(_orthant_polynomials())
def test_orthant_rule_is_exact_for_piecewise_polynomials(case):
    """E[g(x)] and E[g(x) x] of a random polynomial per orthant against the exact product
    of 1-D Gaussian half-line moments (Gamma function, mpmath).  Error budget per result:
    (d + 1) times the rule's moment accuracy on the sum of |terms| (each 1-D factor is
    accurate to HALF_NORMAL_MOMENT_RTOL relative on its |p| M+ + |q| M- part) and the
    float64 rounding of a sum of (2n)^d products of d + 2 factors."""
    d, n, var, terms = case
    g = lambda X: _evaluate(terms, X)                   # noqa: E731
    N = (2 * n) ** d
    budget = lambda size: ((d + 1) * HALF_NORMAL_MOMENT_RTOL + 4 * (N + d + 2 * n) * _U) * size  # noqa: E731
    mean, size = _exact(terms, var, None)
    assert abs(gaussian_expectation(g, d, n, var) - mean) <= budget(size)
    got = gaussian_first_moment(g, d, n, var)
    assert got.shape == (d,)
    for j in range(d):
        ref, size = _exact(terms, var, j)
        assert abs(got[j] - ref) <= budget(size), (j, got[j], ref)


def test_one_node_less_is_not_exact():
    """Sensitivity: with n nodes the rule misses E[|x|^(2n)] (degree 2n is beyond it) by far
    more than the budget above, so the property test can fail."""
    for n in (1, 2, 3):
        got = gaussian_expectation(lambda X: np.abs(X[:, 0]) ** (2 * n), 1, n)
        exact = float(2 * _signed_moment(2 * n, 1, 1.0))
        assert abs(got - exact) > 1e-3 * exact


def test_mirrored_rule_integrates_each_orthant():
    """A kink on a coordinate hyperplane is integrated exactly (E[|x_1| x_2^2 1{x_2 > 0}]
    = sqrt(2/pi) var^(3/2) / 2); a Gauss-Hermite rule over all of R is not exact there."""
    var = 0.7
    got = gaussian_expectation(lambda X: np.abs(X[:, 0]) * X[:, 1] ** 2 * (X[:, 1] > 0), 2, 2,
                               var)
    exact = math.sqrt(2 / math.pi) * var ** 1.5 / 2
    assert abs(got - exact) <= (3 * HALF_NORMAL_MOMENT_RTOL + 16 * _U) * exact   # 2 factors
    x, w = np.polynomial.hermite_e.hermegauss(4)
    herm = (w / w.sum()) @ np.abs(x)
    assert abs(herm - math.sqrt(2 / math.pi)) > 1e-3


# ---------------------------------------------------------------------------- validation
_G = lambda X: X[:, 0] ** 2                             # noqa: E731


@pytest.mark.parametrize("n", [0, -1, 2.5, True, "3", None, HALF_NORMAL_MAX_NODES + 1, 10 ** 30])
def test_bad_n_is_refused(n):
    with pytest.raises((ValueError, TypeError), match=r"n \(nodes of the half-normal rule"):
        half_normal_rule(n)
    with pytest.raises((ValueError, TypeError), match=r"n \(nodes of the half-normal rule"):
        gaussian_first_moment(_G, 2, n)


@pytest.mark.parametrize("d", [0, -2, 1.5, False, "2", None, np.ones(2), 65, 2 ** 63])
def test_bad_d_is_refused(d):
    with pytest.raises((ValueError, TypeError), match=r"d \(dimension of x"):
        gaussian_first_moment(_G, d, 2)
    with pytest.raises((ValueError, TypeError), match=r"d \(dimension of x"):
        gaussian_expectation(_G, d, 2)


@pytest.mark.parametrize("var", [0.0, -1.0, math.nan, math.inf, -math.inf, 1e300, 5e-324,
                                 "1", None, 1j, np.ones(2)])
def test_bad_var_is_refused(var):
    with pytest.raises((ValueError, TypeError), match=r"var \(variance"):
        gaussian_first_moment(_G, 2, 2, var)
    with pytest.raises((ValueError, TypeError), match=r"var \(variance"):
        gaussian_expectation(_G, 2, 2, var)


@pytest.mark.parametrize("d, n", [(10, 5), (20, 1), (64, 19), (7, 7)])
def test_oversize_grid_is_refused_at_once(d, n):
    t0 = time.process_time()
    with pytest.raises(ValueError, match=r"orthant product grid .* too large.*fewer nodes n"):
        gaussian_first_moment(_G, d, n)
    assert time.process_time() - t0 < 1.0


@pytest.mark.parametrize("g, match", [
    (lambda X: np.full(X.shape[0], np.nan), "must be finite"),
    (lambda X: np.where(X[:, 0] > 0, np.inf, 0.0), "must be finite"),
    (lambda X: X[:, :1], r"must have shape \(16,\)"),
    (lambda X: 1.0, r"must have shape \(16,\)"),
    (lambda X: X[:-1, 0], r"must have shape \(16,\)"),
    (lambda X: np.array(["a"] * X.shape[0]), "real number"),
    (lambda X: X[:, 0] + 1j, "complex"),
    (lambda X: None, "None"),
])
def test_bad_integrand_values_are_refused(g, match):
    for fn in (gaussian_first_moment, gaussian_expectation):
        with pytest.raises((ValueError, TypeError), match=r"g\(X\) \(the integrand's values"):
            fn(g, 2, 2)
        with pytest.raises((ValueError, TypeError), match=match):
            fn(g, 2, 2)


@pytest.mark.parametrize("g", [None, 3.0, "f", np.ones(3)])
def test_integrand_must_be_callable(g):
    with pytest.raises(TypeError, match=r"g \(the integrand\) must be a callable"):
        gaussian_first_moment(g, 2, 2)


def test_overflowing_result_is_refused_not_inf():
    """Finite values whose first moment overflows: a ValueError naming the result.  (E[g]
    itself cannot overflow: positive weights summing to 1.)"""
    g = lambda X: np.full(X.shape[0], 1e300)            # noqa: E731
    with pytest.raises(ValueError, match=r"E\[g\(x\) x\] is not representable"):
        gaussian_first_moment(g, 1, 2, var=1e200)


def test_results_are_float64_and_deterministic():
    g = lambda X: X[:, 0] * np.abs(X[:, 1])             # noqa: E731
    a, b = gaussian_first_moment(g, 3, 2, 0.5), gaussian_first_moment(g, 3, 2, 0.5)
    assert a.dtype == np.float64 and np.array_equal(a, b)
    assert isinstance(gaussian_expectation(g, 3, 2), float)
