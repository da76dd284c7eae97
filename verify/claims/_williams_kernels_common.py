"""What the claims W3a-W3f share (Williams, Trager, Silva, Panozzo, Zorin, Bruna, NeurIPS
2019, Sec. 4 "kernel regime", Thm 5, Fig. 4): conventions, tolerances, the Figure-4 data,
the quadrature references of the defining expectations, the relative error against them,
and the Hypothesis strategies (the chi-square acceptance intervals of the Monte Carlo laws
are ``numerics.chi_square``).

Conventions (docs/conventions.md, section 1): "uniform" init (a, b) ~ U([-1, 1]^2), "gaussian"
init (a, b) ~ N(0, I_2), E c^2 = sigma_c^2; K_RF(x, x') = E[(a x - b)_+ (a x' - b)_+];
K_NTK = K_RF + sigma_c^2 (1 + x x') P(a x > b, a x' > b).

Derivations: ``derivations.williams_kernels`` (SymPy; ``DERIVATIONS``), read by the claims
only through ``ctx.derivation().results`` / :func:`verify.kit.lambdified` and the verified
formulas (which read the same objects).  Independent numerics: ``numerics.kernels``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import mpmath
import numpy as np
from hypothesis import strategies as st

from derivations import williams_kernels as dk
from numerics import kernels as nk
from numerics.arb_quadrature import ball_cache
from verify.strategies import datasets_1d
from verify.studies.williams import fig4_data

SOURCE = "Williams et al. (NeurIPS 2019), Sec. 4 (kernel regime)"
X, XP = dk.x, dk.xp
EPS = float(np.finfo(np.float64).eps)
# Relative tolerance for the float64 closed forms vs 30-digit quadrature: the closed forms
# are O(10)-term sums with cancellation factor <= ~30 on [-5, 5]^2, so |rel err| <=
# 30 * 10 * eps ~ 7e-14; 1e-12 leaves a margin.  A derived result off by 1e-8 fails it.
REL_TOL = 1e-12


# The square wave of Figure 4 (10 points x_j = -9/10 + j/5, y = +1, +1, -1, -1, ...) used by
# W3b, W3c, W3d, W3f: the float64 values (correctly rounded) of ``dk.fig4_data()``, the one
# source of the data (the exact rationals the derivation solves with).
FIG4_X, FIG4_Y = fig4_data()
# Statistical checks: per-test false-alarm probability (two-sided); the number of tests
# per run is stated in each check, so that 20 seeds pass together with prob >= 0.99.
ALPHA_TEST = 2e-5
# The derived primary expressions evaluated at 40 digits vs 30-digit quadrature (working
# precision 35 digits, Gauss-Legendre exact on polynomial pieces / tanh-sinh): agreement
# to ~1e-28; 1e-24 leaves a margin and still catches a derived result off by 1e-20.
EXACT_TOL = 1e-24
# Near-miss size of the negative controls (relative): ~100x the 1e-12 closed-form tolerance.
NEAR_MISS = 1e-10

coord = st.floats(-5, 5, allow_nan=False, allow_infinity=False, allow_subnormal=False)
point_pairs = st.tuples(coord, coord)


def datasets(**kw: Any) -> st.SearchStrategy:
    """``verify.strategies.datasets_1d`` with a non-trivial target (max |y| >= 1/4: for
    y = 0 every statement below holds trivially with 0/0 relative errors)."""
    return datasets_1d(**kw).filter(lambda d: float(np.max(np.abs(d[1]))) >= 0.25)


def formulas() -> Any:
    """:mod:`verify.formulas`, imported on first use."""
    from verify import formulas as F
    return F


@lru_cache(maxsize=4096)
def quadrature_reference(kind: str, init: str, p: float, q: float,
                         nested: bool = False) -> mpmath.mpf:
    """30-digit quadrature of the DEFINING expectation, K_RF (``kind = "rf"``) or
    P(a x > b, a x' > b) (``"prob"``) (cached: independent of the derivation)."""
    if kind == "rf":
        return nk.rf_kernel_quad_mp(p, q, init, nested=nested)
    return nk.active_probability_quad_mp(p, q, init, nested=nested)


def relative_error_vs_mpmath(value: float, reference: Any) -> float:
    """|value / reference - 1| of a float64 ``value`` against a high-precision mpmath
    ``reference`` (evaluated in mpmath, so the reference's digits beyond float64 count);
    |value| when the reference is 0."""
    if reference == 0:
        return abs(float(value))
    return float(abs(mpmath.mpf(float(value)) / reference - 1))


# ------------------------------------------------------------- certified (Arb) checks
#: relative radius at which an overlap of the closed form's and the definition's balls is
#: a proof at that instance (128-bit Arb gives ~1e-36)
CERT_RADIUS = 1e-30
#: truncation of the derived series in the gaussian stable form (derivation: the remainder
#: after SERIES_TERMS terms is < 1e-32 of K_RF)
SERIES_REMAINDER = 1e-32


@ball_cache(maxsize=8192)
def definition_ball(kind: str, init: str, p: float, q: float, sigma_c: float = 0.0) -> Any:
    """The certified (Arb) value of the DEFINING expectation: K_RF ("rf"), P ("prob"),
    K_NTK ("ntk": E of the gradient inner product) at (p, q); cached (independent of the
    derivation)."""
    from verify import certify
    for prec in (128, 256, 512, 1024):  # K_NTK crosses 0 where x x' < -1: more bits there
        if kind == "rf":
            b = certify.rf_kernel_ball(p, q, init, prec=prec, max_rel_radius=None)
        elif kind == "prob":
            b = certify.active_probability_ball(p, q, init, prec=prec, max_rel_radius=None)
        else:
            b = certify.ntk_kernel_ball(p, q, init, sigma_c, prec=prec, max_rel_radius=None)
        if certify.relative_radius(b) <= CERT_RADIUS / 100:
            break
    return b


def certified_points(ctx: Any, pinned: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``pinned`` points and ``ctx.size("certified_points")`` points (``--examples N``:
    N) drawn from the run's seed: a third uniform on [-5, 5]^2, a third with log-uniform
    magnitudes 1e-6..1e3 (random signs), a third with one coordinate on a breakpoint
    (0, +-1) or equal to the other."""
    rng = ctx.rng("certified points")
    count = ctx.size("certified_points")
    n = ctx.n_examples(count, count)
    out = [(float(p), float(q)) for p, q in pinned]
    for i in range(n):
        kind = i % 3
        if kind == 0:
            p, q = rng.uniform(-5, 5, 2)
        elif kind == 1:
            p, q = rng.choice([-1.0, 1.0], 2) * 10.0 ** rng.uniform(-6, 3, 2)
        else:
            p = float(rng.uniform(-5, 5))
            q = float(rng.choice([0.0, 1.0, -1.0, p]))
        out.append((float(p), float(q)))
    return out


def exact_scaled(v: float, scale: float) -> Any:
    """The ball of v * scale (no float rounding: a negative control's rescaled input)."""
    from verify import certify
    return certify.ball(v) * certify.ball(scale) if scale != 1.0 else certify.ball(v)


def certified_instances(expr: Any, args: tuple, points: list[tuple[float, float]],
                        reference: Any, scale: float = 1.0, extra: tuple = (),
                        bound: Any = None) -> list:
    """:class:`verify.certify.CertifiedInstance` of the derived ``expr`` (symbols ``args``)
    at each point (inputs times ``scale``, exactly) vs ``reference(p, q)`` (a ball);
    ``bound(p, q, ref)`` an optional per-instance bound."""
    from verify import certify
    fn = certify.arb_function(expr, args)
    out = []
    with certify.working_precision(128):
        for p, q in points:
            ref = reference(p, q)
            val = certify.enclose_to(lambda: fn(exact_scaled(p, scale), exact_scaled(q, scale), *extra),
                                     CERT_RADIUS / 100)
            out.append(certify.CertifiedInstance(f"(x, x') = ({p!r}, {q!r})", val, ref,
                                                 None if bound is None else bound(p, q, ref)))
    return out


def float_instances(values: Any, points: list[tuple[float, float]], reference: Any,
                    bound: Any) -> list:
    """Certified instances of float64 outputs ``values`` (exact balls) vs ``reference(p,
    q)`` with the per-instance relative ``bound(p, q, ref)`` (the formula's ulp bound)."""
    from verify import certify
    return [certify.CertifiedInstance(f"(x, x') = ({p!r}, {q!r})", float(v), reference(p, q),
                                      bound(p, q, reference(p, q)))
            for (p, q), v in zip(points, np.asarray(values, dtype=np.float64).ravel())]
