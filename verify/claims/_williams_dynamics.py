"""What the W2 claim modules share (Williams, Trager, Silva, Panozzo, Zorin, Bruna, NeurIPS
2019, Section 3; claims W2a-W2h): the source and conventions, the instance strategies and
draws, the run key of cached simulations, and the claim constructor (one claim shape: the
check and its negative control are the same function, at the exact value and at a named
near miss).

The claims live in :mod:`verify.claims.williams_dynamics` (canonical parametrization,
invariant, metric: W2a-W2c), :mod:`verify.claims.williams_dynamics_field` (potential and
velocity field, jumps and attractors at sample lines: W2d-W2f, W2h) and
:mod:`verify.claims.williams_dynamics_residual` (residual ODE and tangent kernel: W2g).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from verify.kit import Claim, Outcome, RunContext
from verify.strategies import datasets_1d

SOURCE = ("Williams, Trager, Silva, Panozzo, Zorin, Bruna (NeurIPS 2019), arXiv 1906.07842, "
          "Section 3")
#: unit roundoff of float64
U = 2.0 ** -53
#: lambdify the derived results to NumPy (``verify.kit.lambdified(..., modules=NUMPY)``)
NUMPY = ("numpy",)
SIGN_NOTE = ("Source discrepancy: the paper's text says a sample x_j corresponds "
             "to the line 'u x_j + v = 0' in the particle picture; with knots e_i = b_i/a_i and "
             "(u, v) = |r| d(theta) the sample line is u x_j - v = 0 (theta = atan(x_j) mod pi), "
             "which is the convention used here. The text's region angles "
             "'arctan(x_j) +- pi/2' are likewise inconsistent with x~ = (x, -1): the boundaries "
             "are at theta = atan(x_j) and atan(x_j) - pi (derived in W2f).")


def floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Finite floats in [lo, hi]."""
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


@st.composite
def canonical_particles(draw, min_m: int = 1, max_m: int = 40, r_max: float = 2.0):
    """``(r, theta)``: m canonical particles, r in [-r_max, r_max], theta in [-pi, pi)."""
    m = draw(st.integers(min_m, max_m))
    r = np.array(draw(st.lists(floats(-r_max, r_max), min_size=m, max_size=m)))
    th = np.array(draw(st.lists(floats(-np.pi, np.pi), min_size=m, max_size=m)))
    return r, th


@st.composite
def particle_on_sample_line(draw):
    """``(r, theta, x, y, j*, lower)``: particles and data, particle 0 to be placed on the
    line of sample j* (theta_0 = atan(x_j*), or atan(x_j*) - pi if ``lower``)."""
    x, y = draw(datasets_1d(2, 7, 0.05, x_range=(-1.5, 1.5)))
    r, th = draw(canonical_particles(2, 15))
    r[0] = draw(st.one_of(floats(0.05, 2.0), floats(-2.0, -0.05)))
    j = draw(st.integers(0, x.size - 1))
    lower = draw(st.booleans())
    return r, th, x, y, j, lower


def draw_data(rng: np.random.Generator, s: int) -> tuple[np.ndarray, np.ndarray]:
    """s sorted samples x ~ U(-1, 1), y = sin(pi x) + 0.3 N(0, 1)."""
    x = np.sort(rng.uniform(-1.0, 1.0, s))
    y = np.sin(np.pi * x) + 0.3 * rng.standard_normal(s)
    return x, y


def draw_neurons(rng: np.random.Generator, m: int, scale_c: float = 1.0):
    """(a, b) ~ U(-1, 1)^2 and c ~ N(0, scale_c^2), m neurons."""
    a, b = rng.uniform(-1.0, 1.0, (2, m))
    c = scale_c * rng.standard_normal(m)
    return a, b, c


def certified_draws(ctx: RunContext, stream: str, width: int) -> np.ndarray:
    """``ctx.size("certified")`` rows of ``width`` nonzero floats for the certified
    sub-checks, from the run's seed: a third uniform on [-3, 3], a third with log-uniform
    magnitudes 1e-6..1e3 (random signs), a third uniform with one entry set to +-1."""
    rng = ctx.rng("certified", stream)
    n = ctx.size("certified")
    out = rng.uniform(-3.0, 3.0, (n, width))
    big = rng.choice([-1.0, 1.0], (n, width)) * 10.0 ** rng.uniform(-6, 3, (n, width))
    out[1::3] = big[1::3]
    cols = rng.integers(0, width, n)
    for i in range(2, n, 3):
        out[i, cols[i]] = rng.choice([-1.0, 1.0])
    out[out == 0] = 1.0
    return out


def neuron_gradient(a: float, b: float, c: float, x: float) -> list[Any]:
    """Arb balls of grad over (a, b, c) of the neuron c (a x - b)_+ at a x - b != 0 (the
    definition, ``numerics.arb_units.full_neuron``), each partial by an Arb power series in
    that parameter (rigorous: no differencing; at a x - b = 0 it raises)."""
    from numerics import arb_units as AU
    from verify import certify
    out = []
    for k in range(3):
        def along(t: Any, k: int = k) -> Any:
            z = [certify.ball(v) for v in (a, b, c)]
            z[k] = t
            return AU.full_neuron(z[0], z[1], z[2], x) + 0 * t   # a series also where constant
        out.append(AU.taylor_coefficients(along, (a, b, c)[k], 1)[1])
    return out


def wrap_angle(angle: Any) -> np.ndarray:
    """The angle modulo 2 pi, in (-pi, pi]."""
    return np.angle(np.exp(1j * np.asarray(angle)))


def williams_claim(cid: str, title: str, statement: str, check: Callable[[RunContext, Any], Outcome],
                   exact: Any, near_miss: Any, negdesc: str, target: str, *,
                   sizes: dict[str, dict[str, Any]], figures=None, kind: str = "theorem",
                   notes: tuple[str, ...] = ()) -> Claim:
    """A W2 claim: ``check(ctx, exact)`` is the check, ``check(ctx, near_miss)`` the
    negative control (the same check on the named near miss ``negdesc``); ``sizes`` per
    profile, read by the check as ``ctx.size(name)``."""
    return Claim(id=cid, title=title, source=SOURCE, statement=statement,
                 check=check, exact=exact, near_miss=near_miss, sizes=sizes,
                 negative_control_description=negdesc, figures=figures, kind=kind,  # type: ignore[arg-type]
                 notes=tuple(notes), negative_target=target)
