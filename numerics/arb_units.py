"""Certified (Arb ball) evaluations of the DEFINING network units, their derivatives and
group averages: the references of the certified sub-checks of Williams et al. (2019,
Sec. 3; claims W2a, W2e, W2f) and Maass Martinez & Fontbona (2024, Sec. 3; claims M1a,
M1b).  Each function computes a definition of docs/conventions.md directly, in ball
arithmetic; none reads a derived expression.

- :func:`relu`: ``(u)_+`` of an ``arb`` (rigorous: exact when the sign is decided, the hull
  ``[0, max(u, 0)]`` otherwise) or of an ``arb_series`` (the branch is decided by the
  constant term; a kink raises :class:`UndecidableCondition`: no derivative there);
- :func:`full_neuron` ``c (a x - b)_+`` and :func:`canonical_neuron`
  ``r <x~, d(theta)>_+`` with ``x~ = (x, -1)``, ``d(theta) = (cos theta, sin theta)``;
- :func:`canonical_map` ``(c |(a, b)|, atan2(b, a), c^2 - a^2 - b^2)`` and its inverse on a
  fibre, :func:`fibre_point` (the positive root of the defining quadratic, enclosed by a
  decided sign change);
- :func:`taylor_coefficients`: the Taylor coefficients of a function of one ball at a
  point, by Arb power series (``arb_series``): rigorous derivatives, no differencing;
- :func:`logistic` ``1 / (1 + e^-t)``;
- :func:`unit_output` (``logistic(z x)`` or ``z x``, ``z`` a row-major ``dY x dX``
  parameter), :func:`feature_average` ``(Q_G Phi_mu)(x)``, :func:`symmetrized_model`
  ``Phi_{mu^G}(x)``, :func:`projected_model` ``Phi_{mu^{E^G}}(x)`` and
  :func:`fixed_space_projection` ``P_{E^G} z``, for a finite group given by its matrices
  (``rho``, ``rho_hat``, ``M``) with integer entries (permutation and sign actions: exact
  in ball arithmetic; other entries are refused), and :func:`integer_matvec`, such a
  matrix times a vector of balls;
- for SO(2) acting by rotations on X = Y = R^2 and by M_g z = R z R^T on Z = R^{2x2}:
  :func:`so2_feature_average`, :func:`so2_symmetrized_model` and
  :func:`so2_fixed_space_projection`, the Haar integrals (1/2 pi) int_0^{2 pi} d phi as
  rigorous ``acb.integral`` enclosures (the integrands are entire in phi for the cubic gate,
  meromorphic for tanh: Arb subdivides around the poles), for the norm-gated units
  ``(z x) g(|z x|^2)``, g(r) = r ("cubic") or tanh(r) ("tanh") (:func:`norm_gated_output`),
  and the action itself at one angle (:func:`rotation_action`).

Inputs are floats (entered exactly), ints, Fractions or balls.  This module imports
neither SymPy nor the ``verify`` package.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from numerics.arb_quadrature import UndecidableCondition, exact_ball, flint_module
from numerics.validation import ArgumentTypeError, require_size

__all__ = ["relu", "full_neuron", "canonical_neuron", "canonical_map", "fibre_point",
           "taylor_coefficients", "logistic",
           "UNITS", "unit_output", "feature_average", "symmetrized_model", "projected_model",
           "fixed_space_projection", "integer_matvec", "MAX_TAYLOR_ORDER", "NORM_GATES",
           "so2_feature_average", "so2_symmetrized_model", "so2_fixed_space_projection",
           "norm_gated_output", "rotation_action"]

#: highest Taylor order :func:`taylor_coefficients` computes
MAX_TAYLOR_ORDER = 32
#: the units of :func:`unit_output`
UNITS = ("logistic", "linear")
#: entries of one vector, particles of one measure, matrices of one group (ball arithmetic
#: costs ~1 us per operation: beyond, one call takes minutes)
MAX_ENTRIES = 10 ** 5


def _ball(v: Any, name: str) -> Any:
    flint = flint_module()
    if isinstance(v, (flint.arb, flint.arb_series)):
        return v
    return exact_ball(v, name)


def relu(u: Any) -> Any:
    """``max(u, 0)`` of an ``arb`` or an ``arb_series`` (see the module docstring)."""
    flint = flint_module()
    if isinstance(u, flint.arb_series):
        coeffs = u.coeffs()
        c0 = coeffs[0] if coeffs else flint.arb(0)
        if c0 > 0:
            return u
        if c0 < 0:
            return 0 * u
        raise UndecidableCondition(f"relu of a series at a kink (constant term {c0}): the "
                                   "derivative does not exist there; move off the kink")
    u = _ball(u, "u")
    if u > 0:
        return u
    if u <= 0:
        return flint.arb(0)
    return u.max(flint.arb(0))


def full_neuron(a: Any, b: Any, c: Any, x: Any) -> Any:
    """``c (a x - b)_+``: one neuron of f_z, x~ = (x, -1) (Williams et al. 2019, Sec. 3)."""
    a, b, c, x = (_ball(v, n) for v, n in ((a, "a"), (b, "b"), (c, "c"), (x, "x")))
    return c * relu(a * x - b)


def canonical_neuron(r: Any, theta: Any, x: Any) -> Any:
    """``r <x~, d(theta)>_+ = r (x cos theta - sin theta)_+`` (Williams et al. 2019, Sec. 3,
    alpha(m) = m); ``r`` and ``theta`` may be ``arb_series`` (derivatives)."""
    r, theta, x = _ball(r, "r"), _ball(theta, "theta"), _ball(x, "x")
    return r * relu(x * theta.cos() - theta.sin())


def canonical_map(a: Any, b: Any, c: Any) -> tuple[Any, Any, Any]:
    """``(r, theta, delta) = (c |(a, b)|, atan2(b, a), c^2 - a^2 - b^2)``: the canonical
    parameters pi(z) and the invariant of one neuron by their definitions (Williams et al.
    2019, Sec. 3); (a, b) = (0, 0) has no angle (ValueError)."""
    flint = flint_module()
    a, b, c = (_ball(v, n) for v, n in ((a, "a"), (b, "b"), (c, "c")))
    if a.is_zero() and b.is_zero():
        raise ValueError("canonical_map: a and b must not both vanish (no angle)")
    nu2 = a * a + b * b
    return c * nu2.sqrt(), flint.arb.atan2(b, a), c * c - nu2


def fibre_point(r: Any, theta: Any, delta: Any) -> tuple[Any, Any, Any]:
    """The ``(a, b, c)`` with ``c |(a, b)| = r``, ``atan2(b, a) = theta``, ``c^2 - a^2 - b^2 =
    delta`` (Williams et al. 2019, Sec. 3), from these definitions: with ``c = r / nu``,
    ``y = nu^2 = |(a, b)|^2`` is the positive root of ``g(y) = y^2 + delta y - r^2`` (unique:
    the product of the roots is ``-r^2 < 0``; for r = 0 it is ``-delta``, which must be > 0).
    The root is enclosed by a decided sign change of ``g`` (g(lo) < 0 < g(hi)) on an
    interval of relative width 2^(20 - prec) around an estimate (the estimate's formula is
    not part of the proof); ``(a, b, c) = (sqrt(y) cos theta, sqrt(y) sin theta, r / sqrt(y))``."""
    flint = flint_module()
    r, theta, delta = (_ball(v, n) for v, n in ((r, "r"), (theta, "theta"), (delta, "delta")))
    if r.is_zero():
        if not delta < 0:
            raise ValueError("fibre_point: r = 0 needs delta < 0 (|(a, b)|^2 = -delta > 0)")
        y = -delta
    else:
        s = (delta * delta + 4 * r * r).sqrt()
        est = ((s - delta) / 2 if delta <= 0 else 2 * r * r / (s + delta)).mid()
        width = flint.arb(2) ** (20 - flint.ctx.prec)
        lo, hi = (est * (1 - width)).mid(), (est * (1 + width)).mid()
        g = lambda v: v * v + delta * v - r * r  # noqa: E731
        if not (lo > 0 and g(lo) < 0 and g(hi) > 0):
            raise UndecidableCondition(f"fibre_point: no decided sign change of y^2 + delta y - r^2 "
                                       f"around {est} (raise the working precision)")
        y = flint.arb((lo + hi).mid() / 2, (hi - lo).upper())
    nu = y.sqrt()
    return nu * theta.cos(), nu * theta.sin(), r / nu


def taylor_coefficients(f: Callable[[Any], Any], x0: Any, order: int) -> list[Any]:
    """The Taylor coefficients ``f^(k)(x0) / k!``, k = 0..order, of ``f`` (which maps an
    ``arb_series`` to an ``arb_series``) at the ball ``x0``: rigorous enclosures."""
    flint = flint_module()
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or not 0 <= order <= MAX_TAYLOR_ORDER:
        raise ValueError(f"order must be an integer in 0..{MAX_TAYLOR_ORDER}; got {order!r}")
    x0 = _ball(x0, "x0")
    out = f(flint.arb_series([x0, 1], prec=int(order) + 1))
    if not isinstance(out, flint.arb_series):
        raise TypeError(f"f must return an arb_series; got {type(out).__name__}")
    coeffs = list(out.coeffs())
    return [coeffs[k] if k < len(coeffs) else flint.arb(0) for k in range(int(order) + 1)]


def logistic(t: Any) -> Any:
    """``1 / (1 + exp(-t))`` of an ``arb`` or ``arb_series``."""
    t = _ball(t, "t")
    return 1 / (1 + (-t).exp())


# ------------------------------------------------------------------ finite group averages
def _sequence(v: Any, name: str) -> list:
    """``v`` as a list (a list, tuple or 1-D array of numbers, balls or vectors), or a named
    error."""
    if not isinstance(v, (list, tuple, np.ndarray)) or (isinstance(v, np.ndarray) and v.ndim == 0):
        raise ArgumentTypeError(f"{name} must be a list (or array) of entries; got "
                                f"{type(v).__name__} {v!r:.40}")
    require_size(len(v), name, limit=MAX_ENTRIES)
    return list(v)


def _integer_matrices(mats: Any, name: str, ndim: int = 3) -> np.ndarray:
    """``mats`` as int64: a stack of square integer matrices (|G|, d, d) (``ndim`` 3) or one
    integer matrix (``ndim`` 2), or a named error."""
    what, shape = (("a stack of square integer matrices (|G|, d, d)",
                    "a stack of square matrices (|G|, d, d)") if ndim == 3
                   else ("an integer matrix (rows, columns)", "a matrix (rows, columns)"))
    if isinstance(mats, np.ndarray):
        require_size(mats.size, name, limit=MAX_ENTRIES)
    elif isinstance(mats, (str, bytes)) or not isinstance(mats, (list, tuple)):
        raise ArgumentTypeError(f"{name} must be {what}; got {type(mats).__name__} {mats!r:.40}")
    try:
        A = np.asarray(mats, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{name} must be {what} of numbers; got {mats!r:.60}") from None
    require_size(A.size, name, limit=MAX_ENTRIES)
    if A.ndim != ndim or (ndim == 3 and A.shape[1] != A.shape[2]) or A.shape[0] < 1:
        raise ValueError(f"{name} must be {shape}; got shape {A.shape}")
    if not np.all(np.isfinite(A)) or np.any(A != np.round(A)) or np.any(np.abs(A) > 2 ** 53):
        raise ValueError(f"{name} must have integer entries (a permutation or sign action) to be "
                         "exact in ball arithmetic; other representations are not supported")
    return A.astype(np.int64)


def integer_matvec(A: Any, v: Sequence[Any]) -> list[Any]:
    """``A v`` in ball arithmetic for an integer matrix ``A`` (rows x ``len(v)``: the
    permutation and sign actions ``rho_g``, ``rho^_g``, ``M_g`` of a finite group, Maass
    Martinez & Fontbona 2024, Sec. 3) and ``v`` a list of balls or numbers (floats entered
    exactly): integer-times-ball products and sums, so the result encloses ``A`` times every
    point of the balls.  ``A`` is a nested list or array of integer-valued numbers
    (|entries| <= 2^53); anything else is refused by name."""
    M = _integer_matrices(A, "A", ndim=2)
    vb = _vector(v, M.shape[1], "v")
    flint = flint_module()
    out = []
    for row in M:
        acc = flint.arb(0)
        for aij, vj in zip(row, vb):
            if aij:
                acc = acc + int(aij) * vj
        out.append(acc)
    return out


def _vector(v: Any, n: int, name: str) -> list[Any]:
    vals = _sequence(v, name)
    if len(vals) != n:
        raise ValueError(f"{name} must have {n} entries; got {len(vals)}")
    return [_ball(e, name) for e in vals]


def unit_output(unit: Any, x: Sequence[Any], z: Sequence[Any], dim_y: int) -> list[Any]:
    """``sigma_*(x, z)``: ``logistic(z x)`` elementwise or ``z x``, for the row-major
    ``dim_y x len(x)`` parameter ``z`` (Maass Martinez & Fontbona 2024, Sec. 3); ``unit``
    may also be a callable ``(x balls, z balls, dim_y) -> dim_y balls``."""
    if callable(unit):
        return list(unit([_ball(e, "x") for e in _sequence(x, "x")],
                         [_ball(e, "z") for e in _sequence(z, "z")], dim_y))
    if not isinstance(unit, str) or unit not in UNITS:  # an array would compare per entry
        raise ValueError(f"unit must be one of {UNITS} or a callable; got {unit!r}")
    dx = len(x)
    x = _vector(x, dx, "x")
    z = _vector(z, dim_y * dx, "z")
    pre = [sum((z[i * dx + j] * x[j] for j in range(1, dx)), z[i * dx] * x[0]) for i in range(dim_y)]
    return [logistic(p) for p in pre] if unit == "logistic" else pre


def _weighted(particles: Sequence[Sequence[Any]], weights: Sequence[Any] | None) -> tuple[list, list]:
    if isinstance(particles, np.ndarray):  # all coordinates together, from the shape
        require_size(particles.size, "particles (all coordinates)", limit=MAX_ENTRIES)
    ps, total = [], 0
    for p in _sequence(particles, "particles"):
        ps.append(_sequence(p, "particles entry"))
        total = require_size(total + len(ps[-1]), "particles (all coordinates)", limit=MAX_ENTRIES)
    if not ps:
        raise ValueError("particles must hold at least one particle")
    ws = [1] * len(ps) if weights is None else _sequence(weights, "weights")
    if len(ws) != len(ps):
        raise ValueError(f"weights must have one entry per particle ({len(ps)}); got {len(ws)}")
    return ps, [_ball(w, "weight") for w in ws]


def _model(unit: Any, x: list, particles: list, weights: list, dim_y: int) -> list[Any]:
    flint = flint_module()
    out = [flint.arb(0)] * dim_y
    for z, w in zip(particles, weights):
        out = [o + w * s for o, s in zip(out, unit_output(unit, x, z, dim_y))]
    return out


def feature_average(rho: Any, rho_hat: Any, unit: Any, particles: Sequence[Sequence[Any]],
                    weights: Sequence[Any] | None, x: Sequence[Any]) -> list[Any]:
    """``(Q_G Phi_mu)(x) = (1/|G|) sum_g rho^_g^T Phi_mu(rho_g x)`` for
    ``mu = sum_i w_i delta_{z_i}`` (the function side of M1a)."""
    R, RH = _integer_matrices(rho, "rho"), _integer_matrices(rho_hat, "rho_hat")
    ps, ws = _weighted(particles, weights)
    xv = _vector(x, R.shape[1], "x")
    dy = RH.shape[1]
    total = [flint_module().arb(0)] * dy
    for g, gh in zip(R, RH):
        phi = _model(unit, integer_matvec(g, xv), ps, ws, dy)
        total = [t + s for t, s in zip(total, integer_matvec(gh.T, phi))]
    return [t / len(R) for t in total]


def symmetrized_model(M: Any, unit: Any, particles: Sequence[Sequence[Any]],
                      weights: Sequence[Any] | None, x: Sequence[Any], dim_y: int) -> list[Any]:
    """``Phi_{mu^G}(x) = sum_i w_i (1/|G|) sum_g sigma_*(x, M_g z_i)`` (parameter side)."""
    Ms = _integer_matrices(M, "M")
    ps, ws = _weighted(particles, weights)
    xv = [_ball(e, "x") for e in x]
    D = Ms.shape[1]
    if any(len(z) != D for z in ps):
        raise ValueError(f"particles must have D = {D} entries each (M acts on R^{D}); got "
                         f"{sorted({len(z) for z in ps})}")
    orbit = [(integer_matvec(Mg, _vector(z, D, "particles entry")), w / len(Ms))
             for z, w in zip(ps, ws) for Mg in Ms]
    return _model(unit, xv, [p for p, _ in orbit], [w for _, w in orbit], dim_y)


def fixed_space_projection(M: Any, z: Sequence[Any]) -> list[Any]:
    """``P_{E^G} z = (1/|G|) sum_g M_g z``."""
    Ms = _integer_matrices(M, "M")
    zv = _vector(z, Ms.shape[1], "z")
    total = [flint_module().arb(0)] * Ms.shape[1]
    for Mg in Ms:
        total = [t + s for t, s in zip(total, integer_matvec(Mg, zv))]
    return [t / len(Ms) for t in total]


def projected_model(M: Any, unit: Any, particles: Sequence[Sequence[Any]],
                    weights: Sequence[Any] | None, x: Sequence[Any], dim_y: int) -> list[Any]:
    """``Phi_{mu^{E^G}}(x) = sum_i w_i sigma_*(x, P_{E^G} z_i)``."""
    ps, ws = _weighted(particles, weights)
    xv = [_ball(e, "x") for e in _sequence(x, "x")]
    return _model(unit, xv, [fixed_space_projection(M, z) for z in ps], ws, dim_y)


# ------------------------------------------------------------------ SO(2) Haar integrals
#: gates of the norm-gated unit (z x) g(|z x|^2): "cubic" g(r) = r, "tanh" g(r) = tanh(r)
NORM_GATES = ("cubic", "tanh")


def norm_gated_output(gate: str, x: Sequence[Any], z: Sequence[Any]) -> list[Any]:
    """``(z x) g(|z x|^2)`` for the row-major 2 x 2 ``z`` and ``x`` in R^2 (balls, floats)."""
    return _gated(_gate(gate), _vector(z, 4, "z"), _vector(x, 2, "x"))


def _gated(gate: str, z: Sequence[Any], x: Sequence[Any]) -> list[Any]:
    """(z x) g(|z x|^2) for 2 x 2 row-major z (balls or complex balls: |u|^2 = u1^2 + u2^2,
    the analytic continuation)."""
    u = [z[0] * x[0] + z[1] * x[1], z[2] * x[0] + z[3] * x[1]]
    r = u[0] * u[0] + u[1] * u[1]
    g = r if gate == "cubic" else r.tanh()
    return [u[0] * g, u[1] * g]


def _rotate(c: Any, s: Any, v: Sequence[Any]) -> list[Any]:
    return [c * v[0] - s * v[1], s * v[0] + c * v[1]]


def _conjugate(c: Any, s: Any, z: Sequence[Any]) -> list[Any]:
    """R z R^T for row-major 2 x 2 z."""
    rz = [c * z[0] - s * z[2], c * z[1] - s * z[3], s * z[0] + c * z[2], s * z[1] + c * z[3]]
    return [rz[0] * c - rz[1] * s, rz[0] * s + rz[1] * c, rz[2] * c - rz[3] * s, rz[2] * s + rz[3] * c]


def rotation_action(angle: Any, x: Sequence[Any], z: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``(R x, R z R^T)`` for the rotation R(angle) of R^2 and the row-major 2 x 2 ``z``
    (balls; a float angle enters exactly)."""
    t = _ball(angle, "angle")
    c, s = t.cos(), t.sin()
    return _rotate(c, s, _vector(x, 2, "x")), _conjugate(c, s, _vector(z, 4, "z"))


def _so2_integral(entry: Callable[[Any, Any, int], Any], n: int, what: str) -> list[Any]:
    """(1/2 pi) int_0^{2 pi} entry(cos phi, sin phi, k) d phi for k < n, certified."""
    from numerics.arb_quadrature import certified_integral
    flint = flint_module()
    two_pi = 2 * flint.arb.pi()
    out = []
    for k in range(n):
        def f(t: Any, analytic: bool, k: int = k) -> Any:
            return entry(t.cos(), t.sin(), k)
        out.append(certified_integral([(flint.arb(0), two_pi, f)], what=f"{what}, entry {k + 1}")
                   / two_pi)
    return out


def _gate(gate: Any) -> str:
    if not isinstance(gate, str) or gate not in NORM_GATES:
        raise ValueError(f"gate must be one of {NORM_GATES}; got {gate!r:.40}")
    return gate


def so2_feature_average(gate: str, particles: Sequence[Sequence[Any]],
                        weights: Sequence[Any] | None, x: Sequence[Any]) -> list[Any]:
    """``(Q_G Phi_mu)(x) = (1/2 pi) int R^T Phi_mu(R x) d phi`` for the norm-gated unit and
    ``mu = sum_i w_i delta_{z_i}`` (z_i row-major 2 x 2): the function side of M1a for SO(2)."""
    gate = _gate(gate)
    ps, ws = _weighted(particles, weights)
    zs = [_vector(z, 4, "particles entry") for z in ps]
    xv = _vector(x, 2, "x")

    def entry(c: Any, s: Any, k: int) -> Any:
        rx = _rotate(c, s, xv)
        phi = [sum(w * _gated(gate, z, rx)[j] for z, w in zip(zs, ws)) for j in range(2)]
        return c * phi[0] + s * phi[1] if k == 0 else -s * phi[0] + c * phi[1]   # R^T phi
    return _so2_integral(entry, 2, "SO(2) feature average")


def so2_symmetrized_model(gate: str, particles: Sequence[Sequence[Any]],
                          weights: Sequence[Any] | None, x: Sequence[Any]) -> list[Any]:
    """``Phi_{mu^G}(x) = sum_i w_i (1/2 pi) int sigma_*(x, R z_i R^T) d phi`` (parameter
    side of M1a for SO(2))."""
    gate = _gate(gate)
    ps, ws = _weighted(particles, weights)
    zs = [_vector(z, 4, "particles entry") for z in ps]
    xv = _vector(x, 2, "x")

    def entry(c: Any, s: Any, k: int) -> Any:
        return sum(w * _gated(gate, _conjugate(c, s, z), xv)[k] for z, w in zip(zs, ws))
    return _so2_integral(entry, 2, "SO(2) symmetrized model")


def so2_fixed_space_projection(z: Sequence[Any]) -> list[Any]:
    """``P_{E^G} z = (1/2 pi) int R z R^T d phi`` (row-major 2 x 2 z)."""
    zv = _vector(z, 4, "z")
    return _so2_integral(lambda c, s, k: _conjugate(c, s, zv)[k], 4, "SO(2) projection")
