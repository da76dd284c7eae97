"""The Monte Carlo discretization of the Figure-3 reduced dynamics used by Hajjar & Chizat
(2023) for their published run (claim H1g), written from the equations of their
notebook, in the suite's units (data E|x|^2 = 1; numerics.paper_units converts).

numerics.reduced integrates the weight-position dynamics
    dc_j/dt = 2 eps_j c_j G(theta_j),   dtheta_j/dt = eps_j G'(theta_j),
    G(theta) = E[(cos phi - f~(phi)) phi~(theta; phi)]
with deterministic quadratures.  The authors instead estimate G and G' at every step from
n fresh samples (phi_i, R_i, S_i, R'_i, S'_i): cos^2 phi ~ Beta(d_H/2, (d - d_H)/2),
R, R' (S, S') independent first coordinates of Unif(S^{d_H - 1}) (Unif(S^{d - d_H - 1})):
    psi_ji  = relu(cos th_j cos phi_i R_i + sin th_j sin phi_i S_i)      (psi'_ji with R', S')
    chi_ji  = 1{psi_ji > 0} (-sin th_j cos phi_i R_i + cos th_j sin phi_i S_i)
    res_i   = cos phi_i - (1/m) sum_j eps_j c_j psi'_ji
    G_j     = (1/n) sum_i psi_ji res_i,   G'_j = (1/n) sum_i chi_ji res_i,
an unbiased estimate of the field (independent R', S' inside the residual), then take the
same Euler step.  The estimate is symmetric in law under theta -> -theta and
theta -> pi - theta, so folding theta into [0, pi/2] (done here) does not change the law
of the process (the authors do not fold).
"""
from __future__ import annotations

import numpy as np

from numerics.reduced import (HALF_PI, ReducedRun, ReducedState, _masses, _require_state, _w2,
                              fold_angle, validate_dims)
from numerics.validation import (DivergenceError, RunProgress, as_float_array, as_float_scalar,
                                 require_generator, require_positive_int, require_size,
                                 require_work)

__all__ = ["sample_nodes", "field_estimate", "simulate_gd_mc"]


def _coordinate(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """n draws of the first coordinate of Unif(S^{k-1}): sign * sqrt(Beta(1/2, (k-1)/2))."""
    sign = rng.choice([-1.0, 1.0], size=n)
    if k == 1:
        return sign
    return sign * np.sqrt(rng.beta(0.5, (k - 1) / 2, size=n))


def sample_nodes(rng: np.random.Generator, n: int, d: int, d_H: int) -> tuple[np.ndarray, ...]:
    """(phi, R, S, R', S'), n draws each (see the module docstring)."""
    rng = require_generator(rng, "rng")
    d, d_H = validate_dims(d, d_H)
    n = require_positive_int(n, "n (Monte Carlo samples per step)", maximum=2 ** 62)
    require_size(5 * n, "5 n (Monte Carlo nodes)")
    phi = np.arccos(np.sqrt(rng.beta(d_H / 2, (d - d_H) / 2, size=n)))
    return (phi, _coordinate(rng, d_H, n), _coordinate(rng, d - d_H, n),
            _coordinate(rng, d_H, n), _coordinate(rng, d - d_H, n))


def field_estimate(state: ReducedState, nodes: tuple[np.ndarray, ...]
                   ) -> tuple[float, np.ndarray, np.ndarray]:
    """(Monte Carlo loss estimate 1/2 mean res^2, G_j, G'_j) from the sample ``nodes``
    (the 5 arrays of :func:`sample_nodes`: phi in [0, pi/2], coordinates in [-1, 1])."""
    state = _require_state(state)
    if not isinstance(nodes, (tuple, list)) or len(nodes) != 5:
        raise TypeError("nodes must be the tuple (phi, R, S, R', S') of sample_nodes")
    names = ("phi", "R", "S", "R'", "S'")
    arrs = [as_float_array(x, f"nodes[{i}] ({nm})", ndim=1, allow_empty=False)
            for i, (x, nm) in enumerate(zip(nodes, names))]
    if len({a.shape for a in arrs}) != 1:
        raise ValueError(f"the 5 node arrays must have one length; got {[a.shape for a in arrs]}")
    if np.any((arrs[0] < 0) | (arrs[0] > HALF_PI)) or any(np.any(np.abs(a) > 1) for a in arrs[1:]):
        raise ValueError("nodes: phi must lie in [0, pi/2] and R, S, R', S' in [-1, 1]")
    require_size(state.c.size * arrs[0].size, "m * n (particles x Monte Carlo nodes)")
    return _field_estimate(state, tuple(arrs))


def _field_estimate(state: ReducedState, nodes: tuple) -> tuple[float, np.ndarray, np.ndarray]:
    phi, R, S, R2, S2 = nodes
    m = state.c.shape[0]
    ct, st = np.cos(state.theta)[:, None], np.sin(state.theta)[:, None]
    cp, sp = np.cos(phi), np.sin(phi)
    pre = ct * (cp * R) + st * (sp * S)
    pre2 = ct * (cp * R2) + st * (sp * S2)
    f = (state.eps * state.c) @ np.maximum(pre2, 0.0) / m
    res = cp - f
    n = phi.shape[0]
    G = np.maximum(pre, 0.0) @ res / n
    chi = np.where(pre > 0, ct * (sp * S) - st * (cp * R), 0.0)
    return 0.5 * float(res @ res) / n, G, chi @ res / n


#: cost of one Monte Carlo Euler step in the work units of
#: ``numerics.validation.require_work`` (~1 ns): a fixed overhead (measured 130 us at 50
#: samples), ~1000 per sample drawn (beta variates) and ~60 per (particle, sample) pair
#: (measured 57 ms per step at 1000 particles x 1000 samples)
_STEP_OVERHEAD = 150_000
_PER_SAMPLE = 1000
_PER_PAIR = 60


def simulate_gd_mc(state: ReducedState, d: int, d_H: int, step: float, steps: int,
                   rng: np.random.Generator, *, n_samples: int = 1000,
                   record_every: int = 100, long_run: bool | None = None) -> ReducedRun:
    """Euler steps of size ``step`` (suite units) with the Monte Carlo field (fresh
    ``n_samples`` nodes per step).  Records masses and W2 distances like
    numerics.reduced.simulate_gd; ``losses`` are the per-step Monte Carlo estimates.
    Raises :class:`~numerics.validation.DivergenceError` naming the step on divergence.
    A run above ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (it then shows
    its progress and stops at Ctrl-C)."""
    d, d_H = validate_dims(d, d_H)
    step = as_float_scalar(step, "step", lo=0.0, lo_open=True)
    steps = require_positive_int(steps, "steps", minimum=0, maximum=2 ** 62)
    record_every = require_positive_int(record_every, "record_every", maximum=2 ** 62)
    n_samples = require_positive_int(n_samples, "n_samples", maximum=2 ** 62)
    rng = require_generator(rng, "rng")
    st = _require_state(state).copy()
    require_size(st.c.size * n_samples, "m * n_samples (the per-step field arrays)",
                 hint="use fewer Monte Carlo samples n_samples or particles")
    require_size((steps // record_every + 2) * 6, "the records (steps / record_every)",
                 hint="raise record_every")
    long = require_work((steps + 1) * (_PER_PAIR * st.c.size * n_samples
                                       + _PER_SAMPLE * n_samples + _STEP_OVERHEAD),
                        "steps", long_run=long_run, what="work units (steps x (60 m n_samples "
                        "+ 1000 n_samples + overhead))", hint="use fewer steps, Monte Carlo "
                        "samples n_samples or particles")
    rec = {k: [] for k in ("t", "loss", "p", "q", "w2p", "w2m")}
    for k in RunProgress(steps + 1, "reduced_mc.simulate_gd_mc steps", long).steps():
        with np.errstate(over="ignore", invalid="ignore"):
            loss, G, dG = _field_estimate(st, sample_nodes(rng, n_samples, d, d_H))
        if not np.isfinite(loss) or loss > 1e8:
            raise DivergenceError(f"Monte Carlo reduced GD diverged at step {k} with step "
                                  f"size step={step:g}; reduce step")
        if k % record_every == 0 or k == steps:
            p, q = _masses(st)
            for key, v in (("t", k * step), ("loss", loss), ("p", p), ("q", q),
                           ("w2p", _w2(st, 1, 0.0)),
                           ("w2m", _w2(st, -1, HALF_PI))):
                rec[key].append(v)
        if k == steps:
            break
        st.c = st.c + step * 2 * st.eps * st.c * G
        st.theta = fold_angle(st.theta + step * st.eps * dG)
    arr = {k: np.array(v) for k, v in rec.items()}
    return ReducedRun(arr["t"], arr["loss"], arr["p"], arr["q"], arr["w2p"], arr["w2m"], [],
                      st, np.array([]))
