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
from verify.strategies import datasets_1d

SOURCE = "Williams et al. (NeurIPS 2019), Sec. 4 (kernel regime)"
X, XP = dk.x, dk.xp
EPS = float(np.finfo(np.float64).eps)
# Relative tolerance for the float64 closed forms vs 30-digit quadrature: the closed forms
# are O(10)-term sums with cancellation factor <= ~30 on [-5, 5]^2, so |rel err| <=
# 30 * 10 * eps ~ 7e-14; 1e-12 leaves a margin.  A derived result off by 1e-8 fails it.
REL_TOL = 1e-12


def _fig4_float64() -> tuple[np.ndarray, np.ndarray]:
    xs, ys = dk.fig4_data()
    return (np.array([float(v) for v in xs], dtype=np.float64),
            np.array([float(v) for v in ys], dtype=np.float64))


# The square wave of Figure 4 (10 points x_j = -9/10 + j/5, y = +1, +1, -1, -1, ...) used by
# W3b, W3c, W3d, W3f: the float64 values (correctly rounded) of ``dk.fig4_data()``, the one
# source of the data (the exact rationals the derivation solves with).
FIG4_X, FIG4_Y = _fig4_float64()
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
