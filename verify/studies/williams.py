"""The mean-field width study of Williams, Trager, Silva, Panozzo, Zorin, Bruna (NeurIPS
2019) at alpha(m) = m (claim W2i): the width-m network trained by GD on z = (a, b, c)
from an i.i.d. initialisation, against the limit reference of ``numerics.meanfield1d``
(mean-field GD of a deterministic quadrature of mu_0), at one flow time.

The setting is fixed: s = 6 samples ``LIMIT_X``, targets ``LIMIT_Y = 5 sin(pi x)``,
mu_0 = U([-1, 1]^2) x N(0, 1) for (a, b, c), flow step ``FLOW_STEP`` for ``FLOW_STEPS``
steps (flow time ``FLOW_TIME`` = 0.3), distance the root mean square over ``LIMIT_GRID``
(61 points on [-1.5, 1.5]: the L2 norm of U(-1.5, 1.5) by a trapezoid-like rule).

Why these: the targets' size 5 makes the predictor move fast at t = 0.3, so that a 1%
error in the time scale moves it by ~2.4e-2 (RMS), above the fluctuations (~1.5 m^-1/2,
measured) from m ~ 4e3 on; at t = 0.3 few particles have reached the attracting sample
lines (Lemma 2, claim W2h).  At t = 0.75 the same study measured a bias of E f_m against
the limit decaying more slowly than m^-1/2 (about m^-0.3 between 1e5 and 1e6, docs/
errata.md), which the non-smooth sliding dynamics there can produce.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from derivations import williams_dynamics as D
from derivations import williams_kernels as dk
from numerics import meanfield1d, relu1d
from verify.kit import lambdified

__all__ = ["LIMIT_X", "LIMIT_Y", "LIMIT_GRID", "FLOW_STEP", "FLOW_STEPS", "FLOW_TIME", "LimitReference",
           "limit_reference", "width_distance", "width_distances", "tangent_kernel"]

LIMIT_X = np.array([-0.9, -0.5, -0.1, 0.25, 0.6, 0.95])
LIMIT_Y = 5.0 * np.sin(np.pi * LIMIT_X)
LIMIT_GRID = np.linspace(-1.5, 1.5, 61)
FLOW_STEP = 0.01
FLOW_STEPS = 30
FLOW_TIME = FLOW_STEP * FLOW_STEPS
#: the largest width :func:`width_distance` accepts (about 5 s of GD on one core)
MAX_WIDTH = 10 ** 6


def _rms(v: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(v))))


def _reference_f(panels: int, weight_exponent: float, step: float, steps: int) -> np.ndarray:
    a, b, c, w = meanfield1d.sphere_rule(LIMIT_X, panels, weight_exponent)
    a, b, c = meanfield1d.meanfield_gd(a, b, c, w, LIMIT_X, LIMIT_Y, step=step, steps=steps)
    return meanfield1d.weighted_forward(a, b, c, w, LIMIT_GRID)


@dataclass(frozen=True)
class LimitReference:
    """The limit predictor ``f`` on ``LIMIT_GRID`` (the rule with ``panels``), its error
    estimate ``error`` (RMS, from the rule at panels / 2: a second-order rule's error is
    ~ 1/3 of the difference), ``n_particles``, ``flow_gap`` (RMS distance of mean-field GD
    at FLOW_STEP from the gradient flow at the same time, estimated from the panels / 2
    rule at half the step: Euler's error is ~ 2x the difference) and ``seconds``."""
    f: np.ndarray
    error: float
    coarse_difference: float
    n_particles: int
    flow_gap: float
    seconds: float


@functools.lru_cache(maxsize=4)
def limit_reference(panels: int, weight_exponent: float) -> LimitReference:
    """The W2i limit reference with ``panels`` (even, >= 2) per theta piece of
    :func:`numerics.meanfield1d.sphere_rule` and the derived ``weight_exponent``."""
    if isinstance(panels, bool) or not isinstance(panels, int) or panels < 2 or panels % 2:
        raise ValueError(f"panels must be an even integer >= 2; got {panels!r}")
    t0 = time.process_time()
    fine = _reference_f(panels, weight_exponent, FLOW_STEP, FLOW_STEPS)
    coarse = _reference_f(panels // 2, weight_exponent, FLOW_STEP, FLOW_STEPS)
    halved = _reference_f(panels // 2, weight_exponent, FLOW_STEP / 2, 2 * FLOW_STEPS)
    diff = _rms(fine - coarse)
    n = meanfield1d.sphere_rule(LIMIT_X, panels, weight_exponent)[0].size
    return LimitReference(fine, diff / 3, diff, n, 2 * _rms(coarse - halved),
                          time.process_time() - t0)


def width_distance(m: int, rng: np.random.Generator, time_scale: float,
                   reference: np.ndarray) -> float:
    """RMS over LIMIT_GRID of f_m - reference: the width-m network (alpha = m) from
    (a, b) ~ U([-1, 1]^2), c ~ N(0, 1) drawn from ``rng``, after FLOW_STEPS steps of GD
    on z at step ``time_scale * FLOW_STEP`` (``time_scale`` = T(m), the derived z-time per
    unit of flow time)."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= MAX_WIDTH:
        raise ValueError(f"m must be an integer in [1, {MAX_WIDTH}]; got {m!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator; got {type(rng).__name__}")
    ref = np.asarray(reference, dtype=np.float64)
    if ref.shape != LIMIT_GRID.shape or not np.all(np.isfinite(ref)):
        raise ValueError(f"reference must be finite values on LIMIT_GRID, shape "
                         f"{LIMIT_GRID.shape}; got shape {ref.shape}")
    a, b = rng.uniform(-1.0, 1.0, (2, int(m)))
    c = rng.standard_normal(int(m))
    run = relu1d.gradient_descent(a, b, c, LIMIT_X, LIMIT_Y, float(m),
                                  eta=float(time_scale) * FLOW_STEP, steps=FLOW_STEPS,
                                  record_every=FLOW_STEPS)
    fz = relu1d.forward(run.final["a"], run.final["b"], run.final["c"], LIMIT_GRID, float(m))
    return _rms(fz - ref)


def width_distances(widths: Any, n_seeds: int, rng_for: Callable[[int, int], np.random.Generator],
                    time_scale: Callable[[int], float], reference: np.ndarray) -> np.ndarray:
    """``distances[i, k]`` = :func:`width_distance` at ``widths[i]`` for seed k, the
    initialisation drawn from ``rng_for(width, k)``."""
    ws = [int(w) for w in widths]
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"n_seeds must be a positive integer; got {n_seeds!r}")
    return np.array([[width_distance(w, rng_for(w, k), time_scale(w), reference)
                      for k in range(n_seeds)] for w in ws])


_H_ARGS = (D.a, D.b, D.c, D.x, D.xk, D.s_j, D.s_k, D.alpha)


def _pattern(v: Any, name: str, shape: tuple[int, int]) -> np.ndarray:
    arr = np.asarray(v)
    if arr.shape != shape or arr.dtype != bool:
        raise ValueError(f"{name} must be a boolean array of shape {shape} (neurons x samples); "
                         f"got {arr.dtype} {arr.shape}")
    return arr


def tangent_kernel(z: Any, x: Any, m: int, P: Any, S: Any = None,
                   c2_factor: float = 1.0) -> np.ndarray:
    """Tangent kernel H(z) (s x s) of the full parametrization z = (a, b, c) (3m values) at
    alpha = m (claim W2g) from the derived per-neuron h with the activation pattern ``P``
    (m x s booleans); neurons sliding on a sample line (rows of ``S`` with a True at that
    sample) contribute the derived projected kernel h_sliding instead.  ``c2_factor``
    multiplies c^2 (1 for the kernel; a near miss in a negative control)."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be a positive integer; got {m!r}")
    z = np.asarray(z, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if z.shape != (3 * m,) or x.ndim != 1 or x.size == 0:
        raise ValueError(f"z must have shape (3 m,) = ({3 * m},) and x be a non-empty 1-D "
                         f"array; got {z.shape} and {x.shape}")
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(x))):
        raise ValueError("z and x must be finite")
    if not np.isfinite(c2_factor) or c2_factor < 0:
        raise ValueError(f"c2_factor must be finite and >= 0; got {c2_factor!r}")
    P = _pattern(P, "P", (m, x.size))
    a, b, c = z[:m], z[m:2 * m], z[2 * m:] * np.sqrt(c2_factor)
    A = lambda v: v[:, None, None]  # noqa: E731
    args = (A(a), A(b), A(c), x[None, :, None], x[None, None, :],
            P[:, :, None].astype(float), P[:, None, :].astype(float), float(m))
    vals = np.broadcast_to(lambdified("W2g", "h", _H_ARGS, modules=("numpy",))(*args),
                           (m, x.size, x.size))
    if S is not None and np.asarray(S).any():
        S = _pattern(S, "S", (m, x.size))
        sl = S.any(axis=1)
        xs = x[np.argmax(S, axis=1)]
        h_s = lambdified("W2g", "h_sliding", _H_ARGS + (D.x_slide,), modules=("numpy",))
        vs = np.broadcast_to(h_s(*args, A(xs)), (m, x.size, x.size))
        vals = np.where(sl[:, None, None], vs, vals)
    return vals.sum(axis=0)


def fig4_data() -> tuple[np.ndarray, np.ndarray]:
    """Figure 4's square wave (10 points x_j = -9/10 + j/5, y = +1, +1, -1, -1, ...; claims
    W3b-W3f and the fig4 experiment) in float64: the correctly rounded values of
    ``derivations.williams_kernels.fig4_data()``, the one source of the data."""
    xs, ys = dk.fig4_data()
    return (np.array([float(v) for v in xs], dtype=np.float64),
            np.array([float(v) for v in ys], dtype=np.float64))
