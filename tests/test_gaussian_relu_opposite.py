"""numerics.gaussian_relu.gaussian_relu_kernel at nearly opposite rows whose components mix
magnitudes (found by an outside fuzz), against the closed form at 50 digits.

Rows such as u = (0.38, 1.3e-60, 6.3e-61) and v = -0.116 u + (0, 1e-64, ...) hold an angle
pi - g ~ 1e-64 exactly in float64; two re-orthogonalization passes left ~2^-159 |v| of v
along u, so tan(pi - g) came out ~1e-48 and K ~ (pi - g)^3 was 1e49 times too large."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from numerics.gaussian_relu import gaussian_relu_kernel


def _closed_form(u: np.ndarray, v: np.ndarray, s2: float) -> mpmath.mpf:
    """s2 |u||v| (sin g + (pi - g) cos g) / (2 pi) at 50 digits, for u . v < 0 in the form
    sin psi - psi cos psi, psi = pi - g = atan2(|u x v|, -u . v), |u x v| from Lagrange's
    identity (no cancellation of the float inputs); J ~ psi^3 / 3 cancels 2 log10(1/psi)
    digits, so J is evaluated at 400 digits."""
    with mpmath.workdps(50):
        U = [mpmath.mpf(float(t)) for t in u]
        V = [mpmath.mpf(float(t)) for t in v]
        nu = mpmath.sqrt(sum(t * t for t in U))
        nv = mpmath.sqrt(sum(t * t for t in V))
        dot = sum(a * b for a, b in zip(U, V))
        cross = mpmath.sqrt(sum((U[i] * V[j] - U[j] * V[i]) ** 2
                                for i in range(len(U)) for j in range(i + 1, len(U))))
        psi = mpmath.atan2(cross, -dot)
        with mpmath.workdps(400):
            J = mpmath.sin(psi) - psi * mpmath.cos(psi)
        return mpmath.mpf(s2) * nu * nv * J / (2 * mpmath.pi)


def _mixed_pairs(scale: float, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """u with its first component O(1) and the others ~scale; v = -k u with its second
    component moved by a relative 1e-3: pi - g ~ 1e-3 scale."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        d = int(rng.integers(2, 6))
        u = rng.standard_normal(d)
        u[1:] *= scale
        v = -rng.uniform(0.1, 10) * u
        v[1] *= 1 + rng.uniform(-1e-3, 1e-3)
        out.append((u, v))
    return out


@pytest.mark.parametrize("scale", [1e-10, 1e-30, 1e-45, 1e-60, 1e-80])
def test_kernel_keeps_relative_accuracy_at_tiny_angles(scale: float) -> None:
    """Relative error <= 1e-13 (the tolerance of the existing near-opposite tests: a few
    ulps of the refined form, 450 ulps of headroom) down to pi - g ~ 1e-83, where
    K ~ 1e-250 is still a normal float64."""
    worst = 0.0
    for u, v in _mixed_pairs(scale, 12, seed=int(-np.log10(scale))):
        ref = _closed_form(u, v, 1.0)
        got = float(gaussian_relu_kernel([u], [v], 1.0)[0, 0])
        worst = max(worst, float(abs(mpmath.mpf(got) / ref - 1)))
    assert worst < 1e-13, worst


def test_exactly_opposite_rows_give_zero() -> None:
    """pi - g = 0 exactly: the passes stop at r = 0 and K = 0 (no NaN from 0/0)."""
    K = gaussian_relu_kernel([[1.0, 2.0, 3.0], [0.3, 0.7, 0.0]],
                             [[-1.0, -2.0, -3.0], [-0.6, -1.4, 0.0]], 1.0)
    assert K[0, 0] == 0.0 and K[1, 1] == 0.0 and np.all(np.isfinite(K))
