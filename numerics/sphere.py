"""The uniform measure on the sphere S^{k-1}: sampling, and high-precision references
for E[(u.e)_+] that do not use the coordinate-density argument of the derivation."""
from __future__ import annotations

import mpmath
import numpy as np

from numerics.validation import require_generator, require_positive_int

__all__ = ["sample_sphere", "positive_part_mean_mp", "positive_part_mean_mc",
           "positive_part_mean_coordinate_mp", "MAX_SAMPLE_ENTRIES"]

#: largest m * k drawn at once (8 GiB of float64); more is refused up front, not by numpy
MAX_SAMPLE_ENTRIES = 2 ** 30


def sample_sphere(rng: np.random.Generator, m: int, k: int) -> np.ndarray:
    """``m`` i.i.d. points of Unif(S^{k-1}) as an (m, k) array (normalized Gaussians)."""
    rng = require_generator(rng)
    m = require_positive_int(m, "m")
    k = require_positive_int(k, "k")
    if m * k > MAX_SAMPLE_ENTRIES:
        raise ValueError(f"m * k = {m} * {k} points x coordinates exceeds {MAX_SAMPLE_ENTRIES} "
                         "(8 GiB): reduce m or k, or draw the points in chunks")
    g = rng.standard_normal((m, k))
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    return g / norms


def positive_part_mean_mp(k: int, dps: int = 30) -> mpmath.mpf:
    """E[(u_1)_+] for u ~ Unif(S^{k-1}) from the Gaussian factorization
    g = |g| u (|g| and u independent):  E[(g_1)_+] = E|g| E[(u_1)_+], with
    E[(g_1)_+] = 1/sqrt(2 pi) and E|g| = int r^k e^{-r^2/2} dr / int r^{k-1} e^{-r^2/2} dr,
    both radial integrals by Gauss-Legendre quadrature (smooth integrands) split around the mode sqrt(k)."""
    k = require_positive_int(k, "k")
    with mpmath.workdps(dps + 10):
        # the integrands peak near sqrt(k); beyond sqrt(k) + 30 they are below e^{-400}
        # of the peak, far under 10^{-(dps+10)}
        c = mpmath.sqrt(k)
        pts = [0, c, c + 30]
        num = mpmath.quad(lambda r: r ** (k - 1) * mpmath.exp(-r * r / 2), pts, method="gauss-legendre")
        den = mpmath.quad(lambda r: r ** k * mpmath.exp(-r * r / 2), pts, method="gauss-legendre")
        val = num / den / mpmath.sqrt(2 * mpmath.pi)
    with mpmath.workdps(dps):
        return +val


def positive_part_mean_coordinate_mp(k: int, dps: int = 30) -> mpmath.mpf:
    """E[(u_1)_+] by quadrature of the coordinate density (1 - t^2)^{(k-3)/2}, k >= 2
    (numerator and normalizer both by quadrature, no Gamma function involved).

    With t = sin(theta) the endpoint singularity at t = 1 (k = 2) disappears:
    int_0^1 t^j (1 - t^2)^{(k-3)/2} dt = int_0^{pi/2} sin^j cos^{k-2} d theta."""
    k = require_positive_int(k, "k", minimum=2)
    with mpmath.workdps(dps + 10):
        half = mpmath.pi / 2
        num = mpmath.quad(lambda th: mpmath.sin(th) * mpmath.cos(th) ** (k - 2), [0, half])
        den = 2 * mpmath.quad(lambda th: mpmath.cos(th) ** (k - 2), [0, half])
        val = num / den
    with mpmath.workdps(dps):
        return +val


def positive_part_mean_mc(rng: np.random.Generator, n: int, k: int,
                          chunk: int = 200_000) -> tuple[float, float]:
    """Monte Carlo E[(u_1)_+] on ``n`` i.i.d. sphere points: ``(mean, standard error)``.

    Each point contributes the average of (u_j)_+ over its k coordinates (same law, so an
    unbiased estimate with lower variance); points are i.i.d., so the standard error is
    the sample standard deviation over points / sqrt(n)."""
    n = require_positive_int(n, "n", minimum=2)
    total, total_sq, done = 0.0, 0.0, 0
    while done < n:
        b = min(chunk, n - done)
        u = sample_sphere(rng, b, k)
        v = np.maximum(u, 0.0).mean(axis=1)
        total += float(v.sum())
        total_sq += float(np.dot(v, v))
        done += b
    mean = total / n
    var = max(total_sq / n - mean * mean, 0.0) * n / (n - 1)
    return mean, float(np.sqrt(var / n))
