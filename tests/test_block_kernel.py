"""The d-dimensional step's row block as one compiled call (numerics._block_kernel), with
all neurons at once and in column blocks of neurons: the same bits as the block of NumPy
calls, at every shape, layout and thread count; the shapes where np.dot would not call
GEMM / GEMV go the NumPy way; the self-tests before first use catch a block that differs
in one bit."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from threadpoolctl import threadpool_limits

from numerics import _block_kernel as bk, _twolayer_blocked as blocked, twolayer as tl

KERNEL = bk.compiled_block()
needs_kernel = pytest.mark.skipif(KERNEL is None, reason="no compiled block here (numba or "
                                  "NumPy's own CBLAS not found): only the NumPy block runs")


@contextlib.contextmanager
def _numpy_block():
    saved = list(bk._BLOCK)
    bk._BLOCK[:] = [None]
    try:
        yield
    finally:
        bk._BLOCK[:] = saved


@contextlib.contextmanager
def _layout(transposed: bool):
    saved = blocked._transposed_gradient
    blocked._transposed_gradient = lambda: transposed
    try:
        yield
    finally:
        blocked._transposed_gradient = saved


def _step(a, B, X, Y, w, c, threads, col_block=None):
    with threadpool_limits(1):
        return blocked._loss_and_grad_fast(a, B, X, Y, w, min(c, X.shape[0]), col_block,
                                           threads)


def _same(u, v) -> bool:
    return (u[0] == v[0] and u[3] == v[3] and all(
        np.array_equal(x.view(np.uint64), y.view(np.uint64)) for x, y in zip(u[1:3], v[1:3])))


@needs_kernel
@given(st.integers(0, 2 ** 31), st.integers(1, 300), st.integers(1, 40), st.integers(1, 400),
       st.integers(1, 200), st.booleans())
@example(0, 1, 5, 50, 16, True).via("m = 1: np.dot's vector case, the NumPy block")
@example(0, 40, 1, 50, 16, False).via("d = 1: np.dot's vector case, the NumPy block")
@example(0, 40, 5, 33, 16, True).via("a last block of one row: the NumPy block")
@example(0, 40, 5, 34, 16, True).via("a last block of two rows: the compiled block")
def test_compiled_block_gives_the_numpy_blocks_bits(seed, m, d, n, c, transposed):
    """Loss, both gradients (as uint64 words) and the finiteness flag with the compiled
    block and with the NumPy block, in both layouts of the gradient GEMM."""
    rng = np.random.default_rng(seed)
    a, B = rng.standard_normal(m), rng.standard_normal((m, d))
    X, Y, w = rng.standard_normal((n, d)), rng.standard_normal(n), rng.random(n)
    with _layout(transposed):
        got = _step(a, B, X, Y, w, c, 1)
        with _numpy_block():
            ref = _step(a, B, X, Y, w, c, 1)
    assert _same(got, ref)


@needs_kernel
@given(st.integers(0, 2 ** 31), st.integers(2, 300), st.integers(1, 40), st.integers(1, 300),
       st.integers(1, 100), st.integers(1, 80), st.booleans())
@example(0, 40, 5, 50, 16, 13, True).via("a last column block of one neuron: the NumPy block")
@example(0, 40, 5, 50, 16, 19, True).via("a last column block of two neurons: compiled")
@example(0, 40, 5, 33, 16, 8, False).via("a last row block of one row: the NumPy block")
def test_compiled_column_block_gives_the_numpy_blocks_bits(seed, m, d, n, c, mb, transposed):
    """The column-blocked step (mb neurons per column block, as above 256 neurons) with the
    compiled column block and with the NumPy block: the same words, both layouts."""
    rng = np.random.default_rng(seed)
    a, B = rng.standard_normal(m), rng.standard_normal((m, d))
    X, Y, w = rng.standard_normal((n, d)), rng.standard_normal(n), rng.random(n)
    mb = min(mb, m - 1)
    with _layout(transposed):
        got = _step(a, B, X, Y, w, c, 1, mb)
        with _numpy_block():
            ref = _step(a, B, X, Y, w, c, 1, mb)
    assert _same(got, ref)


_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1e308, -1e308, 2.0 ** -1022])


@needs_kernel
@given(st.integers(0, 2 ** 31), st.integers(2, 40), st.integers(2, 8), st.integers(2, 60),
       st.sampled_from("a B X Y".split()), st.booleans(), st.sampled_from([None, 6]))
def test_compiled_block_gives_the_numpy_blocks_bits_at_special_values(seed, m, d, n, which,
                                                                      transposed, col_block):
    """Infinities, NaN, -0.0, subnormals and overflowing entries in one input: the same
    words and the same finiteness flag (a NaN is the same NaN: the same BLAS calls and
    the same compiled passes); all neurons at once and in column blocks of 6."""
    rng = np.random.default_rng(seed)
    arrays = {"a": rng.standard_normal(m), "B": rng.standard_normal((m, d)),
              "X": rng.standard_normal((n, d)), "Y": rng.standard_normal(n)}
    target = arrays[which].reshape(-1)
    target[rng.integers(0, target.size, 3)] = rng.choice(_SPECIAL, 3)
    w = np.full(n, 1 / n)
    with _layout(transposed), np.errstate(all="ignore"):
        got = _step(*arrays.values(), w, 16, 1, col_block)
        with _numpy_block():
            ref = _step(*arrays.values(), w, 16, 1, col_block)
    assert got[3] == ref[3] and np.array_equal(np.float64(got[0]).view(np.uint64),
                                               np.float64(ref[0]).view(np.uint64))
    assert all(np.array_equal(x.view(np.uint64), y.view(np.uint64))
               for x, y in zip(got[1:3], ref[1:3]))


@needs_kernel
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("col_block", [None, 48])
def test_compiled_block_on_two_threads_gives_the_one_thread_bits(transposed, col_block):
    """A step large enough to be shared by two threads (n m d >= 2^21): the compiled
    block's bits on 2 threads are the NumPy block's on 1 (all neurons at once, and in
    column blocks)."""
    rng = np.random.default_rng(5)
    m, d, n = 200, 20, 601
    a, B = rng.standard_normal(m), rng.standard_normal((m, d))
    X, Y, w = rng.standard_normal((n, d)), rng.standard_normal(n), np.full(n, 1 / n)
    assert n * m * d >= blocked._MIN_PARALLEL_WORK
    with _layout(transposed):
        got = _step(a, B, X, Y, w, 64, 2, col_block)
        with _numpy_block():
            ref = _step(a, B, X, Y, w, 64, 1, col_block)
    assert _same(got, ref)


def test_the_compiled_block_applies_only_where_np_dot_calls_gemm():
    X, B = np.ones((10, 3)), np.ones((4, 3))
    v = np.ones(4)
    assert bk.compiled_block_applies(X, B, 4, v)
    assert not bk.compiled_block_applies(X, B, 3, v)               # 10 = 3 * 3 + 1 rows
    assert not bk.compiled_block_applies(X, np.ones((1, 3)), 4, v)  # m = 1
    assert not bk.compiled_block_applies(X[:, :1].copy(), B[:, :1].copy(), 4, v)  # d = 1
    assert not bk.compiled_block_applies(X, B, 1, v)
    assert not bk.compiled_block_applies(np.asfortranarray(X), B, 4, v)
    assert not bk.compiled_block_applies(X, B, 4, np.ones(8)[::2])
    assert not bk.compiled_block_applies(X, X[:4], 4, v)           # X_s @ B.T would be syrk
    B9 = np.ones((9, 3))
    assert bk.compiled_block_applies(X, B9, 4, mb=4) is False     # 9 = 2 * 4 + 1 neurons
    assert bk.compiled_block_applies(X, B9, 4, mb=7)
    assert not bk.compiled_block_applies(X, B9, 4, mb=1)


@needs_kernel
def test_the_self_test_catches_a_block_one_bit_off():
    """bk._same_bits accepts the compiled block and refuses one that differs from it in
    the last bit of one entry of the gradient product."""
    assert bk._same_bits(KERNEL.full)

    def off(X, B, a, w_m, wy, f, r, Z, M, RX, T, s, e, transposed):
        KERNEL.full(X, B, a, w_m, wy, f, r, Z, M, RX, T, s, e, transposed)
        T.view(np.uint64)[T.size // 2] ^= np.uint64(1)
    assert not bk._same_bits(off)


@needs_kernel
def test_the_column_self_test_catches_a_block_one_bit_off():
    """bk._same_column_bits accepts the compiled column block and refuses one that differs
    from it in the last bit of one entry of m f."""
    assert bk._same_column_bits(KERNEL.columns)

    def off(X, B, a, w_m, wy, f, r, Zbuf, part, bits, RX, T, s, e, mb, transposed):
        KERNEL.columns(X, B, a, w_m, wy, f, r, Zbuf, part, bits, RX, T, s, e, mb, transposed)
        f.view(np.uint64)[e - 1] ^= np.uint64(1)
    assert not bk._same_column_bits(off)


def test_without_numpys_cblas_the_numpy_block_runs(monkeypatch):
    """No CBLAS found: compiled_block() is None and the step is computed all the same."""
    monkeypatch.setattr(bk, "_numpy_cblas", lambda: None)
    monkeypatch.setattr(bk, "_BLOCK", [])
    assert bk.compiled_block() is None
    rng = np.random.default_rng(0)
    a, B, X, Y = (rng.standard_normal(s) for s in (7, (7, 3), (20, 3), 20))
    loss, ga, gB, finite = _step(a, B, X, Y, np.full(20, 0.05), 8, 1)
    assert finite and np.isfinite(loss) and ga.shape == (7,) and gB.shape == (7, 3)


def test_the_compiled_block_is_found_with_numpys_wheel_and_numba():
    """Where numba is installed and NumPy runs the OpenBLAS of its own wheel (numpy.libs),
    the compiled block is built and passes its self-test: the tests above are then not
    skipped, and the bench names it."""
    pytest.importorskip("numba")
    from threadpoolctl import threadpool_info
    wheel = [i for i in threadpool_info() if i.get("internal_api") == "openblas"
             and "numpy.libs" in i.get("filepath", "")]
    if not wheel:
        pytest.skip("NumPy does not run the OpenBLAS of its wheel here")
    assert KERNEL is not None
    assert tl.relu_pass_backend().endswith("; row blocks: one compiled call")
