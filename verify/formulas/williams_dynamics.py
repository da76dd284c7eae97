"""Canonical parametrization of 1-D ReLU networks and the mean-field velocity field
(Williams et al. 2019; claims W2a, W2e, W2f), evaluated from the SymPy results those
claims derive (``verify.derived``: the objects the checks test, perturbed by the mutation
harness).

- ``canonical_from_full(a, b, c) -> (r, theta, delta)``          (W2a)
- ``full_from_canonical(r, theta, delta) -> (a, b, c)``          (W2a)
- ``potential_gradient(r, theta, x_data, residuals) -> (dV/dr, dV/dtheta)`` (W2e)
- ``velocity_jump(r, x_star, rho_star)`` = |r rho*| sqrt(1 + x*^2)         (W2f)

Conventions (alpha(m) = m): r = c |(a, b)|, theta = atan2(b, a), delta = c^2 - a^2 - b^2,
x~ = (x, -1); ReLU'(0) = 0 (a sample exactly on a particle's boundary line is inactive).

Float64 care (a mechanical rewrite of the derived expressions, never a retyped formula):
every ``sqrt(p^2 + q^2)`` of a derived expression is evaluated as ``hypot(p, q)``;
the derived polynomial delta is summed from its terms with the error-free ``dot2``
(correctly rounded, also under cancellation c^2 ~ a^2 + b^2);
``full_from_canonical`` uses that |(a, b)|^2 is positively homogeneous of degree 1 in
(r, delta) (checked in the derivation) to evaluate at scaled arguments; ``velocity_jump``
is homogeneous of degree 1 in r and in rho* separately and is evaluated on their
mantissas, the exponents added back exactly.  A result that float64 cannot hold raises
ValueError naming the overflow.
"""
from __future__ import annotations

from typing import Any

import mpmath
import numpy as np
import sympy as sp

from derivations import williams_dynamics as D
from numerics.validation import as_float_array, dot2, require_same_shape
from verify import derived
from verify.formulas._base import DerivedFunction, UlpBound, check_dps, enclose_grid

__all__ = ["canonical_from_full", "full_from_canonical", "potential_gradient", "velocity_jump"]

_HYPOT = sp.Function("hypot")
_NP = [{"hypot": np.hypot}, "numpy"]
_MP = [{"hypot": mpmath.hypot}, "mpmath"]


def _out(v: Any) -> Any:
    v = np.asarray(v, dtype=np.float64)
    return float(v) if v.ndim == 0 else v


def _hypot_rewrite(expr: Any) -> Any:
    """Every sqrt(k1 p^2 + k2 q^2 [+ k3]) (k_i > 0) of ``expr`` as hypot(sqrt(k1) p, ...):
    the same expression, without overflow in the squares."""
    def legs(e):
        if not (isinstance(e, sp.Pow) and e.exp == sp.S.Half and isinstance(e.base, sp.Add)):
            return None
        out = []
        for term in e.base.args:
            k, rest = term.as_coeff_Mul()
            if k > 0 and rest == 1:
                out.append(sp.sqrt(k))
            elif k > 0 and isinstance(rest, sp.Pow) and rest.exp == 2:
                out.append(sp.sqrt(k) * rest.base)
            else:
                return None
        return out

    def to_hypot(e):
        ls = legs(e)
        h = ls[0]
        for q in ls[1:]:
            h = _HYPOT(h, q)
        return h
    return expr.replace(lambda e: legs(e) is not None, to_hypot)


def _hypot_form(claim: str, key: str, args: tuple, mp: bool = False):
    """The derived result ``derived.results(claim)[key]`` with every sqrt of a sum of
    squares as hypot (:func:`_hypot_rewrite`), lambdified to NumPy (to mpmath if ``mp``);
    cached per derivation generation.  Plain evaluators are ``derived.lambdified``."""
    def build():
        expr = _hypot_rewrite(sp.sympify(derived.results(claim)[key]))
        return sp.lambdify(args, expr, modules=_MP if mp else _NP)
    return _cached(build, (claim, key, args, mp))


_CACHE: dict[tuple, Any] = {}


def _cached(build, key):
    k = key + (derived.generation(),)
    fn = _CACHE.get(k)
    if fn is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        fn = _CACHE[k] = build()
    return fn


def _mp_elementwise(fn, names: tuple[str, ...], values: tuple, n_out: int, *,
                    broadcast: bool, dps: int) -> tuple:
    """Evaluate ``fn`` (mpf arguments -> tuple of ``n_out`` mpf) elementwise at ``dps``
    digits over arrays validated as the float paths do (``as_float_array``; one shape, or
    broadcasting shapes if ``broadcast``): object arrays of mpf, scalars for 0-d input."""
    arrs = [as_float_array(v, n) for v, n in zip(values, names)]
    if broadcast:
        try:
            shape = np.broadcast_shapes(*(v.shape for v in arrs))
        except ValueError:
            raise ValueError(f"{', '.join(names)} must broadcast; got shapes "
                             f"{', '.join(str(v.shape) for v in arrs)}") from None
    else:
        require_same_shape(**dict(zip(names, arrs)))
        shape = arrs[0].shape
    arrs = [np.broadcast_to(v, shape) for v in arrs]
    outs = [np.empty(shape, dtype=object) for _ in range(n_out)]
    with mpmath.workdps(dps):
        for idx in np.ndindex(*shape):
            for o, r in zip(outs, fn(*(mpmath.mpf(float(v[idx])) for v in arrs))):
                o[idx] = r
    return tuple(o[()] for o in outs) if not shape else tuple(outs)


def _finite_or_raise(name: str, value: np.ndarray, hint: str) -> None:
    if not np.all(np.isfinite(value)):
        bad = np.flatnonzero(~np.isfinite(np.ravel(value)))[:5].tolist()
        raise ValueError(f"{name} overflows float64 at flat index {bad}: {hint}")


# ------------------------------------------------------------------ canonical map
def _canonical_from_full(a: Any, b: Any, c: Any):
    a = as_float_array(a, "a")
    b = as_float_array(b, "b")
    c = as_float_array(c, "c")
    require_same_shape(a=a, b=b, c=c)
    if np.any((a == 0) & (b == 0)):
        raise ValueError("a and b must not both vanish: theta = atan2(b, a) is undefined for "
                         "a neuron with (a, b) = (0, 0); drop such neurons (they are constant 0)")
    args = (D.a, D.b, D.c)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(_hypot_form("W2a", "r", args)(a, b, c), dtype=np.float64)
        # b + 0.0 turns -0.0 into +0.0 (exact otherwise): theta in (-pi, pi], as over the
        # reals, where atan2(-0.0, a < 0) would give -pi
        th = np.asarray(_hypot_form("W2a", "theta", args)(a, b + 0.0, c), dtype=np.float64)
    _finite_or_raise("r = c |(a, b)|", r, "rescale (a, b, c) -> (k a, k b, c / k) first")
    dl = _delta(a, b, c)
    shape = np.broadcast_shapes(a.shape)
    return (_out(np.broadcast_to(r, shape)), _out(np.broadcast_to(th, shape)),
            _out(np.broadcast_to(dl, shape)))


def _delta_terms() -> list[tuple[float, tuple[int, ...]]]:
    """The derived polynomial delta(a, b, c) as (float coefficient, exponents) terms."""
    def build():
        P = sp.Poly(sp.expand(derived.results("W2a")["delta"]), D.a, D.b, D.c)
        return [(float(co), tuple(mon)) for mon, co in P.terms()]
    return _cached(build, ("W2a", "delta", "terms"))


def _delta(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The derived delta at (a, b, c), each term a product split exactly by ``dot2``:
    correctly rounded even where c^2 - a^2 - b^2 cancels; overflow raises ValueError."""
    hint = ("delta = c^2 - a^2 - b^2 overflows float64: |(a, b)| or |c| exceeds ~1.3e154; "
            "rescale the inputs (delta is quadratic)")
    xs, ys = [], []
    with np.errstate(over="ignore", invalid="ignore"):
        for co, mon in _delta_terms():
            f = [v for v, k in zip((a, b, c), mon) for _ in range(k)]
            if not f:
                xs.append(np.float64(co)), ys.append(np.float64(1.0))
                continue
            head = np.float64(co)
            for v in f[:-1]:
                head = head * v
            xs.append(head), ys.append(f[-1])
    if not all(np.all(np.isfinite(v)) for v in xs):
        raise ValueError(hint)
    try:
        dl = dot2(xs, ys)
    except ValueError:
        raise ValueError(hint) from None
    return np.asarray(dl, dtype=np.float64)


def _canonical_from_full_mp(a: Any, b: Any, c: Any, dps: int = 30):
    dps = check_dps(dps)
    args = (D.a, D.b, D.c)
    fns = [_hypot_form("W2a", k, args, mp=True) for k in ("r", "theta", "delta")]

    def one(A, B, C):
        if A == 0 and B == 0:
            raise ValueError("a and b must not both vanish: theta = atan2(b, a) is undefined")
        return tuple(+f(A, B, C) for f in fns)
    return _mp_elementwise(one, ("a", "b", "c"), (a, b, c), 3, broadcast=False, dps=dps)


def _tuple_enclose(fns: list, args: tuple, prec: int) -> tuple:
    """Balls of several functions of balls on broadcast float arguments."""
    return tuple(enclose_grid(f, args, prec) for f in fns)


def _canonical_from_full_enclose(a: Any, b: Any, c: Any, *, prec: int = 128) -> tuple:
    from verify import certify
    vals = tuple(as_float_array(v, n) for v, n in ((a, "a"), (b, "b"), (c, "c")))
    require_same_shape(a=vals[0], b=vals[1], c=vals[2])
    if np.any((vals[0] == 0) & (vals[1] == 0)):
        raise ValueError("a and b must not both vanish: theta = atan2(b, a) is undefined")
    res = derived.results("W2a")
    fns = [certify.arb_function(res[k], (D.a, D.b, D.c)) for k in ("r", "theta", "delta")]
    return _tuple_enclose(fns, vals, prec)


#: float64 error of canonical_from_full, per output: r = c hypot(a, b) (hypot <= 1 ulp, one
#: product), theta = atan2 (<= 2 ulp), delta correctly rounded (dot2)
CANONICAL_FROM_FULL_ULPS = UlpBound(4, "value of each output (|exact|)",
                                    "r: hypot and one product; theta: atan2; delta: the exact "
                                    "dot product of its derived terms, rounded once")


canonical_from_full = DerivedFunction(
    "canonical_from_full", "W2a",
    expr_fn=lambda: tuple(derived.results("W2a")[k] for k in ("r", "theta", "delta")),
    impl=_canonical_from_full, mpmath=_canonical_from_full_mp,
    enclose=_canonical_from_full_enclose, ulp_bound=CANONICAL_FROM_FULL_ULPS,
    doc="""pi(z) and the invariant: (r, theta, delta) = (c |(a,b)|, atan2(b, a), c^2 - a^2 - b^2),
theta in (-pi, pi] (b = -0.0 counts as 0)
(claims W2a, W2b).

Parameters: ``a``, ``b``, ``c`` (first-layer slopes, offsets, output weights), arrays of
one shape; (a, b) = (0, 0) is rejected (no angle).  Returns ``(r, theta, delta)`` of that
shape.  r uses hypot (no overflow in a^2 + b^2); a delta beyond float64 raises.

>>> canonical_from_full(3.0, 4.0, 2.0)
(10.0, 0.9272952180016122, -21.0)
""")


def _scaled_nu2(r: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nu2 / 4^e, 2^e) with |(a, b)|^2 = nu2 evaluated at (r, delta) / 4^e (degree-1
    homogeneity), 4^e ~ max(|r|, |delta|): no overflow, no loss for large arguments."""
    big = np.maximum(np.abs(r), np.abs(delta))
    _, ex = np.frexp(np.where(big > 0, big, 1.0))
    e = ex // 2
    rs, ds = np.ldexp(r, -2 * e), np.ldexp(delta, -2 * e)
    args = (D.r, D.delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        nu2 = np.where(ds > 0, _hypot_form("W2a", "nu2_rationalized", args)(rs, ds),
                       _hypot_form("W2a", "nu2", args)(rs, ds))
    return np.asarray(nu2, dtype=np.float64), e


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
    nu2s, e = _scaled_nu2(r, delta)
    nus = np.sqrt(nu2s)
    if np.any(~(nus > 0)):
        raise ValueError("|(a, b)| underflows to 0 (|r| tiny relative to delta > 0, "
                         "|(a, b)|^2 ~ r^2 / delta): rescale the input")
    nu = np.ldexp(nus, e)
    cc = np.ldexp(np.ldexp(r, -2 * e) / nus, e)  # r / nu; c has the sign of r
    _finite_or_raise("c = r / |(a, b)|", cc, "|r| / |(a, b)| exceeds float64")
    return _out(nu * np.cos(theta)), _out(nu * np.sin(theta)), _out(cc)


def _full_from_canonical_mp(r: Any, theta: Any, delta: Any, dps: int = 30):
    dps = check_dps(dps)
    args = (D.r, D.delta)
    fns = {k: _hypot_form("W2a", k, args, mp=True) for k in ("nu2_rationalized", "nu2")}

    def one(R, T, Dl):
        if R == 0 and Dl >= 0:
            raise ValueError("no real preimage with a defined angle: r = 0 and delta >= 0")
        nu = mpmath.sqrt(fns["nu2_rationalized" if Dl > 0 else "nu2"](R, Dl))
        return nu * mpmath.cos(T), nu * mpmath.sin(T), R / nu
    return _mp_elementwise(one, ("r", "theta", "delta"), (r, theta, delta), 3,
                           broadcast=False, dps=dps)


def _full_from_canonical_enclose(r: Any, theta: Any, delta: Any, *, prec: int = 128) -> tuple:
    from flint import arb
    from verify import certify
    vals = tuple(as_float_array(v, n) for v, n in ((r, "r"), (theta, "theta"), (delta, "delta")))
    require_same_shape(r=vals[0], theta=vals[1], delta=vals[2])
    if np.any((vals[0] == 0) & (vals[2] >= 0)):
        raise ValueError("no real preimage with a defined angle: r = 0 and delta >= 0")
    res = derived.results("W2a")
    nu2 = {k: certify.arb_function(res[k], (D.r, D.delta)) for k in ("nu2", "nu2_rationalized")}

    def nu(R: Any, Dl: Any) -> Any:
        return nu2["nu2_rationalized" if Dl > 0 else "nu2"](R, Dl).sqrt()
    fns = [lambda R, T, Dl: nu(R, Dl) * arb(T).cos(), lambda R, T, Dl: nu(R, Dl) * arb(T).sin(),
           lambda R, T, Dl: arb(R) / nu(R, Dl)]
    return _tuple_enclose(fns, vals, prec)


#: float64 error of full_from_canonical, per output: |(a, b)|^2 by the cancellation-free
#: branch (a few roundings in hypot, sqrt and the division), its sqrt, and one product
#: with cos/sin (<= 1 ulp each) or one division
FULL_FROM_CANONICAL_ULPS = UlpBound(8, "value of each output (|exact|)",
                                    "the cancellation-free branch of |(a, b)|^2 (<= 4 roundings), "
                                    "its square root, one product with cos/sin or one division")


full_from_canonical = DerivedFunction(
    "full_from_canonical", "W2a",
    expr_fn=lambda: (derived.results("W2a")["nu2"], derived.results("W2a")["nu2_rationalized"]),
    impl=_full_from_canonical, mpmath=_full_from_canonical_mp,
    enclose=_full_from_canonical_enclose, ulp_bound=FULL_FROM_CANONICAL_ULPS,
    doc="""The point of the fibre pi^{-1}(r, theta) with invariant delta (claim W2a):
|(a, b)|^2 = (sqrt(delta^2 + 4 r^2) - delta) / 2 (the positive root of
nu^4 + delta nu^2 - r^2 = 0; its rationalized form for delta > 0), (a, b) = |(a, b)| d(theta),
c = r / |(a, b)|.

Parameters: ``r`` (signed radii), ``theta`` (angles), ``delta`` (invariants), arrays of
one shape.  Returns ``(a, b, c)``.  Sign branch: c = sign(r) sqrt(c^2) (= r / |(a, b)|),
the only one with r = c |(a, b)| and |(a, b)| > 0.  r = 0 with delta >= 0 has no
preimage with a defined angle (ValueError); r = 0 with delta < 0 gives c = 0.

>>> full_from_canonical(10.0, 0.9272952180016122, -21.0)  # doctest: +ELLIPSIS
(3.0000000000000..., 3.99999999999999..., 2.0)
""")


# ------------------------------------------------------------------ potential gradient
def _potential_gradient_inputs(r: Any, theta: Any, x_data: Any, residuals: Any) -> tuple:
    """The validated (r, theta, x_data, residuals) of the potential gradient's entry points."""
    r = as_float_array(r, "r (particle radii)")
    theta = as_float_array(theta, "theta (particle angles)")
    require_same_shape(r=r, theta=theta)
    x_data = as_float_array(x_data, "x_data (sample inputs)", ndim=1, allow_empty=False)
    residuals = as_float_array(residuals, "residuals (rho_j = f(x_j) - y_j)", ndim=1)
    require_same_shape(x_data=x_data, residuals=residuals)
    return r, theta, x_data, residuals


def _potential_gradient(r: Any, theta: Any, x_data: Any, residuals: Any):
    r, theta, x_data, residuals = _potential_gradient_inputs(r, theta, x_data, residuals)
    args = (D.r, D.theta, D.x, D.rho)
    R, TH = r[..., None], theta[..., None]
    inner = np.asarray(_hypot_form("W2e", "inner", args)(R, TH, x_data, residuals))
    act = np.broadcast_to(inner > 0, R.shape[:-1] + x_data.shape)  # ReLU'(0) = 0
    t_r = np.broadcast_to(_hypot_form("W2e", "dV_dr_term", args)(R, TH, x_data, residuals), act.shape)
    t_th = np.broadcast_to(_hypot_form("W2e", "dV_dtheta_term", args)(R, TH, x_data, residuals), act.shape)
    g_r = np.where(act, t_r, 0.0).sum(axis=-1)
    g_th = np.where(act, t_th, 0.0).sum(axis=-1)
    _finite_or_raise("dV/dr or dV/dtheta", np.stack([g_r, g_th]), "rescale r or the residuals")
    return _out(g_r), _out(g_th)


def _potential_gradient_mp(r: Any, theta: Any, x_data: Any, residuals: Any, dps: int = 30):
    dps = check_dps(dps)
    args = (D.r, D.theta, D.x, D.rho)
    fi, fr, ft = (derived.lambdified("W2e", k, args, modules=_MP)
                  for k in ("inner", "dV_dr_term", "dV_dtheta_term"))
    with mpmath.workdps(dps):
        R, T = mpmath.mpf(float(r)), mpmath.mpf(float(theta))
        gr = gt = mpmath.mpf(0)
        for xj, rj in zip(np.ravel(x_data), np.ravel(residuals)):
            X, Q = mpmath.mpf(float(xj)), mpmath.mpf(float(rj))
            if fi(R, T, X, Q) > 0:
                gr += fr(R, T, X, Q)
                gt += ft(R, T, X, Q)
        return gr, gt


def _potential_gradient_enclose(r: Any, theta: Any, x_data: Any, residuals: Any, *,
                                prec: int = 128) -> tuple[Any, Any]:
    """Arb balls of (dV/dr, dV/dtheta): the derived terms summed over the samples whose
    derived <x~_j, d(theta)> ball is > 0 (ValueError if a ball contains 0: the sample is on
    the particle's boundary line, where the field jumps)."""
    from verify import certify
    r, theta, x_data, residuals = _potential_gradient_inputs(r, theta, x_data, residuals)
    args = (D.r, D.theta, D.x, D.rho)
    res = derived.results("W2e")
    inner, dvr, dvt = (certify.arb_function(res[k], args) for k in ("inner", "dV_dr_term", "dV_dtheta_term"))

    def one(rv: float, tv: float) -> tuple[Any, Any]:
        g_r = g_t = certify.ball(0)
        for xj, qj in zip(x_data.tolist(), residuals.tolist()):
            u = inner(rv, tv, xj, qj)
            if u > 0:
                g_r, g_t = g_r + dvr(rv, tv, xj, qj), g_t + dvt(rv, tv, xj, qj)
            elif not u < 0:
                raise ValueError(f"potential_gradient.enclose: sample x = {xj!r} lies on the "
                                 f"boundary line of the particle theta = {tv!r} (or within "
                                 f"2^-{prec} of it): the field jumps there; move theta")
        return g_r, g_t
    out_r, out_t = np.empty(r.shape, dtype=object), np.empty(r.shape, dtype=object)
    with certify.working_precision(prec):
        for idx in np.ndindex(r.shape):
            out_r[idx], out_t[idx] = one(float(r[idx]), float(theta[idx]))
    return (out_r[()], out_t[()]) if r.ndim == 0 else (out_r, out_t)


#: per sample term: cos, sin (<= 1 ulp each), x cos, the difference and the product with
#: rho (one more with r for dV/dtheta): <= 4 (5) roundings of |rho_j| |x~_j|, since
#: |x cos| + |sin| <= |x~|; the sum of n terms adds <= n - 1 roundings of the scale
POTENTIAL_GRADIENT_ULPS = UlpBound(
    5, "scale sum_j |rho_j| |x~_j| (|r| times it for dV/dtheta), x~_j = (x_j, -1)",
    "per sample term <= 4 roundings of |rho_j| |x~_j| (5 for dV/dtheta: one more product "
    "with r) as |x cos| + |sin| <= |x~|; the sum adds <= 1 rounding of the scale per term",
    per_term=1,
    region="a sample whose exact <x~_j, d(theta)> is within 2 ulps of |x~_j| of 0 (a particle "
           "on or next to its boundary line) may be counted on the wrong side by float64: the "
           "bound grows there by the jump |rho_j r| |x~_j| of dV/dtheta (claim W2f) and by 2 "
           "ulps of |rho_j| |x~_j| for dV/dr, per such sample")


potential_gradient = DerivedFunction(
    "potential_gradient", "W2e",
    expr_fn=lambda: (derived.results("W2e")["dV_dr_term"], derived.results("W2e")["dV_dtheta_term"]),
    impl=_potential_gradient, mpmath=_potential_gradient_mp,
    enclose=_potential_gradient_enclose, ulp_bound=POTENTIAL_GRADIENT_ULPS,
    doc="""(dV/dr, dV/dtheta) of V(w; mu) = sum_j rho_j r <x~_j, d(theta)>_+ at particles
w = (r, theta) (claims W2d/W2e): sum over active samples of rho_j <x~_j, d(theta)> and
rho_j r <x~_j, t(theta)>.  Particles move along MINUS this (times the metric).

Parameters: ``r``, ``theta`` arrays of one shape; ``x_data``, ``residuals`` 1-D of one
length.  Returns two arrays of the shape of ``r``.  A sample exactly on the boundary
counts as inactive.  Float64 error (``.ulp_bound``): <= 5 + n ulps (n samples) of the scale
sum_j |rho_j| |x~_j| (|r| times it for dV/dtheta), the scale of the summed terms (they
cancel); a sample within 2 ulps of |x~_j| of the particle's boundary line may be counted
on the wrong side, adding its jump |rho_j r| |x~_j| (claim W2f) to the dV/dtheta error.
``.enclose(r, theta, x_data, residuals, prec=128)``: certified Arb balls.

>>> potential_gradient(2.0, 0.0, [1.0], [0.5])
(0.5, -1.0)
""")


# ------------------------------------------------------------------ velocity jump
def _velocity_jump(r: Any, x_star: Any, rho_star: Any):
    r = as_float_array(r, "r")
    x_star = as_float_array(x_star, "x_star (sample on the boundary line)")
    rho_star = as_float_array(rho_star, "rho_star (residual at x_star)")
    try:
        shape = np.broadcast_shapes(r.shape, x_star.shape, rho_star.shape)
    except ValueError:
        raise ValueError(f"r, x_star, rho_star must broadcast; got shapes {r.shape}, "
                         f"{x_star.shape}, {rho_star.shape}") from None
    # degree-1 homogeneity in r and in rho*: evaluate on the mantissas, add the exponents
    mr, er = np.frexp(r)
    mq, eq = np.frexp(rho_star)
    val = np.asarray(_hypot_form("W2f", "magnitude", (D.r, D.x, D.rho))(mr, x_star, mq), dtype=np.float64)
    with np.errstate(over="ignore"):
        out = np.ldexp(val, er + eq)
    _finite_or_raise("|r rho*| sqrt(1 + x*^2)", out, "the jump exceeds float64")
    return _out(np.broadcast_to(out, shape))


def _velocity_jump_mp(r: Any, x_star: Any, rho_star: Any, dps: int = 30):
    dps = check_dps(dps)
    f = derived.lambdified("W2f", "magnitude", (D.r, D.x, D.rho), modules=_MP)
    return _mp_elementwise(lambda R, X, Q: (+f(R, X, Q),), ("r", "x_star", "rho_star"),
                           (r, x_star, rho_star), 1, broadcast=True, dps=dps)[0]


def _velocity_jump_enclose(r: Any, x_star: Any, rho_star: Any, *, prec: int = 128) -> Any:
    from verify import certify
    args = tuple(as_float_array(v, n) for v, n in ((r, "r"), (x_star, "x_star"), (rho_star, "rho_star")))
    fn = certify.arb_function(derived.results("W2f")["magnitude"], (D.r, D.x, D.rho))
    return enclose_grid(fn, args, prec)


#: |r rho*| hypot(1, x*) with exact power-of-two scaling: hypot (<= 1 ulp) and two products
VELOCITY_JUMP_ULPS = UlpBound(4, "value (|exact|)", "hypot(1, x*) to <= 1 ulp, two products, "
                                 "exact frexp/ldexp scaling: <= 3 roundings")


velocity_jump = DerivedFunction(
    "velocity_jump", "W2f", expr_fn=lambda: derived.results("W2f")["magnitude"],
    impl=_velocity_jump, mpmath=_velocity_jump_mp, enclose=_velocity_jump_enclose,
    ulp_bound=VELOCITY_JUMP_ULPS,
    doc="""Magnitude of the jump of grad V across the boundary line of sample x* (claim W2f):
|r rho*| sqrt(1 + x*^2).  The jump is purely angular (the radial jump is 0); its sign
depends on the crossing direction.

Parameters: ``r`` (particle radius), ``x_star`` (sample), ``rho_star`` (residual at
x_star), broadcasting.  Returns the magnitude (within 4 ulps over the whole float64
range, ``.ulp_bound``; ValueError if it overflows).  ``.mpmath(r, x_star, rho_star,
dps=30)``; ``.enclose(r, x_star, rho_star, prec=128)`` (certified Arb balls).

>>> velocity_jump(2.0, 0.0, -0.5)
1.0
""")
