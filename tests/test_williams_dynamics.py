"""Formulas of claims W2a, W2e, W2f and the derivations behind them: canonical map,
potential gradient vs independent finite differences on both sides of a boundary."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given, strategies as st

from derivations import williams_dynamics as D
from numerics import relu1d as N
from verify import formulas as F

fl = lambda lo, hi: st.floats(lo, hi, allow_nan=False, allow_infinity=False)  # noqa: E731


@given(fl(-3, 3), fl(-3, 3), fl(-3, 3))
@example(1.0, 0.0, 0.0)
def test_canonical_roundtrip(a, b, c):
    assume(abs(a) + abs(b) > 1e-3)
    r, th, dl = F.canonical_from_full(a, b, c)
    a2, b2, c2 = F.full_from_canonical(r, th, dl)
    assert np.allclose([a2, b2, c2], [a, b, c], rtol=1e-12, atol=1e-12)


@given(fl(-3, 3), fl(-np.pi, np.pi), fl(-50, 50))
@example(1e-3, 0.2, 40.0)  # delta >> r: rationalized branch
def test_full_from_canonical_is_on_fibre(r, th, dl):
    assume(abs(r) > 1e-6)
    a, b, c = F.full_from_canonical(r, th, dl)
    r2, th2, dl2 = F.canonical_from_full(a, b, c)
    assert abs(r2 - r) <= 1e-12 * max(1, abs(r))
    assert abs(np.angle(np.exp(1j * (th2 - th)))) <= 1e-12
    assert abs(dl2 - dl) <= 1e-11 * max(1, abs(dl), r * r)
    assert np.sign(c) == np.sign(r)  # documented sign branch


def test_formula_errors():
    with pytest.raises(ValueError, match="no real preimage"):
        F.full_from_canonical(0.0, 0.1, 1.0)
    with pytest.raises(ValueError, match="shapes must match"):
        F.canonical_from_full([1.0, 2.0], [1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        F.potential_gradient(1.0, np.inf, [0.0], [1.0])
    with pytest.raises(ValueError, match="shapes must match"):
        F.potential_gradient(1.0, 0.0, [0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="undefined"):
        F.canonical_from_full(0.0, 0.0, 1.0)
    assert F.full_from_canonical(0.0, 0.3, -4.0)[2] == 0.0
    assert F.velocity_jump.claim == "W2f" and "sqrt" in F.velocity_jump.latex


def _V(r, th, x, rho):
    """V(w) = sum_j rho_j r <x~_j, d(theta)>_+ computed directly (numpy)."""
    return float(np.sum(rho * r * np.maximum(x * np.cos(th) - np.sin(th), 0.0)))


@given(fl(-2, 2), st.lists(fl(-1.5, 1.5), min_size=3, max_size=5, unique=True),
       st.lists(fl(-2, 2), min_size=5, max_size=5), st.integers(0, 4), st.booleans())
def test_one_sided_fd_at_boundary(r, xs, rhos, jstar, lower):
    x = np.array(sorted(xs))
    assume(np.min(np.diff(x)) > 1e-2 and abs(r) > 1e-2)
    rho = np.array(rhos[: x.size])
    j = jstar % x.size
    th0 = np.arctan(x[j]) - (np.pi if lower else 0.0)
    h = 1e-5
    one_sided = []
    for sgn in (+1, -1):
        V0, V1, V2 = (_V(r, th0 + sgn * k * h, x, rho) for k in (0, 1, 2))
        one_sided.append(sgn * (-3 * V0 + 4 * V1 - V2) / (2 * h))  # second-order one-sided
    pg = [F.potential_gradient(r, th0 + sgn * 1e-9, x, rho)[1] for sgn in (+1, -1)]
    scale = max(1.0, abs(r) * np.sum(np.abs(rho)) * 3)
    for fd, p in zip(one_sided, pg):
        assert abs(fd - p) <= 1e-6 * scale
    jump = abs(one_sided[0] - one_sided[1])
    assert abs(jump - F.velocity_jump(r, x[j], rho[j])) <= 1e-6 * scale
    # radial component continuous
    pr = [F.potential_gradient(r, th0 + sgn * 1e-9, x, rho)[0] for sgn in (+1, -1)]
    assert abs(pr[0] - pr[1]) <= 1e-7 * scale


def test_potential_gradient_matches_numerics_gradient():
    rng = np.random.default_rng(11)
    r, th = rng.normal(size=50), rng.uniform(-np.pi, np.pi, 50)
    x, y = np.sort(rng.uniform(-1, 1, 6)), rng.normal(size=6)
    rho = N.canonical_forward(r, th, x) - y
    _, (gr, gt) = N.canonical_loss_and_grad(r, th, x, y)
    pr, pt = F.potential_gradient(r, th, x, rho)
    assert np.allclose(pr, 50 * gr, rtol=1e-12, atol=1e-13)
    assert np.allclose(pt, 50 * gt, rtol=1e-12, atol=1e-13)


def test_velocity_jump_mpmath_and_broadcast():
    assert float(F.velocity_jump.mpmath(2.0, 0.75, -0.5)) == pytest.approx(1.25, rel=1e-15)
    out = F.velocity_jump(np.array([1.0, 2.0]), 0.0, np.array([[1.0], [3.0]]))
    assert out.shape == (2, 2) and out[1, 1] == 6.0


def test_derived_metric_and_invariant():
    c = D.derive_W2c()
    assert c["off_diagonal"] == 0 and c["kernel_limit"] == 1
    assert D.derive_W2b()["ddelta_dt"] == 0
    assert all(e == 0 for e in D.derive_W2e()["second_derivative_in_rho"])


def test_every_claim_has_a_derivation_with_results():
    from derivations.base import Derivation
    for cid in ("W2a", "W2b", "W2c", "W2d", "W2e", "W2f", "W2g", "W2h"):
        d = D.DERIVATIONS[cid]()
        assert isinstance(d, Derivation) and d.results and d.steps


def test_w2b_field_is_minus_grad_of_the_loss():
    """The field derived from L (per-sample term summed over active samples) equals minus
    the numerics' gradient at a generic point."""
    import sympy as sp
    w = D.derive_W2b()
    args = (D.a, D.b, D.c, D.x, D.rho, D.s_j, D.alpha)
    fns = [sp.lambdify(args, w[k], "numpy") for k in ("field_a", "field_b", "field_c")]
    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=(3, 7))
    x, y = np.sort(rng.uniform(-1, 1, 5)), rng.normal(size=5)
    rho = N.forward_dense(a, b, c, x, "m") - y
    s = (np.multiply.outer(a, x) - b[:, None]) > 0
    _, grads = N.loss_and_grad_dense(a, b, c, x, y, "m")
    for fn, g in zip(fns, grads):
        val = np.broadcast_to(fn(a[:, None], b[:, None], c[:, None], x, rho, s.astype(float), 7.0),
                              s.shape).sum(axis=1)
        assert np.allclose(val, -g, rtol=1e-13, atol=1e-15)


# --------------------------------------------------------------- float64 range, mpmath
def test_formulas_extreme_magnitudes():
    assert F.velocity_jump(1e-300, 1e300, -1.0) == 1.0
    assert F.velocity_jump(5e-324, 1e300, 1.0) == pytest.approx(float(F.velocity_jump.mpmath(5e-324, 1e300, 1.0)), rel=1e-15)
    assert F.velocity_jump(1e-200, 1e300, 1e-200) == pytest.approx(1e-100, rel=1e-15)
    with pytest.raises(ValueError, match="overflows"):
        F.velocity_jump(1e300, 1e300, 1e300)
    r, th, dl = F.canonical_from_full(1e150, 1e-150, 1e-10)
    assert r == pytest.approx(1e140, rel=1e-15) and dl == pytest.approx(-1e300, rel=1e-15)
    with pytest.raises(ValueError, match="delta = c\\^2 - a\\^2 - b\\^2 overflows"):
        F.canonical_from_full(1e300, 1e-160, 1e-160)  # r = 1e140, but delta ~ -1e600
    out = F.full_from_canonical(1e200, 0.9, 1.0)
    ref = F.full_from_canonical.mpmath(1e200, 0.9, 1.0, dps=40)
    assert all(np.isfinite(out))
    for u, v in zip(out, ref):
        assert abs(u - float(v)) <= 4e-16 * abs(float(v))
    with pytest.raises(ValueError, match="underflows"):
        F.full_from_canonical(1e-200, 0.3, 1e200)


@given(fl(-3, 3), fl(-3, 3), fl(-3, 3), st.integers(-120, 120))
@example(0.0, 1.0, 1.0000000000001, 0)  # c^2 ~ a^2 + b^2: delta cancels (was 5e-14 off)
@example(0.6, 0.8, -1.0000000000000002, 7)
@example(-1.0, -0.0, 0.0, 0).via("b = -0.0, a < 0: theta = pi, not atan2's -pi")
def test_canonical_from_full_vs_mpmath(a, b, c, k):
    assume(abs(a) + abs(b) > 1e-3)
    a, b = a * 2.0 ** k, b * 2.0 ** k
    got = F.canonical_from_full(a, b, c)
    ref = F.canonical_from_full.mpmath(a, b, c, dps=40)
    for g, q in zip(got, ref):
        assert abs(g - float(q)) <= 4e-16 * abs(float(q)) + 1e-300


@given(fl(-3, 3), fl(-np.pi, np.pi), fl(-3, 3), st.integers(-200, 200))
def test_full_from_canonical_vs_mpmath(r, th, dl, k):
    assume(abs(r) > 1e-3)
    r, dl = r * 2.0 ** k, dl * 2.0 ** k
    got = F.full_from_canonical(r, th, dl)
    ref = F.full_from_canonical.mpmath(r, th, dl, dps=40)
    scale = max(abs(float(ref[0])), abs(float(ref[1])))
    assert abs(got[0] - float(ref[0])) <= 8e-16 * scale
    assert abs(got[1] - float(ref[1])) <= 8e-16 * scale
    assert abs(got[2] - float(ref[2])) <= 8e-16 * abs(float(ref[2]))


def test_formulas_have_real_signatures_and_mpmath():
    import inspect
    for f, names in ((F.canonical_from_full, ["a", "b", "c"]),
                     (F.full_from_canonical, ["r", "theta", "delta"]),
                     (F.potential_gradient, ["r", "theta", "x_data", "residuals"]),
                     (F.velocity_jump, ["r", "x_star", "rho_star"])):
        assert list(inspect.signature(f).parameters) == names
        assert callable(f.mpmath)
    gr, gt = F.potential_gradient.mpmath(2.0, 0.0, [1.0, -0.5], [0.5, 0.25], dps=30)
    assert (float(gr), float(gt)) == F.potential_gradient(2.0, 0.0, [1.0, -0.5], [0.5, 0.25])


def test_residual_ode_on_a_sliding_segment_needs_the_projected_kernel():
    """W2g: on a Filippov sliding segment rho' = -J Pi J^T rho (derived h_sliding), not
    -J J^T rho (relative miss ~7e-3 on this run), measured by central differences of the
    residuals along the integrated flow."""
    from verify.studies.williams import tangent_kernel
    rng = np.random.default_rng(12)
    for _ in range(20):
        a, b = rng.uniform(-1, 1, (2, 12))
        c = 0.3 * rng.normal(size=12)
        x = np.sort(rng.uniform(-1, 1, 5))
        y = np.sin(np.pi * x) + 0.3 * rng.normal(size=5)
        fl = N.gradient_flow(a, b, c, x, y, "m", [0, 30.0], dense=True)
        segs = [s for s in fl.segments if s[4].any() and s[1] - s[0] > 1e-3]
        if segs:
            break
    t0, t1, _, P, S = segs[0]
    t, h = 0.5 * (t0 + t1), 1e-6
    z = fl.dense(t)
    f = lambda zz: N.forward_dense(*np.split(zz, 3), x, "m")  # noqa: E731
    rdot = (f(fl.dense(t + h)) - f(fl.dense(t - h))) / (2 * h)
    rho = f(z) - y
    with_proj = -tangent_kernel(z, x, 12, P & ~S, S) @ rho
    without = -tangent_kernel(z, x, 12, P & ~S) @ rho
    scale = np.max(np.abs(rdot))
    assert np.max(np.abs(rdot - with_proj)) <= 1e-7 * scale
    assert np.max(np.abs(rdot - without)) > 1e-4 * scale


def test_mpmath_paths_take_the_arrays_of_the_float_paths():
    """``.mpmath`` evaluates elementwise over the shapes the float paths accept (object
    arrays of mpf; scalars for 0-d input) and rejects what they reject, by name."""
    import mpmath
    a, b, c = np.array([3.0, 0.0, -1.5]), np.array([4.0, 1.0, 0.25]), np.array([2.0, 1.0000000000001, -0.5])
    got, ref = F.canonical_from_full(a, b, c), F.canonical_from_full.mpmath(a, b, c, dps=40)
    for g, q in zip(got, ref):
        assert q.shape == (3,) and q.dtype == object and isinstance(q[0], mpmath.mpf)
        assert np.all(np.abs(g - q.astype(float)) <= 4e-16 * np.abs(q.astype(float)))
    back = F.full_from_canonical.mpmath(*ref, dps=40)
    assert all(np.allclose(u.astype(float), v, rtol=1e-15) for u, v in zip(back, (a, b, c)))
    assert isinstance(F.full_from_canonical.mpmath(10.0, 0.9, -21.0)[0], mpmath.mpf)
    vj = F.velocity_jump.mpmath(np.array([[2.0], [1.0]]), np.array([0.75, 0.0]), -0.5)
    assert vj.shape == (2, 2)
    assert np.allclose(vj.astype(float), F.velocity_jump(np.array([[2.0], [1.0]]), np.array([0.75, 0.0]), -0.5),
                       rtol=1e-15)
    with pytest.raises(ValueError, match="shapes must match"):
        F.canonical_from_full.mpmath([1.0, 2.0], [1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="broadcast"):
        F.velocity_jump.mpmath([1.0, 2.0], [1.0, 2.0, 3.0], 1.0)
    with pytest.raises(ValueError, match="finite"):
        F.full_from_canonical.mpmath([1.0, np.nan], [0.1, 0.2], [1.0, 1.0])


def test_w2i_time_scale_and_weight_exponent():
    from derivations.williams_dynamics import derive_W2i, m_width
    w = derive_W2i()
    assert w["time_scale"] == m_width
    assert w["alpha_limit"] == m_width and w["phi_degree"] == 2
    assert w["weight_exponent"] == 4


def test_tangent_kernel_is_the_jacobian_gram_matrix_and_validates():
    """verify.studies.williams.tangent_kernel (derived W2g h) equals J J^T from
    numerics.relu1d.network_jacobian (the definition), and refuses bad inputs."""
    from verify.studies.williams import tangent_kernel
    rng = np.random.default_rng(4)
    m, s = 10, 6
    a, b = rng.uniform(-1, 1, (2, m))
    c = rng.standard_normal(m)
    x = np.sort(rng.uniform(-1, 1, s))
    P = (np.multiply.outer(a, x) - b[:, None]) > 0
    H = tangent_kernel(np.concatenate([a, b, c]), x, m, P)
    ja, jb, jc = N.network_jacobian(a, b, c, x, "m")
    np.testing.assert_allclose(H, ja @ ja.T + jb @ jb.T + jc @ jc.T, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="shape"):
        tangent_kernel(np.zeros(5), x, m, P)
    with pytest.raises(ValueError, match="boolean"):
        tangent_kernel(np.concatenate([a, b, c]), x, m, P.astype(float))
    with pytest.raises(ValueError, match="positive integer"):
        tangent_kernel(np.concatenate([a, b, c]), x, 0, P)
