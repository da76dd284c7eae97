"""numerics.meanfield1d (claim W2i): the sphere rule of mu_0, the mean-field velocity and
mean-field GD of weighted particles, and the width study of verify.studies.williams."""
import math

import numpy as np
import pytest

from numerics import meanfield1d as M
from numerics import relu1d
from verify.studies import williams as S

X = np.array([-0.9, -0.5, -0.1, 0.25, 0.6, 0.95])
Y = np.sin(np.pi * X)


def test_rule_total_weight_is_the_second_moment_second_order():
    # sum of weights = int |w|^2 dmu_0 = 1/3 + 1/3 + sigma_c^2 (2-homogeneous test |w|^2)
    errs = []
    for p in (8, 16, 32):
        w = M.sphere_rule(X, p, 4.0, sigma_c=0.5)[3]
        errs.append(abs(w.sum() - (2 / 3 + 0.25)))
    assert errs[-1] < 1e-3
    assert errs[0] / errs[1] > 3 and errs[1] / errs[2] > 3  # second order


def test_rule_integrates_a_kinked_test_function():
    # E[|c| (k a - b)_+] = sqrt(2/pi) ((1 + k)^3 - (1 - k)^3) / (24 k), from the definition
    k = 0.3
    exact = math.sqrt(2 / math.pi) * ((1 + k) ** 3 - (1 - k) ** 3) / (24 * k)
    errs = []
    for p in (16, 32):
        a, b, c, w = M.sphere_rule(X, p, 4.0)
        errs.append(abs(w @ (np.abs(c) * np.maximum(k * a - b, 0)) - exact) / exact)
    # k = 0.3 is no sample: its kink is not split, the rule is second order across it
    assert errs[1] < 1e-3 and errs[0] / errs[1] > 3


def test_velocity_is_the_scaled_gradient_of_the_width_m_network():
    rng = np.random.default_rng(0)
    m = 50
    a, b = rng.uniform(-1, 1, (2, m))
    c = rng.standard_normal(m)
    va, vb, vc, rho = M.meanfield_velocity(a, b, c, np.full(m, 1 / m), X, Y)
    _, (ga, gb, gc) = relu1d.loss_and_grad(a, b, c, X, Y, float(m))
    for v, g in ((va, ga), (vb, gb), (vc, gc)):
        np.testing.assert_allclose(v, -m * g, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(rho, relu1d.forward(a, b, c, X, float(m)) - Y, atol=1e-13)


def test_meanfield_gd_with_equal_weights_is_gd_at_step_m_h():
    rng = np.random.default_rng(1)
    m = 40
    a, b = rng.uniform(-1, 1, (2, m))
    c = rng.standard_normal(m)
    out = M.meanfield_gd(a, b, c, np.full(m, 1 / m), X, Y, step=0.01, steps=20)
    run = relu1d.gradient_descent(a, b, c, X, Y, float(m), eta=m * 0.01, steps=20,
                                  record_every=20)
    for v, name in zip(out, "abc"):
        np.testing.assert_allclose(v, run.final[name], rtol=1e-10, atol=1e-12)


def test_weighted_forward():
    a, b, c, w = (np.array([0.5, -1.0]), np.array([0.1, 0.2]), np.array([2.0, -1.0]),
                  np.array([0.25, 0.5]))
    p = np.array([-1.0, 0.0, 1.0])
    want = [w @ (c * np.maximum(a * t - b, 0)) for t in p]
    np.testing.assert_allclose(M.weighted_forward(a, b, c, w, p), want, rtol=1e-15)


@pytest.mark.parametrize("call, match", [
    (lambda: M.sphere_rule(X, 0, 4.0), "panels"),
    (lambda: M.sphere_rule(X, M.MAX_RULE_PANELS + 1, 4.0), "panels"),
    (lambda: M.sphere_rule(X, 4, -1.0), "weight_exponent"),
    (lambda: M.sphere_rule(X, 4, 4.0, sigma_c=0.0), "sigma_c"),
    (lambda: M.sphere_rule([np.nan], 4, 4.0), "x must be finite"),
    (lambda: M.meanfield_gd([1.0], [0.0], [1.0], [-1.0], X, Y, step=0.1, steps=1), "weights"),
    (lambda: M.meanfield_gd([1.0], [0.0], [1.0, 2.0], [1.0], X, Y, step=0.1, steps=1),
     "one entry per particle"),
    (lambda: M.meanfield_gd([1.0], [0.0], [1.0], [1.0], X, Y[:2], step=0.1, steps=1), "same size"),
    (lambda: M.meanfield_gd([1.0], [0.0], [1.0], [1.0], X, Y, step=0.0, steps=1), "step"),
    (lambda: M.meanfield_velocity([1.0], [0.0], [1.0], [1.0], [[1.0]], [1.0]), "1-D"),
    (lambda: S.limit_reference(3, 4.0), "even"),
    (lambda: S.width_distance(0, np.random.default_rng(0), 1.0, S.LIMIT_GRID), "m must"),
    (lambda: S.width_distance(10, np.random.default_rng(0), 10.0, np.zeros(3)), "reference"),
])
def test_validation(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_type_errors():
    with pytest.raises(TypeError, match="panels"):
        M.sphere_rule(X, 4.0, 4.0)
    with pytest.raises(TypeError, match="rng"):
        S.width_distance(10, 0, 10.0, S.LIMIT_GRID)


def test_width_study_small():
    ref = S.limit_reference(8, 4.0)
    assert ref.error < ref.coarse_difference and ref.n_particles > 1000
    d = S.width_distances([100, 400], 3, lambda w, k: np.random.default_rng([w, k]),
                          lambda w: float(w), ref.f)
    assert d.shape == (2, 3) and np.all(np.isfinite(d)) and np.all(d > 0)
