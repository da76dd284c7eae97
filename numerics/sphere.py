"""The uniform measure on the sphere S^{k-1}: sampling, and high-precision references
for E[(u.e)_+] that do not use the coordinate-density argument of the derivation
(Hajjar & Chizat 2023, Thm 4.3; claim H1f).

Public: :func:`sample_sphere`, :func:`positive_part_mean_mp` (radial Gaussian
factorization), :func:`positive_part_mean_coordinate_mp` (coordinate density),
:func:`positive_part_mean_mc` (Monte Carlo) and the size limits."""
from __future__ import annotations

import math

import mpmath
import numpy as np

from numerics.validation import (MAX_ELEMENTS, RunProgress, require_dps, require_generator,
                                 require_positive_int, require_size, require_work)

__all__ = ["sample_sphere", "positive_part_mean_mp", "positive_part_mean_mc",
           "positive_part_mean_coordinate_mp", "relu_affine_mean_mp", "MAX_SAMPLE_ENTRIES", "MAX_MC_ENTRIES",
           "MAX_DIMENSION", "MAX_REFERENCE_DPS"]

#: largest m * k drawn at once (1 GiB of float64, numerics.validation.MAX_ELEMENTS); more
#: is refused up front, not by numpy
MAX_SAMPLE_ENTRIES = MAX_ELEMENTS
#: cost of one normal draw of positive_part_mean_mc (draw, norm, positive part, mean) in the
#: work units of numerics.validation.require_work (~1 ns; measured ~15 ns)
_DRAW_COST = 20
#: largest n * k of one Monte Carlo estimate (~4e9 normal draws, minutes of work)
MAX_MC_ENTRIES = 2 ** 32
#: largest sphere dimension k of the mpmath references (float64 integers are exact below)
MAX_DIMENSION = 2 ** 53
#: largest precision of the mpmath references (beyond, one reference takes minutes)
MAX_REFERENCE_DPS = 100
#: panel width (in standard deviations ~0.7 of the radial integrands) of the radial rule
_RADIAL_PANEL = 4.0


def _require_dps(dps: object) -> int:
    """Decimal digits for the references: an integer in 1..MAX_REFERENCE_DPS."""
    dps = require_dps(dps)
    if dps > MAX_REFERENCE_DPS:
        raise ValueError(f"dps (decimal digits for mpmath) must be at most {MAX_REFERENCE_DPS} "
                         f"for the sphere references (beyond, one takes minutes); got {dps}")
    return dps


def _tail_width(dps: int) -> float:
    """D with exp(-D^2 / 2) < 10^-(dps + 20): a Gaussian tail beyond D standard
    deviations is below the working precision."""
    return math.sqrt(2 * (dps + 20) * math.log(10)) + 1.0


def sample_sphere(rng: np.random.Generator, m: int, k: int) -> np.ndarray:
    """``m`` i.i.d. points of Unif(S^{k-1}) as an (m, k) array (normalized Gaussians)."""
    rng = require_generator(rng)
    m = require_positive_int(m, "m")
    k = require_positive_int(k, "k")
    if m * k > MAX_SAMPLE_ENTRIES:
        raise ValueError(f"m * k = {m} * {k} points x coordinates exceeds {MAX_SAMPLE_ENTRIES} "
                         "(1 GiB): reduce m or k, or draw the points in chunks")
    g = rng.standard_normal((m, k))
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    return g / norms


def positive_part_mean_mp(k: int, dps: int = 30) -> mpmath.mpf:
    """E[(u_1)_+] for u ~ Unif(S^{k-1}) from the Gaussian factorization
    g = |g| u (|g| and u independent):  E[(g_1)_+] = E|g| E[(u_1)_+], with
    E[(g_1)_+] = 1/sqrt(2 pi) and E|g| = int r^k e^{-r^2/2} dr / int r^{k-1} e^{-r^2/2} dr.

    Both radial integrands are divided by their value at r0 = sqrt(k - 1) (their ratio is
    unchanged) and integrated by Gauss-Legendre on unit panels of [r0 - D, r0 + D]: the
    log-integrands are concave with curvature <= -1, so beyond D = sqrt(2 (dps + 20) ln 10)
    they are below 10^-(dps+20) of the peak.  ``k`` in 1..MAX_DIMENSION, ``dps`` in
    1..MAX_REFERENCE_DPS."""
    k = require_positive_int(k, "k (sphere S^{k-1} in R^k)", maximum=MAX_DIMENSION)
    dps = _require_dps(dps)
    with mpmath.workdps(dps + 15 + len(str(k))):
        r0 = mpmath.sqrt(k - 1) if k > 1 else mpmath.mpf(1)
        D = _tail_width(dps) + 1
        lo, hi = max(mpmath.mpf(0), r0 - D), r0 + D
        n_panels = int(math.ceil(float(hi - lo) / _RADIAL_PANEL))
        pts = [lo + (hi - lo) * j / n_panels for j in range(n_panels + 1)]
        if k == 1:  # integrand e^{-r^2/2} (no power): unscaled, from 0
            pts = [mpmath.mpf(0)] + [p for p in pts if p > 0]

        def scaled(r, power):
            if r == 0:
                return mpmath.mpf(0) if power > 0 else mpmath.exp((r0 ** 2) / 2)
            return mpmath.exp(power * mpmath.log(r / r0) - (r * r - r0 * r0) / 2)

        # E|g| = int r^k e^{-r^2/2} / int r^{k-1} e^{-r^2/2}  (both scaled by the same
        # factor r0^{k-1} e^{-r0^2/2})
        moment_k = r0 * mpmath.quad(lambda r: scaled(r, k), pts, method="gauss-legendre")
        moment_k1 = mpmath.quad(lambda r: scaled(r, k - 1), pts, method="gauss-legendre")
        val = moment_k1 / moment_k / mpmath.sqrt(2 * mpmath.pi)
    with mpmath.workdps(dps):
        return +val


def positive_part_mean_coordinate_mp(k: int, dps: int = 30) -> mpmath.mpf:
    """E[(u_1)_+] by quadrature of the coordinate density (1 - t^2)^{(k-3)/2}, k >= 2
    (numerator and normalizer both by quadrature, no Gamma function involved).

    With t = sin(theta) the endpoint singularity at t = 1 (k = 2) disappears:
    int_0^1 t^j (1 - t^2)^{(k-3)/2} dt = int_0^{pi/2} sin^j cos^{k-2} d theta.  Since
    cos^{k-2} theta <= exp(-(k - 2) theta^2 / 2), for large k the integrands live within
    D / sqrt(k - 2) of 0 (D as in :func:`positive_part_mean_mp`): the range is cut there
    and split into panels of width 1 / sqrt(k - 2).  ``k`` in 2..MAX_DIMENSION, ``dps`` in
    1..MAX_REFERENCE_DPS."""
    k = require_positive_int(k, "k (sphere S^{k-1} in R^k)", minimum=2, maximum=MAX_DIMENSION)
    dps = _require_dps(dps)
    with mpmath.workdps(dps + 15 + len(str(k))):
        half = mpmath.pi / 2
        w = 1 / mpmath.sqrt(max(k - 2, 1))
        D = _tail_width(dps)
        if k <= 2 or D * w >= half:  # the integrands fill [0, pi/2]: one smooth panel
            pts = [mpmath.mpf(0), half]
        else:  # concentrated near 0: panels at 1, 3, D widths; the rest is negligible
            pts = [mpmath.mpf(0), w, 3 * w, D * w]

        def cos_power(th):
            return mpmath.cos(th) ** (k - 2)

        num = mpmath.quad(lambda th: mpmath.sin(th) * cos_power(th), pts)
        den = 2 * mpmath.quad(cos_power, pts)
        val = num / den
    with mpmath.workdps(dps):
        return +val


#: largest sphere dimension k of :func:`relu_affine_mean_mp` (its density is integrated
#: over [-1, 1] in panels of width 1/sqrt(k); beyond, the panels do not resolve the peak)
MAX_RELU_AFFINE_DIMENSION = 10_000


def relu_affine_mean_mp(k: int, c: float, y: float, dps: int = 30
                        ) -> tuple[mpmath.mpf, mpmath.mpf, mpmath.mpf]:
    """``(E[(c R + y)_+], E[R; c R + y > 0], P(c R + y > 0))`` for R the first coordinate
    of Unif(S^{k-1}), c > 0, by mpmath quadrature of the definition: the density
    (1 - t^2)^{(k-3)/2} on [-1, 1], written over t = sin(th) as cos^{k-2}(th) (its
    normalizer by quadrature too; k >= 2), or the two-point law {-1, 1} (k = 1), with the
    kink t = -y/c as a breakpoint and panels of width 1/sqrt(k) around the peak at 0.  No closed form enters (the reference of the
    derived inner expectation of Hajjar & Chizat's phi~ and of the Haar averages, claims
    H1d, H1e).  Inputs are taken exactly; ``k`` in 1..MAX_RELU_AFFINE_DIMENSION."""
    k = require_positive_int(k, "k (sphere S^{k-1} in R^k)", maximum=MAX_RELU_AFFINE_DIMENSION)
    dps = _require_dps(dps)
    for name, v in (("c", c), ("y", y)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(v)):
            raise ValueError(f"{name} must be a finite real number; got {v!r}")
    if not float(c) > 0:
        raise ValueError(f"c must be > 0 (the coefficient of R); got {c!r}")
    with mpmath.workdps(dps + 10):
        c, y = mpmath.mpf(float(c)), mpmath.mpf(float(y))
        a = -y / c
        if k == 1:
            pts = [t for t in (mpmath.mpf(-1), mpmath.mpf(1)) if t > a]
            out = (sum(c * t + y for t in pts) / 2, sum(pts) / 2, mpmath.mpf(len(pts)) / 2)
        else:  # t = sin(th): the density becomes cos^{k-2}(th) on [-pi/2, pi/2], no endpoint singularity
            half = mpmath.pi / 2
            dens = lambda th: mpmath.cos(th) ** (k - 2)  # noqa: E731
            w = 1 / mpmath.sqrt(k)
            grid = sorted({-half, half} | {j * w for j in range(-8, 9) if abs(j * w) < half})
            Z = mpmath.quad(dens, grid)
            if a >= 1:
                M = P = mpmath.mpf(0)
            else:
                lo = mpmath.asin(a) if a > -1 else -half
                pts = [lo] + [th for th in grid if th > lo]
                M = mpmath.quad(lambda th: mpmath.sin(th) * dens(th), pts) / Z
                P = mpmath.quad(dens, pts) / Z
            out = (c * M + y * P, M, P)
    with mpmath.workdps(dps):
        return tuple(+v for v in out)


def positive_part_mean_mc(rng: np.random.Generator, n: int, k: int,
                          chunk: int = 200_000, *, long_run: bool | None = None
                          ) -> tuple[float, float]:
    """Monte Carlo E[(u_1)_+] on ``n`` i.i.d. sphere points: ``(mean, standard error)``.

    Each point contributes the average of (u_j)_+ over its k coordinates (same law, so an
    unbiased estimate with lower variance); points are i.i.d., so the standard error is
    the sample standard deviation over points / sqrt(n).  ``n * k`` is at most
    MAX_MC_ENTRIES; the points are drawn ``chunk`` at a time (fewer when ``chunk * k``
    would exceed MAX_SAMPLE_ENTRIES).  An estimate above
    ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (it then shows its
    progress)."""
    rng = require_generator(rng)
    n = require_positive_int(n, "n (number of sphere points)", minimum=2)
    k = require_positive_int(k, "k (sphere S^{k-1} in R^k)")
    chunk = require_positive_int(chunk, "chunk (points drawn at once)")
    require_size(n * k, "n * k (points x coordinates)", limit=MAX_MC_ENTRIES,
                 what="normal draws", hint="reduce n or k")
    require_size(k, "k (one point holds k coordinates)", limit=MAX_SAMPLE_ENTRIES,
                 what="float64 entries", hint="reduce k")
    long = require_work(n * k * _DRAW_COST, "n * k (points x coordinates)", long_run=long_run,
                        what="work units (20 per normal draw)", hint="reduce n or k")
    chunk = min(chunk, n, MAX_SAMPLE_ENTRIES // k)
    total, total_sq, done = 0.0, 0.0, 0
    prog = RunProgress(n, "positive_part_mean_mc points", long, every=1)
    while done < n:
        prog.update(done)
        b = min(chunk, n - done)
        u = sample_sphere(rng, b, k)
        v = np.maximum(u, 0.0).mean(axis=1)
        total += float(v.sum())
        total_sq += float(np.dot(v, v))
        done += b
    prog.close()
    mean = total / n
    var = max(total_sq / n - mean * mean, 0.0) * n / (n - 1)
    return mean, float(np.sqrt(var / n))
