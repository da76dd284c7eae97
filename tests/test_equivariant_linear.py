"""The exact decomposition of the linear unit's noisy SGD (``numerics.equivariant_linear``,
claim M1f's beta > 0 width study): pathwise equal to ``numerics.equivariant.train`` given
its noise, exact in law otherwise."""
from __future__ import annotations

import numpy as np
import pytest

from numerics import equivariant as eq
from numerics import equivariant_linear as lin
from numerics.groups import c2_swap
from numerics.validation import ArgumentTypeError


def _setup(N: int, steps: int, beta: float = 0.05, tau: float = 1e-2):
    unit = eq.LinearUnit(2, 2)
    rng = np.random.default_rng(5)
    teacher = rng.standard_normal((5, 4))
    th0 = 0.25 * rng.standard_normal((N, 4))
    cfg = eq.SGDConfig(alpha=16.0, tau=tau, beta=beta, batch=20, steps=steps, x_std=1.0)
    return unit, teacher, th0, cfg


@pytest.mark.parametrize("N, steps, chunk", [(64, 300, 1 << 16), (4096, 300, 7), (50, 1, 1 << 16)])
def test_pathwise_equal_to_train(monkeypatch, N: int, steps: int, chunk: int) -> None:
    """With train's noise (drawn from the same stream in one block) the decomposition gives
    train's particles to rounding; train pre-draws in chunks (121 steps at N = 4096) and the
    decomposition in blocks of ``chunk`` steps: the streams agree."""
    monkeypatch.setattr(lin, "_CHUNK", chunk)
    unit, teacher, th0, cfg = _setup(N, steps)
    ref, _ = eq.train(unit, c2_swap(), th0, teacher, "vanilla", cfg, np.random.default_rng(1),
                      np.random.default_rng(2))
    xi = np.random.default_rng(2).standard_normal((steps, N, 4))
    out = lin.train_linear(unit, th0, teacher, cfg, np.random.default_rng(1),
                           np.random.default_rng(9), xi=xi)
    assert np.abs(out - ref).max() <= 1e-13 * np.abs(ref).max()


def test_noiseless_run_is_train_and_needs_no_noise() -> None:
    unit, teacher, th0, cfg = _setup(32, 500, beta=0.0)
    ref, _ = eq.train(unit, c2_swap(), th0, teacher, "vanilla", cfg, np.random.default_rng(1),
                      np.random.default_rng(2))
    out = lin.train_linear(unit, th0, teacher, cfg, np.random.default_rng(1), np.random.default_rng(3))
    assert np.abs(out - ref).max() <= 1e-13 * np.abs(ref).max()


def test_compose_affine_matches_the_sequential_maps() -> None:
    rng = np.random.default_rng(0)
    for K in (1, 2, 7, 64):
        A = np.eye(3) + 0.1 * rng.standard_normal((K, 3, 3))
        b = rng.standard_normal((K, 2, 3))
        E0 = rng.standard_normal((2, 3))
        E = E0.copy()
        for k in range(K):
            E = E @ A[k] + b[k]
        A_tot, b_tot = lin.compose_affine(A, b)
        assert np.allclose(E0 @ A_tot + b_tot, E, rtol=1e-13, atol=1e-13)


def test_in_law_deviation_variance() -> None:
    """In law, the deviations have variance a^(2K) var0 + 2 beta s sum_{j<K} a^(2j) (1 - 1/N)
    per coordinate (the pooled sample variance within 5 standard errors)."""
    N, K = 200_000, 3000
    unit, teacher, th0, cfg = _setup(N, K, tau=0.05)
    out = lin.train_linear(unit, th0, teacher, cfg, np.random.default_rng(1), np.random.default_rng(2))
    s = cfg.alpha / N
    a = 1 - 2 * cfg.tau * s
    var0 = float(np.mean((th0 - th0.mean(axis=0)) ** 2))
    v = a ** (2 * K) * var0 + 2 * cfg.beta * s * np.sum(a ** (2 * np.arange(K))) * (1 - 1 / N)
    pooled = float(np.mean((out - out.mean(axis=0)) ** 2))
    assert abs(pooled / v - 1) < 5 * np.sqrt(2 / out.size)


def test_validation() -> None:
    unit, teacher, th0, cfg = _setup(8, 3)
    r = np.random.default_rng
    with pytest.raises(ArgumentTypeError):
        lin.train_linear(eq.LogisticUnit(2, 2), th0, teacher, cfg, r(0), r(1))
    with pytest.raises(ValueError, match="xi must have shape"):
        lin.train_linear(unit, th0, teacher, cfg, r(0), r(1), xi=np.zeros((3, 8, 3)))
    with pytest.raises(ValueError, match="columns"):
        lin.train_linear(unit, th0[:, :3], teacher, cfg, r(0), r(1))
    with pytest.raises(ValueError, match="precision"):
        lin.train_linear(unit, th0, teacher, eq.SGDConfig(precision="float32"), r(0), r(1))
    with pytest.raises(ValueError, match="shape"):
        lin.compose_affine(np.zeros((2, 2, 3)), np.zeros((2, 1, 3)))
