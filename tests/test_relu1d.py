"""numerics.relu1d: exact gradients (finite differences, mpmath at 30 digits), dispatch,
GD and the event-driven gradient flow (claims W2a..W2h)."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from numerics import relu1d as N

finite = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


def _arrays(draw, m):
    return np.array([draw(finite) for _ in range(m)])


@st.composite
def problems(draw, m=4, s=3):
    a, b, c = _arrays(draw, m), _arrays(draw, m), _arrays(draw, m)
    x = np.array(sorted(draw(st.lists(finite, min_size=s, max_size=s, unique=True))))
    y = _arrays(draw, s)
    u = np.multiply.outer(a, x) - b[:, None]
    assume(np.min(np.abs(u)) > 1e-3)  # away from kinks
    alpha = draw(st.sampled_from(["1", "sqrt", "m", 2.5]))
    return a, b, c, x, y, alpha


def _loss_mp(a, b, c, x, y, al):
    tot = mpmath.mpf(0)
    for j in range(len(x)):
        f = sum(mpmath.mpf(c[i]) * max(mpmath.mpf(a[i]) * mpmath.mpf(x[j]) - mpmath.mpf(b[i]), 0)
                for i in range(len(a))) / al
        tot += (f - mpmath.mpf(y[j])) ** 2
    return tot / 2


@given(problems())
def test_gradient_vs_mpmath(p):
    a, b, c, x, y, alpha = p
    al_f = N.normalize_alpha(alpha, a.size)
    loss, grads = N.loss_and_grad_dense(a, b, c, x, y, alpha)
    with mpmath.workdps(30):
        al = mpmath.sqrt(a.size) if alpha == "sqrt" else mpmath.mpf(al_f)
        assert abs(_loss_mp(a, b, c, x, y, al) - loss) <= 1e-13 * max(1.0, loss)
        h = mpmath.mpf("1e-12")
        for k, g in enumerate(grads):
            for i in range(a.size):
                vp = [list(map(mpmath.mpf, v)) for v in (a, b, c)]
                vm = [list(map(mpmath.mpf, v)) for v in (a, b, c)]
                vp[k][i] += h
                vm[k][i] -= h
                d = (_loss_mp(*vp, x, y, al) - _loss_mp(*vm, x, y, al)) / (2 * h)
                assert abs(float(d) - g[i]) <= 1e-12 * max(1.0, abs(float(d))), (k, i)


@given(problems())
def test_gradient_vs_finite_differences(p):
    a, b, c, x, y, alpha = p
    _, (ga, gb, gc) = N.loss_and_grad(a, b, c, x, y, alpha)
    h = 1e-6
    for k, g in enumerate((ga, gb, gc)):
        for i in range(a.size):
            zp = [v.copy() for v in (a, b, c)]
            zm = [v.copy() for v in (a, b, c)]
            zp[k][i] += h
            zm[k][i] -= h
            d = (N.loss_and_grad_dense(*zp, x, y, alpha)[0] - N.loss_and_grad_dense(*zm, x, y, alpha)[0]) / (2 * h)
            assert abs(d - g[i]) <= 1e-6 * max(1.0, abs(d))


def test_dispatch_matches_dense():
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(size=(3, 30))
    x = np.sort(rng.uniform(-2, 2, 9))
    y = rng.normal(size=9)
    assert np.allclose(N.forward(a, b, c, x, "sqrt"), N.forward_dense(a, b, c, x, "sqrt"), rtol=1e-12, atol=1e-12)
    l1, g1 = N.loss_and_grad(a, b, c, x, y, 3.0)
    l2, g2 = N.loss_and_grad_dense(a, b, c, x, y, 3.0)
    assert abs(l1 - l2) <= 1e-12 * l2
    for u, v in zip(g1, g2):
        assert np.allclose(u, v, rtol=1e-11, atol=1e-12)


def test_kink_convention_relu_prime_zero():
    # sample exactly on the knot: inactive for the gradient
    for fn in (N.loss_and_grad_dense, N.loss_and_grad):  # dense reference and dispatch
        _, (ga, gb, gc) = fn([1.0, 2.0], [0.5, 1.0], [2.0, -1.0], [0.5], [1.0], 1.0)
        assert np.all(ga == 0) and np.all(gb == 0) and np.all(gc == 0)


def test_alpha_and_validation():
    assert N.normalize_alpha("sqrt", 16) == 4.0 and N.normalize_alpha("m", 7) == 7.0
    for bad in ("2", 0, -1.0, float("nan"), True):
        with pytest.raises(ValueError):
            N.normalize_alpha(bad, 3)
    with pytest.raises(ValueError, match="shapes must match"):
        N.forward([1.0, 2.0], [0.0], [1.0, 1.0], [0.0], 1)
    with pytest.raises(ValueError, match="finite"):
        N.forward([np.nan], [0.0], [1.0], [0.0], 1)


def test_flow_conserves_delta_and_decreases_loss():
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1, 1, (2, 10))
    c = rng.normal(size=10)
    x = np.sort(rng.uniform(-1, 1, 4))
    y = np.sin(3 * x)
    fl = N.gradient_flow(a, b, c, x, y, "m", np.linspace(0, 20, 5))
    A, B, C = fl.state[:, 0], fl.state[:, 1], fl.state[:, 2]
    d = C**2 - A**2 - B**2
    assert np.max(np.abs(d - d[0])) <= 1e-10 * np.max(np.abs(d[0]))
    losses = [N.loss_and_grad_dense(A[k], B[k], C[k], x, y, "m")[0] for k in range(5)]
    assert all(l2 <= l1 + 1e-14 for l1, l2 in zip(losses, losses[1:]))
    # dense output agrees with t_eval output
    assert np.allclose(N.gradient_flow(a, b, c, x, y, "m", [0, 10.0], dense=True).dense(10.0),
                       fl.state[2].ravel(), rtol=1e-9, atol=1e-11)


def test_reduced_flow_plane_equals_cylinder_for_unit_radius_rate():
    # with 'cylinder' and 'plane' metrics the radial equations coincide: r' identical at t = 0+
    r = np.array([1.0, -0.7])
    th = np.array([0.3, 2.0])
    x = np.array([-0.5, 0.4])
    y = np.array([1.0, -1.0])
    f1 = N.reduced_flow(r, th, 0.0, x, y, [0, 1e-3], inverse_metric="cylinder")
    f2 = N.reduced_flow(r, th, 0.0, x, y, [0, 1e-3], inverse_metric="plane")
    assert np.allclose(f1.state[-1, 0], f2.state[-1, 0], rtol=1e-5)
    with pytest.raises(ValueError, match="inverse_metric"):
        N.reduced_flow(r, th, 0.0, x, y, [0, 1.0], inverse_metric="flat")


def test_gd_divergence_names_step_size():
    a = [-1.58387323, -0.24555111, -0.77660862, 0.75748306]
    b = [-0.91847482, -0.28234513, -0.23294793, 0.56757142]
    c = [-2.5459046, -0.34062494, 0.75961515, -0.36168824]
    y = [-1.52693697, 0.32659817, 0.33668691, -0.27048939, -1.15979571]
    with pytest.raises(FloatingPointError, match="eta=3"):
        N.gradient_descent(a, b, c, np.linspace(-1, 1, 5), y, 1, eta=3.0, steps=60)
    # a small step size converges
    g = N.gradient_descent(a, b, c, np.linspace(-1, 1, 5), y, 1, eta=0.01, steps=60)
    assert g.loss[-1] < g.loss[0]


def test_gd_converges_to_filippov_flow_through_sliding():
    """Independent check of the event/sliding treatment: plain GD (no events) approaches
    the integrated flow at rate O(eta) over a horizon with slides and un-slides."""
    rng = np.random.default_rng(0)
    m, s = 20, 5
    a, b = rng.uniform(-1, 1, (2, m))
    c = rng.normal(size=m) * 2
    x = np.sort(rng.uniform(-1, 1, s))
    y = np.sin(3 * x)
    T = 25.0
    fl = N.gradient_flow(a, b, c, x, y, "m", [0, T])
    kinds = {e[1] for e in fl.events}
    assert {"slide", "unslide", "cross"} <= kinds
    errs = []
    for eta in (4e-3, 2e-3):
        n = int(round(T / eta))
        g = N.gradient_descent(a, b, c, x, y, "m", eta=eta, steps=n, record_every=n)
        errs.append(np.max(np.abs(np.array([g.a[-1], g.b[-1], g.c[-1]]) - fl.state[-1])))
    assert errs[0] < 1e-3
    assert 1.7 < errs[0] / errs[1] < 2.3
