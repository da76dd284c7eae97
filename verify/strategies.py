"""Hypothesis strategies of the field: data sets, networks, groups and particle measures
that satisfy the suite's documented domains (float64, finite, distinct where required).

The claims draw their instances from these (``for_all_instances``), and so can a user's
own tests:

>>> from hypothesis import given
>>> from verify import strategies
>>> @given(strategies.datasets_1d(min_points=3, max_points=5))
... def test_sorted(data):
...     x, y = data
...     assert (np.diff(x) > 0).all() and x.shape == y.shape
>>> import numpy as np
>>> test_sorted()
"""
from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["datasets_1d", "relu1d_networks", "twolayer_networks", "finite_groups",
           "particle_measures", "dihedral_permutations", "symmetric_permutations"]


def _check_int(name: str, v: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo or (
            hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise ValueError(f"{name} must be an integer {rng}; got {v!r}")
    return int(v)


def _check_range(name: str, r: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(r[0]), float(r[1]))
    except (TypeError, ValueError, IndexError, KeyError):
        raise ValueError(f"{name} must be a pair (low, high) of floats; got {r!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} must be finite with low < high; got {r!r}")
    return lo, hi


def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def _dataset(draw: Any, n_lo: int, n_hi: int, gap: float, xr: tuple, yr: tuple) -> tuple:
    n = draw(st.integers(n_lo, n_hi))
    span = xr[1] - xr[0]
    if n == 1:
        x = np.array([draw(_floats(*xr))])
    else:
        fracs = np.array(draw(st.lists(_floats(0.0, 1.0), min_size=n - 1, max_size=n - 1)))
        # gaps in [gap, span/(n-1)]: their sum fits in the range
        gaps = gap + fracs * (span / (n - 1) - gap)
        slack = span - gaps.sum()
        start = xr[0] + draw(_floats(0.0, 1.0)) * max(slack, 0.0)
        x = start + np.concatenate([[0.0], np.cumsum(gaps)])
        x = np.clip(x, xr[0], xr[1])
    y = np.array(draw(st.lists(_floats(*yr), min_size=n, max_size=n)), dtype=np.float64)
    return x.astype(np.float64), y


def datasets_1d(min_points: int = 2, max_points: int = 8, min_gap: float = 0.05, *,
                x_range: tuple[float, float] = (-2.0, 2.0),
                y_range: tuple[float, float] = (-1.0, 1.0)) -> st.SearchStrategy:
    """``(x, y)``: ``n`` samples with ``x`` sorted and consecutive gaps ``>= min_gap``
    (so Gram matrices stay bounded in condition), ``x`` in ``x_range``, ``y`` in
    ``y_range``; float64 arrays of shape ``(n,)``, ``min_points <= n <= max_points``."""
    n_lo = _check_int("min_points", min_points, 1)
    n_hi = _check_int("max_points", max_points, n_lo)
    xr, yr = _check_range("x_range", x_range), _check_range("y_range", y_range)
    if not (isinstance(min_gap, (int, float)) and np.isfinite(min_gap) and min_gap > 0):
        raise ValueError(f"min_gap must be a positive finite float; got {min_gap!r}")
    if n_hi > 1 and (n_hi - 1) * min_gap > xr[1] - xr[0]:
        raise ValueError(f"max_points={n_hi} points with min_gap={min_gap} do not fit in "
                         f"x_range={xr}; lower max_points or min_gap")
    return _dataset(n_lo, n_hi, float(min_gap), xr, yr)


_INITS = ("uniform", "gaussian")


@st.composite
def _relu1d(draw: Any, m_lo: int, m_hi: int, init: str | None, min_norm: float) -> tuple:
    m = draw(st.integers(m_lo, m_hi))
    kind = init or draw(st.sampled_from(_INITS))
    box = (-1.0, 1.0) if kind == "uniform" else (-4.0, 4.0)
    ab = np.array(draw(st.lists(st.tuples(_floats(*box), _floats(*box)).filter(
        lambda p: np.hypot(*p) >= min_norm), min_size=m, max_size=m)), dtype=np.float64)
    c = np.array(draw(st.lists(_floats(*box), min_size=m, max_size=m)), dtype=np.float64)
    return ab[:, 0].copy(), ab[:, 1].copy(), c


def relu1d_networks(min_width: int = 1, max_width: int = 16,
                    init: str | None = None, *, min_norm: float = 1e-3) -> st.SearchStrategy:
    """``(a, b, c)`` of the 1-D network f(x) = (1/alpha) sum c_i (a_i x - b_i)_+: float64
    arrays of shape ``(m,)``; ``init`` "uniform" draws from [-1, 1], "gaussian" from
    [-4, 4] (the bulk of N(0, 1)), None either; ``|(a_i, b_i)| >= min_norm`` so every
    neuron has a knot and a direction."""
    m_lo = _check_int("min_width", min_width, 1)
    m_hi = _check_int("max_width", max_width, m_lo)
    if init is not None and init not in _INITS:
        raise ValueError(f"init must be one of {_INITS} or None; got {init!r}")
    return _relu1d(m_lo, m_hi, init, float(min_norm))


@st.composite
def _twolayer(draw: Any, d: int, m_lo: int, m_hi: int) -> tuple:
    m = draw(st.integers(m_lo, m_hi))
    a = np.array(draw(st.lists(_floats(-2.0, 2.0), min_size=m, max_size=m)))
    rows = draw(st.lists(st.lists(_floats(-2.0, 2.0), min_size=d, max_size=d).filter(
        lambda r: float(np.linalg.norm(r)) >= 1e-3), min_size=m, max_size=m))
    return a.astype(np.float64), np.array(rows, dtype=np.float64).reshape(m, d)


def twolayer_networks(d: int, min_width: int = 1, max_width: int = 16) -> st.SearchStrategy:
    """``(a, B)`` of f(x) = (1/m) sum_j a_j relu(b_j . x): ``a`` (m,), ``B`` (m, d), entries
    in [-2, 2], every row ``|b_j| >= 1e-3``."""
    d = _check_int("d", d, 1, 10_000)
    m_lo = _check_int("min_width", min_width, 1)
    return _twolayer(d, m_lo, _check_int("max_width", max_width, m_lo))


def _perm_matrix(p: tuple[int, ...]) -> np.ndarray:
    n = len(p)
    m = np.zeros((n, n))
    m[np.arange(n), list(p)] = 1.0
    return m


def dihedral_permutations(n: int) -> np.ndarray:
    """The dihedral group D_n (order 2n) as n x n permutation matrices on the vertices."""
    n = _check_int("n", n, 3, 64)
    rot = [tuple((i + k) % n for i in range(n)) for k in range(n)]
    ref = [tuple((k - i) % n for i in range(n)) for k in range(n)]
    return np.stack([_perm_matrix(p) for p in rot + ref])


def symmetric_permutations(n: int) -> np.ndarray:
    """The symmetric group S_n (order n!) as n x n permutation matrices."""
    import itertools
    n = _check_int("n", n, 1, 5)
    return np.stack([_perm_matrix(p) for p in itertools.permutations(range(n))])


def _group_catalogue() -> list[tuple[str, Any]]:
    from numerics import groups as G
    return [
        ("C2 swap on 2x2 (reference experiment)", G.c2_swap),
        ("C2 swap on (u, v) units", G.c2_swap_uv),
        ("C3 cyclic shifts", lambda: G.cyclic_shifts(3)),
        ("C4 cyclic shifts", lambda: G.cyclic_shifts(4)),
        ("sign flips of R^2", lambda: G.sign_flips(2)),
        ("C3 cyclic network", lambda: G.cyclic_network_action(3)),
        ("D3 dihedral on R^3", lambda: G.matrix_action(dihedral_permutations(3),
                                                       dihedral_permutations(3), "D3")),
        ("D4 dihedral on R^4", lambda: G.matrix_action(dihedral_permutations(4),
                                                       dihedral_permutations(4), "D4")),
        ("S3 permutations of R^3", lambda: G.matrix_action(symmetric_permutations(3),
                                                           symmetric_permutations(3), "S3")),
    ]


def finite_groups() -> st.SearchStrategy:
    """A :class:`numerics.groups.GroupAction` usable by the M1 formulas: cyclic, dihedral,
    sign-flip and permutation groups acting orthogonally on small dimensions."""
    return st.sampled_from(_group_catalogue()).map(lambda item: item[1]())


@st.composite
def _measure(draw: Any, dim: int, n_lo: int, n_hi: int, weighted: bool, scale: float) -> tuple:
    n = draw(st.integers(n_lo, n_hi))
    pts = np.array(draw(st.lists(st.lists(_floats(-scale, scale), min_size=dim, max_size=dim),
                                 min_size=n, max_size=n)), dtype=np.float64).reshape(n, dim)
    if weighted:
        w = np.array(draw(st.lists(_floats(0.05, 1.0), min_size=n, max_size=n)))
        w = w / w.sum()
    else:
        w = np.full(n, 1.0 / n)
    return pts, w.astype(np.float64)


def particle_measures(dim: int, min_particles: int = 1, max_particles: int = 32, *,
                      weighted: bool = True, scale: float = 2.0) -> st.SearchStrategy:
    """``(particles, weights)``: a discrete probability measure on R^dim, ``particles``
    (N, dim) with entries in [-scale, scale], ``weights`` (N,) positive, summing to 1
    (uniform when ``weighted`` is False)."""
    dim = _check_int("dim", dim, 1, 10_000)
    n_lo = _check_int("min_particles", min_particles, 1)
    n_hi = _check_int("max_particles", max_particles, n_lo)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite float; got {scale!r}")
    return _measure(dim, n_lo, n_hi, bool(weighted), float(scale))
