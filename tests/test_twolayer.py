"""numerics.twolayer: gradients vs finite differences, chunking invariance, flow
invariants, symmetrized systems, Gaussian population expectations vs Monte Carlo."""
from __future__ import annotations

import contextlib
import math
import re

import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from scipy.special import roots_jacobi

from numerics import _relu_pass as relu_pass, _step_threads as step_threads, twolayer as tl
from numerics import _twolayer_blocked as blocked


def _problem(seed: int, m: int, d: int, n: int):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(m), rng.standard_normal((m, d)),
            rng.standard_normal((n, d)), rng.standard_normal(n))


@given(st.integers(0, 2 ** 31), st.integers(1, 6), st.integers(1, 5), st.integers(1, 40),
       st.integers(1, 17))
def test_gradient_matches_central_differences(seed, m, d, n, chunk):
    a, B, X, Y = _problem(seed, m, d, n)
    loss, (ga, gB) = tl.loss_and_grad(a, B, X, Y, chunk=chunk)
    h = 1e-6
    L = lambda aa, BB: tl.loss_and_grad(aa, BB, X, Y)[0]  # noqa: E731
    fa = np.array([(L(a + h * e, B) - L(a - h * e, B)) / (2 * h) for e in np.eye(m)])
    E = np.eye(m * d).reshape(m * d, m, d)
    fB = np.array([(L(a, B + h * e) - L(a, B - h * e)) / (2 * h) for e in E]).reshape(m, d)
    scale = 1 + abs(loss)
    # central differences: O(h^2) truncation + O(eps / h) rounding ~ 1e-9 relative
    assert np.abs(fa - ga).max() <= 1e-7 * scale
    assert np.abs(fB - gB).max() <= 1e-7 * scale


@given(st.integers(0, 2 ** 31), st.integers(1, 50))
def test_chunking_does_not_change_results(seed, chunk):
    a, B, X, Y = _problem(seed, 9, 4, 61)
    f1 = tl.forward(a, B, X)
    f2 = tl.forward(a, B, X, chunk=chunk)
    assert np.allclose(f1, f2, rtol=1e-13, atol=1e-13)
    l1, (ga1, gB1) = tl.loss_and_grad(a, B, X, Y)
    l2, (ga2, gB2) = tl.loss_and_grad(a, B, X, Y, chunk=chunk)
    assert math.isclose(l1, l2, rel_tol=1e-12)
    assert np.allclose(ga1, ga2, atol=1e-13) and np.allclose(gB1, gB2, atol=1e-13)


def test_forward_definition():
    a, B, X, _ = _problem(1, 5, 3, 7)
    ref = np.array([np.mean(a * np.maximum(B @ x, 0)) for x in X])
    assert np.allclose(tl.forward(a, B, X), ref, rtol=1e-14, atol=1e-15)


def test_flow_conserves_balance_and_gd_decreases_loss():
    rng = np.random.default_rng(3)
    m, d, n = 12, 3, 40
    B = rng.standard_normal((m, d))
    a = np.linalg.norm(B, axis=1) * rng.choice([-1.0, 1.0], m)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    Y = np.abs(X[:, 0])
    res = tl.gradient_flow(a, B, X, Y, [0.5, 1.0], rtol=1e-11, atol=1e-13)
    gap = tl.balance_gap(res.a[-1], res.B[-1])
    assert np.abs(gap).max() < 1e-9
    gd = tl.gradient_descent(a, B, X, Y, 0.05, 40, record_every=10)
    assert np.all(np.diff(gd.losses) <= 0)


def test_divergence_names_step_size():
    a, B, X, Y = _problem(0, 4, 2, 10)
    with pytest.raises(tl.DivergenceError, match="eta"):
        tl.gradient_descent(a, B, X * 30, Y, 50.0, 200)


def test_orbits_give_exact_invariance():
    th = 2 * np.pi / 5
    T = np.eye(4)
    T[:2, :2] = [[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]
    G = tl.cyclic_group(T)
    assert G.shape[0] == 5
    a, B, X, _ = _problem(2, 6, 4, 9)
    A, BB = tl.orbit_particles(a, B, G)
    assert np.allclose(tl.forward(A, BB, X @ T.T), tl.forward(A, BB, X), atol=1e-14)
    with pytest.raises(ValueError, match="order"):
        tl.cyclic_group(np.array([[np.cos(1.0), -np.sin(1.0)], [np.sin(1.0), np.cos(1.0)]]))


def test_validation_messages():
    with pytest.raises(ValueError, match="both must be m"):
        tl.forward(np.ones(3), np.ones((4, 2)), np.ones((5, 2)))
    with pytest.raises(ValueError, match="both must be d"):
        tl.forward(np.ones(4), np.ones((4, 2)), np.ones((5, 3)))


def test_population_gradient_matches_monte_carlo():
    rng = np.random.default_rng(5)
    d, d_H, m = 6, 2, 5
    s2 = 1 / d
    a = rng.standard_normal(m)
    B = rng.standard_normal((m, d))
    r, w = roots_jacobi(60, (d_H - 3) / 2, (d_H - 3) / 2)
    alpha = 2 * math.sqrt(math.pi) * math.gamma((d_H + 1) / 2) / math.gamma(d_H / 2)
    L, (ga, gB) = tl.population_loss_and_grad_norm_target(a, B, d_H, s2, r, w / w.sum() * alpha)
    n = 200_000
    X = rng.standard_normal((n, d)) * np.sqrt(s2)
    Y = np.linalg.norm(X[:, :d_H], axis=1)
    Z = X @ B.T
    res = np.maximum(Z, 0) @ a / m - Y                       # f - f*, per sample
    per = {"loss": 0.5 * res ** 2,
           "ga": res[:, None] * np.maximum(Z, 0) / m,
           "gB": (res[:, None, None] * (Z > 0)[:, :, None] * X[:, None, :]
                  * (a / m)[None, :, None]).reshape(n, -1)}
    exact = {"loss": np.array([L]), "ga": ga, "gB": gB.ravel()}
    for key, v in per.items():
        v = v.reshape(n, -1)
        z = np.abs(v.mean(axis=0) - exact[key]) / (v.std(axis=0, ddof=1) / math.sqrt(n))
        # CLT: |error| / SE ~ |N(0,1)|; 5.5 SE over <= 31 components (union bound 1e-6)
        assert z.max() < 5.5, (key, z.max())


def test_loss_and_grad_overflow_names_it():
    rng = np.random.default_rng(0)
    a, B = rng.standard_normal(5) * 1e200, rng.standard_normal((5, 3)) * 1e200
    X = rng.standard_normal((4, 3))
    with pytest.raises(ValueError, match="overflows"):
        tl.loss_and_grad(a, B, X, X[:, 0])
    with pytest.raises(ValueError, match="overflows"):
        tl.forward(a, B, X)


@given(st.integers(0, 2 ** 31), st.integers(-600, 600), st.integers(-600, 600),
       st.integers(-600, 600))
def test_huge_and_tiny_weights_are_exactly_rescaled(seed, p, q, r):
    """f, L and the gradients are homogeneous in (a, B, X, Y) -> (2^p a, 2^q B, 2^r X,
    2^(p+q+r) Y): results in float64 range are returned to rounding accuracy even when
    b . x itself over- or underflows (the power-of-two rescaled path), never NaN/inf."""
    a, B, X, Y = _problem(seed, 3, 2, 4)
    s = p + q + r
    big = [np.ldexp(a, p), np.ldexp(B, q), np.ldexp(X, r)]
    if abs(s) <= 1000:
        f2 = tl.forward(*big)
        assert np.allclose(np.ldexp(f2, -s), tl.forward(a, B, X), rtol=1e-12, atol=1e-14)
    if max(abs(2 * s), abs(s + q + r), abs(s + p + r)) > 1000:
        return      # some part of the result is subnormal or beyond float64
    L, (ga, gB) = tl.loss_and_grad(a, B, X, Y)
    L2, (ga2, gB2) = tl.loss_and_grad(*big, np.ldexp(Y, s))
    assert math.isclose(np.ldexp(L2, -2 * s), L, rel_tol=1e-12)
    assert np.allclose(np.ldexp(ga2, -(s + q + r)), ga, rtol=1e-11, atol=1e-13)
    assert np.allclose(np.ldexp(gB2, -(s + p + r)), gB, rtol=1e-11, atol=1e-13)


def test_zero_output_weights_with_overflowing_preactivations():
    """a = 0, |b . x| = 1e400: f = 0 exactly, the loss is finite; dL/da is not
    representable (a ValueError), unless the residual vanishes (Y = 0: all zero)."""
    a, B, X = np.zeros(1), np.full((1, 1), 1e200), np.full((1, 1), 1e200)
    assert tl.forward(a, B, X).tolist() == [0.0]
    L, (ga, gB) = tl.loss_and_grad(a, B, X, np.zeros(1))
    assert L == 0.0 and ga.tolist() == [0.0] and gB.tolist() == [[0.0]]
    with pytest.raises(ValueError, match="dL/da overflows"):
        tl.loss_and_grad(a, B, X, np.ones(1))


def test_gradient_descent_and_flow_validate_arguments():
    a, B, X, Y = _problem(0, 3, 2, 5)
    for kw, name in (({"eta": None}, "eta"), ({"eta": float("nan")}, "eta"),
                     ({"blowup": float("nan")}, "blowup"), ({"blowup": 0.0}, "blowup"),
                     ({"record_every": 1.5}, "record_every"), ({"record_every": True}, "record_every"),
                     ({"a": float("nan")}, "a"), ({"grad_fn": 3}, "grad_fn")):
        args = {"a": a, "B": B, "X": X, "Y": Y, "eta": 0.01, "steps": 3, **kw}
        with pytest.raises((ValueError, TypeError), match=name):
            tl.gradient_descent(**args)
    res = tl.gradient_flow(a, B, X, Y, [0.0])
    assert res.a.shape == (1, 3) and np.array_equal(res.a[0], a)
    with pytest.raises(ValueError, match="t_eval"):
        tl.gradient_flow(a, B, X, Y, [1.0, 0.5])
    with pytest.raises(ValueError, match="both must be m"):
        tl.gradient_flow(a, B[:2], None, None, [1.0], grad_fn=lambda aa, BB: (0.0, (aa, BB)))


def test_gradient_flow_reports_a_sliding_kink_quickly():
    """b = 0 in 1-D with the field pointing into the kink from both sides (a Filippov
    sliding mode): DOP853 would chatter for minutes; the flow stops and names it."""
    import time
    a, B = np.array([-1.1332614518595239]), np.array([[-7.96143823420862e-183]])
    X = np.array([[1.4565988088397175], [1.0987812495283134], [-1.0213089919185]])
    Y = np.array([1.0, -1.2845067119668734, 0.5989495153019173])
    t0 = time.process_time()  # CPU, not wall: a hang guard that a loaded machine cannot trip
    with pytest.raises(tl.DivergenceError, match="slides along its kink"):
        tl.gradient_flow(a, B, X, Y, [0.5], rtol=1e-8, atol=1e-10)
    assert time.process_time() - t0 < 5


def test_dense_reference_matches_engine():
    rng = np.random.default_rng(1)
    a, B = rng.standard_normal(7), rng.standard_normal((7, 4))
    X = rng.standard_normal((33, 4))
    Y = np.sin(X[:, 0])
    l1, (ga1, gB1) = tl.loss_and_grad(a, B, X, Y, chunk=5)
    l2, (ga2, gB2) = tl.loss_and_grad_dense_reference(a, B, X, Y, chunk_elements=20)
    assert abs(l1 - l2) < 1e-14 and np.allclose(ga1, ga2, atol=1e-14) and np.allclose(gB1, gB2, atol=1e-14)


def test_gradient_flow_stops_on_nan_field_and_budget():
    a, B = np.ones(2), np.eye(2)
    with pytest.raises(tl.DivergenceError, match="non-finite"):
        tl.gradient_flow(a, B, None, None, [1.0], grad_fn=lambda aa, BB: (0.0, (aa * np.nan, BB)))
    with pytest.raises(tl.DivergenceError, match="budget"):
        tl.gradient_flow(a, B, None, None, [1e6], max_evals=50,
                         grad_fn=lambda aa, BB: (0.0, (np.sin(50 * aa), np.cos(BB))))
    with pytest.raises(ValueError, match="rtol"):
        tl.gradient_flow(a, B, None, None, [1.0], rtol=float("nan"), grad_fn=lambda aa, BB: (0.0, (aa, BB)))


@given(st.integers(0, 2 ** 31), st.integers(1, 300), st.integers(1, 8), st.integers(1, 700),
       st.sampled_from([None, 1, 7, 128, 10 ** 9]))
def test_blocked_step_equals_the_dense_reference(seed, m, d, n, chunk):
    """The fused, blocked step (mask, ReLU, GEMV and the dL/da = G_j . b_j / m identity)
    computes the textbook step to rounding: 1e-13 relative (max-norm, loss and both
    gradients), for every block size, including blocks of one sample and one block."""
    rng = np.random.default_rng(seed)
    a, B = rng.standard_normal(m), rng.standard_normal((m, d))
    X, Y = rng.standard_normal((n, d)), rng.standard_normal(n)
    L1, g1 = tl.loss_and_grad(a, B, X, Y, chunk=chunk)
    L2, g2 = tl.loss_and_grad_dense_reference(a, B, X, Y)
    assert abs(L1 - L2) <= 1e-13 * abs(L2)
    for u, v in zip(g1, g2):
        assert np.abs(u - v).max() <= 1e-13 * np.abs(v).max() + 1e-300


def test_reused_buffers_never_alias_results():
    """The block buffers are reused across calls: results of one call stay intact."""
    a, B, X, Y = _problem(4, 40, 3, 300)
    L1, (ga1, gB1) = tl.loss_and_grad(a, B, X, Y)
    keep = (ga1.copy(), gB1.copy())
    f1 = tl.forward(a, B, X)
    f_keep = f1.copy()
    tl.loss_and_grad(2 * a, B[::-1].copy(), X, Y)
    tl.forward(a, -B, X)
    assert np.array_equal(ga1, keep[0]) and np.array_equal(gB1, keep[1])
    assert np.array_equal(f1, f_keep)


def test_exactly_zero_preactivations_and_neurons():
    """ReLU'(0) = 0: a neuron b = 0 (or a sample x = 0) is inactive, as in the reference;
    a = 0 keeps dL/da (which needs the mask, not a)."""
    a = np.array([1.0, 0.0, -2.0])
    B = np.array([[0.0, 0.0], [1.0, 0.5], [-1.0, 2.0]])
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, -1.0], [-1.0, 0.5]])
    Y = np.array([0.3, -0.2, 1.0, 0.0])
    L1, (ga1, gB1) = tl.loss_and_grad(a, B, X, Y)
    L2, (ga2, gB2) = tl.loss_and_grad_dense_reference(a, B, X, Y)
    assert math.isclose(L1, L2, rel_tol=1e-15)
    assert np.allclose(ga1, ga2, rtol=1e-15, atol=0) and np.allclose(gB1, gB2, rtol=1e-15, atol=0)
    assert ga1[1] != 0.0 and np.all(gB1[0] == 0.0)


def test_overflowing_negative_preactivation_is_rescaled():
    """b . x = -inf in float64 for a dead neuron: its relu is exactly 0; the step is
    recomputed exactly rescaled and stays finite and correct."""
    a = np.array([1.0, 1.0])
    B = np.array([[-1e200, 0.0], [0.0, 1.0]])
    X = np.array([[1e200, 0.0], [0.0, 2.0]])
    Y = np.array([0.5, 0.0])
    L, (ga, gB) = tl.loss_and_grad(a, B, X, Y)
    # f = (0, 1): L = 1/2 mean((f - y)^2), dL/da_2 = 1/2 mean((f - y) relu(b_2 . x)), ...
    assert L == 0.3125 and ga.tolist() == [0.0, 0.5]
    assert gB.tolist() == [[0.0, 0.0], [0.0, 0.5]]


def test_forward_sees_a_partial_sum_that_overflows_to_minus_inf():
    """b . x = 1e308 (-1.5 - 1.5 + 1.7 + 1.7) = 4e307 is representable, but float64
    partial sums reach -inf first.  ``forward`` once took the ReLU as np.maximum(z, 0),
    which turned that -inf into an exact-looking 0.0; the product with the mask keeps it
    visible (-inf * 0 = nan) and the rescaled path returns 4e307 (found 2026-12-02)."""
    a, B = np.ones(1), np.full((1, 4), 1e308)
    X = np.array([[-1.5, -1.5, 1.7, 1.7]])
    with np.errstate(over="ignore"):
        assert np.dot(X, B.T)[0, 0] == -np.inf          # the float64 GEMM overflows
    assert math.isclose(float(tl.forward(a, B, X)[0]), 4e307, rel_tol=1e-15)
    assert math.isclose(float(tl.forward(a, B, X, chunk=1)[0]), 4e307, rel_tol=1e-15)
    a_small = np.full(1, 2.0 ** -1030)    # f = 2^-1030 4e307: loss and gradients representable
    f = 2.0 ** -1030 * 4e307
    L, (ga, gB) = tl.loss_and_grad(a_small, B, X, np.zeros(1))
    assert math.isclose(L, 0.5 * f * f, rel_tol=1e-14)
    assert math.isclose(float(ga[0]), f * 4e307, rel_tol=1e-14)
    with pytest.raises(ValueError, match="too large for the unscaled reference"):
        tl.loss_and_grad_dense_reference(a_small, B, X, np.zeros(1))   # not a silent 0


def test_a_chunk_beyond_the_block_limit_is_refused_with_the_largest_allowed():
    a, B = np.ones(2048), np.ones((2048, 2))
    X = np.ones((20_000, 2))
    with pytest.raises(ValueError, match=r"chunk x m .* use chunk <= 16384"):
        tl.loss_and_grad(a, B, X, np.ones(20_000), chunk=10 ** 6)
    with pytest.raises(ValueError, match=r"use chunk <= 16384"):
        tl.forward(a, B, X, chunk=16385)


_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e308, -1e308,
                     2.0 ** -1022, 1.0, -1.0])


@contextlib.contextmanager
def _numpy_passes():
    """The engine with its compiled ReLU pass switched off (the NumPy passes; the compiled
    block of numerics._block_kernel, which calls that pass, is then off too)."""
    saved = list(relu_pass._FUSED)
    relu_pass._FUSED[:] = [None]
    try:
        yield
    finally:
        relu_pass._FUSED[:] = saved


def _relu_numpy(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The engine's own NumPy passes on a copy of Z: (relu(Z), its 0.0 / 1.0 mask)."""
    Z, M = Z.copy(), np.empty_like(Z)
    with _numpy_passes(), np.errstate(invalid="ignore"):   # -inf * 0 = nan, as in the step
        relu_pass.relu_with_mask(Z, np.empty(Z.shape, bool), M)
    return Z, M


@given(st.integers(0, 2 ** 31), st.integers(1, 9), st.integers(1, 70))
def test_fused_relu_pass_gives_the_numpy_passes_bits(seed, rows, cols):
    """The compiled pass (numba) and the three NumPy passes agree bit for bit, nan,
    -0.0, infinities and subnormals included (compared as uint64 words)."""
    fused = relu_pass.fused_relu()
    if fused is None:
        pytest.skip("numba is not installed: only the NumPy passes exist")
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-1074, 1023, (rows, cols)))
    Z.ravel()[rng.integers(0, Z.size, min(Z.size, 6))] = rng.choice(_SPECIAL, min(Z.size, 6))
    Zr, Mr = _relu_numpy(Z)
    Zf, Mf = Z.copy(), np.empty_like(Z)
    fused(Zf, Mf)
    assert np.array_equal(Zf.view(np.uint64), Zr.view(np.uint64))
    assert np.array_equal(Mf.view(np.uint64), Mr.view(np.uint64))
    # the column-blocked step's variant: uint8 0 / 1 into a strided block of a wider mask
    wide = np.full((rows, cols + 3), 7, dtype=np.uint8)
    Zb = Z.copy()
    fused(Zb, wide[:, 1:cols + 1])
    assert np.array_equal(Zb.view(np.uint64), Zr.view(np.uint64))
    assert np.array_equal(wide[:, 1:cols + 1], Mr.astype(np.uint8))
    assert np.all(wide[:, 0] == 7) and np.all(wide[:, cols + 1:] == 7)


def _special_values(rng, shape) -> np.ndarray:
    V = rng.standard_normal(shape) * np.exp2(rng.integers(-1074, 1023, shape))
    V.ravel()[rng.integers(0, V.size, min(V.size, 6))] = rng.choice(_SPECIAL, min(V.size, 6))
    return V


@given(st.integers(0, 2 ** 31), st.integers(1, 9), st.integers(1, 40), st.booleans())
def test_fused_residual_pass_gives_the_numpy_passes_bits(seed, rows, cols, strided_x):
    """rs = fs w_m - wy and RX = Xs rs[:, None] in one compiled pass are the NumPy passes'
    words (each product and difference rounded once: no fused multiply-add), at special
    values and for a non-contiguous Xs; a NaN is a NaN in both (the product of two NaNs
    may carry either one's sign; a NaN sends the step to the rescaled path anyway)."""
    rng = np.random.default_rng(seed)
    fs, w_m, wy = (_special_values(rng, rows) for _ in range(3))
    Xs = _special_values(rng, (rows, cols))
    if strided_x:
        Xs = np.asfortranarray(Xs)
    out = [(np.empty(rows), np.empty((rows, cols))) for _ in range(2)]
    with np.errstate(all="ignore"):
        relu_pass.residual_rows(fs, w_m, wy, Xs, *out[0])
        with _numpy_passes():
            relu_pass.residual_rows(fs, w_m, wy, Xs, *out[1])
    for u, v in zip(*out):
        same = (u.view(np.uint64) == v.view(np.uint64)) | (np.isnan(u) & np.isnan(v))
        assert same.all()


@given(st.integers(0, 2 ** 31), st.integers(1, 300), st.integers(1, 6), st.integers(1, 400))
@example(3, 2100, 3, 130).via("m > 256: the forward pass blocked over neurons too")
def test_the_step_is_the_same_with_and_without_the_fused_pass(seed, m, d, n):
    a, B, X, Y = _problem(seed, m, d, n)
    with_fused = tl.loss_and_grad(a, B, X, Y), tl.forward(a, B, X)
    with _numpy_passes():
        without = tl.loss_and_grad(a, B, X, Y), tl.forward(a, B, X)
    (L1, (ga1, gB1)), f1 = with_fused
    (L2, (ga2, gB2)), f2 = without
    assert L1 == L2 and np.array_equal(ga1, ga2) and np.array_equal(gB1, gB2)
    assert np.array_equal(f1, f2)
    assert tl.relu_pass_backend() in ("numpy",) or tl.relu_pass_backend().startswith("numba ")


@given(st.integers(0, 2 ** 31), st.integers(1, 5), st.integers(1, 4), st.integers(1, 6),
       st.sampled_from(["a", "B", "X", "Y"]), st.sampled_from(list(_SPECIAL) + [2.0 ** -141,
                                                                        -(2.0 ** -140), 3e-300]),
       st.booleans())
@example(0, 3, 2, 4, "B", 2.0 ** -141, True).via("a row of B with only tiny entries")
def test_the_exponent_scan_decides_as_the_numpy_checks(seed, m, d, n, which, value, whole_row):
    """The compiled exponent scan of the step's inputs (numerics._relu_pass.exponent_range)
    accepts, refuses and sends to the rescaled path exactly as _validate and _tiny_factors:
    one special entry (or a whole row of it) in a, B, X or Y."""
    a, B, X, Y = _problem(seed, m, d, n)
    arrays = dict(zip("a B X Y".split(), (a, B, X, Y)))
    target = arrays[which]
    if whole_row and target.ndim == 2:
        target[0] = value
    else:
        target.ravel()[0] = value
    try:
        expected = tl._tiny_factors(*tl._validate(a, B, X, Y, need_y=True))
    except ValueError as exc:
        with pytest.raises(ValueError, match=re.escape(str(exc))):
            tl._checked_inputs(a, B, X, Y)
        return
    vals, tiny = tl._checked_inputs(a, B, X, Y)
    assert tiny == expected and all(v is arrays[k] for v, k in zip(vals, "a B X Y".split()))
    with _numpy_passes():
        assert tl._checked_inputs(a, B, X, Y)[1] == expected
    # not C-ordered, not float64, a list: _validate's own passes, the same decision
    assert tl._checked_inputs(a, np.asfortranarray(B), X.astype(np.float32).astype(float)
                              if which != "X" else X, Y.tolist())[1] == expected


def test_the_exponent_scan_reads_the_exponents():
    words = np.array([0.0, -0.0, 1.0, -2.0 ** -1074, 2.0 ** -1022, np.inf])
    assert relu_pass.exponent_range(words) in (None, (2047, 0))
    assert relu_pass.exponent_range(np.array([0.0, -0.0])) in (None, (0, 2047))
    assert relu_pass.exponent_range(np.array([1.5, -0.75])) in (None, (1023, 1022))
    assert relu_pass.exponent_range(np.ones((3, 2))[:, :1]) is None   # not contiguous
    assert tl._TINY_EXPONENT == 1023 - 140


def test_public_surface_validates():
    """Named errors, no nan, no hang (the public-surface census)."""
    import time
    assert tl.gaussian_relu_kernel([[0, 0]], [[1, 0]], 1.0).tolist() == [[0.0]]
    assert np.all(tl.gaussian_relu_kernel_grad([[0.0, 0.0]], [[1.0, 0.0]], 1.0, [[1.0]]) == 0)
    K = tl.gaussian_relu_kernel([[1e200, 0.0]], [[1e-200, 1e-200]], 2.0)
    th = np.pi / 4
    assert math.isclose(K[0, 0], 2.0 * math.sqrt(2) * (math.sin(th) + (math.pi - th) * math.cos(th))
                        / (2 * math.pi), rel_tol=1e-14)
    with pytest.raises(ValueError, match="not representable"):
        tl.gaussian_relu_kernel([[1e200, 0.0]], [[1e200, 1.0]], 1.0)
    rot = np.array([[np.cos(2 * np.pi), -np.sin(2 * np.pi)], [np.sin(2 * np.pi), np.cos(2 * np.pi)]])
    t0 = time.process_time()
    with pytest.raises(ValueError, match="max_order"):
        tl.cyclic_group(rot, 10 ** 12, 5e-324)
    with pytest.raises(ValueError, match="tol"):
        tl.cyclic_group(rot, 10, 5e-324)
    assert tl.cyclic_group(rot).shape == (1, 2, 2)
    with pytest.raises(ValueError, match="work"):
        tl.gradient_descent(np.ones(100), np.ones((100, 10)), np.ones((100, 10)), np.ones(100),
                            0.1, 2 ** 62)
    assert time.process_time() - t0 < 1.0
    with pytest.raises(ValueError, match="group"):
        tl.orbit_samples(np.ones((3, 2)), np.ones((2, 3, 3)))
    with pytest.raises(TypeError, match="negate_a"):
        tl.orbit_particles(np.ones(2), np.ones((2, 2)), [np.eye(2)], negate_a="yes")
    with pytest.raises(ValueError, match="d_H"):
        tl.population_loss_and_grad_norm_target(np.ones(2), np.ones((2, 3)), 4, 1.0, [0.0], [1.0])
    with pytest.raises(ValueError, match="Y"):
        tl.loss_and_grad_dense_reference(np.ones(2), np.ones((2, 3)), np.ones((4, 3)), None)
    with pytest.raises(ValueError, match="overflow|not representable"):
        tl.balance_gap([1e200], [[1.0]])
    # a zero neuron in the population loss: finite, no nan
    L, (ga, gB) = tl.population_loss_and_grad_norm_target(
        np.array([1.0, 0.5]), np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]]), 2, 0.5,
        [-0.5, 0.5], [1.0, 1.0])
    assert np.isfinite(L) and np.all(np.isfinite(ga)) and np.all(np.isfinite(gB))


@given(st.integers(0, 2 ** 31), st.integers(1, 120), st.integers(1, 6), st.integers(1, 300),
       st.integers(1, 40), st.integers(1, 130))
def test_neuron_blocked_step_equals_the_dense_reference(seed, m, d, n, rows, col_block):
    """The wide-network path (forward blocked over neurons too, boolean mask expanded per
    column block) computes the textbook step to rounding, for any block shape."""
    rng = np.random.default_rng(seed)
    a, B = rng.standard_normal(m), rng.standard_normal((m, d))
    X, Y = rng.standard_normal((n, d)), rng.standard_normal(n)
    w = np.full(n, 1.0 / n)
    L1, ga1, gB1, finite = tl._loss_and_grad_fast(a, B, X, Y, w, rows, col_block)
    assert finite
    L2, (ga2, gB2) = tl.loss_and_grad_dense_reference(a, B, X, Y)
    assert abs(L1 - L2) <= 1e-13 * abs(L2)
    for u, v in ((ga1, ga2), (gB1, gB2)):
        assert np.abs(u - v).max() <= 1e-13 * np.abs(v).max() + 1e-300


@pytest.mark.parametrize("steps", [2 ** 31, 10 ** 12])
def test_gradient_descent_refuses_a_huge_step_budget_at_once(steps):
    """steps x (n m d + per-step overhead) above the cap is refused before any step, naming
    steps, even for a tiny problem (whose multiply-adds alone stay under their cap)."""
    import time
    a, B, X, Y = _problem(0, 1, 1, 1)
    t0 = time.process_time()
    with pytest.raises(ValueError, match="steps"):
        tl.gradient_descent(a, B, X, Y, 0.01, steps)
    with pytest.raises(ValueError, match="steps"):
        tl.gradient_descent(a, B, None, None, 0.01, steps,
                            grad_fn=lambda aa, BB: (0.0, (0 * aa, 0 * BB)))
    assert time.process_time() - t0 < 1.0
    # the largest accepted budget is unchanged for a few steps
    run = tl.gradient_descent(a, B, X, Y, 0.01, 3)
    assert run.a.shape == a.shape


@pytest.mark.parametrize("rtol", [1e-300, 5e-324, 2e-14])
def test_gradient_flow_refuses_an_rtol_below_what_the_solver_honours(rtol):
    import warnings
    a, B, X, Y = _problem(1, 3, 2, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="rtol"):
            tl.gradient_flow(a, B, X, Y, [0.0, 0.01], rtol=rtol)
        res = tl.gradient_flow(a, B, X, Y, [0.0, 0.01], rtol=100 * np.finfo(float).eps)
    assert res.rtol == 100 * np.finfo(float).eps and np.all(np.isfinite(res.a))


def test_gaussian_population_lives_in_its_module_and_is_reexported():
    """The arc-cosine kernel and the population loss are numerics.gaussian_relu's; the
    network module re-exports the same objects under its public names."""
    from numerics import gaussian_relu as gr
    for name in gr.__all__:
        assert name in tl.__all__ and getattr(tl, name) is getattr(gr, name)


@pytest.mark.parametrize("numpy_passes", [False, True])
@pytest.mark.parametrize("transposed", [False, True])
def test_gradient_rows_flags_every_non_finite_entry(numpy_passes, transposed):
    """The step's finiteness flag (numerics._relu_pass.gradient_rows, compiled scan or
    NumPy passes): NaN and +-inf in either gradient are caught wherever they sit; finite
    entries near the float64 limit, whose sum overflows, are not flagged; the rows are
    the NumPy passes' bits."""
    m, d = 37, 3
    rng = np.random.default_rng(0)
    B, a = rng.standard_normal((m, d)), rng.standard_normal(m)
    bounds = np.array([0, 16, 35, m], dtype=np.int64)
    ctx = _numpy_passes if numpy_passes else contextlib.nullcontext

    def rows(G, B=B, a=a):
        with ctx(), np.errstate(all="ignore"):
            return relu_pass.gradient_rows(G.copy(), bounds, transposed, B, a)
    ga, gB, finite = rows(np.full(m * d, 1.5e308), np.full((m, d), 1e-300), np.full(m, float(m)))
    assert finite and np.all(gB == 1.5e308) and np.all(np.isfinite(ga))
    for bad in (np.nan, np.inf, -np.inf):
        for where in (0, m * d // 2, m * d - 1):
            G = rng.standard_normal(m * d)
            G[where] = bad
            assert rows(G)[2] is False
    B0 = B.copy()
    B[5, 1] = np.inf          # a finite G with an infinite b_j: dL/da_j is not finite
    assert rows(np.ones(m * d))[2] is False
    B[:] = B0
    G = rng.standard_normal(m * d)
    with _numpy_passes():
        ref = relu_pass.gradient_rows(G.copy(), bounds, transposed, B, a)
    got = rows(G)
    assert got[0].tobytes() == ref[0].tobytes() and got[1].tobytes() == ref[1].tobytes()


def test_a_loss_beyond_float64_alone_is_flagged():
    """Residuals of 1e160 on inputs of 1e-30: the loss overflows while both gradients stay
    finite; the fast step flags it, and the public step then names the loss."""
    a, B = np.ones(4), np.ones((4, 2))
    X, Y = np.full((3, 2), 1e-30), np.full(3, 1e160)
    with step_threads.serial_blas(), np.errstate(over="ignore"):
        L, ga, gB, finite = tl._loss_and_grad_fast(a, B, X, Y, np.full(3, 1.0 / 3), 2)
    assert L == np.inf and np.all(np.isfinite(ga)) and np.all(np.isfinite(gB))
    assert finite is False
    with pytest.raises(ValueError, match="loss"):
        tl.loss_and_grad(a, B, X, Y)


def test_block_mask_is_the_exact_zero_one_comparison():
    """The step's mask (a boolean comparison, then its uint8 view cast to float64) is
    exactly the float64 comparison 1{z > 0}, and the product with the uint8 view exactly
    the product with that float64 mask, at signed zeros, subnormals, infinities and NaN."""
    z = np.array([[-0.0, 0.0, 5e-324, -5e-324, np.inf, -np.inf, np.nan, 1.0, -1.0]])
    mask = np.empty(z.shape, dtype=np.bool_)
    M = np.empty(z.shape)
    np.greater(z, 0.0, out=mask)
    np.copyto(M, mask.view(np.uint8))
    assert M.tobytes() == np.greater(z, 0.0).astype(np.float64).tobytes()
    assert M.tolist() == [[0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0]]
    # the ReLU as the product with the uint8 view: z * 0.0 / z * 1.0 bit for bit (-0.0
    # for negative z, NaN for -inf and NaN: the signal of the exactly rescaled path)
    with np.errstate(invalid="ignore"):          # -inf * 0.0 is NaN, as intended
        relu = np.multiply(z, mask.view(np.uint8))
        ref = z * np.greater(z, 0.0).astype(np.float64)
    assert relu.dtype == np.float64 and relu.tobytes() == ref.tobytes()


# ------------------------------------------------------------ threads: the same bits
def _words(*arrays) -> list[bytes]:
    """The results as uint64 words (bit-for-bit comparison, -0.0 and nan included)."""
    return [np.ascontiguousarray(np.asarray(v, dtype=np.float64)).view(np.uint64).tobytes()
            for v in arrays]


def _step_words(a, B, X, Y, threads: int, chunk: int, col_block=None, weights=None):
    w = np.full(X.shape[0], 1.0 / X.shape[0]) if weights is None else weights
    with step_threads.serial_blas():
        L, ga, gB, _ = tl._loss_and_grad_fast(a, B, X, Y, w, chunk, col_block, threads)
    return _words(L, ga, gB)


@given(st.integers(0, 2 ** 31), st.integers(1, 300), st.integers(1, 6), st.integers(1, 400),
       st.integers(1, 70), st.integers(2, 5), st.booleans())
@example(3, 2100, 3, 130, 20, 2, False).via("m > 256: the forward pass blocked over neurons")
def test_the_step_has_the_one_thread_bits_on_any_number_of_threads(seed, m, d, n, chunk,
                                                                   threads, neuron_blocks):
    """Row blocks shared among 2-5 threads (more than the cores: blocks finish out of
    order), partial gradients added in block order: the loss and both gradients are the
    one-thread step's bits, in both paths (all neurons at once, neuron blocks)."""
    a, B, X, Y = _problem(seed, m, d, n)
    a[::7] = 0.0
    X[::5, 0] = -0.0
    col = max(1, m // 3) if neuron_blocks else None
    one = _step_words(a, B, X, Y, 1, chunk, col)
    assert _step_words(a, B, X, Y, threads, chunk, col) == one


@pytest.mark.parametrize("seed,m,d,n,col", [(0, 1024, 30, 1000, None), (1, 37, 3, 130, None),
                                            (2, 300, 31, 257, None), (3, 300, 7, 257, 64),
                                            (4, 2100, 3, 130, None)])
def test_both_layouts_of_the_gradient_gemm_give_the_step(monkeypatch, seed, m, d, n, col):
    """The gradient GEMM as M^T (RX) or as (RX)^T M (the layout the loaded BLAS kernels run
    faster): the step to rounding either way, each layout the one-thread bits at 2
    threads, in both paths (all neurons at once; column blocks, the last one narrower);
    which one runs is fixed by the kernels loaded (the same on every call)."""
    a, B, X, Y = _problem(seed, m, d, n)
    for transposed in (False, True):
        monkeypatch.setattr(blocked, "_transposed_gradient", lambda t=transposed: t)
        assert _step_words(a, B, X, Y, 2, 128, col) == _step_words(a, B, X, Y, 1, 128, col)
        with step_threads.serial_blas():
            L, ga, gB, _ = tl._loss_and_grad_fast(a, B, X, Y, np.full(n, 1.0 / n), 128, col, 2)
        _, (ga_ref, gB_ref) = tl.loss_and_grad_dense_reference(a, B, X, Y)
        assert gB.flags.c_contiguous and gB.shape == (m, d)
        assert np.max(np.abs(gB - gB_ref)) <= 1e-13 * np.max(np.abs(gB_ref))
        assert np.max(np.abs(ga - ga_ref)) <= 1e-13 * np.max(np.abs(ga_ref))
    monkeypatch.undo()
    assert blocked._transposed_gradient() == blocked._transposed_gradient()


def test_the_public_step_has_the_same_bits_at_every_blas_thread_limit(monkeypatch):
    """loss_and_grad, forward and gradient_descent at threadpool_limits(1), (2) and (4)
    give the same uint64 words, at paper scale and with the neuron-blocked path; with the
    parallel threshold removed, small problems take the threaded path too."""
    from threadpoolctl import threadpool_limits
    monkeypatch.setattr(blocked, "_MIN_PARALLEL_WORK", 0)
    monkeypatch.setattr(step_threads, "_cpus", lambda: 4)
    rng = np.random.default_rng(11)
    for d, m, n in ((30, 1024, 1000), (5, 2100, 300), (3, 7, 1)):
        a, B = rng.choice([-1.0, 1.0], m), rng.standard_normal((m, d))
        X, Y = rng.standard_normal((n, d)), rng.standard_normal(n)
        out = []
        for th in (1, 2, 4):
            with threadpool_limits(th):
                assert tl.step_threads() == th
                L, (ga, gB) = tl.loss_and_grad(a, B, X, Y, chunk=100)
                gd = tl.gradient_descent(a, B, X, Y, 0.01, 2, chunk=64)
                out.append(_words(L, ga, gB, tl.forward(a, B, X, chunk=33), gd.a, gd.B))
        assert out[0] == out[1] == out[2], (d, m, n)


def test_ordered_block_sum_adds_in_block_order_whatever_the_finishing_order():
    """Blocks that finish in scrambled order (random sleeps) are still added in block
    order: the float sum equals the serial left-to-right sum bit for bit (a sum whose
    rounding depends on the order: terms of magnitudes 1e16 and 1)."""
    import time
    rng = np.random.default_rng(5)
    terms = rng.choice([1e16, -1e16, 1.0, 3.0, -2.0], size=(37, 4, 3))
    delays = rng.uniform(0.0, 0.003, 37)

    def block(s, e, T):
        time.sleep(delays[s])
        T[...] = terms[s]
    slots = lambda w: np.empty((w, 4, 3))  # noqa: E731
    serial = step_threads.ordered_block_sum(block, 37, 1, (4, 3), 1, slots)
    ref = np.zeros((4, 3))
    for t in terms:
        ref = ref + t
    assert _words(serial) == _words(ref)
    for threads in (2, 3, 8):
        assert _words(step_threads.ordered_block_sum(block, 37, 1, (4, 3), threads, slots)) \
            == _words(ref)


def test_a_failing_block_is_raised_and_the_threads_stay_usable():
    def block(s, e, T):
        if s == 6:
            raise ZeroDivisionError("block 6")
        T[...] = s
    slots = lambda w: np.empty((w, 2))  # noqa: E731
    with pytest.raises(ZeroDivisionError, match="block 6"):
        step_threads.ordered_block_sum(block, 20, 2, (2,), 3, slots)
    with pytest.raises(ZeroDivisionError, match="block 6"):
        step_threads.run_blocks(lambda s, e: block(s, e, np.empty(2)), 20, 2, 3)
    got = step_threads.ordered_block_sum(lambda s, e, T: T.fill(s), 20, 2, (2,), 3, slots)
    assert got.tolist() == [90.0, 90.0]


def test_serial_blas_holds_one_thread_and_restores_the_limit():
    """Inside a step every BLAS call runs on one thread; the limit in force before is
    restored afterwards, also when steps overlap on several threads."""
    import threading
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
    if not blas_threads():
        pytest.skip("no BLAS visible to threadpoolctl")
    with threadpool_limits(2):
        with step_threads.serial_blas() as threads:
            assert threads == min(2, step_threads._cpus()) and blas_threads() == [1]
            with step_threads.serial_blas() as inner:
                assert inner == threads and blas_threads() == [1]
            assert blas_threads() == [1]
        assert blas_threads() == [2]
        a, B, X, Y = _problem(2, 600, 30, 500)
        ref = tl.loss_and_grad(a, B, X, Y)
        res = [None] * 4

        def run(i):
            res[i] = tl.loss_and_grad(a, B, X, Y)
        workers = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        [t.start() for t in workers]
        [t.join() for t in workers]
        assert blas_threads() == [2]
        for L, (ga, gB) in res:
            assert _words(L, ga, gB) == _words(ref[0], *ref[1])


def test_the_claim_runner_runs_steps_on_one_thread():
    """verify.runner's task context limits BLAS to one thread: the step then runs serially
    (no oversubscription of Dask workers)."""
    from verify.runner import one_blas_thread
    with one_blas_thread():
        assert tl.step_threads() == 1


def test_a_forked_child_runs_a_threaded_step():
    """The helper threads are not inherited by a forked child: the pool is made anew."""
    import multiprocessing
    from threadpoolctl import threadpool_limits
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    a, B, X, Y = _problem(4, 400, 30, 600)
    with threadpool_limits(2):
        ref = tl.loss_and_grad(a, B, X, Y)               # the parent's pool exists now
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child_step, args=(q, a, B, X, Y), daemon=True)
        p.start()
        got = q.get(timeout=60)                  # before join: the child flushes its queue
        p.join(60)
        assert p.exitcode == 0 and got == _words(ref[0], *ref[1])


def _child_step(q, a, B, X, Y):
    L, (ga, gB) = tl.loss_and_grad(a, B, X, Y)
    q.put(_words(L, ga, gB))


def test_the_work_estimate_admits_paper_scale_runs():
    """The quick-call estimate is an upper bound of the measured cost within a small
    factor, not 100x: 200 GD steps at paper scale (30, 1024, 1000), about 1 s of one
    core, are a quick call; a gradient flow there with long_run=True gets its default
    budget; 10^6 steps are still refused at once, naming steps."""
    assert tl._require_work(1000, 1024, 30, steps=201) is False
    assert tl._require_work(1000, 1024, 30, steps=10 ** 4, long_run=True) is True
    with pytest.raises(ValueError, match="steps is too large for a quick call"):
        tl._require_work(1000, 1024, 30, steps=10 ** 6)
    a, B, X, Y = _problem(6, 1024, 30, 1000)
    res = tl.gradient_flow(a * 0.1, B, X, Y, [0.0, 1e-4], rtol=1e-6, atol=1e-8, long_run=True)
    assert res.nfev > 0 and np.all(np.isfinite(res.B))
