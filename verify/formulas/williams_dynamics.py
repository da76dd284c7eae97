"""Canonical parametrization of 1-D ReLU networks and the mean-field velocity field
(Williams et al. 2019; claims W2a, W2e, W2f), generated from the SymPy derivations in
``derivations.relu1d``.

- ``canonical_from_full(a, b, c) -> (r, theta, delta)``          (W2a, W2b)
- ``full_from_canonical(r, theta, delta) -> (a, b, c)``          (W2a, W2c)
- ``potential_gradient(r, theta, x_data, residuals) -> (dV/dr, dV/dtheta)`` (W2e)
- ``velocity_jump(r, x_star, rho_star)`` = |r rho*| sqrt(1 + x*^2)         (W2f)

Conventions (MATH.md W.2, alpha(m) = m): r = c |(a, b)|, theta = atan2(b, a),
delta = c^2 - a^2 - b^2, x~ = (x, -1); ReLU'(0) = 0 (a sample exactly on a particle's
boundary line counts as inactive).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import sympy as sp

from derivations import relu1d as D
from numerics.validation import as_float_array, require_same_shape
from verify.formulas._base import DerivedFunction

__all__ = ["canonical_from_full", "full_from_canonical", "potential_gradient", "velocity_jump"]


def _out(v: np.ndarray) -> Any:
    v = np.asarray(v, dtype=np.float64)
    return v[()] if v.ndim == 0 else v


# ------------------------------------------------------------------ canonical map
@functools.lru_cache(maxsize=None)
def _canon_fns():
    w = D.derive_W2a()
    args = (D.a, D.b, D.c)
    return (sp.lambdify(args, w["r"], "numpy"), sp.lambdify(args, w["theta"], "numpy"),
            sp.lambdify(args, w["delta_def"], "numpy"))


def _canonical_from_full(a: Any, b: Any, c: Any):
    a = as_float_array(a, "a")
    b = as_float_array(b, "b")
    c = as_float_array(c, "c")
    require_same_shape(a=a, b=b, c=c)
    if np.any((a == 0) & (b == 0)):
        raise ValueError("a and b must not both vanish: theta = atan2(b, a) is undefined for "
                         "a neuron with (a, b) = (0, 0); drop such neurons (they are constant 0)")
    fr, ft, fd = _canon_fns()
    return _out(fr(a, b, c)), _out(ft(a, b, c)), _out(fd(a, b, c))


canonical_from_full = DerivedFunction(
    "canonical_from_full", "W2a", expr_fn=lambda: (D.derive_W2a()["r"], D.derive_W2a()["theta"], D.derive_W2a()["delta_def"]),
    impl=_canonical_from_full,
    doc="""pi(z) and the invariant: (r, theta, delta) = (c |(a,b)|, atan2(b, a), c^2 - a^2 - b^2)
(claims W2a, W2b).  Arrays of one shape; (a, b) = (0, 0) is rejected (no angle).

>>> canonical_from_full(3.0, 4.0, 2.0)
(10.0, 0.9272952180016122, -21.0)
""")


@functools.lru_cache(maxsize=None)
def _inverse_fns():
    w = D.derive_W2a()
    args = (D.r, D.delta)
    return {k: sp.lambdify(args, w[k], "numpy")
            for k in ("nu2", "nu2_rationalized")}


def _full_from_canonical(r: Any, theta: Any, delta: Any):
    r = as_float_array(r, "r")
    theta = as_float_array(theta, "theta")
    delta = as_float_array(delta, "delta")
    require_same_shape(r=r, theta=theta, delta=delta)
    bad = (r == 0) & (delta >= 0)
    if np.any(bad):
        raise ValueError("no real preimage with a defined angle: r = 0 and delta >= 0 force "
                         "|(a, b)| = 0; use delta < 0 for neurons with r = 0 (then c = 0, "
                         f"|(a, b)| = sqrt(-delta)); offending flat indices {np.flatnonzero(bad)[:5].tolist()}")
    f = _inverse_fns()
    with np.errstate(divide="ignore", invalid="ignore"):
        # the rationalized root avoids cancellation for delta > 0 (same expression, radsimp'd)
        nu2 = np.where(delta > 0, f["nu2_rationalized"](r, delta), f["nu2"](r, delta))
    nu = np.sqrt(nu2)
    if np.any(nu == 0):
        raise ValueError("|(a, b)| underflows to 0 (|r| tiny relative to delta > 0); rescale the input")
    cc = r / nu  # c has the sign of r: the only branch with |(a, b)| > 0
    return _out(nu * np.cos(theta)), _out(nu * np.sin(theta)), _out(cc)


full_from_canonical = DerivedFunction(
    "full_from_canonical", "W2a", expr_fn=lambda: (D.derive_W2a()["nu2"], D.derive_W2a()["c2"]),
    impl=_full_from_canonical,
    doc="""The point of the fibre pi^{-1}(r, theta) with invariant delta (claim W2a):
|(a, b)|^2 = (sqrt(delta^2 + 4 r^2) - delta) / 2 (the positive root of
nu^4 + delta nu^2 - r^2 = 0), (a, b) = |(a, b)| d(theta), c = r / |(a, b)|.

Sign branch: c^2 = (delta + sqrt(delta^2 + 4 r^2)) / 2 has two square roots; the one
chosen is c = sign(r) sqrt(c^2) (= r / |(a, b)|), the only one compatible with
r = c |(a, b)| and |(a, b)| > 0.  r = 0 with delta >= 0 has no preimage with a defined
angle (ValueError); r = 0 with delta < 0 gives c = 0.

>>> full_from_canonical(10.0, 0.9272952180016122, -21.0)  # doctest: +ELLIPSIS
(3.0000000000000..., 3.99999999999999..., 2.0)
""")


# ------------------------------------------------------------------ potential gradient
@functools.lru_cache(maxsize=None)
def _grad_fns():
    e = D.derive_W2e()
    args = (D.r, D.theta, D.x, D.rho)
    return (sp.lambdify(args, e["inner"], "numpy"), sp.lambdify(args, e["dV_dr_term"], "numpy"),
            sp.lambdify(args, e["dV_dtheta_term"], "numpy"))


def _potential_gradient(r: Any, theta: Any, x_data: Any, residuals: Any):
    r = as_float_array(r, "r (particle radii)")
    theta = as_float_array(theta, "theta (particle angles)")
    require_same_shape(r=r, theta=theta)
    x_data = as_float_array(x_data, "x_data (sample inputs)", ndim=1, allow_empty=False)
    residuals = as_float_array(residuals, "residuals (rho_j = f(x_j) - y_j)", ndim=1)
    require_same_shape(x_data=x_data, residuals=residuals)
    inner, t_r, t_th = _grad_fns()
    R, TH = r[..., None], theta[..., None]
    act = np.asarray(inner(R, TH, x_data, residuals)) > 0  # ReLU'(0) = 0
    g_r = np.where(act, t_r(R, TH, x_data, residuals), 0.0).sum(axis=-1)
    g_th = np.where(act, t_th(R, TH, x_data, residuals), 0.0).sum(axis=-1)
    return _out(g_r), _out(g_th)


potential_gradient = DerivedFunction(
    "potential_gradient", "W2e", expr_fn=lambda: (D.derive_W2e()["dV_dr_term"], D.derive_W2e()["dV_dtheta_term"]),
    impl=_potential_gradient,
    doc="""(dV/dr, dV/dtheta) of V(w; mu) = sum_j rho_j r <x~_j, d(theta)>_+ at particles
w = (r, theta) (claims W2d/W2e): sum over active samples of rho_j <x~_j, d(theta)> and
rho_j r <x~_j, t(theta)>.  Particles move along MINUS this (times the metric).
``r``, ``theta``: arrays of one shape; ``x_data``, ``residuals``: 1-D, one length.
Output has the shape of ``r``.  A sample exactly on the boundary counts as inactive.

>>> potential_gradient(2.0, 0.0, [1.0], [0.5])
(0.5, -1.0)
""")


# ------------------------------------------------------------------ velocity jump
@functools.lru_cache(maxsize=None)
def _jump_fn():
    return sp.lambdify((D.r, D.x, D.rho), D.derive_W2f()["magnitude"], "numpy")


def _velocity_jump(r: Any, x_star: Any, rho_star: Any):
    r = as_float_array(r, "r")
    x_star = as_float_array(x_star, "x_star (sample on the boundary line)")
    rho_star = as_float_array(rho_star, "rho_star (residual at x_star)")
    try:
        shape = np.broadcast_shapes(r.shape, x_star.shape, rho_star.shape)
    except ValueError:
        raise ValueError(f"r, x_star, rho_star must broadcast; got shapes {r.shape}, "
                         f"{x_star.shape}, {rho_star.shape}") from None
    return _out(np.broadcast_to(_jump_fn()(r, x_star, rho_star), shape))


def _jump_mp(r: Any, x_star: Any, rho_star: Any, dps: int = 30):
    import mpmath
    f = sp.lambdify((D.r, D.x, D.rho), D.derive_W2f()["magnitude"], "mpmath")
    with mpmath.workdps(dps):
        return +f(mpmath.mpf(float(r)), mpmath.mpf(float(x_star)), mpmath.mpf(float(rho_star)))


velocity_jump = DerivedFunction(
    "velocity_jump", "W2f", expr_fn=lambda: D.derive_W2f()["magnitude"], impl=_velocity_jump,
    doc="""Magnitude of the jump of grad V across the boundary line of sample x* (claim W2f):
|r rho*| sqrt(1 + x*^2).  The jump is purely angular (the radial jump is 0); its sign
depends on the crossing direction.  Broadcasting inputs; ``.mpmath(r, x, rho, dps)``.

>>> velocity_jump(2.0, 0.0, -0.5)
1.0
""", mpmath=_jump_mp)
