"""numerics.relu1d: exact gradients (finite differences, mpmath at 30 digits), dispatch,
GD and the event-driven gradient flow (claims W2a..W2h)."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from numerics import relu1d as N
from numerics.validation import DivergenceError

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


@pytest.mark.parametrize("metric", ["cylinder", "plane"])
def test_reduced_flow_integrates_the_stated_ode(metric):
    """reduced_flow vs an independent integration (scipy's solve_ivp on the numerics'
    canonical gradient) of dw/dt = -time_scale G^-1 grad L~ over an event-free horizon;
    the two metrics differ in the angular entry (1 vs 1/r^2), so a flow that ignored the
    metric fails one of the two cases."""
    from scipy.integrate import solve_ivp
    r = np.array([1.0, -0.7, 0.5])
    th = np.array([0.3, 2.0, -1.0])
    x = np.array([-0.5, 0.4])
    y = np.array([1.0, -1.0])
    T, ts = 0.05, 3.0
    fl = N.reduced_flow(r, th, 0.0, x, y, [0, T], inverse_metric=metric, time_scale=ts)
    assert fl.events == []

    def rhs(_t, w):
        rr, tt = w[:3], w[3:]
        _, (gr, gt) = N.canonical_loss_and_grad(rr, tt, x, y)
        g_tt = np.ones(3) if metric == "cylinder" else 1.0 / rr**2
        return -ts * np.concatenate([gr, g_tt * gt])
    ref = solve_ivp(rhs, (0, T), np.concatenate([r, th]), method="DOP853", rtol=1e-12, atol=1e-14)
    assert np.allclose(fl.state[-1].ravel(), ref.y[:, -1], rtol=1e-9, atol=1e-11)
    moved = np.abs(fl.state[-1, 1] - th)
    assert moved.max() > 1e-3  # the angular equation was exercised
    with pytest.raises(ValueError, match="inverse_metric"):
        N.reduced_flow(r, th, 0.0, x, y, [0, 1.0], inverse_metric="flat")


def test_gd_divergence_names_step_size():
    a = [-1.58387323, -0.24555111, -0.77660862, 0.75748306]
    b = [-0.91847482, -0.28234513, -0.23294793, 0.56757142]
    c = [-2.5459046, -0.34062494, 0.75961515, -0.36168824]
    y = [-1.52693697, 0.32659817, 0.33668691, -0.27048939, -1.15979571]
    with pytest.raises(DivergenceError, match="eta=3"):
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


# --------------------------------------------------------------------------- bad inputs
_NET = dict(a=[0.5, -0.3], b=[0.1, 0.2], c=[1.0, -1.0], x=[-0.5, 0.5], y=[0.2, -0.1], alpha="m")


@pytest.mark.parametrize("kw, name", [
    (dict(steps=-1), "steps"), (dict(record_every=0), "record_every"),
    (dict(eta=float("nan")), "eta"), (dict(eta=True), "eta"), (dict(steps=2.5), "steps")])
def test_gradient_descent_bad_arguments_name_the_argument(kw, name):
    args = dict(eta=0.1, steps=3)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        N.gradient_descent(**_NET, **args)


@pytest.mark.parametrize("kw, name", [
    (dict(t_eval=[]), "t_eval"), (dict(rtol=float("nan")), "rtol"), (dict(atol=float("inf")), "atol"),
    (dict(max_steps=-1), "max_steps"), (dict(max_events=0), "max_events"),
    (dict(t_eval=[0.0, float("nan")]), "t_eval")])
def test_gradient_flow_bad_arguments_name_the_argument(kw, name):
    args = dict(t_eval=[0.0, 1.0])
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        N.gradient_flow(**_NET, **args)
    with pytest.raises(ValueError):
        N.gradient_flow(_NET["a"], [0.1, float("nan")], _NET["c"], _NET["x"], _NET["y"], "m", [0, 1.0])


def test_reduced_flow_nan_field_and_time_scale_raise_instead_of_hanging():
    x, y = np.array([-0.5, 0.5]), np.array([0.2, -0.1])
    with pytest.raises(ValueError, match="not finite at t = 0"):   # r = 0: 1/r^2 in the plane metric
        N.reduced_flow([0.0, 1.0], [0.1, 0.2], 0.0, x, y, [0, 1.0], inverse_metric="plane")
    for bad in (float("nan"), float("inf"), 0.0, -1.0):
        with pytest.raises(ValueError, match="time_scale"):
            N.reduced_flow([0.5, 1.0], [0.1, 0.2], 0.0, x, y, [0, 1.0], time_scale=bad)
    with pytest.raises(ValueError, match="not finite"):
        N.reduced_flow([0.5, 1.0], [0.1, 0.2], 0.0, x, y, [0, 1.0],
                       inverse_metric=lambda r, d: (np.full_like(r, np.nan), np.ones_like(r)))


def test_step_budget_ends_with_a_clear_error():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (2, 10))
    c = rng.normal(size=10)
    x = np.sort(rng.uniform(-1, 1, 4))
    with pytest.raises(RuntimeError, match="step budget exhausted"):
        N.gradient_flow(a, b, c, x, np.sin(3 * x), "m", [0, 50.0], max_steps=3)


def test_knots_reject_neurons_without_a_knot():
    assert N.knots([2.0, -1.0], [1.0, 1.0]).tolist() == [0.5, -1.0]
    with pytest.raises(ValueError, match="a must be nonzero"):
        N.knots([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="overflows"):
        N.knots([1e-300], [1e300])


def _adaptive_instance(seed):
    """The adaptive-regime run of claim W2h at seed ``seed`` (delta = 50, m = 40)."""
    from numerics.rng import make_rng
    from verify.formulas import full_from_canonical
    rng = make_rng(seed, "W2h", "sim")
    x = np.sort(rng.uniform(-1.0, 1.0, 6))
    y = np.abs(x) * 2 - 0.6 + 0.5 * np.cos(5 * x)
    r0 = rng.choice([-1.0, 1.0], 40) * rng.uniform(0.5, 1.5, 40)
    t0 = rng.uniform(-np.pi, np.pi, 40)
    return (*full_from_canonical(r0, t0, np.full(40, 50.0)), x, y)


def test_filippov_flow_without_zero_progress_loops():
    """Regression (W2h at seed 5): after a crossing the trajectory left the line into the
    new side and came back within one solver step; the return crossing was dated at the
    restart time, so the integrator restarted there forever (399 s, then max_steps).  Also
    two neurons reach (a, b) = (0, 0) (every sample line at once) and must collapse there."""
    a, b, c, x, y = _adaptive_instance(5)
    fl = N.gradient_flow(a, b, c, x, y, "m", [0, 0.8], max_steps=5000)
    assert fl.n_steps < 1000
    kinds = {e[1] for e in fl.events}
    assert {"cross", "slide", "collapse"} <= kinds
    collapsed = [e[2] for e in fl.events if e[1] == "collapse"]
    A, B, C = fl.state[-1]
    assert np.all(A[collapsed] == 0) and np.all(B[collapsed] == 0)
    d = C**2 - A**2 - B**2
    assert np.max(np.abs(d - (c**2 - a**2 - b**2))) <= 1e-9 * 50
    # no event repeats at one instant for one pair (no zero-progress restarts)
    keys = [(e[0], e[1], e[2], e[3]) for e in fl.events]
    assert len(keys) == len(set(keys))


def test_crossing_and_return_within_one_step_is_located():
    """Regression (found by claim W2c's Hypothesis instances): neuron 5 (b = 1e-9) crosses
    sample 2 at t = 0.7415 and comes back at t = 9.19 inside one long DOP853 step; checking
    the signs only at step ends missed both events and the full flow drifted 0.11 away
    from the reduced flow.  The switching values are now probed inside every step."""
    a = np.array([0.0, -0.414125184805, -0.629241378296, -0.934965148794, -0.095864292038, 0.2,
                  0.720373555169, 0.294958928956, -0.486498409302, -0.939312359602, 0.255867012742,
                  0.853495800031])
    b = np.array([0.144706593537, 1.0, 0.108525059446, -0.267652082558, 0.680985299569, 1e-09,
                  0.131836369505, -0.626948057895, -0.906651393379, -0.115926483027, 0.25,
                  -0.612868657556])
    c = np.array([-1.068858430779, -0.789687908589, 0.103986406856, 0.75, -0.67252530298, 0.225,
                  0.75, -0.823145043833, 0.75, 0.75, 0.428514478413, 0.75])
    x = np.array([-0.195698677599, -0.095698677599, 0.004301322401, 0.457602696919, 0.864854696324])
    y = np.array([-0.409705808761, -0.721591018556, 0.201476168118, 0.0, -0.073023536544])
    fl = N.gradient_flow(a, b, c, x, y, "m", [0, 12.0])
    crossings_5_2 = [e[0] for e in fl.events if e[1:] == ("cross", 5, 2)]
    assert len(crossings_5_2) == 2 and abs(crossings_5_2[0] - 0.7415496485) < 1e-8


def test_canonical_forward_scales_instead_of_overflowing():
    """A representable output whose terms overflow is computed exactly (powers of two);
    an unrepresentable one raises ValueError naming the overflow."""
    assert N.canonical_forward([1e300, 1e300], [0.0, 0.0], [1e8]).tolist() == [1e308]
    assert N.canonical_forward([1e300], [0.0], [0.5]).tolist() == [5e299]
    with pytest.raises(ValueError, match="overflows.*rescale r or x"):
        N.canonical_forward([1e300], [0.0], [1e300])


def test_loss_and_grad_unrepresentable_gradient_is_named():
    """Fuzz finding: grad_c = relu @ rho / alpha overflowed to inf silently (true value
    ~2.7e395); now a ValueError naming the gradient and the overflow."""
    t = 2.7094263272369976e-205
    with pytest.raises(ValueError, match="gradient .* overflows"):
        N.loss_and_grad([t], [-1e300], [t], [t], [t], "sqrt")
    with pytest.raises(ValueError, match="gradient .* overflows"):
        N.loss_and_grad_dense([t], [-1e300], [t], [t], [t], "sqrt")


def test_reduced_flow_chattering_stops_with_a_named_cause():
    """Fuzz finding: two samples 1e-45 apart (nearly coincident sample lines) made a
    near-zero neuron switch 50,000 times; the flow ran for minutes before max_steps.  Now
    the shared chattering guard stops it after MAX_CROSSINGS events of one pair with a
    ChatteringError (a RuntimeError and a DivergenceError) naming the pair (also for two
    samples 0 and 3.6e-158 apart, alternating between both pairs)."""
    r = np.array([1.7708170900121476, 1.3208596800850356])
    theta = np.array([2.9938033664641190e-233, 1.6179250469355813])
    delta = np.array([-4.9406564584124654e-324, -1.4529223254620947])
    x = np.array([-1.4012984643248171e-045, 2.0120413768588234e-106])
    y = np.array([7.4331091190927753e-22, -1.1754943508222875e-38])
    with pytest.raises(RuntimeError, match="chattering: neuron 0 .* sample 1"):
        N.reduced_flow(r, theta, delta, x, y, [0.0, 0.15])


def test_reduced_flow_chattering_between_two_nearly_equal_samples():
    """Fuzz finding: samples 0 and 3.6e-158 (the same line in float64 terms) made one
    neuron alternate between both pairs for > 10 s; stopped by the per-pair budget."""
    with pytest.raises(RuntimeError, match="chattering: neuron 0"):
        N.reduced_flow([0.8700318483336817], [7.17438483795105e-272], [1e-13],
                       [0.0, -0.2544621497355485, 3.623027711718712e-158],
                       [0.0, 0.8053612123082274, -0.7395621682977849],
                       [0.01750881089567847, 0.3603156732780159], time_scale=0.5)


def test_forward_unrepresentable_is_named():
    """Fuzz finding: f = c relu(a x - b) = 1e200 * 1e300 returned inf silently."""
    for fn in (N.forward, N.forward_dense):
        with pytest.raises(ValueError, match="f_z\\(x\\) .* overflows .* rescale a, b, c or x"):
            fn([5e-324], [-1e300], [1e200], [-0.5655969900927075], "m")


# --------------------------------------------------------------------------- public surface
def _exact_loss_and_grad(a, b, c, x, y, alpha):
    """L and its gradient in exact rational arithmetic, from the definitions (W.1),
    ReLU'(0) = 0, rounded once to float64 at the end."""
    from fractions import Fraction as Q
    a, b, c, x, y = ([Q(float(v)) for v in np.atleast_1d(t)] for t in (a, b, c, x, y))
    al = Q(float(alpha))
    u = [[ai * xj - bi for xj in x] for ai, bi in zip(a, b)]
    rho = [sum(ci * max(ui[j], 0) for ci, ui in zip(c, u)) / al - y[j] for j in range(len(x))]
    ga = [ci * sum(r * xj for r, xj, uij in zip(rho, x, ui) if uij > 0) / al for ci, ui in zip(c, u)]
    gb = [-ci * sum(r for r, uij in zip(rho, ui) if uij > 0) / al for ci, ui in zip(c, u)]
    gc = [sum(max(uij, 0) * r for uij, r in zip(ui, rho)) / al for ui in u]
    return (float(sum(r * r for r in rho) / 2),
            tuple(np.array([float(v) for v in g]) for g in (ga, gb, gc)))


@pytest.mark.parametrize("args", [
    # c_i a_i = 1e400 overflows inside the sorted engine; f = 1e100 and L = 5e199 do not
    ([1e200], [0.0], [1e200], [1.0], [0.0], 1e300),
    # |a| beyond the sorted engine's exactness range 2^500
    ([1e300, -2.0], [3.0, 1.0], [1e-305, 0.5], [1.0, -0.5, 2.0], [0.3, 0.1, -1e-200], 2.0),
    # rho x overflows for the dense sums; the gradient is still representable
    ([1.0, 1.0], [0.0, -1.0], [1.0, 1.0], [1e154, 2e154], [0.0, 1.0], 1e160),
])
def test_loss_and_grad_rescales_an_intermediate_overflow(args):
    """An intermediate overflow with a representable result is rescaled exactly by powers
    of two (was a ValueError 'overflows' or a refusal of |a| > 2^500)."""
    loss, grads = N.loss_and_grad(*args)
    ref_loss, ref_grads = _exact_loss_and_grad(*args)
    assert loss == pytest.approx(ref_loss, rel=1e-14)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-14, atol=0)
    loss_d, grads_d = N.loss_and_grad_dense(*args)
    assert loss_d == pytest.approx(ref_loss, rel=1e-14)


def test_loss_and_grad_unrepresentable_is_named():
    with pytest.raises(ValueError, match="loss L\\(z\\) is not representable"):
        N.loss_and_grad([1e200], [0.0], [1e200], [1.0], [0.0], 1.0)


def test_canonical_loss_and_grad_rescaled_or_named():
    """r = 1e300 made rho r overflow to inf silently; now exact rescaling, and a
    ValueError when the loss itself is beyond float64."""
    loss, (g_r, g_th) = N.canonical_loss_and_grad([1e300], [0.0], [1.0], [1e300])
    assert loss == 0.0 and g_r[0] == 0.0 and g_th[0] == 0.0
    loss, (g_r, g_th) = N.canonical_loss_and_grad([1e150], [0.0], [1.0], [0.0])
    assert loss == pytest.approx(0.5e300, rel=1e-15) and g_r[0] == pytest.approx(1e150, rel=1e-15)
    with pytest.raises(ValueError, match="the loss L~\\(w\\) is not representable"):
        N.canonical_loss_and_grad([1e300], [0.0], [1.0], [0.0])


def test_normalize_alpha_refuses_a_bad_width():
    """normalize_alpha('sqrt', -4) returned nan."""
    for m in (-4, 0, 1.5, None, "4"):
        with pytest.raises(ValueError, match="^m \\(number of neurons\\)"):
            N.normalize_alpha("sqrt", m)
    assert N.normalize_alpha("sqrt", 4) == 2.0


def test_gradient_descent_refuses_absurd_step_counts_fast():
    import time
    t0 = time.process_time()
    for steps in (2 ** 63 - 1, 10 ** 12):
        with pytest.raises(ValueError, match="^steps is too large"):
            N.gradient_descent([1.0], [0.0], [1.0], [1.0], [0.0], "m", eta=0.1, steps=steps)
    with pytest.raises(ValueError, match="record_every"):
        N.gradient_descent(np.ones(1000), np.zeros(1000), np.ones(1000), [1.0], [0.0], "m",
                           eta=0.1, steps=10 ** 6, long_run=True)
    assert time.process_time() - t0 < 1.0


def test_gradient_descent_refuses_a_last_time_beyond_float64():
    """The result records the times k eta: eta * steps must be a float64."""
    with pytest.raises(ValueError, match=r"eta \* steps"):
        N.gradient_descent([1.0], [0.0], [0.0], [1.0], [0.0], "m", eta=1e308, steps=1000)


def test_plane_metric_at_r_zero_is_named_without_a_warning():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError):
            N.reduced_flow([0.0, 1.0], [0.1, 0.2], [1.0, 1.0], [0.5], [1.0], [0.0, 0.1],
                           inverse_metric="plane")


# --------------------------------------------------------------------------- long runs, named stops
def test_long_gradient_descent_is_refused_fast_unless_asked_for(monkeypatch, capsys):
    """steps=10**6 ran for minutes without progress: it is refused at once naming steps;
    with long_run=True (or inside numerics.validation.long_runs) it runs and reports its
    progress (here with the quick budget lowered so that a short run counts as long)."""
    import time

    from numerics import validation as V
    t0 = time.process_time()
    with pytest.raises(ValueError, match="^steps is too large for a quick call"):
        N.gradient_descent(**_NET, eta=0.01, steps=10 ** 6)
    assert time.process_time() - t0 < 1.0
    monkeypatch.setattr("numerics._longrun.QUICK_WORK", 10 ** 6)   # where it is read
    with pytest.raises(ValueError, match="long_run=True"):
        N.gradient_descent(**_NET, eta=0.01, steps=200)
    seen = []
    with V.long_runs(progress=lambda done, total, what: seen.append((done, total, what))):
        r = N.gradient_descent(**_NET, eta=0.01, steps=200)
    assert r.steps[-1] == 200 and seen and seen[-1][1] == 201
    r2 = N.gradient_descent(**_NET, eta=0.01, steps=200, long_run=True)
    assert np.array_equal(r.c, r2.c)


def test_stiff_flow_stops_with_a_named_error():
    """c x 1e12 made the flow raise a plain RuntimeError ("ODE solver failed") or run for
    minutes: it stops within the default budget (about a second of work) with the named
    IntegratorError, a DivergenceError and a RuntimeError."""
    import time

    from numerics.validation import DivergenceError, IntegratorError
    net = dict(a=[1.0, -0.5, 2.0], b=[0.2, 0.1, -1.0], c=np.array([0.5, 1.0, -1.0]) * 1e12,
               x=[-1.0, 0.3, 0.9, 2.0], y=[0.1, 0.2, -0.3, 0.4], alpha="m")
    t0 = time.process_time()
    with pytest.raises(IntegratorError, match="long_run=True") as err:
        N.gradient_flow(**net, t_eval=[0.0, 0.05])
    assert time.process_time() - t0 < 12.0  # the budget is about 2 s of one core; the bug ran for minutes
    assert isinstance(err.value, DivergenceError) and isinstance(err.value, RuntimeError)
    t0 = time.process_time()
    with pytest.raises(IntegratorError, match="long_run=True"):   # an explicit budget is
        N.gradient_flow(**net, t_eval=[0.0, 0.05], max_steps=10 ** 7)   # capped the same way
    assert time.process_time() - t0 < 12.0
    with pytest.raises(ValueError, match="^max_steps is too large"):
        N.gradient_flow(**_NET, t_eval=[0.0, 0.05], max_steps=2 ** 62, long_run=True)


def test_network_jacobian_matches_the_gradient_and_finite_differences():
    """network_jacobian: J^T rho is the loss gradient; columns of J_c are the features;
    central differences of f along random directions agree."""
    rng = np.random.default_rng(3)
    m, s = 9, 5
    a, b = rng.uniform(-1, 1, (2, m))
    c = rng.standard_normal(m)
    x = np.sort(rng.uniform(-1, 1, s))
    y = rng.standard_normal(s)
    ja, jb, jc = N.network_jacobian(a, b, c, x, "sqrt")
    assert ja.shape == jb.shape == jc.shape == (s, m)
    rho = N.forward_dense(a, b, c, x, "sqrt") - y
    _, (ga, gb, gc) = N.loss_and_grad_dense(a, b, c, x, y, "sqrt")
    for j, g in ((ja, ga), (jb, gb), (jc, gc)):
        np.testing.assert_allclose(j.T @ rho, g, rtol=1e-12, atol=1e-14)
    da, db, dc = rng.standard_normal((3, m))
    h = 1e-6
    fd = (N.forward_dense(a + h * da, b + h * db, c + h * dc, x, "sqrt")
          - N.forward_dense(a - h * da, b - h * db, c - h * dc, x, "sqrt")) / (2 * h)
    np.testing.assert_allclose(ja @ da + jb @ db + jc @ dc, fd, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError):
        N.network_jacobian(a, b, c[:3], x, "m")
    with pytest.raises(ValueError):
        N.network_jacobian(a, b, c, [np.nan], "m")
    j_big = N.network_jacobian([1e200], [0.0], [1e200], [1.0], 1.0)
    assert np.isfinite(j_big[1]).all() and j_big[1][0, 0] == -1e200
    with pytest.raises(ValueError, match="exceeds float64"):
        N.network_jacobian([1e200], [0.0], [1e200], [1e200], 1.0)
